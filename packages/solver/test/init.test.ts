/**
 * The init phase of every backend's solver kernel: the same table on all, and its definition state
 * by state with the plain engine and indexer: illegal states ILLEGAL, terminal ones LOSS, and every
 * parent of a terminal state (and its mirror twin) already WIN -- a win in one -- unless it is
 * illegal or terminal itself, and no other state WIN. The passes rely on the wins: they stop a
 * state's visit at its first child that is not won, since a lost child has already made the state
 * won. (The kernels visit only the states init can decide: initSets.)
 */
import { BitboardEngine, ILLEGAL, LOSS, StateSpace, WIN, WORDS, type WordPosition, readValue, unrankSet, variant } from '@ccheckers/core';
import { describe, expect, it } from 'vitest';
import { StateIndexer, availableBackends } from '../src/index.js';

const backends = await availableBackends();
const VARIANTS: Array<[board: number, board2: number, pieces: number, rules: 'clean' | 'published']> = [
  [7, 7, 1, 'clean'],
  [7, 7, 2, 'clean'],
  [4, 4, 6, 'published'],
  [4, 4, 6, 'clean'],
];

describe.each(VARIANTS)('init, %ix%i with %i pieces (%s)', (board, _board, pieces, rules) => {
  const v = variant(board, pieces);
  const space = new StateSpace(v);
  const tables = backends.map((backend) => {
    const table = new Uint8Array(Math.ceil(space.states / 4));
    backend.solverKernel(v, rules).init(table, 0, space.groups, 2);
    return table;
  });

  it(`every backend writes the same table (${backends.map((b) => b.name).join(', ')})`, () => {
    for (const table of tables.slice(1)) expect(Buffer.compare(table, tables[0]!)).toBe(0);
  });

  it('illegal and terminal states, the parents of terminal states won and no other state, state by state', () => {
    const table = tables[0]!;
    const engine = new BitboardEngine(v, rules);
    const indexer = new StateIndexer(space, engine);
    const a = new Uint32Array(WORDS);
    const b = new Uint32Array(WORDS);
    const stored: WordPosition = { p1: a, p2: b, toMove: 0 };
    const parent: WordPosition = { p1: a, p2: new Uint32Array(WORDS), toMove: 1 };
    const moves = new Int32Array(2 * engine.maxMoves);
    const wrong: string[] = []; // collected, not asserted one by one (an expect per state is slow)
    const child: WordPosition = { p1: new Uint32Array(WORDS), p2: b, toMove: 1 };
    const fillsGoalAtOnce = (): boolean => {
      const count = engine.generate(a[0]!, a[1]!, a[2]!, a[0]! | b[0]!, a[1]! | b[1]!, a[2]! | b[2]!, moves);
      for (let i = 0; i < count; i++) {
        child.p1.set(a);
        child.p1[moves[2 * i]! >>> 5]! ^= 1 << (moves[2 * i]! & 31);
        child.p1[moves[2 * i + 1]! >>> 5]! ^= 1 << (moves[2 * i + 1]! & 31);
        if (engine.hasWon(0, child) && !engine.isIllegal(child)) return true;
      }
      return false;
    };
    let terminals = 0;
    let parents = 0;
    for (let index = 0; index < space.states; index++) {
      const group = Math.floor(index / space.p2Placements);
      unrankSet(space.rankOf[group]!, pieces, v.cells, a);
      engine.unrankP2(a, index - group * space.p2Placements, b);
      const value = readValue(table, index);
      const illegal = engine.isIllegal(stored);
      const terminal = !illegal && engine.isTerminal(stored);
      if ((value === ILLEGAL) !== illegal || (value === LOSS) !== terminal) wrong.push(`state ${index}: ${value}`);
      if (value === WIN && !fillsGoalAtOnce()) wrong.push(`state ${index}: WIN, but no move fills P1's goal`);
      if (!terminal) continue;
      terminals++;
      // Parents: P2 to move, one P2 move before (moves are reversible); in a mirror-symmetric
      // variant, the mirror image too (a different stored state where the placement is its own
      // mirror image, the same one elsewhere).
      const count = engine.generate(b[0]!, b[1]!, b[2]!, a[0]! | b[0]!, a[1]! | b[1]!, a[2]! | b[2]!, moves);
      for (let i = 0; i < count; i++) {
        parent.p2.set(b);
        parent.p2[moves[2 * i]! >>> 5]! ^= 1 << (moves[2 * i]! & 31);
        parent.p2[moves[2 * i + 1]! >>> 5]! ^= 1 << (moves[2 * i + 1]! & 31);
        if (engine.isIllegal(parent) || engine.isTerminal(parent)) continue;
        for (const p of v.mirrorSymmetric ? [parent, engine.mirrorPosition(parent)] : [parent]) {
          const at = indexer.index(p);
          if (readValue(table, at) !== WIN) wrong.push(`parent ${at} of terminal ${index}: ${readValue(table, at)}`);
        }
        parents++;
      }
    }
    expect(wrong.slice(0, 5)).toEqual([]);
    expect(terminals).toBeGreaterThan(0);
    expect(parents).toBeGreaterThan(0);
  });
});
