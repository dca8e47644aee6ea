/**
 * TableBytes (table-bytes.ts): a table read through several views. Small views here cross view
 * boundaries on small tables, the way a table past 4 GiB crosses its 4 GiB views (the big ones
 * are in packages/solver/test/large-table.test.ts).
 */
import { crc32 } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { MAX_VIEW_BYTES, NO_DISTANCE, StateSpace, TableBytes, TsSolverKernel, readValue, seededRandom, tableViews, variant } from '../src/index.js';

describe('TableBytes', () => {
  it('reads and writes every byte as one plain array does, across views of 7 bytes', () => {
    const random = seededRandom(36);
    const length = 100;
    for (const table of [TableBytes.shared(length, 7), new TableBytes([new Uint8Array(49), new Uint8Array(49), new Uint8Array(2)])]) {
      const plain = new Uint8Array(table.length);
      expect(table.views.map((v) => v.length)).toEqual(table.shared ? [7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 2] : [49, 49, 2]);
      for (let trial = 0; trial < 2000; trial++) {
        const at = Math.floor(random() * plain.length);
        const x = Math.floor(random() * 256);
        const op = trial % 4;
        if (op === 0) {
          table.set(at, x);
          plain[at] = x;
        } else if (op === 1) {
          expect(table.or(at, x)).toBe(plain[at]);
          plain[at]! |= x;
        } else if (op === 2) {
          const expected = random() < 0.5 ? plain[at]! : x;
          expect(table.compareExchange(at, expected, x)).toBe(plain[at]);
          if (plain[at] === expected) plain[at] = x;
        } else {
          const from = Math.floor(random() * plain.length);
          const to = from + Math.floor(random() * (plain.length - from + 1));
          const i = plain.subarray(0, to).indexOf(x & 7, from);
          expect(table.indexOf(x & 7, from, to)).toBe(i);
        }
      }
      for (let at = 0; at < plain.length; at++) expect(table.get(at)).toBe(plain[at]);
      expect(Buffer.concat(tableViews(table).map((p) => p.bytes))).toEqual(Buffer.from(plain));
      expect(tableViews(table).map((p) => p.offset)).toEqual(table.views.map((_, i) => i * table.viewBytes));
      for (let i = 0; i < 4 * plain.length; i++) expect(readValue(table, i)).toBe(readValue(plain, i));
    }
  });

  it('refuses views of unequal lengths, more than 2^32 bytes in a view, and one view of several', () => {
    expect(() => new TableBytes([])).toThrow(RangeError);
    expect(() => new TableBytes([new Uint8Array(4), new Uint8Array(8)])).toThrow(/view 1 has 8 bytes/);
    expect(() => new TableBytes([new Uint8Array(4), new Uint8Array(3), new Uint8Array(3)])).toThrow(/view 1 has 3 bytes/);
    expect(MAX_VIEW_BYTES).toBe(2 ** 32);
    expect(() => TableBytes.shared(10, 4).asOneView()).toThrow(/more than one typed array holds/);
    const one = new Uint8Array(5);
    expect(TableBytes.of(one).asOneView()).toBe(one);
    expect(TableBytes.of(one).pageInfo).toEqual({ allocator: 'v8', hugePagesAdvised: false });
  });

  it('the TS kernel solves 4x4/3 with distances in views of 257 bytes as in one plain table', () => {
    const v = variant(4, 3);
    const space = new StateSpace(v);
    const run = (table: Uint8Array | TableBytes, distances: Uint8Array | TableBytes) => {
      const kernel = new TsSolverKernel(v, 'clean', space);
      kernel.init(table, 0, space.groups);
      let passes = 0;
      while (((s) => s.wins + s.losses)(kernel.pass(table, 0, kernel.passUnits)) > 0) passes++;
      // Sparse passes read the table's bytes directly: one more, down the groups, proves nothing.
      expect(kernel.sparsePass(table, 0, space.groups, { descending: true }).wins).toBe(0);
      kernel.distanceInit(table, distances, 0, space.groups);
      let layers = 0;
      while (((s) => s.wins + s.losses)(kernel.distanceLayer(table, distances, layers, 0, space.groups)) > 0) layers++;
      return { passes, layers };
    };
    const plain = new Uint8Array(space.tableBytes);
    const plainDistances = new Uint8Array(space.states).fill(NO_DISTANCE);
    const plainRun = run(plain, plainDistances);
    expect(plainRun.passes).toBeGreaterThan(1);
    expect(plainRun.layers).toBeGreaterThan(5);
    const table = TableBytes.shared(space.tableBytes, 257);
    const distances = TableBytes.shared(space.states, 257).fill(NO_DISTANCE);
    expect(table.views.length).toBeGreaterThan(50);
    expect(run(table, distances)).toEqual(plainRun);
    const crcOf = (t: TableBytes) => t.views.reduce((c, view) => crc32(view, c), 0);
    expect(crcOf(table)).toBe(crc32(plain));
    expect(crcOf(distances)).toBe(crc32(plainDistances));
  });
});
