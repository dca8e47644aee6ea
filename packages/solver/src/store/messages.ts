/**
 * Message packs of the band passes (band-solve.ts; message-pack.ts has what the manifest records):
 * the messages (core's bandMessage) one step sends to the other bands, in one file per step,
 * written while the step runs, flushed before the manifest names it, and read back section by
 * section, in chunks, by each target band's next step.
 *
 * A pack is, in this order:
 *  - the sections' bytes: runs of messages (sorted, without repeats; core's message-runs.ts has
 *    the coding, which each backend brings), each the messages of one kernel call to one band,
 *    written as the calls make them, so one section's runs lie in extents among the others';
 *  - the extents (offset, bytes) of every section, section after section;
 *  - the directory, one entry per section in order of target band then kind: target, kind, first
 *    extent, extents, messages, CRC-32 of the section's bytes (its extents in order);
 *  - a trailer: magic, directory entries, extents, the directory's CRC-32.
 * All numbers are little-endian float64, but the trailer's. The manifest records the directory's
 * CRC-32, so a reader trusts the directory it checks and each section's CRC-32 covers the rest.
 */
import { closeSync, fstatSync, fsyncSync, openSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { MAX_NUMBER_BYTES, type MessageRuns, RUN_NEXT_BYTE, RUN_NEXT_OUT, atRunBoundary, newMessageRunState } from '@ccheckers/core';
import { crc32Of } from '../crc.js';
import { DatabaseError, IO_CHUNK_BYTES, hex } from '../database.js';
import { type MessagePack, encodeTargets, messageFileName, targetsOf } from './message-pack.js';
import { openStoreFile, readAt, refuseIrregular } from './store-files.js';

export type MessageKind = 'values' | 'requests';

/**
 * Codes messages into `bytes`: run(m) codes m (increasing integers below 2^53) as one run or
 * more, calling flush(bytes used) whenever the buffer cannot take the worst case of the next.
 */
export class MessageEncoder {
  private at = 0;

  constructor(
    private readonly runs: MessageRuns,
    private readonly bytes: Uint8Array,
    private readonly flush: (bytes: Uint8Array) => void,
  ) {
    if (bytes.length < 4 * MAX_NUMBER_BYTES) throw new RangeError('message encoder: a buffer of at least 32 bytes');
  }

  run(messages: Float64Array): void {
    // At most this many messages a run, so that a run's worst case fits an empty buffer.
    const perRun = Math.floor(this.bytes.length / MAX_NUMBER_BYTES) - 2;
    for (let from = 0; from < messages.length; from += perRun) {
      const to = Math.min(messages.length, from + perRun);
      if (this.at + (to - from + 2) * MAX_NUMBER_BYTES > this.bytes.length) this.flushNow();
      this.at = this.runs.encodeMessageRun(messages, from, to, this.bytes, this.at);
    }
  }

  /** Hands what is coded to flush(). */
  flushNow(): void {
    if (this.at > 0) this.flush(this.bytes.subarray(0, this.at));
    this.at = 0;
  }
}

/** Decodes message files piece by piece: decode() takes any split of the bytes (a number may span
 *  two pieces) and stops when `out` is full. */
export class MessageDecoder {
  private readonly state = newMessageRunState();

  constructor(private readonly runs: MessageRuns) {}

  /** Decodes bytes[from, bytes.length) into out[at, out.length): stops at the end of either.
   *  Returns [the next byte to decode, the next free place of out]. */
  decode(bytes: Uint8Array, from: number, out: Float64Array, at: number): [number, number] {
    this.runs.decodeMessageRuns(bytes, from, out, at, this.state);
    return [this.state[RUN_NEXT_BYTE]!, this.state[RUN_NEXT_OUT]!];
  }

  /** Between runs (the end of a whole file). */
  get atEnd(): boolean {
    return atRunBoundary(this.state);
  }
}

/** The trailer: magic (8 bytes), directory entries, extents, directory CRC-32 (uint32 each), 4
 *  bytes of zeros. */
const PACK_MAGIC = 'CCMSGPK1';
const TRAILER_BYTES = 24;
/** Float64 fields of a directory entry and of an extent. */
const ENTRY_FIELDS = 6;
const EXTENT_FIELDS = 2;
const ENTRY_BYTES = 8 * ENTRY_FIELDS;
const EXTENT_BYTES = 8 * EXTENT_FIELDS;

const KIND_CODE: Record<MessageKind, number> = { values: 0, requests: 1 };

/** A section being written: its extents (offset, bytes, flat), messages and CRC-32 so far. */
interface SectionOut {
  target: number;
  kind: MessageKind;
  extents: number[];
  count: number;
  crc32: number;
}

/** The message pack of one step (pass, source), written as the step's calls make messages; its
 *  name carries the attempt's token (a step run twice at once on two machines writes another). */
export class MessagePackWriter {
  readonly file: string;
  private fd: number | undefined;
  private readonly sections = new Map<number, SectionOut>();
  /** The end of the sections' bytes so far. */
  private at = 0;
  bytesWritten = 0;
  messagesWritten = 0;

  /** `buffer`: where runs are coded before they are written (its size sets the writes'). */
  constructor(
    private readonly dir: string,
    private readonly pass: number,
    private readonly source: number,
    attempt: string,
    private readonly bands: number,
    private readonly runs: MessageRuns,
    private readonly buffer: Uint8Array,
  ) {
    this.file = messageFileName(pass, source, attempt);
  }

  /** Appends the messages (increasing: a kernel call's to one band) as runs to the section for
   *  (target, kind). */
  write(target: number, kind: MessageKind, messages: Float64Array): void {
    if (messages.length === 0) return;
    const section = this.sectionFor(target, kind);
    const encoder = new MessageEncoder(this.runs, this.buffer, (bytes) => this.append(section, bytes));
    encoder.run(messages);
    encoder.flushNow();
    section.count += messages.length;
    this.messagesWritten += messages.length;
  }

  /** Appends `count` messages already coded as runs (`bytes`: a kernel's, see BandResult.coded). */
  writeRun(target: number, kind: MessageKind, bytes: Uint8Array, count: number): void {
    if (count === 0) return;
    const section = this.sectionFor(target, kind);
    this.append(section, bytes);
    section.count += count;
    this.messagesWritten += count;
  }

  private sectionFor(target: number, kind: MessageKind): SectionOut {
    if (!Number.isSafeInteger(target) || target < 0 || target >= this.bands || target === this.source) throw new RangeError(`message pack: no section for band ${target}`);
    const key = target * 2 + KIND_CODE[kind];
    let section = this.sections.get(key);
    if (section === undefined) {
      section = { target, kind, extents: [], count: 0, crc32: 0 };
      this.sections.set(key, section);
    }
    return section;
  }

  private append(section: SectionOut, bytes: Uint8Array): void {
    this.fd ??= openSync(join(this.dir, this.file), 'w');
    this.writeAt(bytes, this.at);
    const { extents } = section;
    // Runs written one after the other to the same section make one extent.
    if (extents.length > 0 && extents[extents.length - 2]! + extents[extents.length - 1]! === this.at) extents[extents.length - 1]! += bytes.length;
    else extents.push(this.at, bytes.length);
    section.crc32 = crc32Of(bytes, section.crc32);
    this.at += bytes.length;
  }

  private writeAt(bytes: Uint8Array, position: number): void {
    for (let at = 0; at < bytes.length; ) at += writeSync(this.fd!, bytes, at, Math.min(IO_CHUNK_BYTES, bytes.length - at), position + at);
    this.bytesWritten += bytes.length;
  }

  /** Writes the index, flushes the pack to the disk and closes it: what the manifest is to name
   *  (undefined: the step sent nothing, and no file was made). */
  finish(): MessagePack | undefined {
    if (this.fd === undefined) return undefined;
    const sections = [...this.sections.entries()].sort((a, b) => a[0] - b[0]).map(([, s]) => s);
    const extentCount = sections.reduce((n, s) => n + s.extents.length / 2, 0);
    const extents = new Float64Array(extentCount * EXTENT_FIELDS);
    const directory = new Float64Array(sections.length * ENTRY_FIELDS);
    let first = 0;
    sections.forEach((s, i) => {
      extents.set(s.extents, first * EXTENT_FIELDS);
      directory.set([s.target, KIND_CODE[s.kind], first, s.extents.length / 2, s.count, s.crc32], i * ENTRY_FIELDS);
      first += s.extents.length / 2;
    });
    const directoryBytes = littleEndian(directory);
    const directoryCrc32 = crc32Of(directoryBytes);
    const trailer = Buffer.alloc(TRAILER_BYTES);
    trailer.write(PACK_MAGIC, 0, 'latin1');
    trailer.writeUInt32LE(sections.length, 8);
    trailer.writeUInt32LE(extentCount, 12);
    trailer.writeUInt32LE(directoryCrc32, 16);
    let position = this.at;
    for (const bytes of [littleEndian(extents), directoryBytes, trailer]) {
      this.writeAt(bytes, position);
      position += bytes.length;
    }
    try {
      fsyncSync(this.fd);
    } finally {
      closeSync(this.fd);
      this.fd = undefined;
    }
    return {
      file: this.file,
      pass: this.pass,
      source: this.source,
      bytes: position,
      count: this.messagesWritten,
      directoryCrc32,
      targets: encodeTargets(
        sections.map((s) => s.target),
        this.bands,
      ),
    };
  }

  /** Closes the file if open (a step that failed: its pack is a leftover, removed on resume). */
  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }
}

