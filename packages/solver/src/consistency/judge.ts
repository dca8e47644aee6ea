/**
 * The judgement of one stored state (consistency.ts): its class by the rules (illegal, terminal,
 * moveless, in play), its legal children and their stored indices (ranked here, apart from the
 * solver's state graph), and whether its stored value (and distance) is what the children's values
 * make it. Also the two helpers that read a state and its children by random access.
 */
import { BINOMIAL_STRIDE, BINOMIAL_TABLE, BitboardEngine, ILLEGAL, LOSS, NO_DISTANCE, type RuleMode, StateSpace, UNKNOWN, WIN, WORDS, type WordPosition, permuteSet, rankSet, unrankSet } from '@ccheckers/core';
import type { StoredValues } from '../database-file.js';

/** What is wrong with a state (0: nothing). */
export const Problem = {
  OK: 0,
  /** Illegal under the rules (Def. 2 or 3), stored as legal. */
  ILLEGAL_STORED_LEGAL: 1,
  /** Legal under the rules, stored as illegal. */
  LEGAL_STORED_ILLEGAL: 2,
  /** The side that just moved has won (terminal): must be a LOSS for the side to move. */
  TERMINAL_NOT_LOST: 3,
  /** A legal, non-terminal state with no move at all: no value (RULES.md section 5). */
  MOVELESS: 4,
  /** A WIN without a legal child that is a LOSS. */
  WIN_WITHOUT_LOST_CHILD: 5,
  /** A LOSS with a legal child that is not a WIN. */
  LOSS_WITH_CHILD_NOT_WON: 6,
  /** A DRAW with a LOSS child, or whose children are all WINs (or that has no legal move). */
  DRAW_DECIDED: 7,
  /** A DRAW without a LOSS child and without a DRAW child (a legal child stored illegal). */
  DRAW_WITHOUT_DRAWN_CHILD: 8,
  /** The right value, the wrong distance to the end. */
  WRONG_DISTANCE: 9,
} as const;
export type Problem = (typeof Problem)[keyof typeof Problem];

export const PROBLEM_NAMES: Record<number, string> = {
  1: 'illegal-stored-legal',
  2: 'legal-stored-illegal',
  3: 'terminal-not-lost',
  4: 'moveless',
  5: 'win-without-lost-child',
  6: 'loss-with-child-not-won',
  7: 'draw-decided',
  8: 'draw-without-drawn-child',
  9: 'wrong-distance',
};

/** How the rules classify a state before its children are looked at. */
export const Kind = { ILLEGAL: 0, TERMINAL: 1, MOVELESS: 2, PLAY: 3 } as const;

/** The expected value when it cannot be told (a legal child stored illegal, no other reason). */
export const UNDETERMINED = -1;
/** The expected value of a moveless state: none. */
export const NO_VALUE = -2;

/**
 * Classifies stored states by the rules and judges their stored value against their children's.
 * Reuses its buffers: one per thread. Call prepare(b) for the states with P2 placement b, then
 * derive(a, b), fill childValue/childDistance for the `count` legal children (ranks in childRank,
 * within group childGroup), then judge().
 */
export class StateJudge {
  readonly engine: BitboardEngine;
  /** Legal children of the derived state: the move and the child's rank in the child group. */
  count = 0;
  readonly childRank: Float64Array;
  readonly childFrom: Int32Array;
  readonly childTo: Int32Array;
  /** Filled by the caller: the children's stored value codes and distances. */
  readonly childValue: Uint8Array;
  readonly childDistance: Uint8Array;
  /** The group all children of the prepared states lie in. */
  childGroup = 0;
  kind: number = Kind.PLAY;
  /** Set by judge(): the value (or UNDETERMINED, NO_VALUE) and distance the rules and the
   *  children give, and the child that shows it (-1: none). */
  expectedValue = 0;
  expectedDistance = NO_DISTANCE;
  witness = -1;
  /** Pseudo-moves of the derived state (legal or not). */
  moves = 0;

  private readonly moveBuffer: Int32Array;
  private readonly pos: WordPosition = { p1: new Uint32Array(WORDS), p2: new Uint32Array(WORDS), toMove: 0 };
  private readonly child: WordPosition = { p1: new Uint32Array(WORDS), p2: new Uint32Array(WORDS), toMove: 1 };
  private readonly rotated = new Uint32Array(WORDS);

