/**
 * Every backend against the same things: the committed test vectors (test-vectors/vectors.json)
 * and a fixed-seed randomized comparison, operation by operation, of 10^5 positions per variant
 * (SAMPLES; 10^4 against the prebuild alone).
 * The TS backend is the reference here; it is itself checked against the array-based reference
 * implementation in packages/core/test.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  BENCH_OPS,
  BENCH_SAMPLES,
  REVISIT_LAG,
  MESSAGE_RUN_STATE,
  DESCRIBE_FIELDS,
  LOST_WITHOUT_DISTANCE,
  MAX_DISTANCE,
  NO_DISTANCE,
  DESCRIBE_NAMES,
  type Engine,
  type RuleMode,
  TsEngine,
  binomial,
  bitboardFromBigInt,
  parsePosition,
  seededRandom,
  lostCheckedMark,
  supportedVariants,
  variant,
} from '@ccheckers/core';
import { NativeEngine, type NativeCodePath, type NativeConstants, nativeConstants, nativeStatus } from '../lib/index.js';
import { BINDING_INTERFACE, bindingMismatch } from '../lib/loader.js';

const status = nativeStatus();
if (process.env.CCHECKERS_REQUIRE_NATIVE === '1' && !status.loaded) {
  throw new Error(`CCHECKERS_REQUIRE_NATIVE=1 but the addon did not load: ${status.error}`);
}
// .ci/run runs this file a second time against a prebuildify prebuild alone (PREBUILDS_ONLY=1
// makes node-gyp-build skip build/): make sure that is what loaded.
// Without the addon (no compiler where the tests run) the native checks below are skipped, and
// reported as skipped, not passed.
it.skipIf(!status.loaded && process.env.PREBUILDS_ONLY !== '1')('loads the addon from where node-gyp-build was told to look', () => {
  expect(status.loaded, status.error).toBe(true);
  if (process.env.PREBUILDS_ONLY === '1') expect(status.path).toMatch(/[\\/]prebuilds[\\/]/);
  else expect(status.path).toMatch(/[\\/](build[\\/]Release|prebuilds)[\\/]/);
});

it.skipIf(!status.loaded)('the C++ constants equal core\'s (revisit lag, bench samples, describe fields, distance bytes)', () => {
  expect(nativeConstants()).toEqual({
    revisitLag: REVISIT_LAG,
    benchSamples: BENCH_SAMPLES,
    describeFields: DESCRIBE_FIELDS,
    messageRunState: MESSAGE_RUN_STATE,
    noDistance: NO_DISTANCE,
    lostWithoutDistance: LOST_WITHOUT_DISTANCE,
    lostCheckedMarks: [lostCheckedMark(0), lostCheckedMark(1)],
    maxDistance: MAX_DISTANCE,
    bindingInterface: BINDING_INTERFACE,
  });
});

it('an addon built from other sources is refused by name, with what to do', () => {
  const at = '/x/build/Release/ccheckers_native.node';
  expect(bindingMismatch({ constants: { bindingInterface: BINDING_INTERFACE } as NativeConstants }, at)).toBeUndefined();
  // Before the interface had a number (no solverReleaseSparseMemo), and a newer one.
  for (const [found, shown] of [[undefined, 1], [BINDING_INTERFACE + 1, BINDING_INTERFACE + 1]] as const) {
    const why = bindingMismatch({ constants: { bindingInterface: found } as NativeConstants }, at);
    expect(why).toBe(`${at} was built from other sources (binding interface ${shown}, these need ${BINDING_INTERFACE}): rebuild the addon (scripts/setup.sh in a checkout, npm rebuild @ccheckers/native where installed)`);
  }
});

const kernels = [
  ...(status.loaded ? (['portable', 'portable-baseline'] as const) : []),
  ...(status.bmi2Usable ? (['bmi2'] as const) : []),
];

interface Vector {
  board: number;
  pieces: number;
  rules: RuleMode;
  position: string;
  expected: Record<string, number>;
  legalMoves: string[];
}
const vectors = (JSON.parse(readFileSync(new URL('../../../test-vectors/vectors.json', import.meta.url), 'utf8')) as { vectors: Vector[] }).vectors;

function engineFor(kind: 'ts' | NativeCodePath, board: number, pieces: number, rules: RuleMode): Engine {
  const v = variant(board, pieces);
  return kind === 'ts' ? new TsEngine(v, rules) : new NativeEngine(v, rules, kind);
}

describe.each(['ts', ...kernels] as const)('backend %s', (kind) => {
  it(`matches all ${vectors.length} shared test vectors`, () => {
    for (const t of vectors) {
      const e = engineFor(kind, t.board, t.pieces, t.rules);
      const { position } = parsePosition(t.position);
      const words = new Uint32Array(7);
      words.set(bitboardFromBigInt(position.p1), 0);
      words.set(bitboardFromBigInt(position.p2), 3);
      words[6] = position.toMove;
      const out = new Float64Array(DESCRIBE_FIELDS);
      e.describe(words, 1, out);
      const got = Object.fromEntries(DESCRIBE_NAMES.map((n, i) => [n, out[i]]));
      expect({ vector: t.position, rules: t.rules, ...got }).toEqual({ vector: t.position, rules: t.rules, ...t.expected });
      expect(e.legalMoves(position).map((m) => `${m.from}-${m.to}`)).toEqual(t.legalMoves);
      expect(e.canonical(position)).toEqual(new TsEngine(variant(t.board, t.pieces), t.rules).canonical(position));
      expect(e.unrank(e.rank(position))).toEqual(position);
    }
  });
});

// The benchmark loops are the paper's operations run in place; their checksums (one value per
// iteration folded in) must agree across backends, through wrap-arounds and with P1's pieces
// spread between the free cells (the portable incrementP2 carries across them).
describe.skipIf(kernels.length === 0)('benchmark loops give the same checksums on every backend', () => {
  const spread = (m: number, k: number) => {
    const cells = Array.from({ length: m * m }, () => '.');
    const step = Math.floor((m * m) / k);
    for (let j = 0; j < k; j++) {
      cells[j * step + 1] = 'x';
      cells[j * step + 3] = 'o';
    }
    return `${cells.join('')} x`;
  };
  const start = (m: number, k: number) => `${'x'.repeat(k)}${'.'.repeat(m * m - 2 * k)}${'o'.repeat(k)} x`;
  it.each([
    [4, 3],
    [5, 6],
    [7, 3],
    [9, 6],
  ] as const)('board %i with %i pieces: every op from the start and from a spread position', (m, k) => {
    const iterations = Math.min(60_000, 3 * binomial(m * m - k, k) + 7);
    for (const text of [start(m, k), spread(m, k)]) {
      const { position } = parsePosition(text);
      for (const op of BENCH_OPS) {
        const sums = Object.fromEntries((['ts', ...kernels] as const).map((kind) => [kind, engineFor(kind, m, k, 'clean').bench(op, position, iterations).checksum]));
        expect({ text, op, sums }).toEqual({ text, op, sums: Object.fromEntries(Object.keys(sums).map((kind) => [kind, sums.ts])) });
      }
    }
  });
});

// The native engines rank placements of exactly k pieces with unrolled code; anything else given
// to the fine-grained calls (too few or too many pieces, P2 on P1's cells) must still get core's
// formula: the colex rank of the set, for P2 of pext(p2, free cells); the same for the calls that
// rank on the way (nextP2, canonical).
describe.skipIf(kernels.length === 0)('ranks of out-of-contract input agree with the TS backend', () => {
  it.each([
    [7, 3],
    [5, 6],
    [9, 6],
  ] as const)('board %i with %i pieces', (m, k) => {
    const v = variant(m, k);
    const random = seededRandom(m * 31 + k);
    const randomSet = (size: number) => {
      let set = 0n;
      for (let j = 0; j < size; j++) set |= 1n << BigInt(Math.floor(random() * v.cells));
      return set;
    };
    const ts = new TsEngine(v, 'clean');
    const natives = kernels.map((kind) => new NativeEngine(v, 'clean', kind));
    for (let i = 0; i < 2000; i++) {
      const p1 = randomSet(i % (k + 4));
      const p2 = randomSet((i >> 3) % (k + 4));
      const position = { p1, p2, toMove: (i & 1) as 0 | 1 };
      const r2 = Math.floor(random() * binomial(v.cells - k, k));
      for (const e of natives) {
        expect([e.rankP1(p1), e.rankP2(p1, p2), e.nextP2(p1, p2), e.canonical(position), e.unrankP2(p1, r2)]).toEqual([
          ts.rankP1(p1),
          ts.rankP2(p1, p2),
          ts.nextP2(p1, p2),
          ts.canonical(position),
          ts.unrankP2(p1, r2),
        ]);
      }
    }
  });
});

// Runs without the addon too (then for the TS backend alone).
describe('placement ranks', () => {
  it('out of range are refused with a RangeError by every backend', () => {
    const v = variant(7, 3);
    for (const e of [new TsEngine(v, 'clean'), ...kernels.map((kind) => new NativeEngine(v, 'clean', kind))]) {
      const p1 = e.unrankP1(0);
      expect(() => e.unrankP1(binomial(49, 3))).toThrow(RangeError);
      expect(() => e.unrankP1(-1)).toThrow(RangeError);
      expect(() => e.unrankP2(p1, binomial(46, 3))).toThrow(/P2 placement rank 15180 is outside 0 \.\. 15179/);
      expect(() => e.unrankP2(p1, 0.5)).toThrow(RangeError);
      expect(e.unrankP2(p1, binomial(46, 3) - 1)).toBe(new TsEngine(v, 'clean').unrankP2(p1, binomial(46, 3) - 1));
    }
  });
});

// Against the prebuild (the same sources, compiled and stripped by prebuild.mjs) a tenth: what that
// run proves is that the prebuilt file loads and computes the same, not the kernels again.
const SAMPLES = process.env.PREBUILDS_ONLY === '1' ? 10_000 : 100_000;
const BATCH = 10_000;

describe.skipIf(kernels.length === 0)('randomized equivalence with the TS backend', () => {
  it.each(supportedVariants().map((s) => [`${s.size}x${s.size}/${s.pieces}`, s.size, s.pieces] as const))(
    `%s: ${SAMPLES} random positions, every operation, every native kernel`,
    (_name, size, pieces) => {
      const v = variant(size, pieces);
      const random = seededRandom(size * 7919 + pieces);
      const words = new Uint32Array(7 * BATCH);
      const expected = new Float64Array(DESCRIBE_FIELDS * BATCH);
      const got = new Float64Array(DESCRIBE_FIELDS * BATCH);
      const cells = new Int32Array(v.cells);
      for (let batch = 0; batch < SAMPLES / BATCH; batch++) {
        const rules: RuleMode = pieces === 6 && batch % 2 === 1 ? 'published' : 'clean';
        for (let i = 0; i < BATCH; i++) fillRandom(words, i, cells, pieces, random);
        new TsEngine(v, rules).describe(words, BATCH, expected);
        for (const kind of kernels) {
          new NativeEngine(v, rules, kind).describe(words, BATCH, got);
          if (!sameArrays(got, expected)) {
            const i = firstDifference(got, expected);
            const at = Math.floor(i / DESCRIBE_FIELDS);
            expect({
              kernel: kind,
              rules,
              p1: Array.from(words.subarray(7 * at, 7 * at + 3)),
              p2: Array.from(words.subarray(7 * at + 3, 7 * at + 6)),
              toMove: words[7 * at + 6],
              field: DESCRIBE_NAMES[i % DESCRIBE_FIELDS],
              value: got[i],
            }).toEqual({ kernel: kind, rules, p1: expect.anything(), p2: expect.anything(), toMove: expect.anything(), field: DESCRIBE_NAMES[i % DESCRIBE_FIELDS], value: expected[i] });
          }
        }
      }
    },
  );
});


function fillRandom(words: Uint32Array, i: number, cells: Int32Array, k: number, random: () => number): void {
  const n = cells.length;
  for (let c = 0; c < n; c++) cells[c] = c;
  const w = 7 * i;
  words.fill(0, w, w + 7);
  for (let j = 0; j < 2 * k; j++) {
    const r = j + Math.floor(random() * (n - j));
    const c = cells[r]!;
    cells[r] = cells[j]!;
    cells[j] = c;
    const base = w + (j < k ? 0 : 3);
    words[base + (c >>> 5)]! |= 1 << (c & 31);
  }
  words[w + 6] = random() < 0.5 ? 0 : 1;
}

function sameArrays(a: Float64Array, b: Float64Array): boolean {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function firstDifference(a: Float64Array, b: Float64Array): number {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return i;
  return -1;
}
