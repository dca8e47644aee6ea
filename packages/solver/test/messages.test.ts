/**
 * Messages of the band passes: runs of LEB128 distances (core's message-runs.ts, native's
 * message_runs.hpp; src/store/messages.ts), coded and decoded in any pieces by every backend's
 * coding into the same bytes, on both sides of 2^32 and up to 2^53 - 1; one pack per step with a
 * section per target (message-pack.ts), refused when damaged.
 */
import { appendFileSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type MessageRuns, RUN_NEXT_OUT, newMessageRunState, seededRandom, tsMessageRuns } from '@ccheckers/core';
import { afterAll, describe, expect, it } from 'vitest';
import { DatabaseError } from '../src/database.js';
import { availableBackends } from '../src/index.js';
import { LATER_BLOCKS_WORKERS, bandSchedule, defaultSchedule, isSharedStep, passRounds, roundOfStep, stepBefore, takenAt } from '../src/store/band-schedule.js';
import { crc32Of } from '../src/crc.js';
import { MAX_BANDS } from '../src/store/band-layout.js';
import { type MessagePack, encodeTargets, inboxOf, lastTakenAt, packProblem, takenByAll, targetCount, targetRank, targetsOf } from '../src/store/message-pack.js';
import type { MessageKind } from '../src/store/message-pack-format.js';
import { type MessageReading, PackReader, messageFileProblem, packFileTargets } from '../src/store/message-pack-reader.js';
import { MessagePackWriter } from '../src/store/message-pack-writer.js';
import { MessageDecoder, MessageEncoder } from '../src/store/messages.js';

/** The section of `kind` for band `target` of `pack` (none: nothing), read as a step reads it:
 *  the pack opened for the band, the section read; the bytes read in all (trailer, the band's
 *  entry, its extents and bytes). */
async function readMessages(dir: string, pack: MessagePack, bands: number, target: number, kind: MessageKind, reading: MessageReading, use: (m: Float64Array) => void): Promise<number> {
  const reader = PackReader.open(dir, pack, bands, target);
  try {
    await reader.readMessages(kind, reading, use);
    return reader.bytesRead;
  } finally {
    reader.close();
  }
}

async function applyMessageFile(dir: string, pack: MessagePack, bands: number, target: number, reading: MessageReading, apply: (bytes: Uint8Array, state: Float64Array) => number): Promise<number> {
  const reader = PackReader.open(dir, pack, bands, target);
  try {
    await reader.applyValues(reading, apply);
    return reader.bytesRead;
  } finally {
    reader.close();
  }
}

// Every coding there is here: TS, and C++ where the addon loads (both native backends share it).
const codings: Array<[string, MessageRuns]> = [['ts', tsMessageRuns]];
const native = (await availableBackends()).find((b) => b.name !== 'ts');
if (native) codings.push([native.name, native.messageRuns]);

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** Increasing messages: dense stretches, wide jumps, both sides of 2^32 (and of 2^34, a band's
 *  4 GiB of states times 4), the largest message there is. */
function sampleRuns(): Float64Array[] {
  const next = seededRandom(7);
  const dense = Float64Array.from({ length: 3000 }, (_, i) => i * 4 + 1 + (i % 3));
  const around = (at: number) => Float64Array.from({ length: 40 }, (_, i) => at - 20 + i);
  const wide: number[] = [];
  for (let m = Math.floor(next() * 100); m < 2 ** 53 && wide.length < 2000; m += 1 + Math.floor(next() * 2 ** (next() * 50))) wide.push(m);
  return [dense, around(2 ** 32), around(2 ** 34 * 4), Float64Array.of(2 ** 53 - 1), Float64Array.of(0), Float64Array.from(wide), Float64Array.of(5, 2 ** 40, 2 ** 53 - 2)];
}

function encode(coding: MessageRuns, runs: Float64Array[], bufferBytes: number): Uint8Array {
  const pieces: Uint8Array[] = [];
  const encoder = new MessageEncoder(coding, new Uint8Array(bufferBytes), (bytes) => pieces.push(bytes.slice()));
  for (const run of runs) encoder.run(run);
  encoder.flushNow();
  return Buffer.concat(pieces);
}

/** Decodes `bytes` given in pieces of `piece` bytes into an output of `out` messages at a time. */
function decode(coding: MessageRuns, bytes: Uint8Array, piece: number, out: number): { messages: number[]; atEnd: boolean } {
  const decoder = new MessageDecoder(coding);
  const buffer = new Float64Array(out);
  const messages: number[] = [];
  let filled = 0;
  for (let from = 0; from < bytes.length; from += piece) {
    const chunk = bytes.subarray(from, Math.min(bytes.length, from + piece));
    for (let next = 0; next < chunk.length; ) {
      [next, filled] = decoder.decode(chunk, next, buffer, filled);
      if (filled === buffer.length) {
        messages.push(...buffer);
        filled = 0;
      }
    }
  }
  messages.push(...buffer.subarray(0, filled));
  return { messages, atEnd: decoder.atEnd };
}