function littleEndian(numbers: Float64Array): Uint8Array {
  const bytes = Buffer.alloc(numbers.length * 8);
  numbers.forEach((x, i) => bytes.writeDoubleLE(x, i * 8));
  return bytes;
}

/** What a reader needs: the coding, buffers for the file's bytes in pieces and the messages
 *  decoded from them. */
export interface MessageReading {
  runs: MessageRuns;
  bytes: Uint8Array;
  messages: Float64Array;
}

/** A section as the directory gives it. */
interface SectionIn {
  target: number;
  kind: MessageKind;
  firstExtent: number;
  extents: number;
  count: number;
  crc32: number;
}

/** An open pack whose trailer and directory were read and checked. */
interface OpenPack {
  fd: number;
  path: string;
  sections: SectionIn[];
  /** Bytes of the sections (where the extents start). */
  dataBytes: number;
}

/**
 * Reads and checks the trailer and directory of the pack at `path` of `size` bytes (a store of
 * `bands` bands): the directory's CRC-32 against `directoryCrc32` where the manifest gives one.
 * Returns the sections, or what is wrong.
 */
function readDirectory(fd: number, path: string, size: number, bands: number, directoryCrc32: number | undefined): { sections: SectionIn[]; dataBytes: number } | string {
  if (size < TRAILER_BYTES) return 'message file is too short for a pack';
  const trailer = Buffer.alloc(TRAILER_BYTES);
  readAt(fd, path, trailer, size - TRAILER_BYTES, 'message file');
  if (trailer.toString('latin1', 0, 8) !== PACK_MAGIC) return 'message file is not a message pack (no trailer)';
  const entries = trailer.readUInt32LE(8);
  const extentCount = trailer.readUInt32LE(12);
  // A section per (target, kind): at most 2 per band, checked before the directory is read into
  // memory (a damaged count of up to 2^32 entries would allocate up to the file's size).
  if (entries > 2 * bands) return `message pack's index has ${entries} sections (${bands} bands take at most ${2 * bands})`;
  const indexBytes = TRAILER_BYTES + entries * ENTRY_BYTES + extentCount * EXTENT_BYTES;
  if (entries < 1 || extentCount < entries || indexBytes > size) return `message pack's index (${entries} sections, ${extentCount} extents) does not fit its ${size} bytes`;
  const directoryBytes = Buffer.alloc(entries * ENTRY_BYTES);
  readAt(fd, path, directoryBytes, size - TRAILER_BYTES - directoryBytes.length, 'message file');
  const crc = crc32Of(directoryBytes);
  if (crc !== trailer.readUInt32LE(16)) return 'message pack\'s directory fails its CRC-32 check';
  if (directoryCrc32 !== undefined && crc !== directoryCrc32) return `message pack's directory is not the one the manifest records (${hex(directoryCrc32)})`;
  const dataBytes = size - indexBytes;
  const sections: SectionIn[] = [];
  let first = 0;
  let lastKey = -1;
  for (let i = 0; i < entries; i++) {
    const f = (k: number) => directoryBytes.readDoubleLE((i * ENTRY_FIELDS + k) * 8);
    const [target, kind, firstExtent, extents, count, crc32] = [f(0), f(1), f(2), f(3), f(4), f(5)];
    const key = target * 2 + kind;
    const whole = [target, firstExtent, extents, count, crc32].every(Number.isSafeInteger);
    if (!whole || target < 0 || target >= bands || (kind !== 0 && kind !== 1) || key <= lastKey || firstExtent !== first || extents < 1 || first + extents > extentCount || count < 1 || count > dataBytes || crc32 < 0 || crc32 >= 2 ** 32) {
      return `message pack's directory entry ${i} is malformed`;
    }
    sections.push({ target, kind: kind === 0 ? 'values' : 'requests', firstExtent, extents, count, crc32 });
    first += extents;
    lastKey = key;
  }
  if (first !== extentCount) return 'message pack\'s directory does not cover its extents';
  return { sections, dataBytes };
}

