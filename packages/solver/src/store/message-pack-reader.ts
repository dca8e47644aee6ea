/**
 * Reads the message packs (message-pack-format.ts has the layout; message-pack-writer.ts writes
 * them): PackReader, a pack opened for the step of one of its targets, reads that target's
 * directory entry alone and its sections in chunks; messageFileProblem checks a whole pack (for
 * check); packFileTargets reads the targets of a pack no manifest names.
 */
import { closeSync, fstatSync } from 'node:fs';
import { join } from 'node:path';
import { type MessageRuns, atRunBoundary, newMessageRunState } from '@ccheckers/core';
import { crc32Of } from '../crc.js';
import { DatabaseError, hex } from '../database.js';
import { EARLIER_PACK_MAGIC, ENTRY_BYTES, ENTRY_CHECKED_BYTES, ENTRY_FIELDS, EXTENT_BYTES, KINDS, type MessageKind, PACK_MAGIC, TRAILER_BYTES } from './message-pack-format.js';
import { type MessagePack, targetCount, targetRank, targetsOf } from './message-pack.js';
import { MessageDecoder } from './messages.js';
import { openStoreFile, readAt, refuseIrregular } from './store-files.js';

/** What a reader needs: the coding, buffers for the file's bytes in pieces and the messages
 *  decoded from them. */
export interface MessageReading {
  runs: MessageRuns;
  bytes: Uint8Array;
  messages: Float64Array;
}

/** A section as its directory entry gives it. */
interface SectionIn {
  target: number;
  kind: MessageKind;
  firstExtent: number;
  extents: number;
  count: number;
  crc32: number;
}

/** A directory entry: a target's sections (a kind it has not: undefined). */
interface EntryIn {
  target: number;
  values: SectionIn | undefined;
  requests: SectionIn | undefined;
}

/** A pack's trailer, read and checked on its own. */
interface Trailer {
  entries: number;
  extentCount: number;
  messages: number;
  directoryCrc32: number;
  /** Bytes of the sections (where the extents start), and where the directory starts. */
  dataBytes: number;
  directoryAt: number;
}

/** An open pack: what its sections are read with. */
interface PackFile {
  fd: number;
  path: string;
  dataBytes: number;
}

/** Reads and checks the trailer of the pack at `path` of `size` bytes (a store of `bands` bands).
 *  Returns it, or what is wrong. */
function readTrailer(fd: number, path: string, size: number, bands: number): Trailer | string {
  if (size < TRAILER_BYTES) return 'message file is too short for a pack';
  const trailer = Buffer.alloc(TRAILER_BYTES);
  readAt(fd, path, trailer, size - TRAILER_BYTES, 'message file');
  if (trailer.toString('latin1', 0, 8) !== PACK_MAGIC) {
    // An earlier pack ends in a trailer of 24 bytes.
    if (trailer.toString('latin1', 8, 16) === EARLIER_PACK_MAGIC) {
      return `message file is a pack of an earlier version of ccheckers (${EARLIER_PACK_MAGIC}): finish the solve with the version that started it, or start it again`;
    }
    return 'message file is not a message pack (no trailer)';
  }
  if (crc32Of(trailer.subarray(0, 28)) !== trailer.readUInt32LE(28)) return "message pack's trailer fails its CRC-32 check";
  const entries = trailer.readUInt32LE(8);
  const extentCount = trailer.readUInt32LE(12);
  const messages = trailer.readDoubleLE(16);
  // An entry per target, never the source: checked before a directory is read into memory (a
  // count of up to 2^32 entries would allocate up to the file's size).
  if (entries >= bands) return `message pack's index has ${entries} entries (a pack of ${bands} bands has at most ${bands - 1})`;
  const indexBytes = TRAILER_BYTES + entries * ENTRY_BYTES + extentCount * EXTENT_BYTES;
  if (entries < 1 || extentCount < entries || indexBytes > size) return `message pack's index (${entries} entries, ${extentCount} extents) does not fit its ${size} bytes`;
  const dataBytes = size - indexBytes;
  if (!Number.isSafeInteger(messages) || messages < 1 || messages > dataBytes) return `message pack's trailer counts ${messages} messages in ${dataBytes} bytes`;
  return { entries, extentCount, messages, directoryCrc32: trailer.readUInt32LE(24), dataBytes, directoryAt: dataBytes + extentCount * EXTENT_BYTES };
}

