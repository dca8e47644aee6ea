/**
 * The solver kernel of the TS backend (the native backend has the same one in C++): passes over a
 * range of groups of the state space, on a shared 2-bit table.
 *
 *  - init: ILLEGAL for illegal states, LOSS for terminal ones (the opponent has just won);
 *  - pass: for each UNKNOWN state, WIN if some move leads to a LOSS, LOSS if every legal move
 *    leads to a WIN (or there is no legal move). A new LOSS is propagated at once: every parent
 *    (moves are reversible, so parents are found with the move generator) becomes a WIN.
 *
 * A stored state is (a, b) with P1 = a to move. After P1 moves a -> a', the position (a', b,
 * P2 to move) is read as its colour swap (rot b, rot a', P1 to move), mirrored when rot b is not
 * its group's representative.
 */
import { popcount32 } from '../bits/bit32.js';
import { WORDS } from '../bits/bitboard.js';
import { type KernelStats, type SolverKernel, emptyKernelStats } from '../backend/backend.js';
import { BitboardEngine, type WordPosition } from '../engine/engine.js';
import type { RuleMode, Variant } from '../geometry/variant.js';
import { BINOMIAL_STRIDE as S, BINOMIAL_TABLE as C } from '../ranking/binomial.js';
import { nextCombination, rankSet, unrankSet } from '../ranking/combination.js';
import { ILLEGAL, LOSS, StateSpace, UNKNOWN, WIN } from './state-space.js';

export class TsSolverKernel implements SolverKernel {
  private readonly engine: BitboardEngine;
  private readonly space: StateSpace;
  private readonly n: number;
  private readonly k: number;
  /** Cell maps: rotation, and rotation followed by the mirror. */
  private readonly rot: Int32Array;
  private readonly rotMirror: Int32Array;
  private readonly moves: Int32Array;
  private readonly parentMoves: Int32Array;
  private readonly childP1Cells: Int32Array;
  private table: Uint8Array = new Uint8Array(0);
  private shared = false;
  private readonly set = new Uint32Array(WORDS);
  private readonly pos: WordPosition = { p1: new Uint32Array(WORDS), p2: new Uint32Array(WORDS), toMove: 0 };

  constructor(variant: Variant, rules: RuleMode, space?: StateSpace) {
    this.engine = new BitboardEngine(variant, rules);
    this.space = space ?? new StateSpace(variant);
    this.n = variant.cells;
    this.k = variant.pieces;
    if (this.space.states >= 2 ** 32) {
      throw new RangeError(`${variant.name} has ${this.space.states} stored states: too many for the TS backend`);
    }
    const mirror = variant.geometry.mirror;
    this.rot = new Int32Array(this.n);
    this.rotMirror = new Int32Array(this.n);
    for (let c = 0; c < this.n; c++) {
      this.rot[c] = this.n - 1 - c;
      this.rotMirror[c] = mirror[this.n - 1 - c]!;
    }
    this.moves = new Int32Array(2 * this.engine.maxMoves);
    this.parentMoves = new Int32Array(2 * this.engine.maxMoves);
    this.childP1Cells = new Int32Array(this.k);
  }

  /** Number of work units of pass(): P2 placements, C(N, k). init() works on groups. */
  get passUnits(): number {
    return this.space.p1Placements;
  }

  init(table: Uint8Array, groupFrom: number, groupTo: number): KernelStats {
    const stats = emptyKernelStats();
    this.bind(table);
    const pos = this.pos;
    pos.toMove = 0;
    this.forEachState(groupFrom, groupTo, (index) => {
      if (this.engine.isIllegal(pos)) {
        if (this.prove(index, ILLEGAL)) stats.illegal++;
      } else if (this.engine.hasWon(1, pos)) {
        if (this.prove(index, LOSS)) stats.terminal++;
      } else if (this.winsAtOnce(pos)) {
        if (this.prove(index, WIN)) stats.wins++;
      }
    });
    return stats;
  }

