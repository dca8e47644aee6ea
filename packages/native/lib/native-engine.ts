/**
 * The engine of core's Engine interface on an addon kernel (loader.ts): positions cross as words
 * (p1[3], p2[3], toMove), moves come back sorted.
 */
import { type BenchOp, BENCH_OPS, type BenchRun, checkPlacementRank, type Engine, type Move, type Position, type RuleMode, type Side, type Variant, WORDS, binomial, bitboardFromBigInt, bitboardToBigInt } from '@ccheckers/core';
import { type AddonKernel, type NativeCodePath, kernelOf } from './loader.js';

function positionWords(p: Position, out = new Uint32Array(7)): Uint32Array {
  out.set(bitboardFromBigInt(p.p1), 0);
  out.set(bitboardFromBigInt(p.p2), 3);
  out[6] = p.toMove;
  return out;
}

function movesOf(bytes: Uint8Array): Move[] {
  const out: Move[] = [];
  for (let i = 0; i < bytes.length; i += 2) out.push({ from: bytes[i]!, to: bytes[i + 1]! });
  return out.sort((a, b) => a.from - b.from || a.to - b.to);
}

export class NativeEngine implements Engine {
  private readonly k: AddonKernel;
  private readonly words = new Uint32Array(7);
  private readonly p1Placements: number;
  private readonly p2Placements: number;

  constructor(
    readonly variant: Variant,
    readonly rules: RuleMode,
    readonly kernel: NativeCodePath,
  ) {
    this.k = kernelOf(variant, rules, kernel);
    this.p1Placements = binomial(variant.cells, variant.pieces);
    this.p2Placements = binomial(variant.cells - variant.pieces, variant.pieces);
  }

  moves(p: Position): Move[] {
    return movesOf(this.k.moves(positionWords(p, this.words)));
  }
  legalMoves(p: Position): Move[] {
    return movesOf(this.k.legalMoves(positionWords(p, this.words)));
  }
  hasWon(player: Side, p: Position): boolean {
    return this.k.hasWon(player, positionWords(p, this.words));
  }
  isIllegal(p: Position): boolean {
    return this.k.isIllegal(positionWords(p, this.words));
  }
  isTerminal(p: Position): boolean {
    return this.k.isTerminal(positionWords(p, this.words));
  }
  rankP1(p1: bigint): number {
    return this.k.rankP1(bitboardFromBigInt(p1));
  }
  unrankP1(rank: number): bigint {
    checkPlacementRank(rank, this.p1Placements, 'P1');
    const out = new Uint32Array(WORDS);
    this.k.unrankP1(rank, out);
    return bitboardToBigInt(out);
  }
  rankP2(p1: bigint, p2: bigint): number {
    return this.k.rankP2(bitboardFromBigInt(p1), bitboardFromBigInt(p2));
  }
  unrankP2(p1: bigint, rank: number): bigint {
    checkPlacementRank(rank, this.p2Placements, 'P2');
    const out = new Uint32Array(WORDS);
    this.k.unrankP2(bitboardFromBigInt(p1), rank, out);
    return bitboardToBigInt(out);
  }
  nextP2(p1: bigint, p2: bigint): bigint | null {
    const out = new Uint32Array(WORDS);
    return this.k.nextP2(bitboardFromBigInt(p1), bitboardFromBigInt(p2), out) ? bitboardToBigInt(out) : null;
  }
  rank(p: Position): bigint {
    const r1 = BigInt(this.rankP1(p.p1));
    const r2 = BigInt(this.rankP2(p.p1, p.p2));
    return (r1 * BigInt(this.p2Placements) + r2) * 2n + BigInt(p.toMove);
  }
  unrank(rank: bigint): Position {
    const total = BigInt(this.p1Placements) * BigInt(this.p2Placements) * 2n;
    if (rank < 0n || rank >= total) throw new RangeError(`rank ${rank} is outside 0 .. ${total - 1n}`);
    const toMove = Number(rank & 1n) as Side;
    const rest = rank >> 1n;
    const p1 = this.unrankP1(Number(rest / BigInt(this.p2Placements)));
    return { p1, p2: this.unrankP2(p1, Number(rest % BigInt(this.p2Placements))), toMove };
  }
  mirror(p: Position): Position {
    return { p1: this.mapSet(p.p1, 'mirror'), p2: this.mapSet(p.p2, 'mirror'), toMove: p.toMove };
  }
  swapColours(p: Position): Position {
    return { p1: this.mapSet(p.p2, 'rotate'), p2: this.mapSet(p.p1, 'rotate'), toMove: p.toMove === 0 ? 1 : 0 };
  }
  canonical(p: Position): Position {
    const out = new Uint32Array(7);
    this.k.canonical(positionWords(p, this.words), out);
    return { p1: bitboardToBigInt(out.subarray(0, 3)), p2: bitboardToBigInt(out.subarray(3, 6)), toMove: 0 };
  }
  bench(op: BenchOp, p: Position, iterations: number): BenchRun {
    const r = this.k.bench(BENCH_OPS.indexOf(op), positionWords(p), iterations);
    return { nanoseconds: r.nanoseconds, iterations, checksum: r.checksum };
  }
  describe(words: Uint32Array, count: number, out: Float64Array): void {
    this.k.describe(words, count, out);
  }

  private mapSet(set: bigint, how: 'mirror' | 'rotate'): bigint {
    const out = new Uint32Array(WORDS);
    this.k[how](bitboardFromBigInt(set), out);
    return bitboardToBigInt(out);
  }
}
