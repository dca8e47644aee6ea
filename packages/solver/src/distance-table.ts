/**
 * Distance tables: the plies to the end of every won or lost stored state under best play, layer
 * by layer from the ends of the game (layer d gives d + 1 to the parents it decides). A solve with
 * --distances stores one in its database (solve.ts); a query of a small database without one gets
 * it computed whole here, by a native kernel, instead of exploring from the position asked
 * (query.ts).
 */
import { type Backend, CCheckersError, LOSS, MAX_DISTANCE, NO_DISTANCE, type RuleMode, type SolverKernel, StateSpace, type TableLike, WIN, tableViews, variant } from '@ccheckers/core';
import type { StoredValues } from './database-file.js';
import { storedCounts } from './state-index.js';
import { runPhase } from './worker-pool.js';

export type DistancePhase = 'distance-init' | 'distance';

/** Where layDistances starts: from a checkpoint's layer, with the won and lost states it placed. */
export interface LayingFrom {
  depth: number;
  assigned: number;
}

/**
 * Runs the layers until the `decided` won and lost states all have a distance: 'distance-init'
 * (the ends of the game), then 'distance' at depth 0, 1, ... (or at `from.depth` on, the init
 * and the layers before it done). `runLayer` runs one over the whole table and returns how many
 * states it gave a distance; `onLayerDone` hears of each layer after which others remain (the
 * next one's depth). Returns the largest distance (plies).
 *
 * A layer can be run again from a table it left partway (a checkpoint taken inside it): its
 * pushes skip the parents that have their distance, and a lost parent's mark (core's
 * lostCheckedMark) says what a check within the same layer found. So the layer `from.depth` runs
 * whole, and may find nothing left to place; it was begun with states still to place, so it
 * places at least one, and the largest distance is at least its depth + 1.
 */
export async function layDistances(
  decided: number,
  runLayer: (phase: DistancePhase, depth: number) => Promise<number>,
  options: { from?: LayingFrom; onLayerDone?: (next: number) => void } = {},
): Promise<number> {
  const { from, onLayerDone } = options;
  let assigned = from ? from.assigned : await runLayer('distance-init', 0);
  let depth = from ? from.depth : 0;
  if (!from && assigned < decided) onLayerDone?.(0);
  let resumed = from !== undefined;
  while (assigned < decided || resumed) {
    if (depth >= MAX_DISTANCE) {
      throw new CCheckersError('E_LIMIT', `${decided - assigned} states are more than ${MAX_DISTANCE} plies from the end: distances do not fit one byte`);
    }
    const newly = await runLayer('distance', depth);
    if (newly === 0 && !resumed) {
      throw new CCheckersError('E_INTERNAL', `${decided - assigned} won or lost states got no distance: the table is inconsistent`);
    }
    resumed = false;
    assigned += newly;
    depth++;
    if (assigned < decided) onLayerDone?.(depth);
  }
  return depth;
}

/** The bytes of a word at most MAX_DISTANCE, four at once (0.6 ns a byte here, against 1.7 for a
 *  byte at a time). The bytes above MAX_DISTANCE (251) are 252-255, those whose six high bits are
 *  all set. */
function placedInWord(x: number): number {
  const low = ~x & 0xfcfcfcfc; // a byte is 0 here exactly where it was 252-255
  const placed = (((low & 0x7f7f7f7f) + 0x7f7f7f7f) | low) & 0x80808080; // its high bit: not 0
  return Math.imul(placed >>> 7, 0x01010101) >>> 24;
}

/** What a resume needs of a distance table (layersSeen): the states placed (with their distance,
 *  marks and NO_DISTANCE aside), whether any is placed deeper than `depth`, and whether one is
 *  placed at `depth` or at `depth - 1`. */
export interface LayersSeen {
  placed: number;
  deeper: boolean;
  atDepth: boolean;
  atDepthBefore: boolean;
}

/**
 * The states `distances` places, and whether it holds states at `depth - 1`, at `depth` and
 * deeper (LayersSeen): a resume counts them and checks that a checkpoint's layers end where its
 * header says (solve-checkpoint.ts), in one read of the table, four bytes at a time: a resume of
 * 7x7/4 reads its 15.8e9.
 */