/** Opens the pack `pack` names, checked against it: size, trailer, directory, the count and targets
 *  the manifest records. Problems are DatabaseErrors naming the file. */
function openPack(dir: string, pack: MessagePack, bands: number): OpenPack {
  const path = join(dir, pack.file);
  refuseIrregular(path, 'message file');
  let fd: number;
  try {
    fd = openStoreFile(path, 'message file');
  } catch (e) {
    if (e instanceof DatabaseError) throw e;
    throw new DatabaseError(path, `message file is missing or unreadable (${(e as Error).message})`);
  }
  try {
    const size = fstatSync(fd).size;
    if (size !== pack.bytes) throw new DatabaseError(path, `message file has ${size} bytes, the manifest records ${pack.bytes}`);
    const read = readDirectory(fd, path, size, bands, pack.directoryCrc32);
    if (typeof read === 'string') throw new DatabaseError(path, read);
    const count = read.sections.reduce((n, s) => n + s.count, 0);
    if (count !== pack.count) throw new DatabaseError(path, `message file holds ${count} messages, the manifest records ${pack.count}`);
    const targets = [...new Set(read.sections.map((s) => s.target))];
    if (targets.join() !== targetsOf(pack).join()) throw new DatabaseError(path, 'message file has sections for other bands than the manifest records');
    return { fd, path, sections: read.sections, dataBytes: read.dataBytes };
  } catch (e) {
    closeSync(fd);
    throw e;
  }
}

