/**
 * The backend-neutral position: bit c of p1 / p2 is a piece of P1 / P2 on cell c (docs/rules.md
 * numbering). BigInt keeps the public API simple and exact for 81 cells; hot paths use words.
 */
import { bitboardFromBigInt, bitboardToBigInt, cellsOf } from '../bits/bitboard.js';
import type { Side, WordPosition } from '../engine/engine.js';

export type { Side } from '../engine/engine.js';

export interface Position {
  readonly p1: bigint;
  readonly p2: bigint;
  readonly toMove: Side;
}

/** A move of one piece from one cell to another (step or jump chain). */
export interface Move {
  readonly from: number;
  readonly to: number;
}

export function toWords(p: Position): WordPosition {
  return { p1: bitboardFromBigInt(p.p1), p2: bitboardFromBigInt(p.p2), toMove: p.toMove };
}

export function fromWords(p: WordPosition): Position {
  return { p1: bitboardToBigInt(p.p1), p2: bitboardToBigInt(p.p2), toMove: p.toMove };
}

export function cellsOfSet(b: bigint): number[] {
  return cellsOf(bitboardFromBigInt(b));
}

export function setOfCells(cells: Iterable<number>): bigint {
  let b = 0n;
  for (const c of cells) b |= 1n << BigInt(c);
  return b;
}

/** The position after `move` by the side to move (no legality check). */
export function applyMove(p: Position, move: Move): Position {
  const flip = (1n << BigInt(move.from)) | (1n << BigInt(move.to));
  return p.toMove === 0
    ? { p1: p.p1 ^ flip, p2: p.p2, toMove: 1 }
    : { p1: p.p1, p2: p.p2 ^ flip, toMove: 0 };
}

export function samePosition(a: Position, b: Position): boolean {
  return a.p1 === b.p1 && a.p2 === b.p2 && a.toMove === b.toMove;
}
