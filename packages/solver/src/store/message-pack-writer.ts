/**
 * Writes the message pack of a step (message-pack-format.ts has the layout): each section's runs
 * appended as the step's kernel calls make them, then the extents, directory and trailer, and the
 * file flushed before the manifest names it. message-pack-reader.ts reads it back.
 */
import { closeSync, fsyncSync, openSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { MessageRuns } from '@ccheckers/core';
import { crc32Of } from '../crc.js';
import { IO_CHUNK_BYTES } from '../database.js';
import { ENTRY_BYTES, ENTRY_CHECKED_BYTES, EXTENT_FIELDS, KINDS, KIND_CODE, type MessageKind, PACK_MAGIC, TRAILER_BYTES } from './message-pack-format.js';
import { type MessagePack, encodeTargets, messageFileName } from './message-pack.js';
import { MessageEncoder } from './messages.js';

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
    /** The part of a shared step that writes the pack (band-step.ts, runSlice). */
    private readonly part?: number,
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
    const targets = [...new Set(sections.map((s) => s.target))];
    const extentCount = sections.reduce((n, s) => n + s.extents.length / 2, 0);
    const extents = new Float64Array(extentCount * EXTENT_FIELDS);
    const directoryBytes = Buffer.alloc(targets.length * ENTRY_BYTES);
    let first = 0;
    let next = 0;
    targets.forEach((target, i) => {
      const fields = [target];
      for (const kind of KINDS) {
        const s = sections[next]?.target === target && sections[next]!.kind === kind ? sections[next++]! : undefined;
        fields.push(first, (s?.extents.length ?? 0) / 2, s?.count ?? 0, s?.crc32 ?? 0);
        if (s) {
          extents.set(s.extents, first * EXTENT_FIELDS);
          first += s.extents.length / 2;
        }
      }
      const at = i * ENTRY_BYTES;
      fields.forEach((x, k) => directoryBytes.writeDoubleLE(x, at + k * 8));
      directoryBytes.writeDoubleLE(crc32Of(directoryBytes.subarray(at, at + ENTRY_CHECKED_BYTES)), at + ENTRY_CHECKED_BYTES);
    });
    const directoryCrc32 = crc32Of(directoryBytes);
    const trailer = Buffer.alloc(TRAILER_BYTES);
    trailer.write(PACK_MAGIC, 0, 'latin1');
    trailer.writeUInt32LE(targets.length, 8);
    trailer.writeUInt32LE(extentCount, 12);
    trailer.writeDoubleLE(this.messagesWritten, 16);
    trailer.writeUInt32LE(directoryCrc32, 24);
    trailer.writeUInt32LE(crc32Of(trailer.subarray(0, 28)), 28);
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
      targets: encodeTargets(targets, this.bands),
      ...(this.part !== undefined ? { part: this.part } : {}),
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
