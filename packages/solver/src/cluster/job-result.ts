/**
 * A worker's result of a step job, checked before the coordinator (coordinator.ts) commits it: a
 * worker's word is not trusted, its files are looked for in the store.
 */
import { existsSync, statSync } from 'node:fs';
import { type FileHandle, open } from 'node:fs/promises';
import { join } from 'node:path';
import { BACKEND_NAMES, type BackendName, CCheckersError } from '@ccheckers/core';
import { crc32Of } from '../crc.js';
import { hex } from '../database.js';
import { type BandLayout, bandBytes } from '../store/band-layout.js';
import { storeBandLayout } from '../store/band-solve.js';
import type { BandStepOutcome, SliceOutcome } from '../store/band-step-jobs.js';
import { BAND_FILE, isAttemptToken, isCrc32 } from '../store/manifest.js';
import { type MessagePack, packProblem, parseMessageFileName } from '../store/message-pack.js';
import { PROOF_HEADER_BYTES, proofFileName } from '../store/proof-exchange.js';
import type { ShardStore } from '../store/shard-store.js';
import { type ClusterJob, type JobResult, type SliceJob, jobId, sameJob } from './jobs.js';

/** Looks (every 0.5 s) for a file a worker says it wrote before the coordinator gives up on it. */
const VISIBLE_TRIES = 120;
/** The most bytes a job may say it read or wrote, and seconds it may say it took: far past any
 *  real step (32 TiB, 115 days), and low enough that hundreds of them sum to exact counts and
 *  finite times in the manifest (a round whose sums would not is refused: BandSolve). */
export const MAX_JOB_BYTES = 2 ** 45;
export const MAX_JOB_SECONDS = 1e7;
/** The most threads a worker runs a job on (the CLI's --threads takes up to 1024). */
const MAX_THREADS = 1024;
/** Bytes read at a time from a band file whose CRC-32 the coordinator checks. */
const CRC_READ_BYTES = 2 ** 24;

/**
 * A job's result as the coordinator will commit it: the result of exactly this job, counts that
 * are whole numbers within what the step can have done, and files that are this step's (by name)
 * and in the store with the sizes it gives, its band file with the CRC-32 it gives (a shared
 * filesystem may show another machine's new file late: looked for a while, unless `waitForFiles`
 * is false, for a job found done by a resumed coordinator). Which packs the step took, and when
 * they go, follow from the schedule (message-pack.ts), not from the worker's word. The result is
 * built anew from the fields checked: nothing else the worker sent reaches the manifest.
 */
