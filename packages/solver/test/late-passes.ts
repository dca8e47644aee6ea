/**
 * What the tests of the passes after pass 1 share (sparse-memo.test.ts, listed-pass.test.ts): a
 * variant's table after init and pass 1 on the TS kernel, and passes run until one proves nothing.
 */
import { type KernelStats, StateSpace, TsSolverKernel, type Variant } from '@ccheckers/core';

/** The TS kernel of `v` and the table it leaves after init and pass 1. */
export function afterPass1(v: Variant): { space: StateSpace; ts: TsSolverKernel; table: Uint8Array } {
  const space = new StateSpace(v);
  const ts = new TsSolverKernel(v, 'clean', space);
  const table = new Uint8Array(space.tableBytes);
  ts.init(table, 0, space.groups);
  ts.pass(table, 0, ts.passUnits);
  return { space, ts, table };
}

/** pass(2), pass(3), ... until one proves nothing (at most 98): each one's stats. */
export function untilNothingProven(pass: (n: number) => KernelStats): KernelStats[] {
  const passes: KernelStats[] = [];
  for (let n = 2; n < 100; n++) {
    const s = pass(n);
    passes.push(s);
    if (s.wins + s.losses === 0) break;
  }
  return passes;
}
