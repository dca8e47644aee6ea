/**
 * Addressing the 2-bit value table (layout in state-space.ts): stored state `index` lives in
 * byte floor(index / 4), bits 2 * (index mod 4) and up.
 *
 * Indexes reach 1.6e10 on 7x7/4 and 1e12 on 7x7/6, past 2^32, so nothing here shifts an index:
 * `index >>> 2` wraps modulo 2^32 and silently reads another state (the bug of issue 18). The
 * division is exact for every index below 2^53. `index & 3` stays right: ToInt32 keeps the low
 * 32 bits of an integer, so its two lowest bits are those of the index.
 */
import type { TableBytes } from './table-bytes.js';

/** Byte of the table that holds stored state `index`. */
export function stateByte(index: number): number {
  return Math.floor(index / 4);
}

/** Bit offset of stored state `index` within its byte. */
export function stateShift(index: number): number {
  return (index & 3) << 1;
}

/** The value code of stored state `index` in `byte`, the table's byte stateByte(index). */
export function valueInByte(byte: number, index: number): number {
  return (byte >>> stateShift(index)) & 3;
}

/** 2-bit value code of stored state `index` (of a table of any size: TableBytes past 4 GiB). */
export function readValue(table: Uint8Array | TableBytes, index: number): number {
  const at = stateByte(index);
  return valueInByte(table instanceof Uint8Array ? table[at]! : table.get(at), index);
}

/** The unknown states (value 0) among stored states [from, to) of `table`. */
export function unknownStates(table: Uint8Array, from: number, to: number): number {
  let count = 0;
  let i = from;
  // State by state up to a 16-state boundary, then 32-bit words (16 states each) where the
  // table's bytes allow a word view, then state by state again.
  for (; i < to && i % 16 !== 0; i++) count += readValue(table, i) === 0 ? 1 : 0;
  const words = Math.floor((to - i) / 16);
  if (words > 0 && (table.byteOffset + stateByte(i)) % 4 === 0) {
    const view = new Uint32Array(table.buffer, table.byteOffset + stateByte(i), words);
    for (let w = 0; w < words; w++) {
      const x = view[w]!;
      // A bit per state whose two bits are both 0.
      let z = ~(x | (x >>> 1)) & 0x55555555;
      z = (z & 0x33333333) + ((z >>> 2) & 0x33333333);
      z = (z + (z >>> 4)) & 0x0f0f0f0f;
      count += Math.imul(z, 0x01010101) >>> 24;
    }
    i += words * 16;
  }
  for (; i < to; i++) count += readValue(table, i) === 0 ? 1 : 0;
  return count;
}

/**
 * The longest typed array, in bytes: at most 2^32 elements in Node 20 (V8 11), however large its
 * ArrayBuffer. Tables past it are TableBytes (table-bytes.ts), read through several views; what
 * still takes one typed array (readDatabase's Uint8Array, a band of a store) stays below it.
 */
export const MAX_TYPED_ARRAY_BYTES = 2 ** 32;
