/**
 * The kernels' band mode (SolverKernel.band, BandPhase in core's backend.ts; native:
 * BoardKernel::solverBand; TS: TsSolverKernel.band): one band of a band-ordered store in memory,
 * what its visits decide about states held elsewhere sent as messages.
 *
 *  - phase by phase (INIT, APPLY, UNITS, REQUESTS, VISIT) on one band, the TS kernel and every
 *    native kernel on 1 thread write the same band table, count the same and send the same
 *    messages (as multisets per target band); native on 2 threads agrees with 1 thread;
 *  - bad maps and inputs are refused with a RangeError by every kernel;
 *  - end to end: every band in turn (pass 1: INIT, APPLY, UNITS; then rounds of REQUESTS and
 *    VISIT until a round changes nothing), the union of the bands is the in-memory solve's table.
 * Without the addon, the TS kernel alone is checked (the comparisons are skipped).
 */
import {
  type BandMap,
  BandPhase,
  BitboardEngine,
  type BandResult,
  type KernelStats,
  type RuleMode,
  type SolverKernel,
  StateSpace,
  TsSolverKernel,
  UNKNOWN,
  WIN,
  WORDS,
  bandMessage,
  CHANGED_LINE_STATES,
  changedLineWords,
  RUN_NEXT_OUT,
  atRunBoundary,
  newMessageRunState,
  permuteSet,
  rankSet,
  readValue,
  seededRandom,
  tsMessageRuns,
  unrankSet,
  variant,
} from '@ccheckers/core';
import { describe, expect, it } from 'vitest';
import { nativeBmi2Backend, nativePortableBackend, nativeStatus } from '../lib/index.js';

const status = nativeStatus();
const natives = [
  ...(status.bmi2Usable ? ([['bmi2', nativeBmi2Backend]] as const) : []),
  ...(status.loaded ? ([['portable', nativePortableBackend]] as const) : []),
];
const BANDS = 3;

/** The band maps (one per held band) of the groups in `order`, group order[i] in band
 *  bandAt(i), at the next slot of its band. */
function dealGroups(order: readonly number[], bands: number, bandAt: (i: number) => number): BandMap[] {
  const bandOf = new Int32Array(order.length);
  const slotOf = new Int32Array(order.length);
  const lists: number[][] = Array.from({ length: bands }, () => []);
  order.forEach((g, i) => {
    const b = bandAt(i);
    bandOf[g] = b;
    slotOf[g] = lists[b]!.length;
    lists[b]!.push(g);
  });
  // The serial band pass: band b is stepped in round b.
  const roundOf = Int32Array.from({ length: bands }, (_, b) => b);
  return lists.map((list, held) => ({ held, bands, bandOf, slotOf, roundOf, groups: Uint32Array.from(list) }));
}

/** Groups in a shuffled order, dealt round robin: slots are not in group order, and most
 *  parents and children lie in other bands (many messages). */
function shuffledBands(space: StateSpace, bands: number, seed: number): BandMap[] {
  const order = Array.from({ length: space.groups }, (_, g) => g);
  const random = seededRandom(seed);
  for (let i = order.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [order[i], order[j]] = [order[j]!, order[i]!];
  }
  return dealGroups(order, bands, (i) => i % bands);
}

/** Bands of the proof order (docs/sharding.md): groups by the first unit whose children they
 *  hold, cut into `bands` blocks; a band's units then come one after the other in the proof
 *  order, and pass 1 proves most states. */
function proofOrderBands(space: StateSpace, bands: number): BandMap[] {
  const first = new Float64Array(space.groups).fill(Number.POSITIVE_INFINITY);
  space.passOrder.forEach((p2Rank, u) => {
    const g = childGroup(space, p2Rank);
    first[g] = Math.min(first[g]!, u);
  });
  const order = Array.from({ length: space.groups }, (_, g) => g).sort((x, y) => first[x]! - first[y]!);
  return dealGroups(order, bands, (i) => Math.floor((i * bands) / order.length));
}

/** The group the children of the states of P2 placement `p2Rank` lie in: rot(b), ranked as a
 *  P1 placement, its group. */
function childGroup(space: StateSpace, p2Rank: number): number {
  const b = new Uint32Array(WORDS);
  const rotated = new Uint32Array(WORDS);
  unrankSet(p2Rank, space.pieces, space.cells, b);
  permuteSet(b, space.variant.geometry.rotate, rotated);
  return space.groupOfRank[rankSet(rotated)]!;
}

/** The proof-order positions whose children each band holds, ascending (band by band). */
function unitsOfBands(space: StateSpace, map: BandMap): Float64Array[] {
  const units: number[][] = Array.from({ length: map.bands }, () => []);
  const order = space.passOrder;
  for (let u = 0; u < order.length; u++) units[map.bandOf[childGroup(space, order[u]!)]!]!.push(u);
  return units.map((list) => Float64Array.from(list));
}

function bandBytes(space: StateSpace, map: BandMap): number {
  return Math.ceil((map.groups.length * space.p2Placements) / 4);
}

/** The in-memory solve's table: init, then passes until one proves nothing (on a native kernel
 *  where there is one: the TS kernel writes the same table, see packages/solver's revisits test,
 *  and runs three times slower under vitest than under node). */
