/**
 * The benchmark loops of `ccheckers bench` on the TypeScript engine (native kernel: bench.inl,
 * the same loops and checksums).
 */
import { WORDS } from '../bits/bitboard.js';
import type { BitboardEngine, WordPosition } from '../engine/engine.js';
import { nextCombination, rankSet } from '../ranking/combination.js';
import type { BenchOp } from './backend.js';

/** Sample sizes shared with the native bench kernels, so that checksums agree. */
export const BENCH_SAMPLES = 4096;

/**
 * The benchmark loops (definitions and checksums shared with the native kernel's bench.inl):
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
