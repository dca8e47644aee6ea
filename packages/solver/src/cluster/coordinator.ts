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
 *
 * Here: the solve's setup and pass loop. The lease that makes it the store's one coordinator is in
 * coordinator-lease.ts, a round's jobs on the queue in job-queue.ts, the check of a worker's result
 * in job-result.ts.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { CCheckersError } from '@ccheckers/core';
import type { Queue, QueueEvents } from 'bullmq';
import type { Redis } from 'ioredis';
import { lockOutput } from '../output-file.js';
import type { SolveResult } from '../solve.js';
import type { BandPlan } from '../store/band-layout.js';
import { BandSolve, createBandStore, planBandStore, storeBandLayout } from '../store/band-solve.js';
import type { BandStepJob, BandStepOutcome, SliceOutcome } from '../store/band-step-jobs.js';
import { type ScheduleKind, isSharedStep } from '../store/band-schedule.js';
import { MANIFEST, newStoreId } from '../store/manifest.js';
import { partsTookOnlyFromEachOther, removeProofFiles } from '../store/proof-exchange.js';
import { ShardStore } from '../store/shard-store.js';
import { type StoreRequest, storeResult } from '../store/sharded-solve.js';
import { CoordinatorLease } from './coordinator-lease.js';
import { type JobQueue, Waker, removeJobs, runJobs } from './job-queue.js';
import { checkResult } from './job-result.js';
import { type ClusterJob, type FinishJob, type JobResult, type SliceJob, type StepJob, jobId } from './jobs.js';
import { connectRedis, countCommands, loadBullmq, parseRedisUrl, queueName } from './redis.js';

export interface ClusterSolveOptions extends StoreRequest {
  redis: string;
  onPlan?: (plan: BandPlan, queue: string) => void;
  /** Things the user should know while waiting (no worker connected, Redis away). */
  onNotice?: (text: string) => void;
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

export async function solveOnCluster(options: ClusterSolveOptions): Promise<ClusterSolveResult> {
  const redisUrl = parseRedisUrl(options.redis);
  // A new store's workers and schedule default to a cluster's (band-solve.ts, newStoreWorkers);
  // a store resumed keeps its own.
  const request = { ...options, cluster: true };
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
  let events: QueueEvents | undefined;
  let eventsConnection: Redis | undefined;
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
    const { Queue, QueueEvents } = await loadBullmq();
    q = new Queue(queueName(id), { connection: connection.redis });
    q.on('error', () => {}); // connection errors: reported once above, and retried
    // A job's end wakes the coordinator at once (a blocking read of the queue's events, on a
    // connection of its own); its commands are counted with the others.
    eventsConnection = connection.redis.duplicate();
    // A duplicate has none of the first connection's listeners: without one, ioredis prints each
    // retry as "[ioredis] Unhandled error event" (the first connection reports the outage once).
    eventsConnection.on('error', () => {});
    const eventCommands = countCommands(eventsConnection);
    events = new QueueEvents(q.name, { connection: eventsConnection });
    events.on('error', () => {});
    const waker = new Waker();
    events.on('completed', () => waker.notify());
    events.on('failed', () => waker.notify());
    options.onPlan?.(plan, q.name);
    const result = await coordinate(options, store, plan, q, lease, () => connection.commands() + eventCommands(), redisUrl.shown, waker);
    // Solved: nothing of its queue is needed any more (an interrupted solve keeps it for --resume),
    // and Redis is left as it was found, not with keys of every solve it served.
    await q.obliterate({ force: true }).catch(() => {});
    return result;
  } finally {
    await lease?.release();
    await events?.close().catch(() => {});
    eventsConnection?.disconnect(); // BullMQ leaves a connection it was given open
    await q?.close().catch(() => {});
    connection.redis.disconnect();
    unlock?.();
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
  waker: Waker,
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
  const queue: JobQueue = {
    q,
    notice,
    checkAbort: () => {
      if (options.signal?.aborted) throw new ClusterSolveInterrupted(options.store, store.manifest.passLog.length);
    },
    shownUrl,
    storePath: options.store,
    waker,
  };

  const take = (r: JobResult) => {
    jobs++;
    passJobs++;
    backends.add(r.backend);
    threads = Math.max(threads, r.threads);
    return r.outcome;
  };
  const check = (job: ClusterJob, value: unknown, waitForFiles?: boolean) => checkResult(value, job, store, waitForFiles);

  /** The round's steps as jobs; their results, checked, as the steps' outcomes. */
  const runRound = async (steps: BandStepJob[], progress: (fraction: number) => void): Promise<BandStepOutcome[]> => {
    const [first] = steps;
    if (steps.length === 1 && first && isSharedStep(store.schedule, first)) return runSharedStep(first, progress);
    const list: StepJob[] = steps.map((step) => ({ ...base(), ...step }));
    const results = await runJobs(queue, list, check, (done) => progress(done / list.length), resumed);
    resumed = false;
    return list.map((job) => take(results.get(jobId(job))!));
  };

  /**
   * A shared step (pass 1 of schedule 'shared', band-schedule.ts isSharedStep): its W parts as
   * jobs at once, on any workers, then its finish, with the committed attempt of each part. The
   * parts stay in Redis until the round is committed, so a coordinator resumed meanwhile finds
   * them (their files checked again).
   */
  const committedParts: string[] = [];
  const runSharedStep = async (step: BandStepJob, progress: (fraction: number) => void): Promise<BandStepOutcome[]> => {
    const started = performance.now();
    const parts = store.schedule.workers;
    const slices: SliceJob[] = Array.from({ length: parts }, (_, part) => ({ ...base(), ...step, kind: 'slice', part }));
    let sliceResults: Map<string, JobResult>;
    let outcomes: SliceOutcome[];
    for (;;) {
      sliceResults = await runJobs(queue, slices, check, (done) => progress((0.9 * done) / parts), resumed, { keepDone: true });
      resumed = false;
      outcomes = slices.map((job) => sliceResults.get(jobId(job))!.outcome as SliceOutcome);
      // Parts that took proofs of an attempt not committed (a part run twice) lack its messages
      // (proof-exchange.ts): all run again, from no proof files.
      if (partsTookOnlyFromEachOther(outcomes)) break;
      notice(`band ${step.band}: a part of its shared step took proofs of an attempt run again; its parts run again`);
      await removeJobs(q, [...sliceResults.keys()]);
      removeProofFiles(store.dir, step.band, step.generation);
    }
    for (const job of slices) take(sliceResults.get(jobId(job))!);
    const finish: FinishJob = { ...base(), ...step, kind: 'finish', slices: outcomes.map((o) => ({ attempt: o.attempt, proofs: o.proofs })) };
    let done: Map<string, JobResult>;
    try {
      done = await runJobs(queue, [finish], check, () => progress(1), true);
    } catch (e) {
      // A finish that failed for good (a proof file a crash left short, say): the parts run
      // again on --resume, with new files.
      if (!(e instanceof ClusterSolveInterrupted)) await removeJobs(q, [...sliceResults.keys()]);
      throw e;
    }
    const last = take(done.get(jobId(finish))!);
    // Removed once the round is committed: a coordinator killed before finds them done.
    committedParts.push(...sliceResults.keys());
    // A round takes as long as its slowest step: the shared step's time is the finish's.
    last.seconds = (performance.now() - started) / 1000;
    return [...outcomes, last];
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
      // The parts of a shared step just committed go from Redis (not waited for: a part left
      // there by a failed removal is found done, and checked, by a resumed coordinator).
      if (committedParts.length > 0) void removeJobs(q, committedParts.splice(0));
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


