/**
 * The bitboard engine of the bitboard paper in TypeScript: moves (steps by one mask operation,
 * single jumps by per-cell multiply and table lookup, or by the paper's pext/pdep over per-cell
 * masks: see JumpMethod; chained to a fixed point), apply/undo by xor, the rules of docs/rules.md
 * section 4 (win, illegal, terminal, legal moves), ranking and symmetry.
 *
 * Positions are three 32-bit words per player (see ../bits/bitboard.ts). Hot methods take words
 * as arguments and return multi-word results in the `r0..r2` registers, so nothing allocates.
 */
import { pdep32, pext32, popcount32 } from '../bits/bit32.js';
import { WORDS, hasCell, permuteSet } from '../bits/bitboard.js';
import type { RuleMode, Variant } from '../geometry/variant.js';
import { BINOMIAL_STRIDE, BINOMIAL_TABLE, binomial } from '../ranking/binomial.js';
import { rankSet, unrankSet } from '../ranking/combination.js';
import { type VariantTables, buildTables } from './tables.js';

/** How single jumps from a cell are found.
 * - `magic`: a multiply gathers the cell's occupied neighbours into a table index; the entry
 *   holds the cells beyond them (engine/jump-magic.ts). The default.
 * - `pairs`: the test fused into one loop over the cell's (over, to) pairs; no pext.
 * - `pext`: the paper's method, software pext/pdep: pdep(pext(occ, over) & pext(~occ, to), to). */
export type JumpMethod = 'magic' | 'pairs' | 'pext';

export type Side = 0 | 1;

/** A position as words: p1 and p2 are WORDS-word bitboards. */
export interface WordPosition {
  p1: Uint32Array;
  p2: Uint32Array;
  toMove: Side;
}

export class BitboardEngine {
  readonly tables: VariantTables;
  readonly cells: number;
  readonly pieces: number;
  /** C(N - k, k): the number of P2 placements for a fixed P1 placement. */
  readonly p2Placements: number;
  /** C(N, k). */
  readonly p1Placements: number;

  /** Multi-word result registers of the hot methods. */
  r0 = 0;
  r1 = 0;
  r2 = 0;

  private readonly stack: Int32Array;
  private readonly scratch = new Uint32Array(2 * WORDS);
  private readonly mirrorMap: Int32Array;
  private readonly rotationMap: Int32Array;

  constructor(
    readonly variant: Variant,
    readonly rules: RuleMode = 'clean',
    readonly jumpMethod: JumpMethod = 'magic',
  ) {
    this.tables = buildTables(variant);
    this.cells = variant.cells;
    this.pieces = variant.pieces;
    this.p1Placements = binomial(this.cells, this.pieces);
    this.p2Placements = binomial(this.cells - this.pieces, this.pieces);
    this.stack = new Int32Array(this.cells);
    this.mirrorMap = Int32Array.from(variant.geometry.mirror);
    this.rotationMap = Int32Array.from({ length: variant.cells }, (_, c) => variant.cells - 1 - c);
  }

  /** Maximum number of moves of one side (bounds the move buffers). */
  get maxMoves(): number {
    return this.pieces * this.cells;
  }

  // ---------------------------------------------------------------------------------------------
  // Moves

