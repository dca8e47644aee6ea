/**
 * How an in-memory solve sweeps its table: the chunks a phase is cut into (one kernel call each;
 * checkpoints and progress fall between them), where a pass resumed inside goes on, which passes
 * visit only the unknown states, and the check that no legal state is without a move. The store
 * solves cut their steps the same way (store/band-step.ts).
 */
import { CCheckersError, type KernelStats, type Variant } from '@ccheckers/core';
import type { PassRecord } from './pass-log.js';
import type { ChunkRunner, Phase } from './worker-pool.js';

/** Kernel calls a phase is cut into at least (checkpoints and progress fall between them). */
export const CHUNKS_PER_PHASE = 128;
// Sparse passes (unknown states only, found by scanning the table) once the last pass proved
// under 2% of the states or under 10% are still unknown: then a full sweep mostly re-reads
// decided states.
const SPARSE_WHEN_PROVEN_BELOW = 0.02;
const SPARSE_WHEN_UNKNOWN_BELOW = 0.1;

/** Whether the next pass visits only unknown states (see SPARSE_WHEN_PROVEN_BELOW). */
export function nextPassIsSparse(last: PassRecord | undefined, proven: number, states: number): boolean {
  return last !== undefined && (last.newlyProven < SPARSE_WHEN_PROVEN_BELOW * states || states - proven < SPARSE_WHEN_UNKNOWN_BELOW * states);
}

/** How a pass sweeps: every state of pass 1's units (full), the states unknown at its start in
 *  the same order (listed: SolverKernel.listUnknown and listedPass), or the unknown states group
 *  by group (sparse). */
export type PassKind = 'full' | 'listed' | 'sparse';

/** The kind of sweep a pass record says its pass was. */
export function kindOf(record: PassRecord): PassKind {
  return record.listed === true ? 'listed' : record.sparse === true ? 'sparse' : 'full';
}

/** The next pass after `log`: full while full passes pay, then the first of the others listed
 *  (the children in cache, as in pass 1; never beside the memo of the sparse passes after it),
 *  then sparse ones. A solve runs a sparse pass where it cannot list (solve.ts). */
export function nextPassKind(log: readonly PassRecord[], proven: number, states: number): PassKind {
  if (!nextPassIsSparse(log[log.length - 1], proven, states)) return 'full';
  return log.every((r) => kindOf(r) === 'full') ? 'listed' : 'sparse';
}

/** docs/rules.md section 5: a legal, non-terminal position without any move must not be scored silently. */
export function checkMoveless(moveless: number, v: Variant): void {
  if (moveless > 0) {
    throw new CCheckersError('E_RULES', `${moveless} legal non-terminal states of ${v.name} have no move at all (docs/rules.md section 5)`);
  }
}

/** Kernel calls in this process, one chunk at a time. */
export function inProcessRunner(run: (phase: Phase, from: number, to: number, depth?: number) => KernelStats): ChunkRunner {
  return {
    async run(phase, chunks, onChunk, depth) {
      for (const [from, to] of chunks) {
        onChunk(run(phase, from, to, depth));
        await new Promise((resolve) => setImmediate(resolve)); // let signals (SIGINT) in between chunks
      }
    },
    async close() {},
  };
}

/**
 * `chunks` (in the order a sweep visits them, each [from, to) visited descending when `down`)
 * without the sweep's first `skip` units: a pass resumed inside.
 */
export function unitsAfter(chunks: Array<[number, number]>, skip: number, down: boolean): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  for (const [from, to] of chunks) {
    const left = Math.max(0, Math.min(to - from, skip));
    skip -= left;
    if (left < to - from) out.push(down ? [from, to - left] : [from + left, to]);
  }
  return out;
}

/** [0, total) in `pieces` ranges of about the same size, ascending. */
export function chunkRanges(total: number, pieces: number): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  const size = Math.max(1, Math.ceil(total / pieces));
  for (let from = 0; from < total; from += size) out.push([from, Math.min(total, from + size)]);
  return out;
}
