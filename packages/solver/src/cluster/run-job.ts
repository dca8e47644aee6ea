/**
 * What a worker does with one job (jobs.ts), on the store folder it was started with: no Redis
 * here, so the tests can run jobs in one process.
 *
 * A job never blocks the event loop for long: BullMQ renews the job's lock from a timer on it,
 * and a lock that runs out hands the job to another worker while this one still works on it.
 * Files are read and written asynchronously, the kernel works in calls of a bounded number of
 * states (at most MAX_STATES_PER_CALL states of work each), and the merge loop yields between
 * slices.
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { open as openFile, stat as statFile } from 'node:fs/promises';
import { resolve, sep } from 'node:path';
import type { Backend } from '@ccheckers/core';
import { crc32Of } from '../crc.js';
import { IO_CHUNK_BYTES, hex } from '../database.js';
import { checkMemory, formatBytes } from '../memory.js';
import { overheadBytes } from '../store/layout.js';
import { ShardStore, writeFileAtomicallyAsync } from '../store/shard-store.js';
import { type TablePart, partRunner, runInit, runTile } from '../store/sharded-solve.js';
import type { ChunkRunner } from '../worker-pool.js';
import {
  type ClusterJob,
  type InitResult,
  JobDeferred,
  JobRefused,
  type JobResult,
  type MergeJob,
  type MergeResult,
  type TileJob,
  TILE_OUTPUT_CRC_BYTES,
  type TileResult,
  parseJob,
  passFolder,
  tileOutput,
  tileOutputCrc,
  workerShardFile,
} from './jobs.js';

export interface JobContext {
  /** The worker's --store folder. */
  dir: string;
  backend: Backend;
  threads: number;
  /** The worker's --memory: a job that would need more is deferred to another worker. */
  memoryLimit?: number;
}

/** States of work per kernel call (a tile sweeps the whole state space): about 0.2 s on one core. */
const MAX_STATES_PER_CALL = 2 ** 24;
/** Bytes the merge loop works through between two yields to the event loop. */
const MERGE_SLICE_BYTES = 2 ** 24;

/** Runs jobs for one worker: keeps the kernel runner (TS worker threads) between jobs. */
export class JobRunner {
  private runner: ChunkRunner | undefined;
  private runnerKey = '';

  constructor(private readonly context: JobContext) {}

