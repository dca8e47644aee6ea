/**
 * A worker of the pool in worker-pool.ts: runs the TS solver kernel on the units of each chunk it
 * is sent, taking them one at a time from the counter it shares with the other workers.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { TsSolverKernel, addKernelStats, emptyKernelStats, variant } from '@ccheckers/core';
import { type ChunkRequest, type WorkerData, runPhase } from './worker-pool.js';

const data = workerData as WorkerData;
const kernel = new TsSolverKernel(variant(data.board, data.pieces), data.rules);

parentPort!.on('message', ({ phase, range, depth }: ChunkRequest) => {
  const stats = emptyKernelStats();
  for (let taken; (taken = Atomics.add(data.counter, 0, 1)) < range[1]; ) {
    const unit = phase === 'sparse-down' ? range[0] + range[1] - 1 - taken : taken;
    addKernelStats(stats, runPhase(kernel, phase, data, unit, unit + 1, depth));
  }
  parentPort!.postMessage(stats);
});
