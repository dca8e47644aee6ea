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
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, readlinkSync, rmSync, statSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { CCheckersError, type RuleMode, type Variant } from '@ccheckers/core';
import type { Job, Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import type { PassRecord } from '../database.js';
import { lockOutput } from '../output-file.js';
import { type ProgressEvent, type SolveResult, checkMoveless, nextPassIsSparse } from '../solve.js';
import type { MemoryPlan } from '../store/layout.js';
import { MANIFEST, SHARD_FILE, ShardStore, isCrc32, newStoreId } from '../store/shard-store.js';
import { createStore, planStore, provenInStore, storeResult } from '../store/sharded-solve.js';
import { TableTally } from '../state-index.js';
import {
  type ClusterJob,
  type InitJob,
  type InitResult,
  type JobResult,
  type MergeJob,
  type MergeResult,
  PASS_FOLDER,
  type TileJob,
  type TileResult,
  jobId,
  passFolder,
  workerShardFile,
} from './jobs.js';
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
  /** Test hooks: called before and after each manifest write (e.g. SIGKILL the coordinator). */
  beforeCommit?: (passes: number) => void;
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
  /** `passes` undefined: interrupted before the store was made (Redis had not answered). */
  constructor(store: string, passes: number | undefined) {
    super(
      'E_INTERRUPTED',
      passes === undefined
        ? `solve interrupted before Redis answered; no store was made in ${store}`
        : `solve interrupted; ${store} holds ${passes} passes, continue with --resume (the workers may stay)`,
    );
  }
}

/** How every job is added: retried twice after a second (a worker's crash, I/O), and kept in
 *  Redis when done or failed until the pass is committed (a resumed coordinator finds it). */
const JOB_OPTIONS = { attempts: 3, backoff: { type: 'fixed', delay: 1000 }, removeOnComplete: false, removeOnFail: false } as const;

/** Polling of job states: from FAST_POLL_MS, slower while nothing finishes, up to SLOW_POLL_MS. */
const FAST_POLL_MS = 10;
const SLOW_POLL_MS = 500;
/** Looks (every 0.5 s) for a file a worker says it wrote before the coordinator gives up on it. */
const VISIBLE_TRIES = 120;
/** How long no job may finish before the coordinator looks for workers and says so. */
const IDLE_NOTICE_MS = 10_000;

export async function solveOnCluster(options: ClusterSolveOptions): Promise<ClusterSolveResult> {
  const redisUrl = parseRedisUrl(options.redis);
  const { existing, plan } = planStore(options, 1);
  const notice = options.onNotice ?? (() => {});
  // Redis first: one that refuses the credentials ends the command before a store is made.
  const connection = await connectRedis(redisUrl, (message) => notice(`Redis at ${redisUrl.shown}: ${message}; retrying`), options.signal);
  if (options.signal?.aborted) {
    connection.redis.disconnect();
    throw new ClusterSolveInterrupted(options.store, existing?.manifest.passLog.length);
  }
  let store: ShardStore;
  try {
    store = existing ?? createStore(options, plan);
  } catch (e) {
    connection.redis.disconnect();
    throw e;
  }
  let unlock: (() => void) | undefined;
  let lease: CoordinatorLease | undefined;
  let q: Queue | undefined;
  try {
    unlock = lockOutput(join(options.store, MANIFEST)); // this machine's other processes
    if (!existing) {
      // The manifest, with the new store's id, on disk before anything else; a store another
      // coordinator made in the same folder meanwhile is not replaced.
      if (existsSync(join(options.store, MANIFEST))) throw new CCheckersError('E_USAGE', `${options.store} got a store while this solve started: another coordinator?`);
      store.adopt([], 0, () => {});
    } else if (store.manifest.id === undefined) {
      store.adopt([], store.manifest.generation, (m) => (m.id = newStoreId())); // a store of an older ccheckers
    }
    const id = store.manifest.id!;
    lease = new CoordinatorLease(connection.redis, id);
    await lease.acquire(notice);
    store = ShardStore.open(options.store); // as it is now that the store is ours
    if (store.manifest.id !== id) throw new CCheckersError('E_CLUSTER', `${join(options.store, MANIFEST)} was replaced by another store while this solve started`);
    const { Queue } = await import('bullmq');
    q = new Queue(queueName(id), { connection: connection.redis });
    q.on('error', () => {}); // connection errors: reported once above, and retried
    options.onPlan?.(plan, q.name);
    return await coordinate(options, store, q, lease, connection.commands, redisUrl.shown);
  } finally {
    await lease?.release();
    await q?.close().catch(() => {});
    connection.redis.disconnect();
    unlock?.();
  }
}

