/**
 * The bitboard engine against the array-based reference: every position of 7x7 with 1 and 2
 * pieces, and 5,000 random positions of each of seven larger variants (SAMPLES; 35,000 in all), for
 * every jump method and rule mode.
 */
import { describe, expect, it } from 'vitest';
import {
  BitboardEngine,
  type JumpMethod,
  type Position,
  type RuleMode,
  TsEngine,
  boardGeometry,
  fromWords,
  jumpMagicTables,
  supportedVariants,
  variant,
} from '../src/index.js';
import { toReference } from './support/convert.js';
import { naiveColexRank, ReferenceGame } from './support/reference.js';
import { randomPosition, rng } from './support/random.js';

const key = (moves: ReadonlyArray<{ from: number; to: number }>) => moves.map((m) => `${m.from}-${m.to}`).join(' ');
const refKey = (moves: Array<[number, number]>) => moves.map(([f, t]) => `${f}-${t}`).join(' ');

describe('jumps by multiply and table lookup', () => {
  const sizes = [...new Set(supportedVariants().map((x) => x.size))];
  it.each(sizes)('board size %i: a multiplier for every cell, and the pairs kernel\'s jumps on random occupancies', (m) => {
    const g = boardGeometry(m);
    expect(jumpMagicTables(g)).not.toBeNull();
    const v = variant(m, supportedVariants().find((x) => x.size === m)!.pieces);
    const magic = new BitboardEngine(v, 'clean', 'magic');
    const pairs = new BitboardEngine(v, 'clean', 'pairs');
    const random = rng(4242 + m);
    const word = () => Math.floor(random() * 2 ** 32);
    for (let trial = 0; trial < 500; trial++) {
      const o = [0, 1, 2].map((w) => (w * 32 < g.cells ? (word() & word()) >>> 0 : 0));
      for (let c = 0; c < g.cells; c++) {
        magic.singleJumps(c, o[0]!, o[1]!, o[2]!);
        pairs.singleJumps(c, o[0]!, o[1]!, o[2]!);
        expect([magic.r0, magic.r1, magic.r2]).toEqual([pairs.r0, pairs.r1, pairs.r2]);
      }
    }
  });
});

describe.each([1, 2])('every position of 7x7 with %i piece(s)', (k) => {
  it('rank/unrank round-trip, illegal and terminal on all; legal moves on every position (k=1) or every 7th (k=2)', () => {
    const v = variant(7, k);
    const core = new BitboardEngine(v, 'clean');
    const ref = new ReferenceGame(7, k);
    const stride = k === 1 ? 1 : 7;
    const moves = new Int32Array(2 * core.maxMoves);
    const p1 = new Uint32Array(3);
    const p2 = new Uint32Array(3);
    let illegal = 0;
    let terminal = 0;
    let index = 0;
    for (let r1 = 0; r1 < core.p1Placements; r1++) {
      core.unrankP1(r1, p1);
      expect(core.rankP1(p1)).toBe(r1);
      for (let r2 = 0; r2 < core.p2Placements; r2++) {
        core.unrankP2(p1, r2, p2);
        if (core.rankP2(p1, p2) !== r2) expect({ r1, r2: core.rankP2(p1, p2) }).toEqual({ r1, r2 });
        for (const toMove of [0, 1] as const) {
          const wp = { p1, p2, toMove };
          const rp = toReference(fromWords(wp), v.cells);
          const isIllegal = core.isIllegal(wp);
          const isTerminal = core.isTerminal(wp);
          if (isIllegal !== ref.isIllegal(rp) || isTerminal !== ref.isTerminal(rp)) {
            expect({ r1, r2, isIllegal, isTerminal }).toEqual({ r1, r2, isIllegal: ref.isIllegal(rp), isTerminal: ref.isTerminal(rp) });
          }
          if (isIllegal) illegal++;
          if (isTerminal) terminal++;
          if (index++ % stride !== 0) continue;
          const n = core.legalMoves(wp, moves);
          const mine = Array.from({ length: n }, (_, i) => `${moves[2 * i]}-${moves[2 * i + 1]}`).sort(byMove).join(' ');
          const theirs = refKey(ref.legalMoves(rp));
          if (mine !== theirs) expect({ r1, r2, toMove, moves: mine }).toEqual({ r1, r2, toMove, moves: theirs });
        }
      }
    }
    expect({ illegal, terminal }).toEqual(k === 1 ? { illegal: 96, terminal: 94 } : { illegal: 10_810, terminal: 10_800 });
  });
});