describe.each(codings)('message runs coded by %s', (name, coding) => {
  const runs = sampleRuns();
  const all = runs.flatMap((r) => Array.from(r));

  it.each([
    [32, 1, 1],
    [32, 3, 7],
    [100, 1000, 1],
    [1 << 16, 1 << 20, 5000],
    [1 << 16, 5, 1 << 16],
  ])('code and decode every message exactly (buffer %i bytes, pieces of %i bytes, %i messages out)', (bufferBytes, piece, out) => {
    const bytes = encode(coding, runs, bufferBytes);
    // Every coding makes the same bytes, and decodes the others'.
    for (const [other, otherCoding] of codings) {
      expect(Buffer.compare(encode(otherCoding, runs, bufferBytes), bytes), `${name} and ${other} code alike`).toBe(0);
      const { messages, atEnd } = decode(otherCoding, bytes, piece, out);
      expect(atEnd).toBe(true);
      expect(messages).toEqual(all);
    }
  });

  it("code a band's dense messages in a byte each", () => {
    const run = Float64Array.from({ length: 100_000 }, (_, i) => i * 4 + 2 + (i % 2));
    const bytes = encode(coding, [run], 1 << 20);
    // The count (3 bytes) and first message (1 byte), then distances 5 and 3: a byte each.
    expect(bytes.length).toBe(3 + 100_000);
  });

  it('refuse to code what no kernel makes: messages not increasing, not integers, 2^53 or more', () => {
    const encoder = new MessageEncoder(coding, new Uint8Array(64), () => {});
    for (const bad of [Float64Array.of(4, 4), Float64Array.of(9, 8), Float64Array.of(1.5), Float64Array.of(-1), Float64Array.of(2 ** 53), Float64Array.of(Number.NaN)]) {
      expect(() => encoder.run(bad), String(bad)).toThrow(new RangeError('message encoder: a run is increasing integers below 2^53'));
    }
    expect(() => new MessageEncoder(coding, new Uint8Array(31), () => {})).toThrow(/at least 32 bytes/);
    // The functions themselves check their arguments (a native one would write out of bounds).
    const m = Float64Array.of(1, 2, 3);
    expect(() => coding.encodeMessageRun(m, 0, 3, new Uint8Array(39), 0)).toThrow(/too few bytes for its worst case/);
    expect(() => coding.encodeMessageRun(m, 1, 1, new Uint8Array(64), 0)).toThrow(/an empty run/);
    expect(() => coding.encodeMessageRun(m, 0, 4, new Uint8Array(64), 0)).toThrow(/not an index of its array/);
    expect(() => coding.encodeMessageRun(m, 2, 1, new Uint8Array(64), 0)).toThrow(/not an index of its array/);
    expect(() => coding.encodeMessageRun(m, 0, 3, new Uint8Array(64), 65)).toThrow(/not an index of its array/);
    expect(coding.encodeMessageRun(m, 0, 3, new Uint8Array(64), 24)).toBe(28);
  });

  it('refuse bytes no encoder writes: an empty run, a repeat, a number of 2^53 or more, a cut run', () => {
    const out = new Float64Array(16);
    const decoder = () => new MessageDecoder(coding);
    expect(() => decoder().decode(Uint8Array.of(0), 0, out, 0)).toThrow(/an empty run/);
    expect(() => decoder().decode(Uint8Array.of(2, 5, 0), 0, out, 0)).toThrow(/a message repeated/);
    const huge = Uint8Array.of(1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x10);
    expect(() => decoder().decode(huge, 0, out, 0)).toThrow(/a number of 2\^53 or more/);
    // A count of 2^53 or more (8 bytes), and a distance that takes a message there.
    expect(() => decoder().decode(Uint8Array.of(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f), 0, out, 0)).toThrow(/a number of 2\^53 or more/);
    const nearTop = Uint8Array.of(2, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x0f, 2);
    expect(() => decoder().decode(nearTop, 0, out, 0)).toThrow(/a message of 2\^53 or more/);
    expect(() => decoder().decode(Uint8Array.of(1, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 1), 0, out, 0)).toThrow(/a number of 2\^53 or more/);
    // Arguments and states no decoder makes.
    expect(() => coding.decodeMessageRuns(Uint8Array.of(1, 1), 3, out, 0, newMessageRunState())).toThrow(/not an index of its array/);
    expect(() => coding.decodeMessageRuns(Uint8Array.of(1, 1), 0, out, 17, newMessageRunState())).toThrow(/not an index of its array/);
    expect(() => coding.decodeMessageRuns(Uint8Array.of(1, 1), 0, out, 0, new Float64Array(5))).toThrow(/a state of the wrong length/);
    for (const [i, x] of [
      [0, -1],
      [1, -2],
      [1, 0.5],
      [2, 1],
      [3, 3],
      [3, 2 ** 56],
      [0, Number.NaN],
    ] as const) {
      const state = newMessageRunState();
      state[i] = x;
      expect(() => coding.decodeMessageRuns(Uint8Array.of(1, 1), 0, out, 0, state), `state[${i}] = ${x}`).toThrow(/a state no decoder left/);
    }
    for (const cut of [Uint8Array.of(3, 1, 1), Uint8Array.of(1, 0x85)]) {
      const decoder = new MessageDecoder(coding);
      decoder.decode(cut, 0, out, 0);
      expect(decoder.atEnd).toBe(false);
    }
  });
});