/** This process's machine as a lease token names it: host, boot and pid namespace (a container
 *  with the same host name but its own pids is another machine here). Read on first use. */
let machine: string | undefined;
export function thisMachine(): string {
  const read = (f: () => string) => {
    try {
      return f().replace(/[^0-9a-zA-Z-]/g, '');
    } catch {
      return '?';
    }
  };
  machine ??= `${hostname()}:${read(() => readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').slice(0, 8))}:${read(() => readlinkSync('/proc/self/ns/pid'))}`;
  return machine;
}

/** Whether a lease token (machine:pid:random) names a process of this machine that no longer runs. */
export function deadHereAndNow(token: string): boolean {
  const at = token.lastIndexOf(':', token.lastIndexOf(':') - 1);
  const holderMachine = token.slice(0, at);
  const pid = token.slice(at + 1, token.lastIndexOf(':'));
  if (holderMachine !== thisMachine() || holderMachine.includes('?') || !/^\d+$/.test(pid)) return false;
  try {
    process.kill(Number(pid), 0);
    return false;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

/** Deletes KEYS[1] if it still holds ARGV[1] (a lease is let go only by, or for, its holder). */
const DELETE_IF_HOLDER = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0`;

/** How long a coordinator's lease on a store lasts without renewal (it renews every third of it). */
export const LEASE_MS = 10_000;

/**
 * One coordinator per store, across machines: a Redis key with this coordinator's token and an
 * expiry, renewed while it runs. A second coordinator waits one expiry for it (a coordinator that
 * died leaves its lease behind; one of this machine that is gone is seen at once) and is refused
 * if it is still renewed. The lease is checked
 * again before every manifest write; lost (another coordinator took over), the solve stops.
 */
export class CoordinatorLease {
  private readonly key: string;
  private timer: NodeJS.Timeout | undefined;
  private lost = false;

  /** `token` names the holder: this process of this machine unless given (tests play others). */
  constructor(
    private readonly redis: Redis,
    storeId: string,
    private readonly token = `${thisMachine()}:${process.pid}:${randomBytes(4).toString('hex')}`,
  ) {
    this.key = `ccheckers:coordinator:${storeId}`;
  }

  async acquire(notice: (text: string) => void): Promise<void> {
    const until = performance.now() + LEASE_MS + 2000;
    let told = false;
    while ((await this.redis.set(this.key, this.token, 'PX', LEASE_MS, 'NX')) !== 'OK') {
      const holder = await this.redis.get(this.key);
      if (holder !== null && deadHereAndNow(holder)) {
        // Its coordinator was a process of this machine that is gone (kill -9): no need to wait.
        await this.redis.eval(DELETE_IF_HOLDER, 1, this.key, holder);
        continue;
      }
      if (performance.now() > until) {
        throw new CCheckersError('E_USAGE', `another coordinator (${holder ?? '?'}) is solving this store: its lease ${this.key} in Redis is still renewed`);
      }
      if (!told) notice(`the store has a coordinator (${holder ?? '?'}); waiting up to ${LEASE_MS / 1000} s for its lease to run out`);
      told = true;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    this.timer = setInterval(() => void this.renew(), LEASE_MS / 3);
  }

  /** Extends the lease if it is still this coordinator's (takes it again if it ran out while Redis
   *  was away); false when another coordinator holds it. */
  private async extend(): Promise<boolean> {
    const script = `local v = redis.call('get', KEYS[1])
if v == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end
if v == false then redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2]) return 1 end
return 0`;
    return (await this.redis.eval(script, 1, this.key, this.token, String(LEASE_MS))) !== 0;
  }

  private async renew(): Promise<void> {
    try {
      if (!(await this.extend())) this.lost = true;
    } catch {
      // An error reply: the next renewal, or check() before a commit, tries again
    }
  }

  /** Before a manifest write: still this coordinator's, confirmed by Redis now (an error is not a yes). */
  async check(): Promise<void> {
    if (!this.lost && !(await this.extend())) this.lost = true;
    if (this.lost) throw new CCheckersError('E_CLUSTER', `another coordinator took over this store (lease ${this.key} in Redis): this one stops without writing`);
  }

  async release(): Promise<void> {
    clearInterval(this.timer);
    if (this.lost || this.timer === undefined) return;
    await this.redis.eval(DELETE_IF_HOLDER, 1, this.key, this.token).catch(() => 0);
  }
}

async function coordinate(
  options: ClusterSolveOptions,
  store: ShardStore,
  q: Queue,
  lease: CoordinatorLease,
  commands: () => number,
  shownUrl: string,
): Promise<ClusterSolveResult> {
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
  /** One manifest write: the lease still ours, the manifest on disk still the one we read. */
  const commit = async (files: Array<{ index: number; file: string; crc32: number }>, generation: number, update: (m: ShardStore['manifest']) => void) => {
    options.beforeCommit?.(store.manifest.passLog.length);
    await lease.check();
    const onDisk = ShardStore.open(options.store).manifest;
    if (onDisk.id !== store.manifest.id || onDisk.generation !== store.manifest.generation || onDisk.passLog.length !== store.manifest.passLog.length || onDisk.stage !== store.manifest.stage) {
      throw new CCheckersError('E_CLUSTER', `${join(options.store, MANIFEST)} changed under this coordinator (generation ${onDisk.generation}, not ${store.manifest.generation}): is another coordinator solving it?`);
    }
    store.adopt(files, generation, (m) => {
      update(m);
      delete m.passInProgress; // a sequential solve's position in a pass means nothing now
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
      else if (known[at] === 'failed') await (await q.getJob(id))?.retry('failed', { resetAttemptsMade: true, resetAttemptsStarted: true });
      else if (known[at] === 'completed' && job.kind !== 'tile' && !wroteWholeShard(store, job, (await q.getJob(id))?.returnvalue)) {
        // Done, but its file is not here (a worker on another folder, say): a resume runs it again.
        await q.remove(id);
        toAdd.push(job);
      }
    }
    if (toAdd.length > 0) {
      await q.addBulk(
        toAdd.map((job) => ({
          name: job.kind,
          data: job,
          opts: { ...JOB_OPTIONS, jobId: jobId(job) },
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
          if (!job) {
            // Lost between the two reads (a flush, a restart without data): added again, as below.
            const lost = pending.get(id)!;
            await q.add(lost.kind, lost, { ...JOB_OPTIONS, jobId: id });
            continue;
          }
          if (state === 'failed') {
            throw new CCheckersError('E_CLUSTER', `job ${id} failed on a worker: ${job.failedReason} (the store is kept: fix the cause, then solve --resume)`);
          }
          const result = (await checkResult(job.returnvalue, pending.get(id)!, store)) as R;
          results.set(id, result);
          pending.delete(id);
          finished++;
          jobs++;
          bytesRead += result.bytesRead;
          bytesWritten += result.bytesWritten;
          backends.add(result.backend);
          threads = Math.max(threads, result.threads);
          onDone(results.size);
        } else if (state === 'unknown') {
          // Redis lost it (restarted without its data): add it again; a job is repeatable.
          const job = pending.get(id)!;
          await q.add(job.kind, job, { ...JOB_OPTIONS, jobId: id });
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

  if (store.manifest.proven === undefined && store.manifest.stage === 'passes') {
    // A store a sequential solve began: count what it decided (one read of the shards).
    store.manifest.proven = await provenInStore(store, shardBuffer(store));
  }
  if (resumedFromPass !== undefined) report({ phase: 'resumed', pass: resumedFromPass, fraction: 0, proven: store.manifest.proven ?? 0, storedStates: space.states });
  removeOldWork(store);

  if (store.manifest.stage === 'init') {
    const generation = store.manifest.generation;
    // Shards a sequential solve initialised before it stopped keep their files.
    const todo = store.manifest.shards.flatMap((entry, index) => (entry.file === '' ? [index] : []));
    const list: ClusterJob[] = todo.map((shard) => ({ kind: 'init', ...base(), pass: 0, generation, shard }));
    const results = await runJobs<InitResult & JobResult>(list, (done) => report({ phase: 'init', pass: 0, fraction: done / list.length, proven: 0, storedStates: space.states }));
    const files = list.map((job) => {
      const r = results.get(jobId(job))!;
      return { index: (job as InitJob).shard, file: r.file, crc32: r.crc32 };
    });
    // The init jobs' counts, where they made every shard; else counted from the shards.
    const allInitHere = todo.length === store.layout.shards.length;
    await commit(files, generation + 1, (m) => {
      m.stage = 'passes';
      m.proven = allInitHere ? [...results.values()].reduce((sum, r) => sum + r.proven, 0) : undefined;
    });
    if (store.manifest.proven === undefined) store.manifest.proven = await provenInStore(store, shardBuffer(store));
    await forget(list);
    report({ phase: 'init-done', pass: 0, fraction: 1, proven: store.manifest.proven, storedStates: space.states });
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
    const tiles: TileJob[] = [];
    for (let i = 0; i < n; i++) for (let j = i; j < n; j++) tiles.push({ kind: 'tile', ...base(), pass, generation, shards: [i, j], sparse, down });
    await rerunFailedMerges(q, tiles);
    // Progress: the tiles, then at most one merge per shard.
    const share = (done: number) => done / (tiles.length + n);
    const tileResults = await runJobs<TileResult & JobResult>(tiles, (done) => report({ phase: 'pass', pass, fraction: share(done), proven, storedStates: space.states }));
    checkMoveless([...tileResults.values()].reduce((sum, r) => sum + r.moveless, 0), v);
    // Each changed shard's merge takes exactly the outputs of the tiles that changed it.
    const inputs = new Map<number, Array<[number, number]>>();
    for (const tile of tiles) for (const shard of tileResults.get(jobId(tile))!.changed) inputs.set(shard, [...(inputs.get(shard) ?? []), tile.shards]);
    const merges: MergeJob[] = [...inputs.keys()].sort((a, b) => a - b).map((shard) => ({ kind: 'merge', ...base(), pass, generation, shard, inputs: inputs.get(shard)! }));
    const mergeResults = await runJobs<MergeResult & JobResult>(merges, (done) =>
      report({ phase: 'pass', pass, fraction: share(tiles.length + done), proven, storedStates: space.states }),
    );
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
      return { index: job.shard, file: r.file, crc32: r.crc32 };
    });
    // The fixpoint: no tile changed any shard (a merge always adds what its tiles proved).
    await commit(files, generation + 1, (next) => {
      next.passLog.push(record);
      next.proven = proven + newly;
      if (merges.length === 0) next.stage = 'finishing';
    });
    removeOldWork(store);
    await forget([...tiles, ...merges]);
    report({ phase: 'pass-done', pass, fraction: 1, proven: proven + newly, storedStates: space.states, record });
  }

  // The results, from the shards read once in order (the CRC is the in-memory table's).
  if (store.manifest.stage === 'finishing') {
    const tally = new TableTally(space);
    const buffer = shardBuffer(store);
    for (const shard of store.layout.shards) tally.add(await store.loadShardAsync(shard.index, buffer), shard.firstByte); // the lease is renewed meanwhile
    await commit([], store.manifest.generation, (next) => {
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

/**
 * A job's result as the coordinator will use it: of the job's kind, with the files it names
 * being this shard's at the next generation (a result is data from Redis, like a payload).
 */
async function checkResult(value: unknown, job: ClusterJob, store: ShardStore): Promise<JobResult> {
  const r = value as Partial<JobResult> & Record<string, unknown>;
  const bad = (what: string) => new CCheckersError('E_CLUSTER', `job ${jobId(job)} returned ${what}`);
  if (r === null || typeof r !== 'object' || r.kind !== job.kind) throw bad('no result of its kind');
  const count = (x: unknown) => typeof x === 'number' && Number.isSafeInteger(x) && x >= 0;
  if (!count(r.bytesRead) || !count(r.bytesWritten) || typeof r.backend !== 'string' || !count(r.threads)) throw bad('a malformed report');
  if (job.kind === 'tile') {
    const changed = r.changed as unknown;
    if (!Array.isArray(changed) || changed.some((s) => !job.shards.includes(s)) || !count(r.moveless)) throw bad('changed shards outside its tile');
  } else {
    const file = workerShardFile(job.shard, job.generation + 1, '00000000').replace('00000000.bin', '');
    if (typeof r.file !== 'string' || !r.file.startsWith(file) || !SHARD_FILE.test(r.file) || !isCrc32(r.crc32)) throw bad(`the file "${String(r.file)}", not one of shard ${job.shard} at generation ${job.generation + 1}`);
    // A shared filesystem may show another machine's new file late: look for a while.
    const path = join(store.dir, r.file);
    for (let tries = 0; !existsSync(path) && tries < VISIBLE_TRIES; tries++) await new Promise((resolve) => setTimeout(resolve, 500));
    if (!isWholeShard(store, job.shard, r.file)) {
      throw bad(`the file ${r.file}, which is missing or not a whole shard in ${store.dir} (is the worker's --store this folder, shared?); solve --resume runs the job again`);
    }
    if (job.kind === 'merge' && (!count(r.newlyProven) || r.newlyProven === 0)) throw bad('a merge that adds nothing');
    if (job.kind === 'init' && !count(r.proven)) throw bad('a malformed count');
  }
  return r as JobResult;
}


