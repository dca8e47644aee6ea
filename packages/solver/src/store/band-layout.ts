/**
 * Bands of the proof order: how the band passes (band-solve.ts) cut the table, and how a memory
 * budget is split between the band in memory and the messages.
 *
 * The children of every state with P2 placement b (a pass unit) lie in one group, rot b's (the
 * unit's child group). A band is a run of groups in the order of the first unit, in the proof
 * order, whose child group each is; the band's units are all the units whose child group it
 * holds, in proof order. Holding a band is enough to visit every state of its units with all
 * their children at hand, in the order the in-memory pass visits them: the in-pass propagation
 * and the proof order are kept, and a pass proves about as much as the in-memory one whatever the
 * band count (docs/sharding.md, "Bands of the proof order"). What a visit decides about a state
 * held in another band, and the wins of a new loss's parents held elsewhere, are messages.
 */
import { CCheckersError, type StateSpace, WORDS, permuteSet, rankSet, unrankSet } from '@ccheckers/core';
import { formatBytes } from '../memory.js';
import { MAX_SHARDS, MIN_PIECE_BYTES, overheadBytes, shardLayout } from './layout.js';

export interface BandLayout {
  bands: number;
  /** For every group: its band, and its slot (position) in the band. */
  bandOf: Int32Array;
  slotOf: Int32Array;
  /** Per band: its groups by slot, and its units (positions in the proof order, ascending). */
  groupsOf: Uint32Array[];
  unitsOf: Float64Array[];
}

/** Bytes of a band of `groups` groups (its own 2-bit table, slot by slot). */
export function bandBytes(space: StateSpace, groups: number): number {
  return Math.ceil((groups * space.p2Placements) / 4);
}

/** The child group of every unit, by position in the proof order: the group of rot b. */
export function childGroupsInProofOrder(space: StateSpace): Int32Array {
  const { cells: n, pieces: k } = space;
  const rotate = space.variant.geometry.rotate;
  const order = space.passOrder;
  const set = new Uint32Array(WORDS);
  const rotated = new Uint32Array(WORDS);
  const child = new Int32Array(order.length);
  for (let u = 0; u < order.length; u++) {
    unrankSet(order[u]!, k, n, set);
    permuteSet(set, rotate, rotated);
    child[u] = space.groupOfRank[rankSet(rotated)]!;
  }
  return child;
}

/** `count` bands (fewer where there are fewer groups), of as equal a number of groups as can be. */
export function bandLayout(space: StateSpace, count: number): BandLayout {
  if (!Number.isSafeInteger(count) || count < 1) throw new CCheckersError('E_USAGE', `--shards must be a positive integer (got ${count})`);
  const groups = space.groups;
  const bands = Math.min(count, groups);
  const childOf = childGroupsInProofOrder(space);
  // Groups in the order of their first unit: every group is some unit's child group (rot is a
  // bijection of placements), so each gets a place.
  const order = new Uint32Array(groups);
  const placed = new Uint8Array(groups);
  let next = 0;
  for (let u = 0; u < childOf.length; u++) {
    const g = childOf[u]!;
    if (placed[g]) continue;
    placed[g] = 1;
    order[next++] = g;
  }
  if (next !== groups) throw new Error(`band layout: ${groups - next} groups are no unit's children`);
  const bandOf = new Int32Array(groups);
  const slotOf = new Int32Array(groups);
  const groupsOf: Uint32Array[] = [];
  for (let b = 0; b < bands; b++) {
    const from = Math.floor((b * groups) / bands);
    const to = Math.floor(((b + 1) * groups) / bands);
    const held = order.slice(from, to);
    held.forEach((g, slot) => {
      bandOf[g] = b;
      slotOf[g] = slot;
    });
    groupsOf.push(held);
  }
  const unitCounts = new Array<number>(bands).fill(0);
  for (let u = 0; u < childOf.length; u++) unitCounts[bandOf[childOf[u]!]!]!++;
  const unitsOf = unitCounts.map((c) => new Float64Array(c));
  const filled = new Array<number>(bands).fill(0);
  for (let u = 0; u < childOf.length; u++) {
    const b = bandOf[childOf[u]!]!;
    unitsOf[b]![filled[b]!++] = u;
  }
  return { bands, bandOf, slotOf, groupsOf, unitsOf };
}

