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

  it('reads a long run of separators once (no backtracking), and quotes a long input cut short', () => {
    // A position from a request to `serve` can be anything: 100,000 slashes took a backtracking
    // regular expression 6.6 s.
    const { position } = parsePosition(`xxx${'/'.repeat(100_000)}..........ooo${' /'.repeat(50_000)}x`);
    expect(formatPosition(variant(4, 3), position)).toBe('xxx..........ooo x');
    const long = `x${'/'.repeat(100_000)}q`;
    expect(() => parsePosition(long)).toThrow(`side to move ('x' or 'o'): "x${'/'.repeat(79)}" (and 99922 more characters)`);
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
