/**
 * What a worker does with one job (jobs.ts), on the store folder it was started with: no Redis
 * here, so the tests can run a whole cluster pass in one process.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { resolve, sep } from 'node:path';
import type { Backend } from '@ccheckers/core';
import { crc32Of } from '../crc.js';
import { checkMemory, formatBytes } from '../memory.js';
import { overheadBytes } from '../store/layout.js';
import { ShardStore, writeFileAtomically } from '../store/shard-store.js';
import { type TablePart, partRunner, runInit, runTile } from '../store/sharded-solve.js';
import type { ChunkRunner } from '../worker-pool.js';
import {
  type ClusterJob,
  type InitResult,
  JobRefused,
  type JobResult,
  type MergeResult,
  TILE_OUTPUT,
  type TileResult,
  parseJob,
  passFolder,
  tileOutput,
  workerShardFile,
} from './jobs.js';

export interface JobContext {
  /** The worker's --store folder. */
  dir: string;
  backend: Backend;
  threads: number;
  /** The worker's --memory: a job that would need more is refused. */
  memoryLimit?: number;
}

/** Runs jobs for one worker: keeps the kernel runner (TS worker threads) between jobs. */
export class JobRunner {
  private runner: ChunkRunner | undefined;
  private runnerKey = '';

  constructor(private readonly context: JobContext) {}

  /** Checks the payload against the store and runs it; JobRefused for a payload no worker may run. */
  async run(data: unknown): Promise<{ job: ClusterJob; result: JobResult }> {
    const started = performance.now();
    const store = ShardStore.open(this.context.dir);
    const job = parseJob(data, store.manifest);
    const m = store.manifest;
    const report = { backend: this.context.backend.name, threads: this.context.threads, seconds: 0, bytesRead: 0, bytesWritten: 0 };
    const stale = job.kind === 'init' ? m.stage !== 'init' : m.stage !== 'passes' || m.generation !== job.generation || m.passLog.length + 1 !== job.pass;
    if (stale) {
      const result = job.kind === 'tile' ? { kind: job.kind, changed: [], proved: 0, moveless: 0 } : job.kind === 'merge' ? { kind: job.kind, file: '', crc32: 0, newlyProven: 0, inputs: 0 } : { kind: job.kind, file: '', crc32: 0, proven: 0 };
      return { job, result: { ...result, ...report, stale: true } };
    }
    const runner = this.runnerFor(store);
    const result = job.kind === 'init' ? await initJob(store, job.shard, runner, report) : job.kind === 'tile' ? await this.tileJob(store, job, runner, report) : mergeJob(store, job, report);
    report.seconds = (performance.now() - started) / 1000;
    return { job, result: { ...result, ...report } };
  }

  async close(): Promise<void> {
    await this.runner?.close();
    this.runner = undefined;
  }

  private runnerFor(store: ShardStore): ChunkRunner {
    const { backend, threads } = this.context;
    const key = `${store.manifest.board}/${store.manifest.pieces}/${store.manifest.rules}`;
    if (!this.runner || key !== this.runnerKey) {
      void this.runner?.close();
      this.runner = partRunner(backend, store.space.variant, store.manifest.rules, threads);
      this.runnerKey = key;
    }
    return this.runner;
  }

  private async tileJob(store: ShardStore, job: ClusterJob & { kind: 'tile' }, runner: ChunkRunner, report: Report): Promise<TileResult> {
    const [i, j] = job.shards;
    const indexes = i === j ? [i] : [i, j];
    this.checkJobMemory(store, indexes.length);
    const folder = inside(store.dir, passFolder(job.pass, job.generation));
    if (!existsSync(folder)) throw new JobRefused(`the pass folder ${folder} is missing (the coordinator makes it before the pass's jobs)`);
    const parts: TablePart[] = indexes.map((s) => {
      const shard = store.layout.shards[s]!;
      const bytes = store.loadShard(s, sharedBytes(shard.bytes));
      report.bytesRead += shard.bytes;
      return { bytes, firstGroup: shard.firstGroup, groups: shard.groups };
    });
    let proved = 0;
    let moveless = 0;
    await runTile(runner, store.space, parts[0]!, parts[1], { sparse: job.sparse, down: job.down }, (s) => {
      proved += s.wins + s.losses;
      moveless += s.moveless;
    });
    const changed: number[] = [];
    indexes.forEach((s, at) => {
      const bytes = parts[at]!.bytes;
      if (crc32Of(bytes) === store.manifest.shards[s]!.crc32) return;
      writeFileAtomically(inside(folder, tileOutput(job.shards, s)), bytes, false, `${process.pid}-${attemptToken()}`);
      report.bytesWritten += bytes.length;
      changed.push(s);
    });
    return { kind: 'tile', changed, proved, moveless };
  }

