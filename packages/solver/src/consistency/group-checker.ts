/**
 * The full check of consistency.ts, child group by child group: GroupChecker judges every parent
 * whose children lie in one child group against that group's values, on the main thread or in a
 * worker (consistency-worker.ts), and tallies counts and the mismatches of lowest index. Also the
 * messages of a step between the main thread and the workers.
 */
import { NO_DISTANCE, type RuleMode, StateSpace, WORDS, rankSet, unrankSet } from '@ccheckers/core';
import { Kind, Problem, StateJudge } from './judge.js';

/** Stored states per value code and per rules class, over the states checked. */
export interface ConsistencyCounts {
  win: number;
  loss: number;
  draw: number;
  illegal: number;
  /** Terminal (already won by the side that just moved). */
  terminal: number;
  /** Legal, non-terminal, every move into an illegal position (a LOSS by RULES.md section 5). */
  allMovesIllegal: number;
}

export function emptyConsistencyCounts(): ConsistencyCounts {
  return { win: 0, loss: 0, draw: 0, illegal: 0, terminal: 0, allMovesIllegal: 0 };
}

export function addCounts(into: ConsistencyCounts, from: ConsistencyCounts): void {
  for (const k of Object.keys(into) as Array<keyof ConsistencyCounts>) into[k] += from[k];
}

const VALUE_KEY = ['draw', 'loss', 'win', 'illegal'] as const;

/** The mismatches of lowest index, at most `limit`, and how many there were in all. */
export class MismatchList {
  total = 0;
  readonly first: number[] = [];

  constructor(readonly limit: number) {}

  add(index: number): void {
    this.total++;
    const f = this.first;
    if (f.length === this.limit && index >= f[f.length - 1]!) return;
    let at = f.length;
    while (at > 0 && f[at - 1]! > index) at--;
    f.splice(at, 0, index);
    if (f.length > this.limit) f.pop();
  }

  merge(total: number, first: readonly number[]): void {
    for (const i of first) this.add(i);
    this.total += total - first.length;
  }
}

/**
 * The check of one step of the full check: the parents in `block` (groups [blockFirst,
 * blockFirst + blockGroups), values and distances) against the child groups [childFrom, childTo)
 * of `chunk` (which starts at group chunkFirst). Shared by the main thread and the workers: each
 * takes child groups from `next()` until it returns -1.
 */
export interface StepTables {
  blockValues: Uint8Array;
  blockDistances?: Uint8Array | undefined;
  blockFirst: number;
  blockGroups: number;
  chunkValues: Uint8Array;
  chunkDistances?: Uint8Array | undefined;
  chunkFirst: number;
}

export class GroupChecker {
  readonly judge: StateJudge;
  counts = emptyConsistencyCounts();
  checked = 0;
  mismatches: MismatchList;
  private readonly reps: Uint32Array;
  private readonly decoded: Uint8Array;
  private readonly a = new Uint32Array(WORDS);
  private readonly b = new Uint32Array(WORDS);
  private readonly t = new Uint32Array(WORDS);

  constructor(
    readonly space: StateSpace,
    rules: RuleMode,
    limit = 10,
  ) {
    this.judge = new StateJudge(space, rules);
    this.mismatches = new MismatchList(limit);
    this.reps = groupRepresentatives(space);
    this.decoded = new Uint8Array(space.p2Placements);
  }

  /** Starts counting afresh (a worker's next step). */
  reset(): void {
    this.counts = emptyConsistencyCounts();
    this.checked = 0;
    this.mismatches = new MismatchList(this.mismatches.limit);
  }

  /** Checks every parent in the block whose children lie in child group h (held by the chunk). */
  checkChildGroup(h: number, t: StepTables): void {
    const { space, judge, reps, decoded, a, b } = this;
    const per = space.p2Placements;
    const distances = t.blockDistances !== undefined;
    // The child group's values, one byte each.
    const start = (h - t.chunkFirst) * per;
    const chunk = t.chunkValues;
    for (let r = 0; r < per; r++) {
      const i = start + r;
      decoded[r] = (chunk[(i - (i & 3)) / 4]! >>> ((i & 3) << 1)) & 3;
    }
    const childDistances = t.chunkDistances?.subarray(start, start + per);
    // The P2 placements whose children lie in h: rot(rep(h)), and rot(mirror(rep(h))) when the
    // group stands for two placements.
    const copies = space.variant.mirrorSymmetric && space.groupWeight[h] === 2 ? 2 : 1;
    const engine = judge.engine;
    for (let copy = 0; copy < copies; copy++) {
      for (let w = 0; w < WORDS; w++) this.t[w] = reps[WORDS * h + w]!;
      if (copy === 1) {
        engine.mirror(this.t, b);
        this.t.set(b);
      }
      engine.rotate(this.t, b);
      if (judge.prepare(b) !== h) throw new Error(`consistency: the children of P2 placement ${rankSet(b)} are not in group ${h}`);
      const b0 = b[0]!;
      const b1 = b[1]!;
      const b2 = b[2]!;
      const blockEnd = t.blockFirst + t.blockGroups;
      const values = t.blockValues;
      for (let g = t.blockFirst; g < blockEnd; g++) {
        const o = WORDS * g;
        if (((reps[o]! & b0) | (reps[o + 1]! & b1) | (reps[o + 2]! & b2)) !== 0) continue;
        a[0] = reps[o]!;
        a[1] = reps[o + 1]!;
        a[2] = reps[o + 2]!;
        const r = engine.rankP2(a, b);
        const local = (g - t.blockFirst) * per + r;
        const v = (values[(local - (local & 3)) / 4]! >>> ((local & 3) << 1)) & 3;
        const d = distances ? t.blockDistances![local]! : NO_DISTANCE;
        const kind = judge.derive(a, b);
        const n = judge.count;
        for (let i = 0; i < n; i++) {
          const cr = judge.childRank[i]!;
          judge.childValue[i] = decoded[cr]!;
          judge.childDistance[i] = childDistances ? childDistances[cr]! : NO_DISTANCE;
        }
        const problem = judge.judge(v, d, distances);
        this.tally(v, kind);
        if (problem !== Problem.OK) this.mismatches.add(g * per + r);
      }
    }
  }

  tally(v: number, kind: number): void {
    this.checked++;
    const c = this.counts;
    c[VALUE_KEY[v]!]++;
    if (kind === Kind.TERMINAL) c.terminal++;
    else if (kind === Kind.PLAY && this.judge.count === 0) c.allMovesIllegal++;
  }
}

/** Each group's representative P1 placement, WORDS words per group. */
export function groupRepresentatives(space: StateSpace): Uint32Array {
  const reps = new Uint32Array(space.groups * WORDS);
  for (let g = 0; g < space.groups; g++) unrankSet(space.rankOf[g]!, space.pieces, space.cells, reps, g * WORDS);
  return reps;
}

/** A step's work for the workers (typed arrays on SharedArrayBuffers). */
export interface ConsistencyStep extends StepTables {
  childFrom: number;
  childTo: number;
}

export interface ConsistencyWorkerData {
  board: number;
  pieces: number;
  rules: RuleMode;
  limit: number;
  /** [0]: next child group of the current step; [1]: child groups done (progress). */
  counter: Int32Array;
}

export interface ConsistencyWorkerResult {
  counts: ConsistencyCounts;
  checked: number;
  total: number;
  first: number[];
}
