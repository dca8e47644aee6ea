/**
 * The coordinator of a cluster solve: `ccheckers solve --store DIR --redis URL`. It owns the
 * store's manifest; the work is done by `ccheckers worker` processes on any machines that mount
 * the same store, through a BullMQ queue. The passes are the band passes of a local solve
 * (store/band-solve.ts), rounds of band steps: here each step of a round is a job (jobs.ts), the
 * W steps of a round run on the workers at once, and the coordinator commits the round.
 *
 * Job ids are fixed by store, step and generation, so a coordinator started again with --resume
 * adds the same jobs, finds the ones already done in Redis (or runs them again where Redis lost
 * them: a step is repeatable), and goes on. Workers killed mid-job are BullMQ's stalled jobs:
 * another worker takes them. The solve ends at the game's fixpoint (band-solve.ts), so the table
 * is the in-memory solve's whatever the bands, workers, job order or crashes.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { CCheckersError, type RuleMode, type Variant } from '@ccheckers/core';
import type { Job, Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { thisMachine } from '../machine.js';
import { lockOutput } from '../output-file.js';
import type { ProgressEvent, SolveResult } from '../solve.js';
import { type BandPlan, bandBytes } from '../store/band-layout.js';
import { BandSolve, createBandStore, planBandStore, storeBandLayout } from '../store/band-solve.js';
import type { BandStepJob, BandStepOutcome } from '../store/band-step.js';
import { type MessagePack, packProblem, parseMessageFileName } from '../store/message-pack.js';
import type { ScheduleKind } from '../store/band-schedule.js';
import { BAND_FILE, MANIFEST, isCrc32, newStoreId } from '../store/manifest.js';
import { ShardStore } from '../store/shard-store.js';
import { storeResult } from '../store/sharded-solve.js';
import { type ClusterJob, type JobResult, type StepJob, jobId, sameJob } from './jobs.js';
import { connectRedis, loadBullmq, parseRedisUrl, queueName } from './redis.js';

export interface ClusterSolveOptions {
  variant: Variant;
  rules: RuleMode;
  /** The store folder (new, or with `resume` one to continue), mounted by every worker too. */
  store: string;
  redis: string;
  resume?: boolean;
  /** Band count of a new store (default: from the table size and memoryLimit). */
  shards?: number;
  /** A worker's memory: bands small enough that a worker holds one, and its messages. */
  memoryLimit?: number;
  /** Workers of a new store: the steps of a round (default 2). */
  workers?: number;
  /** How a new store's rounds are cut (band-schedule.ts; default: segments). */
  schedule?: ScheduleKind;
  /** Take the store's lock even where another machine's solve holds it (known to be gone). */
  breakLock?: boolean;
  onPlan?: (plan: BandPlan, queue: string) => void;
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
  /** Workers the rounds were made for, and how they were cut. */
  workers: number;
  schedule: ScheduleKind;
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

/** Workers a new store's rounds are made for when --workers is not given. */
export const DEFAULT_WORKERS = 2;

/** How every job is added: retried twice after a second (a worker's crash, I/O), and kept in
 *  Redis when done or failed until the pass is committed (a resumed coordinator finds it). */
const JOB_OPTIONS = { attempts: 3, backoff: { type: 'fixed', delay: 1000 }, removeOnComplete: false, removeOnFail: false } as const;

/** Polling: from FAST_POLL_MS, slower while nothing finishes, up to SLOW_POLL_MS; a poll is one
 *  command (the queue's counts) whatever the jobs, and the pending jobs' states are read only when
 *  the counts moved or every FULL_CHECK_MS (a job lost from Redis). */
const FAST_POLL_MS = 10;
const SLOW_POLL_MS = 1000;
const FULL_CHECK_MS = 15_000;
/** Looks (every 0.5 s) for a file a worker says it wrote before the coordinator gives up on it. */
const VISIBLE_TRIES = 120;
/** How long no job may finish before the coordinator looks for workers and says so. */
const IDLE_NOTICE_MS = 10_000;