export interface BandPlan {
  bands: number;
  /** The band buffer: the largest band, or the largest shard of the store they end as. */
  bandBytes: number;
  /** Messages in memory at once: read from a file, or made by one kernel call. */
  messageBytes: number;
  overheadBytes: number;
  budget?: number;
}

/** Messages in memory: at least a MiB, and room for 16 messages per state of a unit (a kernel
 *  call does at least one unit or one group, whose states make up to a few messages each). */
export function minMessageBytes(space: StateSpace): number {
  return Math.max(2 ** 20, 16 * 8 * space.p2Placements);
}

/** Messages in memory at most: reads and writes in pieces this large gain nothing more. */
export const MAX_MESSAGE_BYTES = 2 ** 28;

/** Bands about this size when neither --shards nor a small --memory sets them (few bands keep
 *  the message files per step and the manifest small). */
export const DEFAULT_BAND_BYTES = 2 ** 30;

/**
 * The most bands a store's solve may have. A step writes one message pack (message-pack.ts), so a
 * pass writes at most one file per band, and the manifest, rewritten after every round, names each
 * pack until all its targets took it (a bitset of the band count each). A file per target and
 * kind, before, made up to two per pair of bands: 7x7/2 in 256 bands did not finish in 5 minutes.
 * Many small bands are what keeps a pass's chains when many workers step bands at once (blocks,
 * band-schedule.ts: 128 a worker), so the bound is the shard layout's.
 */
export const MAX_BANDS = MAX_SHARDS;

/** The most bands --shards may ask for in a new store of `space`: bands of at least
 *  MIN_PIECE_BYTES (a group at least), and MAX_BANDS. */
export function maxBands(space: StateSpace): number {
  return Math.max(1, Math.min(space.groups, MAX_BANDS, Math.floor(space.tableBytes / MIN_PIECE_BYTES)));
}

/** Refuses (E_USAGE) --shards `shards` for a new store of `space` above maxBands, saying the
 *  bound and what sets it. */
export function checkBandCount(space: StateSpace, shards: number): void {
  const most = maxBands(space);
  if (shards <= most) return;
  const name = space.variant.name;
  const why =
    most === MAX_BANDS
      ? `a store's solve has at most ${MAX_BANDS} bands`
      : `a band of ${name} holds at least ${formatBytes(MIN_PIECE_BYTES)} of its ${formatBytes(space.tableBytes)} table`;
  throw new CCheckersError('E_USAGE', `--shards ${shards} is more than ${name} takes: at most ${most} (${why})`);
}

/** The bands `--shards N` makes: N, or one per group where N is more. */
export function bandCountFor(space: StateSpace, shards: number): number {
  return Math.min(shards, space.groups);
}

/**
 * The band count and buffers for a budget: without --shards the bands are about
 * DEFAULT_BAND_BYTES, and with --memory small enough that the band buffer takes at most half of
 * what the budget leaves for tables (the rest, at least minMessageBytes, up to twice the band and
 * MAX_MESSAGE_BYTES, is for messages). The
 * band buffer also holds a shard of the store the bands are written out as at the end. Refuses a
 * budget below that buffer and minMessageBytes plus the overhead, naming the minimum, and bands
 * over 4 GiB (one typed array).
 */