  /**
   * Checks the payload against the store and runs it. JobRefused: a payload no worker may run;
   * JobDeferred: one this worker cannot run now (the store is at another generation, an input is
   * not visible yet, too little memory here).
   */
  async run(data: unknown): Promise<{ job: ClusterJob; result: JobResult }> {
    const started = performance.now();
    const store = ShardStore.open(this.context.dir);
    const job = parseJob(data, store.manifest);
    const m = store.manifest;
    const expected = m.stage === 'init' ? { stage: 'init', pass: 0 } : { stage: 'passes', pass: m.passLog.length + 1 };
    if ((job.kind === 'init') !== (m.stage === 'init') || m.stage === 'finishing' || m.stage === 'complete' || job.generation !== m.generation || job.pass !== expected.pass) {
      throw new JobDeferred(`the job is for pass ${job.pass} on generation ${job.generation}; ${this.context.dir} is at ${m.stage}, pass ${expected.pass}, generation ${m.generation}`);
    }
    const report = { backend: this.context.backend.name, threads: this.context.threads, seconds: 0, bytesRead: 0, bytesWritten: 0 };
    const result =
      job.kind === 'init'
        ? await this.initJob(store, job.shard, job.generation, report)
        : job.kind === 'tile'
          ? await this.tileJob(store, job, report)
          : await mergeJob(store, job, report);
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

  private async initJob(store: ShardStore, index: number, generation: number, report: Report): Promise<InitResult> {
    this.checkJobMemory(store, 1);
    const shard = store.layout.shards[index]!;
    const bytes = sharedBytes(shard.bytes);
    let proven = 0;
    const calls = Math.max(16, Math.ceil((shard.groups * store.space.p2Placements) / MAX_STATES_PER_CALL));
    await runInit(
      this.runnerFor(store),
      { bytes, firstGroup: shard.firstGroup, groups: shard.groups },
      (s) => {
        proven += s.illegal + s.terminal + s.wins + s.losses;
      },
      calls,
    );
    const attempt = attemptToken();
    const file = workerShardFile(index, generation + 1, attempt);
    await writeFileAtomicallyAsync(inside(store.dir, file), bytes, true, `${process.pid}-${attempt}`);
    report.bytesWritten += bytes.length;
    return { kind: 'init', file, crc32: crc32Of(bytes), proven };
  }

  private async tileJob(store: ShardStore, job: TileJob, report: Report): Promise<TileResult> {
    const [i, j] = job.shards;
    const indexes = i === j ? [i] : [i, j];
    this.checkJobMemory(store, indexes.length);
    const folder = inside(store.dir, passFolder(job.pass, job.generation));
    if (!existsSync(folder)) throw new JobDeferred(`the pass folder ${folder} is not there (yet)`);
    const parts: TablePart[] = [];
    for (const s of indexes) {
      const shard = store.layout.shards[s]!;
      parts.push({ bytes: await store.loadShardAsync(s, sharedBytes(shard.bytes)), firstGroup: shard.firstGroup, groups: shard.groups });
      report.bytesRead += shard.bytes;
    }
    let proved = 0;
    let moveless = 0;
    // A full tile sweeps every P2 placement and all the P1 placements with it; a sparse one the
    // states of its parts.
    const work = job.sparse ? parts.reduce((sum, p) => sum + p.groups, 0) * store.space.p2Placements : store.space.states;
    const calls = Math.max(16, Math.ceil(work / MAX_STATES_PER_CALL));
    await runTile(
      this.runnerFor(store),
      store.space,
      parts[0]!,
      parts[1],
      { sparse: job.sparse, down: job.down },
      (s) => {
        proved += s.wins + s.losses;
        moveless += s.moveless;
      },
      calls,
    );
    const changed: number[] = [];
    for (const [at, s] of indexes.entries()) {
      const bytes = parts[at]!.bytes;
      const crc = crc32Of(bytes);
      if (crc === store.manifest.shards[s]!.crc32) continue; // values only grow: same CRC, no proof here
      await writeFileAtomicallyAsync(inside(folder, tileOutput(job.shards, s)), [bytes, tileOutputCrc(crc)], true, `${process.pid}-${attemptToken()}`);
      report.bytesWritten += bytes.length + TILE_OUTPUT_CRC_BYTES;
      changed.push(s);
    }
    return { kind: 'tile', changed, proved, moveless };
  }

  private checkJobMemory(store: ShardStore, shards: number): void {
    const largest = Math.max(...store.layout.shards.map((s) => s.bytes));
    const kernelCopies = this.context.backend.kernelThreads || this.context.threads === 1 ? 1 : this.context.threads;
    const need = shards * largest + overheadBytes(store.space, kernelCopies);
    if (this.context.memoryLimit !== undefined && need > this.context.memoryLimit) {
      throw new JobDeferred(
        `this worker's --memory ${formatBytes(this.context.memoryLimit)} is too small for the jobs of ${store.dir}: ${shards} shard(s) of up to ${formatBytes(largest)} ` +
          `plus ${formatBytes(overheadBytes(store.space, kernelCopies))} of group maps and scratch, ${formatBytes(need)} (give the workers more --memory, or solve with more --shards)`,
      );
    }
    checkMemory(need);
  }
}

type Report = { bytesRead: number; bytesWritten: number };

/** Two-bit fields per byte that are not UNKNOWN (0..4). */
const PROVEN_IN_BYTE = Uint8Array.from({ length: 256 }, (_, b) => [0, 2, 4, 6].filter((shift) => (b >>> shift) & 3).length);

/** For bytes a, b (index a * 256 + b): 1 where some state is proven in both with different values.
 *  Made on the first merge (not at start-up: every ccheckers command loads this module). */
let conflicts: Uint8Array | undefined;
function conflictTable(): Uint8Array {
  if (conflicts) return conflicts;
  conflicts = new Uint8Array(65536);
  for (let a = 0; a < 256; a++) {
    for (let b = 0; b < 256; b++) {
      for (let shift = 0; shift < 8; shift += 2) {
        const x = (a >>> shift) & 3;
        const y = (b >>> shift) & 3;
        if (x !== 0 && y !== 0 && x !== y) conflicts[a * 256 + b] = 1;
      }
    }
  }
  return conflicts;
}

/**
 * The shard OR each of the tile outputs the payload names. A missing output is deferred (a
 * shared filesystem may show it late), never merged without: the coordinator ends the solve on
 * a pass that decides nothing, so a merge of less could end it early.
 */
async function mergeJob(store: ShardStore, job: MergeJob, report: Report): Promise<MergeResult> {
  const shard = store.layout.shards[job.shard]!;
  const merged = await store.loadShardAsync(job.shard, new Uint8Array(shard.bytes));
  report.bytesRead += shard.bytes;
  const folder = inside(store.dir, passFolder(job.pass, job.generation));
  let newlyProven = 0;
  const input = new Uint8Array(Math.min(shard.bytes, IO_CHUNK_BYTES));
  const conflict = conflictTable();
  for (const [at, tile] of job.inputs.entries()) {
    const path = inside(folder, tileOutput(tile, job.shard));
    let size: number;
    try {
      size = (await statFile(path)).size;
    } catch {
      throw new JobDeferred(`${path}, the output of tile ${tile[0]}-${tile[1]}, is not there (yet)`);
    }
    if (size !== shard.bytes + TILE_OUTPUT_CRC_BYTES) throw new Error(`${path}: ${size} bytes, not the ${shard.bytes} of shard ${job.shard} and a CRC-32`);
    const file = await openFile(path, 'r');
    try {
      let gained = 0;
      let crc = 0;
      for (let offset = 0; offset < shard.bytes; offset += input.length) {
        const length = Math.min(input.length, shard.bytes - offset);
        const { bytesRead } = await file.read(input, 0, length, offset);
        if (bytesRead !== length) throw new Error(`${path}: short read at byte ${offset}`);
        crc = crc32Of(input.subarray(0, length), crc);
        for (let slice = 0; slice < length; slice += MERGE_SLICE_BYTES) {
          const end = Math.min(length, slice + MERGE_SLICE_BYTES);
          for (let k = slice; k < end; k++) {
            const a = merged[offset + k]!;
            const b = input[k]!;
            if (conflict[a * 256 + b] === 1) throw new Error(`${path}: a state proven with another value than in the store (byte ${offset + k}: ${a} and ${b}); the store or a worker is faulty`);
            const c = a | b;
            gained += PROVEN_IN_BYTE[c]! - PROVEN_IN_BYTE[a]!;
            merged[offset + k] = c;
          }
          await new Promise((resolve) => setImmediate(resolve));
        }
      }
      const footer = new Uint8Array(TILE_OUTPUT_CRC_BYTES);
      if ((await file.read(footer, 0, footer.length, shard.bytes)).bytesRead !== footer.length) throw new Error(`${path}: short read of its CRC-32`);
      const written = new DataView(footer.buffer).getUint32(0, true);
      // A damaged output would be merged into the shard and then checksummed as sound: stop.
      if (crc !== written) throw new Error(`${path}, the output of tile ${tile[0]}-${tile[1]}, is damaged: CRC-32 ${hex(crc)}, written as ${hex(written)}; the store's disk or a worker is faulty`);
      report.bytesRead += shard.bytes + TILE_OUTPUT_CRC_BYTES;
      // A tile writes a shard only when it proved something there, so the first input always adds
      // to the base; one that adds nothing is not what the tile wrote (a stale copy on a shared
      // filesystem?): try again later.
      if (at === 0 && gained === 0) throw new JobDeferred(`${path} adds nothing to shard ${job.shard}`);
      newlyProven += gained;
    } finally {
      await file.close();
    }
  }
  const attempt = attemptToken();
  const file = workerShardFile(job.shard, job.generation + 1, attempt);
  await writeFileAtomicallyAsync(inside(store.dir, file), merged, true, `${process.pid}-${attempt}`);
  report.bytesWritten += merged.length;
  return { kind: 'merge', file, crc32: crc32Of(merged), newlyProven, inputs: job.inputs.length };
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
