/**
 * Messages a user meets on the way (issue 35), through the real binary: convert onto itself, a
 * full disk in convert and check --fix, local-cluster.sh without an option's value, play from an
 * illegal position or with the other side to move, and show --db.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readDatabase, writeDatabase } from '@ccheckers/solver';
import { run, runHooked } from './support/run-cli.js';

const dir = mkdtempSync(join(tmpdir(), 'ccheckers-messages-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const START_7x7_2 = `xx${'.'.repeat(45)}oo x`;
const db2 = join(dir, '7x7-2.ccdb');
const db1 = join(dir, '7x7-1.ccdb');
const db46 = join(dir, '4x4-6.ccdb');
const store2 = join(dir, '7x7-2.store');

/** A folder's files and their bytes, to see that nothing in it changed. */
function snapshot(folder: string): Record<string, string> {
  return Object.fromEntries(readdirSync(folder).sort().map((f) => [f, readFileSync(join(folder, f)).toString('base64')]));
}

beforeAll(() => {
  for (const [board, pieces, out] of [['7', '2', db2], ['7', '1', db1], ['4', '6', db46]] as const) {
    const r = run(['solve', '--board', board, '--pieces', pieces, '--out', out, '--threads', '1', '--quiet']);
    expect(r.status, r.stderr).toBe(0);
  }
  const r = run(['convert', db2, store2, '--shards', '4']);
  expect(r.status, r.stderr).toBe(0);
});

