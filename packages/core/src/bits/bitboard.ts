/**
 * Multi-word bitboards: bit c of word c >>> 5 is cell c. Three words cover the 81 cells of the
 * 9x9 board; smaller boards leave the upper words zero. The hot engine code reads the words into
 * locals; these helpers are for setup, conversions and tests.
 */
import { pdep32, pext32, popcount32 } from './bit32.js';

export const WORDS = 3;
export const MAX_CELLS = WORDS * 32;

export type Bitboard = Uint32Array;

export function emptyBitboard(): Bitboard {
  return new Uint32Array(WORDS);
}

export function bitboardOf(cells: Iterable<number>): Bitboard {
  const b = emptyBitboard();
  for (const c of cells) b[c >>> 5]! |= 1 << (c & 31);
  return b;
}

export function cellsOf(b: Bitboard): number[] {
  const out: number[] = [];
  for (let w = 0; w < WORDS; w++) {
    let x = b[w]!;
    while (x !== 0) {
      const low = x & -x;
      out.push(w * 32 + 31 - Math.clz32(low));
      x ^= low;
    }
  }
  return out;
}

export function sameBitboard(x: Bitboard, y: Bitboard): boolean {
  return x[0] === y[0] && x[1] === y[1] && x[2] === y[2];
}

/** A bitboard no placement equals (every cell, past the 81 of the largest board): the key of an
 *  empty cache. */
export function noPlacement(): Bitboard {
  return new Uint32Array(WORDS).fill(0xffffffff);
}

/**
 * out = { map[c] : c in b }: a set of cells carried by a cell permutation (the mirror, the
 * rotation, or both). The one loop behind the engine's mirror/rotate, the solver kernel's
 * mapped sets and the state space's mirror classes; `out` may be `b`.
 */
export function permuteSet(b: Bitboard, map: ArrayLike<number>, out: Bitboard): void {
  let o0 = 0;
  let o1 = 0;
  let o2 = 0;
  for (let w = 0; w < WORDS; w++) {
    let x = b[w]!;
    while (x !== 0) {
      const low = x & -x;
      x ^= low;
      const c = map[(w << 5) + 31 - Math.clz32(low)]!;
      const cw = c >>> 5;
      if (cw === 0) o0 |= 1 << (c & 31);
      else if (cw === 1) o1 |= 1 << (c & 31);
      else o2 |= 1 << (c & 31);
    }
  }
  out[0] = o0;
  out[1] = o1;
  out[2] = o2;
}

export function hasCell(b: Bitboard, c: number): boolean {
  return ((b[c >>> 5]! >>> (c & 31)) & 1) === 1;
}

export function popcount(b: Bitboard): number {
  return popcount32(b[0]!) + popcount32(b[1]!) + popcount32(b[2]!);
}

/** Mask of the first n cells. */
export function fullMask(n: number): Bitboard {
  const b = emptyBitboard();
  for (let w = 0; w < WORDS; w++) {
    const bits = Math.max(0, Math.min(32, n - 32 * w));
    b[w] = bits === 32 ? 0xffffffff : (1 << bits) - 1;
  }
  return b;
}

/** Multi-word pext: the selected bits of x, packed from bit 0 upwards. */
export function pext(x: Bitboard, mask: Bitboard): Bitboard {
  const out = emptyBitboard();
  let at = 0;
  for (let w = 0; w < WORDS; w++) {
    const m = mask[w]!;
    if (m === 0) continue;
    orShifted(out, pext32(x[w]!, m), at);
    at += popcount32(m);
  }
  return out;
}

/** Multi-word pdep: the low bits of x, spread to the set bits of mask. */
export function pdep(x: Bitboard, mask: Bitboard): Bitboard {
  const out = emptyBitboard();
  let at = 0;
  for (let w = 0; w < WORDS; w++) {
    const m = mask[w]!;
    if (m === 0) continue;
    out[w] = pdep32(bitsAt(x, at), m);
    at += popcount32(m);
  }
  return out;
}

/** 32 bits of b starting at bit `at`. */
function bitsAt(b: Bitboard, at: number): number {
  const w = at >>> 5;
  const s = at & 31;
  const lo = w < WORDS ? b[w]! >>> s : 0;
  const hi = s !== 0 && w + 1 < WORDS ? b[w + 1]! << (32 - s) : 0;
  return (lo | hi) >>> 0;
}

function orShifted(out: Bitboard, value: number, at: number): void {
  const w = at >>> 5;
  const s = at & 31;
  out[w]! |= value << s;
  if (s !== 0 && w + 1 < WORDS) out[w + 1]! |= value >>> (32 - s);
}

/** Bitboard <-> bigint, for the backend-neutral public API (never on hot paths). */
export function bitboardToBigInt(b: Bitboard): bigint {
  return (BigInt(b[2]!) << 64n) | (BigInt(b[1]!) << 32n) | BigInt(b[0]!);
}

export function bitboardFromBigInt(x: bigint): Bitboard {
  const b = emptyBitboard();
  b[0] = Number(x & 0xffffffffn);
  b[1] = Number((x >> 32n) & 0xffffffffn);
  b[2] = Number((x >> 64n) & 0xffffffffn);
  return b;
}
