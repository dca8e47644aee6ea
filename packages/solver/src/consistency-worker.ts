/**
 * A worker of the full consistency check (consistency.ts): checks the child groups of each step
 * it is sent, taking them one at a time from the counter it shares with the other workers, and
 * answers with its counts and its mismatches of lowest index.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { StateSpace, variant } from '@ccheckers/core';
import { type ConsistencyStep, type ConsistencyWorkerData, type ConsistencyWorkerResult, GroupChecker } from './consistency/group-checker.js';

const data = workerData as ConsistencyWorkerData;
const checker = new GroupChecker(new StateSpace(variant(data.board, data.pieces)), data.rules, data.limit);

parentPort!.on('message', (step: ConsistencyStep) => {
  checker.reset(); // the answer holds this step's counts and mismatches
  for (let h; (h = Atomics.add(data.counter, 0, 1)) < step.childTo; ) {
    checker.checkChildGroup(h, step);
    Atomics.add(data.counter, 1, 1);
  }
  const result: ConsistencyWorkerResult = { counts: checker.counts, checked: checker.checked, total: checker.mismatches.total, first: checker.mismatches.first };
  parentPort!.postMessage(result);
});
