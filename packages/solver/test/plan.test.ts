/**
 * The census of illegal and terminal positions (src/plan/census.ts), counted without a table,
 * against what the solver finds (a solve's `illegal`, the kernel's init counts of illegal and
 * terminal stored states), against the engine position by position, and the plan's sizes against
 * the solver's own StateSpace, requiredBytes and planBands.
 */
import {
  BitboardEngine,
  type RuleMode,
  StateSpace,
  WORDS,
  type WordPosition,
  supportedVariants,
  unrankSet,
  variant,
} from '@ccheckers/core';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  HEADER_BYTES,
  IN_MEMORY_FIXED_SECONDS,
  REFERENCE_SOLVES,
  STORE_TIME_FACTOR,
  census,
  BAND_PASS1_SHARE,
  SHARED_PART_OVERHEAD,
  clusterTimeFactor,
  BAND_LATER_SHARE,
  LATER_PASS2_SHARE,
  LATER_PASSES_GROWTH,
  expandCounts,
  inMemorySeconds,
  inMemorySecondsPerState,
  placementCensus,
  plan,
  planBandStore,
  planBands,
  requiredBytes,
  ruleCells,
  selectBackend,
  sizedSpace,
  solve,
  stepMemory,
  storedLayout,
} from '../src/index.js';

const { backend } = await selectBackend('auto');
const RULES: RuleMode[] = ['clean', 'published'];

/**
 * Calls visit() with p.p2 set to every P2 placement among the cells p.p1 leaves free (k of them,
 * by the next-combination step over the free cells; much cheaper than unranking each).
 */
function forEachP2(p: WordPosition, cells: number, k: number, visit: () => void): void {
  const free: number[] = [];
  for (let c = 0; c < cells; c++) if (((p.p1[c >>> 5]! >>> (c & 31)) & 1) === 0) free.push(c);
  const at = Array.from({ length: k }, (_, i) => i);
  for (;;) {
    p.p2.fill(0);
    for (const i of at) p.p2[free[i]! >>> 5]! |= 1 << (free[i]! & 31);
    visit();
    let i = k - 1;
    while (i >= 0 && at[i] === free.length - k + i) i--;
    if (i < 0) return;
    at[i]!++;
    for (let j = i + 1; j < k; j++) at[j] = at[j - 1]! + 1;
  }
}

/** Counts of the positions with P1 on p.p1, through the engine: illegal, else terminal. */
function tally(engine: BitboardEngine, p: WordPosition, illegal: number[], terminal: number[]): void {
  forEachP2(p, engine.cells, engine.pieces, () => {
    for (const side of [0, 1] as const) {
      p.toMove = side;
      // isTerminal is exactly this (legal, and the side not to move has won), without asking
      // isIllegal twice
      if (engine.isIllegal(p)) illegal[side]!++;
      else if (engine.hasWon(side === 0 ? 1 : 0, p)) terminal[side]!++;
    }
  });
}

/** Illegal and terminal positions, both sides to move, by asking the engine about every one. */
function bruteForce(board: number, pieces: number, rules: RuleMode) {
  const engine = new BitboardEngine(variant(board, pieces), rules);
  const p: WordPosition = { p1: new Uint32Array(WORDS), p2: new Uint32Array(WORDS), toMove: 0 };
  const illegal = [0, 0];
  const terminal = [0, 0];
  let positions = 0;
  for (let r1 = 0; r1 < engine.p1Placements; r1++) {
    engine.unrankP1(r1, p.p1);
    tally(engine, p, illegal, terminal);
    positions += 2 * engine.p2Placements;
  }
  return { illegal, terminal, positions };
}

/** The engine's counts over every P2 placement for one P1 placement (cells). */
function bruteForcePlacement(engine: BitboardEngine, cells: number[]) {
  const p: WordPosition = { p1: new Uint32Array(WORDS), p2: new Uint32Array(WORDS), toMove: 0 };
  for (const c of cells) p.p1[c >>> 5]! |= 1 << (c & 31);
  const illegal = [0, 0];
  const terminal = [0, 0];
  tally(engine, p, illegal, terminal);
  return { illegal, terminal };
}