export async function checkResult(value: unknown, job: ClusterJob, store: ShardStore, waitForFiles = true): Promise<JobResult> {
  const r = value as Partial<JobResult> | null;
  const bad = (what: string) => new CCheckersError('E_CLUSTER', `job ${jobId(job)} returned ${what}`);
  if (r === null || typeof r !== 'object' || r.kind !== job.kind) throw bad(`no result of a ${job.kind} job`);
  if (!sameJob(job, r.job)) throw bad('the result of another job');
  const upTo = (most: number) => (x: unknown): x is number => typeof x === 'number' && Number.isSafeInteger(x) && x >= 0 && x <= most;
  const byteCount = upTo(MAX_JOB_BYTES);
  const seconds = (x: unknown): x is number => typeof x === 'number' && x >= 0 && x <= MAX_JOB_SECONDS;
  if (!byteCount(r.bytesRead) || !byteCount(r.bytesWritten) || !BACKEND_NAMES.includes(r.backend as BackendName) || !upTo(MAX_THREADS)(r.threads) || !seconds(r.seconds)) throw bad('a malformed report');
  const o = r.outcome as Partial<SliceOutcome> | undefined;
  if (!o || typeof o !== 'object' || o.band !== job.band || o.pass !== job.pass) throw bad('an outcome of another step');
  if (!isAttemptToken(o.attempt)) throw bad('a malformed attempt');
  // A step changes states of its band only; moveless states are counted among the store's.
  const bandStates = layoutOf(store).groupsOf[job.band]!.length * store.space.p2Placements;
  if (!upTo(bandStates)(o.changed)) throw bad(`a malformed changed (${String(o.changed)}, for a band of ${bandStates} states)`);
  if (!upTo(store.space.states)(o.moveless)) throw bad('a malformed moveless');
  if (!byteCount(o.bytesRead) || !byteCount(o.bytesWritten)) throw bad('a malformed byte count');
  if (!upTo(Number.MAX_SAFE_INTEGER)(o.messagesWritten) || !upTo(o.messagesWritten as number)(o.sentValues)) throw bad('malformed message counts');
  if (!seconds(o.seconds)) throw bad('a malformed time');
  const bands = store.manifest.bands!;
  const files: Array<{ file: string; bytes: number }> = [];
  let table: { file: string; crc32: number } | undefined;
  if (o.table !== undefined) {
    const name = typeof o.table?.file === 'string' ? BAND_FILE.exec(o.table.file) : null;
    if (!name || Number(name[1]) !== job.band || Number(name[2]) !== job.generation + 1 || name[3] !== `.${o.attempt}` || !isCrc32(o.table.crc32)) throw bad(`the band file "${String(o.table?.file)}", not one of band ${job.band} at generation ${job.generation + 1}`);
    table = { file: o.table.file, crc32: o.table.crc32 };
    files.push({ file: table.file, bytes: bandBytes(store.space, layoutOf(store).groupsOf[job.band]!.length) });
  } else if (job.pass === 0 || o.changed > 0) throw bad('no band file for a band it changed');
  // A part of a shared step: no band file (its finish writes it), and its proof files. Any other
  // step is no part.
  let part: Pick<SliceOutcome, 'part' | 'slices' | 'proofs' | 'proofBytes' | 'took' | 'waited'> | undefined;
  if (job.kind === 'slice') {
    if (table !== undefined || o.changed !== 0) throw bad('a band file, or changes, from a part of a shared step');
    const units = layoutOf(store).unitsOf[job.band]!.length;
    if (o.part !== job.part || !upTo(units)(o.slices) || !upTo(2 ** 32)(o.proofs) || !byteCount(o.proofBytes) || !seconds(o.waited)) throw bad('a malformed part of a shared step');
    if (!Array.isArray(o.took) || o.took.length > 2 ** 16 || !o.took.every(isAttemptToken)) throw bad('a malformed list of the attempts a part took from');
    part = { part: o.part, slices: o.slices, proofs: o.proofs, proofBytes: o.proofBytes, took: [...o.took], waited: o.waited };
  } else if (o.part !== undefined) throw bad('a part of a shared step from a step that is not one');
  let pack: MessagePack | undefined;
  if (o.pack !== undefined) {
    const p = o.pack as Partial<MessagePack>;
    const problem = packProblem(p, bands.count);
    if (problem !== undefined || p.pass !== job.pass || p.source !== job.band || p.part !== part?.part || parseMessageFileName(p.file!)?.attempt !== o.attempt) {
      throw bad(`a message pack that is not one of this step's (${problem ?? JSON.stringify(p).slice(0, 200)})`);
    }
    pack = { file: p.file!, pass: p.pass!, source: p.source!, bytes: p.bytes!, count: p.count!, directoryCrc32: p.directoryCrc32!, targets: p.targets!, ...(part ? { part: part.part } : {}) };
    if (pack.count !== o.messagesWritten) throw bad(`a message pack of ${pack.count} messages for ${o.messagesWritten} written`);
    files.push({ file: pack.file, bytes: pack.bytes });
  }
  if (pack === undefined && o.messagesWritten !== 0) throw bad(`${o.messagesWritten} messages written, and no message pack`);
  const visible = async (file: string) => {
    const path = join(store.dir, file);
    for (let tries = 0; waitForFiles && !existsSync(path) && tries < VISIBLE_TRIES; tries++) await new Promise((resolve) => setTimeout(resolve, 500));
    return statSync(path, { throwIfNoEntry: false })?.size;
  };
  const missing = (file: string) => bad(`the file ${file}, which is missing or not of its size in ${store.dir} (is the worker's --store this folder, shared?); solve --resume runs the job again`);
  for (const { file, bytes } of files) if ((await visible(file)) !== bytes) throw missing(file);
  // The band file replaces the band's last one once committed: it must be the table it says.
  if (table && (await fileCrc32(join(store.dir, table.file))) !== table.crc32) throw bad(`the band file ${table.file}, whose CRC-32 is not the ${hex(table.crc32)} it says; solve --resume runs the job again`);
  if (part) {
    let bytes = 0;
    for (let seq = 0; seq < part.proofs; seq++) {
      const file = proofFileName({ band: job.band, generation: job.generation, part: part.part, attempt: o.attempt, seq });
      const size = await visible(file);
      if (size === undefined || size < PROOF_HEADER_BYTES) throw missing(file);
      bytes += size;
    }
    if (bytes !== part.proofBytes) throw bad(`proof files of ${bytes} bytes, not the ${part.proofBytes} it says`);
  }
  const outcome: BandStepOutcome | SliceOutcome = {
    band: job.band,
    pass: job.pass,
    attempt: o.attempt,
    changed: o.changed,
    sentValues: o.sentValues,
    messagesWritten: o.messagesWritten,
    moveless: o.moveless,
    bytesRead: o.bytesRead,
    bytesWritten: o.bytesWritten,
    seconds: o.seconds,
    ...(table ? { table } : {}),
    ...(pack ? { pack } : {}),
    ...part,
  };
  return { kind: job.kind, job, backend: r.backend as BackendName, threads: r.threads, seconds: r.seconds, bytesRead: r.bytesRead, bytesWritten: r.bytesWritten, outcome };
}

/** CRC-32 of a file, read a piece at a time without blocking the event loop (a band of many
 *  GiB: the coordinator's lease is renewed meanwhile). */
async function fileCrc32(path: string): Promise<number | undefined> {
  let handle: FileHandle | undefined;
  try {
    handle = await open(path, 'r');
    const buffer = new Uint8Array(CRC_READ_BYTES);
    let crc = 0;
    for (let position = 0; ; ) {
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, position);
      if (bytesRead === 0) return crc;
      crc = crc32Of(buffer.subarray(0, bytesRead), crc);
      position += bytesRead;
    }
  } catch {
    return undefined;
  } finally {
    await handle?.close();
  }
}

/** The store's band layout (cached per store: a check per job). */
const layoutByStore = new WeakMap<ShardStore, BandLayout>();
function layoutOf(store: ShardStore): BandLayout {
  let layout = layoutByStore.get(store);
  if (!layout) {
    layout = storeBandLayout(store);
    layoutByStore.set(store, layout);
  }
  return layout;
}