export function layersSeen(distances: TableLike, depth: number): LayersSeen {
  const seen: LayersSeen = { placed: 0, deeper: false, atDepth: false, atDepthBefore: false };
  for (const { bytes } of tableViews(distances)) layersSeenInBytes(bytes, depth, seen);
  return seen;
}

function layersSeenInBytes(bytes: Uint8Array, depth: number, seen: LayersSeen): void {
  const byte = (b: number) => {
    if (b <= MAX_DISTANCE) seen.placed++;
    if (b > depth && b <= MAX_DISTANCE) seen.deeper = true;
    else if (b === depth) seen.atDepth = true;
    else if (b === depth - 1) seen.atDepthBefore = true;
  };
  const head = Math.min(bytes.length, (4 - (bytes.byteOffset % 4)) % 4); // up to a word's edge
  let i = 0;
  for (; i < head; i++) byte(bytes[i]!);
  // Words (depth up to 126, as every variant here: a byte at a time past that): a byte b of
  // 0-127 is deeper where b + 127 - depth carries into its high bit; one of 128-251 where its bits
  // 2-6 are not all set (252-255 are marks and NO_DISTANCE).
  const wordCount = depth <= 126 ? Math.floor((bytes.length - head) / 4) : 0; // 0 where the view ends before the edge
  const words = wordCount > 0 ? new Uint32Array(bytes.buffer, bytes.byteOffset + head, wordCount) : new Uint32Array(0);
  const up = Math.imul(127 - depth, 0x01010101);
  const at = Math.imul(depth & 0xff, 0x01010101);
  const before = Math.imul((depth - 1) & 0xff, 0x01010101);
  const hasZeroByte = (x: number) => ((x - 0x01010101) & ~x & 0x80808080) !== 0;
  let placed = 0;
  for (let w = 0; w < words.length; w++) {
    const x = words[w]!;
    placed += placedInWord(x);
    const low = (((x & 0x7f7f7f7f) + up) & ~x & 0x80808080) !== 0;
    const high = (((~x & 0x7c7c7c7c) + 0x7f7f7f7f) & x & 0x80808080) !== 0;
    if (low || high) seen.deeper = true;
    if (hasZeroByte(x ^ at)) seen.atDepth = true;
    if (depth > 0 && hasZeroByte(x ^ before)) seen.atDepthBefore = true;
  }
  seen.placed += placed;
  for (i += 4 * words.length; i < bytes.length; i++) byte(bytes[i]!);
}

/**
 * Up to this many stored states a query's distances are the whole table's, computed by a native
 * kernel when the database has none: 7x7/2 (1.27 million states) takes 0.34 s on one thread,
 * where exploring from its start in TS took 3 s. The variants above it start at 7x7/3 (141
 * million states: 50 s on 2 threads), where exploring from the position asked stays.
 */
export const WHOLE_TABLE_DISTANCES_UP_TO = 2 ** 24;

/** The distance table of a solved value `table` (every state's value final), by `kernel` on
 *  `threads` of its own, and its farthest distance. */
export async function computeDistanceTable(kernel: SolverKernel, space: StateSpace, table: Uint8Array, threads: number): Promise<{ distances: Uint8Array; maxDistance: number }> {
  const distances = new Uint8Array(space.states).fill(NO_DISTANCE);
  const stored = storedCounts(table, space.states);
  const maxDistance = await layDistances(stored[WIN]! + stored[LOSS]!, async (phase, depth) => {
    const s = runPhase(kernel, phase, { table, distances }, 0, space.groups, depth, threads);
    return s.wins + s.losses;
  });
  return { distances, maxDistance };
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
  const { distances, maxDistance } = await computeDistanceTable(backend.solverKernel(space.variant, h.rules as RuleMode), space, table, threads);
  // The header's farthest distance is the table's, as a database's with stored distances is
  // (SolvedGame checks each distance against it).
  return {
    header: { ...h, maxDistance },
    ...(values.path !== undefined ? { path: values.path } : {}),
    hasDistances: true,
    readsFromDisk: false,
    heldTable: () => table,
    value: (index) => values.value(index),
    distance: (index) => distances[index]!,
  };
}
