/**
 * Past 2^32 stored states (7x7/4 has 1.58e10; issue 18): every layer that indexes the 2-bit table
 * is exercised on indexes beyond 2^32 and offsets beyond 4 GiB, without a 45-minute solve. Large
 * tables are allocated but barely touched (the OS maps untouched pages lazily), a body past 4 GiB
 * is a sparse file, so this runs in seconds. With `index >>> 2` anywhere below, these fail.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import {
  BitboardEngine,
  ILLEGAL,
  LOSS,
  MAX_TYPED_ARRAY_BYTES,
  StateSpace,
  TsSolverKernel,
  UNKNOWN,
  WIN,
  WORDS,
  readValue,
  stateByte,
  stateShift,
  fromWords,
  unrankSet,
  variant,
} from '@ccheckers/core';
import { afterAll, describe, expect, it } from 'vitest';
import {
  DatabaseError,
  InsufficientMemoryError,
  SolvedGame,
  StateIndexer,
  TableCounter,
  availableBackends,
  bodyCrc,
  checkTableLimits,
  crc32Zeros,
  openDatabase,
  provenStates,
  readDatabase,
  storedCounts,
  writeDatabase,
} from '../src/index.js';

const TWO_32 = 2 ** 32;
const dir = mkdtempSync(join(tmpdir(), 'ccheckers-large-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * `bytes` zero bytes (at most 4 GiB) that these tests read whole: the addon's table memory where
 * it loads (huge pages where the OS gives them), else a Uint8Array. Read, each fresh 4 KiB page of
 * a Uint8Array is a page fault, and a fault takes about 10 us in this machine kind's VMs: 2.6 s a
 * GiB. What reads them (the writer, the counters) takes any Uint8Array alike.
 */
const allocator = (await availableBackends()).find((b) => b.allocateTable);
function zeroBytes(bytes: number): Uint8Array {
  return allocator ? allocator.allocateTable!(bytes).views[0]! : new Uint8Array(bytes);
}

function setValue(table: Uint8Array, index: number, value: number): void {
  table[stateByte(index)]! |= value << stateShift(index);
}

describe('a 1.06 GiB table with values past state 2^32', () => {
  const states = TWO_32 + 2 ** 28; // 4.56e9 states
  const table = zeroBytes(Math.ceil(states / 4));
  const placed: Array<[number, number]> = [
    [TWO_32, LOSS],
    [TWO_32 + 1, WIN],
    [TWO_32 + 6, ILLEGAL],
    [states - 1, WIN],
  ];
  for (const [index, value] of placed) setValue(table, index, value);

  it('readValue reads each one, and the states 2^32 below them stay unknown', () => {
    for (const [index, value] of placed) {
      expect(readValue(table, index)).toBe(value);
      expect(readValue(table, index - TWO_32)).toBe(UNKNOWN);
    }
  });

  it('storedCounts and provenStates count them', () => {
    expect(storedCounts(table, states)).toEqual([states - 4, 1, 2, 1]);
    expect(provenStates(table, states)).toBe(4);
  });
});

