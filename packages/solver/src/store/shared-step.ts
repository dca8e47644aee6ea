/**
 * A shared step run in one process (the local band solve, band-solve.ts): its W parts at once,
 * each on a stepper of its own, then the finish on the first. A cluster runs the same parts and
 * finish as jobs on its workers (cluster/coordinator.ts).
 */
import { DatabaseError } from '../database.js';
import type { BandStepper } from './band-step.js';
import type { BandStepHooks, BandStepJob, BandStepOutcome, SliceOutcome } from './band-step-jobs.js';
import { partsTookOnlyFromEachOther, removeProofFiles } from './proof-exchange.js';
import type { ShardStore } from './shard-store.js';
import { StepClaims } from './slice-claims.js';

/** Times a shared step's parts run again after taking proofs of attempts not theirs before the
 *  solve gives up (something else keeps writing proof files into the store). */
const MAX_FOREIGN_PROOF_RETRIES = 3;

/**
 * A shared step run here: its W parts at once in this process, each on a stepper of its own
 * (they take turns at every kernel call, claim slices in memory, and exchange proofs through the
 * store's folder as a cluster's workers do), then the finish on the first. The outcomes to
 * commit: the parts', then the finish's.
 */
export async function runSharedStep(store: ShardStore, job: BandStepJob, steppers: BandStepper[], hooks: BandStepHooks): Promise<BandStepOutcome[]> {
  const started = performance.now();
  let slices = await runParts(store, job, steppers, hooks);
  // Parts that took proofs of an attempt other than theirs (a proof file left in the folder by a
  // cluster worker still running a part of this step, or by any other process) may have taken
  // wins that no committed attempt proved (proof-exchange.ts): all run again, from no proof files,
  // as a cluster's coordinator does.
  for (let retry = 0; !partsTookOnlyFromEachOther(slices); retry++) {
    if (retry === MAX_FOREIGN_PROOF_RETRIES) {
      throw new DatabaseError(
        store.dir,
        `band ${job.band}'s shared step found proof files of attempts not its own ${retry + 1} times: is a cluster worker or another solve still writing to this store? Stop it, then solve --resume`,
      );
    }
    removeProofFiles(store.dir, job.band, job.generation);
    slices = await runParts(store, job, steppers, hooks);
  }
  const finish = await steppers[0]!.runFinish(store, { ...job, slices: slices.map((s) => ({ attempt: s.attempt, proofs: s.proofs })) }, {
    ...(hooks.beforeCall ? { beforeCall: hooks.beforeCall } : {}),
    onProgress: (f) => hooks.onProgress?.(0.9 + 0.1 * f),
  });
  // A round takes as long as its slowest step: the shared step's time is the finish's.
  finish.seconds = (performance.now() - started) / 1000;
  return [...slices, finish];
}

/** The W parts of a shared step, at once. */
async function runParts(store: ShardStore, job: BandStepJob, steppers: BandStepper[], hooks: BandStepHooks): Promise<SliceOutcome[]> {
  const done = new Array<number>(steppers.length).fill(0);
  const progress = () => hooks.onProgress?.((0.9 * done.reduce((a, b) => a + b, 0)) / steppers.length);
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
  return settled.map((r) => (r as PromiseFulfilledResult<SliceOutcome>).value);
}
