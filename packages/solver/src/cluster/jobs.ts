/**
 * The jobs of a cluster solve (job-queue.ts puts them on a BullMQ queue, worker.ts runs them):
 * each is one step of the band passes (store/band-step.ts), the same step a local solve runs in
 * its own process. Their payloads, the checks every payload and result passes, and their ids.
 *
 * A payload names no path: a worker works in its own --store folder, reads the step's band file
 * and inbox from the manifest there, and builds every file name it writes from checked integers
 * and a token of its own attempt. A job run twice (a worker killed, a Redis restart) writes other
 * files; the coordinator commits one attempt's, and only for the exact job it asked for.
 */
import { CCheckersError, type RuleMode } from '@ccheckers/core';
import type { BandStepJob, BandStepOutcome } from '../store/band-step.js';
import { type Manifest, scheduleOf } from '../store/manifest.js';

/** One band step: band `band` in round `round` of pass `pass` (0: init), on the store as
 *  committed at manifest generation `generation`. */
export interface StepJob extends BandStepJob {
  kind: 'step';
  /** The store's id (manifest.json): a job of another store is refused. */
  store: string;
  board: number;
  pieces: number;
  rules: RuleMode;
}

export type ClusterJob = StepJob;

/** What every job reports besides what its step did. */
export interface JobReport {
  backend: string;
  threads: number;
  seconds: number;
  bytesRead: number;
  bytesWritten: number;
}

/** A worker's result: the job it ran (checked by the coordinator against the job it added) and
 *  what the step did and wrote. */
export interface StepResult extends JobReport {
  kind: 'step';
  job: StepJob;
  outcome: BandStepOutcome;
}

export type JobResult = StepResult;

/** A payload that no worker may run: refused with this reason, never retried. */
export class JobRefused extends CCheckersError {
  constructor(message: string) {
    super('E_JOB', message);
  }
}

/** A job this worker cannot run now (the store's manifest is not at the job's generation yet, too
 *  little memory here): failed with this reason and retried by BullMQ, perhaps on another worker. */
export class JobDeferred extends CCheckersError {
  constructor(message: string) {
    super('E_JOB_DEFERRED', message);
  }
}

const FIELDS = ['kind', 'store', 'board', 'pieces', 'rules', 'pass', 'round', 'band', 'generation'];

/**
 * The job in `data`, checked against the store's manifest: exactly the fields of a step, this
 * store's id, variant and rules, a band of this store in its round of the store's schedule, and
 * (where the queue's id is given) the id that payload gets. Anything else is a JobRefused naming
 * the problem.
 */
export function parseJob(data: unknown, manifest: Manifest, id?: string): ClusterJob {
  if (data === null || typeof data !== 'object' || Array.isArray(data)) throw new JobRefused('the payload is not an object');
  const d = data as Record<string, unknown>;
  if (d.kind !== 'step') throw new JobRefused(`unknown job kind ${JSON.stringify(d.kind)}`);
  const extra = Object.keys(d).filter((k) => !FIELDS.includes(k));
  if (extra.length > 0) throw new JobRefused(`unexpected field(s) ${extra.join(', ')} in a step job`);
  if (d.store !== manifest.id) throw new JobRefused(`the job is for store ${JSON.stringify(d.store)}, this worker's store is ${manifest.id}`);
  if (d.board !== manifest.board || d.pieces !== manifest.pieces || d.rules !== manifest.rules) {
    throw new JobRefused(
      `the job is for ${String(d.board)}x${String(d.board)}/${String(d.pieces)} (${String(d.rules)}), the store holds ${manifest.board}x${manifest.board}/${manifest.pieces} (${manifest.rules})`,
    );
  }
  const bands = manifest.bands;
  if (!bands) throw new JobRefused(`the store is not being solved by band passes (stage ${manifest.stage})`);
  const count = (name: string, value: unknown) => {
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) throw new JobRefused(`${name} must be a whole number >= 0 (got ${JSON.stringify(value)})`);
    return value;
  };
  const band = count('band', d.band);
  if (band >= bands.count) throw new JobRefused(`band ${band} is not a band of this store (it has ${bands.count})`);
  const round = count('round', d.round);
  const schedule = scheduleOf(bands);
  if (schedule.roundOf[band] !== round) throw new JobRefused(`band ${band} is stepped in round ${schedule.roundOf[band]}, not ${round}`);
  const job: StepJob = { kind: 'step', store: manifest.id!, board: manifest.board, pieces: manifest.pieces, rules: manifest.rules, pass: count('pass', d.pass), round, band, generation: count('generation', d.generation) };
  if (id !== undefined && id !== jobId(job)) throw new JobRefused(`the job's id ${JSON.stringify(id)} is not the id of its payload (${jobId(job)})`);
  return job;
}

/** The job's id on the queue: one per store, step and generation, so that adding it again (a
 *  coordinator resumed) finds the job there instead of running it twice. */
export function jobId(job: Pick<StepJob, 'store' | 'pass' | 'round' | 'generation' | 'band'>): string {
  return `${job.store}-p${job.pass}-r${job.round}-g${job.generation}-b${job.band}`;
}

/** Whether two jobs are the same work (a payload found in Redis, a job a result names). */
export function sameJob(a: StepJob, b: unknown): boolean {
  if (b === null || typeof b !== 'object') return false;
  const o = b as Record<string, unknown>;
  return FIELDS.every((k) => o[k] === (a as unknown as Record<string, unknown>)[k]) && Object.keys(o).length === FIELDS.length;
}