describe('census against the solver', () => {
  it.each([
    ['7x7/1', 'clean', 7, 1],
    ['7x7/1', 'published', 7, 1],
    ['7x7/2', 'clean', 7, 2],
    ['7x7/2', 'published', 7, 2],
    ['4x4/6', 'clean', 4, 6],
    ['4x4/6', 'published', 4, 6],
  ] as const)("%s (%s): a solve's illegal count, and the init's illegal and terminal stored states", async (_name, rules, board, pieces) => {
    const v = variant(board, pieces);
    const c = census(v, rules);
    const solved = await solve({ variant: v, rules, backend, threads: 1 });
    expect(c.positions).toBe(BigInt(solved.positions));
    expect(c.illegal.total).toBe(BigInt(solved.illegal));
    const space = new StateSpace(v);
    const table = new Uint8Array(space.tableBytes);
    const init = backend.solverKernel(v, rules).init(table, 0, space.groups, 1);
    expect({ states: c.stored.states, illegal: c.stored.illegal, terminal: c.stored.terminal }).toEqual({
      states: BigInt(space.states),
      illegal: BigInt(init.illegal),
      terminal: BigInt(init.terminal),
    });
  });

  // 7x7/3's init on the native kernel takes well under a second (141 M stored states); its
  // illegal states are final at init (passes decide only unknown states), so the init table's
  // counts are the solve's (576,840: docs/performance.md).
  it.skipIf(!backend.kernelThreads)('7x7/3: the init table gives the illegal count of a solve, and the stored counts', () => {
    const v = variant(7, 3);
    const c = census(v, 'clean');
    const space = new StateSpace(v);
    const table = new Uint8Array(space.tableBytes);
    const init = backend.solverKernel(v, 'clean').init(table, 0, space.groups, 2);
    expect(c.illegal.total).toBe(BigInt(expandCounts(space, table).illegal));
    expect(c.illegal.total).toBe(576_840n);
    expect([c.stored.illegal, c.stored.terminal]).toEqual([BigInt(init.illegal), BigInt(init.terminal)]);
  });

  it('7x7/4: 20,561,310 illegal positions (the 2026-11-24 solve), all by Def. 2, and its table size', () => {
    const c = census(variant(7, 4), 'clean');
    expect(c.illegal.total).toBe(20_561_310n);
    expect(c.illegalDef2).toBe(20_561_310n);
    // README: 2 x sum over j of C(4, j) C(45, 4 - j) C(41 + j, j), the Def. 2 count by hand
    expect(c.stored.states).toBe(15_835_337_595n);
    expect(census(variant(7, 4), 'published')).toEqual({ ...c, rules: 'published' });
  });
});