  /** Single-jump landing cells from `cell` for occupancy (o0, o1, o2), into r0..r2. */
  singleJumps(cell: number, o0: number, o1: number, o2: number): void {
    const t = this.tables;
    const magic = t.jumpMagic;
    if (this.jumpMethod === 'magic' && magic !== null) {
      const start = magic.windowStart[cell]!;
      const w = start >>> 5;
      const shift = start & 31;
      const low = w === 0 ? o0 : w === 1 ? o1 : o2;
      const high = w === 0 ? o1 : w === 1 ? o2 : 0;
      const window = shift === 0 ? low : (low >>> shift) | (high << (32 - shift));
      const index = Math.imul(window & magic.windowMask[cell]!, magic.magic[cell]!) >>> magic.indexShift[cell]!;
      const e = (magic.entryStart[cell]! + index) * WORDS;
      this.r0 = (magic.landing[e]! & ~o0) >>> 0;
      this.r1 = (magic.landing[e + 1]! & ~o1) >>> 0;
      this.r2 = (magic.landing[e + 2]! & ~o2) >>> 0;
      return;
    }
    if (this.jumpMethod !== 'pext') {
      // 'pairs', and 'magic' on a board without multiplier tables (none of the supported ones)
      let d0 = 0;
      let d1 = 0;
      let d2 = 0;
      for (let p = t.pairStart[cell]!, e = t.pairStart[cell + 1]!; p < e; p++) {
        const over = t.pairOver[p]!;
        const to = t.pairTo[p]!;
        const ow = over >>> 5;
        const overBit = (ow === 0 ? o0 : ow === 1 ? o1 : o2) >>> (over & 31);
        const tw = to >>> 5;
        const toBit = (tw === 0 ? o0 : tw === 1 ? o1 : o2) >>> (to & 31);
        if ((overBit & ~toBit & 1) !== 0) {
          if (tw === 0) d0 |= 1 << (to & 31);
          else if (tw === 1) d1 |= 1 << (to & 31);
          else d2 |= 1 << (to & 31);
        }
      }
      this.r0 = d0 >>> 0;
      this.r1 = d1 >>> 0;
      this.r2 = d2 >>> 0;
      return;
    }
    const base = cell * WORDS;
    const ov0 = t.jumpOver[base]!;
    const ov1 = t.jumpOver[base + 1]!;
    const ov2 = t.jumpOver[base + 2]!;
    const to0 = t.jumpTo[base]!;
    const to1 = t.jumpTo[base + 1]!;
    const to2 = t.jumpTo[base + 2]!;
    // jumpOver = pext(occ, overMask); jumpTo = pext(~occ, toMask) (paper, section 3.2)
    const n0 = popcount32(ov0);
    const n1 = popcount32(ov1);
    const over = pext32(o0, ov0) | (pext32(o1, ov1) << n0) | (pext32(o2, ov2) << (n0 + n1));
    const m0 = popcount32(to0);
    const m1 = popcount32(to1);
    const free = pext32(~o0, to0) | (pext32(~o1, to1) << m0) | (pext32(~o2, to2) << (m0 + m1));
    // moves = pdep(jumpTo & jumpOver, toMask)
    const hits = over & free;
    this.r0 = pdep32(hits, to0);
    this.r1 = pdep32(hits >>> m0, to1);
    this.r2 = pdep32(hits >>> (m0 + m1), to2);
  }

  /**
   * All moves of the pieces `own` with full occupancy `occ` (which includes `own`), written to
   * `out` as (from, to) cell pairs; returns the number of moves. Destinations of one piece are
   * distinct: steps and jump chains never reach the same cell (docs/rules.md section 2).
   */
  generate(
    s0: number,
    s1: number,
    s2: number,
    o0: number,
    o1: number,
    o2: number,
    out: Int32Array,
  ): number {
    const t = this.tables;
    const nb = t.neighbours;
    const stack = this.stack;
    let count = 0;
    for (let w = 0; w < WORDS; w++) {
      let pieces = w === 0 ? s0 : w === 1 ? s1 : s2;
      while (pieces !== 0) {
        const low = pieces & -pieces;
        pieces ^= low;
        const from = (w << 5) + 31 - Math.clz32(low);
        // Steps: every empty neighbour, in one mask operation per word.
        const base = from * WORDS;
        count = emit(out, count, from, nb[base]! & ~o0, 0);
        count = emit(out, count, from, nb[base + 1]! & ~o1, 32);
        count = emit(out, count, from, nb[base + 2]! & ~o2, 64);
        // Jumps: closure of single jumps, with a visited set so cycles stop.
        let v0 = 0;
        let v1 = 0;
        let v2 = 0;
        let sp = 0;
        stack[sp++] = from;
        while (sp > 0) {
          const at = stack[--sp]!;
          this.singleJumps(at, o0, o1, o2);
          const d0 = this.r0 & ~v0;
          const d1 = this.r1 & ~v1;
          const d2 = this.r2 & ~v2;
          if ((d0 | d1 | d2) === 0) continue;
          v0 |= d0;
          v1 |= d1;
          v2 |= d2;
          sp = pushCells(stack, sp, d0, 0);
          sp = pushCells(stack, sp, d1, 32);
          sp = pushCells(stack, sp, d2, 64);
          count = emit(out, count, from, d0, 0);
          count = emit(out, count, from, d1, 32);
          count = emit(out, count, from, d2, 64);
        }
      }
    }
    return count;
  }

  // ---------------------------------------------------------------------------------------------
  // Rules (docs/rules.md section 4)

