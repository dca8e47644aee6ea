/**
 * `ccheckers worker`: runs the jobs of cluster solves (solve --store DIR --redis URL) on this
 * machine until stopped (Ctrl-C or SIGTERM: after the current job; twice: at once). One line per
 * job on stderr.
 */
import { resolve } from 'node:path';
import { DEFAULT_STALL_SECONDS, parseRedisUrl, runClusterWorker, selectBackend } from '@ccheckers/solver';
import type { TestHooks } from '../test-hooks.js';
import { UsageError, backendOption, cappedThreads, integer, memoryOption } from '../options.js';
import { EXIT_INTERRUPTED } from '../exit-codes.js';

export interface WorkerCommandOptions {
  redis: string;
  store: string;
  backend: string;
  threads?: string;
  memory?: string;
  stallSeconds?: string;
  quiet?: boolean;
}

export async function workerCommand(o: WorkerCommandOptions, hooks: TestHooks = {}): Promise<number> {
  parseRedisUrl(o.redis); // a bad URL is a usage error before anything starts
  const store = resolve(o.store);
  const request = backendOption(o.backend);
  const threads = cappedThreads(o.threads);
  const memoryLimit = memoryOption(o.memory);
  const stallSeconds = o.stallSeconds === undefined ? DEFAULT_STALL_SECONDS : integer('--stall-seconds', o.stallSeconds, 1, 86_400);
  const { backend } = await selectBackend(request);
  const log = (line: string) => {
    if (!o.quiet) process.stderr.write(`worker: ${line}\n`);
  };
  const controller = new AbortController();
  let signals = 0;
  const stop = () => {
    if (++signals > 1) process.exit(EXIT_INTERRUPTED);
    controller.abort();
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  try {
    const { jobs, refused } = await runClusterWorker({
      redis: o.redis,
      store,
      backend,
      threads: threads.count,
      ...(memoryLimit !== undefined ? { memoryLimit } : {}),
      stallSeconds,
      log,
      signal: controller.signal,
      ...(hooks.onJobStart ? { onJobStart: hooks.onJobStart } : {}),
      ...(hooks.onJobWorked ? { onJobWorked: hooks.onJobWorked } : {}),
    });
    log(`stopped after ${jobs} job(s)${refused > 0 ? `, ${refused} refused` : ''}`);
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
  }
  return 0;
}