describe('7x7/4: 1.58e10 stored states, a 3.7 GiB table', () => {
  const v = variant(7, 4);
  const space = new StateSpace(v);
  const per = space.p2Placements;
  // A group whose states all lie past 2^32 and whose P1 placement is not its own mirror image.
  let g = Math.ceil(TWO_32 / per) + 12_345;
  while (space.groupWeight[g] !== 2) g++;

  it('has its states past 2^32, and a table under the typed-array limit', () => {
    expect(space.states).toBe(15_835_337_595);
    expect(space.tableBytes).toBeLessThan(MAX_TYPED_ARRAY_BYTES);
    expect(g * per).toBeGreaterThan(TWO_32);
  });

  it('TableCounter weighs states past 2^32 by their own group, chunk by chunk', () => {
    // Chunks of the table around group g (bytes [b0, b0 + 3 * 2^20)), one value code per state in
    // a pattern; the counter must agree with a state-by-state count over the same states.
    const b0 = stateByte(g * per) - 12_345;
    const counter = new TableCounter(space);
    const chunk = new Uint8Array(2 ** 20);
    const naiveStored = [0, 0, 0, 0];
    const naiveWeighted = [0, 0, 0, 0];
    for (let c = 0; c < 3; c++) {
      for (let i = 0; i < chunk.length; i++) chunk[i] = (i * 37 + c * 11) & 0xff;
      const firstByte = b0 + c * chunk.length;
      counter.add(chunk, firstByte);
      for (let i = 0; i < 4 * chunk.length; i++) {
        const index = 4 * firstByte + i;
        const code = (chunk[i >>> 2]! >>> ((i & 3) << 1)) & 3;
        naiveStored[code]!++;
        naiveWeighted[code]! += space.groupWeight[Math.floor(index / per)]!;
      }
    }
    expect(counter.stored).toEqual(naiveStored);
    expect(counter.weighted).toEqual(naiveWeighted);
    expect(naiveWeighted.reduce((a, b) => a + b)).toBeGreaterThan(naiveStored.reduce((a, b) => a + b)); // weights 2 were met
  });

  it('the TS kernel and every native kernel init a group past 2^32 alike, at the right bytes', async () => {
    const backends = await availableBackends();
    const firstByte = stateByte(g * per);
    const lastByte = stateByte((g + 1) * per - 1);
    const groups: Uint8Array[] = [];
    for (const backend of backends) {
      const table = new Uint8Array(space.tableBytes); // 3.7 GiB, untouched but for group g
      backend.solverKernel(v, 'clean').init(table, g, g + 1, 1);
      groups.push(table.slice(firstByte, lastByte + 1));
      // Nothing was written 2^32 states (2^30 bytes) below, where a wrapped index would land.
      expect(table.subarray(firstByte - 2 ** 30, lastByte + 1 - 2 ** 30).every((b) => b === 0)).toBe(true);
    }
    expect(backends.map((b) => b.name)).toContain('ts');
    for (const bytes of groups.slice(1)) expect(Buffer.compare(bytes, groups[0]!)).toBe(0);
    // Init decided something in this group: its states with P1's pieces all home are illegal or
    // terminal, and some are won in one. Check them against the plain engine.
    const engine = new BitboardEngine(v, 'clean');
    const a = new Uint32Array(WORDS);
    unrankSet(space.rankOf[g]!, v.pieces, v.cells, a);
    const b = new Uint32Array(WORDS);
    let decided = 0;
    for (let r = 0; r < per; r += 997) {
      engine.unrankP2(a, r, b);
      const index = g * per + r;
      const code = (groups[0]![stateByte(index) - firstByte]! >>> stateShift(index)) & 3;
      const pos = { p1: a, p2: b, toMove: 0 as const };
      if (engine.isIllegal(pos)) expect(code).toBe(ILLEGAL);
      else if (engine.hasWon(1, pos)) expect(code).toBe(LOSS);
      if (code !== UNKNOWN) decided++;
    }
    expect(new TsSolverKernel(v, 'clean').passUnits).toBe(space.p1Placements);
    expect(groups[0]!.some((byte) => byte !== 0) || decided > 0).toBe(true);
  });

  it('the native kernels refuse unit ranges past 2^32 instead of wrapping them', async () => {
    const natives = (await availableBackends()).filter((b) => b.name !== 'ts');
    const table = new Uint8Array(space.tableBytes);
    for (const backend of natives) {
      const kernel = backend.solverKernel(v, 'clean');
      // Wrapped to 32 bits, [2^32 + 5, 2^32 + 6) would be group 5: a real group.
      expect(() => kernel.init(table, TWO_32 + 5, TWO_32 + 6, 1)).toThrow(RangeError);
      expect(() => kernel.sparsePass(table, 0, TWO_32)).toThrow(RangeError);
      expect(() => kernel.pass(table, 1.5, 2)).toThrow(RangeError);
      expect(table.subarray(0, 2 ** 16).every((byte) => byte === 0)).toBe(true);
    }
  });
});

describe('one fs call moves at most 2 GiB', () => {
  it('a body piece of 2 GiB + 16 bytes is written and read back whole (64 MiB per call)', () => {
    const v = variant(7, 4);
    const space = new StateSpace(v);
    const piece = zeroBytes(2 ** 31 + 16); // past the per-call limit
    const marks = [0, 2 ** 31 - 1, 2 ** 31, piece.length - 1];
    marks.forEach((at, i) => (piece[at] = 0x41 + i));
    const body = { length: space.tableBytes, pieces: [{ offset: 1000, bytes: piece }] };
    const path = join(dir, '7x7-4-2gib.ccdb');
    const counts = { positions: 0, p1Wins: 0, p2Wins: 0, draws: 0, illegal: 0 };
    const written = writeDatabase(
      path,
      { board: 7, pieces: 4, rules: 'clean', rankingId: 1, stage: 'checkpoint', startValue: UNKNOWN, passes: 1, storedStates: space.states, ...counts, seconds: 0, passLog: [], maxDistance: 0 },
      body,
    );
    try {
      expect(written.bodyCrc32).toBe(bodyCrc(body));
      const db = openDatabase(path);
      try {
        for (const at of marks) {
          const byte = 1000 + at;
          // The 2-bit values of that byte's four states, as written.
          const expected = [0, 1, 2, 3].map((f) => (piece[at]! >>> (2 * f)) & 3);
          expect([0, 1, 2, 3].map((f) => db.value(4 * byte + f))).toEqual(expected);
        }
        expect(db.value(4 * 999)).toBe(UNKNOWN); // the hole before the piece
      } finally {
        db.close();
      }
    } finally {
      rmSync(path, { force: true });
    }
  });
});

