/**
 * The pure-TypeScript backend: runs anywhere Node or a browser runs.
 */
import { nowMs } from '../clock.js';
import { WORDS, bitboardFromBigInt, bitboardToBigInt } from '../bits/bitboard.js';
import { BitboardEngine, type JumpMethod, type WordPosition } from '../engine/engine.js';
import type { RuleMode, Variant } from '../geometry/variant.js';
import { type Move, type Position, type Side, fromWords, toWords } from '../position/position.js';
import { nextCombination, rankSet } from '../ranking/combination.js';
import { tsMessageRuns } from '../solver-space/message-runs.js';
import { TsSolverKernel } from '../solver-space/kernel.js';
import { type Backend, type BenchOp, type BenchRun, type Engine, type SolverKernel, checkPlacementRank } from './backend.js';
import { describePositions } from './describe.js';

export class TsEngine implements Engine {
  readonly core: BitboardEngine;
  private readonly buffer: Int32Array;

  constructor(
    readonly variant: Variant,
    readonly rules: RuleMode,
    jumpMethod: JumpMethod = 'magic',
  ) {
    this.core = new BitboardEngine(variant, rules, jumpMethod);
    this.buffer = new Int32Array(2 * this.core.maxMoves);
  }

  moves(p: Position): Move[] {
    return this.collect(this.core.pseudoMoves(toWords(p), this.buffer));
  }

  legalMoves(p: Position): Move[] {
    return this.collect(this.core.legalMoves(toWords(p), this.buffer));
  }

  private collect(count: number): Move[] {
    const out: Move[] = [];
    for (let i = 0; i < count; i++) out.push({ from: this.buffer[2 * i]!, to: this.buffer[2 * i + 1]! });
    return out.sort((x, y) => x.from - y.from || x.to - y.to);
  }

  hasWon(player: Side, p: Position): boolean {
    return this.core.hasWon(player, toWords(p));
  }

  isIllegal(p: Position): boolean {
    return this.core.isIllegal(toWords(p));
  }

  isTerminal(p: Position): boolean {
    return this.core.isTerminal(toWords(p));
  }

  rankP1(p1: bigint): number {
    return this.core.rankP1(bitboardFromBigInt(p1));
  }

  unrankP1(rank: number): bigint {
    checkPlacementRank(rank, this.core.p1Placements, 'P1');
    const out = new Uint32Array(WORDS);
    this.core.unrankP1(rank, out);
    return bitboardToBigInt(out);
  }

  rankP2(p1: bigint, p2: bigint): number {
    return this.core.rankP2(bitboardFromBigInt(p1), bitboardFromBigInt(p2));
  }

  unrankP2(p1: bigint, rank: number): bigint {
    checkPlacementRank(rank, this.core.p2Placements, 'P2');
    const out = new Uint32Array(WORDS);
    this.core.unrankP2(bitboardFromBigInt(p1), rank, out);
    return bitboardToBigInt(out);
  }

  nextP2(p1: bigint, p2: bigint): bigint | null {
    const rank = this.rankP2(p1, p2);
    return rank + 1 < this.core.p2Placements ? this.unrankP2(p1, rank + 1) : null;
  }

  rank(p: Position): bigint {
    return this.core.rank(toWords(p));
  }

  unrank(rank: bigint): Position {
    if (rank < 0n || rank >= this.core.positions) {
      throw new RangeError(`rank ${rank} is outside 0 .. ${this.core.positions - 1n}`);
    }
    return fromWords(this.core.unrank(rank));
  }

  mirror(p: Position): Position {
    return fromWords(this.core.mirrorPosition(toWords(p)));
  }

  swapColours(p: Position): Position {
    return fromWords(this.core.swapColours(toWords(p)));
  }

  canonical(p: Position): Position {
    return fromWords(this.core.canonical(toWords(p)));
  }

  describe(words: Uint32Array, count: number, out: Float64Array): void {
    describePositions(this.core, words, count, out);
  }

  bench(op: BenchOp, p: Position, iterations: number): BenchRun {
    const wp = toWords(p);
    const start = nowMs();
    const checksum = runBench(this.core, op, wp, iterations);
    const nanoseconds = Math.round((nowMs() - start) * 1e6);
    return { nanoseconds, iterations, checksum };
  }
}

/** Sample sizes shared with the native bench kernels, so that checksums agree. */
export const BENCH_SAMPLES = 4096;

