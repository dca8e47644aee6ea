/**
 * Tables past 4 GiB in memory (issue 36): a table of a little more than 4 GiB, allocated once per
 * allocator as a solve allocates it (native backends: the addon's mapping, views of 4 GiB; ts: one
 * SharedArrayBuffer), written and read past byte 2^32 by every backend's kernel; and a database
 * with a 14.7 GiB distance table, written and read back past 4 GiB. Zero chunks are written as
 * holes, so the files take little disk. Memory is another matter: on some kernels (this machine
 * kind's VMs among them) reading a page never written commits it, as writing does, so a test
 * that reads 18.4 GiB of fresh tables holds 18.4 GiB (it was killed for memory beside the other
 * tests). The database's tables are therefore views of one zero block, but for the views that
 * hold the values put in them.
 */
import { closeSync, mkdtempSync, openSync, rmSync, statSync } from 'node:fs';
import { freemem, tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type Backend,
  LOSS,
  NO_DISTANCE,
  StateSpace,
  TableBytes,
  type TableLike,
  type Variant,
  WIN,
  readValue,
  stateByte,
  stateShift,
  variant,
} from '@ccheckers/core';
import { afterAll, describe, expect, it } from 'vitest';
import { HEADER_BYTES, allocateTable, availableBackends, formatBytes, openDatabase, readTable, solve, tableCrc32, writeDatabase } from '../src/index.js';
import { headerFor } from '../src/solve-checkpoint.js';