describe('convert onto itself', () => {
  it('a database file: says the source and the target are the same path (exit 2), the file untouched', () => {
    const before = readFileSync(db1);
    const link = join(dir, 'link-to-7x7-1.ccdb');
    symlinkSync(db1, link);
    for (const args of [[db1, db1], [db1, `${dir}/./7x7-1.ccdb`], [db1, db1, '--force'], [db1, link, '--force'], [db1, db1, '--shards', '2']]) {
      const r = run(['convert', ...args]);
      expect(r.status, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(/^ccheckers: the source and the target are the same path \(.*7x7-1\.ccdb\): convert writes a new file or store beside it\n$/);
      expect(r.stderr).not.toMatch(/--store/);
      expect(readFileSync(db1).equals(before)).toBe(true);
    }
  });

  it('a store: the same message (exit 2), the store untouched', () => {
    const before = snapshot(store2);
    const link = join(dir, 'link-to-store');
    symlinkSync(store2, link);
    for (const args of [[store2, store2], [store2, `${store2}/`], [store2, link], [store2, store2, '--force']]) {
      const r = run(['convert', ...args]);
      expect(r.status, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(/^ccheckers: the source and the target are the same path \(.*7x7-2\.store\): convert writes a new file or store beside it\n$/);
      expect(snapshot(store2)).toEqual(before);
    }
  });
});

describe('a full disk: advice that fits the command', () => {
  it('convert to a store: nothing replaced, the source as it was, no unfinished store left, no --resume', () => {
    const before = readFileSync(db2);
    const target = join(dir, 'full.store');
    const r = runHooked({ diskFullAfterBytes: 200_000 }, ['convert', db2, target, '--shards', '4']);
    expect(r.status, r.stderr).toBe(2);
    expect(r.stderr).not.toMatch(/--resume/);
    expect(r.stderr).toContain(`ccheckers: no space left on the disk (ENOSPC): convert stopped; ${db2} is as it was, and nothing was replaced. Free some space and run the command again\n`);
    expect(readFileSync(db2).equals(before)).toBe(true);
    // The store was made beside the target and removed: nothing to clear before trying again.
    expect(readdirSync(dir).filter((f) => f.startsWith('full.store'))).toEqual([]);
    expect(run(['convert', db2, target, '--shards', '4']).status).toBe(0);
  });

  it('convert to a file: nothing replaced, the file at the target as it was, no --resume', () => {
    const target = join(dir, 'full.ccdb');
    writeFileSync(target, 'an older export\n');
    const r = runHooked({ diskFullAfterBytes: 0 }, ['convert', store2, target, '--force']);
    expect(r.status, r.stderr).toBe(2);
    expect(r.stderr).toBe(`ccheckers: no space left on the disk (ENOSPC): convert stopped; ${store2} is as it was, and nothing was replaced. Free some space and run the command again\n`);
    expect(readFileSync(target, 'utf8')).toBe('an older export\n');
    expect(readdirSync(dir).filter((f) => f.includes('.tmp-'))).toEqual([]);
  });

  it('check --fix: the file was not changed, no --resume', () => {
    const wrong = join(dir, 'wrong-counts.ccdb');
    const db = readDatabase(db2);
    const h = db.header;
    writeDatabase(wrong, { ...h, p1Wins: h.p1Wins + h.illegal / 2, p2Wins: h.p2Wins + h.illegal / 2, illegal: 0 }, db.table);
    const before = readFileSync(wrong);
    const r = runHooked({ diskFullAfterBytes: 0 }, ['check', '--db', wrong, '--fix', '--quiet']);
    expect(r.status, r.stderr).toBe(2);
    expect(r.stderr).toBe(`ccheckers: no space left on the disk (ENOSPC): check --fix stopped; ${wrong} was not changed. Free some space and run the command again\n`);
    expect(readFileSync(wrong).equals(before)).toBe(true);
  });
});

describe('scripts/local-cluster.sh', () => {
  const script = fileURLToPath(new URL('../../../scripts/local-cluster.sh', import.meta.url));
  it.each([[['2', '--store']], [['2', '--store', 'x', '--port']], [['2', '--store', 'x', '--threads']], [['2', '--store', '--port', '6391']]])('%j: a usage message, exit 2', (args) => {
    const r = spawnSync('bash', [script, ...args], { encoding: 'utf8', cwd: dir });
    expect(r.status).toBe(2);
    expect(r.stderr).not.toMatch(/unbound variable/);
    expect(r.stderr).toMatch(/^local-cluster\.sh: --\w+ needs a value\nusage: scripts\/local-cluster\.sh W --store DIR \[--port P\] \[--threads N\] \| stop\n$/);
  });
});

describe('play --from', () => {
  it('refuses an illegal position, saying why (exit 2)', () => {
    // x to move, and x has already won (Def. 2).
    const won = run(['play', '--db', db1, '--from', `o${'.'.repeat(47)}x x`], {}, '');
    expect(won.status).toBe(2);
    expect(won.stdout).toBe('');
    expect(won.stderr).toBe(
      `ccheckers: --from o${'.'.repeat(47)}x x is an illegal position: x (P1) is to move but has already won, and only the player who just moved can have won (docs/rules.md section 4)\n`,
    );
    // 4x4/6: P1's goal (cell 15) blocked by o on 14, 13, 12 and 10 (Def. 3).
    for (const toMove of ['x', 'o']) {
      const blocked = run(['play', '--db', db46, '--from', `xxxxxx...oooooo. ${toMove}`], {}, '');
      expect(blocked.status).toBe(2);
      expect(blocked.stdout).toBe('');
      expect(blocked.stderr).toBe(
        `ccheckers: --from xxxxxx...oooooo. ${toMove} is an illegal position: the goal of x (P1) is blocked, cell 15 empty and cells 14, 13, 12 and 10 held by o (P2) (docs/rules.md section 4)\n`,
      );
    }
  });

  it('with o to move: says that ccheckers moves first, and it does; --as o moves first itself', () => {
    const oToMove = `x${'.'.repeat(47)}o o`;
    const asX = run(['play', '--db', db1, '--from', oToMove], {}, 'quit\n');
    expect(asX.status, asX.stderr).toBe(0);
    const firstX = asX.stdout.split('\n')[0]!;
    expect(firstX).toMatch(/^7x7\/1: you play x \(P1\); ccheckers plays o \(P2\) and moves first\./);
    expect(asX.stdout).toMatch(/ccheckers plays \d+-\d+[^]*your move> /);
    expect(asX.stdout.indexOf('ccheckers plays ')).toBeLessThan(asX.stdout.indexOf('your move> '));

    const asO = run(['play', '--db', db1, '--from', oToMove, '--as', 'o'], {}, 'quit\n');
    expect(asO.status, asO.stderr).toBe(0);
    expect(asO.stdout.split('\n')[0]).toMatch(/^7x7\/1: you play o \(P2\) and move first\./);
    expect(asO.stdout).not.toMatch(/ccheckers plays/);

    // From the initial position as o: x moves first, and the message says so.
    const start = run(['play', '--db', db1, '--as', 'o'], {}, 'quit\n');
    expect(start.stdout.split('\n')[0]).toMatch(/^7x7\/1: you play o \(P2\); ccheckers plays x \(P1\) and moves first\./);
    expect(start.stdout.indexOf('ccheckers plays ')).toBeLessThan(start.stdout.indexOf('your move> '));
    const startX = run(['play', '--db', db1], {}, 'quit\n');
    expect(startX.stdout.split('\n')[0]).toMatch(/^7x7\/1: you play x \(P1\) and move first\./);
  });
});

describe('show --db', () => {
  it('draws the position and gives its value and best move from a database or a store', () => {
    for (const db of [db2, store2]) {
      const r = run(['show', START_7x7_2, '--db', db]);
      expect(r.status, r.stderr).toBe(0);
      expect(r.stdout.split('\n').slice(0, 3)).toEqual(['      x', '     x .', '    . . .']);
      expect(r.stdout).toMatch(/^7x7\/2, x \(P1\) to move, 5 legal moves\nvalue     x \(P1\) to move wins in 33 plies\nbest      0-3\n$/m);
    }
  });

  it('says why a position is illegal, with --db or without', () => {
    for (const more of [[], ['--db', db1]]) {
      const r = run(['show', `o${'.'.repeat(47)}x x`, ...more]);
      expect(r.status, r.stderr).toBe(0);
      expect(r.stdout).toMatch(/^7x7\/1, x \(P1\) to move, illegal: x \(P1\) is to move but has already won, and only the player who just moved can have won \(docs\/rules\.md section 4\)$/m);
    }
  });

  it('refuses a position of another variant, and --rules other than the database\'s (exit 2)', () => {
    const other = run(['show', `x${'.'.repeat(47)}o x`, '--db', db2]);
    expect(other.status).toBe(2);
    expect(other.stderr).toMatch(/the position is 7x7\/1 but .* solves 7x7\/2/);
    const rules = run(['show', START_7x7_2, '--db', db2, '--rules', 'published']);
    expect(rules.status).toBe(2);
    expect(rules.stderr).toMatch(/--rules published, but .*7x7-2\.ccdb was solved under the clean rules/);
    expect(run(['show', START_7x7_2, '--db', db2, '--rules', 'clean']).status).toBe(0);
  });
});
