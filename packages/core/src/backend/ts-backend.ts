/**
 * The pure-TypeScript backend: runs anywhere Node or a browser runs.
 */
import { nowMs } from '../clock.js';
import { WORDS, bitboardFromBigInt, bitboardToBigInt } from '../bits/bitboard.js';
import { BitboardEngine, type JumpMethod, type WordPosition } from '../engine/engine.js';
import type { RuleMode, Variant } from '../geometry/variant.js';
import { type Move, type Position, type Side, fromWords, toWords } from '../position/position.js';
import { tsMessageRuns } from '../solver-space/message-runs.js';
import { TsSolverKernel } from '../solver-space/kernel.js';
import { type Backend, type BenchOp, type BenchRun, type Engine, type SolverKernel, checkPlacementRank } from './backend.js';
import { runBench } from './bench.js';
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

export const tsBackend: Backend = {
  name: 'ts',
  kernelThreads: false,
  engine: (v, rules) => new TsEngine(v, rules),
  solverKernel: (v, rules): SolverKernel => new TsSolverKernel(v, rules),
  messageRuns: tsMessageRuns,
};
