import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    projects: ['packages/*'],
    // Test files at a time. Many wait on child processes (the CLI, qemu, npm, g++, Redis), the
    // solves they run take at most 2 threads: 2 files at a time on 2 cores, half the cores on
    // larger machines (vitest's own default, cores - 1, gives 1 here and oversubscribes there).
    maxWorkers: Math.max(2, Math.floor(availableParallelism() / 2)),
  },
});
