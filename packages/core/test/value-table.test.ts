import { describe, expect, it } from 'vitest';
import { readValue, seededRandom, stateByte, stateShift, unknownStates } from '../src/index.js';

/** The obvious count, state by state. */
function naiveUnknown(table: Uint8Array, from: number, to: number): number {
  let n = 0;
  for (let i = from; i < to; i++) if (readValue(table, i) === 0) n++;
  return n;
}

describe('unknownStates', () => {
  it('counts value-0 states of any range, at any byte offset of the buffer, as the state-by-state count', () => {
    const random = seededRandom(7);
    const buffer = new Uint8Array(4100);
    // Mostly known, some bytes all unknown, some mixed: every kind of 32-bit word.
    for (let i = 0; i < buffer.length; i++) buffer[i] = random() < 0.2 ? 0 : random() < 0.5 ? 0x55 : Math.floor(random() * 256);
    for (const offset of [0, 1, 2, 3]) {
      const table = buffer.subarray(offset, offset + 4096);
      for (let trial = 0; trial < 300; trial++) {
        const from = Math.floor(random() * 16384);
        const to = from + Math.floor(random() * (16384 - from + 1));
        expect(unknownStates(table, from, to)).toBe(naiveUnknown(table, from, to));
      }
      expect(unknownStates(table, 0, 16384)).toBe(naiveUnknown(table, 0, 16384));
      expect(unknownStates(table, 100, 100)).toBe(0);
    }
  });

  it('reads the right states on both sides of 2^32 (a 2-bit table of 1 GiB and more)', () => {
    // A zero-filled buffer costs nothing until written: only the bytes around state 2^32 are.
    const table = new Uint8Array(2 ** 30 + 64);
    const around = 2 ** 32;
    for (let i = around - 100; i < around + 100; i++) table[stateByte(i)] = 0xff;
    for (const i of [around - 33, around - 1, around, around + 1, around + 17, around + 40]) table[stateByte(i)]! &= ~(3 << stateShift(i));
    expect(unknownStates(table, around - 64, around + 64)).toBe(6);
    expect(unknownStates(table, around, around + 64)).toBe(4);
    expect(unknownStates(table, around - 64, around)).toBe(2);
    expect(unknownStates(table, around - 64, around + 64)).toBe(naiveUnknown(table, around - 64, around + 64));
  });
});
