/**
 * The solve of a sharded store (shard-store.ts), in bounded memory: the same kernels as the
 * in-memory solve, called on parts of the table (core's TableWindow).
 *
 * A pass takes the shards in blocks (layout.ts: as many as the budget holds, less one buffer).
 * For each block it decides the block's unknown states, reading their children first from the
 * block itself, then from every other shard streamed through the one extra buffer, and saves the
 * block. Proven values cross shards by being read: each state sees, once per pass, the values of
 * all its children as they stand (the Bal-Allis combining of messages taken to its end: one
 * message per pair of shards and pass, the shard itself). A new loss is propagated at once to its
 * parents in the block; parents elsewhere find it when they are visited, since a windowed visit
 * looks past unknown children for a lost one. A pass that proves nothing ends the solve; the
 * table is then the game's fixpoint, the same whatever the shards, budget, backend or threads.
 */
import { join } from 'node:path';
import {
  type Backend,
  CCheckersError,
  type KernelStats,
  type RuleMode,
  StateSpace,
  type TableWindow,
  UNKNOWN,
  type Variant,
} from '@ccheckers/core';
import type { PassRecord } from '../database.js';
import { checkMemory } from '../memory.js';
import { lockOutput } from '../output-file.js';
import {
  type ProgressEvent,
  type SolveResult,
  checkMoveless,
  chunkRanges,
  inProcessRunner,
  nextPassIsSparse,
  startValueName,
} from '../solve.js';
import { TableTally, storedCounts } from '../state-index.js';
import { type ChunkRunner, createWorkerPool, runPhase } from '../worker-pool.js';
import { type BandPlan, bandCountFor, describeBandPlan } from './band-layout.js';
import { type MemoryPlan, type Shard, blocksOf, describePlan, planMemory, shardLayout } from './layout.js';
import { solveBands } from './band-solve.js';
import { MANIFEST, type Manifest, ShardStore } from './shard-store.js';

export interface ShardedSolveOptions {
  variant: Variant;
  rules: RuleMode;
  backend: Backend;
  threads: number;
  /** The store's folder: new (absent or empty), or with `resume` one to continue. */
  store: string;
  resume?: boolean;
  /** Shard count of a new store (default: from the table size and the budget, see planMemory). */
  shards?: number;
  /** Bytes the solve may hold: shards in memory, buffers and group maps. */
  memoryLimit?: number;
  /** Tile passes (layout.ts: blocks of shards, the others streamed) or band passes
   *  (band-layout.ts, band-solve.ts: one band of the proof order held, messages between them).
   *  A store being resumed keeps the passes it was started with. Default: bands. */
  passes?: StorePasses;
  /** Told the plan before anything large is allocated (the CLI prints it: describeStorePlan). */
  onPlan?: (plan: MemoryPlan | BandPlan) => void;
  onProgress?: (event: ProgressEvent) => void;
  signal?: AbortSignal;
  /** Test hook: stop after this many passes (the store keeps them). */
  stopAfterPass?: number;
  /** Called after each save of the store (the kill -9 test hook uses it). */
  onSave?: (passes: number) => void;
}

export type StorePasses = 'tiles' | 'bands';

/** A plan in one line, for stderr before a solve starts; `shards` (--shards) is said where the
 *  plan has another count (pieces of a table are whole groups). */
export function describeStorePlan(plan: MemoryPlan | BandPlan, shards?: number): string {
  return ('bands' in plan ? describeBandPlan(plan) : describePlan(plan)) + shardsNote(plan, shards);
}

/** '' where --shards gave its count, else what it gave and why. */
export function shardsNote(plan: MemoryPlan | BandPlan, shards: number | undefined): string {
  const count = 'bands' in plan ? plan.bands : plan.layout.shards.length;
  if (shards === undefined || shards === count) return '';
  return ` (--shards ${shards} gives ${count}: ${'bands' in plan ? 'a band holds one group or more' : 'a shard holds a run of groups, a multiple of 4'})`;
}