function solveInMemory(space: StateSpace, rules: RuleMode): Uint8Array {
  const kernel = natives.length > 0 ? natives[0]![1].solverKernel(space.variant, rules) : new TsSolverKernel(space.variant, rules, space);
  const table = new Uint8Array(space.tableBytes);
  kernel.init(table, 0, space.groups);
  for (let pass = 0; pass < 100; pass++) {
    const s = kernel.pass(table, 0, kernel.passUnits);
    if (s.wins + s.losses === 0) return table;
  }
  throw new Error('no fixpoint in 100 passes');
}

function statsOf(r: KernelStats): KernelStats {
  return { wins: r.wins, losses: r.losses, illegal: r.illegal, terminal: r.terminal, moveless: r.moveless };
}

/** A call's messages, band by band; each band's must be in increasing order (sorted, no repeats:
 *  the kernels combine them whatever the threads' order). */
function byBand(r: BandResult, what: string): Float64Array[] {
  let at = 0;
  return Array.from(r.counts, (count, b) => {
    const slice = r.messages.slice(at, at + count);
    at += count;
    const unordered = slice.findIndex((m, i) => i > 0 && !(m > slice[i - 1]!));
    expect(unordered, `${what}: messages to band ${b} out of order at ${unordered}`).toBe(-1);
    return slice;
  });
}

function sameBytes(a: ArrayBufferView, b: ArrayBufferView): boolean {
  return Buffer.compare(new Uint8Array(a.buffer, a.byteOffset, a.byteLength), new Uint8Array(b.buffer, b.byteOffset, b.byteLength)) === 0;
}

/** `map` with a changed-lines bitmap of its own, all clear, for a band of `bytes`. */
function marking(map: BandMap, bytes: number): BandMap & { changedLines: Uint32Array } {
  return { ...map, changedLines: new Uint32Array(changedLineWords(bytes)) };
}

/** Expects `lines` (BandMap.changedLines) to mark exactly the lines of 64 bytes in which `after`
 *  differs from `before`: the lines where the call proved a state. */
function expectChangedLines(before: Uint8Array, after: Uint8Array, lines: Uint32Array, what: string): void {
  const expected = new Uint32Array(lines.length);
  for (let byte = 0; byte < after.length; byte++) {
    if (after[byte] !== before[byte]) expected[byte >> 11]! |= 1 << ((byte >> 6) & 31);
  }
  expect(Array.from(lines), `${what}: the lines marked`).toEqual(Array.from(expected));
}

/** Expects two calls to have given the same counts and the same messages, each band's in order. */
function expectSameResult(got: BandResult, expected: BandResult, what: string): void {
  expect(statsOf(got), what).toEqual(statsOf(expected));
  expect(Array.from(got.counts), what).toEqual(Array.from(expected.counts));
  const g = byBand(got, what);
  const e = byBand(expected, what);
  for (let b = 0; b < e.length; b++) expect(sameBytes(g[b]!, e[b]!), `${what}: messages to band ${b}`).toBe(true);
}

/** Values coded as message files hold them (message-runs.ts): runs of at most `perRun` increasing
 *  values; a value repeated starts a new run. */
function codeRuns(values: readonly number[], perRun: number): Uint8Array {
  const runs: number[][] = [];
  for (const m of values) {
    const last = runs[runs.length - 1];
    if (last && last.length < perRun && m > last[last.length - 1]!) last.push(m);
    else runs.push([m]);
  }
  const bytes = new Uint8Array(values.length * 8 + runs.length * 16);
  let at = 0;
  for (const run of runs) at = tsMessageRuns.encodeMessageRun(Float64Array.from(run), 0, run.length, bytes, at);
  return bytes.slice(0, at);
}

/** bandApplyRuns of `bytes` in pieces of the sizes `pieces` gives in turn (numbers split across
 *  pieces), with the counts summed. */
function applyInPieces(k: SolverKernel, table: Uint8Array, map: BandMap, bytes: Uint8Array, pieces: (i: number) => number, threads: number) {
  const state = newMessageRunState();
  const total = { wins: 0, losses: 0, illegal: 0, terminal: 0, moveless: 0, messages: 0 };
  for (let at = 0, i = 0; at < bytes.length; i++) {
    const piece = bytes.subarray(at, Math.min(bytes.length, at + pieces(i)));
    const r = k.bandApplyRuns(table, map, piece, 0, state, threads);
    for (const key of Object.keys(total) as (keyof typeof total)[]) total[key] += r[key];
    at += piece.length;
  }
  expect(atRunBoundary(state)).toBe(true);
  return total;
}

/** The stored index of local state `local` of the band of `map`. */
function storedIndex(space: StateSpace, map: BandMap, local: number): number {
  const per = space.p2Placements;
  const slot = Math.floor(local / per);
  return map.groups[slot]! * per + (local - slot * per);
}

// [board name, pieces, rules, board]: the title's placeholders take the first three in order.
const cases = [
  ['7x7', 2, 'clean', 7],
  ['4x4', 6, 'clean', 4],
  ['4x4', 6, 'published', 4],
] as const;

