/**
 * Message packs of the band passes, as the manifest knows them: one file per step (pass, source
 * band, attempt) holding every message the step sent, a section per target band and kind
 * (message-pack-format.ts has their layout, message-pack-writer.ts and message-pack-reader.ts
 * write and read them, messages.ts codes the runs). One file per step, not per target: with S
 * bands a pass makes at most S files, where a file per (target, kind) made up to 2 S^2 (7x7/2 in
 * 256 bands did not finish in 5 minutes), so a store can have the many small bands that keep the
 * proof chains of a pass when many workers step bands at once (band-schedule.ts, blocks).
 *
 * A pack is read by each of its targets at that target's next step after it (takenAt), and
 * removed once all of them have stepped: which targets a pack has is in the manifest (a bitset),
 * so a step opens only the packs with a section for its band.
 */
import { type BandSchedule, MAX_WORKERS, type StepAt, passRoundOf, stepBefore, takenAt } from './band-schedule.js';

/** A step's message pack as the manifest records it. */
export interface MessagePack {
  file: string;
  pass: number;
  source: number;
  /** The file's bytes, index included. */
  bytes: number;
  /** Messages in all its sections. */
  count: number;
  /** CRC-32 of its directory (one entry per target: message-pack-format.ts), which its trailer
   *  repeats: a step checks the trailer's against it (the pack is the one the manifest names) and
   *  the one entry it reads against that entry's own CRC-32; check reads the whole directory. */
  directoryCrc32: number;
  /** The bands it has a section for: a bitset of the band count's bits, base64. */
  targets: string;
  /** A pack of a part of a shared step (band-step.ts, runSlice): which part. */
  part?: number;
}

/** How messages are stored (message-pack-format.ts); a band solve under way whose manifest names
 *  another (leb128-runs-packs: packs whose directory each target read whole; leb128-runs: a file
 *  per target and kind; float64 files before that) is refused, not misread. */
export const MESSAGE_CODING = 'leb128-runs-packs2';

/** Pack file names: pass, source band, the attempt that wrote it. */
export const MESSAGE_FILE = /^msg-p(\d+)-b(\d{5,})\.([0-9a-f]{8})\.msg$/;

export function messageFileName(pass: number, source: number, attempt: string): string {
  return `msg-p${pass}-b${String(source).padStart(5, '0')}.${attempt}.msg`;
}

/** The (pass, source, attempt) of a pack file's name, or undefined. */
export function parseMessageFileName(name: string): { pass: number; source: number; attempt: string } | undefined {
  const m = MESSAGE_FILE.exec(name);
  return m ? { pass: Number(m[1]), source: Number(m[2]), attempt: m[3]! } : undefined;
}

/** The bitset of `targets` (ascending or not) among `bands` bands, as a pack records it. */
export function encodeTargets(targets: Iterable<number>, bands: number): string {
  const bits = new Uint8Array(Math.ceil(bands / 8));
  for (const t of targets) bits[t >> 3]! |= 1 << (t & 7);
  return Buffer.from(bits).toString('base64');
}

const decoded = new WeakMap<MessagePack, Uint8Array>();

function bitsOf(pack: MessagePack): Uint8Array {
  let bits = decoded.get(pack);
  if (bits === undefined) {
    bits = new Uint8Array(Buffer.from(pack.targets, 'base64'));
    decoded.set(pack, bits);
  }
  return bits;
}

export function hasTarget(pack: MessagePack, band: number): boolean {
  return ((bitsOf(pack)[band >> 3] ?? 0) & (1 << (band & 7))) !== 0;
}

/** How many bands a pack has sections for. */
export function targetCount(pack: MessagePack): number {
  let n = 0;
  for (const byte of bitsOf(pack)) n += popcount8(byte);
  return n;
}

/** The place of band `band` among the pack's targets, ascending (its directory entry's), or -1
 *  if it is none of them. */
export function targetRank(pack: MessagePack, band: number): number {
  if (!hasTarget(pack, band)) return -1;
  const bits = bitsOf(pack);
  let n = popcount8(bits[band >> 3]! & ((1 << (band & 7)) - 1));
  for (let i = 0; i < band >> 3; i++) n += popcount8(bits[i]!);
  return n;
}

function popcount8(byte: number): number {
  let n = 0;
  for (let b = byte; b !== 0; b &= b - 1) n++;
  return n;
}

/** The bands a pack has a section for, ascending. */
export function targetsOf(pack: MessagePack): number[] {
  const bits = bitsOf(pack);
  const out: number[] = [];
  for (let i = 0; i < bits.length; i++) for (let b = 0; b < 8; b++) if (bits[i]! & (1 << b)) out.push(i * 8 + b);
  return out;
}