  private checkJobMemory(store: ShardStore, shards: number): void {
    const largest = Math.max(...store.layout.shards.map((s) => s.bytes));
    const kernelCopies = this.context.backend.kernelThreads || this.context.threads === 1 ? 1 : this.context.threads;
    const need = shards * largest + overheadBytes(store.space, kernelCopies);
    if (this.context.memoryLimit !== undefined && need > this.context.memoryLimit) {
      throw new JobRefused(
        `this worker's --memory ${formatBytes(this.context.memoryLimit)} is too small for the jobs of ${store.dir}: ${shards} shard(s) of up to ${formatBytes(largest)} ` +
          `plus ${formatBytes(overheadBytes(store.space, kernelCopies))} of group maps and scratch, ${formatBytes(need)} (give the worker more --memory, or solve with more --shards)`,
      );
    }
    checkMemory(need);
  }
}

type Report = { bytesRead: number; bytesWritten: number };

async function initJob(store: ShardStore, index: number, runner: ChunkRunner, report: Report): Promise<InitResult> {
  const shard = store.layout.shards[index]!;
  const bytes = sharedBytes(shard.bytes);
  let proven = 0;
  await runInit(runner, { bytes, firstGroup: shard.firstGroup, groups: shard.groups }, (s) => {
    proven += s.illegal + s.terminal + s.wins + s.losses;
  });
  const attempt = attemptToken();
  const file = workerShardFile(index, 1, attempt);
  writeFileAtomically(inside(store.dir, file), bytes, false, `${process.pid}-${attempt}`);
  report.bytesWritten += bytes.length;
  return { kind: 'init', file, crc32: crc32Of(bytes), proven };
}

/** Two-bit fields per byte that are not UNKNOWN (0..4). */
const PROVEN_IN_BYTE = Uint8Array.from({ length: 256 }, (_, b) => [0, 2, 4, 6].filter((shift) => (b >>> shift) & 3).length);

/** For bytes a, b (index a * 256 + b): 1 where some state is proven in both with different values. */
const CONFLICT = (() => {
  const t = new Uint8Array(65536);
  for (let a = 0; a < 256; a++) {
    for (let b = 0; b < 256; b++) {
      for (let shift = 0; shift < 8; shift += 2) {
        const x = (a >>> shift) & 3;
        const y = (b >>> shift) & 3;
        if (x !== 0 && y !== 0 && x !== y) t[a * 256 + b] = 1;
      }
    }
  }
  return t;
})();

function mergeJob(store: ShardStore, job: ClusterJob & { kind: 'merge' }, report: Report): MergeResult {
  const shard = store.layout.shards[job.shard]!;
  const merged = store.loadShard(job.shard, new Uint8Array(shard.bytes));
  report.bytesRead += shard.bytes;
  let before = 0;
  for (let at = 0; at < merged.length; at++) before += PROVEN_IN_BYTE[merged[at]!]!;
  const folder = inside(store.dir, passFolder(job.pass, job.generation));
  const inputs = existsSync(folder)
    ? readdirSync(folder).filter((name) => {
        const m = TILE_OUTPUT.exec(name);
        return m !== null && Number(m[3]) === job.shard;
      })
    : [];
  for (const name of inputs.sort()) {
    const path = inside(folder, name);
    if (statSync(path).size !== shard.bytes) throw new Error(`${path}: ${statSync(path).size} bytes, shard ${job.shard} has ${shard.bytes}`);
    const tile = readFileSync(path);
    report.bytesRead += tile.length;
    for (let at = 0; at < merged.length; at++) {
      const a = merged[at]!;
      const b = tile[at]!;
      if (CONFLICT[a * 256 + b] === 1) throw new Error(`${path}: a state proven with another value than in the store (byte ${at}: ${a} and ${b}); the store or a worker is faulty`);
      merged[at] = a | b;
    }
  }
  let after = 0;
  for (let at = 0; at < merged.length; at++) after += PROVEN_IN_BYTE[merged[at]!]!;
  const attempt = attemptToken();
  const file = workerShardFile(job.shard, job.generation + 1, attempt);
  writeFileAtomically(inside(store.dir, file), merged, false, `${process.pid}-${attempt}`);
  report.bytesWritten += merged.length;
  return { kind: 'merge', file, crc32: crc32Of(merged), newlyProven: after - before, inputs: inputs.length };
}

/** `name` inside `folder`, refusing anything that would resolve outside it. */
function inside(folder: string, name: string): string {
  const path = resolve(folder, name);
  if (!path.startsWith(resolve(folder) + sep)) throw new JobRefused(`${name} is outside ${folder}`);
  return path;
}

function sharedBytes(bytes: number): Uint8Array {
  return new Uint8Array(new SharedArrayBuffer(Math.max(1, bytes)));
}

/** A token of this attempt, for file names several machines may write at once. */
function attemptToken(): string {
  return randomBytes(4).toString('hex');
}