describe.each(cases)('band calls, %s with %i pieces, %s rules', (_name, pieces, rules, board) => {
  const v = variant(board, pieces);
  const space = new StateSpace(v);
  const per = space.p2Placements;
  const maps = shuffledBands(space, BANDS, board * 100 + pieces);
  const map = maps[1]!;
  const slots = map.groups.length;
  const units = unitsOfBands(space, map)[map.held]!;
  const truth = solveInMemory(space, rules);
  const ts = new TsSolverKernel(v, rules, space);
  const kernels: [string, SolverKernel][] = [['ts', ts], ...natives.map(([name, backend]) => [name, backend.solverKernel(v, rules)] as [string, SolverKernel])];

  /** The phases in turn on every kernel from the same start, compared with the TS kernel's. */
  it(`INIT, APPLY, UNITS, REQUESTS, VISIT agree on every kernel (${kernels.map(([n]) => n).join(', ')}) and with the solve`, () => {
    const tables = kernels.map(() => new Uint8Array(bandBytes(space, map)));
    // Each call marks the lines it proves states in (BandMap.changedLines): exactly those that change.
    const run = (what: string, call: (k: SolverKernel, table: Uint8Array, m: BandMap, threads?: number) => BandResult, twoThreads?: 'same' | 'consistent') => {
      const before = tables[0]!.slice();
      const results = kernels.map(([name, k], i) => {
        const m = marking(map, tables[i]!.length);
        const r = call(k, tables[i]!, m);
        expectChangedLines(before, tables[i]!, m.changedLines, `${what}: ${name}`);
        return r;
      });
      for (let i = 1; i < kernels.length; i++) {
        expect(sameBytes(tables[i]!, tables[0]!), `${what}: ${kernels[i]![0]}'s band table`).toBe(true);
        expectSameResult(results[i]!, results[0]!, `${what}: ${kernels[i]![0]}`);
      }
      // Every value the band holds is the solve's (the values applied are the solve's too).
      for (let local = 0; local < slots * per; local++) {
        const value = readValue(tables[0]!, local);
        if (value !== UNKNOWN && value !== readValue(truth, storedIndex(space, map, local))) {
          expect({ what, local, value }).toEqual({ what, local, value: readValue(truth, storedIndex(space, map, local)) });
        }
      }
      if (twoThreads && natives.length > 0) {
        const [name, backend] = natives[0]!;
        const k = backend.solverKernel(v, rules);
        const table = before.slice();
        const m = marking(map, table.length);
        const r = call(k, table, m, 2);
        expectChangedLines(before, table, m.changedLines, `${what}: ${name} on 2 threads`);
        if (twoThreads === 'same') {
          expect(sameBytes(table, tables[0]!), `${what}: ${name} on 2 threads, band table`).toBe(true);
          expectSameResult(r, results[0]!, `${what}: ${name} on 2 threads`);
        } else {
          // Threads prove in another order: every value both know is the same.
          let known = 0;
          for (let local = 0; local < slots * per; local++) {
            const x = readValue(table, local);
            const y = readValue(tables[0]!, local);
            if (x !== UNKNOWN && y !== UNKNOWN && x !== y) expect({ what, local, x }).toEqual({ what, local, x: y });
            if (x !== UNKNOWN) known++;
          }
          expect(known, `${what}: ${name} on 2 threads proves states`).toBeGreaterThan(0);
        }
      }
      return results[0]!;
    };

    const init = run('INIT', (k, t, m, threads = 1) => k.band(BandPhase.INIT, t, m, undefined, 0, slots, threads), 'same');
    expect(init.illegal + init.terminal + init.wins).toBeGreaterThan(0);
    expect(init.messages.length).toBe(0);

    // Some values of the solve for unknown states, one of them twice (it counts once).
    const values: number[] = [];
    for (let local = 0; local < slots * per; local += 7) {
      const value = readValue(truth, storedIndex(space, map, local));
      if (readValue(tables[0]!, local) === UNKNOWN && value !== UNKNOWN) values.push(bandMessage(local, value));
    }
    values.push(values[0]!);
    const apply = run('APPLY', (k, t, m, threads = 1) => k.band(BandPhase.APPLY, t, m, Float64Array.from(values), 0, 0, threads));
    expect(apply.wins + apply.losses).toBe(values.length - 1);

    const unitCall = run('UNITS', (k, t, m, threads = 1) => k.band(BandPhase.UNITS, t, m, units, 0, 0, threads), 'consistent');
    expect(unitCall.wins + unitCall.losses).toBeGreaterThan(0);
    // Messages only for the other bands (values of states held elsewhere, and wins of parents).
    expect(unitCall.counts[map.held]).toBe(0);
    expect(unitCall.messages.length).toBeGreaterThan(0);
    for (const m of unitCall.messages) expect(m % 4 === 1 || m % 4 === 2).toBe(true);

    const requests = run('REQUESTS', (k, t, m, threads = 1) => k.band(BandPhase.REQUESTS, t, m, undefined, 0, slots, threads), 'same');
    let unknown = 0;
    for (let local = 0; local < slots * per; local++) if (readValue(tables[0]!, local) === UNKNOWN) unknown++;
    expect(requests.messages.length).toBe(unknown);
    for (const m of requests.messages) expect(m % 4).toBe(0);
    const offset = requests.counts.slice(0, map.held).reduce((x, y) => x + y, 0);
    const own = requests.messages.slice(offset, offset + requests.counts[map.held]!);
    expect(own.length).toBeGreaterThan(0);

    const visit = run('VISIT', (k, t, m, threads = 1) => k.band(BandPhase.VISIT, t, m, own, 0, 0, threads), 'consistent');
    expect(visit.wins + visit.losses + visit.messages.length).toBeGreaterThan(0);
  });

  it('APPLY of message runs (bandApplyRuns) changes and counts as APPLY of the values, in any pieces, on every kernel and thread count', () => {
    const start = new Uint8Array(bandBytes(space, map));
    ts.band(BandPhase.INIT, start, map, undefined, 0, slots, 1);
    // The solve's values of every third state (known ones too: set only where unknown), in runs
    // of up to 500, and one value twice.
    const values: number[] = [];
    for (let local = 0; local < slots * per; local += 3) {
      const value = readValue(truth, storedIndex(space, map, local));
      if (value !== UNKNOWN) values.push(bandMessage(local, value));
    }
    values.push(values[0]!);
    const bytes = codeRuns(values, 500);
    const expected = start.slice();
    const applied = statsOf(ts.band(BandPhase.APPLY, expected, map, Float64Array.from(values), 0, 0, 1));
    expect(applied.wins + applied.losses).toBeGreaterThan(0);
    for (const [name, k] of kernels) {
      for (const threads of name === 'ts' ? [1] : [1, 2, 5]) {
        for (const [pieces, sizes] of [
          ['whole', () => bytes.length],
          // Numbers split across pieces (a call each: the first 300 pieces, then the rest whole).
          ['pieces of 1 to 7 bytes', (i: number) => (i < 300 ? 1 + (i % 7) : bytes.length)],
        ] as const) {
          const table = start.slice();
          const m = marking(map, table.length);
          const r = applyInPieces(k, table, m, bytes, sizes, threads);
          const what = `${name} on ${threads} thread(s), ${pieces}`;
          expect(sameBytes(table, expected), `${what}: band table`).toBe(true);
          expectChangedLines(start, table, m.changedLines, what);
          expect({ ...statsOf(r), messages: r.messages }, what).toEqual({ ...applied, messages: values.length });
        }
      }
    }
  });

  it('APPLY of message runs refuses what is not a value of the band, or not runs, with a RangeError on every kernel', () => {
    for (const [name, k] of kernels) {
      const table = new Uint8Array(bandBytes(space, map));
      const apply = (values: number[]) => () => k.bandApplyRuns(table, map, codeRuns(values, 100), 0, newMessageRunState(), 2);
      expect(apply([bandMessage(1, 2), bandMessage(5, 0)]), `${name}: a value of 0`).toThrow(/^band apply/);
      expect(apply([bandMessage(slots * per, 1)]), `${name}: a value outside the band`).toThrow(/^band apply/);
      expect(() => k.bandApplyRuns(table, map, Uint8Array.of(0), 0, newMessageRunState(), 1), `${name}: an empty run`).toThrow(RangeError);
      expect(() => k.bandApplyRuns(table, map, Uint8Array.of(2, 5, 0), 0, newMessageRunState(), 1), `${name}: a repeat`).toThrow(RangeError);
      expect(() => k.bandApplyRuns(table, map, Uint8Array.of(1, 5), 0, new Float64Array(2), 1), `${name}: a state of another length`).toThrow(RangeError);
    }
  });

  /** A band after INIT, and its REQUESTS into an array of the kernel's own (one per unknown state). */
  const initAndRequests = (k: SolverKernel) => {
    const table = new Uint8Array(bandBytes(space, map));
    k.band(BandPhase.INIT, table, map, undefined, 0, slots, 1);
    return { table, plain: k.band(BandPhase.REQUESTS, table, map, undefined, 0, slots, 1) };
  };

  it('messages go to the front of the output buffer where they fit, else to a new array, on every kernel', () => {
    for (const [name, k] of kernels) {
      const { table, plain } = initAndRequests(k);
      expect(plain.messages.length, name).toBeGreaterThan(1);
      const big = new Float64Array(plain.messages.length + 10).fill(-1);
      const inBig = k.band(BandPhase.REQUESTS, table, map, undefined, 0, slots, 1, big);
      expect(inBig.messages.buffer === big.buffer && inBig.messages.byteOffset === 0, name).toBe(true);
      expect(sameBytes(inBig.messages, plain.messages), name).toBe(true);
      expect(big[plain.messages.length], name).toBe(-1);
      const small = new Float64Array(plain.messages.length - 1);
      const notInSmall = k.band(BandPhase.REQUESTS, table, map, undefined, 0, slots, 1, small);
      expect(notInSmall.messages.buffer === small.buffer, name).toBe(false);
      expect(sameBytes(notInSmall.messages, plain.messages), name).toBe(true);
      expect(Array.from(notInSmall.counts), name).toEqual(Array.from(plain.counts));
    }
  });

  it('messages asked for coded come as one run per band in the output buffer where there is room (native), else as numbers', () => {
    for (const [name, k] of kernels) {
      const { table, plain } = initAndRequests(k);
      for (const threads of [1, 2]) {
        // Room for 8 bytes a message and 16 a band: native codes them; ts gives numbers.
        const roomy = new Float64Array(plain.messages.length + 2 * plain.counts.length);
        const r = k.band(BandPhase.REQUESTS, table, map, undefined, 0, slots, threads, roomy, true);
        expect(Array.from(r.counts), name).toEqual(Array.from(plain.counts));
        if (name === 'ts') {
          expect(r.coded, name).toBeUndefined();
          expect(sameBytes(r.messages, plain.messages), name).toBe(true);
          continue;
        }
        expect(r.coded!.buffer === roomy.buffer && r.coded!.byteOffset === 0 && r.messages.length === 0, name).toBe(true);
        let at = 0;
        let from = 0;
        for (let band = 0; band < r.counts.length; band++) {
          // Each band's bytes, read by the files' decoder (core's), are its messages.
          const count = r.counts[band]!;
          const bytes = r.codedBytes![band]!;
          expect(bytes === 0, `${name}: band ${band} has bytes iff messages`).toBe(count === 0);
          const out = new Float64Array(count + 1);
          const state = newMessageRunState();
          tsMessageRuns.decodeMessageRuns(r.coded!.subarray(at, at + bytes), 0, out, 0, state);
          expect(state[RUN_NEXT_OUT], `${name}: band ${band}`).toBe(count);
          expect(atRunBoundary(state), `${name}: band ${band} is whole runs`).toBe(true);
          expect(sameBytes(out.subarray(0, count), plain.messages.subarray(from, from + count)), `${name}: band ${band}`).toBe(true);
          at += bytes;
          from += count;
        }
        expect(at, name).toBe(r.coded!.length);
      }
      // Without the room: numbers, as asked for without code.
      const tight = new Float64Array(plain.messages.length + 1);
      const numbers = k.band(BandPhase.REQUESTS, table, map, undefined, 0, slots, 1, tight, true);
      expect(numbers.coded, name).toBeUndefined();
      expect(sameBytes(numbers.messages, plain.messages), name).toBe(true);
    }
  });

  it('bad maps and inputs are refused with a RangeError by every kernel', () => {
    const other = maps[0]!;
    const foreignUnit = unitsOfBands(space, map)[other.held]![0]!;
    const swapped = map.groups.slice();
    [swapped[0], swapped[1]] = [swapped[1]!, swapped[0]!];
    for (const [name, k] of kernels) {
      const table = new Uint8Array(bandBytes(space, map));
      k.band(BandPhase.INIT, table, map, undefined, 0, slots, 1);
      const calls: [string, () => unknown][] = [
        ['held band out of range', () => k.band(BandPhase.INIT, table, { ...map, held: BANDS }, undefined, 0, 1, 1)],
        ['groups disagree with slotOf', () => k.band(BandPhase.INIT, table, { ...map, groups: swapped }, undefined, 0, 1, 1)],
        ['a group of another band', () => k.band(BandPhase.INIT, table, { ...map, groups: other.groups.slice(0, 1) }, undefined, 0, 1, 1)],
        ['a table too small', () => k.band(BandPhase.INIT, table.subarray(1), map, undefined, 0, 1, 1)],
        ['slots outside the band', () => k.band(BandPhase.REQUESTS, table, map, undefined, 0, slots + 1, 1)],
        ['a unit outside the proof order', () => k.band(BandPhase.UNITS, table, map, Float64Array.of(space.p1Placements), 0, 0, 1)],
        ['a unit whose children are not held', () => k.band(BandPhase.UNITS, table, map, Float64Array.of(units[0]!, foreignUnit), 0, 0, 1)],
        ['a request with a value', () => k.band(BandPhase.VISIT, table, map, Float64Array.of(bandMessage(map.groups[0]! * per, 2)), 0, 0, 1)],
        ['a request outside the state space', () => k.band(BandPhase.VISIT, table, map, Float64Array.of(bandMessage(space.states, 0)), 0, 0, 1)],
        ['a value of 0', () => k.band(BandPhase.APPLY, table, map, Float64Array.of(bandMessage(1, 2), bandMessage(5, 0)), 0, 0, 1)],
        ['a value outside the band', () => k.band(BandPhase.APPLY, table, map, Float64Array.of(bandMessage(slots * per, 1)), 0, 0, 1)],
        ['a group without a band', () => k.band(BandPhase.INIT, table, { ...map, bandOf: Int32Array.from(map.bandOf, (b, g) => (g === other.groups[0] ? BANDS : b)) }, undefined, 0, 1, 1)],
        ['a fractional unit', () => k.band(BandPhase.UNITS, table, map, Float64Array.of(units[0]! + 0.5), 0, 0, 1)],
        ['a message that is not an integer', () => k.band(BandPhase.APPLY, table, map, Float64Array.of(Number.NaN), 0, 0, 1)],
        ['a negative request', () => k.band(BandPhase.VISIT, table, map, Float64Array.of(-4), 0, 0, 1)],
        ['changed lines a word short', () => k.band(BandPhase.INIT, table, { ...map, changedLines: new Uint32Array(changedLineWords(table.length) - 1) }, undefined, 0, 1, 1)],
      ];
      for (const [what, call] of calls) expect(call, `${name}: ${what}`).toThrow(RangeError);
      const notWords = { ...map, changedLines: new Int32Array(changedLineWords(table.length)) as unknown as Uint32Array };
      expect(() => k.band(BandPhase.INIT, table, notWords, undefined, 0, 1, 1), `${name}: changed lines not a Uint32Array`).toThrow(TypeError);
    }
  });
});

