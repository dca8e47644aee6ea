/**
 * Distance tables (solve with `distances`): identical on every backend and thread count, equal to
 * their definition checked state by state with the plain engine, equal to the distances a query
 * computes on demand and to the whole table a query computes for a database without one, and
 * refused when the self-check finds a state without one.
 */
import { type Backend, BitboardEngine, ILLEGAL, LOSS, MAX_DISTANCE, NO_DISTANCE, StateSpace, TableBytes, WIN, WORDS, readValue, startPosition, toWords, unrankSet, variant } from '@ccheckers/core';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SolvedGame, StateIndexer, WHOLE_TABLE_DISTANCES_UP_TO, availableBackends, canComputeDistances, inMemoryValues, solve, withComputedDistances } from '../src/index.js';
import { layersSeen } from '../src/distance-table.js';

const backends = await availableBackends();

interface Solved {
  table: Uint8Array;
  distances: Uint8Array;
  maxPlies: number;
  crc32: number;
}

async function solveWithDistances(backend: Backend, board: number, pieces: number, rules: 'clean' | 'published', threads: number): Promise<Solved> {
  const r = await solve({ variant: variant(board, pieces), rules, backend, threads, distances: true, keepTable: true });
  return { table: r.table!, distances: r.distanceTable!, maxPlies: r.distances!.maxPlies, crc32: r.distances!.crc32 };
}

/**
 * The definition, state by state, with the engine's legal moves and the indexer (no kernel code):
 * a lost state without a legal move is 0; a won state is 1 + its nearest lost child; a lost state
 * 1 + its farthest won child; draws and illegal states have none.
 */
function checkDefinition(board: number, pieces: number, rules: 'clean' | 'published', s: Solved): number {
  const v = variant(board, pieces);
  const space = new StateSpace(v);
  const engine = new BitboardEngine(v, rules);
  const indexer = new StateIndexer(space, engine);
  const p = { p1: new Uint32Array(WORDS), p2: new Uint32Array(WORDS), toMove: 1 as 0 | 1 };
  const moves = new Int32Array(2 * engine.maxMoves);
  let checked = 0;
  for (let index = 0; index < space.states; index++) {
    const value = readValue(s.table, index);
    const group = Math.floor(index / space.p2Placements);
    if (value !== WIN && value !== LOSS) {
      expect(s.distances[index]).toBe(NO_DISTANCE);
      continue;
    }
    const a = new Uint32Array(WORDS);
    const b = new Uint32Array(WORDS);
    unrankSet(space.rankOf[group]!, pieces, v.cells, a);
    engine.unrankP2(a, index - group * space.p2Placements, b);
    const n = engine.legalMoves({ p1: a, p2: b, toMove: 0 }, moves);
    const childDistances: number[] = [];
    for (let i = 0; i < n; i++) {
      p.p1.set(a);
      p.p2.set(b);
      p.p1[moves[2 * i]! >>> 5]! ^= 1 << (moves[2 * i]! & 31);
      p.p1[moves[2 * i + 1]! >>> 5]! ^= 1 << (moves[2 * i + 1]! & 31);
      const child = indexer.index(p);
      const childValue = readValue(s.table, child);
      if (childValue === ILLEGAL) continue;
      if (value === LOSS || childValue === LOSS) childDistances.push(s.distances[child]!);
    }
    const expected = value === WIN ? 1 + Math.min(...childDistances) : childDistances.length === 0 ? 0 : 1 + Math.max(...childDistances);
    if (s.distances[index] !== expected) throw new Error(`state ${index}: distance ${s.distances[index]}, expected ${expected}`);
    checked++;
  }
  return checked;
}