/** Whether a completed init or merge job's result names a whole shard file in the store now. */
function wroteWholeShard(store: ShardStore, job: InitJob | MergeJob, value: unknown): boolean {
  const file = (value as { file?: unknown } | null | undefined)?.file;
  if (typeof file !== 'string' || !SHARD_FILE.test(file)) return true; // checkResult says what is wrong with it
  return isWholeShard(store, job.shard, file);
}

/** Whether `file` (a shard file name) is in the store, as long as shard `shard`. */
function isWholeShard(store: ShardStore, shard: number, file: string): boolean {
  return statSync(join(store.dir, file), { throwIfNoEntry: false })?.size === store.layout.shards[shard]!.bytes;
}

/**
 * A merge of this pass that failed (its input lost for good, say) fails again on every resume,
 * since the tiles it needs are done in Redis: their jobs and its own go, to run again.
 */
async function rerunFailedMerges(q: Queue, tiles: TileJob[]): Promise<void> {
  const first = tiles[0];
  if (!first) return;
  const n = Math.max(...tiles.map((t) => t.shards[1])) + 1;
  for (let shard = 0; shard < n; shard++) {
    const merge = jobId({ kind: 'merge', store: first.store, pass: first.pass, generation: first.generation, shard });
    if ((await q.getJobState(merge)) !== 'failed') continue;
    await q.remove(merge);
    for (const tile of tiles) if (tile.shards.includes(shard)) await q.remove(jobId(tile));
  }
}

/** A buffer for the largest shard of the store. */
function shardBuffer(store: ShardStore): Uint8Array {
  return new Uint8Array(Math.max(...store.layout.shards.map((x) => x.bytes)));
}
