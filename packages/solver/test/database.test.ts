/**
 * Database files: every kind of damage is refused with a message naming it; checkpoints resume to
 * the same table as an uninterrupted solve; the memory check refuses with both figures.
 */
import { copyFileSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { StateSpace, variant } from '@ccheckers/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DatabaseError,
  HEADER_BYTES,
  InsufficientMemoryError,
  SolveInterrupted,
  availableBackends,
  parseSize,
  readDatabase,
  solve,
  writeDatabase,
} from '../src/index.js';

const dir = mkdtempSync(join(tmpdir(), 'ccheckers-db-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const [backend] = await availableBackends();
const good = join(dir, 'good.ccdb');

beforeAll(async () => {
  await solve({ variant: variant(7, 1), rules: 'clean', backend: backend!, threads: 1, out: good });
});

/** A copy of the good database with `damage` applied to its bytes. */
function damaged(name: string, damage: (bytes: Buffer) => Buffer): string {
  const path = join(dir, name);
  writeFileSync(path, damage(readFileSync(good)));
  return path;
}

/** Rewrites the header checksum, so that a test reaches the check behind it. */
function resealHeader(bytes: Buffer): Buffer {
  bytes.writeUInt32LE(crc32(bytes.subarray(0, 124)), 124);
  return bytes;
}

describe('readDatabase refuses damaged files', () => {
  it('reads the good file', () => {
    expect(readDatabase(good).header.positions).toBe(4_704);
  });

  const cases: Array<[string, (b: Buffer) => Buffer, RegExp]> = [
    ['a flipped byte in the body', (b) => ((b[HEADER_BYTES + 100]! ^= 0x10), b), /corrupt body: checksum 0x[0-9a-f]{8} but the header records/],
    ['a flipped byte in the header', (b) => ((b[50]! ^= 1), b), /corrupt header: checksum mismatch/],
    ['bad magic bytes', (b) => (b.write('NOTADB!!', 0, 'latin1'), b), /not a ccheckers database/],
    ['a newer format version', (b) => (b.writeUInt32LE(99, 8), resealHeader(b)), /format version 99 is not supported/],
    ['an unknown board in the header', (b) => (b.writeUInt8(10, 16), resealHeader(b)), /invalid variant in header/],
    ['a wrong state count', (b) => (b.writeBigUInt64LE(5n, 32), resealHeader(b)), /stored states, but 7x7/],
    ['inconsistent counts', (b) => (b.writeBigUInt64LE(1n, 56), resealHeader(b)), /inconsistent counts/],
    ['bytes appended', (b) => Buffer.concat([b, Buffer.from('junk')]), /4 unexpected bytes after the end/],
    ['a damaged pass log', (b) => ((b[b.length - 2]! ^= 1), b), /corrupt pass log/],
  ];
  for (const [what, damage, message] of cases) {
    it(`${what}`, () => {
      const path = damaged(`${what.replace(/\W+/g, '-')}.ccdb`, damage);
      expect(() => readDatabase(path)).toThrow(DatabaseError);
      expect(() => readDatabase(path)).toThrow(message);
      expect(() => readDatabase(path)).toThrow(path);
    });
  }

  it('a truncated file', () => {
    const path = join(dir, 'truncated.ccdb');
    copyFileSync(good, path);
    truncateSync(path, 600);
    expect(() => readDatabase(path)).toThrow(/truncated: 600 bytes, the header announces \d+/);
    truncateSync(path, 20);
    expect(() => readDatabase(path)).toThrow(/truncated: 20 bytes, but the header alone is 128/);
    truncateSync(path, 5); // the magic bytes' first five
    expect(() => readDatabase(path)).toThrow(/truncated: 5 bytes/);
  });

  it('a file shorter than a header that is no database: said so, not "truncated"', () => {
    const path = join(dir, 'twelve.ccdb');
    writeFileSync(path, 'hello world\n');
    expect(() => readDatabase(path)).toThrow(/not a ccheckers database \(12 bytes, without its magic bytes\)/);
    writeFileSync(path, '');
    expect(() => readDatabase(path)).toThrow(/not a ccheckers database \(0 bytes\)/);
  });

  it('a missing file', () => {
    expect(() => readDatabase(join(dir, 'nope.ccdb'))).toThrow(/cannot read the file \(ENOENT\)/);
  });
});

describe('writeDatabase', () => {
  it('refuses body pieces out of order, overlapping or past the body before it makes any file', () => {
    const header = { ...readDatabase(good).header, passLog: [] };
    const piece = (offset: number, n: number) => ({ offset, bytes: new Uint8Array(n).fill(1) });
    const cases: Array<[string, { length: number; pieces: Array<{ offset: number; bytes: Uint8Array }> }, RegExp]> = [
      ['out of order', { length: 100, pieces: [piece(50, 10), piece(0, 10)] }, /overlap or are out of order/],
      ['overlapping', { length: 100, pieces: [piece(0, 10), piece(5, 10)] }, /overlap or are out of order/],
      ['past the body', { length: 100, pieces: [piece(0, 10), piece(95, 10)] }, /end past the body/],
    ];
    const folder = mkdtempSync(join(dir, 'pieces-'));
    for (const [what, body, message] of cases) {
      expect(() => writeDatabase(join(folder, `${what}.ccdb`), header, body), what).toThrow(message);
      // As a distance table after a sound body too: nothing written, not even a temporary file.
      expect(() => writeDatabase(join(folder, `${what}-d.ccdb`), header, { length: 100, pieces: [piece(0, 10)] }, body), what).toThrow(message);
    }
    expect(readdirSync(folder)).toEqual([]);
  });
});

describe('databases with distances', () => {
  const withDistances = join(dir, 'distances.ccdb');
  let solved: Awaited<ReturnType<typeof solve>>;
  beforeAll(async () => {
    solved = await solve({ variant: variant(7, 1), rules: 'clean', backend: backend!, threads: 1, out: withDistances, distances: true, keepTable: true });
  });

  it('round-trip: the distance table, its checksum and the largest distance', () => {
    const db = readDatabase(withDistances);
    expect(db.header).toMatchObject({ distanceBytes: new StateSpace(variant(7, 1)).states, distanceCrc32: solved.distances!.crc32, maxDistance: 25 });
    expect(db.distances).toEqual(solved.distanceTable);
    expect(db.header.bodyCrc32).toBe(solved.tableCrc32);
    expect(readDatabase(withDistances, undefined, false).distances).toBeUndefined(); // skipped unread when not wanted
    // Without distances, the same file format minus the section.
    expect(readDatabase(good)).toMatchObject({ header: { distanceBytes: 0, distanceCrc32: 0, maxDistance: 0 } });
    expect(readDatabase(good).distances).toBeUndefined();
  });

  it('a flipped byte in the distance table, and a distance table of the wrong size', () => {
    const bytes = readFileSync(withDistances);
    const tableBytes = readDatabase(withDistances).header.bodyBytes;
    const flipped = join(dir, 'distances-flipped.ccdb');
    const copy = Buffer.from(bytes);
    copy[HEADER_BYTES + tableBytes + 7]! ^= 1;
    writeFileSync(flipped, copy);
    expect(() => readDatabase(flipped)).toThrow(/corrupt distance table: checksum 0x[0-9a-f]{8} but the header records/);
    const resized = join(dir, 'distances-resized.ccdb');
    const copy2 = Buffer.from(bytes);
    copy2.writeBigUInt64LE(100n, 108);
    writeFileSync(resized, resealHeader(copy2));
    expect(() => readDatabase(resized)).toThrow(`header says 100 distance bytes, but 7x7/1 needs 0 or ${new StateSpace(variant(7, 1)).states}`);
  });

  it('still reads format version 1 files (no distance section)', () => {
    const v1 = join(dir, 'v1.ccdb');
    const bytes = readFileSync(good);
    bytes.writeUInt32LE(1, 8);
    writeFileSync(v1, resealHeader(bytes));
    expect(readDatabase(v1).header.positions).toBe(4_704);
  });
});

describe('checkpoints', () => {
  it('checkpoints every checkpointMinutes (0: after init and each pass, and inside), and when the solve stops', async () => {
    const v = variant(7, 2);
    const everyStep: number[] = [];
    await expect(
      solve({ variant: v, rules: 'clean', backend: backend!, threads: 2, out: join(dir, 'steps.ccdb'), stopAfterPass: 2, checkpointMinutes: 0, onCheckpoint: (n, inPass) => inPass === undefined && everyStep.push(n) }),
    ).rejects.toThrow(SolveInterrupted);
    expect(everyStep).toEqual([0, 1, 2]);
    // The default, 10 minutes: a solve of seconds writes its only checkpoint when it stops.
    const out = join(dir, 'resumed.ccdb');
    const saved: number[] = [];
    await expect(
      solve({ variant: v, rules: 'clean', backend: backend!, threads: 2, out, stopAfterPass: 2, onCheckpoint: (n) => saved.push(n) }),
    ).rejects.toThrow(SolveInterrupted);
    expect(saved).toEqual([2]);
  });

  it('a solve stopped after pass 2 resumes to the same table as an uninterrupted one', async () => {
    const v = variant(7, 2);
    const whole = await solve({ variant: v, rules: 'clean', backend: backend!, threads: 2 });
    const out = join(dir, 'resumed-2.ccdb');
    await expect(solve({ variant: v, rules: 'clean', backend: backend!, threads: 2, out, stopAfterPass: 2 })).rejects.toThrow(SolveInterrupted);
    expect(existsSync(out)).toBe(false);
    expect(readDatabase(`${out}.ckpt`).header).toMatchObject({ stage: 'checkpoint', passes: 2 });

    const resumed = await solve({ variant: v, rules: 'clean', backend: backend!, threads: 1, out, resume: true });
    expect(resumed.resumedFromPass).toBe(2);
    expect(resumed.tableCrc32).toBe(whole.tableCrc32);
    expect(resumed.p1Wins).toBe(whole.p1Wins);
    expect(existsSync(`${out}.ckpt`)).toBe(false); // removed once the database is complete
    expect(readDatabase(out).header.bodyCrc32).toBe(whole.tableCrc32);
  });

  it('an abort signal stops between chunks and names the checkpoint', async () => {
    const out = join(dir, 'aborted.ccdb');
    const controller = new AbortController();
    const run = solve({
      variant: variant(7, 2),
      rules: 'clean',
      backend: backend!,
      threads: 1,
      out,
      checkpointMinutes: 0,
      onCheckpoint: (n) => n === 1 && controller.abort(),
      signal: controller.signal,
    });
    // Seen at the first boundary inside pass 2, which is saved as far as it got.
    await expect(run).rejects.toThrow(/the init, pass 1 and [\d.]+% of pass 2 are saved in .*aborted\.ccdb\.ckpt, continue with --resume/);
  });

  it('a checkpoint of another variant is refused on resume', async () => {
    const out = join(dir, 'other.ccdb');
    copyFileSync(good, `${out}.ckpt`);
    await expect(solve({ variant: variant(7, 2), rules: 'clean', backend: backend!, threads: 1, out, resume: true })).rejects.toThrow(
      /is a checkpoint of 7x7\/1 \(clean\), not 7x7\/2 \(clean\)/,
    );
  });
});

describe('memory', () => {
  it('refuses before allocating, giving the need and the limit', async () => {
    const run = solve({ variant: variant(7, 3), rules: 'clean', backend: backend!, threads: 1, memoryLimit: parseSize('8M') });
    await expect(run).rejects.toThrow(InsufficientMemoryError);
    await expect(solve({ variant: variant(7, 3), rules: 'clean', backend: backend!, threads: 1, memoryLimit: parseSize('8M') })).rejects.toThrow(
      /the solve needs \d+\.\d MiB but --memory allows 8\.0 MiB/,
    );
  });

  it('parses sizes and rejects nonsense', () => {
    expect(parseSize('512M')).toBe(512 * 2 ** 20);
    expect(parseSize('1.5GiB')).toBe(1.5 * 2 ** 30);
    expect(parseSize('1000')).toBe(1000);
    expect(() => parseSize('lots')).toThrow(/invalid size "lots"/);
  });
});
