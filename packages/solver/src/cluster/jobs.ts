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
import { isSharedStep, roundOfStep } from '../store/band-schedule.js';
import type { BandStepJob, BandStepOutcome } from '../store/band-step-jobs.js';
import { type Manifest, isAttemptToken, scheduleOf } from '../store/manifest.js';

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

/** Part `part` of a shared step (pass 1 of schedule 'shared': BandStepper.runSlice). */
export interface SliceJob extends Omit<StepJob, 'kind'> {
  kind: 'slice';
  part: number;
}

/** The end of a shared step once its parts are committed: the attempt of each part and the
 *  proof files it wrote (BandStepper.runFinish). */
export interface FinishJob extends Omit<StepJob, 'kind'> {
  kind: 'finish';
  slices: Array<{ attempt: string; proofs: number }>;
}

export type ClusterJob = StepJob | SliceJob | FinishJob;

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
  kind: ClusterJob['kind'];
  job: ClusterJob;
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

const STEP_FIELDS = ['kind', 'store', 'board', 'pieces', 'rules', 'pass', 'round', 'band', 'generation'];
const FIELDS: Record<ClusterJob['kind'], string[]> = { step: STEP_FIELDS, slice: [...STEP_FIELDS, 'part'], finish: [...STEP_FIELDS, 'slices'] };
/** The most proof files a part of a shared step may write: one per slice of a unit, and more. */
const MAX_PROOF_FILES = 2 ** 32;

/**
 * The job in `data`, checked against the store's manifest: exactly the fields of its kind, this
 * store's id, variant and rules, a band of this store in its round of the store's schedule, a
 * part or parts of a shared step only where the schedule shares its pass-1 steps, and (where the
 * queue's id is given) the id that payload gets. Anything else is a JobRefused naming the problem.
 */
export function parseJob(data: unknown, manifest: Manifest, id?: string): ClusterJob {
  if (data === null || typeof data !== 'object' || Array.isArray(data)) throw new JobRefused('the payload is not an object');
  const d = data as Record<string, unknown>;
  if (d.kind !== 'step' && d.kind !== 'slice' && d.kind !== 'finish') throw new JobRefused(`unknown job kind ${JSON.stringify(d.kind)}`);
  const kind = d.kind;
  const extra = Object.keys(d).filter((k) => !FIELDS[kind].includes(k));
  if (extra.length > 0) throw new JobRefused(`unexpected field(s) ${extra.join(', ')} in a ${kind} job`);
  if (d.store !== manifest.id) throw new JobRefused(`the job is for store ${JSON.stringify(d.store)}, this worker's store is ${manifest.id}`);
  if (d.board !== manifest.board || d.pieces !== manifest.pieces || d.rules !== manifest.rules) {
    throw new JobRefused(
      `the job is for ${String(d.board)}x${String(d.board)}/${String(d.pieces)} (${String(d.rules)}), the store holds ${manifest.board}x${manifest.board}/${manifest.pieces} (${manifest.rules})`,
    );
  }
  const bands = manifest.bands;
  if (!bands) throw new JobRefused(`the store is not being solved by band passes (stage ${manifest.stage})`);
  const count = (name: string, value: unknown, below = Number.MAX_SAFE_INTEGER + 1) => {
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0 || value >= below) throw new JobRefused(`${name} must be a whole number from 0 to ${below - 1} (got ${JSON.stringify(value)})`);
    return value;
  };
  const band = count('band', d.band);
  if (band >= bands.count) throw new JobRefused(`band ${band} is not a band of this store (it has ${bands.count})`);
  const round = count('round', d.round);
  const pass = count('pass', d.pass);
  const schedule = scheduleOf(bands);
  const roundOf = roundOfStep(schedule, pass, band);
  if (roundOf !== round) throw new JobRefused(`band ${band} is stepped in round ${roundOf}${pass === 0 ? ' of init' : ''}, not ${round}`);
  const step: StepJob = { kind: 'step', store: manifest.id!, board: manifest.board, pieces: manifest.pieces, rules: manifest.rules, pass, round, band, generation: count('generation', d.generation) };
  const shared = isSharedStep(schedule, step);
  if (kind === 'step' && shared) throw new JobRefused(`band ${band}'s step of pass ${step.pass} is shared by ${schedule.workers} workers: it runs as parts and a finish`);
  if (kind !== 'step' && !shared) throw new JobRefused(`band ${band}'s step of pass ${step.pass} is not shared (schedule ${schedule.kind}, ${schedule.workers} worker(s)): it has no ${kind}`);
  let job: ClusterJob = step;
  if (kind === 'slice') job = { ...step, kind, part: count('part', d.part, schedule.workers) };
  if (kind === 'finish') {
    const slices = d.slices;
    if (!Array.isArray(slices) || slices.length !== schedule.workers) throw new JobRefused(`a finish names the ${schedule.workers} parts of its step (got ${JSON.stringify(slices)?.slice(0, 100)})`);
    job = {
      ...step,
      kind,
      slices: slices.map((s: unknown, part) => {
        const o = s as Record<string, unknown> | null;
        if (o === null || typeof o !== 'object' || Object.keys(o).length !== 2 || !isAttemptToken(o.attempt)) throw new JobRefused(`part ${part} of the finish is not an attempt and its proof files`);
        return { attempt: o.attempt, proofs: count(`part ${part}'s proof files`, o.proofs, MAX_PROOF_FILES) };
      }),
    };
  }
  if (id !== undefined && id !== jobId(job)) throw new JobRefused(`the job's id ${JSON.stringify(id)} is not the id of its payload (${jobId(job)})`);
  return job;
}

/** The job's id on the queue: one per store, step, generation and part (or finish), so that
 *  adding it again (a coordinator resumed) finds the job there instead of running it twice. */
export function jobId(job: ClusterJob): string {
  const base = `${job.store}-p${job.pass}-r${job.round}-g${job.generation}-b${job.band}`;
  return job.kind === 'slice' ? `${base}-s${job.part}` : job.kind === 'finish' ? `${base}-f` : base;
}

/** Whether two jobs are the same work (a payload found in Redis, a job a result names). */
export function sameJob(a: ClusterJob, b: unknown): boolean {
  if (b === null || typeof b !== 'object') return false;
  const o = b as Record<string, unknown>;
  const fields = FIELDS[a.kind];
  return fields.every((k) => JSON.stringify(o[k]) === JSON.stringify((a as unknown as Record<string, unknown>)[k])) && Object.keys(o).length === fields.length;
}
