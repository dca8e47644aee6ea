/**
 * Listed passes (SolverKernel.listUnknown and listedPass; native-src kernel/unknown_lists.inl): the
 * states a table leaves unknown, listed by pass unit, then visited unit by unit in pass 1's order.
 * A listed pass is a full pass that skips the states known when the lists were made: on every
 * backend, pass by pass, the same stats and table as the TS kernel's full passes (on one thread),
 * with lists made before each pass or once for all; within a budget, or not at all; and a solve
 * runs one as its pass 2 where the lists fit, a sparse one where they do not, to the same table.
 */
import { type KernelStats, type SolverKernel, StateSpace, UNKNOWN, variant } from '@ccheckers/core';
import { describe, expect, it } from 'vitest';
import { availableBackends, requiredBytes, solve, storedCounts } from '../src/index.js';
import { afterPass1 as afterPass1Of, untilNothingProven } from './late-passes.js';

const backends = (await availableBackends()).filter((b) => b.solverKernel(variant(7, 1), 'clean').listUnknown !== undefined);

/** Passes after pass 1 until one proves nothing: full passes, or listed ones (lists made before
 *  each, or `once` after pass 1). */
function laterPasses(kernel: SolverKernel, table: Uint8Array, listed: 'no' | 'each' | 'once', threads = 1): KernelStats[] {
  if (listed === 'once') kernel.listUnknown!(table, { threads, budget: 2 ** 40 });
  const passes = untilNothingProven(() => {
    if (listed === 'each') kernel.listUnknown!(table, { threads, budget: 2 ** 40 });
    return listed === 'no' ? kernel.pass(table, 0, kernel.passUnits, { threads }) : kernel.listedPass!(table, 0, kernel.passUnits, { threads });
  });
  kernel.releaseUnknownLists?.();
  return passes;
}

describe.each([
  [4, 6],
  [7, 2],
])('listed passes, board %i with %i pieces', (board, pieces) => {
  const v = variant(board, pieces);
  const { space, ts, table: afterPass1 } = afterPass1Of(v);
  const full = afterPass1.slice();
  const fullPasses = laterPasses(ts, full, 'no');

  it('takes passes after pass 1 that prove states (else there is nothing to compare)', () => {
    expect(fullPasses.length).toBeGreaterThanOrEqual(2);
    expect(fullPasses[0]!.wins + fullPasses[0]!.losses).toBeGreaterThan(100);
  });

  it.each(backends.map((b) => [b.name, b] as const))('%s: the same stats and table as full passes, pass by pass', (_name, backend) => {
    const kernel = backend.solverKernel(v, 'clean');
    for (const listed of ['each', 'once'] as const) {
      const table = afterPass1.slice();
      expect(laterPasses(kernel, table, listed), listed).toEqual(fullPasses);
      expect(Buffer.compare(table, full), listed).toBe(0);
    }
  });

  it.each(backends.map((b) => [b.name, b] as const))('%s: lists within a budget, of every unknown state, kept until released', (_name, backend) => {
    const kernel = backend.solverKernel(v, 'clean');
    const table = afterPass1.slice();
    const states = storedCounts(table, space.states)[UNKNOWN]!;
    const bytes = states * 4 + (space.p1Placements + 1) * 8;
    expect(kernel.listUnknown!(table, { budget: bytes - 1 })).toEqual({ states, bytes, listed: false });
    expect(() => kernel.listedPass!(table, 0, 1)).toThrow(/whose unknown states were not listed/);
    expect(kernel.listUnknown!(table, { budget: bytes })).toEqual({ states, bytes, listed: true });
    // Lists are a table's: another table (a copy) is refused.
    expect(() => kernel.listedPass!(afterPass1.slice(), 0, 1)).toThrow(/whose unknown states were not listed/);
    expect(kernel.releaseUnknownLists!()).toBeGreaterThanOrEqual(bytes);
    expect(kernel.releaseUnknownLists!()).toBe(0);
    for (const budget of [-1, 1.5, Number.NaN, 2 ** 54]) {
      expect(() => kernel.listUnknown!(table, { budget }), String(budget)).toThrow(/unknown lists budget must be an integer from 0 to 2\^53/);
    }
  });

  it.each(backends.filter((b) => b.kernelThreads).map((b) => [b.name, b] as const))('%s: lists made on 2 threads visit as lists made on 1', (_name, backend) => {
    const kernel = backend.solverKernel(v, 'clean');
    const table = afterPass1.slice();
    kernel.listUnknown!(table, { threads: 2, budget: 2 ** 40 });
    expect(kernel.listedPass!(table, 0, kernel.passUnits)).toEqual(fullPasses[0]);
    expect(laterPasses(kernel, table, 'once')).toEqual(fullPasses.slice(1));
    expect(Buffer.compare(table, full)).toBe(0);
  });
});

describe('a solve and its listed pass', () => {
  it.each(backends.map((b) => [b.name, b] as const))('%s: pass 2 is listed where the lists fit, sparse where not; the same table', async (_name, backend) => {
    const v = variant(7, 2);
    const listed = await solve({ variant: v, rules: 'clean', backend, threads: 1 });
    expect(listed.passLog.map((r) => r.listed === true)).toEqual(listed.passLog.map((r) => r.pass === 2));
    // The memory left for the lists: none past what the solve needs and 256 MiB.
    const space = new StateSpace(v);
    const tight = await solve({ variant: v, rules: 'clean', backend, threads: 1, memoryLimit: requiredBytes(space, 1) + 256 * 2 ** 20 + 1000 });
    expect(tight.passLog.some((r) => r.listed)).toBe(false);
    expect(tight.passLog[1]!.sparse).toBe(true);
    expect(tight.tableCrc32).toBe(listed.tableCrc32);
    expect(tight.p1Wins).toBe(listed.p1Wins);
  });
});