  /**
   * One pass over the stored states whose P2 placement is in [unitFrom, unitTo) of the proof
   * order (space.passOrder: C(N, k) P2 placements). Same order as the native kernel (kernel.inl), so
   * single-threaded solves agree pass by pass.
   */
  pass(table: Uint8Array, unitFrom: number, unitTo: number): KernelStats {
    const stats = emptyKernelStats();
    this.bind(table);
    const pos = this.pos;
    const space = this.space;
    const n = this.n;
    const k = this.k;
    const free = new Int32Array(n - k);
    const combo = new Int32Array(k);
    const a = pos.p1;
    const b = pos.p2;
    const order = space.passOrder;
    for (let unit = unitFrom; unit < unitTo; unit++) {
      unrankSet(order[unit]!, k, n, b);
      let f = 0;
      for (let c = 0; c < n; c++) if (((b[c >>> 5]! >>> (c & 31)) & 1) === 0) free[f++] = c;
      for (let i = 0; i < k; i++) combo[i] = i;
      do {
        a[0] = 0;
        a[1] = 0;
        a[2] = 0;
        for (let i = 0; i < k; i++) {
          const c = free[combo[i]!]!;
          a[c >>> 5]! |= 1 << (c & 31);
        }
        const r1 = rankSet(a);
        if (space.mirroredRank[r1] === 1) continue; // stored under its mirror image
        this.step(space.groupOfRank[r1]! * space.p2Placements + this.engine.rankP2(a, b), a, b, stats);
      } while (nextCombination(combo, k, n - k));
    }
    return stats;
  }

  /** The same over groups [groupFrom, groupTo), visiting only states still unknown (late passes). */
  sparsePass(table: Uint8Array, groupFrom: number, groupTo: number): KernelStats {
    const stats = emptyKernelStats();
    this.bind(table);
    const space = this.space;
    const a = this.pos.p1;
    const b = this.pos.p2;
    const per = space.p2Placements;
    for (let g = groupFrom; g < groupTo; g++) {
      unrankSet(space.groupRank[g]!, this.k, this.n, a);
      const first = g * per;
      for (let i = first; i < first + per; i++) {
        if ((i & 3) === 0 && i + 4 <= first + per) {
          const byte = this.table[i >>> 2]!;
          if (byte & 0x03 && byte & 0x0c && byte & 0x30 && byte & 0xc0) {
            i += 3;
            continue;
          }
        }
        if (this.value(i) !== UNKNOWN) continue;
        this.engine.unrankP2(a, i - first, b);
        this.step(i, a, b, stats);
      }
    }
    return stats;
  }

  /** Evaluates one stored state (a, b) if still unknown, and propagates a new loss. */
  private step(index: number, a: Uint32Array, b: Uint32Array, stats: KernelStats): void {
    if (this.value(index) !== UNKNOWN) return;
    const result = this.evaluate(a, b);
    if (result === -1) stats.moveless++;
    else if (result === WIN) {
      if (this.prove(index, WIN)) stats.wins++;
    } else if (result === LOSS) {
      if (this.prove(index, LOSS)) {
        stats.losses++;
        stats.wins += this.propagateLoss(a, b);
      }
    }
  }

  /** P1 (to move) fills its goal with a legal move. Found at init, so that the first pass can
   *  prove most of the game in one sweep (same as the native kernel). */
  private winsAtOnce(pos: WordPosition): boolean {
    const e = this.engine;
    const a = pos.p1;
    const b = pos.p2;
    // A move fills P1's goal only if exactly one goal cell is empty (it lands there): most
    // states need no move generation at all.
    const goal = e.tables.goal;
    let emptyGoalCells = 0;
    for (let w = 0; w < WORDS; w++) emptyGoalCells += popcount32(goal[w]! & ~(a[w]! | b[w]!));
    if (emptyGoalCells !== 1) return false;
    const moves = this.moves;
    const count = e.generateMoves(a[0]!, a[1]!, a[2]!, a[0]! | b[0]!, a[1]! | b[1]!, a[2]! | b[2]!, moves);
    const child = this.child;
    child.p2 = b;
    child.toMove = 1;
    for (let i = 0; i < count; i++) {
      const from = moves[2 * i]!;
      const to = moves[2 * i + 1]!;
      child.p1.set(a);
      child.p1[from >>> 5]! ^= 1 << (from & 31);
      child.p1[to >>> 5]! ^= 1 << (to & 31);
      if (e.hasWon(0, child) && !e.isIllegal(child)) return true;
    }
    return false;
  }