export function planBands(
  space: StateSpace,
  options: {
    bands?: number;
    budget?: number;
    kernelCopies: number;
    /** Band buffers a worker holds (2 for a shared step's: its copy, and the copy as published) */
    bandCopies?: number;
    /** the bands of a store being resumed: fixed */ storeBands?: boolean;
  },
): BandPlan {
  // The band maps (bandOf, slotOf, groups, units) come on top of the tiles' group maps.
  const overhead = overheadBytes(space, options.kernelCopies) + space.groups * 12 + space.p1Placements * 12;
  const copies = options.bandCopies ?? 1;
  const forTables = options.budget === undefined ? Number.POSITIVE_INFINITY : options.budget - overhead;
  const minMessages = minMessageBytes(space);
  const bufferOf = (n: number) => Math.max(bandBytes(space, Math.ceil(space.groups / n)), ...shardLayout(space, n).shards.map((x) => x.bytes));
  let bands = options.bands;
  // A new store's --shards is bounded; a store being resumed keeps the bands it has.
  if (bands !== undefined && !options.storeBands) checkBandCount(space, bands);
  if (bands === undefined) {
    bands = Math.max(1, Math.ceil(space.tableBytes / DEFAULT_BAND_BYTES));
    // Half the budget for the band, half (at least minMessages) for the messages.
    const forBand = (forTables - Math.max(minMessages, forTables / 2)) / copies;
    if (forBand < space.tableBytes) {
      bands = Math.max(bands, Math.ceil(space.tableBytes / Math.max(1, forBand)));
      // Bands and shards are whole groups: more where rounding up made the largest too big.
      while (bands < space.groups && bufferOf(bands) > forBand) bands++;
    }
    // No more than --shards may ask for: a budget too small for bands that large is refused below.
    bands = Math.min(bands, maxBands(space));
  }
  bands = bandCountFor(space, bands);
  const buffer = bufferOf(bands);
  if (buffer > 2 ** 32) {
    const fewest = Math.ceil(space.tableBytes / 2 ** 32) + 1;
    if (fewest > maxBands(space)) {
      throw new CCheckersError('E_USAGE', `${space.variant.name} is too large for a store: its table of ${formatBytes(space.tableBytes)} in ${maxBands(space)} bands (the most a store's solve has) would make bands over 4 GiB, which no typed array holds`);
    }
    throw new CCheckersError('E_USAGE', `bands of ${space.variant.name} in ${bands} would be over 4 GiB (no typed array holds one): use --shards ${fewest} or more`);
  }
  // Without a budget, as much as the band (calls in proportion to it); with one, what it leaves,
  // up to twice the band (bigger calls keep the threads busy: 7x7/3 at a quarter of its table, 9
  // bands, 2 threads, 16.4 s with 4.7 MiB of messages against 17.1-17.4 s with 3.7 MiB).
  const wanted = Math.max(minMessages, Math.min(MAX_MESSAGE_BYTES, options.budget === undefined ? buffer : 2 * buffer));
  const messageBytes = Math.floor(Math.min(forTables - copies * buffer, wanted));
  if (messageBytes < minMessages) {
    const minimum = copies * buffer + minMessages + overhead;
    throw new CCheckersError(
      'E_MEMORY',
      `--memory ${formatBytes(options.budget!)} is too small for ${space.variant.name} in ${bands} band${bands === 1 ? '' : 's'} of up to ${formatBytes(buffer)}: ` +
        `a band pass holds ${copies === 1 ? 'one band' : `${copies} copies of a band`}, ${formatBytes(minMessages)} of messages and ${formatBytes(overhead)} of group maps and scratch, ` +
        `${formatBytes(minimum)} in all` +
        (options.storeBands ? ' (the bands of a store being resumed are set)' : options.bands === undefined || bands >= maxBands(space) ? '' : ' (more --shards make bands smaller)'),
    );
  }
  return { bands, bandBytes: buffer, messageBytes, overheadBytes: overhead, ...(options.budget === undefined ? {} : { budget: options.budget }) };
}

/** What a worker holds for a band pass of `plan`: `bandCopies` band buffers (two for a part of a
 *  shared step: its copy, and the copy as published), the messages, the group maps and scratch. */
export function workerBytes(plan: Pick<BandPlan, 'bandBytes' | 'messageBytes' | 'overheadBytes'>, bandCopies: number): number {
  return bandCopies * plan.bandBytes + plan.messageBytes + plan.overheadBytes;
}

/** The plan in one line, for stderr before a solve starts. */
export function describeBandPlan(plan: BandPlan): string {
  const budget = plan.budget === undefined ? 'no --memory limit' : `--memory ${formatBytes(plan.budget)}`;
  return (
    `${budget}: ${plan.bands} band${plan.bands === 1 ? '' : 's'} of up to ${formatBytes(plan.bandBytes)}, one held at a time, ` +
    `+ ${formatBytes(plan.messageBytes)} of messages in memory, + ${formatBytes(plan.overheadBytes)} group maps and scratch`
  );
}
