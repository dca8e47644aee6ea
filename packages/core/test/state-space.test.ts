import { describe, expect, it } from 'vitest';
import { StateSpace, WORDS, unrankSet, variant } from '../src/index.js';

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