  private readonly child: WordPosition = { p1: new Uint32Array(WORDS), p2: new Uint32Array(WORDS), toMove: 1 };

  /** WIN, LOSS, UNKNOWN from the children's current values; -1 when there is no move at all. */
  private evaluate(a: Uint32Array, b: Uint32Array): number {
    const e = this.engine;
    const moves = this.moves;
    const count = e.generateMoves(a[0]!, a[1]!, a[2]!, a[0]! | b[0]!, a[1]! | b[1]!, a[2]! | b[2]!, moves);
    if (count === 0) return -1;
    // The children's P1 is rot(b) (mirrored if needed): one group for all moves.
    const set = this.set;
    e.rotateSet(b, set);
    const r1 = rankSet(set);
    const mirrored = this.space.mirroredRank[r1] === 1;
    const map = mirrored ? this.rotMirror : this.rot;
    const base = this.space.groupOfRank[r1]! * this.space.p2Placements;
    this.sortedMapped(b, map, this.childP1Cells);
    // The children's P2 is map(a'), a' = a ^ from ^ to: start from map(a), toggle two cells.
    let c0 = 0;
    let c1 = 0;
    let c2 = 0;
    for (let w = 0; w < WORDS; w++) {
      let x = a[w]!;
      while (x !== 0) {
        const low = x & -x;
        x ^= low;
        const c = map[(w << 5) + 31 - Math.clz32(low)]!;
        if (c < 32) c0 |= 1 << c;
        else if (c < 64) c1 |= 1 << (c - 32);
        else c2 |= 1 << (c - 64);
      }
    }
    let legal = 0;
    let unknown = false;
    for (let i = 0; i < count; i++) {
      const f = map[moves[2 * i]!]!;
      const t = map[moves[2 * i + 1]!]!;
      let d0 = c0;
      let d1 = c1;
      let d2 = c2;
      if (f < 32) d0 ^= 1 << f;
      else if (f < 64) d1 ^= 1 << (f - 32);
      else d2 ^= 1 << (f - 64);
      if (t < 32) d0 ^= 1 << t;
      else if (t < 64) d1 ^= 1 << (t - 32);
      else d2 ^= 1 << (t - 64);
      const v = this.value(base + this.rankAmongFree(d0, d1, d2));
      if (v === ILLEGAL) continue;
      legal++;
      if (v === LOSS) return WIN;
      if (v === UNKNOWN) unknown = true;
    }
    return unknown && legal > 0 ? UNKNOWN : LOSS;
  }

  /** (a, b) with P1 to move is lost: every parent (a, b', P2 to move) is won. */
  private propagateLoss(a: Uint32Array, b: Uint32Array): number {
    const e = this.engine;
    const moves = this.parentMoves;
    const count = e.generateMoves(b[0]!, b[1]!, b[2]!, a[0]! | b[0]!, a[1]! | b[1]!, a[2]! | b[2]!, moves);
    const set = this.set;
    let proven = 0;
    for (let i = 0; i < count; i++) {
      // Parent P1 = rot(b'), parent P2 = rot(a); mirrored together when rot(b') is not canonical.
      const from = moves[2 * i]!;
      const to = moves[2 * i + 1]!;
      for (let w = 0; w < WORDS; w++) set[w] = b[w]!;
      set[from >>> 5]! ^= 1 << (from & 31);
      set[to >>> 5]! ^= 1 << (to & 31);
      this.rotateInPlace(set);
      const r1 = rankSet(set);
      const map = this.space.mirroredRank[r1] === 1 ? this.rotMirror : this.rot;
      const base = this.space.groupOfRank[r1]! * this.space.p2Placements;
      for (let w = 0; w < WORDS; w++) set[w] = b[w]!;
      set[from >>> 5]! ^= 1 << (from & 31);
      set[to >>> 5]! ^= 1 << (to & 31);
      this.sortedMapped(set, map, this.childP1Cells);
      const p2 = this.mapped(a, map);
      const index = base + this.rankAmongFree(p2[0]!, p2[1]!, p2[2]!);
      if (this.value(index) === UNKNOWN && this.prove(index, WIN)) proven++;
    }
    return proven;
  }