  /** Def. 1: `player` has filled its goal and has a piece in it. */
  hasWon(player: Side, p: WordPosition): boolean {
    const g = this.tables.goal;
    const own = player === 0 ? p.p1 : p.p2;
    const o = player * WORDS;
    let filled = true;
    let mine = false;
    for (let w = 0; w < WORDS; w++) {
      const goal = g[o + w]!;
      // Compare missing bits with 0: `x & mask` is a signed int32, mask a uint32.
      if ((goal & ~(p.p1[w]! | p.p2[w]!)) !== 0) filled = false;
      if ((own[w]! & goal) !== 0) mine = true;
    }
    return filled && mine;
  }

  /** Def. 3 (k = 6 only): `blocked`'s goal tip is empty and the other side holds the four cells in front of it. */
  private goalBlocked(blocked: Side, p: WordPosition): boolean {
    const t = this.tables;
    const tip = t.blockTip[blocked];
    const blocker = blocked === 0 ? p.p2 : p.p1;
    if (hasCell(p.p1, tip) || hasCell(p.p2, tip)) return false;
    const o = blocked * WORDS;
    for (let w = 0; w < WORDS; w++) {
      const cells = t.blockCells[o + w]!;
      if ((cells & ~blocker[w]!) !== 0) return false;
    }
    return true;
  }

  /** Illegal under docs/rules.md section 4 (Def. 2, and Def. 3 with its rule mode when k = 6). */
  isIllegal(p: WordPosition): boolean {
    if (this.hasWon(p.toMove, p)) return true;
    if (this.pieces !== 6) return false;
    return this.blockIllegal(0, p) || this.blockIllegal(1, p);
  }

  private blockIllegal(blocked: Side, p: WordPosition): boolean {
    if (!this.goalBlocked(blocked, p)) return false;
    if (this.rules === 'published' && p.toMove === blocked) {
      // Published-data exception: not illegal when the blocked side, to move, has no piece in
      // either start area.
      const own = blocked === 0 ? p.p1 : p.p2;
      const s = this.tables.startAreas;
      return ((own[0]! & s[0]!) | (own[1]! & s[1]!) | (own[2]! & s[2]!)) !== 0;
    }
    return true;
  }

  /** Legal and already won by the side that just moved. */
  isTerminal(p: WordPosition): boolean {
    return !this.isIllegal(p) && this.hasWon(p.toMove === 0 ? 1 : 0, p);
  }

  /** Moves of the side to move, as (from, to) pairs; returns the count. Ignores legality. */
  pseudoMoves(p: WordPosition, out: Int32Array): number {
    const own = p.toMove === 0 ? p.p1 : p.p2;
    return this.generate(
      own[0]!,
      own[1]!,
      own[2]!,
      p.p1[0]! | p.p2[0]!,
      p.p1[1]! | p.p2[1]!,
      p.p1[2]! | p.p2[2]!,
      out,
    );
  }

  /** Legal moves of a legal, non-terminal position: the moves whose result is legal. */
  legalMoves(p: WordPosition, out: Int32Array): number {
    if (this.isIllegal(p) || this.isTerminal(p)) return 0;
    const n = this.pseudoMoves(p, out);
    let kept = 0;
    const own = p.toMove === 0 ? p.p1 : p.p2;
    const next: WordPosition = { p1: p.p1, p2: p.p2, toMove: p.toMove === 0 ? 1 : 0 };
    for (let i = 0; i < n; i++) {
      const from = out[2 * i]!;
      const to = out[2 * i + 1]!;
      toggle(own, from);
      toggle(own, to);
      const legal = !this.isIllegal(next);
      toggle(own, from);
      toggle(own, to);
      if (legal) {
        out[2 * kept] = from;
        out[2 * kept + 1] = to;
        kept++;
      }
    }
    return kept;
  }

  // ---------------------------------------------------------------------------------------------
  // Ranking (docs/rules.md section 6)

  rankP1(p1: Uint32Array): number {
    return rankSet(p1);
  }

  unrankP1(rank: number, out: Uint32Array): void {
    unrankSet(rank, this.pieces, this.cells, out);
  }

  /** Rank of P2 among the cells P1 leaves free: rank(pext(p2, ~p1)). Without the pext: a free
   *  cell c is the (c - |P1 below c|)-th free cell, one popcount per piece. */
  rankP2(p1: Uint32Array, p2: Uint32Array): number {
    const full = this.tables.full;
    let rank = 0;
    let i = 1;
    let p1Before = 0; // P1's pieces in the words before w
    for (let w = 0; w < WORDS; w++) {
      const a = p1[w]! & full[w]!;
      let x = p2[w]! & ~a & full[w]!;
      while (x !== 0) {
        const low = x & -x;
        x ^= low;
        const c = (w << 5) + 31 - Math.clz32(low);
        rank += BINOMIAL_TABLE[(c - p1Before - popcount32(a & (low - 1))) * BINOMIAL_STRIDE + i]!;
        i++;
      }
      p1Before += popcount32(a);
    }
    return rank;
  }