describe.each(codings)('message packs coded by %s', (_, coding) => {
  const dir = mkdtempSync(join(tmpdir(), 'ccheckers-messages-'));
  dirs.push(dir);
  const runs = sampleRuns();
  const all = runs.flatMap((r) => Array.from(r));
  const BANDS = 11;
  // A small write buffer (runs split, several writes each), sections interleaved as a step's calls
  // interleave them, and read pieces smaller than a run.
  const writer = new MessagePackWriter(dir, 1, 0, '0123abcd', BANDS, coding, new Uint8Array(256));
  runs.forEach((run, i) => {
    writer.write(3, 'values', run);
    if (i === 2) writer.write(2, 'requests', Float64Array.of(8, 12));
    if (i === 4) writer.write(10, 'values', Float64Array.of(1, 5, 9));
  });
  writer.write(2, 'requests', Float64Array.of(16));
  const pack = writer.finish()!;
  const buffers = () => ({ runs: coding, bytes: new Uint8Array(40), messages: new Float64Array(33) });
  const read = async (p: MessagePack, target: number, kind: 'values' | 'requests') => {
    const out: number[] = [];
    await readMessages(dir, p, BANDS, target, kind, buffers(), (m) => {
      out.push(...m);
    });
    return out;
  };

  it('write one pack per step, a section per target and kind, and read each back', async () => {
    expect(pack.file).toBe('msg-p1-b00000.0123abcd.msg');
    expect(packProblem(pack, BANDS)).toBeUndefined();
    expect(targetsOf(pack)).toEqual([2, 3, 10]);
    expect(pack.count).toBe(all.length + 6);
    expect(writer.messagesWritten).toBe(pack.count);
    expect(writer.bytesWritten).toBe(pack.bytes);
    expect(await read(pack, 3, 'values')).toEqual(all);
    expect(await read(pack, 2, 'requests')).toEqual([8, 12, 16]);
    expect(await read(pack, 10, 'values')).toEqual([1, 5, 9]);
    // Sections it has not: nothing, and no bytes read but the trailer and the band's entry.
    expect(await read(pack, 3, 'requests')).toEqual([]);
    expect(await readMessages(dir, pack, BANDS, 10, 'requests', buffers(), () => {})).toBe(32 + 80);
    expect(() => PackReader.open(dir, pack, BANDS, 5)).toThrow(new RangeError(`message pack ${pack.file}: band 5 is none of its targets`));
    expect(messageFileProblem(dir, pack, BANDS, buffers())).toBeUndefined();
    expect(packFileTargets(join(dir, pack.file), BANDS)).toEqual([2, 3, 10]);
  });

  it('make no file for a step that sent nothing, and refuse a section for the source itself', () => {
    const empty = new MessagePackWriter(dir, 2, 4, '0123abcd', BANDS, coding, new Uint8Array(256));
    expect(empty.finish()).toBeUndefined();
    expect(existsSync(join(dir, 'msg-p2-b00004.0123abcd.msg'))).toBe(false);
    expect(() => empty.write(4, 'values', Float64Array.of(1))).toThrow(/no section for band 4/);
    expect(() => empty.write(BANDS, 'values', Float64Array.of(1))).toThrow(/no section for band 11/);
  });

  it('hand a values section to a kernel piece by piece with the decoder state (applyMessageFile)', async () => {
    // The apply a kernel does (bandApplyRuns), as the TS kernel does it: decode, count.
    const decoded: number[] = [];
    const apply = (bytes: Uint8Array, state: Float64Array) => {
      const out = new Float64Array(bytes.length);
      coding.decodeMessageRuns(bytes, 0, out, 0, state);
      const n = state[RUN_NEXT_OUT]!;
      decoded.push(...out.subarray(0, n));
      return n;
    };
    expect(await applyMessageFile(dir, pack, BANDS, 3, buffers(), apply)).toBeGreaterThan(all.length);
    expect(decoded).toEqual(all);
    const path = join(dir, pack.file);
    await expect(applyMessageFile(dir, { ...pack, count: pack.count - 1 }, BANDS, 3, buffers(), apply)).rejects.toThrow(`${path}: message file holds ${pack.count} messages, the manifest records ${pack.count - 1}`);
    await expect(applyMessageFile(dir, { ...pack, directoryCrc32: pack.directoryCrc32 ^ 1 }, BANDS, 3, buffers(), apply)).rejects.toThrow(new RegExp(`^${path}: message pack's directory is not the one the manifest records`));
    await expect(applyMessageFile(dir, { ...pack, targets: encodeTargets([3, 10], BANDS) }, BANDS, 3, buffers(), apply)).rejects.toThrow(`${path}: message file has sections for 3 bands, the manifest records 2`);
    // As many targets, others: the entry the manifest's targets point to is another band's.
    await expect(applyMessageFile(dir, { ...pack, targets: encodeTargets([3, 5, 10], BANDS) }, BANDS, 3, buffers(), apply)).rejects.toThrow(`${path}: message pack's directory entry 0 is for band 2, where the manifest's targets put band 3's`);
    expect(messageFileProblem(dir, { ...pack, targets: encodeTargets([3, 5, 10], BANDS) }, BANDS, buffers())).toBe(`${path}: message file has sections for other bands than the manifest records`);
    // What the kernel refuses: the band's values, or the coding.
    const refuse = (message: string) => () => {
      throw new RangeError(message);
    };
    await expect(applyMessageFile(dir, pack, BANDS, 3, buffers(), refuse("band apply: a message that is not a value of the band's states"))).rejects.toThrow(
      `${path}: message file's section for band 3 (values) holds messages its band refuses (band apply: a message that is not a value of the band's states)`,
    );
    await expect(applyMessageFile(dir, pack, BANDS, 3, buffers(), refuse('an empty run'))).rejects.toThrow(`${path}: message file's section for band 3 (values) is not a list of message runs (an empty run)`);
    await expect(applyMessageFile(dir, { ...pack, file: 'gone.msg' }, BANDS, 3, buffers(), apply)).rejects.toThrow(/gone\.msg: message file is missing or unreadable/);
  });

  it('refuse a damaged, cut or miscounted pack, naming it', () => {
    const path = join(dir, pack.file);
    const bytes = readFileSync(path);
    try {
      // Every byte of a section's runs is covered by its CRC-32 (or fails to decode).
      for (const at of [0, 1, bytes.length >> 2, bytes.length >> 1]) {
        const flipped = Buffer.from(bytes);
        flipped[at]! ^= 0x04;
        writeFileSync(path, flipped);
        expect(messageFileProblem(dir, pack, BANDS, buffers()), `byte ${at}`).toMatch(new RegExp(`^${path}: message (file's section for band \\d+ \\((values|requests)\\) (fails its CRC-32 check|is not a list of message runs|holds \\d+ messages|ends inside a run)|pack's)`));
      }
      // The index: its extents (a section's CRC-32 or bounds), directory and trailer.
      for (const back of [30, 60, 100, 200]) {
        const flipped = Buffer.from(bytes);
        flipped[bytes.length - back]! ^= 0x10;
        writeFileSync(path, flipped);
        expect(messageFileProblem(dir, pack, BANDS, buffers()), `${back} bytes from the end`).toMatch(new RegExp(`^${path}: message`));
      }
      writeFileSync(path, bytes);
      expect(messageFileProblem(dir, { ...pack, count: pack.count + 1 }, BANDS, buffers())).toBe(`${path}: message file holds ${pack.count} messages, the manifest records ${pack.count + 1}`);
      // The file of another attempt (its trailer's directory CRC-32 is not the manifest's).
      expect(messageFileProblem(dir, { ...pack, directoryCrc32: pack.directoryCrc32 ^ 1 }, BANDS, buffers())).toMatch(new RegExp(`^${path}: message pack's directory is not the one the manifest records`));
      truncateSync(path, bytes.length - 1);
      expect(messageFileProblem(dir, { ...pack, bytes: bytes.length - 1 }, BANDS, buffers())).toBe(`${path}: message file is not a message pack (no trailer)`);
      expect(messageFileProblem(dir, pack, BANDS, buffers())).toMatch(/message file has \d+ bytes, the manifest records/);
      expect(packFileTargets(path, BANDS)).toBeUndefined();
    } finally {
      writeFileSync(path, bytes);
    }
  });
});

