/**
 * The solver's state space (native kernel: state_space.inl, the same names): its groups, the proof
 * order of the pass units, and the placements among free cells (FreePlacements).
 *
 * Layout of the solver's stored states (identical in every backend, so tables and database files
 * are interchangeable):
 *
 *   - only positions with P1 to move are stored; P2-to-move positions are read through the colour
 *     swap (rotate 180 degrees, exchange players), which preserves the value for the side to move;
 *   - P1 placements are grouped by left-right mirror class; group g is the class whose
 *     representative (the member of lower colex rank) is the g-th in rank order. A class with a
 *     mirror-symmetric placement has one member and weight 1, the others weight 2. Where the
 *     mirror is not a symmetry of the variant (start areas not mirror-symmetric, e.g. 7x7 with
 *     2 pieces) every placement is its own group of weight 1;
 *   - within a group, states are indexed by P2's rank among the free cells (rankP2);
 *   - index = group * C(N - k, k) + rankP2; 2 bits per state, four states per byte, low bits first.
 */
import { WORDS, permuteSet } from '../bits/bitboard.js';
import type { Variant } from '../geometry/variant.js';
import { binomial } from '../ranking/binomial.js';
import { nextCombination, rankSet, unrankSet } from '../ranking/combination.js';

/** Value codes in the 2-bit table. UNKNOWN is 0 so that proving a state is an atomic OR. */
export const UNKNOWN = 0; // after the last pass: a draw
export const LOSS = 1; // for the side to move (P1 in stored states)
export const WIN = 2;
export const ILLEGAL = 3;

/**
 * Distance tables (optional, one byte per stored state): plies to the end of the game under best
 * play (the winner hurries, the loser delays), NO_DISTANCE for draws and illegal states. A won
 * state is one ply more than its nearest lost child, a lost one one more than its farthest won
 * child, a terminal or moveless lost state 0. Playing towards smaller distances always ends the
 * game, which the 2-bit values alone do not guarantee (a "winning" move can go round in circles).
 */
export const NO_DISTANCE = 255;
export const MAX_DISTANCE = 251;
/**
 * Whether a finished distance table's byte `d` fits its state's 2-bit `value`: a lost state's is
 * even (0, or one more than a won child's) and a won state's odd (one more than a lost child's),
 * both at most `farthest`; draws and illegal states have NO_DISTANCE. A stored table that breaks
 * this was damaged or forged: its checksum, recomputed by whoever changed it, says nothing.
 */
export function distanceFits(value: number, d: number, farthest = MAX_DISTANCE): boolean {
  if (value === WIN) return (d & 1) === 1 && d <= farthest;
  if (value === LOSS) return (d & 1) === 0 && d <= farthest;
  return d === NO_DISTANCE;
}
/**
 * While distances are laid, a lost state without one holds LOST_WITHOUT_DISTANCE, or the mark of
 * the layer that last found one of its children still without one (lostCheckedMark): a push to a
 * parent then reads one byte, not the parent's value too, and a lost parent is checked once a
 * layer. Every lost state has a distance when the last layer ends, so a finished table holds no
 * mark (native kernel: table_parts.inl).
 */
export const LOST_WITHOUT_DISTANCE = 254;
/** The mark of a lost state found undecided in layer `depth`. Two marks in turn: each layer's
 *  scan clears the next layer's mark, which no thread sets meanwhile, so a layer never takes a
 *  mark an earlier layer set for one of its own. (Only won states check, at odd depths, so 252 is
 *  the one set; the scheme does not rely on it.) The addon exports its marks and a test compares. */
export function lostCheckedMark(depth: number): number {
  return 253 - (depth & 1);
}
export function isLostWithoutDistance(d: number): boolean {
  return d > MAX_DISTANCE && d < NO_DISTANCE;
}

/**
 * Revisits: a visit that stops at a child still unknown is usually waiting for a state the next
 * units of the same sweep prove, so a pass visits such a state once more REVISIT_LAG units (P2
 * placements, or groups in a sparse pass) later, counted per kernel call and worker; whatever
 * still waits at the end of the call is visited then. The native kernel (kernel_api.hpp,
 * kRevisitLag) uses the same lag, so single-threaded solves agree pass by pass (a test
 * compares them).
 */
export const REVISIT_LAG = 64;

export const RANKING_ID = 1; // "mirror-class groups x colex P2-among-free", version 1

export class StateSpace {
  readonly cells: number;
  readonly pieces: number;
  /** C(N, k) and C(N - k, k). */
  readonly p1Placements: number;
  readonly p2Placements: number;
  /** rankP1 of each group's representative. */
  readonly rankOf: Float64Array;
  /** 1 or 2: how many P1 placements the group stands for. */
  readonly groupWeight: Uint8Array;
  /** For every P1 rank: its group, and whether it is the mirror image of the representative. */
  readonly groupOfRank: Int32Array;
  readonly mirrored: Uint8Array;

