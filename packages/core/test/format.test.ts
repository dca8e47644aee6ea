import { describe, expect, it } from 'vitest';
import { formatPosition, parsePosition, PositionFormatError, startPosition, variant } from '../src/index.js';

describe('position text format', () => {
  it('parses and prints the 4x4/3 start position', () => {
    const { variant: v, position } = parsePosition('xxx..........ooo x');
    expect(v.name).toBe('4x4/3');
    expect(position).toEqual(startPosition(variant(4, 3)));
    expect(formatPosition(v, position)).toBe('xxx..........ooo x');
  });

  it('accepts whitespace and / between rows', () => {
    const { position } = parsePosition(' x/xx/.../..../.../oo/o   o ');
    expect(position.toMove).toBe(1);
    expect(formatPosition(variant(4, 3), position)).toBe('xxx..........ooo o');
  });

  const bad: Array<[string, RegExp]> = [
    ['xxx..........ooo', /side to move/],
    ['xxx...........oo x', /unequal piece counts: 3 'x' \(P1\) and 2 'o'/],
    ['xxx.........ooo x', /15 cells/],
    ['xxq..........ooo x', /unexpected character "q" at cell 2/],
    ['xxxx.........ooo x', /unequal piece counts: 4 'x' \(P1\) and 3 'o'/],
    ['xxxxx......ooooo x', /unsupported variant/],
    ['.'.repeat(100) + ' x', /100 cells/],
    ['', /side to move/],
  ];
  for (const [text, message] of bad) {
    it(`rejects ${JSON.stringify(text.slice(0, 24))} with a clear message`, () => {
      expect(() => parsePosition(text)).toThrow(PositionFormatError);
      expect(() => parsePosition(text)).toThrow(message);
    });
  }
});
