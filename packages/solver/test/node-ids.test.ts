/** The node ids of a query's exploration (node-ids.ts): a flat array, or a hash table past it. */
import { describe, expect, it } from 'vitest';
import { DENSE_IDS_UP_TO, NodeIds } from '../src/node-ids.js';

describe('node ids', () => {
  it('the hash table answers as a Map does, through its growths, for indices on both sides of 2^32 and up to 2^53', () => {
    const ids = new NodeIds(2 ** 40, 0);
    const reference = new Map<number, number>();
    let x = 7;
    const next = () => (x = (Math.imul(x, 1103515245) + 12345) >>> 0);
    const keys: number[] = [0, 1, 2 ** 32 - 1, 2 ** 32, 2 ** 32 + 1, 2 ** 40, Number.MAX_SAFE_INTEGER - 1];
    // Clusters of neighbours, as the children of one group are, and keys that share their low 32 bits.
    for (let i = 0; i < 200_000; i++) keys.push(i % 3 === 0 ? next() : i % 3 === 1 ? 2 ** 32 * (next() % 1024) + (next() % 64) : 5_000_000 + i);
    keys.forEach((key, i) => {
      if (!reference.has(key)) {
        expect(ids.get(key)).toBe(-1);
        ids.set(key, i);
        reference.set(key, i);
      }
    });
    ids.set(keys[3]!, 99); // a key set again keeps one slot
    reference.set(keys[3]!, 99);
    for (const [key, id] of reference) expect(ids.get(key)).toBe(id);
    for (let i = 0; i < 10_000; i++) {
      const absent = 2 ** 45 + next();
      expect(ids.get(absent)).toBe(reference.get(absent) ?? -1);
    }
  });

  it('a flat array up to DENSE_IDS_UP_TO states', () => {
    const ids = new NodeIds(1000);
    expect(ids.get(999)).toBe(-1);
    ids.set(999, 5);
    expect(ids.get(999)).toBe(5);
    expect(DENSE_IDS_UP_TO).toBe(2 ** 25);
  });
});
