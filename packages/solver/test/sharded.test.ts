/**
 * Sharded stores: for any shard count and memory budget (shards held and streamed), every backend
 * and thread count, the same counts, start value and table CRC-32 as the in-memory solve; an
 * interrupted solve resumes to the same table; stores answer queries like the database file; and
 * a damaged or foreign store is refused with a message naming the file.
 */
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, truncateSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StateSpace, seededRandom, variant } from '@ccheckers/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DatabaseError,
  type SolveResult,
  SolvedGame,
  ShardStore,
  ShardedSolveInterrupted,
  StoreValues,
  availableBackends,
  checkStore,
  createStore,
  exportStore,
  importDatabase,
  overheadBytes,
  type MemoryPlan,
  planMemory,
  planStore,
  readDatabase,
  shardLayout,
  solveSharded,
} from '../src/index.js';
import { inMemorySolves, sameTable } from './support/in-memory.js';
import { randomPosition } from '../../core/test/support/random.js';

const dir = mkdtempSync(join(tmpdir(), 'ccheckers-shards-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const backends = await availableBackends();
let stores = 0;
const newStore = () => join(dir, `store-${stores++}`);

/** A budget that holds `shards` of the largest shard of an S-shard layout, plus the overhead. */
function budgetFor(board: number, pieces: number, s: number, shards: number, kernelCopies: number): number {
  const space = new StateSpace(variant(board, pieces));
  return overheadBytes(space, kernelCopies) + shards * Math.max(...shardLayout(space, s).shards.map((x) => x.bytes));
}

let inMemory: Map<string, SolveResult>;
beforeAll(async () => {
  inMemory = await inMemorySolves(backends[0]!);
}, 120_000);

const same = sameTable;

describe.each(backends.map((b) => [b.name, b] as const))('sharded solves on %s', (_name, backend) => {
  // [board, pieces, shards, shards the budget holds (0: no budget), threads]
  const runs: Array<[number, number, number, number, number]> = [
    [7, 2, 1, 0, 1],
    [7, 2, 3, 0, 2],
    [7, 2, 3, 2, 1], // a block of one shard, one streamed
    [7, 2, 16, 5, 2], // blocks of four
    [4, 6, 3, 2, 2],
    [4, 6, 16, 9, 2], // blocks of eight
  ];
  // 7x7/3 (141 million states) stored in 16 shards, all held: the native kernels only (the TS one
  // takes minutes; a budget below the table takes 28 times the in-memory time: docs/sharding.md).
  if (backend.kernelThreads) runs.push([7, 3, 16, 0, 2]);
  for (const [board, pieces, shards, held, threads] of runs) {
    it(`${board}x${board}/${pieces} in ${shards} shard(s), ${held === 0 ? 'no budget' : `a budget of ${held} shards`}, ${threads} thread(s): the in-memory table`, async () => {
      const copies = backend.kernelThreads || threads === 1 ? 1 : threads;
      const memoryLimit = held === 0 ? undefined : budgetFor(board, pieces, shards, held, copies);
      let plan: { blockShards: number; streamBytes: number } | undefined;
      const r = await solveSharded({ passes: 'tiles',
        variant: variant(board, pieces),
        rules: 'clean',
        backend,
        threads,
        store: newStore(),
        shards,
        ...(memoryLimit !== undefined ? { memoryLimit } : {}),
        onPlan: (p) => (plan = p as MemoryPlan),
      });
      expect(same(r)).toEqual(same(inMemory.get(`${board}/${pieces}`)!));
      expect(r.shards).toBe(shards);
      // The budget decides what is held: everything, or blocks with the other shards streamed.
      if (held === 0) expect(plan!.streamBytes).toBe(0);
      else expect(plan!.blockShards).toBe(held - 1);
      expect(r.passLog.at(-1)!.newlyProven).toBe(0);
    });
  }
});

describe('memory plans', () => {
  const space = new StateSpace(variant(7, 3));
  it('split the budget into a block and a stream buffer, within the budget', () => {
    const budget = overheadBytes(space, 1) + space.tableBytes / 4;
    const plan = planMemory(space, { budget, kernelCopies: 1 });
    expect(plan.blockBytes + plan.streamBytes + plan.overheadBytes).toBeLessThanOrEqual(budget);
    expect(plan.blockShards).toBeGreaterThanOrEqual(1);
    expect(plan.blockShards).toBeLessThan(plan.layout.shards.length);
  });
  it('refuse a budget below two shards, naming the minimum', () => {
    const largest = Math.max(...shardLayout(space, 4).shards.map((s) => s.bytes));
    const minimum = overheadBytes(space, 1) + 2 * largest;
    expect(planMemory(space, { shards: 4, budget: minimum, kernelCopies: 1 }).blockShards).toBe(1);
    expect(() => planMemory(space, { shards: 4, budget: minimum - 1, kernelCopies: 1 })).toThrow(/too small .* in 4 shards .* two shards plus .* in all/);
  });
  it('refuse a new store whose shards would pass 4 GiB (one typed array), and take one just under', () => {
    // 6x6/6: a 134.8 GiB table; 33 shards are 4.08 GiB each, 34 are 3.96 GiB.
    const request = { variant: variant(6, 6), rules: 'clean' as const, store: newStore() };
    const over = planStore({ ...request, shards: 33 }, 1).plan;
    expect(Math.max(...over.layout.shards.map((s) => s.bytes))).toBeGreaterThan(2 ** 32);
    expect(() => createStore(request, over)).toThrow(/shards of 6x6\/6 would be over 4 GiB .*: use more --shards/);
    const under = planStore({ ...request, shards: 34 }, 1).plan;
    expect(Math.max(...under.layout.shards.map((s) => s.bytes))).toBeLessThanOrEqual(2 ** 32);
    expect(createStore(request, under).layout.shards).toHaveLength(34);
  });
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
    await solveSharded({ passes: 'tiles', variant: v, rules: 'clean', backend: backends[0]!, threads: 1, store: storePath, shards: 5 });
    file = join(dir, 'from-store.ccdb');
    exportStore(storePath, file);
  });

  it('exports to the database file of the in-memory solve, and imports back', () => {
    const db = readDatabase(file);
    expect(db.header.bodyCrc32).toBe(inMemory.get('7/2')!.tableCrc32);
    expect(db.header.positions).toBe(inMemory.get('7/2')!.positions);
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
      solveSharded({ passes: 'tiles', variant: variant(7, 1), rules: 'clean', backend: backends[0]!, threads: 1, store: storePath, resume: true }),
    ).rejects.toThrow(/is a store of 7x7\/2 \(clean\), not 7x7\/1 \(clean\)/);
    const fake = join(dir, 'fake-store');
    importDatabase(file, fake, { shards: 2 });
    const manifest = join(fake, 'manifest.json');
    writeFileSync(manifest, readFileSync(manifest, 'utf8').replace('"pieces": 2', '"pieces": 3'));
    expect(() => ShardStore.open(fake)).toThrow(/manifest.json: corrupt manifest: its sizes are not those of 7x7\/3/);
    await expect(solveSharded({ passes: 'tiles', variant: v, rules: 'clean', backend: backends[0]!, threads: 1, store: storePath })).rejects.toThrow(
      /already holds a store: use --resume/,
    );
  });
});