export interface ShardedSolveResult extends SolveResult {
  store: string;
  storePasses: StorePasses;
  /** Shards (tiles) or bands (bands): the table's pieces. */
  shards: number;
  blockShards: number;
  /** Shard bytes read and written over the whole solve (this run). */
  bytesRead: number;
  bytesWritten: number;
}

export class ShardedSolveInterrupted extends CCheckersError {
  constructor(store: string, manifest: Manifest) {
    const at = manifest.passInProgress;
    const saved =
      manifest.stage === 'init'
        ? `${manifest.shards.filter((s) => s.file !== '').length} of ${manifest.shards.length} shards initialised`
        : `${manifest.passLog.length} passes${at ? ` and ${at.shardsDone} shards of pass ${at.pass}` : ''}`;
    super('E_INTERRUPTED', `solve interrupted; ${store} holds ${saved}, continue with --resume`);
  }
}

/** Kernel calls per tile (progress and interruption points). */
const CHUNKS_PER_CALL = 16;

/** A part of the table in memory: whole groups from firstGroup on. */
export interface TablePart {
  bytes: Uint8Array;
  firstGroup: number;
  groups: number;
}

/** The kernel calls of a solve in parts: in this process where the backend has its own threads
 *  (or one thread is asked for), else on TS worker threads. */
export function partRunner(backend: Backend, v: Variant, rules: RuleMode, threads: number): ChunkRunner {
  if (backend.kernelThreads || threads === 1) {
    const kernel = backend.solverKernel(v, rules);
    return inProcessRunner((phase, from, to, depth, part) => runPhase(kernel, phase, part!, from, to, depth, threads));
  }
  return createWorkerPool(threads, { board: v.size, pieces: v.pieces, rules, table: new Uint8Array(new SharedArrayBuffer(1)) });
}

/** Init of one part of the table (init reads no children): illegal, terminal, won-in-one. */
export async function runInit(
  runner: ChunkRunner,
  part: TablePart,
  onChunk: (stats: KernelStats, done: number, of: number) => void,
  calls = CHUNKS_PER_CALL,
): Promise<void> {
  const chunks = chunkRanges(part.groups, calls).map(([a, b]): [number, number] => [part.firstGroup + a, part.firstGroup + b]);
  let done = 0;
  await runner.run('init', chunks, (s) => onChunk(s, ++done, chunks.length), undefined, { table: part.bytes, firstGroup: part.firstGroup });
}

/** How a pass visits: every state (full), or the unknown ones (sparse), up or down the groups. */
export interface PassKind {
  sparse: boolean;
  down: boolean;
}

/**
 * One tile: the unknown states of `states` whose children lie in `states` itself (no `other`), or,
 * with `other`, the states of either part whose children lie in the other one (both ways in one
 * sweep). The whole table as `states` is exactly the in-memory pass.
 */
export async function runTile(
  runner: ChunkRunner,
  space: StateSpace,
  states: TablePart,
  other: TablePart | undefined,
  kind: PassKind,
  onChunk: (stats: KernelStats, done: number, of: number) => void,
  calls = CHUNKS_PER_CALL,
): Promise<void> {
  const window: TableWindow | undefined =
    states.groups === space.groups
      ? undefined
      : other
        ? { firstGroup: states.firstGroup, groups: states.groups, other: other.bytes, otherFirstGroup: other.firstGroup, otherGroups: other.groups, crossOnly: true }
        : { firstGroup: states.firstGroup, groups: states.groups };
  // A sparse pass goes through the groups of each part (a call stays inside one), a full pass
  // through the P2 placements.
  const groupsOf = (p: TablePart) => chunkRanges(p.groups, calls).map(([a, b]): [number, number] => [p.firstGroup + a, p.firstGroup + b]);
  const ranges = kind.sparse ? [...groupsOf(states), ...(other ? groupsOf(other) : [])] : chunkRanges(space.p1Placements, calls);
  const chunks = kind.down ? ranges.reverse() : ranges;
  let done = 0;
  await runner.run(kind.down ? 'sparse-down' : kind.sparse ? 'sparse' : 'pass', chunks, (s) => onChunk(s, ++done, chunks.length), undefined, {
    table: states.bytes,
    window,
  });
}