/** A trailer as a writer makes it (magic, entries, extents, messages, directory CRC-32, its own). */
function packTrailer(entries: number, extents: number, messages: number, directoryCrc32: number, magic = 'CCMSGPK2'): Buffer {
  const trailer = Buffer.alloc(32);
  trailer.write(magic, 0, 'latin1');
  trailer.writeUInt32LE(entries, 8);
  trailer.writeUInt32LE(extents, 12);
  trailer.writeDoubleLE(messages, 16);
  trailer.writeUInt32LE(directoryCrc32, 24);
  trailer.writeUInt32LE(crc32Of(trailer.subarray(0, 28)), 28);
  return trailer;
}

describe('a message pack whose trailer counts more entries than there are bands', () => {
  it('is refused before its directory is read into memory, not by a RangeError', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ccheckers-messages-'));
    dirs.push(dir);
    // 100 million entries (8 GB of directory, more than a Buffer takes) in a sparse file large
    // enough to hold them: the file's size alone does not bound the allocation.
    const entries = 100_000_000;
    const bytes = 32 + entries * (80 + 16) + 1000;
    const file = 'msg-p1-b00000.0123abcd.msg';
    const path = join(dir, file);
    writeFileSync(path, '');
    truncateSync(path, bytes - 32);
    appendFileSync(path, packTrailer(entries, entries, 1, 0));
    const pack: MessagePack = { file, pass: 1, source: 0, bytes, count: 1, directoryCrc32: 0, targets: encodeTargets([1], 4) };
    const reading = { runs: tsMessageRuns, bytes: new Uint8Array(64), messages: new Float64Array(8) };
    const problem = `${path}: message pack's index has ${entries} entries (a pack of 4 bands has at most 3)`;
    expect(messageFileProblem(dir, pack, 4, reading)).toBe(problem);
    expect(() => PackReader.open(dir, pack, 4, 1)).toThrow(problem);
    expect(packFileTargets(path, 4)).toBeUndefined();
    rmSync(path);
  });
});

