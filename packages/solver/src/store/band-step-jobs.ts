/**
 * What a band step is asked to do and what it reports (band-step.ts runs it; the local solve,
 * band-solve.ts, and a cluster's jobs, cluster/jobs.ts, make and check them).
 */
import type { BandStepFiles } from './manifest.js';

/** A step: band `band` in round `round` of pass `pass` (0: init), on the store as committed at
 *  `generation` (its band file and inbox are the manifest's then). */
export interface BandStepJob {
  pass: number;
  round: number;
  band: number;
  generation: number;
}

/** Worker `part`'s share of a shared step (schedule 'shared', pass 1): BandStepper.runSlice. */
export interface SliceStepJob extends BandStepJob {
  part: number;
}

/** The end of a shared step, once its parts are done: the committed attempt of each part and
 *  the proof files it wrote (BandStepper.runFinish). */
export interface FinishStepJob extends BandStepJob {
  slices: Array<{ attempt: string; proofs: number }>;
}

/** What a step did, besides the files it wrote. */
export interface BandStepOutcome extends BandStepFiles {
  pass: number;
  /** States the band took (its own proofs and the values applied; init: decided). */
  changed: number;
  /** Value messages sent, and messages written in all. */
  sentValues: number;
  messagesWritten: number;
  /** Legal non-terminal states without a move (must be 0: checkMoveless). */
  moveless: number;
  bytesRead: number;
  bytesWritten: number;
  seconds: number;
}

/** What a part of a shared step did: the slices of units it visited (slice-claims.ts), its proof
 *  files, the bytes in them, the attempts whose proofs it took (proof-exchange.ts: the step
 *  stands only if they are all committed), and the seconds it waited for other parts' proofs
 *  (others-progress.ts). */
export interface SliceOutcome extends BandStepOutcome {
  part: number;
  slices: number;
  proofs: number;
  proofBytes: number;
  took: string[];
  waited: number;
}

export interface BandStepHooks {
  /** Before each kernel call (after the event loop ran): throw to stop the step. */
  beforeCall?: () => void;
  /** The share of the step done, 0 to 1. */
  onProgress?: (fraction: number) => void;
}
