/**
 * The sparse passes' memo (SparsePassOptions.memo; native-src kernel/sparse_memo.inl): what a sparse
 * pass leaves unknown, and the child each state waits on, kept for the next pass of the same solve.
 * It may save the next pass work, never change it: pass by pass, on every backend, the same stats
 * and table as the TS kernel's passes without it (on one thread), whatever its budget; a memo
 * kept for another table or solve is not used; it holds at most its budget, nothing once released.
 */
import { type Backend, type KernelStats, type SolverKernel, type SparseMemoKey, type SparsePassOptions, StateSpace, tsBackend, variant } from '@ccheckers/core';
import { describe, expect, it } from 'vitest';
import { availableBackends, solve } from '../src/index.js';
import { afterPass1 as afterPass1Of, untilNothingProven } from './late-passes.js';
import { sparseMemoBudget } from '../src/memory.js';

const backends = (await availableBackends()).filter((b) => b.solverKernel(variant(7, 1), 'clean').releaseSparseMemo !== undefined);

/** Sparse passes, up and down in turn, until one proves nothing: each pass's stats. */
function sparsePasses(kernel: SolverKernel, table: Uint8Array, groups: number, memo?: { token: number; bytes: number }, threads = 1): KernelStats[] {
  return untilNothingProven((pass) => kernel.sparsePass(table, 0, groups, { threads, descending: pass % 2 === 0, ...(memo ? { memo } : {}) }));
}

describe.each([
  [4, 6],
  [7, 2],
])('the sparse memo, board %i with %i pieces', (board, pieces) => {
  const v = variant(board, pieces);
  const { space, ts, table: afterPass1 } = afterPass1Of(v);
  // The passes without a memo, on the TS kernel.
  const plain = afterPass1.slice();
  const plainPasses = sparsePasses(ts, plain, space.groups);

  it('takes several sparse passes (else there is nothing to remember)', () => {
    expect(plainPasses.length).toBeGreaterThanOrEqual(3);
  });

  it.each(backends.map((b) => [b.name, b] as const))('%s: the same stats and table, pass by pass, with any budget', (_name, backend) => {
    const kernel = backend.solverKernel(v, 'clean');
    for (const bytes of [2 ** 40, 0, 12 * 40]) {
      const table = afterPass1.slice();
      const passes = sparsePasses(kernel, table, space.groups, { token: 17 + bytes, bytes });
      expect(passes, `budget ${bytes}`).toEqual(plainPasses);
      expect(Buffer.compare(table, plain), `budget ${bytes}`).toBe(0);
      // Kept until released, within its budget (12-byte entries: the draws and the states waiting on them;
      // no stored state is without moves on a variant ccheckers has, so NO_MOVES entries never arise here).
      const held = kernel.releaseSparseMemo!();
      expect(held, `budget ${bytes}`).toBeLessThanOrEqual(bytes);
      if (bytes === 0) expect(held).toBe(0);
      expect(kernel.releaseSparseMemo!()).toBe(0);
    }
  });

  it.each(backends.map((b) => [b.name, b] as const))('%s: a memo kept for another table or solve is not used', (_name, backend) => {
    const kernel = backend.solverKernel(v, 'clean');
    const first = afterPass1.slice();
    sparsePasses(kernel, first, space.groups, { token: 5, bytes: 2 ** 40 });
    // The same solve's token on another table, then another solve's on the first table's copy:
    // used, the memo (of a finished table) would hide nearly every unknown state.
    const other = afterPass1.slice();
    expect(sparsePasses(kernel, other, space.groups, { token: 5, bytes: 2 ** 40 })).toEqual(plainPasses);
    first.set(afterPass1);
    expect(sparsePasses(kernel, first, space.groups, { token: 6, bytes: 2 ** 40 })).toEqual(plainPasses);
    expect(Buffer.compare(first, plain)).toBe(0);
    // The memo is used: the table put back under the same solve's token and place (what a solve
    // never does) is swept as the memo of its end says, which lists none of the states unknown now.
    first.set(afterPass1);
    expect(sparsePasses(kernel, first, space.groups, { token: 6, bytes: 2 ** 40 })[0]).not.toEqual(plainPasses[0]);
    kernel.releaseSparseMemo!();
  });

  it.each(backends.map((b) => [b.name, b] as const))('%s: on two threads, the same final table', (_name, backend) => {
    const kernel = backend.solverKernel(v, 'clean');
    const table = afterPass1.slice();
    sparsePasses(kernel, table, space.groups, { token: 9, bytes: 2 ** 40 }, 2);
    expect(Buffer.compare(table, plain)).toBe(0);
    kernel.releaseSparseMemo!();
  });
});

