/**
 * The pass log: one record per pass of a solve, as a database file and a store's manifest keep
 * it, and the checks a log read from a file must pass (its checksum proves only that it is what
 * was written).
 */

/** One line of the per-pass log. */
export interface PassRecord {
  pass: number;
  /** Stored states decided (won, lost or illegal) after this pass, and newly proven in this pass. */
  proven: number;
  newlyProven: number;
  seconds: number;
  /** Whether the pass visited only unknown states, group by group. */
  sparse?: boolean;
  /** Whether it visited only the states unknown at its start, listed by pass unit, in pass 1's
   *  order (a listed pass; `sparse` false). */
  listed?: boolean;
  /** A sharded solve: bytes of shards read and written. */
  bytesRead?: number;
  bytesWritten?: number;
  /** A band solve: messages written (see store/band-solve.ts). */
  messages?: number;
  /** Only in a checkpoint written inside a pass (solve.ts), as the last record of its log: the
   *  pass is unfinished, the first `unitsDone` units of its sweep done (in the order it visits
   *  them); its other fields count that part. The header's `passes` counts finished passes. */
  unitsDone?: number;
}

/**
 * Whether the passes of a solve are over: they end with one that proves nothing, and nothing but
 * the distances comes after it. (A log whose last record is an unfinished pass is not.)
 */
export function passesDone(log: readonly PassRecord[]): boolean {
  const last = log[log.length - 1];
  return last !== undefined && last.unitsDone === undefined && last.newlyProven === 0;
}

/** A count a file records (states, passes, bytes): a whole number, not negative. */
export function isCount(x: unknown): x is number {
  return Number.isSafeInteger(x) && (x as number) >= 0;
}

/** Seconds a file records: a finite number, not negative. */
export function isSeconds(x: unknown): x is number {
  return typeof x === 'number' && Number.isFinite(x) && x >= 0;
}

/**
 * What is wrong with a pass log read from a file (a database's or a store manifest's), or
 * undefined: a list of records whose fields are counts and seconds (non-negative numbers; the
 * counts whole), `sparse` and `listed` booleans, not both true. Other numeric fields (a cluster's jobs and Redis commands)
 * are kept, and checked the same.
 */
export function passLogProblem(log: unknown): string | undefined {
  if (!Array.isArray(log)) return 'not a list of passes';
  for (const [i, record] of log.entries()) {
    if (record === null || typeof record !== 'object' || Array.isArray(record)) return `pass record ${i} is not an object`;
    for (const field of ['pass', 'proven', 'newlyProven', 'seconds']) {
      if (!(field in record)) return `pass record ${i} has no ${field}`;
    }
    for (const [field, value] of Object.entries(record as Record<string, unknown>)) {
      if (field === 'sparse' || field === 'listed') {
        if (typeof value !== 'boolean') return `pass record ${i}: ${field} is ${JSON.stringify(value)}`;
      } else if (field === 'seconds' ? !isSeconds(value) : !isCount(value)) {
        return `pass record ${i}: ${field} is ${JSON.stringify(value)}`;
      }
    }
  }
  for (const [i, record] of log.entries()) {
    if (record.sparse === true && record.listed === true) return `pass record ${i} is both sparse and listed`;
  }
  return undefined;
}
