/**
 * How a sharded store cuts the 2-bit table, and how a memory budget is split.
 *
 * A shard is a run of whole groups (rows of the table) whose first state starts a byte: shard
 * boundaries fall on multiples of 4 groups, so the shards are exact byte ranges of the table an
 * in-memory solve holds, and the store's CRC-32 (over the shards in order) is that table's.
 *
 * A pass keeps a block of consecutive shards in memory (the states it decides) and streams every
 * other shard once through one more buffer (the children it reads): the block and that buffer
 * fill the budget. Reads per pass are about (shards / blockShards) tables, writes one table.
 */
import { CCheckersError, type StateSpace } from '@ccheckers/core';
import { formatBytes } from '../memory.js';

export interface Shard {
  index: number;
  firstGroup: number;
  groups: number;
  /** Byte range in the table. */
  firstByte: number;
  bytes: number;
}

export interface ShardLayout {
  groupsPerShard: number;
  shards: Shard[];
}

/** Shards about this size when neither --shards nor a small --memory sets them. */
export const DEFAULT_SHARD_BYTES = 2 ** 28;

/** The smallest band or shard --shards may ask for: a page. Smaller pieces cost more in files,
 *  manifest entries, commits and kernel calls than they save in memory. */
export const MIN_PIECE_BYTES = 2 ** 12;

/** The most shards convert --shards may ask for: the manifest names every shard, and a store made
 *  from a database file rewrites it after each shard it writes. */
export const MAX_SHARDS = 4096;

/** The most shards --shards may ask for in a store made from a database file of `space`: shards
 *  of at least MIN_PIECE_BYTES (4 groups at least), and MAX_SHARDS. */
export function maxShards(space: StateSpace): number {
  return Math.max(1, Math.min(Math.ceil(space.groups / 4), MAX_SHARDS, Math.floor(space.tableBytes / MIN_PIECE_BYTES)));
}

/** Refuses (E_USAGE) a --shards above maxShards for a store made from a database file, saying the
 *  bound and what sets it. */
export function checkShardCount(space: StateSpace, shards: number): void {
  const most = maxShards(space);
  if (shards <= most) return;
  const name = space.variant.name;
  const why =
    most === MAX_SHARDS
      ? `a store has at most ${MAX_SHARDS} shards: its manifest names every one`
      : most === Math.ceil(space.groups / 4) && most < Math.floor(space.tableBytes / MIN_PIECE_BYTES)
        ? `a shard holds 4 of its ${space.groups} groups or more`
        : `a shard of ${name} holds at least ${formatBytes(MIN_PIECE_BYTES)} of its ${formatBytes(space.tableBytes)} table`;
  throw new CCheckersError('E_USAGE', `--shards ${shards} is more than ${name} takes: at most ${most} (${why})`);
}

/** The layout of `count` shards (fewer where the table has fewer runs of 4 groups). */
export function shardLayout(space: StateSpace, count: number): ShardLayout {
  if (!Number.isSafeInteger(count) || count < 1) throw new CCheckersError('E_USAGE', `--shards must be a positive integer (got ${count})`);
  const groupsPerShard = Math.max(4, 4 * Math.ceil(space.groups / count / 4));
  return layoutOf(space, groupsPerShard);
}

export function layoutOf(space: StateSpace, groupsPerShard: number): ShardLayout {
  if (groupsPerShard % 4 !== 0 || groupsPerShard < 4) throw new RangeError(`groups per shard must be a positive multiple of 4 (got ${groupsPerShard})`);
  const per = space.p2Placements;
  const shards: Shard[] = [];
  for (let first = 0; first < space.groups; first += groupsPerShard) {
    const groups = Math.min(groupsPerShard, space.groups - first);
    const firstByte = (first * per) / 4; // exact: first is a multiple of 4
    shards.push({ index: shards.length, firstGroup: first, groups, firstByte, bytes: Math.ceil(((first + groups) * per) / 4) - firstByte });
  }
  return { groupsPerShard, shards };
}

/** Which shard holds group g. */
export function shardOfGroup(layout: ShardLayout, group: number): Shard {
  return layout.shards[Math.floor(group / layout.groupsPerShard)]!;
}

