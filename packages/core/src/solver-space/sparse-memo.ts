/**
 * What a sparse pass learns about each group's unknown states, kept for the next sparse pass of the
 * same solve (SparsePassOptions.memo; native: kernel/sparse_memo.inl, which says why it is sound).
 *
 * A sparse visit that stops at an unknown child (its blocker) leaves the state unknown, and the
 * same visit in a later pass stops there again for as long as that child is unknown. So a pass
 * keeps, per group, the states it left unknown and each one's blocker (NO_MOVES: a state without
 * moves); the next pass of the same solve reads only those of a group it listed whole, and visits
 * none whose blocker is still unknown: the same visits, in the same order, with the same outcome.
 */
import type { TableLike } from './table-bytes.js';

/** A listed state without moves (its visits find no child to wait on). */
export const NO_MOVES = -2;

/** Bytes an entry counts for against the budget: a 32-bit offset and a blocker (as native's). */
const ENTRY_BYTES = 12;

export class SparseMemo {
  private token = 0; // 0: no solve
  private table: TableLike | undefined;
  private budget = 0;
  private offsets: Array<Uint32Array | undefined> = [];
  private blockers: Array<Float64Array | undefined> = [];
  private usedBytes = 0;

  /** The memo for the solve `token` on `table` within `budget` bytes: what was kept for another
   *  solve, table or budget is dropped. */
  bind(token: number, table: TableLike, budget: number, groups: number): void {
    if (token === this.token && table === this.table && budget === this.budget && this.offsets.length === groups) return;
    this.token = token;
    this.table = table;
    this.budget = budget;
    this.offsets = new Array<Uint32Array | undefined>(groups);
    this.blockers = new Array<Float64Array | undefined>(groups);
    this.usedBytes = 0;
  }

  /** Every unknown state of group g is listed (in increasing offset): the pass needs no scan. */
  complete(g: number): boolean {
    return this.offsets[g] !== undefined;
  }

  /** Group g's listed states: their offsets in the group, and their blockers. */
  entries(g: number): { offsets: Uint32Array; blockers: Float64Array } {
    return { offsets: this.offsets[g]!, blockers: this.blockers[g]! };
  }

  // The current group's states left unknown so far (remember), its list at endGroup.
  private freshOffsets = new Uint32Array(64);
  private freshBlockers = new Float64Array(64);
  private freshCount = 0;

  /** A group's visits begin. */
  startGroup(): void {
    this.freshCount = 0;
  }

  /** The state at `offset` of the group was left unknown, waiting on child `blocker` (or NO_MOVES). */
  remember(offset: number, blocker: number): void {
    if (this.freshCount === this.freshOffsets.length) {
      const offsets = new Uint32Array(2 * this.freshCount);
      offsets.set(this.freshOffsets);
      this.freshOffsets = offsets;
      const blockers = new Float64Array(2 * this.freshCount);
      blockers.set(this.freshBlockers);
      this.freshBlockers = blockers;
    }
    this.freshOffsets[this.freshCount] = offset;
    this.freshBlockers[this.freshCount++] = blocker;
  }

  /** Group g's visits are done: what they remembered is its list from now on (every state its pass
   *  left unknown), if the budget holds it; else it has none. */
  endGroup(g: number): void {
    const old = this.offsets[g];
    if (old) this.usedBytes -= old.length * ENTRY_BYTES;
    this.offsets[g] = undefined;
    this.blockers[g] = undefined;
    const count = this.freshCount;
    if (this.usedBytes + count * ENTRY_BYTES > this.budget) return;
    this.usedBytes += count * ENTRY_BYTES;
    this.offsets[g] = this.freshOffsets.slice(0, count);
    this.blockers[g] = this.freshBlockers.slice(0, count);
  }

  /** Bytes the lists count for. */
  get used(): number {
    return this.usedBytes;
  }

  /** Drops every list (the solve's sparse passes are over); returns the bytes they counted for. */
  release(): number {
    const used = this.usedBytes;
    this.token = 0;
    this.table = undefined;
    this.budget = 0;
    this.offsets = [];
    this.blockers = [];
    this.usedBytes = 0;
    return used;
  }
}