/** What is wrong with a targets bitset for `bands` bands (source `source`), if anything: base64
 *  of exactly the band count's bytes, no bit past it, at least one, never the source's own. */
export function targetsProblem(targets: unknown, bands: number, source: number): string | undefined {
  if (typeof targets !== 'string' || !/^[A-Za-z0-9+/]*={0,2}$/.test(targets)) return 'targets that are not base64';
  const bits = Buffer.from(targets, 'base64');
  if (bits.length !== Math.ceil(bands / 8) || bits.toString('base64') !== targets) return `targets of ${bits.length} bytes (${bands} bands take ${Math.ceil(bands / 8)})`;
  if (bands % 8 !== 0 && bits[bits.length - 1]! >> (bands % 8) !== 0) return 'a target past the last band';
  if (bits.every((b) => b === 0)) return 'no target';
  if ((bits[source >> 3]! & (1 << (source & 7))) !== 0) return 'its own band as a target';
  return undefined;
}

/** What is wrong with a manifest's pack entry of a store of `bands` bands, if anything. */
export function packProblem(p: Partial<MessagePack>, bands: number): string | undefined {
  if (p === null || typeof p !== 'object') return 'not an object';
  const name = typeof p.file === 'string' ? parseMessageFileName(p.file) : undefined;
  if (name === undefined) return `the file name "${String(p.file)}"`;
  if (name.pass !== p.pass || name.source !== p.source) return `${p.file}: pass and source other than its name's`;
  if (!Number.isSafeInteger(p.pass) || p.pass! < 1) return `${p.file}: pass ${String(p.pass)}`;
  if (!Number.isSafeInteger(p.source) || p.source! < 0 || p.source! >= bands) return `${p.file}: source band ${String(p.source)}`;
  if (!Number.isSafeInteger(p.count) || p.count! < 1) return `${p.file}: message count ${String(p.count)}`;
  // Each message takes a byte at least, the index some more.
  if (!Number.isSafeInteger(p.bytes) || p.bytes! <= p.count!) return `${p.file}: ${String(p.bytes)} bytes for ${p.count} messages`;
  if (!Number.isSafeInteger(p.directoryCrc32) || p.directoryCrc32! < 0 || p.directoryCrc32! >= 2 ** 32) return `${p.file}: directory checksum ${String(p.directoryCrc32)}`;
  if (p.part !== undefined && (!Number.isSafeInteger(p.part) || p.part < 0 || p.part >= MAX_WORKERS)) return `${p.file}: part ${String(p.part)}`;
  const targets = targetsProblem(p.targets, bands, p.source!);
  return targets === undefined ? undefined : `${p.file}: ${targets}`;
}

/** Whether band `band` takes `pack` at step `at` (its first step after the pack's: takenAt). */
export function takesAt(schedule: BandSchedule, pack: MessagePack, band: number, at: StepAt): boolean {
  if (!hasTarget(pack, band)) return false;
  const when = takenAt(schedule, pack.pass, pack.source, band);
  return when.pass === at.pass && when.round === at.round;
}

/** The packs band `band` reads in its step at `at`, of those the manifest names then. */
export function inboxOf(packs: readonly MessagePack[], schedule: BandSchedule, band: number, at: StepAt): MessagePack[] {
  return packs.filter((p) => takesAt(schedule, p, band, at));
}

/** The last step at which a target of `pack` takes it (the latest of takenAt over its targets),
 *  in one pass over its bitset: a commit asks it of every pack the manifest names (4,096 packs of
 *  4,095 targets each took 260-340 ms a commit by takenAt per target). */
export function lastTakenAt(schedule: BandSchedule, pack: MessagePack): StepAt {
  const bits = bitsOf(pack);
  const { pass, source } = pack;
  // The rounds of this pass and the next, looked up once (a commit asks of every pack).
  const roundNow = passRoundOf(schedule, pass);
  const roundNext = passRoundOf(schedule, pass + 1);
  const from = roundNow[source]!;
  // Targets of rounds after the source's take it in this pass, the others in the next.
  let later = -1;
  let next = -1;
  for (let i = 0; i < bits.length; i++) {
    const byte = bits[i]!;
    if (byte === 0) continue;
    for (let b = 0; b < 8; b++) {
      if ((byte & (1 << b)) === 0) continue;
      const target = i * 8 + b;
      const to = roundNow[target]!;
      if (to > from) later = Math.max(later, to);
      else next = Math.max(next, roundNext[target]!);
    }
  }
  return next >= 0 ? { pass: pass + 1, round: next } : { pass, round: later };
}

/** Whether every target of `pack` has taken it once the store's next step is `next`. */
export function takenByAll(schedule: BandSchedule, pack: MessagePack, next: StepAt): boolean {
  return stepBefore(lastTakenAt(schedule, pack), next);
}