/**
 * The entry at `bytes[at, at + ENTRY_BYTES)` (entry `index` of the directory of `trailer`), checked
 * on its own: its CRC-32, its fields, its extents among the trailer's. Returns it, or what is wrong.
 */
function parseEntry(bytes: Buffer, at: number, index: number, trailer: Trailer, bands: number): EntryIn | string {
  const f = (k: number) => bytes.readDoubleLE(at + k * 8);
  if (crc32Of(bytes.subarray(at, at + ENTRY_CHECKED_BYTES)) !== f(ENTRY_FIELDS - 1)) return `message pack's directory entry ${index} fails its CRC-32 check`;
  const malformed = `message pack's directory entry ${index} is malformed`;
  const target = f(0);
  if (!Number.isSafeInteger(target) || target < 0 || target >= bands) return malformed;
  const entry: EntryIn = { target, values: undefined, requests: undefined };
  let first = f(1);
  for (const [i, kind] of KINDS.entries()) {
    const [firstExtent, extents, count, crc32] = [f(1 + 4 * i), f(2 + 4 * i), f(3 + 4 * i), f(4 + 4 * i)];
    if (![firstExtent, extents, count, crc32].every(Number.isSafeInteger) || firstExtent !== first || firstExtent < 0 || extents < 0 || count < 0 || crc32 < 0 || crc32 >= 2 ** 32) return malformed;
    if (extents === 0 ? count !== 0 || crc32 !== 0 : count < 1 || count > trailer.dataBytes) return malformed;
    if (firstExtent + extents > trailer.extentCount) return `message pack's directory entry ${index} has extents past the ${trailer.extentCount} of its index`;
    if (extents > 0) entry[kind] = { target, kind, firstExtent, extents, count, crc32 };
    first += extents;
  }
  return entry.values || entry.requests ? entry : malformed;
}

/** The whole directory of a pack whose trailer was read: every entry checked, in order of target,
 *  covering the extents, and the directory's CRC-32. For check, and for a pack no manifest names. */
function readDirectory(fd: number, path: string, trailer: Trailer, bands: number): EntryIn[] | string {
  const bytes = Buffer.alloc(trailer.entries * ENTRY_BYTES);
  readAt(fd, path, bytes, trailer.directoryAt, 'message file');
  if (crc32Of(bytes) !== trailer.directoryCrc32) return "message pack's directory fails its CRC-32 check";
  const entries: EntryIn[] = [];
  let first = 0;
  for (let i = 0; i < trailer.entries; i++) {
    const entry = parseEntry(bytes, i * ENTRY_BYTES, i, trailer, bands);
    if (typeof entry === 'string') return entry;
    const at = (entry.values ?? entry.requests)!.firstExtent;
    if (at !== first || (i > 0 && entry.target <= entries[i - 1]!.target)) return `message pack's directory entry ${i} is out of order`;
    first = at + (entry.values?.extents ?? 0) + (entry.requests?.extents ?? 0);
    entries.push(entry);
  }
  if (first !== trailer.extentCount) return "message pack's directory does not cover its extents";
  return entries;
}

/** Opens the file of `pack` and reads its trailer, checked against the manifest's record of it:
 *  size, messages, directory CRC-32, as many entries as targets. Problems are DatabaseErrors
 *  naming the file (which is closed then). */
