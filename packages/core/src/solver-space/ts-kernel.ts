/**
 * The solver kernel of the TS backend (the native backend has the same one in C++): passes over a
 * range of groups of the state space, on a shared 2-bit table.
 *
 *  - init: ILLEGAL for illegal states, LOSS for terminal ones (the opponent has just won);
 *  - pass: for each UNKNOWN state, WIN if some move leads to a LOSS, LOSS if every legal move
 *    leads to a WIN (or there is no legal move). A new LOSS is propagated at once: every parent
 *    (moves are reversible, so parents are found with the move generator) becomes a WIN. A state
 *    left UNKNOWN is visited once more REVISIT_LAG units later (see state-space.ts);
 *  - distanceInit / distanceLayer: plies to the end for every won or lost state, over a solved
 *    table, layer by layer from the ends of the game (see SolverKernel in backend.ts).
 *
 * A stored state is (a, b) with P1 = a to move. After P1 moves a -> a', the position (a', b,
 * P2 to move) is read as its colour swap (rot b, rot a', P1 to move), mirrored when rot b is not
 * its group's representative.
 */
import { popcount32 } from '../bits/bit32.js';
import { WORDS, noPlacement, permuteSet, sameBitboard } from '../bits/bitboard.js';
import { type KernelStats, type PassOptions, type SolverKernel, type SparsePassOptions, type TableWindow, emptyKernelStats } from '../backend/backend.js';
import { BitboardEngine, type WordPosition } from '../engine/engine.js';
import type { RuleMode, Variant } from '../geometry/variant.js';
import { BINOMIAL_STRIDE as S, BINOMIAL_TABLE as C } from '../ranking/binomial.js';
import { nextCombination, rankSet, unrankSet } from '../ranking/combination.js';
import { ILLEGAL, LOSS, MAX_DISTANCE, NO_DISTANCE, REVISIT_LAG, StateSpace, UNKNOWN, WIN } from './state-space.js';
import { readValue, stateByte, stateShift } from './value-table.js';

