/**
 * Per-variant masks used by the bitboard engine, as flat Uint32Arrays of WORDS words per cell:
 * neighbours (step targets), jumpOver and jumpTo (paired bit by bit), goals and the Def. 3
 * blocking patterns. Built from the geometry, never typed by hand.
 */
import { WORDS, bitboardOf, fullMask } from '../bits/bitboard.js';
import type { Variant } from '../geometry/variant.js';
import { type JumpMagicTables, jumpMagicTables } from './jump-magic.js';

export interface VariantTables {
  readonly cells: number;
  readonly pieces: number;
  readonly full: Uint32Array;
  /** neighbours[c * WORDS + w] */
  readonly neighbours: Uint32Array;
  readonly jumpOver: Uint32Array;
  readonly jumpTo: Uint32Array;
  /** Jump pairs unpacked for the fused kernel: pairStart[c] .. pairStart[c+1]. */
  readonly pairStart: Int32Array;
  readonly pairOver: Int32Array;
  readonly pairTo: Int32Array;
  /** Jumps by multiply and table lookup (the default kernel); null: use the pairs. */
  readonly jumpMagic: JumpMagicTables | null;
  /** goal[player * WORDS + w]: goal of P1 (player 0) and of P2 (player 1). */
  readonly goal: Uint32Array;
  /** Union of both start areas (the published-data exception looks at it). */
  readonly startAreas: Uint32Array;
  /** Def. 3 (k = 6): the goal tip of each player and the four blocking cells in front of it. */
  readonly blockTip: readonly [number, number];
  readonly blockCells: Uint32Array;
}

export function buildTables(v: Variant): VariantTables {
  const g = v.geometry;
  const n = g.cells;
  const neighbours = new Uint32Array(n * WORDS);
  const jumpOver = new Uint32Array(n * WORDS);
  const jumpTo = new Uint32Array(n * WORDS);
  const pairStart = new Int32Array(n + 1);
  const pairOver: number[] = [];
  const pairTo: number[] = [];
  for (let c = 0; c < n; c++) {
    neighbours.set(bitboardOf(g.neighbours[c]!), c * WORDS);
    const jumps = g.jumps[c]!;
    jumpOver.set(bitboardOf(jumps.map((j) => j.over)), c * WORDS);
    jumpTo.set(bitboardOf(jumps.map((j) => j.to)), c * WORDS);
    pairStart[c] = pairOver.length;
    for (const j of jumps) {
      pairOver.push(j.over);
      pairTo.push(j.to);
    }
  }
  pairStart[n] = pairOver.length;
  const goal = new Uint32Array(2 * WORDS);
  goal.set(bitboardOf(v.goal(0)), 0);
  goal.set(bitboardOf(v.goal(1)), WORDS);
  const blockCells = new Uint32Array(2 * WORDS);
  // P1's goal (bottom) is blocked by P2 on N-2, N-3, N-4, N-6 with N-1 empty; mirrored for P2.
  blockCells.set(bitboardOf([n - 2, n - 3, n - 4, n - 6]), 0);
  blockCells.set(bitboardOf([1, 2, 3, 5]), WORDS);
  return {
    cells: n,
    pieces: v.pieces,
    full: fullMask(n),
    neighbours,
    jumpOver,
    jumpTo,
    pairStart,
    pairOver: Int32Array.from(pairOver),
    pairTo: Int32Array.from(pairTo),
    jumpMagic: jumpMagicTables(g),
    goal,
    startAreas: bitboardOf([...v.p1Start, ...v.p2Start]),
    blockTip: [n - 1, 0],
    blockCells,
  };
}
