/**
 * How the full consistency check holds the table within its memory budget: whole, or in blocks of
 * parent groups while the child groups are streamed past each block (consistency.ts).
 */
import { CCheckersError, MAX_TYPED_ARRAY_BYTES, StateSpace } from '@ccheckers/core';
import { formatBytes } from '../memory.js';

/** Bytes a block of groups takes (values and distances), and a chunk. */
function groupBytes(space: StateSpace, groups: number, distances: boolean): number {
  return Math.ceil((groups * space.p2Placements) / 4) + (distances ? groups * space.p2Placements : 0);
}

export interface ConsistencyPlan {
  unitGroups: number;
  units: number;
  /** Units per block of parents; blocks = ceil(units / blockUnits). */
  blockUnits: number;
  blocks: number;
  /** Bytes held: the block, and the chunk the child groups are streamed through (0 for one block). */
  blockBytes: number;
  chunkBytes: number;
  overheadBytes: number;
}

/** Per-thread maps and buffers besides the tables (group maps, engine tables, representatives). */
export function overheadBytes(space: StateSpace, threads: number): number {
  return (1 + threads) * (space.p1Placements * 10 + space.groups * 24 + 4 * 2 ** 20) + 32 * 2 ** 20;
}

/** How the full check holds the table within `budget` bytes. */
export function planConsistency(space: StateSpace, unitGroups: number, distances: boolean, threads: number, budget: number): ConsistencyPlan {
  const units = Math.ceil(space.groups / unitGroups);
  const unitBytes = groupBytes(space, unitGroups, distances);
  const overhead = overheadBytes(space, threads);
  const whole = groupBytes(space, space.groups, distances);
  const maxBlockUnits = Math.max(1, Math.floor(MAX_TYPED_ARRAY_BYTES / Math.max(unitBytes, 1)));
  if (whole + overhead <= budget && units <= maxBlockUnits) {
    return { unitGroups, units, blockUnits: units, blocks: 1, blockBytes: whole, chunkBytes: 0, overheadBytes: overhead };
  }
  const blockUnits = Math.min(maxBlockUnits, units - 1, Math.floor((budget - overhead) / unitBytes) - 1);
  if (blockUnits < 1) {
    throw new CCheckersError(
      'E_MEMORY',
      `--memory ${formatBytes(budget)} is too small for a consistency check of ${space.variant.name}: it holds at least two runs of ` +
        `${formatBytes(unitBytes)} plus ${formatBytes(overhead)} of maps, ${formatBytes(2 * unitBytes + overhead)} in all`,
    );
  }
  return { unitGroups, units, blockUnits, blocks: Math.ceil(units / blockUnits), blockBytes: blockUnits * unitBytes, chunkBytes: unitBytes, overheadBytes: overhead };
}