const TWO_32 = 2 ** 32;
/** A little more than 4 GiB: a whole view and one huge page more. */
const BIG = TWO_32 + 2 ** 21;
const dir = mkdtempSync(join(tmpdir(), 'ccheckers-big-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const backends = await availableBackends();

/**
 * A big table, once the machine has room for it and a GiB more: a test that took the memory a
 * solve beside it holds would have the kernel kill that solve (the largest process), hours of
 * work on 7x7/4, so it fails here first and says why.
 */
function allocateBig(backend: Backend, bytes: number): TableBytes {
  const available = freemem();
  expect(available, `a table of ${formatBytes(bytes)} needs that and a GiB more free; ${formatBytes(available)} is: is a big solve running beside the tests?`).toBeGreaterThan(bytes + 2 ** 30);
  return allocateTable(backend, bytes);
}
/** One big table per allocator: the addon's (both native backends) and V8's (ts). */
const bigTables = new Map<string, TableBytes>();
function bigTable(backend: Backend): TableBytes {
  const allocator = backend.allocateTable ? 'addon' : 'v8';
  let table = bigTables.get(allocator);
  if (!table) bigTables.set(allocator, (table = allocateBig(backend, BIG)));
  return table;
}
afterAll(() => bigTables.clear()); // freed when collected (the addon's: unmapped by finalizers)

/** Init, then full passes until one proves nothing: the solved table (the fixpoint is unique). */
function solveInto(backend: Backend, v: Variant, table: TableLike): void {
  const kernel = backend.solverKernel(v, 'clean');
  const space = new StateSpace(v);
  kernel.init(table, 0, space.groups, 2);
  for (let pass = 1; ; pass++) {
    const s = kernel.pass(table, 0, kernel.passUnits, { threads: 2 });
    if (s.wins + s.losses === 0) break;
    expect(pass).toBeLessThan(100);
  }
}

/** Distances over a solved table, layer by layer until one gives none. */
function distancesInto(backend: Backend, v: Variant, table: TableLike, distances: TableLike): void {
  const kernel = backend.solverKernel(v, 'clean');
  const groups = new StateSpace(v).groups;
  kernel.distanceInit(table, distances, 0, groups, 2);
  for (let depth = 0; ; depth++) {
    const s = kernel.distanceLayer(table, distances, depth, 0, groups, 2);
    if (s.wins + s.losses === 0) break;
  }
}

describe('a table of 4 GiB and 2 MiB, as a solve allocates it', () => {
  // Small enough for the ts backend in seconds; 4x4/6 and 7x7/3 on every backend: solve.test.ts.
  const v = variant(4, 3);
  const space = new StateSpace(v);
  let tableCrc = 0;
  let distanceCrc = 0;

  it('4x4/3 solved with distances by a solve: the reference', async () => {
    const backend = backends[0]!; // the fastest here
    const r = await solve({ variant: v, rules: 'clean', backend, threads: 2, distances: true });
    tableCrc = r.tableCrc32;
    distanceCrc = r.distances!.crc32;
    expect(r.distances!.maxPlies).toBeGreaterThan(5);
    expect(r.tablePages!.allocator).toBe(backend.allocateTable ? 'addon' : 'v8');
  });

  it.each(backends.map((b) => [b.name, b] as const))('%s solves 4x4/3 in bytes across 2^32 and its distances past 2^32', (_, backend) => {
    const big = bigTable(backend);
    expect(big.length).toBe(BIG);
    expect(big.views.map((view) => view.length)).toEqual([TWO_32, 2 ** 21]);
    // The 2-bit table straddles byte 2^32 of the big one, its distances lie past it.
    const before = Math.ceil(space.tableBytes / 2);
    const after = space.tableBytes - before;
    const [low, high] = big.views as [Uint8Array, Uint8Array];
    const table = new TableBytes([low.subarray(TWO_32 - before), high.subarray(0, after)]);
    const gap = 4096;
    expect(after + gap + space.states).toBeLessThan(high.length);
    const distances = new TableBytes([high.subarray(after + gap, after + gap + space.states)]);
    table.fill(0);
    distances.fill(NO_DISTANCE);
    solveInto(backend, v, table);
    distancesInto(backend, v, table, distances);
    expect(tableCrc32(table)).toBe(tableCrc);
    expect(tableCrc32(distances)).toBe(distanceCrc);
    // Through the big table: the state at byte 2^32 exactly, and nothing written outside.
    const first = 4 * before; // the stored state at byte 2^32 of the big table
    expect(readValue(big, 4 * TWO_32) === readValue(table, first) && big.get(TWO_32) === table.get(before)).toBe(true);
    expect([big.get(TWO_32 - before - 1), big.get(TWO_32 + after), big.get(TWO_32 + after + gap - 1)]).toEqual([0, 0, 0]);
    // Plain byte access at the very end.
    big.set(BIG - 1, 0x5a);
    expect([big.get(BIG - 1), high[high.length - 1]]).toEqual([0x5a, 0x5a]);
    big.set(BIG - 1, 0);
    if (backend.allocateTable) {
      expect(big.pageInfo.allocator).toBe('addon');
      expect(big.pageInfo.hugePageBytes ?? 0).toBeLessThanOrEqual(BIG);
    }
  });

  it('the native kernel refuses views that are not adjacent in memory', () => {
    const native = backends.find((b) => b.allocateTable);
    if (!native) return;
    const big = bigTable(native);
    const split = new TableBytes([big.views[0]!.subarray(0, space.tableBytes), big.views[1]!.subarray(0, space.tableBytes)]);
    expect(() => native.solverKernel(v, 'clean').init(split, 0, 1, 1)).toThrow(/not adjacent in memory/);
  });
});

/** Views of the tables below: 64 MiB divides 2^32, so no view straddles byte 2^32. */
const VIEW = 2 ** 26;

/**
 * A table of `length` bytes in views of VIEW bytes: those holding a byte of `written` have memory
 * of their own, the others are all one block of zeros (never written: nothing aliases what the
 * test reads). What the database writer and reader see is a table of `length` bytes, mostly zero.
 */
function sparseTable(length: number, written: number[], zeros: Uint8Array): TableBytes {
  const own = new Set(written.map((at) => Math.floor(at / VIEW)));
  const views: Uint8Array[] = [];
  for (let at = 0; at < length; at += VIEW) {
    const bytes = Math.min(VIEW, length - at);
    views.push(own.has(at / VIEW) ? new Uint8Array(bytes) : zeros.subarray(0, bytes));
  }
  return new TableBytes(views);
}

/** Whether the first `length` bytes of `a` (views of VIEW bytes) equal those of `b` (any views
 *  that VIEW divides). */
function sameBytes(a: TableBytes, b: TableBytes, length: number): boolean {
  for (let at = 0; at < length; at += VIEW) {
    const n = Math.min(VIEW, length - at);
    const view = Math.floor(at / b.viewBytes);
    const from = at - view * b.viewBytes;
    if (Buffer.compare(a.views[at / VIEW]!.subarray(0, n), b.views[view]!.subarray(from, from + n)) !== 0) return false;
  }
  return true;
}

describe('a database past 4 GiB from tables in memory', () => {
  it('7x7/4 with a 14.7 GiB distance table: written from TableBytes, read back past byte 2^32', () => {
    const backend = backends.find((b) => b.allocateTable) ?? backends[0]!;
    const v = variant(7, 4);
    const space = new StateSpace(v);
    // A few values and distances, some past 2^32 bytes; the rest are zero.
    const planted: Array<[number, number, number]> = [
      [0, LOSS, 1],
      [TWO_32 - 1, WIN, 2],
      [TWO_32, LOSS, 3],
      [TWO_32 + 2 ** 21 - 1, WIN, 4],
      [2 * TWO_32 + 5, WIN, 5],
      [space.states - 1, LOSS, 6],
    ];
    const zeros = new Uint8Array(VIEW);
    const table = sparseTable(space.tableBytes, planted.map(([index]) => stateByte(index)), zeros);
    const distances = sparseTable(space.states, planted.map(([index]) => index), zeros);
    expect(distances.views.length).toBe(Math.ceil(space.states / VIEW));
    for (const [index, value, distance] of planted) {
      table.or(stateByte(index), value << stateShift(index));
      distances.set(index, distance);
    }
    expect(zeros.every((byte) => byte === 0)).toBe(true);
    const path = join(dir, 'big.ccdb');
    const header = { ...headerFor(v, 'clean', 'checkpoint', 0, space, 0, [], 0), maxDistance: 6 };
    const written = writeDatabase(path, header, table, distances);
    expect(written.bodyBytes).toBe(space.tableBytes);
    expect(written.distanceBytes).toBe(space.states);
    // Zero chunks are holes: the file is 18.4 GiB long and takes a few MiB.
    const stat = statSync(path);
    expect(stat.size).toBeGreaterThan(HEADER_BYTES + space.tableBytes + space.states);
    expect(stat.blocks * 512).toBeLessThan(2 ** 30);
    // By random access: values and distances where they were put.
    const db = openDatabase(path);
    try {
      for (const [index, value, distance] of planted) expect([db.value(index), db.distance(index)]).toEqual([value, distance]);
    } finally {
      db.close();
    }
    // Read whole into a table past 4 GiB as a solve allocates it (views of 4 GiB): the first
    // 4 GiB and 2 MiB of the distance table.
    const into = allocateBig(backend, BIG);
    expect(into.views.map((view) => view.length)).toEqual([TWO_32, 2 ** 21]);
    const fd = openSync(path, 'r');
    try {
      readTable(fd, into, HEADER_BYTES + space.tableBytes);
    } finally {
      closeSync(fd);
    }
    for (const [index, , distance] of planted) if (index < BIG) expect(into.get(index)).toBe(distance);
    expect(sameBytes(distances, into, BIG)).toBe(true);

    // The same database past the page cache (direct-io.ts, as a native solve writes it): the
    // same header and checksums, holes, and values and distances where they were put.
    if (!backend.allocateTable) return;
    const direct = join(dir, 'big-direct.ccdb');
    expect(writeDatabase(direct, header, table, distances, 'replace', backend.allocateTable(2 ** 24).views[0]!)).toEqual(written);
    expect(statSync(direct).size).toBe(stat.size);
    expect(statSync(direct).blocks * 512).toBeLessThan(2 ** 30);
    const db2 = openDatabase(direct);
    try {
      for (const [index, value, distance] of planted) expect([db2.value(index), db2.distance(index)]).toEqual([value, distance]);
    } finally {
      db2.close();
    }
  });
});
