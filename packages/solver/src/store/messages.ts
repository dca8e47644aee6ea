/**
 * Message files of the band passes (band-solve.ts): the float64 messages (core's bandMessage) one
 * step of a pass sends to each other band, one file per target and kind, written while the step
 * runs, flushed before the manifest names them, read back in chunks by the target band's step.
 */
import { closeSync, fsyncSync, openSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { crc32Of } from '../crc.js';
import { DatabaseError, IO_CHUNK_BYTES, hex } from '../database.js';
import { type MessageFile, messageFileName, readAt } from './shard-store.js';

export type MessageKind = MessageFile['kind'];

/** The message files of one step (pass, source), opened as messages for them come. */
export class MessageWriter {
  private readonly files = new Map<string, MessageFile>();
  bytesWritten = 0;

  constructor(
    private readonly dir: string,
    private readonly pass: number,
    private readonly source: number,
  ) {}

  /** Appends to the file for (target, kind): opened for each write and closed, so that a step
   *  never holds more than one descriptor whatever the band count. */
  write(target: number, kind: MessageKind, messages: Float64Array): void {
    if (messages.length === 0) return;
    const file = messageFileName(target, kind, this.pass, this.source);
    let entry = this.files.get(file);
    const fd = openSync(join(this.dir, file), entry ? 'a' : 'w');
    try {
      entry ??= { file, target, kind, pass: this.pass, source: this.source, bytes: 0, crc32: 0 };
      this.files.set(file, entry);
      const bytes = new Uint8Array(messages.buffer, messages.byteOffset, messages.byteLength);
      for (let at = 0; at < bytes.length; ) at += writeSync(fd, bytes, at, Math.min(IO_CHUNK_BYTES, bytes.length - at));
      entry.crc32 = crc32Of(bytes, entry.crc32);
      entry.bytes += bytes.length;
      this.bytesWritten += bytes.length;
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

/**
 * The messages of `file` in chunks of at most `buffer`'s length (each a view of it, valid until
 * the next). A file missing, of the wrong size, or failing its CRC-32 (checked after the last
 * chunk) is a DatabaseError naming it.
 */
function* messageChunks(dir: string, file: MessageFile, buffer: Float64Array): Generator<Float64Array> {
  const path = join(dir, file.file);
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (e) {
    throw new DatabaseError(path, `message file is missing or unreadable (${(e as Error).message})`);
  }
  const bytes = new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
  let crc = 0;
  try {
    const size = statSync(path).size;
    if (size !== file.bytes || size % 8 !== 0) throw new DatabaseError(path, `message file has ${size} bytes, the manifest records ${file.bytes}`);
    for (let at = 0; at < size; ) {
      const n = Math.min(bytes.length, size - at);
      readAt(fd, path, bytes.subarray(0, n), at, 'message file');
      crc = crc32Of(bytes.subarray(0, n), crc);
      yield buffer.subarray(0, n / 8);
      at += n;
    }
  } finally {
    closeSync(fd);
  }
  if (crc !== file.crc32) throw new DatabaseError(path, `message file fails its CRC-32 check (manifest ${hex(file.crc32)})`);
}

/** What is wrong with a message file (size, CRC-32), if anything: for check. */
export function messageFileProblem(dir: string, file: MessageFile, buffer: Float64Array): string | undefined {
  try {
    for (const _ of messageChunks(dir, file, buffer));
    return undefined;
  } catch (e) {
    if (e instanceof DatabaseError) return e.message;
    throw e;
  }
}

/**
 * Calls `use` on the messages of `file` in chunks of at most `buffer`'s length. The CRC-32 is
 * checked at the end; a file of the wrong size or CRC, or whose messages `use` refuses, is a
 * DatabaseError naming it (its band is not saved then: nothing it did is kept).
 */
export async function readMessages(dir: string, file: MessageFile, buffer: Float64Array, use: (messages: Float64Array) => void | Promise<void>): Promise<number> {
  for (const messages of messageChunks(dir, file, buffer)) {
    try {
      await use(messages);
    } catch (e) {
      if (e instanceof RangeError) throw new DatabaseError(join(dir, file.file), `message file holds messages its band refuses (${e.message})`);
      throw e;
    }
  }
  return file.bytes;
}
