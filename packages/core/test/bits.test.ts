import { describe, expect, it } from 'vitest';
import {
  bitboardFromBigInt,
  bitboardToBigInt,
  blsr32,
  ctz32,
  pdep,
  pdep32,
  pext,
  pext32,
  popcount32,
} from '../src/index.js';
import { rng } from './support/random.js';

function naivePext(x: bigint, mask: bigint): bigint {
  let r = 0n;
  let k = 0n;
  for (let i = 0n; i < 96n; i++) {
    if ((mask >> i) & 1n) {
      if ((x >> i) & 1n) r |= 1n << k;
      k++;
    }
  }
  return r;
}

function naivePdep(x: bigint, mask: bigint): bigint {
  let r = 0n;
  let k = 0n;
  for (let i = 0n; i < 96n; i++) {
    if ((mask >> i) & 1n) {
      if ((x >> k) & 1n) r |= 1n << i;
      k++;
    }
  }
  return r;
}

describe('bit primitives', () => {
  it('32-bit popcount, ctz, blsr', () => {
    expect(popcount32(0)).toBe(0);
    expect(popcount32(0xffffffff)).toBe(32);
    expect(ctz32(0)).toBe(32);
    expect(ctz32(0x80000000)).toBe(31);
    expect(blsr32(0b1100)).toBe(0b1000);
    expect(blsr32(0x80000000)).toBe(0);
  });

  it('pext32/pdep32 equal the naive definition on random words and masks', () => {
    const random = rng(1);
    for (let i = 0; i < 20000; i++) {
      const x = Math.floor(random() * 2 ** 32);
      const density = random();
      let mask = 0;
      for (let b = 0; b < 32; b++) if (random() < density) mask |= 1 << b;
      mask >>>= 0;
      expect(BigInt(pext32(x, mask))).toBe(naivePext(BigInt(x), BigInt(mask)));
      expect(BigInt(pdep32(x, mask))).toBe(naivePdep(BigInt(x), BigInt(mask)));
    }
  });

  it('multi-word pext/pdep across 96 bits', () => {
    const random = rng(2);
    const word = () => BigInt(Math.floor(random() * 2 ** 32));
    for (let i = 0; i < 5000; i++) {
      const x = (word() << 64n) | (word() << 32n) | word();
      const mask = (word() << 64n) | (word() << 32n) | (word() & word());
      expect(bitboardToBigInt(pext(bitboardFromBigInt(x), bitboardFromBigInt(mask)))).toBe(naivePext(x, mask));
      expect(bitboardToBigInt(pdep(bitboardFromBigInt(x), bitboardFromBigInt(mask)))).toBe(naivePdep(x, mask));
    }
  });
});