/**
 * Every band in its own buffer, in turn: pass 1 inits a band, applies the values sent to it so
 * far and visits its units; the values it sends to bands already done wait for the next round.
 * A round: each band applies what was sent to it and lists its requests; each band visits the
 * requests sent to it; the values sent are applied. Until a round changes nothing.
 */
function bandSolve(kernel: SolverKernel, space: StateSpace, maps: BandMap[], threads: number): { table: Uint8Array; rounds: number } {
  const per = space.p2Placements;
  const tables = maps.map((m) => new Uint8Array(bandBytes(space, m)));
  const units = unitsOfBands(space, maps[0]!);
  let pending: number[][] = maps.map(() => []);
  let changed = 0;
  const send = (r: BandResult, to: number[][]) => {
    let at = 0;
    r.counts.forEach((count, b) => {
      for (let i = 0; i < count; i++) to[b]!.push(r.messages[at++]!);
    });
  };
  const apply = (x: number) => {
    if (pending[x]!.length === 0) return;
    const r = kernel.band(BandPhase.APPLY, tables[x]!, maps[x]!, Float64Array.from(pending[x]!), 0, 0, threads);
    expect(r.messages.length).toBe(0);
    changed += r.wins + r.losses + r.illegal;
    pending[x] = [];
  };
  maps.forEach((m, x) => {
    kernel.band(BandPhase.INIT, tables[x]!, m, undefined, 0, m.groups.length, threads);
    apply(x);
    send(kernel.band(BandPhase.UNITS, tables[x]!, m, units[x]!, 0, 0, threads), pending);
  });
  for (let round = 1; round < 50; round++) {
    changed = 0;
    const requests: number[][] = maps.map(() => []);
    maps.forEach((m, x) => {
      apply(x);
      send(kernel.band(BandPhase.REQUESTS, tables[x]!, m, undefined, 0, m.groups.length, threads), requests);
    });
    maps.forEach((m, x) => {
      const r = kernel.band(BandPhase.VISIT, tables[x]!, m, Float64Array.from(requests[x]!), 0, 0, threads);
      changed += r.wins + r.losses;
      expect(r.counts[x]).toBe(0);
      send(r, pending);
    });
    maps.forEach((_, x) => apply(x));
    if (changed === 0) {
      // The union of the bands in the table's layout: stored index group * per + r.
      const table = new Uint8Array(space.tableBytes);
      maps.forEach((m, x) => {
        m.groups.forEach((g, slot) => {
          for (let r = 0; r < per; r++) {
            const index = g * per + r;
            table[Math.floor(index / 4)]! |= readValue(tables[x]!, slot * per + r) << ((index & 3) << 1);
          }
        });
      });
      return { table, rounds: round };
    }
  }
  throw new Error('no fixpoint in 50 rounds');
}

