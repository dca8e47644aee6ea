/**
 * The jobs of a round on the cluster's queue (BullMQ): added (or found done, failed or replaced in
 * Redis), then polled until each has a checked result. What the coordinator (coordinator.ts) runs
 * for every round of its passes.
 */
import { CCheckersError } from '@ccheckers/core';
import type { Job, Queue } from 'bullmq';
import { type ClusterJob, type JobResult, jobId, sameJob } from './jobs.js';

/** What runJobs needs of the coordinator: its queue, where it says things, how it stops. */
export interface JobQueue {
  q: Queue;
  notice: (text: string) => void;
  /** Throws (ClusterSolveInterrupted) when the solve is to stop. */
  checkAbort: () => void;
  /** The Redis URL as shown (its password masked) and the store folder, for the notices. */
  shownUrl: string;
  storePath: string;
  /** Woken when a job of the queue completes or fails (BullMQ's events): the polls between are
   *  a fallback (default: no events, polls only). */
  waker?: Waker;
}

/** A sleep that an event cuts short (one that came while nobody slept: the next sleep). */
export class Waker {
  private wake: (() => void) | undefined;
  private pending = false;

  sleep(ms: number): Promise<void> {
    if (this.pending) {
      this.pending = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wake = done;
    });
  }

  notify(): void {
    if (this.wake) this.wake();
    else this.pending = true;
  }
}

/** How every job is added: retried twice after a second (a worker's crash, I/O), and kept in
 *  Redis when done or failed until the pass is committed (a resumed coordinator finds it). */
/** keepLogs: a job's log holds the last reasons workers deferred it for (worker.ts), which the
 *  coordinator says while it waits. */
const JOB_OPTIONS = { attempts: 3, backoff: { type: 'fixed', delay: 1000 }, removeOnComplete: false, removeOnFail: false, keepLogs: 3 } as const;

/** Polling: from FAST_POLL_MS, slower while nothing finishes, up to SLOW_POLL_MS, and at once when
 *  BullMQ says a job completed or failed (JobQueue.waker); a poll is one command (the queue's
 *  counts) whatever the jobs, and the pending jobs' states are read only when the counts moved or
 *  every FULL_CHECK_MS (a job lost from Redis). */
const FAST_POLL_MS = 10;
const SLOW_POLL_MS = 1000;
const FULL_CHECK_MS = 15_000;
/** How long no job may finish before the coordinator looks for workers and says so. */
const IDLE_NOTICE_MS = 10_000;

/** Marks a job in Redis whose fields BullMQ cannot parse (its data not JSON): put there by
 *  someone else, and replaced as a job of another payload is. */
const UNREADABLE = 'unreadable';

/** The job Redis holds under `id`: undefined if none, UNREADABLE if its fields are not JSON (BullMQ
 *  throws a SyntaxError reading it: without this, every resume of the store would end there). */
async function readJob(q: Queue, id: string): Promise<Job | typeof UNREADABLE | undefined> {
  try {
    return await q.getJob(id);
  } catch (e) {
    if (e instanceof SyntaxError) return UNREADABLE;
    throw e;
  }
}

/** Runs the jobs (adding those Redis does not have or has with another payload, retrying failed
 *  ones) and returns their checked results by id. A job that failed for good ends the solve.
 *  `keepDone`: done jobs stay in Redis (removeJobs once the round is committed). */
export async function runJobs(
  context: JobQueue,
  list: ClusterJob[],
  check: (job: ClusterJob, value: unknown, waitForFiles?: boolean) => Promise<JobResult>,
  onDone: (done: number) => void,
  recheckDone: boolean,
  { keepDone = false }: { keepDone?: boolean } = {},
): Promise<Map<string, JobResult>> {
  const { q, notice, checkAbort, shownUrl, storePath } = context;
  const results = new Map<string, JobResult>();
  const pending = new Map(list.map((job) => [jobId(job), job]));
  const add = (job: ClusterJob) => q.add(job.kind, job, { ...JOB_OPTIONS, jobId: jobId(job) });
  for (const [id, job] of pending) {
    const found = await readJob(q, id);
    if (!found) {
      await add(job);
    } else if (found === UNREADABLE || !sameJob(job, found.data)) {
      // Not the job this coordinator asks for, under its id (put there by someone else): gone.
      notice(`job ${id} in Redis has ${found === UNREADABLE ? 'fields that are not JSON' : "another payload than this step's"}; replaced`);
      await q.remove(id);
      await add(job);
    } else if ((await found.getState()) === 'failed') {
      await found.retry('failed', { resetAttemptsMade: true, resetAttemptsStarted: true });
    } else if (recheckDone && (await found.getState()) === 'completed') {
      // Done before a resume: its files must still be there (not waited for: they were written
      // long ago), else it runs again.
      try {
        await check(job, found.returnvalue, false);
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
    checkAbort();
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
        if (state === 'failed') {
          const failed = await readJob(q, id);
          const reason = failed === UNREADABLE ? 'its fields in Redis are not JSON' : printable(failed?.failedReason ?? '?');
          throw new CCheckersError('E_CLUSTER', `job ${id} failed on a worker: ${reason} (the store is kept: fix the cause, then solve --resume)`);
        }
        if (state === 'unknown') {
          // Redis lost it (restarted without its data, flushed): added again; a step is repeatable.
          const lost = await readJob(q, id);
          if (lost === UNREADABLE) await q.remove(id);
          if (!lost || lost === UNREADABLE) await add(job);
          continue;
        }
        if (state !== 'completed') continue;
        const found = await readJob(q, id);
        if (!found || found === UNREADABLE || !sameJob(job, found.data)) {
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
          ? `no worker is connected to queue ${q.name} at ${shownUrl}: start one with "ccheckers worker --redis URL --store ${storePath}"`
          : `${workers} worker(s) connected; waiting for ${pending.size} job(s)${await deferral(q, pending)}`,
      );
    }
    await (context.waker?.sleep(wait) ?? new Promise((resolve) => setTimeout(resolve, wait)));
    wait = Math.min(SLOW_POLL_MS, Math.ceil(wait * 1.5));
  }
  if (!keepDone) await removeJobs(q, [...results.keys()]);
  return results;
}

/** Text from Redis (a job's failure, a worker's log line) as it may reach a terminal: control
 *  characters (escape sequences among them) shown as '?', at most `most` characters. */
export function printable(text: unknown, most = 500): string {
  const s = String(text);
  const shown = s.slice(0, most).replace(/[\u0000-\u001f\u007f-\u009f]/g, '?');
  return s.length > most ? `${shown}...` : shown;
}

/** Why a worker deferred one of the pending jobs, as its log says (worker.ts), for the idle
 *  notice: '' when none is deferred. Two commands, once a notice. */
async function deferral(q: Queue, pending: Map<string, ClusterJob>): Promise<string> {
  try {
    const [delayed] = await q.getDelayed(0, 0);
    if (!delayed?.id || !pending.has(delayed.id)) return '';
    const { logs } = await q.getJobLogs(delayed.id, -1, -1);
    return logs[0] ? `; job ${delayed.id} was ${printable(logs[0])}` : '';
  } catch {
    return ''; // a job Redis holds that BullMQ cannot read: replaced when its turn comes
  }
}

/** Removes done jobs from Redis (a round committed no longer needs them). */
export async function removeJobs(q: Queue, ids: string[]): Promise<void> {
  for (const id of ids) await q.remove(id).catch(() => 0);
}