/** The bands a pack file has sections for, read from its own index (no manifest names it), or
 *  undefined where it has none that reads: to tell a leftover from a pack the manifest lost. */
export function packFileTargets(path: string, bands: number): number[] | undefined {
  try {
    refuseIrregular(path, 'message file');
    const fd = openStoreFile(path, 'message file');
    try {
      const read = readDirectory(fd, path, fstatSync(fd).size, bands, undefined);
      return typeof read === 'string' ? undefined : [...new Set(read.sections.map((s) => s.target))];
    } finally {
      closeSync(fd);
    }
  } catch {
    return undefined;
  }
}

/** The section's name in messages: which band and kind. */
function sectionName(section: SectionIn): string {
  return `section for band ${section.target} (${section.kind})`;
}

/** What the pieces of a section read so far: their CRC-32 and bytes. */
interface PiecesRead {
  crc32: number;
  bytes: number;
}

/**
 * The bytes of a section in pieces of at most `bytes`' length (each a view of it, valid until the
 * next), their CRC-32 in `read.crc32` (checked by checkEnd). A piece gathers consecutive extents
 * (a call's messages to one band may be a few bytes: one kernel call each would cost more than the
 * bytes). Extents outside the sections' bytes are a DatabaseError naming the file.
 */
function* sectionPieces(open: OpenPack, section: SectionIn, bytes: Uint8Array, read: PiecesRead): Generator<Uint8Array> {
  const extents = Buffer.alloc(EXTENT_BYTES * Math.min(section.extents, 4096));
  let filled = 0;
  for (let done = 0; done < section.extents; ) {
    const n = Math.min(section.extents - done, extents.length / EXTENT_BYTES);
    readAt(open.fd, open.path, extents.subarray(0, n * EXTENT_BYTES), open.dataBytes + (section.firstExtent + done) * EXTENT_BYTES, 'message file');
    for (let i = 0; i < n; i++) {
      const offset = extents.readDoubleLE(i * EXTENT_BYTES);
      const length = extents.readDoubleLE(i * EXTENT_BYTES + 8);
      if (!Number.isSafeInteger(offset) || !Number.isSafeInteger(length) || offset < 0 || length < 1 || offset + length > open.dataBytes) {
        throw new DatabaseError(open.path, `message file's ${sectionName(section)} has an extent outside its bytes`);
      }
      for (let at = 0; at < length; ) {
        const piece = bytes.subarray(filled, Math.min(bytes.length, filled + length - at));
        readAt(open.fd, open.path, piece, offset + at, 'message file');
        read.crc32 = crc32Of(piece, read.crc32);
        read.bytes += piece.length;
        at += piece.length;
        filled += piece.length;
        if (filled === bytes.length) {
          yield bytes;
          filled = 0;
        }
      }
    }
    done += n;
  }
  if (filled > 0) yield bytes.subarray(0, filled);
}

