/**
 * A worker of cluster solves: `ccheckers worker --redis URL --store DIR`. It waits for a store
 * to appear in DIR (the coordinator makes it), then takes that store's jobs from its BullMQ
 * queue one at a time and runs them (run-job.ts), each with the worker's threads; once that
 * store is removed (or another made in DIR), it waits for and serves the next. A payload that
 * fails its checks is refused for good (BullMQ's UnrecoverableError: no retry) with a logged
 * reason. BullMQ holds a lock on the running job that the worker renews; if the worker dies, the
 * lock runs out after `stallSeconds` and another worker's stalled-job check puts the job back.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { type Backend, CCheckersError } from '@ccheckers/core';
import { UNITS_CALL_SECONDS } from '../store/kernel-calls.js';
import type { SliceOutcome } from '../store/band-step-jobs.js';
import { MANIFEST } from '../store/manifest.js';
import { ShardStore } from '../store/shard-store.js';
import { type ClusterJob, JobDeferred, JobRefused, type JobResult } from './jobs.js';
import { connectRedis, loadBullmq, parseRedisUrl, queueName } from './redis.js';
import { JobRunner } from './run-job.js';

export interface ClusterWorkerOptions {
  redis: string;
  store: string;
  backend: Backend;
  threads: number;
  memoryLimit?: number;
  /** Seconds after which the job of a worker that stopped renewing its lock is given to another. */
  stallSeconds?: number;
  /** One line per job, refusal or problem (the CLI writes them to stderr). */
  log: (line: string) => void;
  /** Ends the worker after its current job. */
  signal: AbortSignal;
  /** Test hooks: called when a job starts, before any work, and when its work is done and its
   *  files written but BullMQ not yet told (e.g. SIGKILL the worker there). */
  onJobStart?: (job: ClusterJob | undefined) => void;
  onJobWorked?: (job: ClusterJob) => void;
}

export const DEFAULT_STALL_SECONDS = 30;
/** A deferred job (jobs.ts, JobDeferred) goes back to the queue for DEFER_MS, up to MAX_DEFERRALS
 *  starts (about ten minutes); after that it fails like any error, and the coordinator says why. */
const DEFER_MS = 2000;
const MAX_DEFERRALS = 300;

export async function runClusterWorker(options: ClusterWorkerOptions): Promise<{ jobs: number; refused: number }> {
  const { url, shown } = parseRedisUrl(options.redis);
  // BullMQ first (a fifth of a second to load): missing, the worker says so at once; loaded while
  // the solve makes its store, the jobs start as soon as the store is there.
  const bullmq = await loadBullmq();
  let storeId = await waitForStore(options);
  if (storeId === undefined) return { jobs: 0, refused: 0 };
  const connection = await connectRedis({ url, shown }, (message) => options.log(`Redis at ${shown}: ${message}; retrying`), options.signal);
  const totals = { jobs: 0, refused: 0 };
  try {
    // A store removed, or another made in its folder, while the worker is idle: it leaves the old
    // store's queue and serves the new one (a worker kept running across solves).
    while (storeId !== undefined) {
      if ((await serveStore(options, bullmq, connection, shown, storeId, totals)) === 'stopped') break;
      storeId = await waitForStore(options);
    }
  } finally {
    connection.redis.disconnect();
  }
  return totals;
}

/** How often an idle worker looks whether its store is still the one in --store. */
const STORE_CHECK_MS = 2000;

/** The id the manifest in `dir` names now; undefined if there is none (or it cannot be read).
 *  The manifest alone, not ShardStore.open, which builds the variant's state space: too much to
 *  do every STORE_CHECK_MS (a job opens the store and checks it in full anyway). */
function storeIdIn(dir: string): string | undefined {
  try {
    const id = (JSON.parse(readFileSync(join(dir, MANIFEST), 'utf8')) as { id?: unknown }).id;
    return typeof id === 'string' ? id : undefined;
  } catch {
    return undefined;
  }
}

/** Serves the queue of store `storeId` until the worker is stopped ('stopped') or, while idle, the
 *  store in --store is another one or none ('left'). */
