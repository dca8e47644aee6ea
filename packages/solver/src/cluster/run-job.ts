/**
 * What a worker does with one job (jobs.ts), on the store folder it was started with: the band
 * step of store/band-step.ts, as a local solve runs it. No Redis here, so the tests can run jobs
 * in one process.
 *
 * A job never blocks the event loop for long: BullMQ renews the job's lock from a timer on it,
 * and a lock that runs out hands the job to another worker while this one still works on it. The
 * step yields before each kernel call, its calls are short (kernel-calls.ts, UNITS_CALL_SECONDS;
 * callSeconds), and it writes its band file asynchronously.
 */
import type { Backend, StateSpace } from '@ccheckers/core';
import { checkMemory, formatBytes } from '../memory.js';
import { type BandPlan, planBands, workerBytes } from '../store/band-layout.js';
import { sharedParts } from '../store/band-schedule.js';
import type { Manifest } from '../store/manifest.js';
import { storeBandLayout } from '../store/band-solve.js';
import { BandStepper } from '../store/band-step.js';
import { ShardStore } from '../store/shard-store.js';
import { type ClusterJob, JobDeferred, JobRefused, type JobResult, parseJob } from './jobs.js';

export interface JobContext {
  /** The worker's --store folder. */
  dir: string;
  backend: Backend;
  threads: number;
  /** The worker's --memory: a job that would need more is deferred to another worker. */
  memoryLimit?: number;
  /** Seconds a UNITS kernel call aims at (kernel-calls.ts; the worker's lock is renewed between). */
  callSeconds?: number;
}

/** What a worker holds for the steps of a store of `bands` bands (its manifest's `bands`): a band
 *  buffer (two for a part of a shared step: its copy, and the copy as published), the messages,
 *  the group maps and scratch. */
export function stepMemory(space: StateSpace, bands: number, state: Pick<NonNullable<Manifest['bands']>, 'schedule' | 'workers' | 'messageBytes'>): { need: number; plan: BandPlan } {
  const plan = planBands(space, { bands, kernelCopies: 1, storeBands: true });
  return { need: workerBytes({ ...plan, messageBytes: state.messageBytes }, sharedParts(state) > 1 ? 2 : 1), plan };
}

/** Runs jobs for one worker: keeps the stepper (kernel, buffers) of its store between jobs. */
export class JobRunner {
  private stepper: BandStepper | undefined;
  private stepperOf = '';

  constructor(private readonly context: JobContext) {}

  /**
   * Checks the payload (and its queue id, where given) against the store and runs it.
   * JobRefused: a payload no worker may run; JobDeferred: one this worker cannot run now (the
   * store's manifest is not at the job's generation yet, too little memory here).
   */
  async run(data: unknown, id?: string): Promise<{ job: ClusterJob; result: JobResult }> {
    const started = performance.now();
    const store = ShardStore.open(this.context.dir);
    const job = parseJob(data, store.manifest, id);
    const m = store.manifest;
    const next = m.bands!.next;
    if (job.generation > m.generation) throw new JobDeferred(`the job is for generation ${job.generation}; ${this.context.dir} is at generation ${m.generation} (its manifest not seen yet?)`);
    if (job.generation < m.generation || job.pass !== next.pass || job.round !== next.round) {
      throw new JobRefused(`the job is for pass ${job.pass}, round ${job.round} on generation ${job.generation}; the store is at pass ${next.pass}, round ${next.round}, generation ${m.generation}`);
    }
    const stepper = this.stepperFor(store);
    const outcome = job.kind === 'slice' ? await stepper.runSlice(store, job) : job.kind === 'finish' ? await stepper.runFinish(store, job) : await stepper.run(store, job);
    const seconds = (performance.now() - started) / 1000;
    const { backend, threads } = this.context;
    return { job, result: { kind: job.kind, job, outcome, backend: backend.name, threads, seconds, bytesRead: outcome.bytesRead, bytesWritten: outcome.bytesWritten } };
  }

  async close(): Promise<void> {
    this.stepper = undefined;
  }

  private stepperFor(store: ShardStore): BandStepper {
    const m = store.manifest;
    const key = `${m.id}`;
    if (this.stepper && key === this.stepperOf) return this.stepper;
    const { backend, threads, memoryLimit } = this.context;
    const { need, plan } = stepMemory(store.space, store.pieces, m.bands!);
    if (memoryLimit !== undefined && need > memoryLimit) {
      throw new JobDeferred(
        `this worker's --memory ${formatBytes(memoryLimit)} is too small for the steps of ${store.dir}: ${sharedParts(m.bands!) > 1 ? 'two copies of ' : ''}a band of up to ${formatBytes(plan.bandBytes)}, ` +
          `${formatBytes(m.bands!.messageBytes)} of messages and ${formatBytes(plan.overheadBytes)} of group maps and scratch, ${formatBytes(need)} (give the workers more --memory${m.bands!.messageBytes + plan.overheadBytes < memoryLimit ? ', or solve with more --shards' : ': more --shards would not help, the messages and maps alone need more'})`,
      );
    }
    checkMemory(need);
    this.stepper = undefined; // the old one's buffers go before the new ones come
    this.stepper = new BandStepper({
      backend,
      variant: store.space.variant,
      rules: m.rules,
      threads: backend.kernelThreads ? Math.max(1, Math.floor(threads)) : 1,
      space: store.space,
      layout: storeBandLayout(store),
      schedule: store.schedule,
      bandBufferBytes: plan.bandBytes,
      messageBytes: m.bands!.messageBytes,
      ...(this.context.callSeconds !== undefined ? { callSeconds: this.context.callSeconds } : {}),
    });
    this.stepperOf = key;
    return this.stepper;
  }
}
