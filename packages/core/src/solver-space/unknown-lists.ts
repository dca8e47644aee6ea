/**
 * The states a table leaves unknown, listed by pass unit, for a listed pass (native:
 * kernel/unknown_lists.inl, which says why it pays): pass 1's units in proof order, visiting only
 * those states. A listed pass is a full pass that skips the states known when the lists were made
 * (values never become unknown again): the same visits in the same order, the same outcome.
 */
import type { ListedUnknown } from '../backend/backend.js';
import { WORDS } from '../bits/bitboard.js';
import type { BitboardEngine } from '../engine/engine.js';
import { rankSet, unrankSet } from '../ranking/combination.js';
import type { StateSpace } from './state-space.js';
import { UNKNOWN } from './state-space.js';
import type { TableLike } from './table-bytes.js';
import type { TableParts } from './table-parts.js';

/** Bytes the lists of `states` unknown states of `units` pass units take (native's too): 4 a
 *  state (its group) and 8 a unit (where its list starts). */
export function unknownListsBytes(states: number, units: number): number {
  return states * 4 + (units + 1) * 8;
}

/** Per pass unit, the groups holding its states unknown at the listing, ascending (the order its
 *  full listing has them in: groups are numbered by their representative's P1 rank). */
export class UnknownLists {
  private table: TableLike | undefined;
  private starts = new Float64Array(0); // per unit, where its groups start in `groups` (units + 1)
  private groups = new Uint32Array(0);

  /** Whether these are the lists of `table`. */
  of(table: TableLike): boolean {
    return this.table !== undefined && this.table === table;
  }

  groupsOf(unit: number): Uint32Array {
    return this.groups.subarray(this.starts[unit]!, this.starts[unit + 1]!);
  }

  /** Bytes the lists hold (as native's: 4 a state, 8 a unit). */
  bytes(): number {
    return this.groups.byteLength + this.starts.byteLength;
  }

  /** Lists the unknown states of `parts`' table, if they fit in `budget` bytes (else keeps none). */
  list(engine: BitboardEngine, space: StateSpace, parts: TableParts, table: TableLike, budget: number): ListedUnknown {
    this.release();
    const units = space.p1Placements;
    const unitOf = new Uint32Array(units); // P1 rank of a P2 placement -> its pass unit
    for (let u = 0; u < units; u++) unitOf[space.passOrder[u]!] = u;
    const counts = new Float64Array(units + 1);
    let states = 0;
    forEachUnknown(engine, space, parts, unitOf, (unit) => {
      counts[unit + 1]!++;
      states++;
    });
    const bytes = unknownListsBytes(states, units);
    if (bytes > budget) return { states, bytes, listed: false };
    for (let u = 0; u < units; u++) counts[u + 1]! += counts[u]!;
    let groups: Uint32Array<ArrayBuffer>;
    try {
      this.starts = counts.slice();
      groups = new Uint32Array(states);
    } catch (e) {
      if (!(e instanceof RangeError)) throw e;
      this.release(); // no memory for them: the lists save time, never memory
      return { states, bytes, listed: false };
    }
    const next = counts; // where each unit's next group goes
    forEachUnknown(engine, space, parts, unitOf, (unit, group) => (groups[next[unit]!++] = group));
    this.groups = groups;
    this.table = table;
    return { states, bytes, listed: true };
  }

  /** Drops the lists; returns the bytes they held. */
  release(): number {
    const bytes = this.table ? this.bytes() : 0;
    this.table = undefined;
    this.starts = new Float64Array(0);
    this.groups = new Uint32Array(0);
    return bytes;
  }
}

/** f(unit, group) for each unknown state of the table, in index order. */
function forEachUnknown(engine: BitboardEngine, space: StateSpace, parts: TableParts, unitOf: Uint32Array, f: (unit: number, group: number) => void): void {
  const a = new Uint32Array(WORDS);
  const b = new Uint32Array(WORDS);
  const per = space.p2Placements;
  for (let group = 0; group < space.groups; group++) {
    unrankSet(space.rankOf[group]!, space.pieces, space.cells, a);
    const first = group * per;
    for (let i = first; i < first + per; i++) {
      if (parts.load(i) !== UNKNOWN) continue;
      engine.unrankP2(a, i - first, b);
      f(unitOf[rankSet(b)]!, group);
    }
  }
}
