/**
 * Bit primitives on unsigned 32-bit words. JavaScript has no 64-bit integer type fast enough for
 * hot paths (BigInt is ~100x slower), so every bitboard is kept as 32-bit halves.
 */

/** Number of set bits. */
export function popcount32(x: number): number {
  x -= (x >>> 1) & 0x55555555;
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  x = (x + (x >>> 4)) & 0x0f0f0f0f;
  return Math.imul(x, 0x01010101) >>> 24;
}

/** Trailing zeros; 32 for 0. */
export function ctz32(x: number): number {
  return x === 0 ? 32 : 31 - Math.clz32(x & -x);
}

/** Clear the lowest set bit (x86 `blsr`). */
export function blsr32(x: number): number {
  return (x & (x - 1)) >>> 0;
}

/**
 * Software `pext`: gather the bits of x selected by mask into the low bits of the result.
 * One iteration per set bit of the mask, so it is fast for the sparse per-cell jump masks.
 */
export function pext32(x: number, mask: number): number {
  let result = 0;
  let out = 1;
  while (mask !== 0) {
    const low = mask & -mask;
    if (x & low) result |= out;
    out <<= 1;
    mask ^= low;
  }
  return result >>> 0;
}

/** Software `pdep`: scatter the low bits of x to the positions of the set bits of mask. */
export function pdep32(x: number, mask: number): number {
  let result = 0;
  let bit = 1;
  while (mask !== 0) {
    const low = mask & -mask;
    if (x & bit) result |= low;
    bit <<= 1;
    mask ^= low;
  }
  return result >>> 0;
}
