/**
 * `ccheckers check`: every checksum verified by streaming the file, the counts recounted from the
 * body, and a header with wrong counts (as 7x7/4 databases written before the 64-bit fix have)
 * rewritten atomically with --fix. Also: the solve's refusal of tables past 4 GiB.
 */
import { copyFileSync, lstatSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOSS, WIN, readValue } from '@ccheckers/core';
import { IO_CHUNK_BYTES, readDatabase, writeDatabase } from '@ccheckers/solver';
import { run, runHooked } from './support/run-cli.js';

const dir = mkdtempSync(join(tmpdir(), 'ccheckers-check-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const good = join(dir, '7x7-2.ccdb');
/** 7x7/2's start, P1 to move. */
const START = `xx${'.'.repeat(45)}oo x`;
const wrong = join(dir, 'wrong-counts.ccdb');

beforeAll(() => {
  const r = run(['solve', '--board', '7', '--pieces', '2', '--out', good, '--quiet']);
  expect(r.status, r.stderr).toBe(0);
  // The same table under a header whose counts are wrong but add up (what `i >>> 2` produced on
  // 7x7/4: illegal 0), and a wrong start value.
  const db = readDatabase(good);
  const h = db.header;
  writeDatabase(wrong, { ...h, p1Wins: h.p1Wins + h.illegal / 2, p2Wins: h.p2Wins + h.illegal / 2, illegal: 0, startValue: 1 }, db.table);
});

describe('check', () => {
  it('passes a sound database: every checksum, and with --recount the counts', () => {
    const r = run(['check', '--db', good, '--recount']);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^header\s+128\s+0x[0-9a-f]{8}\s+0x[0-9a-f]{8}\s+ok$/m);
    expect(r.stdout).toMatch(/^body\s+317,814\s+0x0b785a50\s+0x0b785a50\s+ok$/m);
    expect(r.stdout).toMatch(/^pass log\s+[\d,]+\s+.*ok$/m);
    expect(r.stdout).toMatch(/^illegal\s+10,810\s+10,810\s+ok$/m);
    expect(r.stdout).toMatch(/the header agrees with the body/);
  });

  it('reports wrong counts (exit 1), rewrites them with --fix, and then passes', () => {
    const before = readFileSync(wrong);
    const found = run(['check', '--db', wrong, '--recount', '--json']);
    expect(found.status).toBe(1);
    const report = JSON.parse(found.stdout);
    expect(report.checksums.every((c: { ok: boolean }) => c.ok)).toBe(true);
    expect(report.recount).toMatchObject({ illegal: 10_810, p1Wins: 1_265_851, start: 'p1-win', headerAgrees: false, fixed: false });
    expect(report.recount.header).toMatchObject({ illegal: 0, start: 'p2-win' });
    expect(readFileSync(wrong).equals(before)).toBe(true); // a check alone changes nothing

    const fixed = run(['check', '--db', wrong, '--fix']);
    expect(fixed.status, fixed.stderr).toBe(0);
    expect(fixed.stdout).toMatch(/^illegal\s+0\s+10,810\s+WRONG$/m);
    expect(fixed.stdout).toMatch(/has been rewritten with the recounted values/);
    // Only the header changed: now the same bytes as the sound database's, body and log untouched.
    expect(readFileSync(wrong).equals(readFileSync(good))).toBe(true);
    expect(run(['check', '--db', wrong, '--recount']).status).toBe(0);
  });

  it('a header whose farthest distance is not its distance table\'s: WRONG, mended by --fix', () => {
    const withDistances = join(dir, 'distances.ccdb');
    expect(run(['solve', '--board', '7', '--pieces', '2', '--distances', '--out', withDistances, '--quiet']).status).toBe(0);
    const db = readDatabase(withDistances);
    expect(db.header.maxDistance).toBeGreaterThan(10);
    const sound = run(['check', '--db', withDistances, '--recount', '--json']);
    expect(sound.status, sound.stderr).toBe(0);
    expect(JSON.parse(sound.stdout).recount).toMatchObject({ maxDistance: db.header.maxDistance, headerAgrees: true });
    // Checksums recomputed: only a recount of the distance table finds it.
    const forged = join(dir, 'forged-distance.ccdb');
    writeDatabase(forged, { ...db.header, maxDistance: 250 }, db.table, db.distances);
    const found = run(['check', '--db', forged, '--recount']);
    expect(found.status).toBe(1);
    expect(found.stdout).toMatch(new RegExp(`^farthest \\(plies\\)\\s+250\\s+${db.header.maxDistance}\\s+WRONG$`, 'm'));
    expect(run(['check', '--db', forged]).status).toBe(0); // its checksums are sound
    expect(run(['check', '--db', forged, '--fix']).status).toBe(0);
    expect(readFileSync(forged).equals(readFileSync(withDistances))).toBe(true);
  });

  it('a distance table that does not fit its values (checksums recomputed): WRONG, not --fix-ed, and no query answers from it', () => {
    const withDistances = join(dir, 'distances-2.ccdb');
    expect(run(['solve', '--board', '7', '--pieces', '2', '--distances', '--out', withDistances, '--quiet']).status).toBe(0);
    const db = readDatabase(withDistances);
    const distances = db.distances!;
    // Every byte 252 (a checkpoint's mark, past the farthest distance): the header's farthest
    // distance left as it was, so a recount that skipped such bytes would "fix" the header to 0.
    const marks = join(dir, 'marks.ccdb');
    writeDatabase(marks, db.header, db.table, new Uint8Array(distances.length).fill(252));
    const before = readFileSync(marks);
    const found = run(['check', '--db', marks, '--recount', '--json']);
    expect(found.status).toBe(1);
    expect(JSON.parse(found.stdout).recount).toMatchObject({ wrongDistances: distances.length, firstWrongDistance: { index: 0, distance: 252 } });
    const fix = run(['check', '--db', marks, '--fix']);
    expect(fix.status).toBe(1);
    expect(fix.stderr).toContain(`not fixing ${marks}: its distance table is wrong`);
    expect(fix.stdout).toMatch(/^distances WRONG: 1,271,256 state\(s\) whose distance does not fit their value/m);
    expect(readFileSync(marks).equals(before)).toBe(true);
    const query = run(['query', '--db', marks, START]);
    expect(query.status).toBe(2);
    expect(query.stderr).toMatch(/marks\.ccdb: stored state \d+ contradicts its children \(wrong-distance\)/);
    // One won state's distance made even, still below the farthest: found, and only it.
    const won = distances.findIndex((d, i) => readValue(db.table, i) === WIN && d >= 3);
    const parity = join(dir, 'parity.ccdb');
    const forged = Uint8Array.from(distances);
    forged[won] = distances[won]! - 1;
    writeDatabase(parity, db.header, db.table, forged);
    const one = run(['check', '--db', parity, '--recount', '--json']);
    expect(one.status).toBe(1);
    expect(JSON.parse(one.stdout).recount).toMatchObject({ wrongDistances: 1, firstWrongDistance: { index: won, value: 'win', distance: distances[won]! - 1 }, headerAgrees: true });
    // Every won state's distance 2 more, within the farthest: each fits its value, yet the start
    // (a win) is not one ply more than its nearest lost child: its query is refused.
    const shifted = Uint8Array.from(distances);
    for (let i = 0; i < shifted.length; i++) if (readValue(db.table, i) === WIN && shifted[i]! + 2 <= db.header.maxDistance) shifted[i] = shifted[i]! + 2;
    const shift = join(dir, 'shifted.ccdb');
    writeDatabase(shift, db.header, db.table, shifted);
    const shiftedQuery = run(['query', '--db', shift, START]);
    expect(shiftedQuery.status).toBe(2);
    expect(shiftedQuery.stderr).toMatch(/shifted\.ccdb: stored state \d+ contradicts its children \(wrong-distance\)/);
    // A header whose farthest distance reaches the marks: refused on opening, both sides of 251.
    for (const [farthest, status] of [[251, 0], [252, 2]] as const) {
      const path = join(dir, `farthest-${farthest}.ccdb`);
      writeDatabase(path, { ...db.header, maxDistance: farthest }, db.table, distances);
      const opened = run(['query', '--db', path, START]);
      expect(opened.status, opened.stderr).toBe(status);
      if (status === 2) expect(opened.stderr).toContain(`${path}: header says the farthest distance is 252 plies, past 251`);
    }
    // And the sound table passes, state by state.
    const sound = run(['check', '--db', withDistances, '--recount', '--json']);
    expect(sound.status, sound.stderr).toBe(0);
    expect(JSON.parse(sound.stdout).recount.wrongDistances).toBe(0);
  });

  it('a distance table past one read chunk (7x7/3, 141 million states): each distance checked against its own value on both sides of a chunk boundary', () => {
    const big = join(dir, '7x7-3-distances.ccdb');
    const solved = run(['solve', '--board', '7', '--pieces', '3', '--distances', '--out', big, '--quiet']);
    expect(solved.status, solved.stderr).toBe(0);
    const db = readDatabase(big);
    const distances = db.distances!;
    expect(distances.length).toBeGreaterThan(2 * IO_CHUNK_BYTES);
    // The last decided state before the boundary and the first after it: each made the other parity.
    const decided = (i: number) => readValue(db.table, i) === WIN || readValue(db.table, i) === LOSS;
    let before = IO_CHUNK_BYTES - 1;
    while (!decided(before)) before--;
    let after = IO_CHUNK_BYTES;
    while (!decided(after)) after++;
    const forged = Uint8Array.from(distances);
    for (const i of [before, after]) forged[i] = distances[i]! === 0 ? 1 : distances[i]! - 1;
    const path = join(dir, '7x7-3-forged.ccdb');
    writeDatabase(path, db.header, db.table, forged);
    const r = run(['check', '--db', path, '--recount', '--json']);
    expect(r.status).toBe(1);
    expect(JSON.parse(r.stdout).recount).toMatchObject({ wrongDistances: 2, firstWrongDistance: { index: before, distance: forged[before] }, headerAgrees: true });
    rmSync(big);
    rmSync(path);
  }, 240_000);

  it('--fix through a symbolic link repairs the file it points to and keeps the link', () => {
    const target = join(dir, 'wrong-again.ccdb');
    const db = readDatabase(good);
    writeDatabase(target, { ...db.header, illegal: 0, draws: db.header.draws + db.header.illegal }, db.table);
    const link = join(dir, 'link.ccdb');
    symlinkSync(target, link);
    const r = run(['check', '--db', link, '--fix']);
    expect(r.status, r.stderr).toBe(0);
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(readFileSync(target).equals(readFileSync(good))).toBe(true);
  });

  it('a checkpoint: the counts its table holds so far, not a verdict on a header without counts', () => {
    const out = join(dir, 'stopped.ccdb');
    const stopped = runHooked({ killAfterPass: 1 }, ['solve', '--board', '7', '--pieces', '2', '--out', out, '--threads', '1', '--quiet', '--checkpoint-minutes', '0']);
    expect(stopped.signal).toBe('SIGKILL');
    const r = run(['check', '--db', `${out}.ckpt`, '--recount']);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/counts {4}not recorded in a file at stage checkpoint \(an unfinished solve\)/);
    expect(r.stdout).not.toMatch(/WRONG|agrees/);
  });

  it('finds a flipped body byte (exit 1) and will not --fix a corrupt body', () => {
    const flipped = join(dir, 'flipped.ccdb');
    copyFileSync(good, flipped);
    const bytes = readFileSync(flipped);
    bytes[128 + 1000]! ^= 0x40;
    writeFileSync(flipped, bytes);
    const r = run(['check', '--db', flipped, '--fix']);
    expect(r.status).toBe(1);
    expect(r.stdout).toMatch(/^body\s+317,814\s+0x[0-9a-f]{8}\s+0x0b785a50\s+MISMATCH$/m);
    expect(r.stderr).toMatch(/not fixing .*flipped\.ccdb: a checksum does not match/);
    expect(readFileSync(flipped).equals(bytes)).toBe(true);
    // A query of a small database checks the body when it opens it.
    const q = run(['query', '--db', flipped, `xx${'.'.repeat(45)}oo x`]);
    expect(q.status).toBe(2);
    expect(q.stderr).toMatch(/corrupt body: checksum/);
  });

  it('names the file and the problem for what is not a database', () => {
    const r = run(['check', '--db', dir]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(`${dir}: is a directory, not a database file`);
    const missing = run(['check', '--db', join(dir, 'none.ccdb')]);
    expect(missing.status).toBe(2);
    expect(missing.stderr).toMatch(/none\.ccdb: cannot read the file \(ENOENT\)/);
  });
});

describe('solve past the in-memory limit', () => {
  it('refuses 7x7/5 before allocating anything, naming its memory, the memory here and the way that fits', () => {
    const r = run(['solve', '--board', '7', '--pieces', '5']);
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/7x7\/5 needs 241\.\d GiB, this machine has [\d.]+ [GMT]iB: use --store DIR --memory SIZE/);
  });
});