describe('interrupted sharded solves', () => {
  it('resume from any save to the same table', async () => {
    const v = variant(7, 2);
    const expected = same(inMemory.get('7/2')!);
    const budget = budgetFor(7, 2, 6, 3, 1);
    // Stop after the n-th save (init shards, blocks, streamed shards, pass ends), then resume.
    for (const stopAt of [1, 4, 9, 17, 30]) {
      const store = newStore();
      const controller = new AbortController();
      let saves = 0;
      await expect(
        solveSharded({ passes: 'tiles',
          variant: v,
          rules: 'clean',
          backend: backends[0]!,
          threads: 1,
          store,
          shards: 6,
          memoryLimit: budget,
          signal: controller.signal,
          onSave: () => {
            if (++saves === stopAt) controller.abort();
          },
        }),
      ).rejects.toThrow(ShardedSolveInterrupted);
      // Leftovers of a crash between a shard file and the manifest are removed on resume.
      writeFileSync(join(store, 'shard-00001.g999.bin'), 'half a shard');
      // The last one resumes on another backend (the TS one where the native addon loads).
      const backend = stopAt === 30 ? backends.at(-1)! : backends[0]!;
      const r = await solveSharded({ passes: 'tiles', variant: v, rules: 'clean', backend, threads: 2, store, resume: true, memoryLimit: budget });
      expect(same(r)).toEqual(expected);
      expect(readdirSync(store).filter((f) => f.includes('g999'))).toEqual([]);
    }
  });

  it('say what the store holds when interrupted', async () => {
    const store = newStore();
    const error = await solveSharded({ passes: 'tiles', variant: variant(7, 2), rules: 'clean', backend: backends[0]!, threads: 1, store, shards: 3, stopAfterPass: 2 }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ShardedSolveInterrupted);
    expect((error as Error).message).toMatch(new RegExp(`${store} holds 2 passes, continue with --resume`));
  });
});
