/**
 * Revisits (REVISIT_LAG in core's state-space.ts): a pass visits a state its first visit left
 * unknown once more REVISIT_LAG units later. Checked here: they prove states the first visits
 * could not; a worker that takes one unit at a time (keepWaiting, then revisitWaiting) writes the
 * same table as one call over the units; every backend's pass writes the same table.
 */
import { StateSpace, TsSolverKernel, addKernelStats, emptyKernelStats, variant } from '@ccheckers/core';
import { describe, expect, it } from 'vitest';
import { availableBackends } from '../src/index.js';
import { provenStates } from '../src/state-index.js';

const backends = await availableBackends();

describe.each([[4, 4, 3]])('revisits in the first pass, %ix%i with %i pieces', (board, _board, pieces) => {
  const v = variant(board, pieces);
  const space = new StateSpace(v);
  const kernel = new TsSolverKernel(v, 'clean', space);
  const units = kernel.passUnits;
  const initTable = new Uint8Array(Math.ceil(space.states / 4));
  kernel.init(initTable, 0, space.groups);

  // Pass 1 in one call: each waiting state is visited again REVISIT_LAG units later.
  const whole = initTable.slice();
  const wholeStats = kernel.pass(whole, 0, units);

  it('prove states the first visits could not (a revisit right after its own unit proves fewer)', () => {
    const own = initTable.slice();
    for (let u = 0; u < units; u++) kernel.pass(own, u, u + 1); // waiting states revisited at the end of each call
    expect(provenStates(whole, space.states)).toBeGreaterThan(provenStates(own, space.states));
  });

  it('a worker taking one unit at a time (keepWaiting, then revisitWaiting) writes the same table', () => {
    const table = initTable.slice();
    const stats = emptyKernelStats();
    for (let u = 0; u < units; u++) addKernelStats(stats, kernel.pass(table, u, u + 1, { keepWaiting: true }));
    addKernelStats(stats, kernel.revisitWaiting(table));
    // Equal only if the waiting states carried over: revisited at the end of each call, fewer are proven (above).
    expect(Buffer.compare(table, whole)).toBe(0);
    expect(stats).toEqual(wholeStats);
  });

  it(`every backend's single-threaded pass writes the same table (${backends.map((b) => b.name).join(', ')})`, () => {
    for (const backend of backends) {
      const table = initTable.slice();
      const stats = backend.solverKernel(v, 'clean').pass(table, 0, units);
      expect(Buffer.compare(table, whole), backend.name).toBe(0);
      expect(stats, backend.name).toEqual(wholeStats);
    }
  });
});
