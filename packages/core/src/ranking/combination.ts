/**
 * Colex ranking of k-subsets in O(k) (the bitboard paper's binomial formula, in colex order so
 * that rank 0 is the set {0, .., k-1}): with cells c_1 < .. < c_k, rank = sum C(c_i, i).
 * Sets are multi-word bitboards; see ../bits/bitboard.ts.
 */
import { WORDS } from '../bits/bitboard.js';
import { BINOMIAL_STRIDE as S, BINOMIAL_TABLE as C } from './binomial.js';

/** Colex rank of the set bits of b (words at b[o .. o+WORDS)). */
export function rankSet(b: Uint32Array, o = 0): number {
  let rank = 0;
  let i = 1;
  for (let w = 0; w < WORDS; w++) {
    let x = b[o + w]!;
    while (x !== 0) {
      const low = x & -x;
      const cell = w * 32 + 31 - Math.clz32(low);
      rank += C[cell * S + i]!;
      i++;
      x ^= low;
    }
  }
  return rank;
}

/** Inverse of rankSet for a k-subset of n cells, written into out[o .. o+WORDS). */
export function unrankSet(rank: number, k: number, n: number, out: Uint32Array, o = 0): void {
  for (let w = 0; w < WORDS; w++) out[o + w] = 0;
  let cell = n;
  for (let i = k; i >= 1; i--) {
    // The largest cell with C(cell, i) <= rank; cells only decrease, so O(n + k) in total.
    do cell--;
    while (C[cell * S + i]! > rank);
    rank -= C[cell * S + i]!;
    out[o + (cell >>> 5)]! |= 1 << (cell & 31);
  }
}

/**
 * Next k-subset in colex order (the solver's incremental P2 placement), in place on a sorted
 * array of k cells below n. Returns false after the last subset.
 */
export function nextCombination(cells: Int32Array, k: number, n: number): boolean {
  for (let i = 0; i < k; i++) {
    const limit = i + 1 < k ? cells[i + 1]! : n;
    if (cells[i]! + 1 < limit) {
      cells[i]!++;
      for (let j = 0; j < i; j++) cells[j] = j;
      return true;
    }
  }
  return false;
}
