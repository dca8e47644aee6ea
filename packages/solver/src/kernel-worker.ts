/** A worker of the pool in worker-pool.ts: runs the TS solver kernel on the chunks it is sent. */
import { parentPort, workerData } from 'node:worker_threads';
import { TsSolverKernel, variant } from '@ccheckers/core';
import type { Phase, WorkerData } from './worker-pool.js';

const data = workerData as WorkerData;
const kernel = new TsSolverKernel(variant(data.board, data.pieces), data.rules);

parentPort!.on('message', (msg: { phase: Phase; range: [number, number] }) => {
  const [from, to] = msg.range;
  const stats =
    msg.phase === 'init'
      ? kernel.init(data.table, from, to)
      : msg.phase === 'sparse'
        ? kernel.sparsePass(data.table, from, to)
        : kernel.pass(data.table, from, to);
  parentPort!.postMessage({ stats });
});