describe('a message pack read by one target (its entry alone)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ccheckers-messages-'));
  dirs.push(dir);
  const reading = () => ({ runs: tsMessageRuns, bytes: new Uint8Array(64), messages: new Float64Array(8) });
  const collect = async (reader: PackReader, kind: MessageKind) => {
    const out: number[] = [];
    await reader.readMessages(kind, reading(), (m) => {
      out.push(...m);
    });
    return out;
  };

  it(`reads the first, middle and last of ${MAX_BANDS - 1} targets (MAX_BANDS) without the directory`, async () => {
    // The source in the middle: targets 0 .. 4,095 but 2,048; requests to every third.
    const source = MAX_BANDS / 2;
    const writer = new MessagePackWriter(dir, 1, source, '00000001', MAX_BANDS, tsMessageRuns, new Uint8Array(256));
    for (let t = 0; t < MAX_BANDS; t++) {
      if (t === source) continue;
      writer.write(t, 'values', Float64Array.of(t * 4 + 1, t * 4 + 3));
      if (t % 3 === 0) writer.write(t, 'requests', Float64Array.of(t));
    }
    const pack = writer.finish()!;
    expect(packProblem(pack, MAX_BANDS)).toBeUndefined();
    expect(targetCount(pack)).toBe(MAX_BANDS - 1);
    expect(pack.bytes).toBeGreaterThan((MAX_BANDS - 1) * 80);
    for (const t of [0, 1, source - 1, source + 1, MAX_BANDS - 2, MAX_BANDS - 1]) {
      expect(targetRank(pack, t)).toBe(t < source ? t : t - 1);
      const reader = PackReader.open(dir, pack, MAX_BANDS, t);
      try {
        expect(await collect(reader, 'values'), `band ${t}`).toEqual([t * 4 + 1, t * 4 + 3]);
        expect(await collect(reader, 'requests'), `band ${t}`).toEqual(t % 3 === 0 ? [t] : []);
        // The trailer, the band's entry, an extent or two and their bytes: not the directory's
        // 327,600 bytes.
        expect(reader.bytesRead, `band ${t}`).toBeLessThan(32 + 80 + 2 * 16 + 32);
      } finally {
        reader.close();
      }
    }
    expect(targetRank(pack, source)).toBe(-1);
    expect(messageFileProblem(dir, pack, MAX_BANDS, reading())).toBeUndefined();
    expect(packFileTargets(join(dir, pack.file), MAX_BANDS)).toHaveLength(MAX_BANDS - 1);
  });

  it('reads a pack closed after its values and opened again for its requests', async () => {
    const writer = new MessagePackWriter(dir, 2, 0, '00000002', 4, tsMessageRuns, new Uint8Array(256));
    writer.write(1, 'values', Float64Array.of(3, 7));
    writer.write(1, 'requests', Float64Array.of(9));
    const pack = writer.finish()!;
    const reader = PackReader.open(dir, pack, 4, 1);
    expect(await collect(reader, 'values')).toEqual([3, 7]);
    reader.close();
    await expect(collect(reader, 'requests')).rejects.toThrow(/read after close/);
    reader.reopen(4);
    expect(await collect(reader, 'requests')).toEqual([9]);
    reader.close();
    // A file changed meanwhile is checked again.
    const path = join(dir, pack.file);
    appendFileSync(path, Buffer.of(0));
    expect(() => reader.reopen(4)).toThrow(`${path}: message file has ${pack.bytes + 1} bytes, the manifest records ${pack.bytes}`);
  });

  describe('refuses an entry that does not check, naming the file, and changes no file', () => {
    const BANDS = 8;
    const writer = new MessagePackWriter(dir, 3, 0, '00000003', BANDS, tsMessageRuns, new Uint8Array(256));
    writer.write(2, 'values', Float64Array.of(1, 2, 3));
    writer.write(5, 'requests', Float64Array.of(4));
    writer.write(5, 'values', Float64Array.of(8));
    writer.write(7, 'values', Float64Array.of(6));
    const pack = writer.finish()!;
    const path = join(dir, pack.file);
    const good = readFileSync(path);
    const directoryAt = good.length - 32 - 3 * 80;
    /** The file with entry `i` changed by `change` (its CRC-32 made right again if `recheck`). */
    const damaged = (i: number, change: (entry: Buffer) => void, recheck: boolean) => {
      const bytes = Buffer.from(good);
      const entry = bytes.subarray(directoryAt + i * 80, directoryAt + (i + 1) * 80);
      change(entry);
      if (recheck) entry.writeDoubleLE(crc32Of(entry.subarray(0, 72)), 72);
      writeFileSync(path, bytes);
      return bytes;
    };
    const refused = (band: number, problem: string) => {
      const before = readFileSync(path);
      expect(() => PackReader.open(dir, pack, BANDS, band)).toThrow(new DatabaseError(path, problem));
      expect(messageFileProblem(dir, pack, BANDS, reading())).toMatch(new RegExp(`^${path}: message pack's directory`));
      expect(readdirSync(dir).filter((f) => f.startsWith('msg-p3-'))).toEqual([pack.file]);
      expect(Buffer.compare(readFileSync(path), before)).toBe(0);
    };
    afterAll(() => writeFileSync(path, good));

    it('a byte of an entry changed: that entry fails its CRC-32, the others read', async () => {
      expect(messageFileProblem(dir, pack, BANDS, reading())).toBeUndefined();
      damaged(1, (e) => (e[20]! ^= 0x01), false);
      refused(5, "message pack's directory entry 1 fails its CRC-32 check");
      const reader = PackReader.open(dir, pack, BANDS, 7);
      expect(await collect(reader, 'values')).toEqual([6]);
      reader.close();
    });

    it("another band's entry in its place (each checks on its own)", () => {
      damaged(0, (e) => e.set(good.subarray(directoryAt + 80, directoryAt + 160)), false);
      refused(2, "message pack's directory entry 0 is for band 5, where the manifest's targets put band 2's");
    });

    it('extents past those of the index, or malformed fields, with a right CRC-32', () => {
      const extents = good.readUInt32LE(good.length - 32 + 12);
      damaged(2, (e) => e.writeDoubleLE(extents, 2 * 8), true);
      refused(7, `message pack's directory entry 2 has extents past the ${extents} of its index`);
      damaged(2, (e) => e.writeDoubleLE(0, 3 * 8), true); // extents but no messages
      refused(7, "message pack's directory entry 2 is malformed");
      damaged(1, (e) => e.writeDoubleLE(BANDS, 0), true);
      refused(5, "message pack's directory entry 1 is malformed");
    });
  });
});

