/**
 * The consistency check (check --consistency): every stored state of solved 7x7/2 and 4x4/6 (both
 * rule modes) agrees with the rules and its children, on one thread and several, held whole or in
 * blocks, in a database file and in a store; and each kind of planted error is found, in files
 * whose checksums were recomputed, so that only this check can see it.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ILLEGAL, LOSS, NO_DISTANCE, StateSpace, UNKNOWN, WIN, readValue, variant } from '@ccheckers/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ConsistencyReport,
  type Database,
  DEFAULT_SAMPLE_SEED,
  availableBackends,
  checkConsistency,
  importDatabase,
  planConsistency,
  readDatabase,
  sampleIndices,
  solve,
  writeDatabase,
} from '../src/index.js';

const dir = mkdtempSync(join(tmpdir(), 'ccheckers-consistency-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const [backend] = await availableBackends();

const with71 = join(dir, '7x7-1-distances.ccdb');
const with72 = join(dir, '7x7-2-distances.ccdb');
const plain72 = join(dir, '7x7-2.ccdb');
const clean46 = join(dir, '4x4-6-clean.ccdb');
const published46 = join(dir, '4x4-6-published.ccdb');

beforeAll(async () => {
  const at = (out: string, board: number, pieces: number, rules: 'clean' | 'published', distances: boolean) =>
    solve({ variant: variant(board, pieces), rules, backend: backend!, threads: 2, out, distances });
  await at(with71, 7, 1, 'clean', true);
  await at(with72, 7, 2, 'clean', true);
  await at(plain72, 7, 2, 'clean', false);
  await at(clean46, 4, 6, 'clean', true);
  await at(published46, 4, 6, 'published', false);
}, 120_000);

/** The counts a sound check reports match the table's (stored states, unweighted). */
function expectSound(r: ConsistencyReport, path: string): void {
  expect(r.mismatches, JSON.stringify(r.first[0])).toBe(0);
  expect(r.first).toEqual([]);
  expect(r.checked).toBe(r.states);
  const db = readDatabase(path);
  const space = new StateSpace(variant(db.header.board, db.header.pieces));
  const counts = [0, 0, 0, 0];
  for (let i = 0; i < space.states; i++) counts[readValue(db.table, i)]!++;
  expect([r.counts.draw, r.counts.loss, r.counts.win, r.counts.illegal]).toEqual(counts);
}

/** A budget that holds about `fraction` of the table (values and distances) per block. */
function budgetFor(board: number, pieces: number, distances: boolean, threads: number, fraction: number): number {
  const space = new StateSpace(variant(board, pieces));
  return planConsistency(space, 4, distances, threads, 2 ** 50).overheadBytes + Math.ceil(fraction * space.states * (distances ? 1.25 : 0.25));
}

describe('sound databases agree with the rules', () => {
  it('7x7/2 with distances (a full proof), held whole', async () => {
    const r = await checkConsistency(with72, { threads: 2 });
    expectSound(r, with72);
    expect(r).toMatchObject({ distances: true, blocks: 1, threads: 2 });
    // docs/rules.md section 8: 5,400 terminal stored states (10,800 positions), 5,405 illegal.
    expect(r.counts).toMatchObject({ terminal: 5_400, illegal: 5_405, draw: 0, allMovesIllegal: 0 });
  });

  it('7x7/2 without distances in a store, in blocks streamed past each other, on two worker threads', async () => {
    const store = join(dir, 'store-7x7-2');
    importDatabase(plain72, store, { shards: 8 });
    const r = await checkConsistency(store, { threads: 2, memory: budgetFor(7, 2, false, 2, 0.4) });
    expect(r).toMatchObject({ kind: 'store', distances: false, threads: 2 });
    expect(r.blocks).toBeGreaterThan(1);
    expectSound(r, plain72);
  });

  it('4x4/6, clean rules with distances and published rules without: draws and Def. 3', async () => {
    const clean = await checkConsistency(clean46, { threads: 2 });
    expectSound(clean, clean46);
    expect(clean.counts.draw).toBeGreaterThan(0);
    const published = await checkConsistency(published46, { threads: 2 });
    expectSound(published, published46);
    expect(published.rules).toBe('published');
  });

  it('7x7/1 in blocks of a database file, one thread and two', async () => {
    for (const threads of [1, 2]) {
      const r = await checkConsistency(with71, { threads, memory: budgetFor(7, 1, true, threads, 0.3) });
      expect(r.blocks).toBeGreaterThan(2);
      expectSound(r, with71);
    }
  });

  it('a sample of states chosen by a fixed seed', async () => {
    expect(sampleIndices(1_000_000, 5, 7)).toEqual(sampleIndices(1_000_000, 5, 7));
    expect(new Set(sampleIndices(100, 99, 7)).size).toBe(99);
    const r = await checkConsistency(with72, { sample: 2_000 });
    expect(r).toMatchObject({ checked: 2_000, mismatches: 0, sample: { size: 2_000, seed: DEFAULT_SAMPLE_SEED } });
  });
});

/** A copy of `from` with `edit` applied to its tables, checksums recomputed. */
function planted(from: string, name: string, edit: (db: Database, space: StateSpace) => number): { path: string; index: number } {
  const db = readDatabase(from);
  const space = new StateSpace(variant(db.header.board, db.header.pieces));
  const index = edit(db, space);
  const path = join(dir, name);
  writeDatabase(path, db.header, db.table, db.distances);
  expect(readFileSync(path).equals(readFileSync(from))).toBe(false); // the edit changed the file
  readDatabase(path); // and every checksum is right
  return { path, index };
}