describe('band passes end to end, 7x7 with 2 pieces, 3 bands of the proof order', () => {
  const v = variant(7, 2);
  const space = new StateSpace(v);
  const truth = solveInMemory(space, 'clean');
  const maps = proofOrderBands(space, BANDS);

  /** The band of the units of stored state `index`: that of its children's group. */
  const engine = new BitboardEngine(v, 'clean');
  const a = new Uint32Array(WORDS);
  const b = new Uint32Array(WORDS);
  const unitsBandOf = (index: number): number => {
    const group = Math.floor(index / space.p2Placements);
    engine.unrankP1(space.rankOf[group]!, a);
    engine.unrankP2(a, index - group * space.p2Placements, b);
    return maps[0]!.bandOf[childGroup(space, rankSet(b))]!;
  };

  // A UNITS call of band X sends a win to a state held by band Z whose units band Y holds only as
  // the win of a parent of a loss (X visits the states of its own units, Y != X): such a win is
  // left to Y when Y comes later and Z before X or after Y (BandTable.leavesWinToUnits).
  it.each(['ts', ...natives.map(([name]) => name as string)])('%s: pass 1 leaves to the band of their units the wins it finds as soon', (name) => {
    const native = natives.find(([n]) => n === name);
    const kernel = native ? native[1].solverKernel(v, 'clean') : new TsSolverKernel(v, 'clean', space);
    const units = unitsOfBands(space, maps[0]!);
    const pending: number[][] = maps.map(() => []);
    let kept = 0;
    maps.forEach((m, x) => {
      const table = new Uint8Array(bandBytes(space, m));
      kernel.band(BandPhase.INIT, table, m, undefined, 0, m.groups.length, 1);
      kernel.band(BandPhase.APPLY, table, m, Float64Array.from(pending[x]!), 0, 0, 1);
      const r = kernel.band(BandPhase.UNITS, table, m, units[x]!, 0, 0, 1);
      let at = 0;
      r.counts.forEach((count, z) => {
        for (let i = 0; i < count; i++, at++) {
          const message = r.messages[at]!;
          pending[z]!.push(message);
          if (message % 4 !== WIN) continue;
          const y = unitsBandOf(storedIndex(space, maps[z]!, Math.floor(message / 4)));
          if (y === x) continue;
          expect(y > x && (z < x || z > y), `band ${x} sent a win to band ${z} that band ${y} finds as soon`).toBe(false);
          if (y > x) kept++;
        }
      });
    });
    expect(kept, 'wins sent to parents whose units come later').toBeGreaterThan(0);
  });
  it.each([
    ['ts', 1],
    ...natives.flatMap(([name]) => [
      [name, 1],
      [name, 2],
    ]),
  ] as [string, number][])('%s on %i thread(s): the union of the bands is the in-memory solve', (name, threads) => {
    const native = natives.find(([n]) => n === name);
    const kernel = native ? native[1].solverKernel(v, 'clean') : new TsSolverKernel(v, 'clean', space);
    const { table, rounds } = bandSolve(kernel, space, maps, threads);
    expect(rounds).toBeGreaterThan(1);
    let differ = 0;
    for (let i = 0; i < space.states; i++) if (readValue(table, i) !== readValue(truth, i)) differ++;
    expect(differ).toBe(0);
    expect(sameBytes(table, truth)).toBe(true);
  });
});

