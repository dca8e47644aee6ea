/**
 * From a position (either side to move) to its stored state's index in the 2-bit table, and the
 * expansion of stored-state counts back to counts over the whole game (RULES.md section 7).
 */
import {
  BitboardEngine,
  ILLEGAL,
  LOSS,
  type StateSpace,
  UNKNOWN,
  WIN,
  WORDS,
  type WordPosition,
  rankSet,
} from '@ccheckers/core';

export class StateIndexer {
  private readonly a = new Uint32Array(WORDS);
  private readonly b = new Uint32Array(WORDS);
  private readonly t = new Uint32Array(WORDS);

  constructor(
    readonly space: StateSpace,
    readonly engine: BitboardEngine,
  ) {}

  /** Index of the stored state standing for `p`: colour-swapped when P2 is to move, then mirrored into its group. */
  index(p: WordPosition): number {
    const { a, b, t, engine, space } = this;
    if (p.toMove === 0) {
      a.set(p.p1);
      b.set(p.p2);
    } else {
      engine.rotateSet(p.p2, a);
      engine.rotateSet(p.p1, b);
    }
    const r1 = rankSet(a);
    if (space.mirroredRank[r1] === 1) {
      engine.mirrorSet(a, t);
      a.set(t);
      engine.mirrorSet(b, t);
      b.set(t);
    }
    return space.groupOfRank[r1]! * space.p2Placements + engine.rankP2(a, b);
  }

  private readonly childA = new Uint32Array(WORDS);
  private childBase = 0;
  private childMirrored = false;
  private childRotated = false;

  /**
   * Prepares childIndex() for the positions one move after `p`: they all share the stored
   * state's P1 placement (the mover's opponent, rotated when P1 moved), hence group and mirror.
   */
  prepareChildren(p: WordPosition): void {
    const { engine, space, childA: a, t } = this;
    this.childRotated = p.toMove === 0;
    if (this.childRotated) engine.rotateSet(p.p2, a);
    else a.set(p.p1);
    const r1 = rankSet(a);
    this.childMirrored = space.mirroredRank[r1] === 1;
    if (this.childMirrored) {
      engine.mirrorSet(a, t);
      a.set(t);
    }
    this.childBase = space.groupOfRank[r1]! * space.p2Placements;
  }

  /** Index of the child where the mover's pieces are now `moved` (after prepareChildren). */
  childIndex(moved: Uint32Array): number {
    const { engine, b, t } = this;
    if (this.childRotated) engine.rotateSet(moved, b);
    else b.set(moved);
    if (this.childMirrored) {
      engine.mirrorSet(b, t);
      b.set(t);
    }
    return this.childBase + engine.rankP2(this.childA, b);
  }
}

export interface GameCounts {
  positions: number;
  p1Wins: number;
  p2Wins: number;
  draws: number;
  illegal: number;
}

/**
 * Counts over the full game. A stored state of weight w (1 or 2 mirror images) stands for w
 * positions with P1 to move and, through the colour swap, w with P2 to move whose side to move
 * has the same value. So a stored WIN gives w P1 wins and w P2 wins, and so does a stored LOSS.
 */
export function expandCounts(space: StateSpace, table: Uint8Array): GameCounts {
  const per = space.p2Placements;
  const counts = [0, 0, 0, 0];
  const group = [0, 0, 0, 0];
  for (let g = 0; g < space.groups; g++) {
    group.fill(0);
    const from = g * per;
    const to = from + per;
    let i = from;
    for (; i < to && (i & 3) !== 0; i++) group[(table[i >>> 2]! >>> ((i & 3) << 1)) & 3]!++;
    for (; i + 4 <= to; i += 4) {
      const byte = table[i >>> 2]!;
      group[byte & 3]!++;
      group[(byte >>> 2) & 3]!++;
      group[(byte >>> 4) & 3]!++;
      group[byte >>> 6]!++;
    }
    for (; i < to; i++) group[(table[i >>> 2]! >>> ((i & 3) << 1)) & 3]!++;
    const w = space.groupWeight[g]!;
    for (let v = 0; v < 4; v++) counts[v]! += w * group[v]!;
  }
  const decided = counts[WIN]! + counts[LOSS]!;
  return {
    positions: 2 * (counts[0]! + counts[1]! + counts[2]! + counts[3]!),
    p1Wins: decided,
    p2Wins: decided,
    draws: 2 * counts[UNKNOWN]!,
    illegal: 2 * counts[ILLEGAL]!,
  };
}

/** Stored states per value code (index UNKNOWN, LOSS, WIN, ILLEGAL), unweighted. */
export function storedCounts(table: Uint8Array, states: number): number[] {
  const counts = [0, 0, 0, 0];
  for (let i = 0; i < states; i++) counts[(table[i >>> 2]! >>> ((i & 3) << 1)) & 3]!++;
  return counts;
}

/** Stored states decided so far (won, lost or illegal), unweighted. */
export function provenStates(table: Uint8Array, states: number): number {
  return states - storedCounts(table, states)[UNKNOWN]!;
}
