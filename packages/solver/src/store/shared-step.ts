/**
 * A shared step run in one process (the local band solve, band-solve.ts): its W parts at once,
 * each on a stepper of its own, then the finish on the first. A cluster runs the same parts and
 * finish as jobs on its workers (cluster/coordinator.ts).
 */
import type { BandStepper } from './band-step.js';
import type { BandStepHooks, BandStepJob, BandStepOutcome, SliceOutcome } from './band-step-jobs.js';
import type { ShardStore } from './shard-store.js';
import { StepClaims } from './slice-claims.js';

/**
 * A shared step run here: its W parts at once in this process, each on a stepper of its own
 * (they take turns at every kernel call, claim slices in memory, and exchange proofs through the
 * store's folder as a cluster's workers do), then the finish on the first. The outcomes to
 * commit: the parts', then the finish's.
 */
export async function runSharedStep(store: ShardStore, job: BandStepJob, steppers: BandStepper[], hooks: BandStepHooks): Promise<BandStepOutcome[]> {
  const done = new Array<number>(steppers.length).fill(0);
  const progress = () => hooks.onProgress?.((0.9 * done.reduce((a, b) => a + b, 0)) / steppers.length);
  const started = performance.now();
  const claims = new StepClaims();
  const settled = await Promise.allSettled(
    steppers.map((stepper, part) =>
      stepper.runSlice(
        store,
        { ...job, part },
        {
          ...(hooks.beforeCall ? { beforeCall: hooks.beforeCall } : {}),
          onProgress: (f) => {
            done[part] = f;
            progress();
          },
        },
        (attempt, slices) => claims.part(part, attempt, slices),
      ),
    ),
  );
  // All settled first: a part that failed does not leave the others running behind the solve.
  const failed = settled.find((r) => r.status === 'rejected');
  if (failed) throw (failed as PromiseRejectedResult).reason;
  const slices = settled.map((r) => (r as PromiseFulfilledResult<SliceOutcome>).value);
  const finish = await steppers[0]!.runFinish(store, { ...job, slices: slices.map((s) => ({ attempt: s.attempt, proofs: s.proofs })) }, {
    ...(hooks.beforeCall ? { beforeCall: hooks.beforeCall } : {}),
    onProgress: (f) => hooks.onProgress?.(0.9 + 0.1 * f),
  });
  // A round takes as long as its slowest step: the shared step's time is the finish's.
  finish.seconds = (performance.now() - started) / 1000;
  return [...slices, finish];
}