describe('distance tables', () => {
  const fingerprints = new Map<string, Set<string>>();
  const reference = new Map<string, Solved>();
  // Small variants on every backend and thread count (7x7/1 and 4x4/3 have mirror twins); 7x7/2
  // on the native backends (the TS backend is checked against them on the small ones).
  const small = [
    [7, 1, 'clean'],
    [4, 3, 'clean'],
    [4, 3, 'published'],
  ] as const;
  // 4x4/6 with the published rules: the blocking rules of Def. 3 make illegal states the init's
  // check of a lost state's children must see (native backends; 6 s on the TS kernel).
  const sixPieces = [4, 6, 'published'] as const;
  const cases = [...small, [7, 2, 'clean'], sixPieces] as const;

  describe.each(backends.map((b) => [b.name, b] as const))('on %s', (_name, backend) => {
    for (const [board, pieces, rules] of cases) {
      for (const threads of [1, 2]) {
        // The TS backend: one thread on 7x7/1, workers on 4x4/3 (the suite's time goes elsewhere).
        if (backend.name === 'ts' && (pieces === 2 || pieces === 6 || (board === 4 && threads === 1))) continue;
        it(`${board}x${board}/${pieces} (${rules}), ${threads} thread(s)`, async () => {
          const s = await solveWithDistances(backend, board, pieces, rules, threads);
          const key = `${board}/${pieces}/${rules}`;
          if (!fingerprints.has(key)) fingerprints.set(key, new Set());
          fingerprints.get(key)!.add(`${s.maxPlies}:${s.crc32}`);
          if (!reference.has(key)) reference.set(key, s);
        });
      }
    }
  });

  it('report each layer\'s progress, and the share of the won and lost states placed', async () => {
    const events: Array<{ phase: string; pass: number; fraction: number; distanced?: number }> = [];
    const r = await solve({ variant: variant(7, 1), rules: 'clean', backend: backends[0]!, threads: 1, distances: true, onProgress: (e) => events.push(e) });
    const layers = events.filter((e) => e.phase === 'distances');
    // Within a layer the fraction grows to 1 (a chunk of the table at a time), then starts again.
    for (let i = 1; i < layers.length; i++) {
      const [a, b] = [layers[i - 1]!, layers[i]!];
      if (a.pass === b.pass) expect(b.fraction).toBeGreaterThan(a.fraction);
      else expect(a.fraction).toBe(1);
      expect(b.distanced!).toBeGreaterThanOrEqual(a.distanced!);
    }
    expect([...new Set(layers.map((e) => e.pass))]).toEqual(Array.from({ length: r.distances!.maxPlies + 1 }, (_, i) => i));
    expect(layers.at(-1)).toMatchObject({ fraction: 1, distanced: 1 });
    expect(events.at(-1)).toMatchObject({ phase: 'distances-done', pass: r.distances!.maxPlies, fraction: 1, distanced: 1 });
  });

  describe.each(backends.map((b) => [b.name, b] as const))('on %s, the distance table', (_name, backend) => {
    const space = new StateSpace(variant(4, 3));
    /** The backend, its tables allocated through `allocate` (the solve's every table comes so). */
    const allocatingWith = (allocate: (bytes: number) => TableBytes): Backend =>
      Object.assign(Object.create(backend) as Backend, { allocateTable: allocate });
    const own = (bytes: number) => backend.allocateTable?.(bytes) ?? TableBytes.shared(bytes);

    it('is allocated once the passes are done (2 threads: the worker pool of the layers has it)', async () => {
      const log: string[] = [];
      const r = await solve({
        variant: variant(4, 3), rules: 'clean', threads: 2, distances: true, keepTable: true,
        backend: allocatingWith((bytes) => (log.push(`allocate ${bytes}`), own(bytes))),
        onProgress: (e) => {
          if (e.phase === 'pass-done' || (e.phase === 'distances' && log.at(-1) !== 'distances')) log.push(e.phase);
        },
      });
      const passes = log.filter((e) => e === 'pass-done').length;
      expect(log).toEqual([`allocate ${space.tableBytes}`, ...Array<string>(passes).fill('pass-done'), `allocate ${space.states}`, 'distances']);
      expect(r.distances!.crc32).toBe(reference.get('4/3/clean')!.crc32);
    });

    it('that cannot be allocated after the passes loses none of them: a resume lays the distances', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'ccheckers-distances-'));
      try {
        const out = join(dir, '4x4-3.ccdb');
        const failing = allocatingWith((bytes) => {
          if (bytes === space.states) throw new RangeError('Array buffer allocation failed');
          return own(bytes);
        });
        const base = { variant: variant(4, 3), rules: 'clean' as const, threads: 2, distances: true, out };
        await expect(solve({ ...base, backend: failing })).rejects.toThrow(
          `Array buffer allocation failed (for the distance table); the passes are saved in ${out}.ckpt: continue with --resume --distances once there is memory`,
        );
        const events: string[] = [];
        const r = await solve({ ...base, backend, resume: true, keepTable: true, onProgress: (e) => events.push(e.phase) });
        expect(r.resumedFromPass).toBe(r.passes); // every pass was done
        // No init, and no pass recorded: the one pass it runs confirms the log's "done" (solve.ts).
        expect(events).not.toContain('init');
        expect(events.filter((e) => e === 'pass-done')).toEqual([]);
        expect(r.distances!.crc32).toBe(reference.get('4/3/clean')!.crc32);
        expect(existsSync(`${out}.ckpt`)).toBe(false);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  });

  it('every backend and thread count produced the same distances', () => {
    for (const [board, pieces, rules] of cases) {
      if ((pieces === 2 || pieces === 6) && !backends.some((b) => b.name !== 'ts')) continue;
      expect(fingerprints.get(`${board}/${pieces}/${rules}`)?.size).toBe(1);
    }
  });

  it.skipIf(!backends.some((b) => b.name !== 'ts'))('4x4/6 (published): the definition holds in every state', () => {
    const s = reference.get(sixPieces.join('/'))!;
    expect(checkDefinition(...sixPieces, s)).toBeGreaterThan(1000);
  });

  for (const [board, pieces, rules] of small) {
    const name = `${board}x${board}/${pieces} (${rules})`;
    it(`${name}: the definition holds in every state`, () => {
      const s = reference.get(`${board}/${pieces}/${rules}`)!;
      expect(checkDefinition(board, pieces, rules, s)).toBeGreaterThan(1000);
      expect(s.maxPlies).toBe(Math.max(...[...s.distances].filter((d) => d !== NO_DISTANCE)));
    });

    it(`${name}: equal to the distances a query computes on demand from the start`, () => {
      const s = reference.get(`${board}/${pieces}/${rules}`)!;
      const v = variant(board, pieces);
      const game = new SolvedGame({ header: { board, pieces, rules } as never, table: s.table });
      const computed = game.distances(startPosition(v))!;
      expect(computed.size).toBeGreaterThan(1000);
      let compared = 0;
      for (let index = 0; index < s.distances.length; index++) {
        if (!computed.has(index)) continue;
        const stored = s.distances[index] === NO_DISTANCE ? undefined : s.distances[index];
        if (computed.get(index) !== stored) throw new Error(`state ${index}: stored ${stored}, computed ${computed.get(index)}`);
        compared++;
      }
      expect(compared).toBe(computed.size);
    });
  }

  // A query of a small database without distances: the whole table from the native kernel.
  describe.each(backends.map((b) => [b.name, b] as const))('computed whole for a query, on %s', (_name, backend) => {
    for (const [board, pieces, rules] of cases) {
      it(`${board}x${board}/${pieces} (${rules}): ${backend.kernelThreads ? 'the stored table, byte for byte' : 'not computed (the TS kernel: a query explores instead)'}`, async () => {
        const s = reference.get(`${board}/${pieces}/${rules}`);
        if (!s) return; // 7x7/2 where only ts loads: solved on native backends only
        const header = { board, pieces, rules, storedStates: new StateSpace(variant(board, pieces)).states } as never;
        const values = inMemoryValues({ header, table: s.table } as never);
        expect(canComputeDistances(values)).toBe(true);
        expect(canComputeDistances(inMemoryValues({ header, table: s.table, distances: s.distances } as never))).toBe(false);
        const computed = await withComputedDistances(values, backend, 2);
        if (!backend.kernelThreads) {
          expect(computed).toBe(values);
          return;
        }
        expect(computed.hasDistances).toBe(true);
        const table = new Uint8Array(s.distances.length);
        for (let index = 0; index < table.length; index++) table[index] = computed.distance(index);
        expect(Buffer.compare(table, s.distances)).toBe(0);
        expect(computed.value(7)).toBe(values.value(7));
      });
    }
  });

  it('counts the placed states four bytes at a time, at any alignment', () => {
    // Every byte value (distances, marks, NO_DISTANCE) in a mixed order, counted from each start
    // and to each end around a word's edges, against a byte at a time.
    const bytes = new Uint8Array(1031);
    for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 181 + (i >> 3)) & 0xff;
    const plain = (b: Uint8Array) => b.reduce((n, x) => n + (x <= MAX_DISTANCE ? 1 : 0), 0);
    for (const from of [0, 1, 2, 3, 5]) {
      for (const to of [bytes.length, bytes.length - 1, bytes.length - 2, bytes.length - 3, 9, from]) {
        const view = bytes.subarray(from, to);
        // Four bytes at a time up to depth 126, a byte at a time past it.
        for (const depth of [13, 200]) expect(layersSeen(view, depth).placed).toBe(plain(view));
      }
    }
    expect(plain(bytes)).toBeGreaterThan(0);
    expect(plain(bytes)).toBeLessThan(bytes.length);
    expect(layersSeen(new Uint8Array([MAX_DISTANCE, MAX_DISTANCE + 1, 0, 255]), 13).placed).toBe(2);
  });

  it('tells the layers a resume names from deeper ones four bytes at a time, at any alignment and depth', () => {
    // Tables of small distances with marks and NO_DISTANCE between, one byte placed at a time
    // at each value, against a byte at a time.
    const plain = (b: Uint8Array, depth: number) => ({
      placed: b.reduce((n, x) => n + (x <= MAX_DISTANCE ? 1 : 0), 0),
      deeper: b.some((x) => x > depth && x <= MAX_DISTANCE),
      atDepth: b.includes(depth),
      atDepthBefore: depth > 0 && b.includes(depth - 1),
    });
    const base = new Uint8Array(67);
    for (let i = 0; i < base.length; i++) base[i] = [252, 253, 254, 255, i % 5][i % 5]!;
    for (const depth of [0, 1, 4, 5, 13, 126, 127, 200, MAX_DISTANCE]) {
      for (const placed of [undefined, 0, depth - 1, depth, depth + 1, 127, 128, 200, MAX_DISTANCE]) {
        for (const at of [0, 1, 2, 3, 30, 66]) {
          const bytes = base.slice();
          if (placed !== undefined && placed >= 0) bytes[at] = placed;
          for (const [from, to] of [[0, 67], [1, 66], [2, 67], [3, 65]]) {
            const view = bytes.subarray(from, to);
            expect(layersSeen(view, depth), `depth ${depth}, ${placed} at ${at}, [${from}, ${to})`).toEqual(plain(view, depth));
          }
        }
      }
    }
  });

  it('are computed whole only for a table held in memory of at most WHOLE_TABLE_DISTANCES_UP_TO states', () => {
    const held = (board: number, pieces: number, table: Uint8Array | undefined) => ({
      header: { board, pieces, rules: 'clean', storedStates: new StateSpace(variant(board, pieces)).states } as never,
      hasDistances: false,
      heldTable: () => table,
      value: () => 0,
      distance: () => NO_DISTANCE,
    });
    expect(canComputeDistances(held(7, 2, new Uint8Array(1)))).toBe(true);
    expect(canComputeDistances(held(7, 2, undefined))).toBe(false); // read from disk by page
    expect(new StateSpace(variant(7, 2)).states).toBeLessThanOrEqual(WHOLE_TABLE_DISTANCES_UP_TO);
    expect(new StateSpace(variant(7, 3)).states).toBeGreaterThan(WHOLE_TABLE_DISTANCES_UP_TO);
    expect(canComputeDistances(held(7, 3, new Uint8Array(1)))).toBe(false);
  });

  it.runIf(backends.some((b) => b.name !== 'ts'))('7x7/2: the start is 33 plies from the end (docs/rules.md section 8)', () => {
    const s = reference.get('7/2/clean')!;
    const v = variant(7, 2);
    const indexer = new StateIndexer(new StateSpace(v), new BitboardEngine(v));
    expect(s.distances[indexer.index(toWords(startPosition(v)))]).toBe(33);
    expect(s.maxPlies).toBe(37);
  });
});
