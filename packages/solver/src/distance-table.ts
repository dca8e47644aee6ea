/**
 * Distance tables: the plies to the end of every won or lost stored state under best play, layer
 * by layer from the ends of the game (layer d gives d + 1 to the parents it decides). A solve with
 * --distances stores one in its database (solve.ts); a query of a small database without one gets
 * it computed whole here, by a native kernel, instead of exploring from the position asked
 * (query.ts).
 */
import { type Backend, CCheckersError, LOSS, MAX_DISTANCE, NO_DISTANCE, type RuleMode, type SolverKernel, StateSpace, WIN, variant } from '@ccheckers/core';
import type { StoredValues } from './database-file.js';
import { storedCounts } from './state-index.js';
import { runPhase } from './worker-pool.js';

export type DistancePhase = 'distance-init' | 'distance';

/**
 * Runs the layers until the `decided` won and lost states all have a distance: 'distance-init'
 * (the ends of the game), then 'distance' at depth 0, 1, ... `runLayer` runs one over the whole
 * table and returns how many states it gave a distance. Returns the largest distance (plies).
 */
export async function layDistances(decided: number, runLayer: (phase: DistancePhase, depth: number) => Promise<number>): Promise<number> {
  let assigned = await runLayer('distance-init', 0);
  let depth = 0;
  while (assigned < decided) {
    if (depth === MAX_DISTANCE) {
      throw new CCheckersError('E_LIMIT', `${decided - assigned} states are more than ${MAX_DISTANCE} plies from the end: distances do not fit one byte`);
    }
    const newly = await runLayer('distance', depth);
    if (newly === 0) {
      throw new CCheckersError('E_INTERNAL', `${decided - assigned} won or lost states got no distance: the table is inconsistent`);
    }
    assigned += newly;
    depth++;
  }
  return depth;
}

/**
 * Up to this many stored states a query's distances are the whole table's, computed by a native
 * kernel when the database has none: 7x7/2 (1.27 million states) takes 0.34 s on one thread,
 * where exploring from its start in TS took 3 s. The variants above it start at 7x7/3 (141
 * million states: 50 s on 2 threads), where exploring from the position asked stays.
 */
export const WHOLE_TABLE_DISTANCES_UP_TO = 2 ** 24;

/** The distance table of a solved value `table` (every state's value final), by `kernel` on
 *  `threads` of its own. */
export async function computeDistanceTable(kernel: SolverKernel, space: StateSpace, table: Uint8Array, threads: number): Promise<Uint8Array> {
  const distances = new Uint8Array(space.states).fill(NO_DISTANCE);
  const stored = storedCounts(table, space.states);
  await layDistances(stored[WIN]! + stored[LOSS]!, async (phase, depth) => {
    const s = runPhase(kernel, phase, { table, distances }, 0, space.groups, depth, threads);
    return s.wins + s.losses;
  });
  return distances;
}

/** Whether `values` has no distance table, holds its table in memory and has at most
 *  WHOLE_TABLE_DISTANCES_UP_TO states: then withComputedDistances can give it one. */
export function canComputeDistances(values: StoredValues): boolean {
  return !values.hasDistances && values.heldTable?.() !== undefined && values.header.storedStates <= WHOLE_TABLE_DISTANCES_UP_TO;
}

/**
 * `values` with its distance table computed whole (canComputeDistances) where `backend` runs its
 * kernel's threads itself (native: the TS kernel is slower at this than exploring from the
 * position asked); else `values` as it is.
 */
export async function withComputedDistances(values: StoredValues, backend: Backend, threads: number): Promise<StoredValues> {
  const table = values.heldTable?.();
  if (!table || !canComputeDistances(values) || !backend.kernelThreads) return values;
  const h = values.header;
  const space = new StateSpace(variant(h.board, h.pieces));
  const distances = await computeDistanceTable(backend.solverKernel(space.variant, h.rules as RuleMode), space, table, threads);
  return {
    header: h,
    hasDistances: true,
    readsFromDisk: false,
    heldTable: () => table,
    value: (index) => values.value(index),
    distance: (index) => distances[index]!,
  };
}