  constructor(
    readonly space: StateSpace,
    rules: RuleMode,
  ) {
    this.engine = new BitboardEngine(space.variant, rules);
    const max = this.engine.maxMoves;
    this.moveBuffer = new Int32Array(2 * max);
    this.childRank = new Float64Array(max);
    this.childFrom = new Int32Array(max);
    this.childTo = new Int32Array(max);
    this.childValue = new Uint8Array(max);
    this.childDistance = new Uint8Array(max);
    const n = space.cells;
    const mirror = space.variant.geometry.mirror;
    this.rot = Int32Array.from({ length: n }, (_, c) => n - 1 - c);
    this.rotMirror = Int32Array.from({ length: n }, (_, c) => mirror[n - 1 - c]!);
    this.map = this.rot;
    this.freeRow = new Int32Array(n);
  }

  // The children of (a, b) are (rot b, rot a'), mirrored together when rot(b) is not its group's
  // representative: their P1 placement `childP1` = map(b) for one map (rotation, or rotation and
  // mirror), and their P2 placement map(a') is ranked among the cells childP1 leaves free (colex,
  // as StateIndexer ranks it): `freeRow[c]` is the binomial-table row of cell c's index there.
  private map: Int32Array;
  private readonly rot: Int32Array;
  private readonly rotMirror: Int32Array;
  private readonly childP1 = new Uint32Array(WORDS);
  private readonly freeRow: Int32Array;
  private readonly mapped = new Uint32Array(WORDS);

  /** Prepares the children of the states whose P2 placement is b; returns their group. */
  prepare(b: Uint32Array): number {
    const { space, engine, rotated } = this;
    engine.rotate(b, rotated);
    const r1 = rankSet(rotated);
    this.childGroup = space.groupOfRank[r1]!;
    this.map = space.mirrored[r1] === 1 ? this.rotMirror : this.rot;
    permuteSet(b, this.map, this.childP1);
    const p1 = this.childP1;
    let below = 0;
    for (let c = 0; c < space.cells; c++) {
      this.freeRow[c] = (c - below) * BINOMIAL_STRIDE;
      if ((p1[c >>> 5]! >>> (c & 31)) & 1) below++;
    }
    return this.childGroup;
  }

  /** The rules' class of (a, b), P1 to move (b prepared), and its legal children. */
  derive(a: Uint32Array, b: Uint32Array): number {
    const { engine, pos, child } = this;
    pos.p1.set(a);
    pos.p2.set(b);
    this.count = 0;
    this.moves = 0;
    if (engine.isIllegal(pos)) return (this.kind = Kind.ILLEGAL);
    if (engine.hasWon(1, pos)) return (this.kind = Kind.TERMINAL);
    const a0 = a[0]!;
    const a1 = a[1]!;
    const a2 = a[2]!;
    const moves = this.moveBuffer;
    const n = engine.generate(a0, a1, a2, a0 | b[0]!, a1 | b[1]!, a2 | b[2]!, moves);
    this.moves = n;
    if (n === 0) return (this.kind = Kind.MOVELESS);
    const moved = child.p1;
    child.p2.set(b);
    const map = this.map;
    const m = this.mapped;
    permuteSet(a, map, m);
    const m0 = m[0]!;
    const m1 = m[1]!;
    const m2 = m[2]!;
    const rows = this.freeRow;
    let count = 0;
    for (let i = 0; i < n; i++) {
      const from = moves[2 * i]!;
      const to = moves[2 * i + 1]!;
      let w0 = a0;
      let w1 = a1;
      let w2 = a2;
      if (from < 32) w0 ^= 1 << from;
      else if (from < 64) w1 ^= 1 << (from - 32);
      else w2 ^= 1 << (from - 64);
      if (to < 32) w0 ^= 1 << to;
      else if (to < 64) w1 ^= 1 << (to - 32);
      else w2 ^= 1 << (to - 64);
      moved[0] = w0;
      moved[1] = w1;
      moved[2] = w2;
      if (engine.isIllegal(child)) continue; // a move into an illegal position does not exist
      // The child's P2 placement, map(a'), and its colex rank among the free cells.
      const f = map[from]!;
      const t = map[to]!;
      let d0 = m0;
      let d1 = m1;
      let d2 = m2;
      if (f < 32) d0 ^= 1 << f;
      else if (f < 64) d1 ^= 1 << (f - 32);
      else d2 ^= 1 << (f - 64);
      if (t < 32) d0 ^= 1 << t;
      else if (t < 64) d1 ^= 1 << (t - 32);
      else d2 ^= 1 << (t - 64);
      let rank = 0;
      let k = 1;
      for (let w = 0; w < WORDS; w++) {
        let x = w === 0 ? d0 : w === 1 ? d1 : d2;
        while (x !== 0) {
          const low = x & -x;
          x ^= low;
          rank += BINOMIAL_TABLE[rows[(w << 5) + 31 - Math.clz32(low)]! + k]!;
          k++;
        }
      }
      this.childFrom[count] = from;
      this.childTo[count] = to;
      this.childRank[count] = rank;
      count++;
    }
    this.count = count;
    return (this.kind = Kind.PLAY);
  }