async function serveStore(
  options: ClusterWorkerOptions,
  { DelayedError, UnrecoverableError, Worker }: Awaited<ReturnType<typeof loadBullmq>>,
  connection: Awaited<ReturnType<typeof connectRedis>>,
  shown: string,
  storeId: string,
  totals: { jobs: number; refused: number },
): Promise<'stopped' | 'left'> {
  const queue = queueName(storeId);
  if (options.signal.aborted) {
    // Stopped while Redis was away: no job was taken.
    options.log('stopping');
    return 'stopped';
  }
  const stallMs = 1000 * (options.stallSeconds ?? DEFAULT_STALL_SECONDS);
  const runner = new JobRunner({
    dir: options.store,
    backend: options.backend,
    threads: options.threads,
    ...(options.memoryLimit !== undefined ? { memoryLimit: options.memoryLimit } : {}),
    // The lock is renewed every stallMs / 2 from the event loop, which runs between kernel calls.
    callSeconds: Math.min(UNITS_CALL_SECONDS, stallMs / 1000 / 8),
  });
  /** Jobs whose work is going on (at most one). */
  let running = 0;
  /** Whether a job's work has ended and Redis has not yet taken its end (BullMQ's completed or
   *  failed event, or a deferral made), and what to call when it has. */
  let untold = false;
  let told = () => {};
  const tell = () => {
    untold = false;
    told();
  };
  const worker = new Worker(
    queue,
    async (job, token) => {
      options.onJobStart?.(job.data as ClusterJob | undefined);
      running++;
      let ran: Awaited<ReturnType<JobRunner['run']>> | undefined;
      let failure: unknown;
      try {
        ran = await runner.run(job.data, job.id);
      } catch (e) {
        failure = e;
      } finally {
        // What follows talks to Redis: a stop from here on waits for it a bounded time (below).
        running--;
        untold = true;
      }
      if (ran) {
        options.onJobWorked?.(ran.job);
        totals.jobs++;
        options.log(describe(job.id ?? '?', ran.job, ran.result));
        return ran.result;
      }
      if (failure instanceof JobRefused) {
        totals.refused++;
        options.log(`refused job ${job.id ?? '?'}: ${failure.message}`);
        throw new UnrecoverableError(`refused by a worker: ${failure.message}`);
      }
      if (failure instanceof JobDeferred && job.attemptsStarted < MAX_DEFERRALS) {
        // Not a failed attempt: back to the queue in a while, for any worker.
        options.log(`job ${job.id ?? '?'} deferred: ${failure.message}`);
        // For the coordinator, which says why its jobs wait (job-queue.ts, the job's last logs).
        await job.log(`deferred by a worker: ${failure.message}`);
        await job.moveToDelayed(Date.now() + DEFER_MS, token);
        tell(); // no event follows a deferral
        throw new DelayedError();
      }
      options.log(`job ${job.id ?? '?'} failed: ${(failure as Error).message ?? String(failure)}; BullMQ retries it (attempt ${job.attemptsMade + 1} of ${job.opts.attempts ?? 1})`);
      throw failure;
    },
    {
      connection: connection.redis,
      concurrency: 1,
      lockDuration: stallMs,
      stalledInterval: stallMs,
      maxStalledCount: 5,
      autorun: true,
    },
  );
  worker.on('completed', tell);
  worker.on('failed', tell);
  // Connection errors are reported once by connectRedis and retried; anything else (a lock that
  // could not be renewed) is said.
  worker.on('error', (e: Error) => {
    if (!/ECONNREFUSED|ECONNRESET|Connection is closed|EPIPE|ETIMEDOUT/.test(e.message)) options.log(`BullMQ: ${e.message}`);
  });
  options.log(`worker ${process.pid} on queue ${queue} at ${shown}, store ${options.store}, ${options.backend.name} on ${options.threads} thread(s)`);
  let check: NodeJS.Timeout | undefined;
  const why = await new Promise<'stopped' | 'left'>((resolve) => {
    if (options.signal.aborted) return resolve('stopped');
    options.signal.addEventListener('abort', () => resolve('stopped'), { once: true });
    check = setInterval(() => {
      if (running === 0 && !untold && storeIdIn(options.store) !== storeId) resolve('left');
    }, STORE_CHECK_MS);
  });
  clearInterval(check);
  if (why === 'left') {
    options.log(`the store in ${options.store} is no longer the one of queue ${queue} (removed, or another made there): leaving that queue`);
    await worker.close(); // a job taken meanwhile is finished first
    await runner.close();
    return 'left';
  }
  if (running > 0 || untold) {
    options.log('stopping after the current job');
    // The job's end goes to Redis once its work ends. A Redis that does not answer then would
    // hold the worker for good (BullMQ's close waits for it): the worker waits stallSeconds from
    // the end of the work, then stops without telling; the job's lock runs out by then, and the
    // job is another worker's, as if this one had died.
    worker.pause(true).catch(() => {}); // no job after this one
    const taken = new Promise<boolean>((resolve) => (told = () => resolve(true)));
    if (await settledWithin(taken, stallMs, () => running === 0)) {
      await worker.close();
    } else {
      options.log(`Redis at ${shown} did not take the last job's result within ${stallMs / 1000} s: not told, the job will be run again`);
      connection.redis.disconnect();
      await worker.close(true).catch(() => {});
    }
  } else {
    // No job to finish: nothing to wait for, not even a Redis that does not answer.
    options.log('stopping');
    connection.redis.disconnect();
    await worker.close(true).catch(() => {});
  }
  await runner.close();
  return 'stopped';
}

