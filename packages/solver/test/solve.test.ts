/**
 * The solver against RULES.md section 8, on every backend this machine loads, with 1 and 2
 * threads: counts, start value, identical tables (CRC), and the database written to disk.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { variant } from '@ccheckers/core';
import { afterAll, describe, expect, it } from 'vitest';
import { availableBackends, readDatabase, solve } from '../src/index.js';

const dir = mkdtempSync(join(tmpdir(), 'ccheckers-solve-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** RULES.md section 8 (positions = all legal and illegal positions of the full game). */
const EXPECTED = {
  1: { positions: 4_704, p1Wins: 2_304, p2Wins: 2_304, draws: 0, illegal: 96, start: 'p1-win' },
  2: { positions: 2_542_512, p1Wins: 1_265_851, p2Wins: 1_265_851, draws: 0, illegal: 10_810, start: 'p1-win' },
} as const;

const backends = await availableBackends();
const crcs = new Map<number, Set<number>>();
/** Single-threaded pass logs (states proven per pass), per piece count: the proof order is shared. */
const singleThreadLogs = new Map<number, Set<string>>();

describe.each(backends.map((b) => [b.name, b] as const))('solve on %s', (_name, backend) => {
  for (const pieces of [1, 2] as const) {
    for (const threads of [1, 2]) {
      it(`7x7 with ${pieces} piece(s), ${threads} thread(s): RULES.md counts`, async () => {
        const r = await solve({ variant: variant(7, pieces), rules: 'clean', backend, threads });
        expect({ positions: r.positions, p1Wins: r.p1Wins, p2Wins: r.p2Wins, draws: r.draws, illegal: r.illegal, start: r.start }).toEqual(
          EXPECTED[pieces],
        );
        expect(r.positions).toBe(r.p1Wins + r.p2Wins + r.draws + r.illegal);
        expect(r.passLog.length).toBe(r.passes);
        expect(r.passLog.at(-1)!.newlyProven).toBe(0);
        if (!crcs.has(pieces)) crcs.set(pieces, new Set());
        crcs.get(pieces)!.add(r.tableCrc32);
        if (threads === 1) {
          if (!singleThreadLogs.has(pieces)) singleThreadLogs.set(pieces, new Set());
          singleThreadLogs.get(pieces)!.add(JSON.stringify(r.passLog.map((p) => p.newlyProven)));
        }
      });
    }
  }
});

describe('across backends', () => {
  it('every backend and thread count produced the same table', () => {
    expect(backends.length).toBeGreaterThan(0);
    for (const pieces of [1, 2]) expect(crcs.get(pieces)?.size).toBe(1);
  });

  it('single-threaded, every backend proves the same states in each pass (same proof order)', () => {
    for (const pieces of [1, 2]) expect(singleThreadLogs.get(pieces)?.size).toBe(1);
  });

  it('the proof order works: 7x7/2 proves over 99% of what its passes prove in pass 1', () => {
    // 99.9% with the proof order and revisits; a broken order proves a few percent per pass.
    const newly = JSON.parse([...singleThreadLogs.get(2)!][0]!) as number[];
    expect(newly[0]! / newly.reduce((sum, n) => sum + n, 0)).toBeGreaterThan(0.99);
  });

  it('writes a complete database whose header holds the counts and the table checksum', async () => {
    const out = join(dir, '7x7-2.ccdb');
    const r = await solve({ variant: variant(7, 2), rules: 'clean', backend: backends[0]!, threads: 2, out });
    const db = readDatabase(out);
    expect(db.header).toMatchObject({
      board: 7,
      pieces: 2,
      rules: 'clean',
      stage: 'complete',
      positions: EXPECTED[2].positions,
      p1Wins: EXPECTED[2].p1Wins,
      illegal: EXPECTED[2].illegal,
      passes: r.passes,
      bodyCrc32: r.tableCrc32,
    });
    expect(db.header.passLog).toEqual(r.passLog);
  });
});

it('the published rule mode differs only for 6 pieces: 7x7/2 gives the same table', async () => {
  const clean = await solve({ variant: variant(7, 2), rules: 'clean', backend: backends[0]!, threads: 2 });
  const published = await solve({ variant: variant(7, 2), rules: 'published', backend: backends[0]!, threads: 2 });
  expect(published.tableCrc32).toBe(clean.tableCrc32);
  expect(published.p1Wins).toBe(EXPECTED[2].p1Wins);
});
