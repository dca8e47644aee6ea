import { describe, expect, it } from 'vitest';
import { boardGeometry, supportedVariants, UnsupportedVariantError, variant } from '../src/index.js';
import { ReferenceGame } from './support/reference.js';

describe('board geometry (docs/rules.md section 1-2)', () => {
  it('7x7 cell 29: neighbours and single jumps of the bitboard paper', () => {
    const g = boardGeometry(7);
    expect(g.neighbours[29]).toEqual([22, 23, 28, 30, 34, 35]);
    expect(g.jumps[29]!.map((j) => [j.over, j.to])).toEqual([[22, 15], [23, 17], [30, 31], [35, 40]]);
  });

  it('4x4 test vectors', () => {
    const g = boardGeometry(4);
    expect(g.neighbours[0]).toEqual([1, 2]);
    expect(g.neighbours[4]).toEqual([1, 2, 3, 5, 7, 8]);
    expect(g.neighbours[6]).toEqual([3, 7, 10]);
    expect(g.neighbours[15]).toEqual([13, 14]);
    expect(g.jumps[6]!.map((j) => [j.over, j.to])).toEqual([[3, 1], [7, 8], [10, 13]]);
  });

  it('row starts and tips match the drawings', () => {
    expect(boardGeometry(7).rowStart).toEqual([0, 1, 3, 6, 10, 15, 21, 28, 34, 39, 43, 46, 48]);
    expect(boardGeometry(5).rowStart).toEqual([0, 1, 3, 6, 10, 15, 19, 22, 24]);
    for (const m of [2, 3, 4, 5, 6, 7, 9]) {
      const g = boardGeometry(m);
      expect(g.xOf[0]).toBe(m - 1);
      expect(g.xOf[g.cells - 1]).toBe(m - 1);
    }
  });

  for (const m of [2, 3, 4, 5, 6, 7, 9]) {
    it(`${m}x${m}: neighbours and jumps equal the (row, column) reference; masks pair bit by bit`, () => {
      const g = boardGeometry(m);
      const ref = new ReferenceGame(m, m === 2 || m === 3 ? 1 : m === 5 ? 6 : 4);
      for (let c = 0; c < g.cells; c++) {
        expect(g.neighbours[c]).toEqual(ref.neighbours(c));
        const jumps = g.jumps[c]!.map((j) => [j.over, j.to]);
        expect(jumps).toEqual(ref.singleJumps(c));
        // Sorted by landing cell, the jumped-over cells must be sorted too (pext/pdep pairing).
        const overs = jumps.map((j) => j[0]!);
        expect(overs).toEqual([...overs].sort((a, b) => a - b));
      }
    });

    it(`${m}x${m}: mirror and rotation are involutions that preserve adjacency`, () => {
      const g = boardGeometry(m);
      for (let c = 0; c < g.cells; c++) {
        expect(g.mirror[g.mirror[c]!]).toBe(c);
        expect(g.rotate[g.rotate[c]!]).toBe(c);
        expect(g.rowOf[g.mirror[c]!]).toBe(g.rowOf[c]);
        const mapped = g.neighbours[c]!.map((d) => g.mirror[d]!).sort((a, b) => a - b);
        expect(mapped).toEqual(g.neighbours[g.mirror[c]!]);
      }
    });
  }
});

describe('variants (docs/rules.md section 3)', () => {
  it('start areas are rotations of each other', () => {
    expect(variant(7, 4).p2Start).toEqual([44, 46, 47, 48]);
    expect(variant(7, 5).p1Start).toEqual([1, 2, 3, 4, 5]);
    expect(variant(9, 7).p2Start).toEqual([72, 73, 75, 77, 78, 79, 80]);
    expect(supportedVariants()).toHaveLength(21);
  });

  it('unsupported sizes and piece counts throw a typed error naming the problem', () => {
    expect(() => variant(10, 3)).toThrow(UnsupportedVariantError);
    expect(() => variant(10, 3)).toThrow(/board size 10 is not supported/);
    expect(() => variant(7, 20)).toThrow(/7x7 board is defined for 1, 2, 3, 4, 5, 6 pieces per player, not 20/);
    expect(() => variant(8, 3)).toThrow(UnsupportedVariantError);
  });
});
