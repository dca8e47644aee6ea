/**
 * One batch operation that exercises every engine operation on a list of positions, so backends
 * can be compared operation by operation in one call each (native-src's Kernel::describe is the
 * same function in C++). Input: 7 words per position (p1[3], p2[3], toMove). Output, DESCRIBE_FIELDS
 * numbers per position:
 *   0 flags: 1 P1 has won, 2 P2 has won, 4 illegal, 8 terminal
 *   1, 2 pseudo-move count and order-free hash;  3, 4 legal-move count and hash
 *   5, 6 rankP1, rankP2;  7, 8 rankP1, rankP2 of the canonical form
 *   9 words-xor of unrankP2(p1, (rankP2 + 1) mod C(N-k, k));  10 words-xor of nextP2, or -1
 *   11 words-xor of mirror(p1) xor words-xor of rotate(p2)
 */
import { WORDS } from '../bits/bitboard.js';
import type { BitboardEngine, WordPosition } from '../engine/engine.js';

export const DESCRIBE_FIELDS = 12;
export const DESCRIBE_NAMES = [
  'flags', 'moves', 'movesHash', 'legalMoves', 'legalMovesHash', 'rankP1', 'rankP2',
  'canonicalRankP1', 'canonicalRankP2', 'unrankP2', 'nextP2', 'mirrorRotate',
] as const;

/** Order-free hash term of a move (same 32-bit arithmetic as moveHash in kernel.inl). */
export function moveHash(from: number, to: number): number {
  return Math.imul(from * 128 + to + 1, 0x9e3779b1) >>> 0;
}

export function describePositions(e: BitboardEngine, words: Uint32Array, count: number, out: Float64Array): void {
  const moves = new Int32Array(2 * e.maxMoves);
  const p: WordPosition = { p1: new Uint32Array(WORDS), p2: new Uint32Array(WORDS), toMove: 0 };
  const tmp = new Uint32Array(WORDS);
  const tmp2 = new Uint32Array(WORDS);
  const xorWords = (b: Uint32Array) => (b[0]! ^ b[1]! ^ b[2]!) >>> 0;
  for (let i = 0; i < count; i++) {
    const w = i * 7;
    p.p1.set(words.subarray(w, w + 3));
    p.p2.set(words.subarray(w + 3, w + 6));
    p.toMove = words[w + 6] ? 1 : 0;
    const o = i * DESCRIBE_FIELDS;
    out[o] = (e.hasWon(0, p) ? 1 : 0) | (e.hasWon(1, p) ? 2 : 0) | (e.isIllegal(p) ? 4 : 0) | (e.isTerminal(p) ? 8 : 0);
    const np = e.pseudoMoves(p, moves);
    out[o + 1] = np;
    out[o + 2] = hashMoves(moves, np);
    const nl = e.legalMoves(p, moves);
    out[o + 3] = nl;
    out[o + 4] = hashMoves(moves, nl);
    const r2 = e.rankP2(p.p1, p.p2);
    out[o + 5] = e.rankP1(p.p1);
    out[o + 6] = r2;
    const c = e.canonical(p);
    out[o + 7] = e.rankP1(c.p1);
    out[o + 8] = e.rankP2(c.p1, c.p2);
    e.unrankP2(p.p1, (r2 + 1) % e.p2Placements, tmp);
    out[o + 9] = xorWords(tmp);
    if (r2 + 1 < e.p2Placements) {
      e.unrankP2(p.p1, r2 + 1, tmp);
      out[o + 10] = xorWords(tmp);
    } else {
      out[o + 10] = -1;
    }
    e.mirror(p.p1, tmp);
    e.rotate(p.p2, tmp2);
    out[o + 11] = (xorWords(tmp) ^ xorWords(tmp2)) >>> 0;
  }
}

function hashMoves(moves: Int32Array, n: number): number {
  let h = 0;
  for (let m = 0; m < n; m++) h = (h + moveHash(moves[2 * m]!, moves[2 * m + 1]!)) >>> 0;
  return h;
}