function byMove(a: string, b: string): number {
  const [af, at] = a.split('-').map(Number) as [number, number];
  const [bf, bt] = b.split('-').map(Number) as [number, number];
  return af - bf || at - bt;
}

const RANDOM_VARIANTS: Array<[number, number]> = [[7, 3], [7, 4], [7, 6], [5, 6], [6, 6], [9, 6], [9, 10]];
const SAMPLES = 5_000;

describe.each(RANDOM_VARIANTS)('%ix%i: random positions against the reference', (m, k) => {
  it(`${SAMPLES} positions: moves, winner, legality, ranks, symmetries`, () => {
    const v = variant(m, k);
    const random = rng(m * 100 + k);
    const rules: RuleMode[] = k === 6 ? ['clean', 'published'] : ['clean'];
    const engines = rules.map((r) => new TsEngine(v, r));
    const pextEngine = new TsEngine(v, 'clean', 'pext' satisfies JumpMethod);
    const pairsEngine = new TsEngine(v, 'clean', 'pairs' satisfies JumpMethod);
    const refs = rules.map((r) => new ReferenceGame(m, k, r === 'published'));
    for (let i = 0; i < SAMPLES; i++) {
      const p = randomPosition(random, v.cells, k);
      const rp = toReference(p, v.cells);
      const e = engines[i % engines.length]!;
      const ref = refs[i % refs.length]!;
      const pseudo = key(e.moves(p));
      expect(pseudo).toBe(refKey(ref.moves(rp)));
      expect(key(pextEngine.moves(p))).toBe(pseudo);
      expect(key(pairsEngine.moves(p))).toBe(pseudo);
      expect(e.hasWon(0, p)).toBe(ref.hasWon(1, rp));
      expect(e.hasWon(1, p)).toBe(ref.hasWon(2, rp));
      expect(e.isIllegal(p)).toBe(ref.isIllegal(rp));
      expect(e.isTerminal(p)).toBe(ref.isTerminal(rp));
      if (i % 10 === 0) expect(key(e.legalMoves(p))).toBe(refKey(ref.legalMoves(rp)));
      checkRanksAndSymmetry(e, p, i % 100 === 0);
    }
  });
});

function checkRanksAndSymmetry(e: TsEngine, p: Position, deep: boolean): void {
  const cells1 = cellList(p.p1);
  expect(BigInt(e.rankP1(p.p1))).toBe(naiveColexRank(cells1));
  expect(e.unrankP1(e.rankP1(p.p1))).toBe(p.p1);
  const r2 = e.rankP2(p.p1, p.p2);
  // P2's rank is the colex rank of its cells' indices among the cells P1 leaves free.
  expect(BigInt(r2)).toBe(naiveColexRank(cellList(p.p2).map((c) => c - cells1.filter((q) => q < c).length)));
  expect(e.unrankP2(p.p1, r2)).toBe(p.p2);
  expect(e.unrank(e.rank(p))).toEqual(p);
  const m = e.mirror(p);
  const s = e.swapColours(p);
  expect(e.mirror(m)).toEqual(p);
  expect(e.swapColours(s)).toEqual(p);
  expect(e.moves(m).length).toBe(e.moves(p).length);
  expect(e.moves(s).length).toBe(e.moves(p).length);
  expect(e.isIllegal(m)).toBe(e.isIllegal(p));
  expect(e.isIllegal(s)).toBe(e.isIllegal(p));
  if (deep) {
    const c = e.canonical(p);
    expect(c.toMove).toBe(0);
    expect(e.canonical(m)).toEqual(c);
    expect(e.canonical(s)).toEqual(c);
    const next = e.nextP2(p.p1, p.p2);
    if (next !== null) expect(e.rankP2(p.p1, next)).toBe(r2 + 1);
  }
}

function cellList(b: bigint): number[] {
  const out: number[] = [];
  for (let c = 0; b >> BigInt(c); c++) if ((b >> BigInt(c)) & 1n) out.push(c);
  return out;
}

describe('regressions', () => {
  it('a goal that covers bit 31 of a word is seen as filled (signed vs unsigned masks)', () => {
    // 6x6: P1's goal is cells 30..35, split over words 0 and 1; P1 holds 31, P2 the rest.
    const e = new TsEngine(variant(6, 6), 'clean');
    const p: Position = { p1: (1n << 2n) | (1n << 12n) | (1n << 13n) | (1n << 20n) | (1n << 28n) | (1n << 31n), p2: 0b111101n << 30n | (1n << 24n), toMove: 0 };
    expect(e.hasWon(0, p)).toBe(true);
    expect(e.isIllegal(p)).toBe(true);
  });
});
