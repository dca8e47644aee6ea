import { describe, expect, it } from 'vitest';
import { ILLEGAL, LOSS, MAX_DISTANCE, NO_DISTANCE, StateSpace, UNKNOWN, WIN, WORDS, distanceFits, unrankSet, variant } from '../src/index.js';

describe('StateSpace.passOrder (the solver proof order)', () => {
  for (const [m, k] of [[4, 3], [5, 6], [7, 3]] as const) {
    it(`${m}x${m}/${k}: a permutation of the P2 placements, by total row of P2, ties by rank`, () => {
      const v = variant(m, k);
      const space = new StateSpace(v);
      const order = space.passOrder;
      expect(order.length).toBe(space.p1Placements);
      expect(new Set(order).size).toBe(order.length);
      const set = new Uint32Array(WORDS);
      const distance = (u: number): number => {
        unrankSet(u, k, v.cells, set);
        let sum = 0;
        for (let c = 0; c < v.cells; c++) if ((set[c >>> 5]! >>> (c & 31)) & 1) sum += v.geometry.rowOf[c]!;
        return sum;
      };
      // P2 nearest its goal (P1's start, rows 0..) comes first.
      expect(order[0]).toBe(0);
      for (let i = 1; i < order.length; i++) {
        const [d0, d1] = [distance(order[i - 1]!), distance(order[i]!)];
        expect(d0 < d1 || (d0 === d1 && order[i - 1]! < order[i]!)).toBe(true);
      }
      expect(space.passOrder).toBe(order); // built once
    });
  }
});

describe('distanceFits', () => {
  it('takes a lost state at an even distance, a won one at an odd one (up to the farthest), others at NO_DISTANCE', () => {
    const cases: Array<[number, number, number, boolean]> = [
      [LOSS, 0, 37, true],
      [LOSS, 36, 37, true],
      [LOSS, 1, 37, false],
      [LOSS, 38, 37, false],
      [WIN, 1, 37, true],
      [WIN, 37, 37, true],
      [WIN, 2, 37, false],
      [WIN, 39, 37, false],
      [WIN, MAX_DISTANCE, MAX_DISTANCE, true],
      [UNKNOWN, NO_DISTANCE, 37, true],
      [UNKNOWN, 5, 37, false],
      [ILLEGAL, NO_DISTANCE, 37, true],
      [ILLEGAL, 0, 37, false],
    ];
    for (const [value, d, farthest, fits] of cases) expect(distanceFits(value, d, farthest), `${value} ${d} ${farthest}`).toBe(fits);
    // A table being laid holds marks above MAX_DISTANCE: never a finished table's.
    for (const mark of [252, 253, 254]) for (const value of [UNKNOWN, LOSS, WIN, ILLEGAL]) expect(distanceFits(value, mark)).toBe(false);
  });
});
