/**
 * Message files of the band passes (band-solve.ts): the messages (core's bandMessage) one step of
 * a pass sends to each other band, one file per target and kind, written while the step runs,
 * flushed before the manifest names them, read back in chunks by the target band's step.
 *
 * A file is a sequence of runs, each the messages of one kernel call to that band (sorted, without
 * repeats): core's message-runs.ts has the coding, which each backend brings (native: C++).
 */
import { closeSync, fstatSync, fsyncSync, openSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { MAX_NUMBER_BYTES, type MessageRuns, RUN_NEXT_BYTE, RUN_NEXT_OUT, atRunBoundary, newMessageRunState } from '@ccheckers/core';
import { crc32Of } from '../crc.js';
import { DatabaseError, IO_CHUNK_BYTES, hex } from '../database.js';
import { type MessageFile, messageFileName, openStoreFile, readAt, refuseIrregular } from './shard-store.js';

export type MessageKind = MessageFile['kind'];

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

/** Message files a step keeps open at once (the least recently written closed first): opening
 *  and closing a file for each call's messages cost 7x7/3 80,000 of each (0.5 s of 17). */
const OPEN_FILES = 32;

/** The message files of one step (pass, source), opened as messages for them come; their names
 *  carry the attempt's token (a step run twice at once on two machines writes other files). */
export class MessageWriter {
  private readonly files = new Map<string, MessageFile>();
  /** Descriptors of the files written last, in the order of their last write. */
  private readonly open = new Map<string, number>();
  bytesWritten = 0;
  messagesWritten = 0;

  /** `buffer`: where runs are coded before they are written (its size sets the writes'). */
  constructor(
    private readonly dir: string,
    private readonly pass: number,
    private readonly source: number,
    private readonly attempt: string,
    private readonly runs: MessageRuns,
    private readonly buffer: Uint8Array,
  ) {}

  /** Appends the messages (increasing: a kernel call's to one band) as runs to the file for
   *  (target, kind): at most OPEN_FILES files are open at once, whatever the band count. */
  write(target: number, kind: MessageKind, messages: Float64Array): void {
    if (messages.length === 0) return;
    const { fd, entry } = this.fileFor(target, kind);
    const encoder = new MessageEncoder(this.runs, this.buffer, (bytes) => this.append(fd, entry, bytes));
    encoder.run(messages);
    encoder.flushNow();
    entry.count += messages.length;
    this.messagesWritten += messages.length;
  }

  /** Appends `count` messages already coded as runs (`bytes`: a kernel's, see BandResult.coded). */
  writeRun(target: number, kind: MessageKind, bytes: Uint8Array, count: number): void {
    if (count === 0) return;
    const { fd, entry } = this.fileFor(target, kind);
    this.append(fd, entry, bytes);
    entry.count += count;
    this.messagesWritten += count;
  }

  private append(fd: number, entry: MessageFile, bytes: Uint8Array): void {
    for (let at = 0; at < bytes.length; ) at += writeSync(fd, bytes, at, Math.min(IO_CHUNK_BYTES, bytes.length - at));
    entry.crc32 = crc32Of(bytes, entry.crc32);
    entry.bytes += bytes.length;
    this.bytesWritten += bytes.length;
  }

  /** The file for (target, kind), open, and its entry. */
  private fileFor(target: number, kind: MessageKind): { fd: number; entry: MessageFile } {
    const file = messageFileName(target, kind, this.pass, this.source, this.attempt);
    let entry = this.files.get(file);
    let fd = this.open.get(file);
    if (fd === undefined) {
      fd = openSync(join(this.dir, file), entry ? 'a' : 'w');
      if (this.open.size >= OPEN_FILES) {
        const [oldest, oldestFd] = this.open.entries().next().value as [string, number];
        this.open.delete(oldest);
        closeSync(oldestFd);
      }
    } else {
      this.open.delete(file); // set again below: the most recent
    }
    this.open.set(file, fd);
    entry ??= { file, target, kind, pass: this.pass, source: this.source, bytes: 0, count: 0, crc32: 0 };
    this.files.set(file, entry);
    return { fd, entry };
  }

  /** Flushes every file to the disk and closes it: what the manifest is to name. */
  finish(): MessageFile[] {
    for (const entry of this.files.values()) {
      let fd = this.open.get(entry.file);
      if (fd === undefined) {
        // Closed since it was written (OPEN_FILES): opened again to flush it.
        const path = join(this.dir, entry.file);
        refuseIrregular(path, 'message file');
        fd = openStoreFile(path, 'message file');
      }
      this.open.delete(entry.file);
      try {
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
    }
    return [...this.files.values()];
  }

  /** Closes what is open (a step that failed: its files are leftovers, removed on resume). */
  close(): void {
    for (const fd of this.open.values()) closeSync(fd);
    this.open.clear();
  }
}

/** What a reader needs: the coding, buffers for the file's bytes in pieces and the messages
 *  decoded from them. */
export interface MessageReading {
  runs: MessageRuns;
  bytes: Uint8Array;
  messages: Float64Array;
}

/**
 * The bytes of `file` in pieces of at most `bytes`' length (each a view of it, valid until the
 * next), their CRC-32 in `read.crc32` (checked by checkEnd). A file missing or of the wrong size is
 * a DatabaseError naming it.
 */
function* filePieces(path: string, file: MessageFile, bytes: Uint8Array, read: { crc32: number }): Generator<Uint8Array> {
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
    if (size !== file.bytes) throw new DatabaseError(path, `message file has ${size} bytes, the manifest records ${file.bytes}`);
    for (let at = 0; at < size; ) {
      const piece = bytes.subarray(0, Math.min(bytes.length, size - at));
      readAt(fd, path, piece, at, 'message file');
      read.crc32 = crc32Of(piece, read.crc32);
      at += piece.length;
      yield piece;
    }
  } finally {
    closeSync(fd);
  }
}

/** The checks after a file's last piece: whole runs, its CRC-32, as many messages as the manifest
 *  records. */
function checkEnd(path: string, file: MessageFile, atRunEnd: boolean, crc32: number, count: number): void {
  if (!atRunEnd) throw new DatabaseError(path, 'message file ends inside a run');
  if (crc32 !== file.crc32) throw new DatabaseError(path, `message file fails its CRC-32 check (manifest ${hex(file.crc32)})`);
  if (count !== file.count) throw new DatabaseError(path, `message file holds ${count} messages, the manifest records ${file.count}`);
}

/**
 * The messages of `file` in chunks of at most `reading.messages`' length (each a view of it, valid
 * until the next). A file missing, of the wrong size, that does not decode into the count of
 * messages the manifest records, or that fails its CRC-32 (checked after the last chunk) is a
 * DatabaseError naming it.
 */
function* messageChunks(dir: string, file: MessageFile, reading: MessageReading): Generator<Float64Array> {
  const path = join(dir, file.file);
  const { messages } = reading;
  const decoder = new MessageDecoder(reading.runs);
  const read = { crc32: 0 };
  let count = 0;
  let filled = 0;
  for (const piece of filePieces(path, file, reading.bytes, read)) {
    for (let next = 0; next < piece.length; ) {
      try {
        [next, filled] = decoder.decode(piece, next, messages, filled);
      } catch (e) {
        if (e instanceof RangeError) throw new DatabaseError(path, `message file is not a list of message runs (${e.message})`);
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
  checkEnd(path, file, decoder.atEnd, read.crc32, count);
}

/** What is wrong with a message file (size, coding, count, CRC-32), if anything: for check. */
export function messageFileProblem(dir: string, file: MessageFile, reading: MessageReading): string | undefined {
  try {
    for (const _ of messageChunks(dir, file, reading));
    return undefined;
  } catch (e) {
    if (e instanceof DatabaseError) return e.message;
    throw e;
  }
}

/**
 * Calls `use` on the messages of `file` in chunks of at most `reading.messages`' length. The
 * CRC-32 and count are checked at the end; a file of the wrong size, coding, count or CRC, or whose
 * messages `use` refuses, is a DatabaseError naming it (its band is not saved then: nothing it
 * did is kept). Returns the bytes read.
 */
export async function readMessages(dir: string, file: MessageFile, reading: MessageReading, use: (messages: Float64Array) => void | Promise<void>): Promise<number> {
  for (const messages of messageChunks(dir, file, reading)) {
    try {
      await use(messages);
    } catch (e) {
      if (e instanceof RangeError) throw new DatabaseError(join(dir, file.file), `message file holds messages its band refuses (${e.message})`);
      throw e;
    }
  }
  return file.bytes;
}

/** What the decoders (message-runs.ts, message_runs.hpp) say of bytes that are not message runs. */
const DECODER_REFUSALS = /^(a number of 2\^53 or more|an empty run|a message repeated|a message of 2\^53 or more)$/;

/**
 * Hands the bytes of values file `file` to `apply` piece by piece, with the decoder's state (which
 * carries a run and a number from piece to piece): SolverKernel.bandApplyRuns, which decodes and
 * applies them at once. apply returns the messages it decoded. The count and CRC-32 are checked at
 * the end; a file of the wrong size, coding, count or CRC, or whose values `apply` refuses, is a
 * DatabaseError naming it (its band is not saved then: nothing it did is kept). Returns the bytes
 * read.
 */
export async function applyMessageFile(
  dir: string,
  file: MessageFile,
  reading: MessageReading,
  apply: (bytes: Uint8Array, state: Float64Array) => number | Promise<number>,
): Promise<number> {
  const path = join(dir, file.file);
  const state = newMessageRunState();
  const read = { crc32: 0 };
  let count = 0;
  for (const piece of filePieces(path, file, reading.bytes, read)) {
    try {
      count += await apply(piece, state);
    } catch (e) {
      // The kernel's refusals of the band's values, and the decoder's of the coding, are the
      // file's; anything else (a bad argument) goes up as it is.
      if (e instanceof RangeError && /^band apply/.test(e.message)) throw new DatabaseError(path, `message file holds messages its band refuses (${e.message})`);
      if (e instanceof RangeError && DECODER_REFUSALS.test(e.message)) throw new DatabaseError(path, `message file is not a list of message runs (${e.message})`);
      throw e;
    }
  }
  checkEnd(path, file, atRunBoundary(state), read.crc32, count);
  return file.bytes;
}
