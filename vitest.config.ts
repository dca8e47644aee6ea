import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

// .ci/run sets CCHECKERS_TEST_PREBUILDS=1 once it has built the prebuilds: the native tests then run
// a second time in the same run against the linux-x64 prebuild alone (node-gyp-build skips build/
// when PREBUILDS_ONLY=1), proving a prebuilt package works without a compiler.
const prebuilds = process.env.CCHECKERS_TEST_PREBUILDS === '1';

export default defineConfig({
  test: {
    projects: [
      'packages/*',
      ...(prebuilds
        ? [{ test: { name: 'native-prebuilds', root: 'packages/native', include: ['test/backends.test.ts'], testTimeout: 120_000, env: { PREBUILDS_ONLY: '1' } } }]
        : []),
    ],
    // Test files at a time. Many wait on child processes (the CLI, qemu, npm, g++, Redis), the
    // solves they run take at most 2 threads: 2 files at a time on 2 cores, half the cores on
    // larger machines (vitest's own default, cores - 1, gives 1 here and oversubscribes there).
    maxWorkers: Math.max(2, Math.floor(availableParallelism() / 2)),
  },
});
