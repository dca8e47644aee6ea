/**
 * Queries and progress: always playing the chosen move, for both sides, from the start position
 * ends the game with the proven result in the number of plies of docs/rules.md section 8; with
 * distances computed on demand, and with distances stored in the database (on-demand computation
 * then disabled, so that only the stored ones can be used).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Position, applyMove, startPosition, toWords, variant } from '@ccheckers/core';
import { afterAll, describe, expect, it } from 'vitest';
import { SolvedGame, availableBackends, readDatabase, solve } from '../src/index.js';

const dir = mkdtempSync(join(tmpdir(), 'ccheckers-play-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const [backend] = await availableBackends();

async function solvedGame(pieces: number, stored: boolean): Promise<SolvedGame> {
  const out = join(dir, `7x7-${pieces}${stored ? '-distances' : ''}.ccdb`);
  await solve({ variant: variant(7, pieces), rules: 'clean', backend: backend!, threads: 2, out, distances: stored });
  const db = readDatabase(out);
  expect(db.distances !== undefined).toBe(stored);
  return new SolvedGame(db, stored ? 0 : undefined);
}

describe.each([
  [1, 25, 'computed'],
  [2, 33, 'computed'],
  [1, 25, 'stored'],
  [2, 33, 'stored'],
])('7x7 with %i piece(s), distances %s', (pieces, plies, distances) => {
  it(`best play from the start: P1 wins in ${plies} plies`, async () => {
    const game = await solvedGame(pieces, distances === 'stored');
    const v = variant(7, pieces);
    let p: Position = startPosition(v);
    const first = game.analyse(p);
    expect(first.outcome).toBe('win');
    expect(first.pliesToEnd).toBe(plies);
    let played = 0;
    for (let info = first; !info.terminal; info = game.analyse(p)) {
      // The side to move keeps its proven value and the distance shrinks by exactly one ply.
      expect(info.outcome).toBe(played % 2 === 0 ? 'win' : 'loss');
      expect(info.pliesToEnd).toBe(plies - played);
      expect(info.best).toBeDefined();
      const chosen = info.moves.find((m) => m.move.from === info.best!.from && m.move.to === info.best!.to)!;
      expect(chosen.outcome).toBe(info.outcome);
      p = applyMove(p, info.best!);
      played++;
      expect(played).toBeLessThanOrEqual(plies);
    }
    expect(played).toBe(plies);
    expect(game.engine.hasWon(0, toWords(p))).toBe(true); // P1 filled its goal
  });
});

describe('distances explored up to distanceLimit', () => {
  /** Counts the explorations of `game` (its private computeDistances). */
  function explorations(game: SolvedGame): () => number {
    let explored = 0;
    const spy = game as unknown as { computeDistances: (...a: unknown[]) => unknown };
    const original = spy.computeDistances.bind(game);
    spy.computeDistances = (...a) => (explored++, original(...a));
    return () => explored;
  }

  it('a give-up is recorded; with retryAfterGivingUp off, later positions are not explored again', async () => {
    const out = join(dir, '7x7-1-limited.ccdb');
    await solve({ variant: variant(7, 1), rules: 'clean', backend: backend!, threads: 1, out });
    const start = startPosition(variant(7, 1));
    const next = applyMove(start, new SolvedGame(readDatabase(out)).analyse(start).best!);
    // 7x7/1's start reaches more than 100 positions: given up, and explored again by default.
    const retried = new SolvedGame(readDatabase(out), 100);
    const retries = explorations(retried);
    expect(retried.analyse(start)).toMatchObject({ outcome: 'win' });
    expect(retried.analyse(start).pliesToEnd).toBeUndefined();
    expect(retried.gaveUp).toBe(true);
    retried.analyse(next);
    expect(retries()).toBe(3);
    retried.retryAfterGivingUp = false;
    expect(retried.analyse(next).pliesToEnd).toBeUndefined();
    expect(retries()).toBe(3);
    // Within the bound nothing is given up, and the reachable set is kept for later positions.
    const whole = new SolvedGame(readDatabase(out));
    const explored = explorations(whole);
    whole.retryAfterGivingUp = false;
    expect(whole.analyse(start).pliesToEnd).toBe(25);
    expect(whole.analyse(next).pliesToEnd).toBe(24);
    expect(explored()).toBe(1);
    expect(whole.gaveUp).toBe(false);
  });
});
