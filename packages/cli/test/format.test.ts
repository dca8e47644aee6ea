/** Plain-text number formatting (ui/format.ts): grouped digits as en-US writes them. */
import { describe, expect, it } from 'vitest';
import { grouped } from '../src/ui/format.js';

describe('grouped', () => {
  it('writes whole numbers as toLocaleString("en-US") does, both sides of each group of three', () => {
    const values = [0, 1, 9, 10, 99, 100, 999, 1000, 1001, 9999, 10_000, 99_999, 100_000, 999_999, 1_000_000, 141_219_540, 2 ** 32, 31_532_340_944, Number.MAX_SAFE_INTEGER];
    for (const n of values) {
      expect(grouped(n)).toBe(n.toLocaleString('en-US'));
      expect(grouped(-n)).toBe(n === 0 ? '0' : (-n).toLocaleString('en-US'));
      expect(grouped(BigInt(n))).toBe(BigInt(n).toLocaleString('en-US'));
    }
    expect(grouped(578_944_875_600n * 1000n)).toBe('578,944,875,600,000'); // past 2^53: a census's bigint
  });

  it('rounds fractions to the nearest whole number, and leaves numbers past 2^53 to toLocaleString', () => {
    expect(grouped(1234.4)).toBe('1,234');
    expect(grouped(1234.5)).toBe('1,235');
    expect(grouped(-0.4)).toBe('0');
    expect(grouped(2 ** 60)).toBe((2 ** 60).toLocaleString('en-US'));
    expect(grouped(Number.NaN)).toBe('NaN');
  });
});