describe('the sparse memo, its arguments and budget', () => {
  it.each(backends.map((b) => [b.name, b] as const))('%s: a token or budget that is not a count is refused', (_name, backend) => {
    const v = variant(7, 1);
    const space = new StateSpace(v);
    const kernel = backend.solverKernel(v, 'clean');
    const table = new Uint8Array(space.tableBytes);
    for (const memo of [
      { token: -1, bytes: 10 },
      { token: 1.5, bytes: 10 },
      { token: 1, bytes: Number.NaN },
      { token: 2 ** 54, bytes: 10 },
    ]) {
      expect(() => kernel.sparsePass(table, 0, space.groups, { memo }), JSON.stringify(memo)).toThrow(/integer from 0 to 2\^53/);
    }
  });

  it('takes at most half the table, and only memory the solve leaves under the limit and the memory available', () => {
    const space = new StateSpace(variant(7, 3));
    const table = space.tableBytes;
    const plenty = 2 ** 50;
    expect(sparseMemoBudget(space, table, plenty, plenty)).toBe(Math.floor(table / 2));
    expect(sparseMemoBudget(space, table, undefined, plenty)).toBe(Math.floor(table / 2));
    // 256 MiB stay for everything else; the smaller of the limit and the memory available counts.
    expect(sparseMemoBudget(space, table, table + 2 ** 20, plenty)).toBe(0);
    expect(sparseMemoBudget(space, table, table + 2 ** 28 + 1000, plenty)).toBe(1000);
    expect(sparseMemoBudget(space, table, plenty, table + 2 ** 28 + 1000)).toBe(1000);
    expect(sparseMemoBudget(space, table, undefined, table + 2 ** 28 + 1000)).toBe(1000);
    expect(sparseMemoBudget(space, table, table + 2 ** 28 + 1000, table + 2 ** 28 + 10)).toBe(10);
    expect(sparseMemoBudget(space, table, undefined, table)).toBe(0);
  });

  it('a solve hands every sparse pass one memo of its own and releases it, also when stopped', async () => {
    const v = variant(7, 2);
    const plain = await solve({ variant: v, rules: 'clean', backend: tsBackend, threads: 1 });
    for (const stopAfterPass of [undefined, 3]) {
      const calls: string[] = [];
      const memos: Array<SparseMemoKey | undefined> = [];
      const recording: Backend = {
        ...tsBackend,
        solverKernel(variant, rules) {
          const kernel = tsBackend.solverKernel(variant, rules);
          return new Proxy(kernel, {
            get(target, key, receiver) {
              const value = Reflect.get(target, key, receiver);
              if (key === 'sparsePass') return (table: Uint8Array, from: number, to: number, options: SparsePassOptions) => (calls.push('sparse'), memos.push(options.memo), value.call(target, table, from, to, options));
              if (key === 'releaseSparseMemo') return () => (calls.push('release'), value.call(target));
              return typeof value === 'function' ? value.bind(target) : value;
            },
          });
        },
      };
      const solving = solve({ variant: v, rules: 'clean', backend: recording, threads: 1, ...(stopAfterPass ? { stopAfterPass } : {}) });
      if (stopAfterPass) await expect(solving).rejects.toThrow();
      else expect((await solving).tableCrc32).toBe(plain.tableCrc32);
      expect(memos.length, `stop ${stopAfterPass}`).toBeGreaterThanOrEqual(stopAfterPass ? 1 : 3);
      const first = memos[0]!;
      expect(first.token).toBeGreaterThan(0);
      for (const memo of memos) expect(memo).toBe(first);
      expect(calls.at(-1)).toBe('release');
    }
  });
});
