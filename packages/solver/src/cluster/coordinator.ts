/**
 * The coordinator of a cluster solve: `ccheckers solve --store DIR --redis URL`. It owns the
 * store's manifest; the work is done by `ccheckers worker` processes on any machines that mount
 * the same store, through a BullMQ queue (jobs.ts for what a pass is made of).
 *
 * Per pass: the tile jobs, then the merge jobs of the shards a tile changed, then one atomic
 * manifest write that names the merged shards (the new generation) and logs the pass. Job ids
 * are fixed by store, pass and generation, so a coordinator started again with --resume adds
 * the same jobs, finds the ones already done in Redis (or runs them again where Redis lost them:
 * a job is repeatable), and goes on. Workers killed mid-job are BullMQ's stalled jobs: another
 * worker takes them. A pass that proves nothing ends the solve at the game's fixpoint, so the
 * table is the in-memory solve's whatever the shards, workers, job order or crashes.
 */
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { CCheckersError, type RuleMode, type Variant } from '@ccheckers/core';
import { type Job, Queue } from 'bullmq';
import type { PassRecord } from '../database.js';
import { lockOutput } from '../output-file.js';
import { type ProgressEvent, type SolveResult, checkMoveless, nextPassIsSparse } from '../solve.js';
import type { MemoryPlan } from '../store/layout.js';
import { MANIFEST, SHARD_FILE, ShardStore } from '../store/shard-store.js';
import { TableTally, createStore, planStore, storeResult } from '../store/sharded-solve.js';
import { type ClusterJob, type InitResult, type JobResult, type MergeResult, PASS_FOLDER, type TileResult, jobId, passFolder } from './jobs.js';
import { connectRedis, parseRedisUrl, queueName } from './redis.js';

export interface ClusterSolveOptions {
  variant: Variant;
  rules: RuleMode;
  /** The store folder (new, or with `resume` one to continue), mounted by every worker too. */
  store: string;
  redis: string;
  resume?: boolean;
  /** Shard count of a new store (default: from the table size and memoryLimit). */
  shards?: number;
  /** A worker's memory: shards small enough that a worker holds two of them. */
  memoryLimit?: number;
  onPlan?: (plan: MemoryPlan, queue: string) => void;
  onProgress?: (event: ProgressEvent) => void;
  /** Things the user should know while waiting (no worker connected, Redis away). */
  onNotice?: (text: string) => void;
  signal?: AbortSignal;
  /** Test hook: called after each manifest write (e.g. SIGKILL the coordinator there). */
  onCommit?: (passes: number) => void;
}

export interface ClusterSolveResult extends SolveResult {
  store: string;
  shards: number;
  queue: string;
  /** Jobs run (this run), shard bytes the workers read and wrote, Redis commands the coordinator sent. */
  jobs: number;
  bytesRead: number;
  bytesWritten: number;
  redisCommands: number;
}

export class ClusterSolveInterrupted extends CCheckersError {
  constructor(store: string, passes: number) {
    super('E_INTERRUPTED', `solve interrupted; ${store} holds ${passes} passes, continue with --resume (the workers may stay)`);
  }
}

/** Polling of job states: from FAST_POLL_MS, slower while nothing finishes, up to SLOW_POLL_MS. */
const FAST_POLL_MS = 10;
const SLOW_POLL_MS = 500;
/** How long no job may finish before the coordinator looks for workers and says so. */
const IDLE_NOTICE_MS = 10_000;

export async function solveOnCluster(options: ClusterSolveOptions): Promise<ClusterSolveResult> {
  const redisUrl = parseRedisUrl(options.redis);
  const { existing, plan } = planStore(options, 1);
  let store = existing;
  if (!store) {
    store = createStore(options, plan);
    store.adopt([], 0, () => {}); // the manifest on disk before any job names its store
  }
  if (store.manifest.id === undefined) store.adopt([], store.manifest.generation, () => {}); // a store made by an older ccheckers gets an id
  const queue = queueName(store.manifest.id!);
  options.onPlan?.(plan, queue);
  const unlock = lockOutput(join(options.store, MANIFEST));
  const notice = options.onNotice ?? (() => {});
  const connection = connectRedis(redisUrl.url, (message) => notice(`Redis at ${redisUrl.shown}: ${message}; retrying`));
  const q = new Queue(queue, { connection: connection.redis });
  q.on('error', () => {}); // connection errors: reported once above, and retried
  try {
    return await coordinate(options, store, q, connection.commands, redisUrl.shown);
  } finally {
    await q.close().catch(() => {});
    connection.redis.disconnect();
    unlock();
  }
}

