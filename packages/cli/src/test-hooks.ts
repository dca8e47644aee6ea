/**
 * Faults the tests inject, set by their harness (test/support/hooked-bin.mjs) around main(); the
 * shipped program (bin.ts) passes none, and no environment variable reaches them.
 */
export interface TestHooks {
  /** Called after each checkpoint of a solve is on disk (e.g. SIGKILL mid-solve): passes
   *  finished, and for a checkpoint inside a pass, which and how far; for one of the distances,
   *  the layer a resume goes on with. */
  onCheckpoint?: (passes: number, inPass?: { pass: number; unitsDone: number; units: number }, distanceLayer?: number) => void;
  /** Called after each save of a sharded store (e.g. SIGKILL mid-pass). */
  onStoreSave?: (passes: number) => void;
  /** verify: this backend answers one operation wrongly, so that verify must fail. */
  corruptBackend?: string;
  /** A cluster coordinator: called before and after each write of the store's manifest. */
  beforeClusterCommit?: (passes: number) => void;
  onClusterCommit?: (passes: number) => void;
  /** A cluster worker: called when a job starts, before any work, and when its files are written. */
  onJobStart?: (job: unknown) => void;
  onJobWorked?: (job: unknown) => void;
}
