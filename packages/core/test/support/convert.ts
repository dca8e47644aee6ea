import { type Position, cellsOfSet } from '../../src/index.js';
import { EMPTY, P1, P2, type RefPosition } from './reference.js';

export function toReference(p: Position, n: number): RefPosition {
  const board = new Int8Array(n).fill(EMPTY);
  for (const c of cellsOfSet(p.p1)) board[c] = P1;
  for (const c of cellsOfSet(p.p2)) board[c] = P2;
  return { board, toMove: p.toMove === 0 ? 1 : 2 };
}