/** Whether `p` resolves true within `ms` of the moment `started()` is first true (polled every
 *  100 ms until then). */
async function settledWithin(p: Promise<boolean>, ms: number, started: () => boolean): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((resolve) => {
    let deadline = 0;
    const tick = () => {
      if (deadline === 0 && started()) deadline = performance.now() + ms;
      if (deadline !== 0 && performance.now() >= deadline) resolve(false);
      else timer = setTimeout(tick, 100);
    };
    tick();
  });
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** The first look for a store again after STORE_POLL_FIRST_MS, each next wait half as long again,
 *  up to STORE_POLL_MS: a worker sees a new store within about half the time it has waited for it
 *  (from 50 ms to a second), so one started beside its solve (as a script starts them) begins
 *  the jobs soon after the store is made, and one left waiting looks once a second. */
const STORE_POLL_FIRST_MS = 50;
const STORE_POLL_MS = 1000;

/** The store's id, once a store is in the folder (polled: STORE_POLL_MS); undefined if stopped first. */
async function waitForStore(options: ClusterWorkerOptions): Promise<string | undefined> {
  let told = false;
  let wait = STORE_POLL_FIRST_MS;
  for (;;) {
    if (options.signal.aborted) return undefined;
    if (existsSync(options.store) && !statSync(options.store).isDirectory()) {
      throw new CCheckersError('E_USAGE', `--store ${options.store} is not a folder (a worker serves the store a solve makes there)`);
    }
    if (existsSync(join(options.store, MANIFEST))) {
      const store = ShardStore.open(options.store);
      if (store.manifest.id !== undefined) return store.manifest.id;
    }
    if (!told) options.log(`waiting for a store in ${options.store} (made by "ccheckers solve --store ${options.store} --redis URL")`);
    told = true;
    await new Promise((resolve) => setTimeout(resolve, wait));
    wait = Math.min(STORE_POLL_MS, Math.ceil(wait * 1.5));
  }
}

function describe(id: string, job: ClusterJob, r: JobResult): string {
  const what = job.pass === 0 ? `init band ${job.band}` : `pass ${job.pass} round ${job.round} band ${job.band}`;
  const o = r.outcome;
  const part = job.kind === 'slice' ? (o as SliceOutcome) : undefined;
  const slices = part ? `, ${part.slices} slice(s) of units visited${part.waited > 0 ? ` (${part.waited.toFixed(2)} s waiting for other parts' proofs)` : ''}` : '';
  return `job ${id}: ${what}: +${o.changed} ${job.pass === 0 ? 'decided' : 'proven'}${slices}, ${o.messagesWritten} messages sent in ${r.seconds.toFixed(2)} s`;
}