  /** Judges stored value `v` (and distance `d` when `distances`) of the derived state: a Problem. */
  judge(v: number, d: number, distances: boolean): number {
    this.witness = -1;
    switch (this.kind) {
      case Kind.ILLEGAL:
        this.expectedValue = ILLEGAL;
        this.expectedDistance = NO_DISTANCE;
        if (v !== ILLEGAL) return Problem.ILLEGAL_STORED_LEGAL;
        return distances && d !== NO_DISTANCE ? Problem.WRONG_DISTANCE : Problem.OK;
      case Kind.TERMINAL:
        this.expectedValue = LOSS;
        this.expectedDistance = 0;
        if (v === ILLEGAL) return Problem.LEGAL_STORED_ILLEGAL;
        if (v !== LOSS) return Problem.TERMINAL_NOT_LOST;
        return distances && d !== 0 ? Problem.WRONG_DISTANCE : Problem.OK;
      case Kind.MOVELESS:
        this.expectedValue = NO_VALUE;
        this.expectedDistance = NO_DISTANCE;
        return v === ILLEGAL ? Problem.LEGAL_STORED_ILLEGAL : Problem.MOVELESS;
    }
    // Nearest lost child, farthest won child, a drawn child, a legal child stored illegal.
    let lost = -1;
    let won = -1;
    let drawn = -1;
    let bad = -1;
    const values = this.childValue;
    const dist = this.childDistance;
    for (let i = 0; i < this.count; i++) {
      const c = values[i]!;
      if (c === LOSS) {
        if (lost < 0 || dist[i]! < dist[lost]!) lost = i;
      } else if (c === WIN) {
        if (won < 0 || dist[i]! > dist[won]!) won = i;
      } else if (c === UNKNOWN) {
        if (drawn < 0) drawn = i;
      } else if (bad < 0) bad = i;
    }
    if (this.count === 0) {
      this.expectedValue = LOSS; // every move leads to an illegal position
      this.expectedDistance = 0;
    } else if (lost >= 0) {
      this.expectedValue = WIN;
      this.expectedDistance = dist[lost]! + 1;
      this.witness = lost;
    } else if (drawn < 0 && bad < 0) {
      this.expectedValue = LOSS;
      this.expectedDistance = dist[won]! + 1;
      this.witness = won;
    } else if (drawn >= 0) {
      this.expectedValue = UNKNOWN;
      this.expectedDistance = NO_DISTANCE;
      this.witness = drawn;
    } else {
      this.expectedValue = UNDETERMINED;
      this.expectedDistance = NO_DISTANCE;
      this.witness = bad;
    }
    const ev = this.expectedValue;
    switch (v) {
      case ILLEGAL:
        return Problem.LEGAL_STORED_ILLEGAL;
      case WIN:
        if (ev !== WIN) {
          this.witness = -1;
          return Problem.WIN_WITHOUT_LOST_CHILD;
        }
        break;
      case LOSS:
        if (ev !== LOSS) {
          // The child that is not a WIN.
          this.witness = lost >= 0 ? lost : drawn >= 0 ? drawn : bad;
          return Problem.LOSS_WITH_CHILD_NOT_WON;
        }
        break;
      default:
        if (ev === WIN || ev === LOSS) return Problem.DRAW_DECIDED;
        if (ev !== UNKNOWN) return Problem.DRAW_WITHOUT_DRAWN_CHILD;
        break;
    }
    if (distances && d !== this.expectedDistance) return Problem.WRONG_DISTANCE;
    return Problem.OK;
  }
}

/** Reads the children of the derived state into the judge from a random-access source. */
export function readChildren(judge: StateJudge, reader: StoredValues): void {
  const base = judge.childGroup * judge.space.p2Placements;
  for (let i = 0; i < judge.count; i++) {
    const index = base + judge.childRank[i]!;
    judge.childValue[i] = reader.value(index);
    judge.childDistance[i] = reader.distance(index);
  }
}

/** The stored state's position words. */
export function stateWords(space: StateSpace, engine: BitboardEngine, index: number, a: Uint32Array, b: Uint32Array): void {
  const per = space.p2Placements;
  const g = Math.floor(index / per);
  unrankSet(space.rankOf[g]!, space.pieces, space.cells, a);
  engine.unrankP2(a, index - g * per, b);
}