function openPack(dir: string, pack: MessagePack, bands: number): { file: PackFile; trailer: Trailer } {
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
    const trailer = readTrailer(fd, path, size, bands);
    if (typeof trailer === 'string') throw new DatabaseError(path, trailer);
    if (trailer.messages !== pack.count) throw new DatabaseError(path, `message file holds ${trailer.messages} messages, the manifest records ${pack.count}`);
    if (trailer.directoryCrc32 !== pack.directoryCrc32) throw new DatabaseError(path, `message pack's directory is not the one the manifest records (${hex(pack.directoryCrc32)}, the file's ${hex(trailer.directoryCrc32)})`);
    const targets = targetCount(pack);
    if (trailer.entries !== targets) throw new DatabaseError(path, `message file has sections for ${trailer.entries} bands, the manifest records ${targets}`);
    return { file: { fd, path, dataBytes: trailer.dataBytes }, trailer };
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
      const trailer = readTrailer(fd, path, fstatSync(fd).size, bands);
      const entries = typeof trailer === 'string' ? trailer : readDirectory(fd, path, trailer, bands);
      return typeof entries === 'string' ? undefined : entries.map((e) => e.target);
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
 * bytes). Extents outside the sections' bytes are a DatabaseError naming the file. The extents'
 * own bytes read are added to `read.bytes` too.
 */
