/**
 * CRC-32 (the zlib/PNG one) of data of any size: node:zlib's crc32 fed in chunks (one call on a
 * view of 2 GiB or more is not something to rely on), and the CRC of a run of zero bytes computed
 * without the bytes, for bodies with holes (a table given as pieces, the rest zero).
 */
import { crc32 } from 'node:zlib';

export const CRC_CHUNK_BYTES = 2 ** 26;

/** CRC-32 of `data` continued from `crc` (0 for a fresh one). */
export function crc32Of(data: Uint8Array, crc = 0): number {
  let c = crc;
  for (let at = 0; at < data.length; at += CRC_CHUNK_BYTES) c = crc32(data.subarray(at, Math.min(data.length, at + CRC_CHUNK_BYTES)), c);
  return c;
}

/**
 * CRC-32 of `crc`'s data followed by `length` zero bytes, in O(log length): appending zeros is a
 * linear map on the 32-bit register, so its matrix for 2^j bytes is squared up from one byte,
 * as zlib's crc32_combine does.
 */
export function crc32Zeros(crc: number, length: number): number {
  if (length <= 0) return crc >>> 0;
  // The register before the final XOR: zlib pre- and post-inverts, zeros act on the inverted value.
  let reg = ~crc >>> 0;
  let op = ONE_ZERO_BYTE;
  for (let n = length; n > 0; n = Math.floor(n / 2)) {
    if (n % 2 === 1) reg = apply(op, reg);
    op = square(op);
  }
  return ~reg >>> 0;
}

/** A GF(2) 32x32 matrix as its 32 columns: column i is the image of bit i. */
type Matrix = Uint32Array;

function apply(m: Matrix, v: number): number {
  let out = 0;
  for (let i = 0; v !== 0; i++, v >>>= 1) if (v & 1) out ^= m[i]!;
  return out >>> 0;
}

function square(m: Matrix): Matrix {
  return m.map((column) => apply(m, column));
}

/** One zero byte: eight shifts of the reflected register with the polynomial 0xedb88320. */
const ONE_ZERO_BYTE: Matrix = (() => {
  const bit = new Uint32Array(32);
  bit[0] = 0xedb88320;
  for (let i = 1; i < 32; i++) bit[i] = 1 << (i - 1);
  let m: Matrix = bit;
  for (let i = 0; i < 3; i++) m = square(m); // 2, 4, 8 bits
  return m;
})();