export async function solveOnCluster(options: ClusterSolveOptions): Promise<ClusterSolveResult> {
  const redisUrl = parseRedisUrl(options.redis);
  const request = { ...options, workers: options.workers ?? DEFAULT_WORKERS };
  const { existing, space, plan } = planBandStore(request);
  const notice = options.onNotice ?? (() => {});
  // Redis first: one that refuses the credentials ends the command before a store is made.
  const connection = await connectRedis(redisUrl, (message) => notice(`Redis at ${redisUrl.shown}: ${message}; retrying`), options.signal);
  if (options.signal?.aborted) {
    connection.redis.disconnect();
    throw new ClusterSolveInterrupted(options.store, existing?.manifest.passLog.length);
  }
  let store: ShardStore;
  try {
    store = existing ?? createBandStore(request, space, plan);
  } catch (e) {
    connection.redis.disconnect();
    throw e;
  }
  let unlock: (() => void) | undefined;
  let lease: CoordinatorLease | undefined;
  let q: Queue | undefined;
  try {
    unlock = lockOutput(join(options.store, MANIFEST), { breakLock: options.breakLock === true }); // other processes, here or on other machines
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
    const { Queue } = await loadBullmq();
    q = new Queue(queueName(id), { connection: connection.redis });
    q.on('error', () => {}); // connection errors: reported once above, and retried
    options.onPlan?.(plan, q.name);
    return await coordinate(options, store, plan, q, lease, connection.commands, redisUrl.shown);
  } finally {
    await lease?.release();
    await q?.close().catch(() => {});
    connection.redis.disconnect();
    unlock?.();
  }
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
  plan: BandPlan,
  q: Queue,
  lease: CoordinatorLease,
  commands: () => number,
  shownUrl: string,
): Promise<ClusterSolveResult> {
  const notice = options.onNotice ?? (() => {});
  const backends = new Set<string>();
  let threads = 0;
  let jobs = 0;
  let passJobs = 0;
  let passCommandsFrom = commands();
  store.removeLeftovers({ keepUnderWay: true });
  const layout = storeBandLayout(store);
  const base = () => ({ kind: 'step' as const, store: store.manifest.id!, board: store.manifest.board, pieces: store.manifest.pieces, rules: store.manifest.rules });
  let resumed = true; // the first round of this coordinator: jobs found done in Redis are checked again

  /** The round's steps as jobs; their results, checked, as the steps' outcomes. */
  const runRound = async (steps: BandStepJob[], progress: (fraction: number) => void): Promise<BandStepOutcome[]> => {
    const list: StepJob[] = steps.map((step) => ({ ...base(), ...step }));
    const results = await runJobs(list, (job, value) => checkResult(value, job, store), (done) => progress(done / list.length), resumed);
    resumed = false;
    return list.map((job) => {
      const r = results.get(jobId(job))!;
      jobs++;
      passJobs++;
      backends.add(r.backend);
      threads = Math.max(threads, r.threads);
      return r.outcome;
    });
  };

  /** Runs the jobs (adding those Redis does not have or has with another payload, retrying failed
   *  ones) and returns their checked results by id. A job that failed for good ends the solve. */
  const runJobs = async (list: StepJob[], check: (job: StepJob, value: unknown) => Promise<JobResult>, onDone: (done: number) => void, recheckDone: boolean): Promise<Map<string, JobResult>> => {
    const results = new Map<string, JobResult>();
    const pending = new Map(list.map((job) => [jobId(job), job]));
    const add = (job: StepJob) => q.add(job.kind, job, { ...JOB_OPTIONS, jobId: jobId(job) });
    for (const [id, job] of pending) {
      const found: Job | undefined = await q.getJob(id);
      if (!found) {
        await add(job);
      } else if (!sameJob(job, found.data)) {
        // Not the job this coordinator asks for, under its id (put there by someone else): gone.
        notice(`job ${id} in Redis has another payload than this step's; replaced`);
        await q.remove(id);
        await add(job);
      } else if ((await found.getState()) === 'failed') {
        await found.retry('failed', { resetAttemptsMade: true, resetAttemptsStarted: true });
      } else if (recheckDone && (await found.getState()) === 'completed') {
        // Done before a resume: its files must still be there, else it runs again.
        try {
          await check(job, found.returnvalue);
        } catch {
          await q.remove(id);
          await add(job);
        }
      }
    }
    let wait = FAST_POLL_MS;
    let lastProgress = performance.now();
    let lastFullCheck = 0;
    let lastCounts = '';
    let told = false;
    while (pending.size > 0) {
      if (options.signal?.aborted) throw new ClusterSolveInterrupted(options.store, store.manifest.passLog.length);
      // One command a poll: the queue's counts; the jobs themselves only when they moved.
      const counts = JSON.stringify(await q.getJobCounts('completed', 'failed', 'waiting', 'active', 'delayed', 'prioritized'));
      const now = performance.now();
      let finished = 0;
      if (counts !== lastCounts || now - lastFullCheck > FULL_CHECK_MS) {
        lastCounts = counts;
        lastFullCheck = now;
        for (const [id, job] of [...pending]) {
          // The state first, then the job: read the other way, a job that completes in between
          // would come without its result.
          const state = await q.getJobState(id);
          if (state === 'failed') throw new CCheckersError('E_CLUSTER', `job ${id} failed on a worker: ${(await q.getJob(id))?.failedReason ?? '?'} (the store is kept: fix the cause, then solve --resume)`);
          if (state === 'unknown') {
            // Redis lost it (restarted without its data, flushed): added again; a step is repeatable.
            if (!(await q.getJob(id))) await add(job);
            continue;
          }
          if (state !== 'completed') continue;
          const found: Job | undefined = await q.getJob(id);
          if (!found || !sameJob(job, found.data)) {
            // Gone meanwhile, or not this step (put under its id by someone else): added again.
            if (found) await q.remove(id);
            await add(job);
            continue;
          }
          results.set(id, await check(job, found.returnvalue));
          pending.delete(id);
          finished++;
          onDone(results.size);
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
    for (const id of results.keys()) await q.remove(id).catch(() => 0);
    return results;
  };

  const solve = new BandSolve(store, layout, new Uint8Array(plan.bandBytes), {
    runRound,
    ...(options.onProgress ? { onProgress: options.onProgress } : {}),
    checkAbort: () => {
      if (options.signal?.aborted) throw new ClusterSolveInterrupted(options.store, store.manifest.passLog.length);
    },
    beforeCommit: async () => {
      options.beforeCommit?.(store.manifest.passLog.length);
      await lease.check();
      const onDisk = ShardStore.open(options.store).manifest;
      if (onDisk.id !== store.manifest.id || onDisk.generation !== store.manifest.generation) {
        throw new CCheckersError('E_CLUSTER', `${join(options.store, MANIFEST)} changed under this coordinator (generation ${onDisk.generation}, not ${store.manifest.generation}): is another coordinator solving it?`);
      }
    },
    onCommit: () => {
      // Files of attempts that were not committed (a step run twice) go.
      const next = store.manifest.bands?.next;
      if (next) store.removeLeftovers({ keepUnderWay: true });
      if (next?.pass === 1 && next.round === 0) {
        // Init done: the figures of pass 1 start here.
        passJobs = 0;
        passCommandsFrom = commands();
      }
      options.onCommit?.(store.manifest.passLog.length);
    },
    onPassRecord: (record) => {
      Object.assign(record, { jobs: passJobs, redisCommands: commands() - passCommandsFrom });
      passJobs = 0;
      passCommandsFrom = commands();
    },
  });
  await solve.run();
  return {
    ...storeResult(store, backends.size === 0 ? 'cluster' : `cluster (${[...backends].sort().join(', ')})`, threads, solve.resumedFromPass),
    store: options.store,
    shards: layout.bands,
    workers: store.manifest.bandWorkers ?? 1,
    schedule: store.manifest.bandSchedule ?? 'segments',
    queue: q.name,
    jobs,
    bytesRead: solve.bytesRead,
    bytesWritten: solve.bytesWritten,
    redisCommands: commands(),
  };
}

/** What a cluster pass adds to the pass log. */
export interface ClusterPassFigures {
  jobs: number;
  redisCommands: number;
}

/**
 * A job's result as the coordinator will commit it: the result of exactly this job, counts that
 * are whole numbers, and files that are this step's (by name) and in the store with the sizes it
 * gives (a shared filesystem may show another machine's new file late: looked for a while). Which
 * packs the step took, and when they go, follow from the schedule (message-pack.ts), not from the
 * worker's word.
 */
async function checkResult(value: unknown, job: StepJob, store: ShardStore): Promise<JobResult> {
  const r = value as Partial<JobResult> | null;
  const bad = (what: string) => new CCheckersError('E_CLUSTER', `job ${jobId(job)} returned ${what}`);
  if (r === null || typeof r !== 'object' || r.kind !== 'step') throw bad('no result of a step');
  if (!sameJob(job, r.job)) throw bad('the result of another job');
  const count = (x: unknown) => typeof x === 'number' && Number.isSafeInteger(x) && x >= 0;
  if (!count(r.bytesRead) || !count(r.bytesWritten) || typeof r.backend !== 'string' || r.backend.length > 64 || !count(r.threads) || typeof r.seconds !== 'number' || !(r.seconds >= 0)) throw bad('a malformed report');
  const o = r.outcome as Partial<BandStepOutcome> | undefined;
  if (!o || typeof o !== 'object' || o.band !== job.band || o.pass !== job.pass) throw bad('an outcome of another step');
  if (typeof o.attempt !== 'string' || !/^[0-9a-f]{8}$/.test(o.attempt)) throw bad('a malformed attempt');
  for (const k of ['changed', 'sentValues', 'messagesWritten', 'moveless', 'bytesRead', 'bytesWritten'] as const) if (!count(o[k])) throw bad(`a malformed ${k}`);
  if (typeof o.seconds !== 'number' || !(o.seconds >= 0)) throw bad('a malformed time');
  const bands = store.manifest.bands!;
  const files: Array<{ file: string; bytes: number }> = [];
  if (o.table !== undefined) {
    const name = typeof o.table?.file === 'string' ? BAND_FILE.exec(o.table.file) : null;
    if (!name || Number(name[1]) !== job.band || Number(name[2]) !== job.generation + 1 || name[3] !== `.${o.attempt}` || !isCrc32(o.table.crc32)) throw bad(`the band file "${String(o.table?.file)}", not one of band ${job.band} at generation ${job.generation + 1}`);
    files.push({ file: o.table.file, bytes: bandBytes(store.space, bandGroups(store)[job.band]!) });
  } else if (job.pass === 0 || o.changed! > 0) throw bad('no band file for a band it changed');
  let pack: MessagePack | undefined;
  if (o.pack !== undefined) {
    const p = o.pack as Partial<MessagePack>;
    const problem = packProblem(p, bands.count);
    if (problem !== undefined || p.pass !== job.pass || p.source !== job.band || parseMessageFileName(p.file!)?.attempt !== o.attempt) {
      throw bad(`a message pack that is not one of this step's (${problem ?? JSON.stringify(p).slice(0, 200)})`);
    }
    pack = { file: p.file!, pass: p.pass!, source: p.source!, bytes: p.bytes!, count: p.count!, directoryCrc32: p.directoryCrc32!, targets: p.targets! };
    if (pack.count !== o.messagesWritten) throw bad(`a message pack of ${pack.count} messages for ${o.messagesWritten} written`);
    files.push({ file: pack.file, bytes: pack.bytes });
  }
  if (pack === undefined && o.messagesWritten !== 0) throw bad(`${o.messagesWritten} messages written, and no message pack`);
  for (const { file, bytes } of files) {
    const path = join(store.dir, file);
    for (let tries = 0; !existsSync(path) && tries < VISIBLE_TRIES; tries++) await new Promise((resolve) => setTimeout(resolve, 500));
    if (statSync(path, { throwIfNoEntry: false })?.size !== bytes) {
      throw bad(`the file ${file}, which is missing or not of its size in ${store.dir} (is the worker's --store this folder, shared?); solve --resume runs the job again`);
    }
  }
  const { pack: _, ...rest } = o as BandStepOutcome;
  return { ...(r as JobResult), outcome: { ...rest, ...(pack ? { pack } : {}) } };
}

/** The group count of every band of the store (cached per store). */
const groupsByStore = new WeakMap<ShardStore, number[]>();
function bandGroups(store: ShardStore): number[] {
  let groups = groupsByStore.get(store);
  if (!groups) {
    groups = storeBandLayout(store).groupsOf.map((g) => g.length);
    groupsByStore.set(store, groups);
  }
  return groups;
}
