/**
 * What every way of solving a sharded store (shard-store.ts) shares: its options and result, the
 * checks of a store to resume, and the results counted from the shards. The passes themselves are
 * the band passes, run here (band-solve.ts, exported as solveSharded) or on a cluster
 * (cluster/coordinator.ts); both import this file, and it imports neither.
 */
import { CCheckersError, UNKNOWN, type Backend, type RuleMode, type Variant } from '@ccheckers/core';
import type { ProgressEvent, SolveResult } from '../solve.js';
import { TableTally, startValueName, storedCounts } from '../state-index.js';
import { type BandPlan, bandCountFor, describeBandPlan } from './band-layout.js';
import type { ScheduleKind } from './band-schedule.js';
import type { Manifest } from './manifest.js';
import { ShardStore } from './shard-store.js';

/**
 * What a solve of a store is asked for, here (band-solve.ts) or on a cluster
 * (cluster/coordinator.ts): the variant, the store, and the bands and workers of a new one.
 */
export interface StoreRequest {
  variant: Variant;
  rules: RuleMode;
  /** The store's folder: new (absent or empty), or with `resume` one to continue (on a cluster,
   *  mounted by every worker too). */
  store: string;
  resume?: boolean;
  /** Band count of a new store (default: from the table size and memoryLimit). */
  shards?: number;
  /** What one worker may hold (a local solve: this process): a band and its messages, buffers
   *  and group maps. */
  memoryLimit?: number;
  /** Workers the rounds of a new store are made for (band-schedule.ts; default 1 here,
   *  CLUSTER_DEFAULT_WORKERS on a cluster): a local solve with W runs the steps a cluster of W
   *  workers would, one after the other. */
  workers?: number;
  /** How a new store's rounds are cut (band-schedule.ts; default: defaultSchedule, segments here
   *  and shared on a cluster of 2 or more workers). */
  schedule?: ScheduleKind;
  /** Shared steps (schedule 'shared'): units a worker visits between exchanges (default 1). */
  sliceUnits?: number;
  /** Take the store's lock even where another machine's solve holds it (known to be gone). */
  breakLock?: boolean;
  onProgress?: (event: ProgressEvent) => void;
  signal?: AbortSignal;
}

export interface ShardedSolveOptions extends StoreRequest {
  backend: Backend;
  threads: number;
  /** Told the plan before anything large is allocated (the CLI prints it: describeStorePlan). */
  onPlan?: (plan: BandPlan) => void;
  /** Test hook: stop after this many passes (the store keeps them). */
  stopAfterPass?: number;
  /** Called after each save of the store (the kill -9 test hook uses it). */
  onSave?: (passes: number) => void;
}

/** A plan in one line, for stderr before a solve starts; `shards` (--shards) is said where the
 *  plan has another count (bands are whole groups). */
export function describeStorePlan(plan: BandPlan, shards?: number): string {
  return describeBandPlan(plan) + shardsNote(plan, shards);
}

/** '' where --shards gave its count, else what it gave and why. */
export function shardsNote(plan: BandPlan, shards: number | undefined): string {
  if (shards === undefined || shards === plan.bands) return '';
  return ` (--shards ${shards} gives ${plan.bands}: a band holds one group or more)`;
}

export interface ShardedSolveResult extends SolveResult {
  store: string;
  storePasses: 'bands';
  /** Bands: the table's pieces. */
  shards: number;
  /** Workers the rounds were made for, and how they were cut. */
  workers: number;
  schedule: ScheduleKind;
  /** Shard bytes read and written over the whole solve (this run). */
  bytesRead: number;
  bytesWritten: number;
}

export class ShardedSolveInterrupted extends CCheckersError {
  constructor(store: string, manifest: Manifest) {
    const next = manifest.bands?.next;
    const rounds = next && next.round > 0 ? ` and ${next.round} round(s) of ${next.pass === 0 ? 'init' : `pass ${next.pass}`}` : '';
    const saved = manifest.stage === 'init' && rounds === '' ? 'no band initialised yet' : `${manifest.passLog.length} passes${rounds}`;
    super('E_INTERRUPTED', `solve interrupted; ${store} holds ${saved}, continue with --resume`);
  }
}

/** With --resume, the store in the folder (none yet: a new one is made). */
export function storeToResume(request: { store: string; resume?: boolean }): ShardStore | undefined {
  if (!request.resume) return undefined;
  try {
    return ShardStore.open(request.store);
  } catch (e) {
    if (!(e instanceof CCheckersError && /no manifest\.json/.test(e.message))) throw e;
    return undefined;
  }
}

/**
 * The store to resume is of this variant and rules, and cut by what --shards asks, if anything;
 * a finished one reports the manifest's results, so its shards must be there (checkShardFiles).
 */
export function checkStoreToResume(store: ShardStore, request: { variant: Variant; rules: RuleMode; shards?: number | undefined }): void {
  store.checkVariant(request.variant, request.rules);
  checkShardsOnResume(store, request.shards);
  if (store.manifest.stage === 'complete') store.checkShardFiles();
}

/** A resume's --shards, if given, must be what made the store: the count it has is the one a
 *  new store would get from that --shards. */
function checkShardsOnResume(store: ShardStore, shards: number | undefined): void {
  if (shards === undefined) return;
  const m = store.manifest;
  const has = store.pieces;
  const gives = m.bands !== undefined || m.passes === 'bands' ? bandCountFor(store.space, shards) : store.layout.shards.length;
  if (gives !== has) throw new CCheckersError('E_USAGE', `${store.dir} has ${has} shards, which --shards ${shards} does not make; --shards applies to new stores only`);
}

/** The results, from the shards read once in order through `buffer` (at least a shard long):
 *  the CRC is the in-memory table's. */
export function countStore(store: ShardStore, buffer: Uint8Array, onRead: (bytes: number) => void): NonNullable<Manifest['results']> {
  const tally = new TableTally(store.space);
  for (const shard of store.layout.shards) {
    tally.add(store.loadShard(shard.index, buffer), shard.firstByte);
    onRead(shard.bytes);
  }
  return tally.results();
}

/** The result of a complete store, as every solve reports it. */
export function storeResult(store: ShardStore, backend: string, threads: number, resumedFromPass: number | undefined): SolveResult {
  const m = store.manifest;
  const r = m.results!;
  return {
    board: m.board,
    pieces: m.pieces,
    rules: m.rules,
    backend,
    threads,
    positions: r.positions,
    p1Wins: r.p1Wins,
    p2Wins: r.p2Wins,
    draws: r.draws,
    illegal: r.illegal,
    start: startValueName(r.startValue),
    passes: m.passLog.length,
    seconds: m.seconds,
    storedStates: m.storedStates,
    tableBytes: m.tableBytes,
    tableCrc32: r.tableCrc32,
    passLog: m.passLog,
    ...(resumedFromPass !== undefined ? { resumedFromPass } : {}),
  };
}

/** Stored states decided so far, from the shards read through `buffer` (a resume), without
 *  blocking the event loop (a cluster coordinator renews its lease meanwhile). */
export async function provenInStore(store: ShardStore, buffer: Uint8Array): Promise<number> {
  let unknown = 0;
  for (const shard of store.layout.shards) {
    unknown += storedCounts(await store.loadShardAsync(shard.index, buffer), shard.groups * store.space.p2Placements)[UNKNOWN]!;
  }
  return store.space.states - unknown;
}
