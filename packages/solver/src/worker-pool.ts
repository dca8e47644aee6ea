/**
 * Parallel passes for backends without their own threads (the TS backend): worker_threads over a
 * SharedArrayBuffer table, working the way the native kernel's threads do. Every chunk is worked
 * on by all workers together, each taking the next unit (group or P2 placement) from a shared
 * atomic counter, so units are done nearly in order. That matters: the proof order makes a pass
 * prove most states only if a unit comes after the ones it depends on (handing whole chunks to
 * workers side by side proved 3% of 7x7/3 in the first pass instead of 85%). Values only change
 * from UNKNOWN by atomic OR, so any interleaving reaches the same final table.
 */
import { Worker } from 'node:worker_threads';
import { type KernelStats, type RuleMode, type SolverKernel, type SparseMemoKey, TableBytes, type TableLike, addKernelStats, emptyKernelStats } from '@ccheckers/core';

/** Solver phases; the distance ones work on groups, like init and sparse. 'sparse-down' is a
 *  sparse pass from the last group down: the solver alternates directions. */
export type Phase = 'init' | 'pass' | 'listed' | 'sparse' | 'sparse-down' | 'distance-init' | 'distance';

/** The tables of a kernel call. */
export interface PhaseTables {
  table: TableLike;
  distances?: TableLike | undefined;
}

/** One kernel call of `phase` over units [from, to): the in-process runner and the workers share
 *  it. `memo`: the solve's key for its sparse passes (SparsePassOptions.memo). */
export function runPhase(kernel: SolverKernel, phase: Phase, tables: PhaseTables, from: number, to: number, depth = 0, threads?: number, memo?: SparseMemoKey): KernelStats {
  const { table, distances } = tables;
  switch (phase) {
    case 'init':
      return kernel.init(table, from, to, threads);
    case 'pass':
      return kernel.pass(table, from, to, { threads });
    case 'listed': // in this process only: the lists are the kernel's (listUnknown)
      if (!kernel.listedPass) throw new Error('a listed pass on a kernel without lists');
      return kernel.listedPass(table, from, to, { threads });
    case 'sparse':
      return kernel.sparsePass(table, from, to, { threads, ...(memo ? { memo } : {}) });
    case 'sparse-down':
      return kernel.sparsePass(table, from, to, { threads, descending: true, ...(memo ? { memo } : {}) });
    case 'distance-init':
      return kernel.distanceInit(table, distances!, from, to, threads);
    case 'distance':
      return kernel.distanceLayer(table, distances!, depth, from, to, threads);
  }
}

export interface ChunkRunner {
  run(phase: Phase, chunks: Array<[number, number]>, onChunk: (stats: KernelStats) => void, depth?: number): Promise<void>;
  close(): Promise<void>;
}

export interface WorkerData {
  board: number;
  pieces: number;
  rules: RuleMode;
  /** The table's views (TableBytes on a SharedArrayBuffer: a class does not cross to a worker). */
  table: readonly Uint8Array[];
  /** The distance table's (one byte per stored state) when the solve computes distances. */
  distances?: readonly Uint8Array[];
  /** Int32Array over a SharedArrayBuffer: [0] is the next unit of the current chunk. */
  counter: Int32Array;
}

export interface ChunkRequest {
  phase: Phase;
  range: [number, number];
  /** The distance layer (phase 'distance'). */
  depth?: number;
}

/** The worker script sits next to this module in dist/ (tests running from src/ use the built one). */
function workerUrl(): URL {
  const here = import.meta.url;
  return new URL(here.endsWith('.ts') ? '../dist/kernel-worker.js' : './kernel-worker.js', here);
}

export function createWorkerPool(threads: number, tables: { board: number; pieces: number; rules: RuleMode } & PhaseTables): ChunkRunner {
  const counter = new Int32Array(new SharedArrayBuffer(4));
  const { table, distances, ...variant } = tables;
  const data: WorkerData = { ...variant, table: TableBytes.of(table).views, ...(distances ? { distances: TableBytes.of(distances).views } : {}), counter };
  const workers = Array.from({ length: threads }, () => new Worker(workerUrl(), { workerData: data }));
  let failure: Error | undefined;
  const pending = new Set<(e: Error) => void>();
  for (const w of workers) {
    w.on('error', (e) => {
      failure = e;
      for (const reject of pending) reject(e);
    });
  }
  /** Sends the chunk to every worker and sums their stats. */
  const together = (request: ChunkRequest): Promise<KernelStats> =>
    new Promise((resolve, reject) => {
      if (failure) return reject(failure);
      Atomics.store(counter, 0, request.range[0]);
      const sum = emptyKernelStats();
      let waiting = workers.length;
      pending.add(reject);
      for (const w of workers) {
        w.once('message', (stats: KernelStats) => {
          addKernelStats(sum, stats);
          if (--waiting === 0) {
            pending.delete(reject);
            resolve(sum);
          }
        });
        w.postMessage(request);
      }
    });
  return {
    async run(phase, chunks, onChunk, depth) {
      for (const range of chunks) onChunk(await together({ phase, range, ...(depth !== undefined ? { depth } : {}) }));
    },
    async close() {
      await Promise.all(workers.map((w) => w.terminate()));
    },
  };
}
