import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

// .ci/run sets CCHECKERS_TEST_PREBUILDS=1 once it has built the prebuilds: the native tests then run
// a second time in the same run against the linux-x64 prebuild alone (node-gyp-build skips build/
// when PREBUILDS_ONLY=1), proving a prebuilt package works without a compiler.
const prebuilds = process.env.CCHECKERS_TEST_PREBUILDS === '1';

/**
 * The test files that take longest (seconds of a whole `.ci/run` on 2 cores) start first, so that
 * the two workers end together: the files of all projects share one queue, taken in this order,
 * and the longest one started last would run alone at the end. Only an order: vitest's own (files
 * that failed last, then by the last durations it has, else by size) keeps the rest.
 */
const SLOWEST_FIRST = [
  'packages/solver/test/band-solve.test.ts', // 314 s at c7cc188 (its TS solves about 3x faster since)
  'packages/cli/test/cluster.test.ts', // 179 s
  'packages/native/test/band-kernel.test.ts', // 78 s
  'packages/cli/test/package-install.test.ts', // 56 s
  'packages/cli/test/store.test.ts', // 56 s
  // other-cpus.test.ts (129 s) only runs the self-test binaries .ci/run compiles in its setup now
];

class SlowestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const place = (f: TestSpecification) => {
      const i = SLOWEST_FIRST.findIndex((path) => f.moduleId.endsWith(path));
      return i < 0 ? SLOWEST_FIRST.length : i;
    };
    const sorted = await super.sort(files);
    return sorted.map((f, i) => ({ f, i, at: place(f) })).sort((a, b) => a.at - b.at || a.i - b.i).map(({ f }) => f);
  }
}

export default defineConfig({
  test: {
    projects: [
      'packages/*',
      ...(prebuilds
        ? [{ test: { name: 'native-prebuilds', root: 'packages/native', include: ['test/backends.test.ts'], testTimeout: 120_000, env: { PREBUILDS_ONLY: '1' }, server: { deps: { external: [/\/packages\/[^/]+\/dist\//] } } } }]
        : []),
    ],
    // Test files at a time. Many wait on child processes (the CLI, qemu, npm, g++, Redis), the
    // solves they run take at most 2 threads: 2 files at a time on 2 cores, half the cores on
    // larger machines (vitest's own default, cores - 1, gives 1 here and oversubscribes there).
    maxWorkers: Math.max(2, Math.floor(availableParallelism() / 2)),
    sequence: { sequencer: SlowestFirst },
  },
});