describe('census against the engine, position by position', () => {
  it.each([
    ['7x7/1', 'clean', 7, 1],
    ['7x7/2', 'clean', 7, 2],
    ['4x4/6', 'clean', 4, 6],
  ] as const)('%s (%s): every position', (_name, rules, board, pieces) => {
    const c = census(variant(board, pieces), rules);
    const b = bruteForce(board, pieces, rules);
    expect(BigInt(b.positions)).toBe(c.positions);
    expect([c.illegal.p1ToMove, c.illegal.p2ToMove]).toEqual(b.illegal.map(BigInt));
    expect([c.terminal.p1ToMove, c.terminal.p2ToMove]).toEqual(b.terminal.map(BigInt));
  });

  it('the rule modes differ only where the exception can apply (not on 4x4, not without 6 pieces)', () => {
    for (const { size, pieces } of supportedVariants()) {
      const v = variant(size, pieces);
      const clean = census(v, 'clean');
      const published = census(v, 'published');
      const differ = size >= 5 && pieces === 6;
      expect(published.exempted > 0n, v.name).toBe(differ);
      expect(clean.illegal.total - published.illegal.total).toBe(published.exempted);
      // colour swap: as many with either side to move
      expect(published.illegal.p1ToMove).toBe(published.illegal.p2ToMove);
      expect(published.terminal.p1ToMove).toBe(published.terminal.p2ToMove);
    }
  });

  // On 5x5 and 6x6 the published-data exception applies, and their boards are too large to list:
  // single P1 placements, all P2 placements each, through the engine, in both modes (6x6, with
  // 593,775 P2 placements, in the published mode only: the clean one is the 5x5 code path).
  it.each([
    [5, 5, [19, 20, 21, 22, 23, 24]], // P1 home in its goal
    [5, 5, [7, 8, 10, 12, 14, 16]], // no piece in either start area: the exception
    [5, 5, [6, 9, 11, 13, 15, 17]],
    [5, 5, [1, 2, 3, 5, 7, 8]], // P1 blocks P2's goal tip
    [5, 5, [1, 2, 3, 5, 19, 12]],
    [5, 5, [0, 19, 20, 21, 22, 23]],
    [6, 6, [12, 14, 16, 18, 20, 22]], // no piece in either start area
  ])('%ix%i/6: P1 on %j, every P2 placement', (board, _board, cells) => {
    const v = variant(board, 6);
    const rc = ruleCells(v);
    for (const rules of board === 6 ? (['published'] as const) : RULES) {
      const got = placementCensus(rc, rules, cells);
      const want = bruteForcePlacement(new BitboardEngine(v, rules), cells);
      expect({ illegal: got.illegal, terminal: got.terminal }).toEqual({ illegal: want.illegal.map(BigInt), terminal: want.terminal.map(BigInt) });
    }
    if (cells.every((c) => !v.p1Start.includes(c) && !v.p2Start.includes(c))) {
      // the exception was met: fewer illegal positions with P1 to move in the published mode
      expect(placementCensus(rc, 'published', cells).illegal[0]).toBeLessThan(placementCensus(rc, 'clean', cells).illegal[0]);
    }
  });

  // The census by goal classes equals the sum over every P1 placement of the per-placement
  // counts (another route), and over one placement per mirror class for the stored counts.
  it.each([
    ['5x5/6', 'clean', 5, 6],
    ['5x5/6', 'published', 5, 6],
    ['7x7/3', 'clean', 7, 3],
    ['7x7/2', 'clean', 7, 2],
  ] as const)('%s (%s): the sum over P1 placements, and over groups for stored states', (_name, rules, board, pieces) => {
    const v = variant(board, pieces);
    const rc = ruleCells(v);
    const goals = new Set([...rc.goal[0], ...rc.goal[1]]);
    const memo = new Map<string, ReturnType<typeof placementCensus>>();
    const perPlacement = (cells: number[]) => {
      const key = `${cells.filter((c) => goals.has(c)).join(',')}|${cells.filter((c) => !goals.has(c)).length}`;
      let r = memo.get(key);
      if (!r) memo.set(key, (r = placementCensus(rc, rules, cells)));
      return r;
    };
    const cellsOf = (set: Uint32Array) => {
      const out: number[] = [];
      for (let w = 0; w < WORDS; w++) {
        for (let x = set[w]!; x !== 0; x &= x - 1) out.push(32 * w + 31 - Math.clz32(x & -x));
      }
      return out;
    };
    const set = new Uint32Array(WORDS);
    const sum = { illegal: [0n, 0n], terminal: [0n, 0n] };
    const total = storedLayout(v).p1Placements;
    for (let r = 0; r < Number(total); r++) {
      unrankSet(r, pieces, v.cells, set);
      const x = perPlacement(cellsOf(set));
      for (const s of [0, 1]) {
        sum.illegal[s]! += x.illegal[s]!;
        sum.terminal[s]! += x.terminal[s]!;
      }
    }
    const c = census(v, rules);
    expect(sum).toEqual({ illegal: [c.illegal.p1ToMove, c.illegal.p2ToMove], terminal: [c.terminal.p1ToMove, c.terminal.p2ToMove] });
    const space = new StateSpace(v);
    const stored = { illegal: 0n, terminal: 0n };
    for (let g = 0; g < space.groups; g++) {
      unrankSet(space.rankOf[g]!, pieces, v.cells, set);
      const x = perPlacement(cellsOf(set));
      stored.illegal += x.illegal[0];
      stored.terminal += x.terminal[0];
    }
    expect(stored).toEqual({ illegal: c.stored.illegal, terminal: c.stored.terminal });
  });
});