/**
 * The benchmark loops (definitions shared with native-src/bench.hpp):
 * winner: Def. 1 for both players; successors: all moves of the side to move, each applied and
 * undone by xor; rankP1 / rankP2: ranks of BENCH_SAMPLES placements (P1 placements, or P2
 * placements around p's P1) cycled; unrankP1 / unrankP2: ranks i mod the placement count;
 * incrementP2: the next P2 placement among the cells free of p's P1, wrapping around.
 */
export function runBench(e: BitboardEngine, op: BenchOp, p: WordPosition, iterations: number): number {
  let checksum = 0;
  const out = new Uint32Array(WORDS);
  switch (op) {
    case 'winner': {
      for (let i = 0; i < iterations; i++) {
        if (e.hasWon(0, p)) checksum++;
        if (e.hasWon(1, p)) checksum += 2;
      }
      return checksum;
    }
    case 'successors': {
      const moves = new Int32Array(2 * e.maxMoves);
      const own = p.toMove === 0 ? p.p1 : p.p2;
      for (let i = 0; i < iterations; i++) {
        const o0 = p.p1[0]! | p.p2[0]!;
        const o1 = p.p1[1]! | p.p2[1]!;
        const o2 = p.p1[2]! | p.p2[2]!;
        const n = e.generate(own[0]!, own[1]!, own[2]!, o0, o1, o2, moves);
        for (let m = 0; m < n; m++) {
          const from = moves[2 * m]!;
          const to = moves[2 * m + 1]!;
          own[from >>> 5]! ^= 1 << (from & 31); // apply
          own[to >>> 5]! ^= 1 << (to & 31);
          checksum = (checksum + (own[0]! & 0xff)) | 0;
          own[from >>> 5]! ^= 1 << (from & 31); // undo
          own[to >>> 5]! ^= 1 << (to & 31);
        }
        checksum = (checksum + n) | 0;
      }
      return checksum >>> 0;
    }
    case 'rankP1':
    case 'rankP2': {
      const count = Math.min(BENCH_SAMPLES, op === 'rankP1' ? e.p1Placements : e.p2Placements);
      const samples = new Uint32Array(count * WORDS);
      for (let s = 0; s < count; s++) {
        if (op === 'rankP1') e.unrankP1(s, out);
        else e.unrankP2(p.p1, s, out);
        samples.set(out, s * WORDS);
      }
      const views = Array.from({ length: count }, (_, s) => samples.subarray(s * WORDS, s * WORDS + WORDS));
      for (let i = 0, s = 0; i < iterations; i++) {
        const rank = op === 'rankP1' ? rankSet(views[s]!) : e.rankP2(p.p1, views[s]!);
        checksum = (checksum + (rank % 4294967296)) | 0;
        if (++s === count) s = 0;
      }
      return checksum >>> 0;
    }
    case 'unrankP1':
    case 'unrankP2': {
      const count = op === 'unrankP1' ? e.p1Placements : e.p2Placements;
      for (let i = 0, r = 0; i < iterations; i++) {
        if (op === 'unrankP1') e.unrankP1(r, out);
        else e.unrankP2(p.p1, r, out);
        checksum = (checksum + (out[0]! ^ out[1]! ^ out[2]!)) | 0;
        if (++r === count) r = 0;
      }
      return checksum >>> 0;
    }
    case 'incrementP2': {
      // P2 placements as positions among the free cells, advanced in colex order.
      const n = e.cells;
      const k = e.pieces;
      const free = new Int32Array(n - k);
      let f = 0;
      for (let c = 0; c < n; c++) if (((p.p1[c >>> 5]! >>> (c & 31)) & 1) === 0) free[f++] = c;
      const combo = new Int32Array(k);
      for (let i = 0; i < k; i++) combo[i] = i;
      for (let i = 0; i < iterations; i++) {
        if (!nextCombination(combo, k, n - k)) for (let j = 0; j < k; j++) combo[j] = j;
        let w0 = 0;
        for (let j = 0; j < k; j++) {
          const c = free[combo[j]!]!;
          if (c < 32) w0 |= 1 << c;
        }
        checksum = (checksum + w0) | 0;
      }
      return checksum >>> 0;
    }
  }
}

export const tsBackend: Backend = {
  name: 'ts',
  kernelThreads: false,
  engine: (v, rules) => new TsEngine(v, rules),
  solverKernel: (v, rules): SolverKernel => new TsSolverKernel(v, rules),
  messageRuns: tsMessageRuns,
};