async function coordinate(options: ClusterSolveOptions, store: ShardStore, q: Queue, commands: () => number, shownUrl: string): Promise<ClusterSolveResult> {
  const { variant: v, rules } = options;
  const space = store.space;
  const report = options.onProgress ?? (() => {});
  const notice = options.onNotice ?? (() => {});
  const started = performance.now();
  const secondsBefore = store.manifest.seconds;
  const elapsed = () => secondsBefore + (performance.now() - started) / 1000;
  const m0 = store.manifest;
  const resumedFromPass = m0.generation > 0 ? m0.passLog.length : undefined;
  const backends = new Set<string>();
  let threads = 0;
  let jobs = 0;
  let bytesRead = 0;
  let bytesWritten = 0;
  const base = () => ({ store: store.manifest.id!, board: v.size, pieces: v.pieces, rules });
  const commit = (files: Array<{ index: number; file: string; crc32: number }>, generation: number, update: (m: ShardStore['manifest']) => void) => {
    store.adopt(files, generation, (m) => {
      update(m);
      m.seconds = elapsed();
    });
    options.onCommit?.(store.manifest.passLog.length);
  };

  /** Runs the jobs (adding those Redis does not have, retrying failed ones) and returns their
   *  results by id; `onDone` after each. A job that failed for good ends the solve. */
  const runJobs = async <R extends JobResult>(list: ClusterJob[], onDone: (done: number) => void): Promise<Map<string, R>> => {
    const results = new Map<string, R>();
    const pending = new Map(list.map((job) => [jobId(job), job]));
    const toAdd: ClusterJob[] = [];
    const known = await Promise.all([...pending.keys()].map((id) => q.getJobState(id)));
    for (const [at, [id, job]] of [...pending].entries()) {
      if (known[at] === 'unknown') toAdd.push(job);
      else if (known[at] === 'failed') await (await q.getJob(id))?.retry('failed');
    }
    if (toAdd.length > 0) {
      await q.addBulk(
        toAdd.map((job) => ({
          name: job.kind,
          data: job,
          opts: { jobId: jobId(job), attempts: 3, backoff: { type: 'fixed', delay: 1000 }, removeOnComplete: false, removeOnFail: false },
        })),
      );
    }
    let wait = FAST_POLL_MS;
    let lastProgress = performance.now();
    let told = false;
    while (pending.size > 0) {
      if (options.signal?.aborted) throw new ClusterSolveInterrupted(options.store, store.manifest.passLog.length);
      let finished = 0;
      const ids = [...pending.keys()];
      const states = await Promise.all(ids.map((id) => q.getJobState(id))); // sent together, not one round trip each
      for (const [at, id] of ids.entries()) {
        const state = states[at]!;
        if (state === 'completed' || state === 'failed') {
          const job: Job | undefined = await q.getJob(id);
          if (state === 'failed' || !job) {
            throw new CCheckersError('E_CLUSTER', `job ${id} failed on a worker: ${job?.failedReason ?? 'it disappeared from Redis'} (the store is kept: fix the cause, then solve --resume)`);
          }
          const result = job.returnvalue as R;
          results.set(id, result);
          pending.delete(id);
          finished++;
          jobs++;
          bytesRead += result.bytesRead;
          bytesWritten += result.bytesWritten;
          if (!result.stale) {
            backends.add(result.backend);
            threads = Math.max(threads, result.threads);
          }
          onDone(results.size);
        } else if (state === 'unknown') {
          // Redis lost it (restarted without its data): add it again; a job is repeatable.
          const job = pending.get(id)!;
          await q.add(job.kind, job, { jobId: id, attempts: 3, backoff: { type: 'fixed', delay: 1000 }, removeOnComplete: false, removeOnFail: false });
        }
      }
      if (finished > 0) {
        wait = FAST_POLL_MS;
        lastProgress = performance.now();
        told = false;
        continue;
      }
      if (!told && performance.now() - lastProgress > IDLE_NOTICE_MS) {
        told = true;
        const workers = await q.getWorkersCount();
        notice(
          workers === 0
            ? `no worker is connected to queue ${q.name} at ${shownUrl}: start one with "ccheckers worker --redis URL --store ${options.store}"`
            : `${workers} worker(s) connected; waiting for ${pending.size} job(s)`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, wait));
      wait = Math.min(SLOW_POLL_MS, Math.ceil(wait * 1.5));
    }
    return results;
  };
  const forget = async (list: ClusterJob[]) => {
    for (const job of list) await q.remove(jobId(job)).catch(() => 0);
  };

  if (resumedFromPass !== undefined) report({ phase: 'resumed', pass: resumedFromPass, fraction: 0, proven: store.manifest.proven ?? 0, storedStates: space.states });
  removeOldWork(store);

  if (store.manifest.stage === 'init') {
    const shards = store.layout.shards;
    const list: ClusterJob[] = shards.map((s) => ({ kind: 'init', ...base(), pass: 0, generation: 0, shard: s.index }));
    let proven = 0;
    const results = await runJobs<InitResult & JobResult>(list, (done) => report({ phase: 'init', pass: 0, fraction: done / list.length, proven, storedStates: space.states }));
    const files = list.map((job) => {
      const r = results.get(jobId(job))!;
      proven += r.proven;
      return { index: (job as ClusterJob & { kind: 'init' }).shard, file: r.file, crc32: r.crc32 };
    });
    commit(files, 1, (m) => {
      m.stage = 'passes';
      m.proven = proven;
    });
    await forget(list);
    report({ phase: 'init-done', pass: 0, fraction: 1, proven, storedStates: space.states });
  }

  while (store.manifest.stage === 'passes') {
    const m = store.manifest;
    const pass = m.passLog.length + 1;
    const generation = m.generation;
    const proven = m.proven ?? 0;
    const sparse = nextPassIsSparse(m.passLog[m.passLog.length - 1], proven, space.states);
    const down = sparse && pass % 2 === 0;
    const passStart = performance.now();
    const readBefore = bytesRead;
    const writtenBefore = bytesWritten;
    const commandsBefore = commands();
    const jobsBefore = jobs;
    mkdirSync(join(options.store, passFolder(pass, generation)), { recursive: true });
    const n = store.layout.shards.length;
    const tiles: ClusterJob[] = [];
    for (let i = 0; i < n; i++) for (let j = i; j < n; j++) tiles.push({ kind: 'tile', ...base(), pass, generation, shards: [i, j], sparse, down });
    // Progress: the tiles, then at most one merge per shard.
    const share = (done: number) => done / (tiles.length + n);
    const tileResults = await runJobs<TileResult & JobResult>(tiles, (done) => report({ phase: 'pass', pass, fraction: share(done), proven, storedStates: space.states }));
    if ([...tileResults.values()].some((r) => r.stale)) throw staleError(options.store, pass);
    checkMoveless([...tileResults.values()].reduce((sum, r) => sum + r.moveless, 0), v);
    const changed = [...new Set([...tileResults.values()].flatMap((r) => r.changed))].sort((a, b) => a - b);
    const merges: ClusterJob[] = changed.map((shard) => ({ kind: 'merge', ...base(), pass, generation, shard }));
    const mergeResults = await runJobs<MergeResult & JobResult>(merges, (done) =>
      report({ phase: 'pass', pass, fraction: share(tiles.length + done), proven, storedStates: space.states }),
    );
    if ([...mergeResults.values()].some((r) => r.stale)) throw staleError(options.store, pass);
    const newly = [...mergeResults.values()].reduce((sum, r) => sum + r.newlyProven, 0);
    const record: PassRecord & ClusterPassFigures = {
      pass,
      proven: proven + newly,
      newlyProven: newly,
      seconds: (performance.now() - passStart) / 1000,
      sparse,
      bytesRead: bytesRead - readBefore,
      bytesWritten: bytesWritten - writtenBefore,
      jobs: jobs - jobsBefore,
      redisCommands: commands() - commandsBefore,
    };
    const files = merges.map((job) => {
      const r = mergeResults.get(jobId(job))!;
      return { index: (job as ClusterJob & { kind: 'merge' }).shard, file: r.file, crc32: r.crc32 };
    });
    commit(files, generation + 1, (next) => {
      next.passLog.push(record);
      next.proven = proven + newly;
      if (newly === 0) next.stage = 'finishing';
    });
    removeOldWork(store);
    await forget([...tiles, ...merges]);
    report({ phase: 'pass-done', pass, fraction: 1, proven: proven + newly, storedStates: space.states, record });
  }

  // The results, from the shards read once in order (the CRC is the in-memory table's).
  if (store.manifest.stage === 'finishing') {
    const tally = new TableTally(space);
    store.forEachShard((shard, bytes) => tally.add(bytes, shard.firstByte));
    commit([], store.manifest.generation, (next) => {
      next.stage = 'complete';
      next.results = tally.results();
    });
  }
  return {
    ...storeResult(store, backends.size === 0 ? 'cluster' : `cluster (${[...backends].sort().join(', ')})`, threads, resumedFromPass),
    store: options.store,
    shards: store.layout.shards.length,
    queue: q.name,
    jobs,
    bytesRead,
    bytesWritten,
    redisCommands: commands(),
  };
}