/** What a solve of a store is asked: the store, whether to resume it, and for a new one the layout. */
export interface StoreRequest {
  variant: Variant;
  rules: RuleMode;
  store: string;
  resume?: boolean;
  shards?: number;
  memoryLimit?: number;
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

/**
 * The store to resume (its variant and shard count checked against the request), if any, and the
 * memory plan: the existing store's layout, or one from --shards and --memory for a new store.
 */
export function planStore(request: StoreRequest, kernelCopies: number): { existing: ShardStore | undefined; plan: MemoryPlan } {
  const existing = storeToResume(request);
  if (existing) {
    checkStoreToResume(existing, request);
    if (existing.manifest.bands || (existing.manifest.passes === 'bands' && existing.manifest.stage !== 'complete')) {
      throw new CCheckersError('E_USAGE', `${request.store} is being solved by band passes, which tiles and clusters cannot continue: resume it with solve --store --resume`);
    }
  }
  const plan = planMemory(new StateSpace(request.variant), {
    ...(existing ? { layout: existing.layout } : request.shards !== undefined ? { shards: request.shards } : {}),
    ...(request.memoryLimit !== undefined ? { budget: request.memoryLimit } : {}),
    kernelCopies,
  });
  return { existing, plan };
}

/** A resume's --shards, if given, must be what made the store: the count it has is the one a
 *  new store of its kind (bands or tiles) would get from that --shards. */
function checkShardsOnResume(store: ShardStore, shards: number | undefined): void {
  if (shards === undefined) return;
  const m = store.manifest;
  const has = store.pieces;
  const gives = m.bands !== undefined || m.passes === 'bands' ? bandCountFor(store.space, shards) : shardLayout(store.space, shards).shards.length;
  if (gives !== has) throw new CCheckersError('E_USAGE', `${store.dir} has ${has} shards, which --shards ${shards} does not make; --shards applies to new stores only`);
}

/** A new store with the plan's layout (refused where a shard would not fit one typed array). */
export function createStore(request: StoreRequest, plan: MemoryPlan): ShardStore {
  if (plan.layout.shards.some((s) => s.bytes > 2 ** 32)) {
    throw new CCheckersError('E_USAGE', `shards of ${request.variant.name} would be over 4 GiB (no typed array holds one): use more --shards`);
  }
  return ShardStore.create(request.store, request.variant, request.rules, plan.layout);
}

export async function solveSharded(options: ShardedSolveOptions): Promise<ShardedSolveResult> {
  if (passesOf(options) === 'bands') return solveBands(options);
  const { variant: v, backend } = options;
  const space = new StateSpace(v);
  const threads = Math.max(1, Math.min(Math.floor(options.threads), space.groups));
  const kernelCopies = backend.kernelThreads || threads === 1 ? 1 : threads;
  const { existing, plan } = planStore(options, kernelCopies);
  checkMemory(plan.blockBytes + plan.streamBytes + plan.overheadBytes, options.memoryLimit);
  options.onPlan?.(plan);
  const store = existing ?? createStore(options, plan);
  const unlock = lockOutput(join(options.store, MANIFEST));
  try {
    store.removeLeftovers();
    return await solveLocked(options, store, plan, threads);
  } finally {
    unlock();
  }
}

/** The passes of a solve: a store being resumed keeps its own. */
function passesOf(options: ShardedSolveOptions): StorePasses {
  try {
    const m = options.resume ? ShardStore.open(options.store).manifest : undefined;
    if (m?.bands || m?.passes === 'bands') return 'bands';
    if (m && m.stage !== 'complete') return 'tiles';
  } catch {
    // a broken store: the solve says so
  }
  return options.passes ?? 'bands';
}

async function solveLocked(options: ShardedSolveOptions, store: ShardStore, plan: MemoryPlan, threads: number): Promise<ShardedSolveResult> {
  const { variant: v, rules, backend } = options;
  const space = store.space;
  const shards = plan.layout.shards;
  const shared = (bytes: number) => new Uint8Array(new SharedArrayBuffer(Math.max(1, bytes)));
  const blockBuffer = shared(plan.blockBytes);
  const streamBuffer = shared(plan.streamBytes);
  const runner = partRunner(backend, v, rules, threads);
  const report = options.onProgress ?? (() => {});
  const started = performance.now();
  const secondsBefore = store.manifest.seconds;
  const elapsed = () => secondsBefore + (performance.now() - started) / 1000;
  let proven = store.manifest.generation === 0 ? 0 : await provenInStore(store, plan.streamBytes > 0 ? streamBuffer : blockBuffer);
  let bytesRead = 0;
  let bytesWritten = 0;
  const resumedFromPass = store.manifest.generation > 0 ? store.manifest.passLog.length : undefined;
  const checkAbort = () => {
    if (options.signal?.aborted) throw new ShardedSolveInterrupted(options.store, store.manifest);
  };
  const load = (shard: Shard, into: Uint8Array) => {
    bytesRead += shard.bytes;
    return store.loadShard(shard.index, into);
  };
  const save = (parts: Array<{ index: number; bytes: Uint8Array }>, update: (m: Manifest) => void) => {
    store.save(parts, (m) => {
      update(m);
      delete m.proven; // a cluster solve's count, not kept up to date here
      m.seconds = elapsed();
    });
    for (const p of parts) bytesWritten += p.bytes.length;
    options.onSave?.(store.manifest.passLog.length);
  };

  try {
    if (resumedFromPass !== undefined) report({ phase: 'resumed', pass: resumedFromPass, fraction: 0, proven, storedStates: space.states });
    if (store.manifest.stage === 'init') {
      // Each shard on its own: init reads no children.
      for (const shard of shards) {
        if (store.manifest.shards[shard.index]!.file !== '') continue; // done before a resume
        const bytes = blockBuffer.subarray(0, shard.bytes).fill(0);
        await runInit(runner, { bytes, firstGroup: shard.firstGroup, groups: shard.groups }, (s, done, of) => {
          proven += s.illegal + s.terminal + s.wins + s.losses;
          checkAbort();
          report({ phase: 'init', pass: 0, fraction: (shard.index + done / of) / shards.length, proven, storedStates: space.states });
        });
        const last = shard.index === shards.length - 1;
        save([{ index: shard.index, bytes }], (m) => {
          if (last) m.stage = 'passes';
        });
      }
      report({ phase: 'init-done', pass: 0, fraction: 1, proven, storedStates: space.states });
    }

    while (store.manifest.stage === 'passes') {
      const m = store.manifest;
      const going = m.passInProgress;
      const pass = going?.pass ?? m.passLog.length + 1;
      const sparse = going?.sparse ?? nextPassIsSparse(m.passLog[m.passLog.length - 1], proven, space.states);
      const down = sparse && pass % 2 === 0;
      let newly = going?.newlyProven ?? 0;
      let moveless = 0;
      const passSecondsBefore = going?.seconds ?? 0;
      const passStart = performance.now();
      const readBefore = bytesRead;
      const writtenBefore = bytesWritten;
      const shardsDone = going?.shardsDone ?? 0;
      const blocks = blocksOf({ ...plan, layout: { ...plan.layout, shards: shards.slice(shardsDone) } });
      // One tile (see runTile); returns what it proved.
      const tile = async (states: TablePart, other: TablePart | undefined, fraction: () => number): Promise<number> => {
        let proved = 0;
        await runTile(runner, space, states, other, { sparse, down }, (s, done, of) => {
          proved += s.wins + s.losses;
          moveless += s.moveless;
          proven += s.wins + s.losses;
          checkAbort();
          report({ phase: 'pass', pass, fraction: fraction() + done / of / tilesPerPass, proven, storedStates: space.states });
        });
        newly += proved;
        return proved;
      };
      const tilesPerPass = blocksOf(plan).reduce((sum, b, i, all) => sum + 1 + all.slice(i + 1).flat().length, 0);
      let tilesDone = going?.tilesDone ?? 0;
      const progressAt = () => tilesDone / tilesPerPass;
      let shardsFinished = shardsDone;
      for (const block of blocks) {
        const first = block[0]!;
        const last = block[block.length - 1]!;
        const blockPart: TablePart = {
          bytes: blockBuffer.subarray(0, last.firstByte + last.bytes - first.firstByte),
          firstGroup: first.firstGroup,
          groups: last.firstGroup + last.groups - first.firstGroup,
        };
        for (const s of block) load(s, blockPart.bytes.subarray(s.firstByte - first.firstByte));
        // The block's own tile: its states whose children it holds too. No reads.
        await tile(blockPart, undefined, progressAt);
        tilesDone++;
        // Every later shard, streamed: the tiles between the block and the shard, both ways in
        // one sweep (a state's children have its P2 placement as their P1, so chains of proofs go
        // back and forth between the two; working the two tiles one after the other, or again
        // while they prove something, or with the block's own tile, was slower: docs/sharding.md).
        // Earlier shards met this block when theirs was held.
        for (const shard of shards.filter((s) => s.index > last.index)) {
          const streamed: TablePart = { bytes: load(shard, streamBuffer), firstGroup: shard.firstGroup, groups: shard.groups };
          if ((await tile(blockPart, streamed, progressAt)) > 0) save([{ index: shard.index, bytes: streamed.bytes }], () => {});
          tilesDone++;
        }
        checkMoveless(moveless, v);
        shardsFinished += block.length;
        const seconds = passSecondsBefore + (performance.now() - passStart) / 1000;
        save(
          block.map((s) => ({ index: s.index, bytes: blockPart.bytes.subarray(s.firstByte - first.firstByte, s.firstByte - first.firstByte + s.bytes) })),
          (next) => {
            next.passInProgress = { pass, sparse, shardsDone: shardsFinished, tilesDone, newlyProven: newly, seconds };
          },
        );
      }
      const record: PassRecord = {
        pass,
        proven,
        newlyProven: newly,
        seconds: passSecondsBefore + (performance.now() - passStart) / 1000,
        sparse,
        bytesRead: bytesRead - readBefore,
        bytesWritten: bytesWritten - writtenBefore,
      };
      save([], (next) => {
        next.passLog.push(record);
        delete next.passInProgress;
        if (newly === 0) next.stage = 'finishing';
      });
      report({ phase: 'pass-done', pass, fraction: 1, proven, storedStates: space.states, record });
      if (newly > 0 && options.stopAfterPass !== undefined && pass >= options.stopAfterPass) {
        throw new ShardedSolveInterrupted(options.store, store.manifest);
      }
    }
  } finally {
    await runner.close();
  }

  if (store.manifest.stage === 'finishing') {
    const results = countStore(store, plan.streamBytes > 0 ? streamBuffer : blockBuffer, (n) => {
      bytesRead += n;
    });
    save([], (next) => {
      next.stage = 'complete';
      next.results = results;
    });
  }
  return {
    ...storeResult(store, backend.name, threads, resumedFromPass),
    store: options.store,
    storePasses: 'tiles',
    shards: shards.length,
    blockShards: plan.blockShards,
    bytesRead,
    bytesWritten,
  };
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