function* sectionPieces(open: PackFile, section: SectionIn, bytes: Uint8Array, read: PiecesRead): Generator<Uint8Array> {
  const extents = Buffer.alloc(EXTENT_BYTES * Math.min(section.extents, 4096));
  let filled = 0;
  for (let done = 0; done < section.extents; ) {
    const n = Math.min(section.extents - done, extents.length / EXTENT_BYTES);
    readAt(open.fd, open.path, extents.subarray(0, n * EXTENT_BYTES), open.dataBytes + (section.firstExtent + done) * EXTENT_BYTES, 'message file');
    read.bytes += n * EXTENT_BYTES;
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
function checkEnd(open: PackFile, section: SectionIn, atRunEnd: boolean, crc32: number, count: number): void {
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
function* sectionMessages(open: PackFile, section: SectionIn, reading: MessageReading, read: PiecesRead = { crc32: 0, bytes: 0 }): Generator<Float64Array> {
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

/** What is wrong with a message pack (size, trailer, every directory entry, each section's coding,
 *  count and CRC-32; against the manifest's record), if anything: for check. */
export function messageFileProblem(dir: string, pack: MessagePack, bands: number, reading: MessageReading): string | undefined {
  try {
    const { file, trailer } = openPack(dir, pack, bands);
    try {
      const entries = readDirectory(file.fd, file.path, trailer, bands);
      if (typeof entries === 'string') throw new DatabaseError(file.path, entries);
      if (entries.map((e) => e.target).join() !== targetsOf(pack).join()) throw new DatabaseError(file.path, 'message file has sections for other bands than the manifest records');
      const sections = entries.flatMap((e) => [e.values, e.requests].filter((s) => s !== undefined));
      const count = sections.reduce((n, s) => n + s.count, 0);
      if (count !== trailer.messages) throw new DatabaseError(file.path, `message pack's directory counts ${count} messages, its trailer ${trailer.messages}`);
      for (const section of sections) for (const _ of sectionMessages(file, section, reading));
    } finally {
      closeSync(file.fd);
    }
    return undefined;
  } catch (e) {
    if (e instanceof DatabaseError) return e.message;
    throw e;
  }
}

/** What the decoders (message-runs.ts, message_runs.hpp) say of bytes that are not message runs. */
const DECODER_REFUSALS = /^(a number of 2\^53 or more|an empty run|a message repeated|a message of 2\^53 or more)$/;

/**
 * A pack opened for the step of one of its targets: the file opened once, its trailer and the
 * target's directory entry read and checked (at the place the manifest's targets give it: the
 * entry of the k-th target is the k-th), and its values and requests sections read from it, each
 * once. close() it when done (or reopen() it after close(), for a step with more packs than it
 * keeps open: the entry is not read again). Problems are DatabaseErrors naming the file (its band
 * is not saved then: nothing it did is kept).
 */
export class PackReader {
  /** Bytes read so far: trailer, entry, extents and sections. */
  bytesRead = TRAILER_BYTES + ENTRY_BYTES;

  private constructor(
    private file: PackFile | undefined,
    private readonly pack: MessagePack,
    private readonly dir: string,
    private readonly entry: EntryIn,
  ) {}

  /** Opens `pack` (of a store of `bands` bands) for band `target`, one of its targets. */
  static open(dir: string, pack: MessagePack, bands: number, target: number): PackReader {
    const rank = targetRank(pack, target);
    if (rank < 0) throw new RangeError(`message pack ${pack.file}: band ${target} is none of its targets`);
    const { file, trailer } = openPack(dir, pack, bands);
    try {
      const bytes = Buffer.alloc(ENTRY_BYTES);
      readAt(file.fd, file.path, bytes, trailer.directoryAt + rank * ENTRY_BYTES, 'message file');
      const entry = parseEntry(bytes, 0, rank, trailer, bands);
      if (typeof entry === 'string') throw new DatabaseError(file.path, entry);
      if (entry.target !== target) throw new DatabaseError(file.path, `message pack's directory entry ${rank} is for band ${entry.target}, where the manifest's targets put band ${target}'s`);
      return new PackReader(file, pack, dir, entry);
    } catch (e) {
      closeSync(file.fd);
      throw e;
    }
  }

  has(kind: MessageKind): boolean {
    return this.entry[kind] !== undefined;
  }

  private section(kind: MessageKind): { open: PackFile; section: SectionIn } | undefined {
    const section = this.entry[kind];
    if (section === undefined) return undefined;
    if (this.file === undefined) throw new Error(`message pack ${this.pack.file}: read after close`);
    return { open: this.file, section };
  }

  /**
   * Hands the bytes of the values section (if any) to `apply` piece by piece, with the decoder's
   * state (which carries a run and a number from piece to piece): SolverKernel.bandApplyRuns,
   * which decodes and applies them at once. apply returns the messages it decoded. The count and
   * CRC-32 are checked at the end; a section of the wrong coding, count or CRC, or whose values
   * `apply` refuses, is a DatabaseError naming the file. Returns the bytes read.
   */
  async applyValues(reading: MessageReading, apply: (bytes: Uint8Array, state: Float64Array) => number | Promise<number>): Promise<number> {
    const found = this.section('values');
    if (found === undefined) return 0;
    const { open, section } = found;
    const read = { crc32: 0, bytes: 0 };
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
    this.bytesRead += read.bytes;
    return read.bytes;
  }

  /**
   * Calls `use` on the messages of the section of `kind` (if any) in chunks of at most
   * `reading.messages`' length. The CRC-32 and count are checked at the end; a section of the
   * wrong coding, count or CRC, or whose messages `use` refuses, is a DatabaseError naming the
   * file. Returns the bytes read.
   */
  async readMessages(kind: MessageKind, reading: MessageReading, use: (messages: Float64Array) => void | Promise<void>): Promise<number> {
    const found = this.section(kind);
    if (found === undefined) return 0;
    const { open, section } = found;
    const read = { crc32: 0, bytes: 0 };
    for (const messages of sectionMessages(open, section, reading, read)) {
      try {
        await use(messages);
      } catch (e) {
        if (e instanceof RangeError) throw new DatabaseError(open.path, `message file's ${sectionName(section)} holds messages its band refuses (${e.message})`);
        throw e;
      }
    }
    this.bytesRead += read.bytes;
    return read.bytes;
  }

  close(): void {
    if (this.file !== undefined) closeSync(this.file.fd);
    this.file = undefined;
  }

  /** Opens the file again after close(), checked as the manifest records it (size, trailer); the
   *  entry read at open() is kept. */
  reopen(bands: number): void {
    if (this.file !== undefined) return;
    this.file = openPack(this.dir, this.pack, bands).file;
    this.bytesRead += TRAILER_BYTES;
  }
}
