/**
 * A worker of the pool in worker-pool.ts: runs the TS solver kernel on the units of each chunk it
 * is sent, taking them one at a time from the counter it shares with the other workers.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { TableBytes, TsSolverKernel, addKernelStats, emptyKernelStats, variant } from '@ccheckers/core';
import { type ChunkRequest, type WorkerData, runPhase } from './worker-pool.js';

const data = workerData as WorkerData;
const kernel = new TsSolverKernel(variant(data.board, data.pieces), data.rules);
const tables = { table: new TableBytes(data.table), ...(data.distances ? { distances: new TableBytes(data.distances) } : {}) };

parentPort!.on('message', ({ phase, range, depth }: ChunkRequest) => {
  const stats = emptyKernelStats();
  // Passes: the states waiting for their revisit (REVISIT_LAG) carry over from unit to unit and
  // are visited at the end of the chunk, as a native thread does over the units it takes.
  const sparse = phase === 'sparse' || phase === 'sparse-down';
  const revisits = phase === 'pass' || sparse;
  for (let taken; (taken = Atomics.add(data.counter, 0, 1)) < range[1]; ) {
    const unit = phase === 'sparse-down' ? range[0] + range[1] - 1 - taken : taken;
    if (phase === 'pass') addKernelStats(stats, kernel.pass(tables.table, unit, unit + 1, { keepWaiting: true }));
    else if (sparse) addKernelStats(stats, kernel.sparsePass(tables.table, unit, unit + 1, { keepWaiting: true }));
    else addKernelStats(stats, runPhase(kernel, phase, tables, unit, unit + 1, depth));
  }
  if (revisits) addKernelStats(stats, kernel.revisitWaiting(tables.table));
  parentPort!.postMessage(stats);
});