function setValue(table: Uint8Array, index: number, value: number): void {
  table[index >>> 2] = (table[index >>> 2]! & ~(3 << ((index & 3) * 2))) | (value << ((index & 3) * 2));
}

/** The first state from `from` on with value `value` whose distance passes `distance`. */
function find(db: Database, value: number, distance: (d: number) => boolean = () => true, from = 0): number {
  for (let i = from; ; i++) if (readValue(db.table, i) === value && distance(db.distances![i]!)) return i;
}

describe('planted errors are found', () => {
  const cases: Array<[string, string, number, (db: Database) => number]> = [
    // A lost state (not terminal) made a win: none of its children is lost.
    ['a WIN without a LOSS child', 'win-without-lost-child', WIN, (db) => find(db, LOSS, (d) => d > 0)],
    // A won state made a loss: its lost child is not a win.
    ['a LOSS with a child that is not a WIN', 'loss-with-child-not-won', LOSS, (db) => find(db, WIN)],
    ['a DRAW that is decided', 'draw-decided', UNKNOWN, (db) => find(db, WIN)],
    ['an illegal position stored as legal', 'illegal-stored-legal', WIN, (db) => find(db, ILLEGAL)],
    ['a legal position stored as illegal', 'legal-stored-illegal', ILLEGAL, (db) => find(db, WIN)],
    ['a terminal position stored as a win', 'terminal-not-lost', WIN, (db) => find(db, LOSS, (d) => d === 0)],
  ];
  for (const [what, problem, value, pick] of cases) {
    it(what, async () => {
      const { path, index } = planted(with71, `${problem}.ccdb`, (db) => {
        const i = pick(db);
        setValue(db.table, i, value);
        return i;
      });
      const r = await checkConsistency(path, { threads: 1, limit: 1_000 });
      expect(r.mismatches).toBeGreaterThan(0);
      const found = r.first.find((m) => m.index === index);
      expect(found, JSON.stringify(r.first.slice(0, 3))).toBeDefined();
      expect(found!.problem).toBe(problem);
      expect(found!.position).toMatch(/^[xo.]{49} x$/);
      // The same on worker threads.
      const threads = await checkConsistency(path, { threads: 2, limit: 1_000 });
      expect({ total: threads.mismatches, first: threads.first }).toEqual({ total: r.mismatches, first: r.first });
    });
  }

  it('a wrong distance (the value right), only in a database with distances', async () => {
    const { path, index } = planted(with71, 'wrong-distance.ccdb', (db) => {
      const i = find(db, WIN, (d) => d > 2);
      db.distances![i]! += 2;
      return i;
    });
    const r = await checkConsistency(path, { threads: 2, limit: 1_000 });
    const found = r.first.find((m) => m.index === index);
    expect(found?.problem).toBe('wrong-distance');
    expect(found!.stored.distance).toBe(found!.expected.distance! + 2);
  });

  it('an illegal state given a distance', async () => {
    const { path, index } = planted(with71, 'illegal-distance.ccdb', (db) => {
      const i = find(db, ILLEGAL);
      db.distances![i] = 5;
      return i;
    });
    const r = await checkConsistency(path, { threads: 1, limit: 1_000 });
    expect(r.first.find((m) => m.index === index)?.problem).toBe('wrong-distance');
  });

  it('a draw given a distance', async () => {
    const { path, index } = planted(clean46, 'draw-distance.ccdb', (db) => {
      const i = find(db, UNKNOWN, (d) => d === NO_DISTANCE);
      db.distances![i] = 3;
      return i;
    });
    const r = await checkConsistency(path, { threads: 2, limit: 1_000 });
    expect(r.first.find((m) => m.index === index)?.problem).toBe('wrong-distance');
  });

  it('the mismatches listed are those of lowest index, the same on every thread count, and the sample finds a planted state it holds', async () => {
    const space = new StateSpace(variant(7, 1));
    const [index] = sampleIndices(space.states, 50, DEFAULT_SAMPLE_SEED).slice(-1);
    const { path } = planted(with71, 'sampled.ccdb', (db) => {
      setValue(db.table, index!, readValue(db.table, index!) === ILLEGAL ? WIN : ILLEGAL);
      for (const from of [1_000, 700, 400, 100]) {
        const other = find(db, WIN, () => true, from); // more errors, planted in no order
        expect(other).not.toBe(index);
        setValue(db.table, other, ILLEGAL);
      }
      return index!;
    });
    const sampled = await checkConsistency(path, { sample: 50, limit: 1_000 });
    expect(sampled.first.map((m) => m.index)).toContain(index);
    const one = await checkConsistency(path, { threads: 1, limit: 2 });
    const two = await checkConsistency(path, { threads: 2, limit: 2 });
    expect(one.mismatches).toBeGreaterThanOrEqual(5);
    expect(one.first).toHaveLength(2);
    expect(two.first).toEqual(one.first);
    expect(one.first.map((m) => m.index)).toEqual([...one.first.map((m) => m.index)].sort((p, q) => p - q));
  });
});