describe('plan sizes are the solver\'s', () => {
  const small = supportedVariants().filter(({ size, pieces }) => Number(storedLayout(variant(size, pieces)).p1Placements) <= 250_000);

  it.each(small.map(({ size, pieces }) => [variant(size, pieces).name, size, pieces] as const))('%s: groups, states, table, requiredBytes and planBands as with StateSpace', (_name, size, pieces) => {
    const v = variant(size, pieces);
    const real = new StateSpace(v);
    const sized = sizedSpace(v);
    expect([sized.groups, sized.states, sized.tableBytes, sized.p1Placements, sized.p2Placements]).toEqual([
      real.groups,
      real.states,
      real.tableBytes,
      real.p1Placements,
      real.p2Placements,
    ]);
    expect(requiredBytes(sized, 1)).toBe(requiredBytes(real, 1));
    const budget = 64 * 2 ** 20;
    const attempt = (space: StateSpace) => {
      try {
        return planBands(space, { budget, kernelCopies: 1 });
      } catch (e) {
        return (e as Error).message;
      }
    };
    expect(attempt(sized)).toEqual(attempt(real));
  });

  it('the plan of 7x7/3 on a machine given: rates, fits and refusals', () => {
    const machine = { threads: 2, freeMemory: 2 ** 30, totalMemory: 2 ** 31, freeDisk: 2 ** 30, diskPath: '/x' };
    const p = plan({ variant: variant(7, 3), rules: 'clean', machine, workers: [2] });
    expect(p.storedStates).toBe(141_219_540n);
    expect(p.tableBytes).toBe(35_304_885n);
    expect(p.databaseBytes).toBe(BigInt(HEADER_BYTES) + 35_304_885n);
    const [memory, store, cluster, distances] = p.ways;
    expect(memory).toMatchObject({ way: 'memory', fits: true, seconds: inMemorySeconds(141_219_540, 3) });
    expect(memory!.seconds).toBeCloseTo(5.889, 6); // the measured solve the rate comes from
    expect(store).toMatchObject({ way: 'store', fits: true, bands: 1 });
    // Shared steps: a worker holds two copies of a band, and the bands need not be W.
    expect(cluster).toMatchObject({ way: 'cluster', workers: 2, bands: 1, fits: true });
    expect(cluster!.command).toBe('ccheckers solve --board 7 --pieces 3 --store DIR --workers 2 --memory 1024M --redis URL, 2 x ccheckers worker --memory 1024M');
    expect(cluster!.seconds).toBeCloseTo(store!.seconds * (0.86 * (1 / 2 + 0.18) + 0.14), 6);
    // --distances: the solve, then the measured 7x7/3 distances it is scaled from; 135 MB more.
    expect(distances).toMatchObject({ way: 'distances', fits: true, memoryBytes: memory!.memoryBytes + 141_219_540 });
    expect(distances!.seconds).toBeCloseTo(5.889 + 45.4, 6);
    // A machine too small, and a budget below planBands' minimum.
    const tiny = plan({ variant: variant(7, 3), rules: 'clean', machine: { ...machine, freeMemory: 2 ** 20, freeDisk: 2 ** 20 }, budget: 2 ** 20 });
    expect(tiny.ways.map((w) => w.fits)).toEqual([false, false, false, false, false]);
    expect(tiny.ways[1]!.why).toMatch(/--memory 1\.0 MiB is too small for 7x7\/3/);
    expect(tiny.ways[0]!.why).toMatch(/more memory than is free.*more disk than is free/);
  });

  it('beyond the solver: 9x9/6 gets counts and no way of solving', () => {
    const p = plan({ variant: variant(9, 6), rules: 'clean', machine: { threads: 2, freeMemory: 1, totalMemory: 1, freeDisk: 1, diskPath: '/' } });
    expect(p.beyondSolver).toMatch(/exact up to 2\^53/);
    expect(p.ways).toEqual([]);
    expect(p.census.positions).toBe(storedLayout(variant(9, 6)).p1Placements * storedLayout(variant(9, 6)).p2Placements * 2n);
  });

  it('the in-memory time: the reference solves reproduced, more states or pieces never faster, seconds as solve reports them', () => {
    // Each reference solve is where a constant comes from: the model gives its measured seconds.
    for (const r of Object.values(REFERENCE_SOLVES)) expect(inMemorySeconds(r.storedStates, r.pieces), r.name).toBeCloseTo(r.seconds, 6);
    expect(IN_MEMORY_FIXED_SECONDS).toBeGreaterThan(0);
    expect(IN_MEMORY_FIXED_SECONDS).toBeLessThan(REFERENCE_SOLVES['4x4/6'].seconds);
    // Monotone: in the stored states for every piece count, and in the pieces for a given size.
    for (let pieces = 1; pieces <= 10; pieces++) {
      expect(inMemorySecondsPerState(pieces), `${pieces} pieces`).toBeGreaterThan(0);
      if (pieces > 1) expect(inMemorySecondsPerState(pieces)).toBeGreaterThanOrEqual(inMemorySecondsPerState(pieces - 1));
      let last = 0;
      for (const states of [0, 1, 1e3, 853_020, 1e6, 141_219_540, 2_410_949_520, 1.6e10, 1e13]) {
        const t = inMemorySeconds(states, pieces);
        expect(t).toBeGreaterThan(last);
        last = t;
      }
    }
    // Linear between the measured piece counts: 5 pieces halfway between 4 and 6.
    expect(inMemorySecondsPerState(5)).toBeCloseTo((inMemorySecondsPerState(4) + inMemorySecondsPerState(6)) / 2, 15);
    // Units: the plan's ways carry those seconds (not ms), the store and the cluster scaled from them.
    const machine = { threads: 2, freeMemory: 2 ** 34, totalMemory: 2 ** 34, freeDisk: 2 ** 40, diskPath: '/x' };
    const p = plan({ variant: variant(4, 6), rules: 'clean', machine, workers: [2] });
    expect(p.ways[0]!.seconds).toBeCloseTo(REFERENCE_SOLVES['4x4/6'].seconds, 6);
    expect(p.ways[1]!.seconds).toBeCloseTo(REFERENCE_SOLVES['4x4/6'].seconds * STORE_TIME_FACTOR, 6);
    expect(p.inMemoryFixedSeconds + Number(p.storedStates) * p.inMemorySecondsPerState).toBeCloseTo(p.ways[0]!.seconds, 9);
  });

  it('the cluster command of a plan makes a store whose workers hold its steps within the --memory it gives them', () => {
    for (const [board, pieces, budget] of [
      [7, 3, 64 * 2 ** 20],
      [7, 4, 1.5 * 2 ** 30],
      [6, 6, 21 * 2 ** 30],
    ] as const) {
      const machine = { threads: 2, freeMemory: 2 ** 35, totalMemory: 2 ** 35, freeDisk: 2 ** 50, diskPath: '/x' };
      const ways = plan({ variant: variant(board, pieces), rules: 'clean', machine, budget, workers: [2, 8] }).ways.filter((w) => w.way === 'cluster');
      for (const way of ways) {
        // What the coordinator makes of that command (solve --store --workers W --memory B --redis),
        // and what each worker then checks before a step (run-job.ts).
        const made = planBandStore({ variant: variant(board, pieces), rules: 'clean', store: join(tmpdir(), 'ccheckers-plan-no-such-store'), workers: way.workers!, memoryLimit: budget, cluster: true });
        expect(made.plan.bands, `${board}x${board}/${pieces}, ${way.workers} workers`).toBe(way.bands);
        const { need } = stepMemory(made.space, made.plan.bands, { schedule: 'shared', workers: way.workers!, messageBytes: made.plan.messageBytes });
        expect(need, `${board}x${board}/${pieces}, ${way.workers} workers`).toBeLessThanOrEqual(budget);
        expect(way.memoryBytes).toBe(need);
      }
    }
  });

  it('cluster time factor: pass 1 shared by W workers, each part paying its overhead, the later passes in blocks from 3 workers', () => {
    expect(clusterTimeFactor(1)).toBe(1);
    expect(clusterTimeFactor(2)).toBeCloseTo(BAND_PASS1_SHARE * (1 / 2 + SHARED_PART_OVERHEAD) + 1 - BAND_PASS1_SHARE, 12);
    const rest = 1 - BAND_PASS1_SHARE - BAND_LATER_SHARE;
    const later8 = (BAND_LATER_SHARE * (LATER_PASS2_SHARE + (1 - LATER_PASS2_SHARE) * LATER_PASSES_GROWTH)) / 8;
    expect(clusterTimeFactor(8)).toBeCloseTo(BAND_PASS1_SHARE * (1 / 8 + SHARED_PART_OVERHEAD) + later8 + rest, 12);
    // In blocks from 3 workers, the later passes faster than a band a round for all that.
    expect(later8 * 8 / 3).toBeLessThan(BAND_LATER_SHARE);
    // 2 workers of 1 thread (half this machine each) against one process on 2 threads: 1.29-1.46x
    // measured on 7x7/3 in 16 bands (docs/sharding.md, runs D).
    expect(2 * clusterTimeFactor(2)).toBeGreaterThan(1.29);
    expect(2 * clusterTimeFactor(2)).toBeLessThan(1.46);
    // More workers: never slower, and never below init, the end and each part's overhead.
    let last = 1;
    for (const w of [2, 3, 4, 8, 64, 4096]) {
      const f = clusterTimeFactor(w);
      expect(f).toBeLessThan(last);
      expect(f).toBeGreaterThan(rest + BAND_PASS1_SHARE * SHARED_PART_OVERHEAD);
      last = f;
    }
  });
});
