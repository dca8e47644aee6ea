/**
 * Writes and reads past the page cache (solver/src/direct-io.ts): the file holds exactly the bytes
 * appended, on both sides of a block and of the staging buffer, with whole staging buffers of
 * zeros left holes, and reads give exactly the file's bytes at any position and length, to its
 * last byte; an aligned staging buffer (the addon's memory) goes past the page cache where the
 * filesystem allows it, and one that is not aligned falls back to ordinary calls with the same
 * bytes. A database written so is the same file, byte for byte, as one written the ordinary way,
 * and reads back the same; a solve's checkpoints and database (native) read back as its table.
 */
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StateSpace, TableBytes, variant } from '@ccheckers/core';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { DIRECT_BLOCK_BYTES, DirectAppender, DirectReader, directCalls, openDirect } from '../src/direct-io.js';
import { availableBackends, readDatabase, solve, tableCrc32, writeDatabase } from '../src/index.js';
import { headerFor } from '../src/solve-checkpoint.js';

const dir = mkdtempSync(join(tmpdir(), 'ccheckers-direct-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;
const fresh = () => join(dir, `f${files++}`);

const backends = await availableBackends();
const native = backends.find((b) => b.allocateTable);
/** Where a file here can be opened past the page cache (ext4, xfs, tmpfs on newer kernels). */
const directHere = (() => {
  const fd = openSync(fresh(), 'w');
  try {
    const direct = openDirect(fd);
    if (direct === undefined) return false;
    closeSync(direct);
    return true;
  } finally {
    closeSync(fd);
  }
})();

const STAGING = 3 * DIRECT_BLOCK_BYTES;
/** A staging buffer in the addon's memory (aligned), or a V8 one offset by a byte (which some
 *  disks take for O_DIRECT and others refuse). */
const aligned = () => native!.allocateTable!(STAGING).views[0]!;
const misaligned = () => new Uint8Array(STAGING + 1).subarray(1);
/** Direct calls refused as a kernel refuses memory it cannot take (EINVAL). */
const refuseDirectCalls = () => {
  const refusal = () => {
    throw Object.assign(new Error('EINVAL: invalid argument'), { code: 'EINVAL' });
  };
  vi.spyOn(directCalls, 'write').mockImplementation(refusal);
  vi.spyOn(directCalls, 'read').mockImplementation(refusal);
};
afterEach(() => vi.restoreAllMocks());
const bytes = (n: number, seed: number) => Uint8Array.from({ length: n }, (_, i) => ((i * 131 + seed * 7) % 251) + 1);

/** Appends `parts` (bytes, or a count of zeros) through a DirectAppender with `staging`; returns
 *  the file, what it should hold, and the bytes that went past the page cache. */
function appendAll(staging: Uint8Array, parts: ReadonlyArray<Uint8Array | number>) {
  const path = fresh();
  const fd = openSync(path, 'w');
  const out = new DirectAppender(fd, staging);
  const expected: number[] = [];
  try {
    for (const part of parts) {
      if (typeof part === 'number') {
        out.appendZeros(part);
        for (let i = 0; i < part; i++) expected.push(0);
      } else {
        out.append(part);
        expected.push(...part);
      }
    }
    expect(out.finish()).toBe(expected.length);
  } finally {
    out.close();
    closeSync(fd);
  }
  return { path, expected: Uint8Array.from(expected), directBytes: out.directBytes };
}

/** Lengths on both sides of a block and of the staging buffer, and zeros that fill it whole. */
const layouts: ReadonlyArray<ReadonlyArray<Uint8Array | number>> = [
  [],
  [bytes(1, 1)],
  [128, bytes(DIRECT_BLOCK_BYTES - 129, 2)],
  [bytes(DIRECT_BLOCK_BYTES, 3)],
  [bytes(DIRECT_BLOCK_BYTES + 1, 4)],
  [bytes(STAGING - 1, 5), bytes(2, 6)],
  [bytes(STAGING, 7), bytes(STAGING + 1, 8)],
  [128, bytes(5000, 9), 3 * STAGING + 17, bytes(300, 10)],
  [bytes(10, 11), 2 * STAGING], // ends in a hole
  [bytes(10, 20), 20, bytes(10, 21)], // zeros within the staged bytes
  [2 * STAGING, bytes(STAGING * 2 + DIRECT_BLOCK_BYTES, 12)],
];

describe.runIf(native)('DirectAppender', () => {
  it.each(layouts.map((parts, i) => [i, parts] as const))('layout %i: the file holds exactly the bytes appended', (_, parts) => {
    for (const staging of [aligned(), misaligned()]) {
      const { path, expected } = appendAll(staging, parts);
      expect(new Uint8Array(readFileSync(path))).toEqual(expected);
    }
  });

  it('goes past the page cache with aligned memory where the filesystem allows it; refused, the ordinary way', () => {
    const parts = [bytes(5 * STAGING + 123, 13)];
    const withAligned = appendAll(aligned(), parts);
    expect(withAligned.directBytes).toBe(directHere ? 5 * STAGING : 0);
    refuseDirectCalls();
    const refused = appendAll(aligned(), parts);
    expect(refused.directBytes).toBe(0);
    expect(new Uint8Array(readFileSync(refused.path))).toEqual(withAligned.expected);
    if (directHere) expect(directCalls.write).toHaveBeenCalledTimes(1); // then no more tries
  });

  it('leaves whole staging buffers of zeros as holes', () => {
    const { path } = appendAll(aligned(), [bytes(100, 14), 64 * STAGING, bytes(100, 15)]);
    const stat = statSync(path);
    expect(stat.size).toBe(200 + 64 * STAGING);
    expect(stat.blocks * 512).toBeLessThan(8 * STAGING);
  });

  it('refuses a staging buffer that is not whole blocks', () => {
    const path = fresh();
    const fd = openSync(path, 'w');
    try {
      expect(() => new DirectAppender(fd, new Uint8Array(DIRECT_BLOCK_BYTES + 1))).toThrow(/multiple of 4096/);
    } finally {
      closeSync(fd);
    }
  });
});

describe.runIf(native)('DirectReader', () => {
  const length = 5 * STAGING + 1234; // the file ends inside a block
  const content = bytes(length, 22);
  const path = fresh();
  writeFileSync(path, content);
  const spans: Array<[number, number]> = [
    [0, 1],
    [0, length],
    [1, DIRECT_BLOCK_BYTES],
    [DIRECT_BLOCK_BYTES - 1, 2],
    [DIRECT_BLOCK_BYTES, STAGING],
    [STAGING - 5, STAGING + 10],
    [3 * STAGING + 7, 2 * STAGING],
    [length - 1, 1],
    [length - STAGING - 3, STAGING + 3],
  ];

  it('reads exactly the file, at any position and length, to its last byte', () => {
    for (const staging of [aligned(), misaligned()]) {
      const fd = openSync(path, 'r');
      const reader = new DirectReader(fd, staging);
      try {
        for (const [at, n] of spans) {
          const into = new Uint8Array(n);
          if (!reader.read(into, at)) continue; // the ordinary way: not what this tests
          expect(into).toEqual(content.subarray(at, at + n));
        }
      } finally {
        reader.close();
        closeSync(fd);
      }
    }
  });

  it('goes past the page cache with aligned memory where the filesystem allows it; refused, says so', () => {
    for (const refuse of [false, true]) {
      if (refuse) refuseDirectCalls();
      const fd = openSync(path, 'r');
      const reader = new DirectReader(fd, aligned());
      try {
        const into = new Uint8Array(length);
        const expected = directHere && !refuse;
        expect(reader.read(into, 0)).toBe(expected);
        expect(reader.directBytes).toBe(expected ? length : 0);
        if (expected) expect(into).toEqual(content);
        expect(reader.read(into, 0)).toBe(expected); // refused once: not tried again
        if (refuse && directHere) expect(directCalls.read).toHaveBeenCalledTimes(1);
      } finally {
        reader.close();
        closeSync(fd);
      }
    }
  });

  it.runIf(directHere)('says where the file ends before the bytes asked for', () => {
    const fd = openSync(path, 'r');
    const reader = new DirectReader(fd, aligned());
    try {
      expect(() => reader.read(new Uint8Array(10), length - 5)).toThrow(/unexpected end of file/);
    } finally {
      reader.close();
      closeSync(fd);
    }
  });
});

describe.runIf(native)('writeDatabase with a staging buffer', () => {
  const v = variant(7, 2);
  const space = new StateSpace(v);
  const header = (stage: 'checkpoint' | 'complete') => headerFor(v, 'clean', stage, 0, space, 1.5, [], 0);

  it('writes the same file, byte for byte, as the ordinary way: tables, pieces with gaps, distances', () => {
    const table = TableBytes.shared(space.tableBytes);
    table.views[0]!.set(bytes(space.tableBytes, 16));
    const distances = new Uint8Array(space.states);
    distances.set(bytes(1000, 17), 200);
    const pieces = { length: 3 * STAGING + 5, pieces: [{ offset: 7, bytes: bytes(100, 18) }, { offset: 2 * STAGING + 1, bytes: bytes(STAGING, 19) }] };
    for (const [body, extra] of [
      [table, undefined],
      [table, distances],
      [pieces, undefined],
    ] as const) {
      const plain = fresh();
      const staged = fresh();
      const a = writeDatabase(plain, header('checkpoint'), body, extra);
      const b = writeDatabase(staged, header('checkpoint'), body, extra, 'replace', aligned());
      expect(b).toEqual(a);
      expect(readFileSync(staged).equals(readFileSync(plain))).toBe(true);
      if (body !== table) continue; // not a 7x7/2 table: not a database to read
      // Read back past the page cache too: the same as read the ordinary way.
      const tables = (bytes: number) => TableBytes.shared(bytes);
      const read = readDatabase(staged, tables, true, aligned());
      const again = readDatabase(staged, tables, true);
      expect(tableCrc32(read.table)).toBe(tableCrc32(again.table));
      expect(read.distances && tableCrc32(read.distances)).toBe(again.distances && tableCrc32(again.distances));
      expect(read.header).toEqual(again.header);
    }
  });

  it('a native solve writes its checkpoints and database so; they read back as its table', async () => {
    const out = fresh();
    const v52 = variant(7, 2);
    const tables: number[] = [];
    const result = await solve({
      variant: v52,
      rules: 'clean',
      backend: native!,
      threads: 1,
      out,
      checkpointMinutes: 0,
      onCheckpoint: () => tables.push(tableCrc32(readDatabase(`${out}.ckpt`).table)),
    });
    expect(tables.length).toBeGreaterThan(1);
    expect(tables.at(-1)).toBe(result.tableCrc32); // the last pass's, which proved nothing
    const { header, table } = readDatabase(out);
    expect(header.stage).toBe('complete');
    expect(tableCrc32(table)).toBe(result.tableCrc32);
  });
});
