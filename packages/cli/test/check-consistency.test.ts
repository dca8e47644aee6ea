/**
 * `ccheckers check --consistency`: exit 0 and a summary when every stored state agrees with the
 * rules and its children, exit 1 with the first mismatches as positions when one does not (in a
 * file whose checksums are right), exit 2 for bad input.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LOSS, readValue } from '@ccheckers/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readDatabase, writeDatabase } from '@ccheckers/solver';
import { run } from './support/run-cli.js';

const dir = mkdtempSync(join(tmpdir(), 'ccheckers-consistency-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const good = join(dir, '7x7-1.ccdb');
const bad = join(dir, 'planted.ccdb');
let planted = 0;

beforeAll(() => {
  const r = run(['solve', '--board', '7', '--pieces', '1', '--distances', '--out', good, '--quiet']);
  expect(r.status, r.stderr).toBe(0);
  // A lost state (not terminal) made a win, the checksums recomputed.
  const db = readDatabase(good);
  for (planted = 0; readValue(db.table, planted) !== LOSS || db.distances![planted] === 0; planted++);
  const i = planted;
  db.table[i >>> 2] = (db.table[i >>> 2]! & ~(3 << ((i & 3) * 2))) | (2 << ((i & 3) * 2));
  writeDatabase(bad, db.header, db.table, db.distances);
});

describe('check --consistency', () => {
  it('passes a sound database: every state, a full proof with distances (exit 0)', () => {
    const r = run(['check', '--db', good, '--consistency', '--threads', '2']);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^variant {6}7x7\/1, clean rules, database with distances$/m);
    expect(r.stdout).toMatch(/^checked {6}all 1,344 stored states; 2 threads, held whole/m);
    expect(r.stdout).toMatch(/^classes {6}won [\d,]+, lost [\d,]+ \(terminal 26, every move illegal 0\), drawn 0, illegal 48$/m);
    expect(r.stdout).toMatch(/^result {7}every state checked agrees .* a full proof of the table$/m);
  });

  it('--json and --sample', () => {
    const r = run(['check', '--db', good, '--consistency', '--sample', '100', '--json']);
    expect(r.status, r.stderr).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(report).toMatchObject({ board: 7, pieces: 1, distances: true, checked: 100, states: 1_344, mismatches: 0, first: [], sample: { size: 100 } });
  });

  it('finds a planted error that every checksum passes (exit 1), printed as a position with what was expected', () => {
    // Every checksum is right, and so are the counts (a loss made a win: decided either way); a
    // recount finds it by its distance alone (a loss's, even, on a win).
    const recount = run(['check', '--db', bad, '--recount', '--json']);
    expect(recount.status).toBe(1);
    expect(JSON.parse(recount.stdout).recount).toMatchObject({ headerAgrees: true, wrongDistances: 1, firstWrongDistance: { index: planted, value: 'win' } });
    const r = run(['check', '--db', bad, '--consistency', '--threads', '1']);
    expect(r.status, r.stderr).toBe(1);
    expect(r.stdout).toMatch(/^result {7}\d+ MISMATCH/m);
    expect(r.stdout).toMatch(new RegExp(`^state ${planted.toLocaleString('en-US')} {2}[xo.]{49} x\\n {2}problem {3}win-without-lost-child\\n {2}stored {4}win in \\d+\\n {2}expected {2}loss in \\d+: none of the \\d+ legal moves leads to a loss for o$`, 'm'));
    const json = JSON.parse(run(['check', '--db', bad, '--consistency', '--json']).stdout);
    expect(json.mismatches).toBeGreaterThan(0);
    expect(json.first.length).toBeLessThanOrEqual(10);
    expect(json.first.map((m: { index: number }) => m.index)).toContain(planted);
    // A query of that very position is refused: its own state is judged against its children.
    const position = (json.first as Array<{ index: number; position: string }>).find((m) => m.index === planted)!.position;
    const query = run(['query', '--db', bad, position]);
    expect(query.status).toBe(2);
    expect(query.stderr).toContain(`${bad}: stored state ${planted} contradicts its children (win-without-lost-child)`);
    expect(run(['query', '--db', good, position]).status).toBe(0);
  });

  it('bad input exits 2', () => {
    for (const args of [
      ['--consistency', '--sample', '0'],
      ['--consistency', '--sample', 'many'],
      ['--consistency', '--threads', '0'],
      ['--consistency', '--fix'],
      ['--threads', '2'],
      ['--consistency', '--memory', '1K'],
    ]) {
      const r = run(['check', '--db', good, ...args]);
      expect(r.status, `${args.join(' ')}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toMatch(/^ccheckers: /);
    }
    expect(run(['check', '--db', join(dir, 'absent.ccdb'), '--consistency']).status).toBe(2);
    const checkpoint = join(dir, 'checkpoint.ccdb');
    const db = readDatabase(good);
    writeDatabase(checkpoint, { ...db.header, stage: 'checkpoint' }, db.table);
    const r = run(['check', '--db', checkpoint, '--consistency']);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/only a complete database can be checked/);
  });
});