/** What a cluster pass adds to the pass log. */
export interface ClusterPassFigures {
  jobs: number;
  redisCommands: number;
}

function staleError(store: string, pass: number): CCheckersError {
  return new CCheckersError('E_CLUSTER', `a worker found the manifest of ${store} ahead of pass ${pass}: is another coordinator solving this store?`);
}

/**
 * Removes what earlier passes left: pass folders other than the current pass's, and shard files
 * of generations up to the current one that the manifest does not name (merges of a pass the
 * coordinator did not live to commit, or late writes of workers taken for dead). Files of the
 * next generation stay: the current pass's merges may have written them already.
 */
function removeOldWork(store: ShardStore): void {
  const m = store.manifest;
  const named = new Set(m.shards.map((s) => s.file));
  const current = passFolder(m.passLog.length + 1, m.generation);
  for (const name of readdirSync(store.dir)) {
    if (PASS_FOLDER.test(name) && (name !== current || m.stage !== 'passes')) {
      rmSync(join(store.dir, name), { recursive: true, force: true });
      continue;
    }
    const shard = /^shard-\d+\.g(\d+)(\.[0-9a-f]{8})?\.bin(\.tmp-[0-9a-f-]+)?$/.exec(name);
    if (shard && !named.has(name) && Number(shard[1]) <= m.generation && (SHARD_FILE.test(name) || shard[3] !== undefined)) {
      rmSync(join(store.dir, name), { force: true });
    }
  }
}
