/**
 * The in-memory solves a sharded, band or cluster solve must equal (counts, start value, table
 * CRC-32), clean rules, from test-vectors/in-memory-tables.json: solve.test.ts checks that the
 * in-memory solve gives them (7x7/2 and 4x4/6 on every backend, 7x7/3 on a native one), so the
 * other test files need not solve them again.
 */
import { readFileSync } from 'node:fs';
import type { SolveResult } from '../../src/index.js';

export type Table = ReturnType<typeof sameTable>;

const file = JSON.parse(readFileSync(new URL('../../../../test-vectors/in-memory-tables.json', import.meta.url), 'utf8')) as {
  tables: Record<string, Omit<Table, 'crc'> & { crc: string }>;
};
/** By "board/pieces": 7/2, 4/6 and 7/3. */
export const IN_MEMORY: ReadonlyMap<string, Table> = new Map(Object.entries(file.tables).map(([k, t]) => [k, { ...t, crc: Number(t.crc) }]));

/** What two solves of one variant must share. */
export function sameTable(r: SolveResult) {
  return { positions: r.positions, p1Wins: r.p1Wins, p2Wins: r.p2Wins, draws: r.draws, illegal: r.illegal, start: r.start as string, crc: r.tableCrc32 };
}