describe('a message pack of the version before (a trailer CCMSGPK1, a directory read whole)', () => {
  it('is refused, saying what to do', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ccheckers-messages-'));
    dirs.push(dir);
    // Its layout: a section's runs, its extent, an entry of 6 float64s, a trailer of 24 bytes.
    const data = Buffer.of(1, 5);
    const extent = Buffer.alloc(16);
    extent.writeDoubleLE(0, 0);
    extent.writeDoubleLE(data.length, 8);
    const entry = Buffer.alloc(48);
    [1, 0, 0, 1, 1, crc32Of(data)].forEach((x, k) => entry.writeDoubleLE(x, k * 8));
    const trailer = Buffer.alloc(24);
    trailer.write('CCMSGPK1', 0, 'latin1');
    trailer.writeUInt32LE(1, 8);
    trailer.writeUInt32LE(1, 12);
    trailer.writeUInt32LE(crc32Of(entry), 16);
    const file = 'msg-p1-b00000.0123abcd.msg';
    const path = join(dir, file);
    const bytes = Buffer.concat([data, extent, entry, trailer]);
    writeFileSync(path, bytes);
    const pack: MessagePack = { file, pass: 1, source: 0, bytes: bytes.length, count: 1, directoryCrc32: crc32Of(entry), targets: encodeTargets([1], 4) };
    const problem = `${path}: message file is a pack of an earlier version of ccheckers (CCMSGPK1): finish the solve with the version that started it, or start it again`;
    expect(() => PackReader.open(dir, pack, 4, 1)).toThrow(problem);
    expect(messageFileProblem(dir, pack, 4, { runs: tsMessageRuns, bytes: new Uint8Array(64), messages: new Float64Array(8) })).toBe(problem);
    expect(packFileTargets(path, 4)).toBeUndefined();
    expect(Buffer.compare(readFileSync(path), bytes)).toBe(0);
  });
});