export interface MemoryPlan {
  layout: ShardLayout;
  /** Shards held together as the block of states a pass decides. */
  blockShards: number;
  /** Bytes of the block buffer and of the buffer that streams the other shards (0 when the
   *  block is the whole table). */
  blockBytes: number;
  streamBytes: number;
  /** The solver's fixed needs besides the tables (group maps, kernel scratch). */
  overheadBytes: number;
  budget?: number;
}

/** Group maps of the TS state space and the native kernel, per P1 placement and group, and scratch. */
export function overheadBytes(space: StateSpace, kernelCopies: number): number {
  return (space.p1Placements * 9 + space.groups * 9) * (1 + kernelCopies) + 16 * 2 ** 20;
}

/**
 * The shard count and block size for a budget. Without --shards the shards are about
 * DEFAULT_SHARD_BYTES, and small enough that eight fit the budget (a block of 7, so that a pass
 * reads the table about shards / 7 times). Refuses a budget below two shards plus overhead,
 * naming the minimum.
 */
export function planMemory(space: StateSpace, options: { layout?: ShardLayout; shards?: number; budget?: number; kernelCopies: number }): MemoryPlan {
  const overhead = overheadBytes(space, options.kernelCopies);
  const forTables = options.budget === undefined ? Number.POSITIVE_INFINITY : options.budget - overhead;
  let count = options.shards;
  if (count === undefined) {
    count = Math.max(1, Math.ceil(space.tableBytes / DEFAULT_SHARD_BYTES));
    if (forTables < space.tableBytes) count = Math.max(count, Math.ceil((8 * space.tableBytes) / Math.max(1, forTables)));
  }
  // An existing store keeps its layout.
  const layout = options.layout ?? shardLayout(space, count);
  const largest = Math.max(...layout.shards.map((s) => s.bytes));
  const n = layout.shards.length;
  if (forTables >= space.tableBytes) {
    return { layout, blockShards: n, blockBytes: space.tableBytes, streamBytes: 0, overheadBytes: overhead, ...budgetOf(options.budget) };
  }
  const blockShards = Math.min(n - 1, Math.floor(forTables / largest) - 1);
  if (blockShards < 1) {
    const minimum = 2 * largest + overhead;
    throw new CCheckersError(
      'E_MEMORY',
      `--memory ${formatBytes(options.budget!)} is too small for ${space.variant.name} in ${n} shards of up to ${formatBytes(largest)}: ` +
        `a pass holds at least two shards plus ${formatBytes(overhead)} of group maps and scratch, ${formatBytes(minimum)} in all` +
        (options.layout === undefined ? ' (more --shards make shards smaller)' : ''),
    );
  }
  return { layout, blockShards, blockBytes: blockShards * largest, streamBytes: largest, overheadBytes: overhead, ...budgetOf(options.budget) };
}

function budgetOf(budget: number | undefined): { budget?: number } {
  return budget === undefined ? {} : { budget };
}

/** The plan in one line, for stderr before a solve starts. */
export function describePlan(plan: MemoryPlan): string {
  const n = plan.layout.shards.length;
  const size = formatBytes(Math.max(...plan.layout.shards.map((s) => s.bytes)));
  const budget = plan.budget === undefined ? 'no --memory limit' : `--memory ${formatBytes(plan.budget)}`;
  if (plan.streamBytes === 0) return `${budget}: ${n} shard${n === 1 ? '' : 's'} of up to ${size}, all held in memory (${formatBytes(plan.blockBytes)}) + ${formatBytes(plan.overheadBytes)} group maps and scratch`;
  return (
    `${budget}: ${n} shards of up to ${size}; a pass holds blocks of ${plan.blockShards} shards (${formatBytes(plan.blockBytes)}) ` +
    `and streams the others through one more (${formatBytes(plan.streamBytes)}), + ${formatBytes(plan.overheadBytes)} group maps and scratch`
  );
}

/** The blocks of consecutive shards a pass holds in turn. */
export function blocksOf(plan: MemoryPlan): Shard[][] {
  const { shards } = plan.layout;
  const blocks: Shard[][] = [];
  for (let i = 0; i < shards.length; i += plan.blockShards) blocks.push(shards.slice(i, i + plan.blockShards));
  return blocks;
}