describe('tables past the 4 GiB of a typed array', () => {
  it('the solve refuses only what the machine cannot hold, saying what fits', () => {
    const machine = 24 * 2 ** 30;
    const [s75, s66, s74] = [variant(7, 5), variant(6, 6), variant(7, 4)].map((v) => new StateSpace(v));
    expect(() => checkTableLimits(s75!, false, machine)).toThrow(InsufficientMemoryError);
    expect(() => checkTableLimits(s75!, false, machine)).toThrow(/^7x7\/5 needs 241\.\d GiB, this machine has 24\.0 GiB: use --store DIR --memory SIZE$/);
    expect(() => checkTableLimits(s66!, false, machine)).toThrow(/^6x6\/6 needs 134\.\d GiB, this machine has 24\.0 GiB: use --store DIR --memory SIZE$/);
    // On a server with the memory, 6x6/6 solves in memory: no 4 GiB bound.
    expect(() => checkTableLimits(s66!, false, 256 * 2 ** 30)).not.toThrow();
    expect(() => checkTableLimits(s74!, false, machine)).not.toThrow();
    // 7x7/4's distance table is 14.7 GiB (one byte per state): 18.4 GiB in all fits 24 GiB.
    expect(() => checkTableLimits(s74!, true, machine)).not.toThrow();
    expect(() => checkTableLimits(s74!, true, 16 * 2 ** 30)).toThrow(/^--distances on 7x7\/4 needs 18\.\d GiB .*this machine has 16\.0 GiB: solve without --distances$/);
  });

  it('CRC-32 of a zero run without the bytes equals zlib over the bytes', () => {
    const start = crc32(Buffer.from('ccheckers'));
    for (const n of [0, 1, 3, 4, 255, 4096, 65_537, 2 ** 24 + 7]) expect(crc32Zeros(start, n)).toBe(crc32(new Uint8Array(n), start));
  });

  it('a 6x6/6 database (a 135 GiB body, as a sparse file) round-trips: header, checksum and values past 4 GiB', () => {
    const v = variant(6, 6);
    const space = new StateSpace(v);
    expect(space.tableBytes).toBeGreaterThan(2 ** 37);
    const engine = new BitboardEngine(v, 'clean');
    const indexer = new StateIndexer(space, engine);
    // Positions whose stored states lie past 2^37 states (bytes past 32 GiB), with values.
    const p1 = new Uint32Array(WORDS);
    const p2 = new Uint32Array(WORDS);
    const chosen: Array<{ index: number; value: number; position: { p1: Uint32Array; p2: Uint32Array; toMove: 0 } }> = [];
    for (let g = space.groups - 1; chosen.length < 3; g -= 50_000) {
      unrankSet(space.rankOf[g]!, v.pieces, v.cells, p1);
      engine.unrankP2(p1, 1234 + chosen.length, p2);
      const position = { p1: p1.slice(), p2: p2.slice(), toMove: 0 as const };
      if (engine.isIllegal(position) || engine.isTerminal(position)) continue;
      chosen.push({ index: indexer.index(position), value: [WIN, LOSS, WIN][chosen.length]!, position });
    }
    for (const c of chosen) expect(c.index).toBeGreaterThan(2 ** 37);
    const pieces = chosen
      .map((c) => {
        const bytes = new Uint8Array(1);
        bytes[0] = c.value << stateShift(c.index);
        return { offset: stateByte(c.index), bytes };
      })
      .sort((x, y) => x.offset - y.offset);
    const body = { length: space.tableBytes, pieces };
    const path = join(dir, '6x6-6.ccdb');
    const positions = 2 * space.p1Placements * space.p2Placements; // the variant's, as a reader checks
    const counts = { positions, p1Wins: 6, p2Wins: 6, draws: positions - 12, illegal: 0 }; // beyond 2^32, exactly
    const written = writeDatabase(
      path,
      { board: 6, pieces: 6, rules: 'clean', rankingId: 1, stage: 'complete', startValue: WIN, passes: 3, storedStates: space.states, ...counts, seconds: 1.5, passLog: [], maxDistance: 0 },
      body,
    );
    expect(statSync(path).size).toBe(128 + space.tableBytes + 2); // "[]"
    expect(statSync(path).blocks * 512).toBeLessThan(2 ** 24); // holes: nothing like 135 GiB on disk
    expect(written.bodyCrc32).toBe(bodyCrc(body));

    const db = openDatabase(path);
    try {
      expect(db.verifiedOnOpen).toBe(false); // too large to checksum on open: `ccheckers check` does
      expect(db.header).toMatchObject({ storedStates: space.states, bodyBytes: space.tableBytes, ...counts, bodyCrc32: written.bodyCrc32 });
      const game = new SolvedGame(db);
      for (const c of chosen) {
        expect(db.value(c.index)).toBe(c.value);
        expect(db.value(c.index - TWO_32)).toBe(UNKNOWN);
        const outcome = game.outcome(fromWords(c.position));
        expect(outcome).toBe(c.value === WIN ? 'win' : 'loss');
      }
    } finally {
      db.close();
    }
    expect(() => readDatabase(path)).toThrow(DatabaseError);
    expect(() => readDatabase(path)).toThrow(/does not fit in one typed array.*openDatabase/);
  });
});