const WAITING_FIELDS = 2 + 2 * WORDS;

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
  /** Row offset in the binomial table of each cell's index among the free cells of the
   *  children's P1 placement (see freeRows). */
  private readonly childFreeRows: Uint16Array;
  private table: Uint8Array = new Uint8Array(0);
  private shared = false;
  private readonly set = new Uint32Array(WORDS);
  private readonly pos: WordPosition = { p1: new Uint32Array(WORDS), p2: new Uint32Array(WORDS), toMove: 0 };

  constructor(variant: Variant, rules: RuleMode, space?: StateSpace) {
    this.engine = new BitboardEngine(variant, rules);
    this.space = space ?? new StateSpace(variant);
    this.n = variant.cells;
    this.k = variant.pieces;
    const mirror = variant.geometry.mirror;
    this.rot = new Int32Array(this.n);
    this.rotMirror = new Int32Array(this.n);
    for (let c = 0; c < this.n; c++) {
      this.rot[c] = this.n - 1 - c;
      this.rotMirror[c] = mirror[this.n - 1 - c]!;
    }
    this.moves = new Int32Array(2 * this.engine.maxMoves);
    this.parentMoves = new Int32Array(2 * this.engine.maxMoves);
    this.childFreeRows = new Uint16Array(this.n);
    const moveKeys = this.n * this.n;
    this.parentGroupStamp = new Float64Array(moveKeys);
    this.parentGroupBase = new Float64Array(moveKeys);
    this.parentGroupFlags = new Uint8Array(moveKeys);
    this.parentGroupFreeRows = new Uint16Array(moveKeys * this.n);
    this.parentGroupP1 = new Uint32Array(moveKeys * WORDS);
  }

  /** Number of work units of pass(): P2 placements, C(N, k). init() works on groups. */
  get passUnits(): number {
    return this.space.p1Placements;
  }

  init(table: Uint8Array, groupFrom: number, groupTo: number, _threads?: number, firstGroup = 0): KernelStats {
    const stats = emptyKernelStats();
    this.bind(table, { firstGroup, groups: this.groupsIn(table, firstGroup) }, false);
    this.checkGroupsInside(groupFrom, groupTo);
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
   * order (space.passOrder: C(N, k) P2 placements), with the revisits of REVISIT_LAG. Same order
   * as the native kernel (kernel.inl), so single-threaded solves agree pass by pass.
   * `keepWaiting`: the states still waiting for their revisit at the end stay for the next call
   * (a worker taking one unit at a time) until revisitWaiting().
   */
  pass(table: Uint8Array, unitFrom: number, unitTo: number, { keepWaiting = false, window }: PassOptions = {}): KernelStats {
    const stats = emptyKernelStats();
    this.bind(table, window);
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
      const childPart = this.childPartOf(b);
      if (childPart < 0) continue; // not this call's units: no endUnit either
      let f = 0;
      for (let c = 0; c < n; c++) if (((b[c >>> 5]! >>> (c & 31)) & 1) === 0) free[f++] = c;
      for (let i = 0; i < k; i++) combo[i] = i;
      do {
        a[0] = 0;
        a[1] = 0;
        a[2] = 0;
        let r1 = 0;
        for (let i = 0; i < k; i++) {
          const c = free[combo[i]!]!;
          a[c >>> 5]! |= 1 << (c & 31);
          r1 += C[c * S + i + 1]!; // rankP1(a): the cells come in increasing order
        }
        if (space.mirroredRank[r1] === 1) continue; // stored under its mirror image
        const group = space.groupOfRank[r1]!;
        const part = this.partOfGroup(group);
        if (part < 0 || (this.crossOnly && part === childPart)) continue;
        const index = group * space.p2Placements + this.engine.rankP2(a, b);
        this.waitForRevisit(index, this.step(index, a, b, stats), a, b);
      } while (nextCombination(combo, k, n - k));
      this.endUnit(stats);
    }
    if (!keepWaiting) this.endSweep(stats);
    return stats;
  }

  /** The same over groups [groupFrom, groupTo), visiting only states still unknown (late passes);
   *  `keepWaiting` as in pass(). */
  sparsePass(
    table: Uint8Array,
    groupFrom: number,
    groupTo: number,
    { descending = false, keepWaiting = false, window }: SparsePassOptions = {},
  ): KernelStats {
    const stats = emptyKernelStats();
    this.bind(table, window);
    const part = this.partOfGroup(groupFrom);
    if (part < 0 || this.partOfGroup(groupTo - 1) !== part || groupFrom > groupTo) {
      throw new RangeError(`groups [${groupFrom}, ${groupTo}) are not inside one part of the table`);
    }
    const bytes = part === 0 ? this.table : this.otherTable;
    const base = part === 0 ? this.base0 : this.base1;
    const space = this.space;
    const a = this.pos.p1;
    const b = this.pos.p2;
    const per = space.p2Placements;
    for (let j = groupFrom; j < groupTo; j++) {
      const g = descending ? groupFrom + groupTo - 1 - j : j;
      unrankSet(space.groupRank[g]!, this.k, this.n, a);
      const first = g * per;
      for (let i = first; i < first + per; i++) {
        if ((i & 3) === 0 && i + 4 <= first + per) {
          const byte = bytes[stateByte(i - base)]!;
          if (byte & 0x03 && byte & 0x0c && byte & 0x30 && byte & 0xc0) {
            i += 3;
            continue;
          }
        }
        if (this.value(i) !== UNKNOWN) continue;
        this.engine.unrankP2(a, i - first, b);
        const childPart = this.childPartOf(b);
        if (childPart < 0 || (this.crossOnly && childPart === part)) continue;
        this.waitForRevisit(i, this.step(i, a, b, stats), a, b);
      }
      this.endUnit(stats);
    }
    if (!keepWaiting) this.endSweep(stats);
    return stats;
  }

  /** Visits again every state still waiting from pass() or sparsePass() calls with keepWaiting. */
  revisitWaiting(table: Uint8Array, window?: TableWindow): KernelStats {
    const stats = emptyKernelStats();
    this.bind(table, window);
    this.endSweep(stats);
    return stats;
  }

  // Revisits (REVISIT_LAG): the states waiting, by unit of the sweep modulo REVISIT_LAG + 1, each
  // WAITING_FIELDS numbers: the stored index, the child the first visit stopped at, and a and b
  // (WORDS words each). Typed arrays that only grow: no garbage per unit.
  private readonly waiting = Array.from({ length: REVISIT_LAG + 1 }, () => ({ count: 0, data: new Float64Array(64 * WAITING_FIELDS) }));
  private unitsDone = 0;
  private readonly revisitPos: WordPosition = { p1: new Uint32Array(WORDS), p2: new Uint32Array(WORDS), toMove: 0 };

  private waitForRevisit(index: number, blocker: number, a: Uint32Array, b: Uint32Array): void {
    if (blocker < 0) return;
    const list = this.waiting[this.unitsDone % (REVISIT_LAG + 1)]!;
    let o = list.count * WAITING_FIELDS;
    if (o === list.data.length) {
      const grown = new Float64Array(2 * list.data.length);
      grown.set(list.data);
      list.data = grown;
    }
    const data = list.data;
    data[o++] = index;
    data[o++] = blocker;
    for (let w = 0; w < WORDS; w++) data[o++] = a[w]!;
    for (let w = 0; w < WORDS; w++) data[o++] = b[w]!;
    list.count++;
  }

  /** A unit is done: the states that waited REVISIT_LAG units ago are visited again. */
  private endUnit(stats: KernelStats): void {
    this.unitsDone++;
    if (this.unitsDone > REVISIT_LAG) this.revisit(this.unitsDone % (REVISIT_LAG + 1), stats);
  }

  /** The end of a sweep: every state still waiting is visited again, oldest first. */
  private endSweep(stats: KernelStats): void {
    for (let u = Math.max(0, this.unitsDone - REVISIT_LAG); u < this.unitsDone; u++) this.revisit(u % (REVISIT_LAG + 1), stats);
    this.unitsDone = 0;
  }

  /** A revisit that finds the child its first visit stopped at still unknown would stop there
   *  again (the children before it were won, and values never change back): skipped. */
  private revisit(slot: number, stats: KernelStats): void {
    const list = this.waiting[slot]!;
    const data = list.data;
    const a = this.revisitPos.p1;
    const b = this.revisitPos.p2;
    for (let o = 0; o < list.count * WAITING_FIELDS; o += WAITING_FIELDS) {
      if (this.value(data[o + 1]!) === UNKNOWN) continue;
      for (let w = 0; w < WORDS; w++) {
        a[w] = data[o + 2 + w]!;
        b[w] = data[o + 2 + WORDS + w]!;
      }
      this.step(data[o]!, a, b, stats);
    }
    list.count = 0;
  }

  distanceInit(table: Uint8Array, distances: Uint8Array, groupFrom: number, groupTo: number): KernelStats {
    const stats = emptyKernelStats();
    this.bind(table);
    const pos = this.pos;
    pos.toMove = 0;
    this.forEachState(groupFrom, groupTo, (index) => {
      if (this.value(index) !== LOSS) return;
      if (this.engine.hasWon(1, pos) || !this.hasLegalChild(pos.p1, pos.p2)) {
        distances[index] = 0;
        stats.losses++;
      }
    });
    return stats;
  }

  distanceLayer(table: Uint8Array, distances: Uint8Array, depth: number, groupFrom: number, groupTo: number): KernelStats {
    if (!(depth >= 0 && depth < MAX_DISTANCE)) throw new RangeError(`distance layer ${depth} outside 0..${MAX_DISTANCE - 1}`);
    const stats = emptyKernelStats();
    this.bind(table);
    this.distances = distances;
    this.sharedDistances = typeof SharedArrayBuffer !== 'undefined' && distances.buffer instanceof SharedArrayBuffer;
    const space = this.space;
    const per = space.p2Placements;
    const a = this.pos.p1;
    const b = this.pos.p2;
    for (let g = groupFrom; g < groupTo; g++) {
      const group = distances.subarray(g * per, (g + 1) * per);
      let i = group.indexOf(depth);
      if (i < 0) continue;
      unrankSet(space.groupRank[g]!, this.k, this.n, a);
      for (; i >= 0; i = group.indexOf(depth, i + 1)) {
        this.engine.unrankP2(a, i, b);
        this.pushDistance(a, b, this.value(g * per + i), depth, stats);
      }
    }
    return stats;
  }

  private distances: Uint8Array = new Uint8Array(0);
  private sharedDistances = false;
  private readonly parentPos: WordPosition = { p1: new Uint32Array(WORDS), p2: new Uint32Array(WORDS), toMove: 0 };

  /**
   * (a, b) is at distance `depth`: gives depth + 1 to each parent it decides (see distanceLayer).
   * A parent whose P1 placement is its own mirror image is stored twice, as itself and as its
   * mirror twin (same value, same distance), and both get it.
   */
  private pushDistance(a: Uint32Array, b: Uint32Array, value: number, depth: number, stats: KernelStats): void {
    const moves = this.parentMoves;
    const count = this.engine.generateMoves(b[0]!, b[1]!, b[2]!, a[0]! | b[0]!, a[1]! | b[1]!, a[2]! | b[2]!, moves);
    for (let i = 0; i < count; i++) {
      const from = moves[2 * i]!;
      const to = moves[2 * i + 1]!;
      this.pushDistanceTo(this.parentIndex(a, b, from, to, false, this.parentPos), value, depth, stats);
      if (this.parentHasTwin) this.pushDistanceTo(this.parentIndex(a, b, from, to, true, this.parentPos), value, depth, stats);
    }
  }

  /** The parent is stored state `parent`, position this.parentPos. */
  private pushDistanceTo(parent: number, value: number, depth: number, stats: KernelStats): void {
    if (this.distances[parent] !== NO_DISTANCE) return;
    const parentValue = this.value(parent);
    if (value === LOSS && parentValue === WIN) {
      if (this.setDistance(parent, depth + 1)) stats.wins++;
    } else if (value === WIN && parentValue === LOSS && this.childrenWithin(this.parentPos.p1, this.parentPos.p2, depth)) {
      if (this.setDistance(parent, depth + 1)) stats.losses++;
    }
  }

  /** Whether every legal child of (a, b) has a distance of at most `depth`. */
  private childrenWithin(a: Uint32Array, b: Uint32Array, depth: number): boolean {
    const moves = this.moves;
    const count = this.engine.generateMoves(a[0]!, a[1]!, a[2]!, a[0]! | b[0]!, a[1]! | b[1]!, a[2]! | b[2]!, moves);
    this.prepareChildren(a, b);
    for (let i = 0; i < count; i++) {
      const child = this.childIndex(moves[2 * i]!, moves[2 * i + 1]!);
      if (this.value(child) !== ILLEGAL && this.distances[child]! > depth) return false;
    }
    return true;
  }

  /** Whether (a, b) has a move to a state that is not illegal. */
  private hasLegalChild(a: Uint32Array, b: Uint32Array): boolean {
    const moves = this.moves;
    const count = this.engine.generateMoves(a[0]!, a[1]!, a[2]!, a[0]! | b[0]!, a[1]! | b[1]!, a[2]! | b[2]!, moves);
    this.prepareChildren(a, b);
    for (let i = 0; i < count; i++) if (this.value(this.childIndex(moves[2 * i]!, moves[2 * i + 1]!)) !== ILLEGAL) return true;
    return false;
  }

  /** Sets a distance where there was none; true when this call made the change. */
  private setDistance(index: number, distance: number): boolean {
    if (this.sharedDistances) return Atomics.compareExchange(this.distances, index, NO_DISTANCE, distance) === NO_DISTANCE;
    this.distances[index] = distance;
    return true;
  }

  /** Evaluates one stored state (a, b) if still unknown, and propagates a new loss. Returns the
   *  child still unknown that the evaluation stopped at, else -1. */
  private step(index: number, a: Uint32Array, b: Uint32Array, stats: KernelStats): number {
    if (this.value(index) !== UNKNOWN) return -1;
    const result = this.evaluate(a, b);
    if (result === UNKNOWN) return this.blocker;
    if (result === -1) stats.moveless++;
    else if (result === WIN) {
      if (this.prove(index, WIN)) stats.wins++;
    } else if (this.prove(index, LOSS)) {
      stats.losses++;
      stats.wins += this.propagateLoss(a, b);
    }
    return -1;
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
    let empty = -1;
    for (let w = 0; w < WORDS; w++) {
      const x = goal[w]! & ~(a[w]! | b[w]!);
      emptyGoalCells += popcount32(x);
      if (x !== 0) empty = (w << 5) + 31 - Math.clz32(x & -x);
    }
    if (emptyGoalCells !== 1) return false;
    const moves = this.moves;
    const count = e.generateMoves(a[0]!, a[1]!, a[2]!, a[0]! | b[0]!, a[1]! | b[1]!, a[2]! | b[2]!, moves);
    const child = this.child;
    child.p2 = b;
    child.toMove = 1;
    for (let i = 0; i < count; i++) {
      const to = moves[2 * i + 1]!;
      if (to !== empty) continue; // only a move onto the empty goal cell can fill the goal
      const from = moves[2 * i]!;
      child.p1.set(a);
      child.p1[from >>> 5]! ^= 1 << (from & 31);
      child.p1[to >>> 5]! ^= 1 << (to & 31);
      if (e.hasWon(0, child) && !e.isIllegal(child)) return true;
    }
    return false;
  }

  private readonly child: WordPosition = { p1: new Uint32Array(WORDS), p2: new Uint32Array(WORDS), toMove: 1 };

  /**
   * WIN, LOSS, UNKNOWN from the children's current values; -1 when there is no move at all.
   * A state with a lost child is already won: every loss a pass proves is propagated to all its
   * parents at once (or is about to be, by the worker that proved it), and the parents of the
   * terminal losses of init are wins in one, found by init too. What is left to find out is
   * whether every legal child is won, and the first unknown child ends the evaluation (the later
   * ones are not even ranked).
   */
  private evaluate(a: Uint32Array, b: Uint32Array): number {
    const moves = this.moves;
    const count = this.engine.generateMoves(a[0]!, a[1]!, a[2]!, a[0]! | b[0]!, a[1]! | b[1]!, a[2]! | b[2]!, moves);
    if (count === 0) return -1;
    this.prepareChildren(a, b);
    let unknown = -1;
    for (let i = 0; i < count; i++) {
      const child = this.childIndex(moves[2 * i]!, moves[2 * i + 1]!);
      const v = this.value(child);
      if (v === UNKNOWN) {
        if (!this.seekLoss) {
          this.blocker = child;
          return UNKNOWN;
        }
        if (unknown < 0) unknown = child;
      } else if (v === LOSS) return WIN;
    }
    if (unknown >= 0) {
      this.blocker = unknown;
      return UNKNOWN;
    }
    return LOSS; // every legal child won (or none legal)
  }

  /** The child the last evaluate() that returned UNKNOWN stopped at. */
  private blocker = -1;

  // Where the children of (a, b) live, set by prepareChildren for childIndex: their P1 is rot(b)
  // (mirrored if needed), one group for all moves; their P2 is map(a') with a' = a ^ from ^ to,
  // so it starts from map(a) (words childP2) and toggles two cells. The group depends on b only,
  // which a pass unit fixes: it is computed again only when b changes.
  private childGroup = 0;
  private childBase = 0;
  private childMap: Int32Array = new Int32Array(0);
  private readonly childP2 = new Uint32Array(WORDS);
  private readonly childrenOf = noPlacement();

  private prepareChildren(a: Uint32Array, b: Uint32Array): void {
    this.prepareChildGroup(b);
    this.childP2.set(this.mapped(a, this.childMap));
  }

  private prepareChildGroup(b: Uint32Array): void {
    if (sameBitboard(this.childrenOf, b)) return;
    this.childrenOf.set(b);
    const set = this.set;
    this.engine.rotateSet(b, set);
    const r1 = rankSet(set);
    const map = this.space.mirroredRank[r1] === 1 ? this.rotMirror : this.rot;
    this.childMap = map;
    this.childGroup = this.space.groupOfRank[r1]!;
    this.childBase = this.childGroup * this.space.p2Placements;
    this.freeRows(this.mapped(b, map), this.childFreeRows, 0);
  }

  /** The part of the table (0, 1) the children of states with P2 placement b lie in, -1 for none. */
  private childPartOf(b: Uint32Array): number {
    if (!this.seekLoss) return 0; // the whole table
    this.prepareChildGroup(b);
    return this.partOfGroup(this.childGroup);
  }

  /** Stored index of the child of the prepared state after the move from -> to. */
  private childIndex(from: number, to: number): number {
    const f = this.childMap[from]!;
    const t = this.childMap[to]!;
    let d0 = this.childP2[0]!;
    let d1 = this.childP2[1]!;
    let d2 = this.childP2[2]!;
    if (f < 32) d0 ^= 1 << f;
    else if (f < 64) d1 ^= 1 << (f - 32);
    else d2 ^= 1 << (f - 64);
    if (t < 32) d0 ^= 1 << t;
    else if (t < 64) d1 ^= 1 << (t - 32);
    else d2 ^= 1 << (t - 64);
    return this.childBase + this.rankAmongFree(d0, d1, d2, this.childFreeRows, 0);
  }

  /** (a, b) with P1 to move is lost: every parent (a, b', P2 to move) is won, and so is its
   *  mirror twin where it has one (same value; found by no move generator). */
  private propagateLoss(a: Uint32Array, b: Uint32Array): number {
    const moves = this.parentMoves;
    const count = this.engine.generateMoves(b[0]!, b[1]!, b[2]!, a[0]! | b[0]!, a[1]! | b[1]!, a[2]! | b[2]!, moves);
    let proven = 0;
    for (let i = 0; i < count; i++) {
      const from = moves[2 * i]!;
      const to = moves[2 * i + 1]!;
      const index = this.parentIndex(a, b, from, to);
      if (this.inParts(index) && this.value(index) === UNKNOWN && this.prove(index, WIN)) proven++;
      if (!this.parentHasTwin) continue;
      const twin = this.parentIndex(a, b, from, to, true);
      if (this.inParts(twin) && this.value(twin) === UNKNOWN && this.prove(twin, WIN)) proven++;
    }
    return proven;
  }

  /** Whether the last parentIndex() had a mirror twin: its P1 placement is its own mirror image
   *  in a mirror-symmetric variant, so (P1, mirror P2) is stored too, with the same value. */
  private parentHasTwin = false;

  // Where the parents reached by one P2 move lie (see parentIndex), by from * n + to: they depend
  // on b and the move only, not on a, so a pass unit (one b) computes each once for all its
  // losses. An entry is valid when its stamp is parentStamp, which changes with b.
  private readonly parentsOf = noPlacement();
  private parentStamp = 0;
  private readonly parentGroupStamp: Float64Array;
  private readonly parentGroupBase: Float64Array;
  private readonly parentGroupFlags: Uint8Array; // 1: stored mirrored, 2: has a mirror twin
  private readonly parentGroupFreeRows: Uint16Array; // freeRows of the stored P1, n per entry
  private readonly parentGroupP1: Uint32Array; // the stored P1, WORDS per entry
  // rot(a) and its mirror image, the parent's P2 as stored, for the a they were computed from.
  private readonly parentP2Of = noPlacement();
  private readonly parentP2 = new Uint32Array(2 * WORDS);

  /** Stored index of the parent (a, b', P2 to move) of (a, b), b' = b ^ from ^ to: P1 = rot(b'),
   *  P2 = rot(a), mirrored together when rot(b') is not canonical; or its mirror twin. */
  private parentIndex(a: Uint32Array, b: Uint32Array, from: number, to: number, twin = false, into?: WordPosition): number {
    const entry = this.parentGroup(b, from, to);
    const flags = this.parentGroupFlags[entry]!;
    this.parentHasTwin = (flags & 2) !== 0;
    if (!sameBitboard(this.parentP2Of, a)) {
      this.parentP2Of.set(a);
      this.parentP2.set(this.mapped(a, this.rot), 0);
      this.parentP2.set(this.mapped(a, this.rotMirror), WORDS);
    }
    const p2 = ((flags & 1) === 1) !== twin ? WORDS : 0;
    const q = this.parentP2;
    const index =
      this.parentGroupBase[entry]! + this.rankAmongFree(q[p2]!, q[p2 + 1]!, q[p2 + 2]!, this.parentGroupFreeRows, entry * this.n);
    if (into) {
      into.p2.set(q.subarray(p2, p2 + WORDS));
      into.p1.set(this.parentGroupP1.subarray(entry * WORDS, entry * WORDS + WORDS));
    }
    return index;
  }

  /** The parent-group entry of the P2 move from -> to out of b, computed on first use. */
  private parentGroup(b: Uint32Array, from: number, to: number): number {
    if (!sameBitboard(this.parentsOf, b)) {
      this.parentsOf.set(b); // entries start at stamp 0, so the first b (stamp 1) finds none
      this.parentStamp++;
    }
    const entry = from * this.n + to;
    if (this.parentGroupStamp[entry] === this.parentStamp) return entry;
    this.parentGroupStamp[entry] = this.parentStamp;
    const set = this.set;
    for (let w = 0; w < WORDS; w++) set[w] = b[w]!;
    set[from >>> 5]! ^= 1 << (from & 31);
    set[to >>> 5]! ^= 1 << (to & 31);
    const rotated = this.mapped(set, this.rot);
    const r1 = rankSet(rotated);
    const mirrored = this.space.mirroredRank[r1] === 1;
    const group = this.space.groupOfRank[r1]!;
    const twin = this.space.variant.mirrorSymmetric && this.space.groupWeight[group] === 1;
    this.parentGroupFlags[entry] = (mirrored ? 1 : 0) | (twin ? 2 : 0);
    this.parentGroupBase[entry] = group * this.space.p2Placements;
    const map = mirrored ? this.rotMirror : this.rot;
    const p1 = this.mapped(set, map);
    this.parentGroupP1.set(p1, entry * WORDS);
    this.freeRows(p1, this.parentGroupFreeRows, entry * this.n);
    return entry;
  }

  /** rankP2 of the set (d0, d1, d2) among the cells P1 leaves free, without pext: each cell c
   *  adds C(index of c among the free cells, i), its row offset read from freeRows(P1). */
  private rankAmongFree(d0: number, d1: number, d2: number, rows: Uint16Array, offset: number): number {
    let rank = 0;
    let i = 1;
    for (let w = 0; w < WORDS; w++) {
      let x = w === 0 ? d0 : w === 1 ? d1 : d2;
      while (x !== 0) {
        const low = x & -x;
        x ^= low;
        rank += C[rows[offset + (w << 5) + 31 - Math.clz32(low)]! + i]!;
        i++;
      }
    }
    return rank;
  }

  /** out[offset + c] = (c - |P1 below c|) * S for every cell c: the binomial-table row of c's
   *  index among the cells P1 leaves free. */
  private freeRows(p1: Uint32Array, out: Uint16Array, offset: number): void {
    let below = 0;
    for (let c = 0; c < this.n; c++) {
      out[offset + c] = (c - below) * S;
      below += (p1[c >>> 5]! >>> (c & 31)) & 1;
    }
  }

  private readonly mappedScratch = new Uint32Array(WORDS);
  private mapped(b: Uint32Array, map: Int32Array): Uint32Array {
    permuteSet(b, map, this.mappedScratch);
    return this.mappedScratch;
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

  // The table this call works on: the part `table`, groups [firstGroup0, endGroup0) from stored
  // index base0 on, and a second part `otherTable` (empty without one); see TableWindow. Without
  // a window, the part is the whole table.
  private firstGroup0 = 0;
  private endGroup0 = 0;
  private base0 = 0;
  private end0 = 0;
  private otherTable: Uint8Array = new Uint8Array(0);
  private otherShared = false;
  private firstGroup1 = 0;
  private endGroup1 = 0;
  private base1 = 0;
  private end1 = 0;
  /** With a window: parents outside it are not told of a new loss, so a visit looks past an
   *  unknown child for a lost one. */
  private seekLoss = false;
  private crossOnly = false;

  private bind(table: Uint8Array, window?: TableWindow, seekLoss = window !== undefined): void {
    const per = this.space.p2Placements;
    const w = window ?? { firstGroup: 0, groups: this.space.groups };
    const other = w.other ?? new Uint8Array(0);
    const otherFirst = w.other ? (w.otherFirstGroup ?? -1) : 0;
    const otherGroups = w.other ? (w.otherGroups ?? -1) : 0;
    for (const [first, groups, bytes, what] of [
      [w.firstGroup, w.groups, table.length, 'table'],
      [otherFirst, otherGroups, other.length, 'other part'],
    ] as const) {
      if (!Number.isSafeInteger(first) || !Number.isSafeInteger(groups) || first < 0 || groups < 0 || first + groups > this.space.groups) {
        throw new RangeError(`window ${what}: groups [${first}, ${first + groups}) outside the ${this.space.groups} groups`);
      }
      if ((first * per) % 4 !== 0) throw new RangeError(`window ${what}: group ${first} does not start on a byte of the table`);
      if (bytes < Math.ceil((groups * per) / 4)) throw new RangeError(`window ${what}: ${bytes} bytes do not hold ${groups} groups`);
    }
    if (otherGroups > 0 && otherFirst < w.firstGroup + w.groups && w.firstGroup < otherFirst + otherGroups) {
      throw new RangeError('window: the two parts overlap');
    }
    this.table = table;
    this.shared = isShared(table);
    this.firstGroup0 = w.firstGroup;
    this.endGroup0 = w.firstGroup + w.groups;
    this.base0 = w.firstGroup * per;
    this.end0 = this.endGroup0 * per;
    this.otherTable = other;
    this.otherShared = isShared(other);
    this.firstGroup1 = otherFirst;
    this.endGroup1 = otherFirst + otherGroups;
    this.base1 = otherFirst * per;
    this.end1 = this.endGroup1 * per;
    this.seekLoss = seekLoss;
    this.crossOnly = w.crossOnly === true;
  }

  /** Groups a table part from firstGroup on holds whole (init's window). */
  private groupsIn(table: Uint8Array, firstGroup: number): number {
    return Math.min(this.space.groups - firstGroup, Math.floor((table.length * 4) / this.space.p2Placements));
  }

  private checkGroupsInside(groupFrom: number, groupTo: number): void {
    if (groupFrom < this.firstGroup0 || groupTo > this.endGroup0 || groupFrom > groupTo) {
      throw new RangeError(`groups [${groupFrom}, ${groupTo}) outside the table's [${this.firstGroup0}, ${this.endGroup0})`);
    }
  }

  /** 0 or 1: the part that holds group g; -1 for none. */
  private partOfGroup(g: number): number {
    return g >= this.firstGroup0 && g < this.endGroup0 ? 0 : g >= this.firstGroup1 && g < this.endGroup1 ? 1 : -1;
  }

  private inParts(index: number): boolean {
    return (index >= this.base0 && index < this.end0) || (index >= this.base1 && index < this.end1);
  }

  /** Value of stored state `index` (in one of the parts). */
  private value(index: number): number {
    return index >= this.base0 && index < this.end0 ? readValue(this.table, index - this.base0) : readValue(this.otherTable, index - this.base1);
  }

  /** Sets a value where it was UNKNOWN; true when this call made the change. */
  private prove(index: number, value: number): boolean {
    const first = index >= this.base0 && index < this.end0;
    const table = first ? this.table : this.otherTable;
    const shared = first ? this.shared : this.otherShared;
    index -= first ? this.base0 : this.base1;
    const byte = stateByte(index);
    const shift = stateShift(index);
    const old = shared ? Atomics.or(table, byte, value << shift) : table[byte]!;
    if (!shared) table[byte] = old | (value << shift);
    return ((old >>> shift) & 3) === UNKNOWN;
  }
}

function isShared(bytes: Uint8Array): boolean {
  return typeof SharedArrayBuffer !== 'undefined' && bytes.buffer instanceof SharedArrayBuffer;
}