/** The checks after a section's last piece: whole runs, its CRC-32, as many messages as the
 *  directory records. */
function checkEnd(open: OpenPack, section: SectionIn, atRunEnd: boolean, crc32: number, count: number): void {
  const name = sectionName(section);
  if (!atRunEnd) throw new DatabaseError(open.path, `message file's ${name} ends inside a run`);
  if (crc32 !== section.crc32) throw new DatabaseError(open.path, `message file's ${name} fails its CRC-32 check (directory ${hex(section.crc32)})`);
  if (count !== section.count) throw new DatabaseError(open.path, `message file's ${name} holds ${count} messages, its directory records ${section.count}`);
}

/**
 * The messages of a section in chunks of at most `reading.messages`' length (each a view of it,
 * valid until the next). A section that does not decode into the count of messages the directory
 * records, or that fails its CRC-32 (checked after the last chunk) is a DatabaseError naming it.
 */
function* sectionMessages(open: OpenPack, section: SectionIn, reading: MessageReading, read: PiecesRead = { crc32: 0, bytes: 0 }): Generator<Float64Array> {
  const { messages } = reading;
  const decoder = new MessageDecoder(reading.runs);
  let count = 0;
  let filled = 0;
  for (const piece of sectionPieces(open, section, reading.bytes, read)) {
    for (let next = 0; next < piece.length; ) {
      try {
        [next, filled] = decoder.decode(piece, next, messages, filled);
      } catch (e) {
        if (e instanceof RangeError) throw new DatabaseError(open.path, `message file's ${sectionName(section)} is not a list of message runs (${e.message})`);
        throw e;
      }
      if (filled === messages.length) {
        count += filled;
        yield messages;
        filled = 0;
      }
    }
  }
  if (filled > 0) {
    count += filled;
    yield messages.subarray(0, filled);
  }
  checkEnd(open, section, decoder.atEnd, read.crc32, count);
}

/** What is wrong with a message pack (size, index, each section's coding, count and CRC-32), if
 *  anything: for check. */
