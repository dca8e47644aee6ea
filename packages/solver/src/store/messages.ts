/**
 * Message files of the band passes (band-solve.ts): the messages (core's bandMessage) one step of
 * a pass sends to each other band, one file per target and kind, written while the step runs,
 * flushed before the manifest names them, read back in chunks by the target band's step.
 *
 * A file is a sequence of runs, each the messages of one kernel call to that band, which the
 * kernels give sorted and without repeats: a run is its count, its first message, then each
 * message's distance from the one before, every number in LEB128 (7 bits a byte, the high bit set
 * on all bytes but a number's last). A band's messages are its local indices times 4 plus the
 * value, so the distances are small: 7x7/3 in 9 bands writes about 1.5 bytes a message, where
 * float64 numbers took 8.
 */
import { closeSync, fsyncSync, openSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { crc32Of } from '../crc.js';
import { DatabaseError, IO_CHUNK_BYTES, hex } from '../database.js';
import { type MessageFile, messageFileName, readAt } from './shard-store.js';

export type MessageKind = MessageFile['kind'];

/** The bytes of a LEB128 number at most: messages are below 2^53. */
const MAX_NUMBER_BYTES = 8;
const TWO_POW_53 = 2 ** 53;

/** Writes `n` (an integer, 0 <= n < 2^53) at bytes[at] in LEB128; returns the end. */
function writeNumber(bytes: Uint8Array, at: number, n: number): number {
  // Bit operations only below 2^31 (they work on 32 bits): above, division.
  while (n >= 0x80) {
    if (n < 0x80000000) {
      bytes[at++] = (n & 0x7f) | 0x80;
      n >>>= 7;
    } else {
      bytes[at++] = (n % 128) | 0x80;
      n = Math.floor(n / 128);
    }
  }
  bytes[at++] = n;
  return at;
}

/**
 * Codes runs of messages into `bytes`: run(m) codes m (increasing, below 2^53) as one run or
 * more, calling flush(bytes used) whenever the buffer cannot take the worst case of the next.
 */
export class MessageEncoder {
  private at = 0;

  constructor(
    private readonly bytes: Uint8Array,
    private readonly flush: (bytes: Uint8Array) => void,
  ) {
    if (bytes.length < 4 * MAX_NUMBER_BYTES) throw new RangeError('message encoder: a buffer of at least 32 bytes');
  }

  run(messages: Float64Array): void {
    const bytes = this.bytes;
    // At most this many messages a run, so that a run's worst case fits an empty buffer.
    const perRun = Math.floor(bytes.length / MAX_NUMBER_BYTES) - 2;
    for (let from = 0; from < messages.length; from += perRun) {
      const to = Math.min(messages.length, from + perRun);
      if (this.at + (to - from + 2) * MAX_NUMBER_BYTES > bytes.length) this.flushNow();
      let at = writeNumber(bytes, this.at, to - from);
      let last = -1;
      for (let i = from; i < to; i++) {
        const m = messages[i]!;
        if (!(m > last && m < TWO_POW_53 && Number.isInteger(m))) {
          throw new RangeError(`message encoder: message ${m} after ${last} (a run is increasing integers below 2^53)`);
        }
        at = writeNumber(bytes, at, last < 0 ? m : m - last);
        last = m;
      }
      this.at = at;
    }
  }

  /** Hands what is coded to flush(). */
  flushNow(): void {
    if (this.at > 0) this.flush(this.bytes.subarray(0, this.at));
    this.at = 0;
  }
}

/**
 * Decodes message files piece by piece: decode() takes any split of the bytes (a number may span
 * two pieces) and stops when `out` is full. Refuses what no encoder writes: an empty run, a
 * message not above the one before, a number of 2^53 or more.
 */
export class MessageDecoder {
  /** Messages left in the run (0: a run's count comes next). */
  private left = 0;
  /** The run's last message (-1 before its first). */
  private last = -1;
  /** The number being read: its value so far, and the weight of its next 7 bits. */
  private value = 0;
  private weight = 1;

  /** Decodes bytes[from, bytes.length) into out[at, out.length): stops at the end of either.
   *  Returns [the next byte to decode, the next free place of out]. */
  decode(bytes: Uint8Array, from: number, out: Float64Array, at: number): [number, number] {
    let { left, last, value, weight } = this;
    let i = from;
    while (i < bytes.length && at < out.length) {
      const b = bytes[i++]!;
      value += (b & 0x7f) * weight;
      if (b & 0x80) {
        weight *= 128;
        if (weight > TWO_POW_53) throw new RangeError('a number of 2^53 or more');
        continue;
      }
      if (left === 0) {
        if (value === 0) throw new RangeError('an empty run');
        left = value;
        last = -1;
      } else {
        if (last >= 0 && value === 0) throw new RangeError('a message repeated');
        const m = last < 0 ? value : last + value;
        if (m >= TWO_POW_53) throw new RangeError('a message of 2^53 or more');
        out[at++] = m;
        last = m;
        left--;
      }
      value = 0;
      weight = 1;
    }
    Object.assign(this, { left, last, value, weight });
    return [i, at];
  }

  /** Between runs (the end of a whole file). */
  get atEnd(): boolean {
    return this.left === 0 && this.weight === 1;
  }
}

/** The message files of one step (pass, source), opened as messages for them come. */
export class MessageWriter {
  private readonly files = new Map<string, MessageFile>();
  bytesWritten = 0;
  messagesWritten = 0;

  /** `buffer`: where runs are coded before they are written (its size sets the writes'). */
  constructor(
    private readonly dir: string,
    private readonly pass: number,
    private readonly source: number,
    private readonly buffer: Uint8Array,
  ) {}

  /** Appends the messages (increasing: a kernel call's to one band) as runs to the file for
   *  (target, kind): opened for each write and closed, so that a step never holds more than one
   *  descriptor whatever the band count. */
  write(target: number, kind: MessageKind, messages: Float64Array): void {
    if (messages.length === 0) return;
    const file = messageFileName(target, kind, this.pass, this.source);
    let entry = this.files.get(file);
    const fd = openSync(join(this.dir, file), entry ? 'a' : 'w');
    try {
      entry ??= { file, target, kind, pass: this.pass, source: this.source, bytes: 0, count: 0, crc32: 0 };
      this.files.set(file, entry);
      const written = entry;
      const encoder = new MessageEncoder(this.buffer, (bytes) => {
        for (let at = 0; at < bytes.length; ) at += writeSync(fd, bytes, at, Math.min(IO_CHUNK_BYTES, bytes.length - at));
        written.crc32 = crc32Of(bytes, written.crc32);
        written.bytes += bytes.length;
        this.bytesWritten += bytes.length;
      });
      encoder.run(messages);
      encoder.flushNow();
      entry.count += messages.length;
      this.messagesWritten += messages.length;
    } finally {
      closeSync(fd);
    }
  }

  /** Flushes every file: what the manifest is to name. */
  finish(): MessageFile[] {
    for (const entry of this.files.values()) {
      const fd = openSync(join(this.dir, entry.file), 'r');
      try {
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
    }
    return [...this.files.values()];
  }
}

/** Buffers a reader needs: the file's bytes in pieces, the messages decoded from them. */
export interface MessageBuffers {
  bytes: Uint8Array;
  messages: Float64Array;
}

/**
 * The messages of `file` in chunks of at most `buffers.messages`' length (each a view of it, valid
 * until the next). A file missing, of the wrong size, that does not decode into the count of
 * messages the manifest records, or that fails its CRC-32 (checked after the last chunk) is a
 * DatabaseError naming it.
 */
function* messageChunks(dir: string, file: MessageFile, buffers: MessageBuffers): Generator<Float64Array> {
  const path = join(dir, file.file);
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (e) {
    throw new DatabaseError(path, `message file is missing or unreadable (${(e as Error).message})`);
  }
  const { bytes, messages } = buffers;
  const decoder = new MessageDecoder();
  let crc = 0;
  let count = 0;
  try {
    const size = statSync(path).size;
    if (size !== file.bytes) throw new DatabaseError(path, `message file has ${size} bytes, the manifest records ${file.bytes}`);
    let filled = 0;
    for (let at = 0; at < size; ) {
      const n = Math.min(bytes.length, size - at);
      const piece = bytes.subarray(0, n);
      readAt(fd, path, piece, at, 'message file');
      crc = crc32Of(piece, crc);
      at += n;
      for (let next = 0; next < n; ) {
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
    if (!decoder.atEnd) throw new DatabaseError(path, 'message file ends inside a run');
    if (filled > 0) {
      count += filled;
      yield messages.subarray(0, filled);
    }
  } finally {
    closeSync(fd);
  }
  if (crc !== file.crc32) throw new DatabaseError(path, `message file fails its CRC-32 check (manifest ${hex(file.crc32)})`);
  if (count !== file.count) throw new DatabaseError(path, `message file holds ${count} messages, the manifest records ${file.count}`);
}

/** What is wrong with a message file (size, coding, count, CRC-32), if anything: for check. */
export function messageFileProblem(dir: string, file: MessageFile, buffers: MessageBuffers): string | undefined {
  try {
    for (const _ of messageChunks(dir, file, buffers));
    return undefined;
  } catch (e) {
    if (e instanceof DatabaseError) return e.message;
    throw e;
  }
}

/**
 * Calls `use` on the messages of `file` in chunks of at most `buffers.messages`' length. The
 * CRC-32 and count are checked at the end; a file of the wrong size, coding, count or CRC, or whose
 * messages `use` refuses, is a DatabaseError naming it (its band is not saved then: nothing it
 * did is kept). Returns the bytes read.
 */
export async function readMessages(dir: string, file: MessageFile, buffers: MessageBuffers, use: (messages: Float64Array) => void | Promise<void>): Promise<number> {
  for (const messages of messageChunks(dir, file, buffers)) {
    try {
      await use(messages);
    } catch (e) {
      if (e instanceof RangeError) throw new DatabaseError(join(dir, file.file), `message file holds messages its band refuses (${e.message})`);
      throw e;
    }
  }
  return file.bytes;
}
