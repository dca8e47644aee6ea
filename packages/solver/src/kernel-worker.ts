/**
 * A worker of the pool in worker-pool.ts: runs the TS solver kernel on the units of each chunk it
 * is sent, taking them one at a time from the counter it shares with the other workers.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { type KernelStats, TsSolverKernel, addKernelStats, emptyKernelStats, variant } from '@ccheckers/core';
import type { ChunkRequest, Phase, WorkerData } from './worker-pool.js';

const data = workerData as WorkerData;
const kernel = new TsSolverKernel(variant(data.board, data.pieces), data.rules);

const run = (phase: Phase, unit: number, depth = 0): KernelStats => {
  switch (phase) {
    case 'init':
      return kernel.init(data.table, unit, unit + 1);
    case 'pass':
      return kernel.pass(data.table, unit, unit + 1);
    case 'sparse':
      return kernel.sparsePass(data.table, unit, unit + 1);
    case 'distance-init':
      return kernel.distanceInit(data.table, data.distances!, unit, unit + 1);
    case 'distance':
      return kernel.distanceLayer(data.table, data.distances!, depth, unit, unit + 1);
  }
};

parentPort!.on('message', ({ phase, range, depth }: ChunkRequest) => {
  const stats = emptyKernelStats();
  for (let unit; (unit = Atomics.add(data.counter, 0, 1)) < range[1]; ) addKernelStats(stats, run(phase, unit, depth));
  parentPort!.postMessage(stats);
});
