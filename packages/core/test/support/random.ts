/** Deterministic pseudo-random numbers (core's seededRandom) and random positions for tests. */
import { type Position, seededRandom } from '../../src/index.js';

export const rng = seededRandom;

/** A uniformly random placement of k pieces per side on n cells, either side to move. */
export function randomPosition(random: () => number, n: number, k: number): Position {
  const cells = Array.from({ length: n }, (_, i) => i);
  for (let i = 0; i < 2 * k; i++) {
    const j = i + Math.floor(random() * (n - i));
    [cells[i], cells[j]] = [cells[j]!, cells[i]!];
  }
  let p1 = 0n;
  let p2 = 0n;
  for (let i = 0; i < k; i++) p1 |= 1n << BigInt(cells[i]!);
  for (let i = k; i < 2 * k; i++) p2 |= 1n << BigInt(cells[i]!);
  return { p1, p2, toMove: random() < 0.5 ? 0 : 1 };
}
