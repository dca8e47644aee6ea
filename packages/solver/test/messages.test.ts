/**
 * Message files of the band passes: runs of LEB128 distances (core's message-runs.ts, native's
 * message_runs.hpp; src/store/messages.ts), coded and decoded in any pieces by every backend's
 * coding into the same bytes, on both sides of 2^32 and up to 2^53 - 1, and refused when damaged.
 */
import { mkdtempSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type MessageRuns, RUN_NEXT_OUT, newMessageRunState, seededRandom, tsMessageRuns } from '@ccheckers/core';
import { afterAll, describe, expect, it } from 'vitest';
import { availableBackends } from '../src/index.js';
import { MessageDecoder, MessageEncoder, MessageWriter, applyMessageFile, messageFileProblem, readMessages } from '../src/store/messages.js';

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

describe.each(codings)('message files coded by %s', (_, coding) => {
  const dir = mkdtempSync(join(tmpdir(), 'ccheckers-messages-'));
  dirs.push(dir);
  const runs = sampleRuns();
  const all = runs.flatMap((r) => Array.from(r));
  // A small write buffer (runs split, several writes each) and read pieces smaller than a run.
  const writer = new MessageWriter(dir, 1, 0, '0123abcd', coding, new Uint8Array(256));
  for (const run of runs) writer.write(3, 'values', run);
  writer.write(2, 'requests', Float64Array.of(8, 12));
  const files = writer.finish();
  const buffers = () => ({ runs: coding, bytes: new Uint8Array(40), messages: new Float64Array(33) });
  const values = files.find((f) => f.kind === 'values')!;

  it('write runs to one file per target and kind, and read back every message', async () => {
    expect(files.map((f) => [f.file, f.count])).toEqual([
      ['msg-00003-v-p1-b00000.0123abcd.msg', all.length],
      ['msg-00002-r-p1-b00000.0123abcd.msg', 2],
    ]);
    expect(writer.messagesWritten).toBe(all.length + 2);
    expect(writer.bytesWritten).toBe(values.bytes + files[1]!.bytes);
    const read: number[] = [];
    await readMessages(dir, values, buffers(), (m) => {
      read.push(...m);
    });
    expect(read).toEqual(all);
    expect(messageFileProblem(dir, values, buffers())).toBeUndefined();
  });

  it('hand a values file to a kernel piece by piece with the decoder state (applyMessageFile), and check it whole', async () => {
    // The apply a kernel does (bandApplyRuns), as the TS kernel does it: decode, count.
    const decoded: number[] = [];
    const apply = (bytes: Uint8Array, state: Float64Array) => {
      const out = new Float64Array(bytes.length);
      coding.decodeMessageRuns(bytes, 0, out, 0, state);
      const n = state[RUN_NEXT_OUT]!;
      decoded.push(...out.subarray(0, n));
      return n;
    };
    expect(await applyMessageFile(dir, values, buffers(), apply)).toBe(values.bytes);
    expect(decoded).toEqual(all);
    const path = join(dir, values.file);
    await expect(applyMessageFile(dir, { ...values, count: values.count - 1 }, buffers(), apply)).rejects.toThrow(`${path}: message file holds ${values.count} messages, the manifest records ${values.count - 1}`);
    await expect(applyMessageFile(dir, { ...values, crc32: values.crc32 ^ 1 }, buffers(), apply)).rejects.toThrow(new RegExp(`^${path}: message file fails its CRC-32 check`));
    // What the kernel refuses: the band's values, or the coding.
    const refuse = (message: string) => () => {
      throw new RangeError(message);
    };
    await expect(applyMessageFile(dir, values, buffers(), refuse("band apply: a message that is not a value of the band's states"))).rejects.toThrow(
      `${path}: message file holds messages its band refuses (band apply: a message that is not a value of the band's states)`,
    );
    await expect(applyMessageFile(dir, values, buffers(), refuse('an empty run'))).rejects.toThrow(`${path}: message file is not a list of message runs (an empty run)`);
    await expect(applyMessageFile(dir, { ...values, file: 'gone.msg' }, buffers(), apply)).rejects.toThrow(/gone\.msg: message file is missing or unreadable/);
  });

  it('refuse a damaged, cut or miscounted file, naming it', () => {
    const path = join(dir, values.file);
    const bytes = readFileSync(path);
    try {
      const flipped = Buffer.from(bytes);
      flipped[flipped.length >> 1]! ^= 0x04;
      writeFileSync(path, flipped);
      expect(messageFileProblem(dir, values, buffers())).toMatch(new RegExp(`^${path}: message file (fails its CRC-32 check|is not a list of message runs|holds \\d+ messages)`));
      writeFileSync(path, bytes);
      expect(messageFileProblem(dir, { ...values, count: values.count + 1 }, buffers())).toBe(`${path}: message file holds ${values.count} messages, the manifest records ${values.count + 1}`);
      truncateSync(path, bytes.length - 1);
      expect(messageFileProblem(dir, { ...values, bytes: bytes.length - 1 }, buffers())).toBe(`${path}: message file ends inside a run`);
      expect(messageFileProblem(dir, values, buffers())).toMatch(/message file has \d+ bytes, the manifest records/);
    } finally {
      writeFileSync(path, bytes);
    }
  });
});