export function messageFileProblem(dir: string, pack: MessagePack, bands: number, reading: MessageReading): string | undefined {
  try {
    const open = openPack(dir, pack, bands);
    try {
      for (const section of open.sections) for (const _ of sectionMessages(open, section, reading));
    } finally {
      closeSync(open.fd);
    }
    return undefined;
  } catch (e) {
    if (e instanceof DatabaseError) return e.message;
    throw e;
  }
}

/** Runs `use` on the pack's section for (target, kind) with the pack open, if it has one. */
async function withSection(dir: string, pack: MessagePack, bands: number, target: number, kind: MessageKind, use: (open: OpenPack, section: SectionIn) => Promise<void>): Promise<number> {
  const open = openPack(dir, pack, bands);
  try {
    const section = open.sections.find((s) => s.target === target && s.kind === kind);
    if (section === undefined) return 0;
    await use(open, section);
    return section.extents * EXTENT_BYTES + open.sections.length * ENTRY_BYTES + TRAILER_BYTES;
  } finally {
    closeSync(open.fd);
  }
}

/**
 * Calls `use` on the messages of the pack's section for (target, kind), if it has one, in chunks
 * of at most `reading.messages`' length. The CRC-32 and count are checked at the end; a section of
 * the wrong coding, count or CRC, or whose messages `use` refuses, is a DatabaseError naming the
 * file (its band is not saved then: nothing it did is kept). Returns the bytes read.
 */
export async function readMessages(
  dir: string,
  pack: MessagePack,
  bands: number,
  target: number,
  kind: MessageKind,
  reading: MessageReading,
  use: (messages: Float64Array) => void | Promise<void>,
): Promise<number> {
  const read = { crc32: 0, bytes: 0 };
  const index = await withSection(dir, pack, bands, target, kind, async (open, section) => {
    for (const messages of sectionMessages(open, section, reading, read)) {
      try {
        await use(messages);
      } catch (e) {
        if (e instanceof RangeError) throw new DatabaseError(open.path, `message file's ${sectionName(section)} holds messages its band refuses (${e.message})`);
        throw e;
      }
    }
  });
  return read.bytes + index;
}

/** What the decoders (message-runs.ts, message_runs.hpp) say of bytes that are not message runs. */
const DECODER_REFUSALS = /^(a number of 2\^53 or more|an empty run|a message repeated|a message of 2\^53 or more)$/;

/**
 * Hands the bytes of the pack's values section for `target` (if any) to `apply` piece by piece,
 * with the decoder's state (which carries a run and a number from piece to piece):
 * SolverKernel.bandApplyRuns, which decodes and applies them at once. apply returns the messages
 * it decoded. The count and CRC-32 are checked at the end; a section of the wrong coding, count or
 * CRC, or whose values `apply` refuses, is a DatabaseError naming the file (its band is not saved
 * then: nothing it did is kept). Returns the bytes read.
 */
export async function applyMessageFile(
  dir: string,
  pack: MessagePack,
  bands: number,
  target: number,
  reading: MessageReading,
  apply: (bytes: Uint8Array, state: Float64Array) => number | Promise<number>,
): Promise<number> {
  const read = { crc32: 0, bytes: 0 };
  const index = await withSection(dir, pack, bands, target, 'values', async (open, section) => {
    const state = newMessageRunState();
    let count = 0;
    for (const piece of sectionPieces(open, section, reading.bytes, read)) {
      try {
        count += await apply(piece, state);
      } catch (e) {
        // The kernel's refusals of the band's values, and the decoder's of the coding, are the
        // file's; anything else (a bad argument) goes up as it is.
        const name = sectionName(section);
        if (e instanceof RangeError && /^band apply/.test(e.message)) throw new DatabaseError(open.path, `message file's ${name} holds messages its band refuses (${e.message})`);
        if (e instanceof RangeError && DECODER_REFUSALS.test(e.message)) throw new DatabaseError(open.path, `message file's ${name} is not a list of message runs (${e.message})`);
        throw e;
      }
    }
    checkEnd(open, section, atRunBoundary(state), read.crc32, count);
  });
  return read.bytes + index;
}