  constructor(readonly variant: Variant) {
    const n = variant.cells;
    const k = variant.pieces;
    this.cells = n;
    this.pieces = k;
    this.p1Placements = binomial(n, k);
    this.p2Placements = binomial(n - k, k);
    if (this.p1Placements > 2 ** 31) {
      throw new RangeError(`${variant.name} has too many P1 placements to enumerate`);
    }
    const mirror = variant.geometry.mirror;
    const set = new Uint32Array(WORDS);
    const mirrored = new Uint32Array(WORDS);
    this.groupOfRank = new Int32Array(this.p1Placements).fill(-1);
    this.mirrored = new Uint8Array(this.p1Placements);
    const ranks: number[] = [];
    const weights: number[] = [];
    for (let r = 0; r < this.p1Placements; r++) {
      if (this.groupOfRank[r]! >= 0) continue;
      unrankSet(r, k, n, set);
      permuteSet(set, mirror, mirrored);
      const mr = variant.mirrorSymmetric ? rankSet(mirrored) : r;
      const g = ranks.length;
      ranks.push(r);
      weights.push(mr === r ? 1 : 2);
      this.groupOfRank[r] = g;
      if (mr !== r) {
        this.groupOfRank[mr] = g;
        this.mirrored[mr] = 1;
      }
    }
    this.rankOf = Float64Array.from(ranks);
    this.groupWeight = Uint8Array.from(weights);
  }

  private proofOrder?: Uint32Array;

  /**
   * The solver's pass units (P2 placements, by colex rank) in proof order: by total distance of
   * P2 from its goal (sum of rows; P2 heads for row 0), ties by rank. A pass then meets positions
   * roughly in order of distance to the end, so its proofs feed later ones in the same pass
   * (7x7/3, before revisits: 94.5% proven in pass 1, 84.4% in plain rank order). The native kernel
   * (state_space.inl, proofOrder) uses the same order. Built on first use.
   */
  get passOrder(): Uint32Array {
    if (this.proofOrder) return this.proofOrder;
    const { pieces: k, cells: n } = this;
    const rowOf = this.variant.geometry.rowOf;
    const units = this.p1Placements;
    const distance = new Uint16Array(units);
    const count = new Uint32Array(2 * this.variant.size * k + 1);
    const set = new Uint32Array(WORDS);
    for (let u = 0; u < units; u++) {
      unrankSet(u, k, n, set);
      let sum = 0;
      for (let c = 0; c < n; c++) if ((set[c >>> 5]! >>> (c & 31)) & 1) sum += rowOf[c]!;
      distance[u] = sum;
      count[sum + 1]!++;
    }
    for (let d = 1; d < count.length; d++) count[d]! += count[d - 1]!; // counting sort, stable
    const order = new Uint32Array(units);
    for (let u = 0; u < units; u++) order[count[distance[u]!]!++] = u;
    this.proofOrder = order;
    return order;
  }

  get groups(): number {
    return this.rankOf.length;
  }

  /** Number of stored states. */
  get states(): number {
    return this.groups * this.p2Placements;
  }

  /** Bytes of the 2-bit table. */
  get tableBytes(): number {
    return Math.ceil(this.states / 4);
  }
}

/**
 * The placements of k pieces on the cells another placement leaves free, written into `set` one
 * after the other in colex order of their ranks among the free cells: the order of rankP2, so
 * the stored states of a group (P2 among the cells free of its P1) come in index order (init,
 * distance init). A pass unit enumerates its P1 placements the same way, written out in passUnit
 * (phases.ts).
 */
export class FreePlacements {
  private readonly free: Int32Array;
  private readonly combo: Int32Array;
  private freeCells = 0;
  private pieces: number;

  constructor(
    private readonly n: number,
    private readonly k: number,
    readonly set: Uint32Array,
  ) {
    this.free = new Int32Array(n);
    this.combo = new Int32Array(k);
    this.pieces = k;
  }

  /** The first placement of `pieces` pieces (k unless given; at most as many as there are free
   *  cells; 0: one, empty) on the cells `occupied` leaves free. */
  first(occupied: Uint32Array, pieces = this.k): void {
    let f = 0;
    for (let c = 0; c < this.n; c++) if (((occupied[c >>> 5]! >>> (c & 31)) & 1) === 0) this.free[f++] = c;
    this.freeCells = f;
    this.pieces = pieces;
    for (let i = 0; i < pieces; i++) this.combo[i] = i;
    this.write();
  }

  /** The next placement; false after the last one. */
  next(): boolean {
    if (!nextCombination(this.combo, this.pieces, this.freeCells)) return false;
    this.write();
    return true;
  }

  private write(): void {
    const set = this.set;
    const free = this.free;
    const combo = this.combo;
    set[0] = 0;
    set[1] = 0;
    set[2] = 0;
    for (let i = 0; i < this.pieces; i++) {
      const c = free[combo[i]!]!;
      set[c >>> 5]! |= 1 << (c & 31);
    }
  }
}