  /** Inverse of rankP2: P2's placement for `rank` among the cells free of p1 (pdep). */
  unrankP2(p1: Uint32Array, rank: number, out: Uint32Array): void {
    const full = this.tables.full;
    const s = this.scratch;
    s.fill(0);
    unrankSet(rank, this.pieces, this.cells - this.pieces, s);
    let at = 0;
    for (let w = 0; w < WORDS; w++) {
      const free = ~p1[w]! & full[w]!;
      const sw = at >>> 5;
      const sh = at & 31;
      const chunk = sh === 0 ? s[sw]! : (s[sw]! >>> sh) | (s[sw + 1]! << (32 - sh));
      out[w] = pdep32(chunk, free);
      at += popcount32(free);
    }
  }

  /** Rank of the whole position: (rankP1 * C(N-k, k) + rankP2) * 2 + side to move. */
  rank(p: WordPosition): bigint {
    const r1 = BigInt(this.rankP1(p.p1));
    const r2 = BigInt(this.rankP2(p.p1, p.p2));
    return (r1 * BigInt(this.p2Placements) + r2) * 2n + BigInt(p.toMove);
  }

  unrank(rank: bigint): WordPosition {
    const toMove = Number(rank & 1n) as Side;
    const rest = rank >> 1n;
    const n2 = BigInt(this.p2Placements);
    const p1 = new Uint32Array(WORDS);
    const p2 = new Uint32Array(WORDS);
    this.unrankP1(Number(rest / n2), p1);
    this.unrankP2(p1, Number(rest % n2), p2);
    return { p1, p2, toMove };
  }

  /** Number of positions C(N,k) * C(N-k,k) * 2. */
  get positions(): bigint {
    return BigInt(this.p1Placements) * BigInt(this.p2Placements) * 2n;
  }

  // ---------------------------------------------------------------------------------------------
  // Symmetry

  /** Left-right mirror of a set of cells, into out. */
  mirror(b: Uint32Array, out: Uint32Array): void {
    permuteSet(b, this.mirrorMap, out);
  }

  /** 180-degree rotation of a set of cells (cell c -> N-1-c), into out. */
  rotate(b: Uint32Array, out: Uint32Array): void {
    permuteSet(b, this.rotationMap, out);
  }

  mirrorPosition(p: WordPosition): WordPosition {
    const p1 = new Uint32Array(WORDS);
    const p2 = new Uint32Array(WORDS);
    this.mirror(p.p1, p1);
    this.mirror(p.p2, p2);
    return { p1, p2, toMove: p.toMove };
  }

  /** Colour swap: rotate 180 degrees, exchange the players and the side to move. */
  swapColours(p: WordPosition): WordPosition {
    const p1 = new Uint32Array(WORDS);
    const p2 = new Uint32Array(WORDS);
    this.rotate(p.p2, p1);
    this.rotate(p.p1, p2);
    return { p1, p2, toMove: p.toMove === 0 ? 1 : 0 };
  }

  /**
   * Canonical representative of the symmetry class {p, mirror, colour swap, both}: P1 to move,
   * and of the (at most two) such positions the one of lower rank. The mirror counts only where
   * it is a symmetry of the variant (Variant.mirrorSymmetric). Values, move counts and
   * legality are invariant under these symmetries, so a solver stores only canonical positions.
   */
  canonical(p: WordPosition): WordPosition {
    const base = p.toMove === 0 ? p : this.swapColours(p);
    if (!this.variant.mirrorSymmetric) return base;
    const mirrored = this.mirrorPosition(base);
    return this.rank(mirrored) < this.rank(base) ? mirrored : base;
  }
}

function toggle(b: Uint32Array, c: number): void {
  b[c >>> 5]! ^= 1 << (c & 31);
}

function emit(out: Int32Array, count: number, from: number, dests: number, offset: number): number {
  while (dests !== 0) {
    const low = dests & -dests;
    dests ^= low;
    out[2 * count] = from;
    out[2 * count + 1] = offset + 31 - Math.clz32(low);
    count++;
  }
  return count;
}

function pushCells(stack: Int32Array, sp: number, cells: number, offset: number): number {
  while (cells !== 0) {
    const low = cells & -cells;
    cells ^= low;
    stack[sp++] = offset + 31 - Math.clz32(low);
  }
  return sp;
}