  /** rankP2 of the set (d0, d1, d2) among the cells free of childP1Cells, without pext. */
  private rankAmongFree(d0: number, d1: number, d2: number): number {
    const p1 = this.childP1Cells;
    const k = this.k;
    let rank = 0;
    let i = 1;
    for (let w = 0; w < WORDS; w++) {
      let x = w === 0 ? d0 : w === 1 ? d1 : d2;
      while (x !== 0) {
        const low = x & -x;
        x ^= low;
        const c = (w << 5) + 31 - Math.clz32(low);
        let below = 0;
        for (let j = 0; j < k; j++) if (p1[j]! < c) below++;
        rank += C[(c - below) * S + i]!;
        i++;
      }
    }
    return rank;
  }

  private readonly mappedScratch = new Uint32Array(WORDS);
  private mapped(b: Uint32Array, map: Int32Array): Uint32Array {
    const out = this.mappedScratch;
    out.fill(0);
    for (let w = 0; w < WORDS; w++) {
      let x = b[w]!;
      while (x !== 0) {
        const low = x & -x;
        x ^= low;
        const c = map[(w << 5) + 31 - Math.clz32(low)]!;
        out[c >>> 5]! |= 1 << (c & 31);
      }
    }
    return out;
  }

  private sortedMapped(b: Uint32Array, map: Int32Array, out: Int32Array): void {
    let n = 0;
    for (let w = 0; w < WORDS; w++) {
      let x = b[w]!;
      while (x !== 0) {
        const low = x & -x;
        x ^= low;
        out[n++] = map[(w << 5) + 31 - Math.clz32(low)]!;
      }
    }
    out.sort();
  }

  private rotateInPlace(set: Uint32Array): void {
    const out = this.mapped(set, this.rot);
    set.set(out);
  }

  /** Calls visit(index) with this.pos set to each stored state of the groups, in index order (init). */
  private forEachState(groupFrom: number, groupTo: number, visit: (index: number) => void): void {
    const space = this.space;
    const n = this.n;
    const k = this.k;
    const pos = this.pos;
    const free = new Int32Array(n - k);
    const combo = new Int32Array(k);
    for (let g = groupFrom; g < groupTo; g++) {
      unrankSet(space.groupRank[g]!, k, n, pos.p1);
      let f = 0;
      for (let c = 0; c < n; c++) if (((pos.p1[c >>> 5]! >>> (c & 31)) & 1) === 0) free[f++] = c;
      for (let i = 0; i < k; i++) combo[i] = i;
      let index = g * space.p2Placements;
      do {
        const p2 = pos.p2;
        p2[0] = 0;
        p2[1] = 0;
        p2[2] = 0;
        for (let i = 0; i < k; i++) {
          const c = free[combo[i]!]!;
          p2[c >>> 5]! |= 1 << (c & 31);
        }
        visit(index++);
      } while (nextCombination(combo, k, n - k));
    }
  }

  private bind(table: Uint8Array): void {
    this.table = table;
    this.shared = typeof SharedArrayBuffer !== 'undefined' && table.buffer instanceof SharedArrayBuffer;
  }

  private value(index: number): number {
    return (this.table[index >>> 2]! >>> ((index & 3) << 1)) & 3;
  }

  /** Sets a value where it was UNKNOWN; true when this call made the change. */
  private prove(index: number, value: number): boolean {
    const shift = (index & 3) << 1;
    const old = this.shared ? Atomics.or(this.table, index >>> 2, value << shift) : this.table[index >>> 2]!;
    if (!this.shared) this.table[index >>> 2] = old | (value << shift);
    return ((old >>> shift) & 3) === UNKNOWN;
  }

}
