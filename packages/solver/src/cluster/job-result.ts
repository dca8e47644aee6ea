/**
 * A worker's result of a step job, checked before the coordinator (coordinator.ts) commits it: a
 * worker's word is not trusted, its files are looked for in the store.
 */
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { CCheckersError } from '@ccheckers/core';
import { bandBytes } from '../store/band-layout.js';
import { storeBandLayout } from '../store/band-solve.js';
import type { BandStepOutcome, SliceOutcome } from '../store/band-step-jobs.js';
import { BAND_FILE, isAttemptToken, isCrc32 } from '../store/manifest.js';
import { type MessagePack, packProblem, parseMessageFileName } from '../store/message-pack.js';
import { PROOF_HEADER_BYTES, proofFileName } from '../store/proof-exchange.js';
import type { ShardStore } from '../store/shard-store.js';
import { type ClusterJob, type JobResult, type SliceJob, jobId, sameJob } from './jobs.js';

/** Looks (every 0.5 s) for a file a worker says it wrote before the coordinator gives up on it. */
const VISIBLE_TRIES = 120;

/**
 * A job's result as the coordinator will commit it: the result of exactly this job, counts that
 * are whole numbers, and files that are this step's (by name) and in the store with the sizes it
 * gives (a shared filesystem may show another machine's new file late: looked for a while, unless
 * `waitForFiles` is false, for a job found done by a resumed coordinator). Which
 * packs the step took, and when they go, follow from the schedule (message-pack.ts), not from the
 * worker's word.
 */
export async function checkResult(value: unknown, job: ClusterJob, store: ShardStore, waitForFiles = true): Promise<JobResult> {
  const r = value as Partial<JobResult> | null;
  const bad = (what: string) => new CCheckersError('E_CLUSTER', `job ${jobId(job)} returned ${what}`);
  if (r === null || typeof r !== 'object' || r.kind !== job.kind) throw bad(`no result of a ${job.kind} job`);
  if (!sameJob(job, r.job)) throw bad('the result of another job');
  const count = (x: unknown) => typeof x === 'number' && Number.isSafeInteger(x) && x >= 0;
  if (!count(r.bytesRead) || !count(r.bytesWritten) || typeof r.backend !== 'string' || r.backend.length > 64 || !count(r.threads) || typeof r.seconds !== 'number' || !(r.seconds >= 0)) throw bad('a malformed report');
  const o = r.outcome as Partial<BandStepOutcome> | undefined;
  if (!o || typeof o !== 'object' || o.band !== job.band || o.pass !== job.pass) throw bad('an outcome of another step');
  if (!isAttemptToken(o.attempt)) throw bad('a malformed attempt');
  for (const k of ['changed', 'sentValues', 'messagesWritten', 'moveless', 'bytesRead', 'bytesWritten'] as const) if (!count(o[k])) throw bad(`a malformed ${k}`);
  if (typeof o.seconds !== 'number' || !(o.seconds >= 0)) throw bad('a malformed time');
  const bands = store.manifest.bands!;
  const files: Array<{ file: string; bytes: number }> = [];
  if (o.table !== undefined) {
    const name = typeof o.table?.file === 'string' ? BAND_FILE.exec(o.table.file) : null;
    if (!name || Number(name[1]) !== job.band || Number(name[2]) !== job.generation + 1 || name[3] !== `.${o.attempt}` || !isCrc32(o.table.crc32)) throw bad(`the band file "${String(o.table?.file)}", not one of band ${job.band} at generation ${job.generation + 1}`);
    files.push({ file: o.table.file, bytes: bandBytes(store.space, bandGroups(store)[job.band]!) });
  } else if (job.pass === 0 || o.changed! > 0) throw bad('no band file for a band it changed');
  // A part of a shared step: no band file (its finish writes it), and its proof files.
  const slice = job.kind === 'slice' ? (o as Partial<SliceOutcome>) : undefined;
  if (slice) {
    if (o.table !== undefined || o.changed !== 0) throw bad('a band file, or changes, from a part of a shared step');
    if (slice.part !== (job as SliceJob).part || !count(slice.slices) || !count(slice.proofs) || !count(slice.proofBytes) || !(typeof slice.waited === 'number' && slice.waited >= 0 && slice.waited < 1e9)) throw bad('a malformed part of a shared step');
    if (!Array.isArray(slice.took) || slice.took.length > 2 ** 16 || !slice.took.every(isAttemptToken)) throw bad('a malformed list of the attempts a part took from');
  }
  let pack: MessagePack | undefined;
  if (o.pack !== undefined) {
    const p = o.pack as Partial<MessagePack>;
    const problem = packProblem(p, bands.count);
    if (problem !== undefined || p.pass !== job.pass || p.source !== job.band || p.part !== slice?.part || parseMessageFileName(p.file!)?.attempt !== o.attempt) {
      throw bad(`a message pack that is not one of this step's (${problem ?? JSON.stringify(p).slice(0, 200)})`);
    }
    pack = { file: p.file!, pass: p.pass!, source: p.source!, bytes: p.bytes!, count: p.count!, directoryCrc32: p.directoryCrc32!, targets: p.targets!, ...(slice ? { part: slice.part! } : {}) };
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
  if (slice) {
    let bytes = 0;
    for (let seq = 0; seq < slice.proofs!; seq++) {
      const file = proofFileName({ band: job.band, generation: job.generation, part: slice.part!, attempt: o.attempt, seq });
      const size = await visible(file);
      if (size === undefined || size < PROOF_HEADER_BYTES) throw missing(file);
      bytes += size;
    }
    if (bytes !== slice.proofBytes) throw bad(`proof files of ${bytes} bytes, not the ${slice.proofBytes} it says`);
  }
  const { pack: _, ...rest } = o as BandStepOutcome;
  return { ...(r as JobResult), outcome: { ...rest, ...(pack ? { pack } : {}) } };
}

/** The group count of every band of the store (cached per store). */
const groupsByStore = new WeakMap<ShardStore, number[]>();
function bandGroups(store: ShardStore): number[] {
  let groups = groupsByStore.get(store);
  if (!groups) {
    groups = storeBandLayout(store).groupsOf.map((g) => g.length);
    groupsByStore.set(store, groups);
  }
  return groups;
}
