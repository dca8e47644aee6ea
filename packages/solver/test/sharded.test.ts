/**
 * Sharded stores once solved (the solves themselves: band-solve.test.ts): they answer queries like
 * the database file, export and import, and a damaged or foreign store is refused with a message
 * naming the file.
 */
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, truncateSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StateSpace, seededRandom, variant } from '@ccheckers/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DatabaseError,
  SolvedGame,
  ShardStore,
  ShardedSolveInterrupted,
  StoreValues,
  availableBackends,
  checkStore,
  exportStore,
  importDatabase,
  manifestChecksum,
  manifestText,
  readDatabase,
  shardLayout,
  solveSharded,
} from '../src/index.js';
import { IN_MEMORY } from './support/in-memory.js';
import { randomPosition } from '../../core/test/support/random.js';

const dir = mkdtempSync(join(tmpdir(), 'ccheckers-shards-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const backends = await availableBackends();
let stores = 0;
const newStore = () => join(dir, `store-${stores++}`);

describe('shard layouts', () => {
  const space = new StateSpace(variant(7, 3));
  it('cut shards on byte boundaries of the table (4 groups)', () => {
    for (const n of [1, 3, 7, 16, 1000]) {
      const { shards } = shardLayout(space, n);
      expect(shards.reduce((sum, s) => sum + s.bytes, 0)).toBe(space.tableBytes);
      for (const s of shards) expect((s.firstGroup * space.p2Placements) % 4).toBe(0);
    }
  });
});

describe('a store after the solve', () => {
  const v = variant(7, 2);
  let storePath: string;
  let file: string;
  beforeAll(async () => {
    storePath = newStore();
    await solveSharded({ variant: v, rules: 'clean', backend: backends[0]!, threads: 1, store: storePath, shards: 5 });
    file = join(dir, 'from-store.ccdb');
    exportStore(storePath, file);
  });

  it('exports to the database file of the in-memory solve, and imports back', () => {
    const db = readDatabase(file);
    expect(db.header.bodyCrc32).toBe(IN_MEMORY.get('7/2')!.crc);
    expect(db.header.positions).toBe(IN_MEMORY.get('7/2')!.positions);
    const back = newStore();
    importDatabase(file, back, { shards: 7 });
    const report = checkStore(back, { recount: true });
    expect(report.table).toEqual({ expected: db.header.bodyCrc32, actual: db.header.bodyCrc32, ok: true });
    expect(report.recount!.manifestAgrees).toBe(true);
    expect(report.shards).toHaveLength(7);
  });

  it('answers 10^4 random positions as the database file does, reading by page', () => {
    const fromFile = new SolvedGame(readDatabase(file));
    const values = new StoreValues(ShardStore.open(storePath), { wholeUpTo: 0 });
    expect(values.readsFromDisk).toBe(true);
    const fromStore = new SolvedGame(values, fromFile.distanceLimit);
    const random = seededRandom(19);
    for (let i = 0; i < 10_000; i++) {
      const p = randomPosition(random, v.cells, v.pieces);
      expect(fromStore.outcome(p)).toBe(fromFile.outcome(p));
      if (i % 2500 === 0) expect(fromStore.analyse(p)).toEqual(fromFile.analyse(p)); // moves and best move too
    }
    values.close();
  });

  it('verifies every shard, and reports the damaged one by name', () => {
    const copy = newStore();
    importDatabase(file, copy, { shards: 4 });
    expect(checkStore(copy).shards.every((s) => s.ok)).toBe(true);
    const shardFile = join(copy, ShardStore.open(copy).manifest.shards[2]!.file);
    const bytes = readFileSync(shardFile);
    bytes[10]! ^= 0x40;
    writeFileSync(shardFile, bytes);
    const report = checkStore(copy);
    expect(report.shards.map((s) => s.ok)).toEqual([true, true, false, true]);
    expect(report.shards[2]!.problem).toMatch(/corrupt shard 2: checksum 0x[0-9a-f]{8} but the manifest records/);
    expect(report.table).toBeUndefined();
    expect(() => new StoreValues(ShardStore.open(copy))).toThrow(new RegExp(`${shardFile}: corrupt shard 2`));
  });

  it('records a checksum of its manifest: kept when re-indented or reordered, an edit refused, none (earlier versions) accepted', () => {
    const copy = newStore();
    importDatabase(file, copy, { shards: 3 });
    const path = join(copy, 'manifest.json');
    const text = readFileSync(path, 'utf8');
    const m = JSON.parse(text);
    expect(m.crc32).toBe(manifestChecksum(m));
    // The same content in another layout: keys in reverse order at every level, no indent.
    const reversed = (x: unknown): unknown =>
      Array.isArray(x) ? x.map(reversed) : x !== null && typeof x === 'object' ? Object.fromEntries(Object.entries(x).reverse().map(([k, y]) => [k, reversed(y)])) : x;
    writeFileSync(path, JSON.stringify(reversed(m)));
    expect(ShardStore.open(copy).manifest.results).toEqual(m.results);
    // Counts that still add up, a start value, a shard's checksum: each change is refused on open.
    for (const change of [(x: any) => ((x.results.p1Wins -= 7), (x.results.draws += 7)), (x: any) => (x.results.startValue = 1), (x: any) => (x.shards[1].crc32 ^= 1)]) {
      const edited = JSON.parse(text);
      change(edited);
      writeFileSync(path, JSON.stringify(edited, null, 1));
      expect(() => ShardStore.open(copy)).toThrow(new RegExp(`^${copy}: manifest\\.json was edited or damaged: its content has checksum 0x[0-9a-f]{8}, it records 0x${m.crc32.toString(16).padStart(8, '0')}; undo the edit`));
      expect(() => exportStore(copy, join(dir, 'never.ccdb'))).toThrow(/manifest\.json was edited or damaged/);
      expect(() => checkStore(copy)).toThrow(/manifest\.json was edited or damaged/);
    }
    expect(existsSync(join(dir, 'never.ccdb'))).toBe(false);
    // Without the field (a manifest of an earlier version): accepted, and check says so.
    const { crc32: _, ...old } = m;
    writeFileSync(path, JSON.stringify(old, null, 1));
    expect(ShardStore.open(copy).manifest.crc32).toBeUndefined();
    expect(checkStore(copy).manifestChecksum).toBe('none');
    // Such a manifest edited: a recount finds it, export refuses it naming both, --fix rewrites it.
    writeFileSync(path, JSON.stringify({ ...old, results: { ...old.results, p1Wins: old.results.p1Wins - 7, draws: old.results.draws + 7 } }, null, 1));
    expect(() => exportStore(copy, join(dir, 'never.ccdb'))).toThrow(
      new RegExp(`manifest\\.json: the manifest's results are not what its shards hold: it records P1 wins ${old.results.p1Wins - 7} \\(the shards: ${old.results.p1Wins}\\), draws ${old.results.draws + 7} \\(the shards: ${old.results.draws}\\); no database file was written`),
    );
    expect(existsSync(join(dir, 'never.ccdb'))).toBe(false);
    expect(() => ShardStore.open(copy).checkShardFiles()).toThrow(/the manifest's results are not what its shards hold: it records P1 wins/);
    const fixed = checkStore(copy, { fix: true });
    expect(fixed).toMatchObject({ fixed: true, manifestChecksum: 'none', recount: { manifestAgrees: false } });
    const after = checkStore(copy, { recount: true });
    expect(after).toMatchObject({ manifestChecksum: 'ok', recount: { manifestAgrees: true }, table: { ok: true } });
    expect(after.fixed).toBeUndefined();
    expect(ShardStore.open(copy).manifest.results).toEqual(m.results);
    expect(checkStore(copy, { fix: true }).fixed).toBeUndefined(); // nothing left to fix
  });

  it('refuses a truncated or missing shard, naming the file', () => {
    const copy = newStore();
    importDatabase(file, copy, { shards: 4 });
    const m = ShardStore.open(copy).manifest;
    truncateSync(join(copy, m.shards[1]!.file), 100);
    unlinkSync(join(copy, m.shards[3]!.file));
    const report = checkStore(copy);
    expect(report.shards[1]!.problem).toMatch(/shard 1 has 100 bytes, the manifest records/);
    expect(report.shards[3]!.problem).toMatch(/shard 3 is missing or unreadable \(ENOENT\)/);
    expect(() => exportStore(copy, join(dir, 'never.ccdb'))).toThrow(DatabaseError);
    expect(existsSync(join(dir, 'never.ccdb'))).toBe(false);
  });

  it('refuses to continue a store of another variant, and a manifest that is not one', async () => {
    await expect(
      solveSharded({ variant: variant(7, 1), rules: 'clean', backend: backends[0]!, threads: 1, store: storePath, resume: true }),
    ).rejects.toThrow(/is a store of 7x7\/2 \(clean\), not 7x7\/1 \(clean\)/);
    const fake = join(dir, 'fake-store');
    importDatabase(file, fake, { shards: 2 });
    const manifest = join(fake, 'manifest.json');
    writeFileSync(manifest, manifestText(JSON.parse(readFileSync(manifest, 'utf8').replace('"pieces": 2', '"pieces": 3'))));
    expect(() => ShardStore.open(fake)).toThrow(/manifest.json: corrupt manifest: its sizes are not those of 7x7\/3/);
    await expect(solveSharded({ variant: v, rules: 'clean', backend: backends[0]!, threads: 1, store: storePath })).rejects.toThrow(
      /already holds a store: use --resume/,
    );
  });
});

describe('interrupted sharded solves', () => {
  it('say what the store holds when interrupted', async () => {
    const store = newStore();
    const error = await solveSharded({ variant: variant(7, 2), rules: 'clean', backend: backends[0]!, threads: 1, store, shards: 3, stopAfterPass: 2 }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ShardedSolveInterrupted);
    expect((error as Error).message).toMatch(new RegExp(`${store} holds 2 passes, continue with --resume`));
  });
});