// A shared step's slices (store/band-step.ts): calls of one unit each, one sweep over them.
describe.each([
  [7, 2],
  [4, 6],
])('band sweeps kept over calls, %ix%i with %i pieces, 3 bands of the proof order', (board, pieces) => {
  const v = variant(board, pieces);
  const space = new StateSpace(v);
  const maps = proofOrderBands(space, BANDS);
  it.each(['ts', ...natives.map(([name]) => name as string)])('%s: UNITS_KEEP unit by unit, then REVISIT, is one UNITS call over the units', (name) => {
    const native = natives.find(([n]) => n === name);
    const make = () => (native ? native[1].solverKernel(v, 'clean') : new TsSolverKernel(v, 'clean', space));
    const units = unitsOfBands(space, maps[0]!);
    const m = maps[1]!;
    const start = new Uint8Array(bandBytes(space, m));
    const kernel = make();
    kernel.band(BandPhase.INIT, start, m, undefined, 0, m.groups.length, 1);
    /** The messages of calls, band by band, sorted and without repeats. */
    const messagesOf = (results: BandResult[]) =>
      maps.map((_, band) => {
        const all = new Set<number>();
        for (const r of results) {
          const at = r.counts.slice(0, band).reduce((x, y) => x + y, 0);
          for (const message of r.messages.subarray(at, at + r.counts[band]!)) all.add(message);
        }
        return [...all].sort((x, y) => x - y);
      });
    const whole = start.slice();
    const one = messagesOf([kernel.band(BandPhase.UNITS, whole, m, units[1]!, 0, 0, 1)]);
    const kept = start.slice();
    const slices: BandResult[] = [];
    // Each call marks the lines it proves states in, the revisit of the kept states too.
    const marked = (call: (withLines: BandMap) => BandResult, what: string) => {
      const before = kept.slice();
      const withLines = marking(m, kept.length);
      slices.push(call(withLines));
      expectChangedLines(before, kept, withLines.changedLines, `${name}: ${what}`);
    };
    for (const unit of units[1]!) marked((withLines) => kernel.band(BandPhase.UNITS_KEEP, kept, withLines, Float64Array.of(unit), 0, 0, 1), `UNITS_KEEP of unit ${unit}`);
    // Kept for band 1: another band's calls are refused until they are revisited.
    const other = maps[0]!;
    const otherTable = new Uint8Array(bandBytes(space, other));
    expect(() => kernel.band(BandPhase.UNITS_KEEP, otherTable, other, units[0]!.subarray(0, 1), 0, 0, 1)).toThrow(/waiting states kept are another band's/);
    expect(() => kernel.band(BandPhase.REVISIT, otherTable, other, undefined, 0, 0, 1)).toThrow(/waiting states kept are another band's/);
    marked((withLines) => kernel.band(BandPhase.REVISIT, kept, withLines, undefined, 0, 0, 1), 'REVISIT');
    expect(sameBytes(kept, whole)).toBe(true);
    expect(messagesOf(slices)).toEqual(one);
    // Without keeping, each call's waiting states are revisited right after their unit: on 4x4/6
    // the table differs (fewer proofs), so the test above can fail there.
    const alone = start.slice();
    for (const unit of units[1]!) kernel.band(BandPhase.UNITS, alone, m, Float64Array.of(unit), 0, 0, 1);
    if (pieces === 6) expect(sameBytes(alone, whole)).toBe(false);
    // A UNITS_KEEP call that fails drops the sweep kept, on every kernel: another band's are
    // then taken (a bad unit; the refusal of another band's above kept it).
    kernel.band(BandPhase.UNITS_KEEP, kept, m, units[1]!.subarray(0, 1), 0, 0, 1);
    expect(() => kernel.band(BandPhase.UNITS_KEEP, kept, m, Float64Array.of(-1), 0, 0, 1)).toThrow(/a unit outside the proof order/);
    kernel.band(BandPhase.UNITS_KEEP, otherTable, other, units[0]!.subarray(0, 1), 0, 0, 1);
    kernel.band(BandPhase.REVISIT, otherTable, other, undefined, 0, 0, 1);
    // Revisited, the next band's calls are taken; a REVISIT with nothing kept does nothing.
    kernel.band(BandPhase.UNITS_KEEP, otherTable, other, units[0]!.subarray(0, 1), 0, 0, 1);
    kernel.band(BandPhase.REVISIT, otherTable, other, undefined, 0, 0, 1);
    const before = otherTable.slice();
    kernel.band(BandPhase.REVISIT, otherTable, other, undefined, 0, 0, 1);
    expect(sameBytes(otherTable, before)).toBe(true);
  });

});

describe('a band of more than 2^32 states (7x7/4, the first of 3 bands: 5.3e9 states, 1.3 GB)', () => {
  it('APPLY (numbers and runs), REQUESTS and VISIT address states on both sides of 2^32 alike on every kernel', () => {
    const v = variant(7, 4);
    const space = new StateSpace(v);
    const per = space.p2Placements;
    const order = Array.from({ length: space.groups }, (_, g) => g);
    const map = dealGroups(order, 3, (i) => Math.floor((i * 3) / space.groups))[0]!;
    const states = map.groups.length * per;
    expect(states).toBeGreaterThan(2 ** 32);
    // Band 0 holds the first groups in order: a local index is the stored index.
    expect(storedIndex(space, map, 2 ** 32 + 7)).toBe(2 ** 32 + 7);
    const locals = [2 ** 32 - 5, 2 ** 32 - 2, 2 ** 32 - 1, 2 ** 32, 2 ** 32 + 1, 2 ** 32 + 4, states - 1];
    const values = Float64Array.from(locals, (local, i) => bandMessage(local, 1 + (i % 3)));
    const slot = Math.floor(2 ** 32 / per);
    const inSlot = locals.filter((l) => Math.floor(l / per) === slot);
    expect(inSlot.length).toBeGreaterThan(4);
    // One band's bytes for every kernel in turn, filled anew for each (faulting in 1.3 GB of fresh
    // pages again for each kernel took longer than the kernels' work).
    const table = new Uint8Array(Math.ceil(states / 4));
    const runs = [['ts', new TsSolverKernel(v, 'clean', space)] as const, ...natives.map(([name, backend]) => [name, backend.solverKernel(v, 'clean')] as const)].map(
      ([name, k]) => {
        // Every state won but those of the slot around 2^32 and the last: a visit there finds its
        // children won (a loss) and sends the parents their win.
        table.fill(0x55);
        table.fill(0, Math.floor((slot * per) / 4), Math.ceil(((slot + 1) * per) / 4));
        table[table.length - 1] = 0;
        // From message runs first (on 2 threads: parts of the band on both sides of 2^32), then
        // those states unknown again and the same values applied as numbers.
        // Both mark the lines of the states they set (BandMap.changedLines), past 2^32 as below.
        const lines = [...new Set(locals.map((local) => Math.floor(local / CHANGED_LINE_STATES)))];
        const markedLines = (bits: Uint32Array) => {
          const found: number[] = [];
          bits.forEach((w, at) => {
            for (let b = 0; w !== 0 && b < 32; b++) if (((w >>> b) & 1) === 1) found.push(at * 32 + b);
          });
          return found;
        };
        const forRuns = marking(map, table.length);
        const fromRuns = k.bandApplyRuns(table, forRuns, codeRuns(Array.from(values), 1000), 0, newMessageRunState(), 2);
        expect(fromRuns.wins + fromRuns.losses + fromRuns.illegal, name).toBe(locals.length);
        expect(markedLines(forRuns.changedLines), `${name}: the lines marked by the runs`).toEqual(lines);
        locals.forEach((local, i) => expect(readValue(table, local), `${name}: state ${local} from runs`).toBe(1 + (i % 3)));
        for (const local of locals) table[Math.floor(local / 4)]! &= ~(3 << ((local % 4) * 2));
        const forValues = marking(map, table.length);
        const applied = k.band(BandPhase.APPLY, table, forValues, values, 0, 0);
        expect(applied.wins + applied.losses + applied.illegal, name).toBe(locals.length);
        expect(markedLines(forValues.changedLines), `${name}: the lines marked by the values`).toEqual(lines);
        locals.forEach((local, i) => expect(readValue(table, local), `${name}: state ${local}`).toBe(1 + (i % 3)));
        const r = k.band(BandPhase.REQUESTS, table, map, undefined, slot, slot + 1);
        const requests = Array.from(r.messages, (m) => (m - (m % 4)) / 4);
        expect(requests.length, name).toBe(per - inSlot.length);
        expect(requests.filter((s) => inSlot.includes(s)), name).toEqual([]);
        expect(requests.reduce((a, b) => Math.max(a, b)), name).toBeGreaterThan(2 ** 32);
        // The requests for this band (their children are here) visited: decisions on states
        // past 2^32, from children read by local index.
        const own = r.messages.slice(0, r.counts[0]!);
        expect(own.length, `${name}: requests to band 0 of ${JSON.stringify(Array.from(r.counts))}`).toBeGreaterThan(0);
        const visited = k.band(BandPhase.VISIT, table, map, own, 0, 0);
        const bytes = table.slice(Math.floor((slot * per) / 4), Math.ceil(((slot + 1) * per) / 4));
        const last = table[table.length - 1];
        return { name, bytes, last, counts: Array.from(r.counts), messages: r.messages.slice(), visited: { ...statsOf(visited), counts: Array.from(visited.counts), messages: visited.messages.slice() } };
      },
    );
    for (const run of runs.slice(1)) {
      expect(sameBytes(run.bytes, runs[0]!.bytes), `${run.name}: the band's bytes around 2^32`).toBe(true);
      expect(run.last, run.name).toBe(runs[0]!.last);
      expect(run.counts, run.name).toEqual(runs[0]!.counts);
      expect(sameBytes(run.messages, runs[0]!.messages), `${run.name}: requests`).toBe(true);
      expect({ ...run.visited, messages: undefined }, run.name).toEqual({ ...runs[0]!.visited, messages: undefined });
      expect(sameBytes(run.visited.messages, runs[0]!.visited.messages), `${run.name}: what the visits sent`).toBe(true);
    }
    expect(runs[0]!.visited.wins + runs[0]!.visited.losses + runs[0]!.visited.messages.length).toBeGreaterThan(0);
  });
});
