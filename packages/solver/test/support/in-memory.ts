/**
 * The in-memory solves a sharded or band solve must equal (table CRC-32, counts, start value),
 * made once per test file: 7x7/2 and 4x4/6, and 7x7/3 where the backend has native threads.
 */
import { type Backend, variant } from '@ccheckers/core';
import { type SolveResult, solve } from '../../src/index.js';

export async function inMemorySolves(backend: Backend): Promise<Map<string, SolveResult>> {
  const solves = new Map<string, SolveResult>();
  for (const [board, pieces] of [
    [7, 2],
    [4, 6],
  ] as const) {
    solves.set(`${board}/${pieces}`, await solve({ variant: variant(board, pieces), rules: 'clean', backend, threads: 1 }));
  }
  if (backend.kernelThreads) solves.set('7/3', await solve({ variant: variant(7, 3), rules: 'clean', backend, threads: 2 }));
  return solves;
}

/** What two solves of one variant must share. */
export function sameTable(r: SolveResult) {
  return { positions: r.positions, p1Wins: r.p1Wins, p2Wins: r.p2Wins, draws: r.draws, illegal: r.illegal, start: r.start, crc: r.tableCrc32 };
}