describe('message pack entries in a manifest', () => {
  const pack: MessagePack = { file: 'msg-p3-b00002.00ff00ff.msg', pass: 3, source: 2, bytes: 100, count: 10, directoryCrc32: 5, targets: encodeTargets([0, 9], 10) };

  it('accept a well-formed entry and refuse each malformed field', () => {
    expect(packProblem(pack, 10)).toBeUndefined();
    const bad: Array<[string, Partial<MessagePack>, RegExp]> = [
      ['name', { file: 'msg-00001-v-p3-b00002.00ff00ff.msg' }, /the file name/],
      ['pass other than the name', { pass: 4 }, /pass and source other than its name's/],
      ['source other than the name', { source: 3 }, /pass and source other than its name's/],
      ['count', { count: 0 }, /message count 0/],
      ['bytes', { bytes: 10 }, /10 bytes for 10 messages/],
      ['checksum', { directoryCrc32: 2 ** 32 }, /directory checksum/],
      ['targets not base64', { targets: '!!' }, /not base64/],
      ['targets too long', { targets: encodeTargets([1], 24) }, /targets of 3 bytes/],
      ['a target past the last band', { targets: Buffer.from([1, 0x04]).toString('base64') }, /past the last band/],
      ['no target', { targets: encodeTargets([], 10) }, /no target/],
      ['its own band', { targets: encodeTargets([2, 5], 10) }, /its own band/],
    ];
    for (const [what, change, problem] of bad) expect(packProblem({ ...pack, ...change }, 10), what).toMatch(problem);
    expect(packProblem({ ...pack, file: 'msg-p3-b00012.00ff00ff.msg', source: 12 }, 10)).toMatch(/source band 12/);
  });

  it('name the packs a band takes at its step, and drop a pack once all its targets took it', () => {
    // 10 bands for 2 workers in segments: rounds 0-4 step bands (0, 5) .. (4, 9); band 2 is in round 2.
    const segments = bandSchedule(10, 2, 'segments');
    // Band 0 (round 0) takes it in pass 4, band 9 (round 4) in pass 3, after band 2's round.
    expect(inboxOf([pack], segments, 9, { pass: 3, round: 4 })).toEqual([pack]);
    expect(inboxOf([pack], segments, 9, { pass: 4, round: 4 })).toEqual([]);
    expect(inboxOf([pack], segments, 0, { pass: 3, round: 0 })).toEqual([]);
    expect(inboxOf([pack], segments, 0, { pass: 4, round: 0 })).toEqual([pack]);
    expect(inboxOf([pack], segments, 5, { pass: 4, round: 0 })).toEqual([]);
    expect(takenByAll(segments, pack, { pass: 4, round: 0 })).toBe(false);
    expect(takenByAll(segments, pack, { pass: 4, round: 1 })).toBe(true);
    // In blocks of 2 band 2 is in round 1, band 9 in round 4 and band 0 in round 0.
    const blocks = bandSchedule(10, 2, 'blocks');
    expect(blocks.rounds).toEqual([
      [0, 1],
      [2, 3],
      [4, 5],
      [6, 7],
      [8, 9],
    ]);
    expect(takenByAll(blocks, pack, { pass: 3, round: 4 })).toBe(false);
    expect(takenByAll(blocks, pack, { pass: 4, round: 0 })).toBe(false);
    expect(takenByAll(blocks, pack, { pass: 4, round: 1 })).toBe(true);
    // Shared steps: the bands one after the other, as with one worker, for any worker count.
    const shared = bandSchedule(10, 16, 'shared', 4);
    expect(shared.rounds).toEqual(bandSchedule(10, 1).rounds);
    expect([shared.workers, shared.sliceUnits, bandSchedule(10, 16).workers, bandSchedule(10, 2).sliceUnits]).toEqual([16, 4, 10, 0]);
    const pass1 = { ...pack, pass: 1, file: 'msg-p1-b00002.00ff00ff.msg' };
    expect(inboxOf([pass1], shared, 9, { pass: 1, round: 9 })).toEqual([pass1]);
    expect(inboxOf([pass1], shared, 0, { pass: 2, round: 0 })).toEqual([pass1]);
    // Its later passes in blocks of 16 workers: all 10 bands in one round, each taking what the
    // round sent in the next pass.
    expect(inboxOf([pack], shared, 9, { pass: 3, round: 0 })).toEqual([]);
    expect(inboxOf([pack], shared, 9, { pass: 4, round: 0 })).toEqual([pack]);
    expect(() => bandSchedule(10, 2, 'shared', 0)).toThrow(/--slice-units must be a whole number from 1/);
    // Init (it reads and sends nothing) and, for 3 workers, the passes after the first in rounds
    // of W consecutive bands, pass 1 a band a round; a store made before init went in blocks (no
    // initBlocks), or before the later passes did (no laterBlocks), goes on as it began.
    const three = bandSchedule(10, 3, 'shared');
    const threeBlocks = [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]];
    expect([passRounds(three, 0), passRounds(three, 1), passRounds(three, 2), passRounds(three, 7)]).toEqual([threeBlocks, three.rounds, threeBlocks, threeBlocks]);
    expect([0, 1, 2, 3].map((pass) => roundOfStep(three, pass, 7))).toEqual([2, 7, 2, 2]);
    expect([roundOfStep(blocks, 0, 7), roundOfStep(blocks, 2, 7), roundOfStep(segments, 2, 7)]).toEqual([3, 3, 2]);
    const older = { ...three, initBlocks: false, laterBlocks: false };
    expect([passRounds(older, 0), roundOfStep(older, 0, 7), passRounds(older, 2), roundOfStep(older, 2, 7)]).toEqual([three.rounds, 7, three.rounds, 7]);
    // From 3 workers on (LATER_BLOCKS_WORKERS): 2 workers step the later passes a band a round.
    const two = bandSchedule(10, 2, 'shared');
    expect([two.initBlocks, two.laterBlocks, three.laterBlocks, LATER_BLOCKS_WORKERS]).toEqual([true, false, true, 3]);
    expect([passRounds(two, 0), passRounds(two, 2)]).toEqual([blocks.rounds, two.rounds]);
    // What pass 1 sends to a band stepped before it is taken at that band's round of pass 2 (a
    // block): never after the source's own step of pass 2. In the blocks of pass 2, a band of
    // the same or an earlier round waits for pass 3, a later round takes it in pass 2.
    expect([takenAt(three, 1, 5, 7), takenAt(three, 1, 7, 5), takenAt(three, 1, 7, 6), takenAt(three, 1, 7, 7)]).toEqual([
      { pass: 1, round: 7 },
      { pass: 2, round: 1 },
      { pass: 2, round: 2 },
      { pass: 2, round: 2 },
    ]);
    expect([takenAt(three, 2, 7, 6), takenAt(three, 2, 7, 9), takenAt(three, 2, 7, 1), takenAt(three, 0, 7, 9)]).toEqual([
      { pass: 3, round: 2 },
      { pass: 2, round: 3 },
      { pass: 3, round: 0 },
      { pass: 0, round: 3 },
    ]);
    for (const [bands, workers] of [[10, 3], [16, 2], [37, 8], [5, 16]] as const) {
      const schedule = bandSchedule(bands, workers, 'shared');
      for (let source = 0; source < bands; source++) {
        for (let target = 0; target < bands; target++) {
          for (const pass of [1, 2, 3]) {
            // A pack is taken after its source's step and by the source's next step (the
            // manifest keeps a band's last attempt only).
            const taken = takenAt(schedule, pass, source, target);
            const what = `${bands}/${workers} pass ${pass} ${source} -> ${target}`;
            expect(stepBefore({ pass, round: roundOfStep(schedule, pass, source) }, taken), what).toBe(true);
            expect(stepBefore(taken, { pass: pass + 1, round: roundOfStep(schedule, pass + 1, source) + 1 }), what).toBe(true);
          }
        }
      }
    }
    expect([isSharedStep(three, { pass: 0 }), isSharedStep(three, { pass: 1 }), isSharedStep(three, { pass: 2 }), isSharedStep(bandSchedule(10, 1, 'shared'), { pass: 1 })]).toEqual([false, true, false, false]);
    // Both sides of the bound on slices (MAX_SLICE_UNITS, 2^20).
    expect(bandSchedule(10, 2, 'shared', 2 ** 20).sliceUnits).toBe(2 ** 20);
    expect(() => bandSchedule(10, 2, 'shared', 2 ** 20 + 1)).toThrow(/--slice-units must be a whole number from 1 to 1048576 \(got 1048577\)/);
  });

  it('drop a pack exactly after the last of its targets\' takenAt, for any targets and schedule', () => {
    const random = seededRandom(11);
    for (const [bands, workers] of [
      [10, 2],
      [37, 5],
      [64, 64],
      [100, 1],
    ] as const) {
      for (const kind of ['segments', 'blocks', 'shared'] as const) {
        const schedule = bandSchedule(bands, workers, kind);
        for (let k = 0; k < 20; k++) {
          const source = Math.floor(random() * bands);
          const targets = Array.from({ length: bands }, (_, t) => t).filter((t) => t !== source && random() < (k % 2 ? 0.1 : 0.9));
          if (targets.length === 0) continue;
          const p: MessagePack = { ...pack, file: `msg-p3-b${String(source).padStart(5, '0')}.00ff00ff.msg`, source, targets: encodeTargets(targets, bands) };
          // Pass 1 and pass 3: a shared schedule's pass 1 goes a band a round, its pass 3 in blocks.
          for (const sent of [1, 3]) {
            const q: MessagePack = { ...p, pass: sent, file: `msg-p${sent}-b${String(source).padStart(5, '0')}.00ff00ff.msg` };
            const last = targets.map((t) => takenAt(schedule, sent, source, t)).reduce((a, b) => (stepBefore(a, b) ? b : a));
            expect(lastTakenAt(schedule, q), `${bands}/${workers} ${kind} from ${source} in pass ${sent}`).toEqual(last);
            for (const round of new Set([0, last.round, last.round + 1, schedule.rounds.length - 1])) {
              for (const pass of [sent, sent + 1, sent + 2]) {
                const next = { pass, round };
                expect(takenByAll(schedule, q, next)).toBe(targets.every((t) => stepBefore(takenAt(schedule, sent, source, t), next)));
              }
            }
          }
        }
      }
    }
  });
});

describe('the schedule of a new store', () => {
  it('defaultSchedule: shared for a cluster of 2 or more workers, segments otherwise', () => {
    expect([1, 2, 8, 4096].map((w) => defaultSchedule(w, true))).toEqual(['segments', 'shared', 'shared', 'shared']);
    expect([1, 2, 8].map((w) => defaultSchedule(w, false))).toEqual(['segments', 'segments', 'segments']);
  });
});
