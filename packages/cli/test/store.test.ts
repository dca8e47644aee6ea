/**
 * `solve --store`, `check --db DIR`, `convert` and queries on stores, through the real binary:
 * the table of the in-memory solve, kill -9 at any save then --resume, and damaged stores refused
 * with the file named and exit 2 (check: exit 1, every shard listed).
 */
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run, runHooked } from './support/run-cli.js';

const dir = mkdtempSync(join(tmpdir(), 'ccheckers-store-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const START = `xx${'.'.repeat(45)}oo x`;
let expectedCrc: number;

beforeAll(() => {
  const r = run(['solve', '--board', '7', '--pieces', '2', '--threads', '1', '--json', '--quiet']);
  expect(r.status, r.stderr).toBe(0);
  expectedCrc = JSON.parse(r.stdout).tableCrc32;
});

const solveStore = (store: string, ...more: string[]) => run(['solve', '--board', '7', '--pieces', '2', '--store', store, '--threads', '1', '--json', ...more]);

describe('solve --store', () => {
  it('says how the budget is split, and ends with the in-memory table', () => {
    const store = join(dir, 'budget');
    const r = solveStore(store, '--memory', '17.2M');
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/--memory 17\.2 MiB: \d+ bands of up to [\d.]+ KiB, one held at a time, \+ [\d.]+ MiB of messages in memory/);
    const out = JSON.parse(r.stdout);
    expect(out).toMatchObject({ tableCrc32: expectedCrc, p1Wins: 1_265_851, illegal: 10_810, start: 'p1-win', store: { passes: 'bands' } });
    expect(out.store.shards).toBeGreaterThan(1);
    expect(out.passLog[0].messages).toBeGreaterThan(0);
    expect(r.stdout).not.toMatch(/blockShards/);
  });

  it('with --passes tiles: blocks of shards, the others streamed, the same table', () => {
    const store = join(dir, 'tiles');
    const r = solveStore(store, '--shards', '6', '--memory', '16.2M', '--passes', 'tiles');
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/--memory 16\.2 MiB: 6 shards of up to [\d.]+ KiB; a pass holds blocks of \d shards .* and streams the others through one more/);
    const out = JSON.parse(r.stdout);
    expect(out).toMatchObject({ tableCrc32: expectedCrc, p1Wins: 1_265_851, illegal: 10_810, start: 'p1-win', store: { passes: 'tiles', shards: 6 } });
    expect(out.passLog[0].bytesWritten).toBeGreaterThan(0);
    expect(run(['solve', '--board', '7', '--pieces', '2', '--store', join(dir, 'never'), '--passes', 'rows']).stderr).toMatch(/--passes must be "bands" or "tiles" \(got "rows"\)/);
  });

  it('refuses a budget too small for a band and its messages, naming the minimum (exit 2)', () => {
    const r = solveStore(join(dir, 'small'), '--shards', '2', '--memory', '16M');
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/--memory 16\.0 MiB is too small for 7x7\/2 in 2 bands of up to .*: a band pass holds one band, 1\.0 MiB of messages and .* in all/);
    expect(existsSync(join(dir, 'small'))).toBe(false);
    const tiles = solveStore(join(dir, 'small'), '--shards', '2', '--memory', '16M', '--passes', 'tiles');
    expect(tiles.status).toBe(2);
    expect(tiles.stderr).toMatch(/--memory 16\.0 MiB is too small for 7x7\/2 in 2 shards of up to .*: a pass holds at least two shards plus .* in all/);
  });

  it('killed with SIGKILL after any save, resumes to the same table', () => {
    // Band passes (5 bands: saves 1-5 are init, then a save per band and pass), and tiles.
    for (const [save, passes] of [
      [3, 'bands'],
      [8, 'bands'],
      [17, 'bands'],
      [8, 'tiles'],
    ] as const) {
      const store = join(dir, `killed-${save}-${passes}`);
      const killed = runHooked({ killAfterSave: save }, [
        'solve',
        '--board',
        '7',
        '--pieces',
        '2',
        '--store',
        store,
        '--shards',
        '5',
        '--memory',
        '17.5M',
        '--passes',
        passes,
        '--threads',
        '1',
        '--quiet',
      ]);
      expect(killed.signal).toBe('SIGKILL');
      expect(existsSync(join(store, 'manifest.json'))).toBe(true);
      const again = solveStore(store);
      expect(again.status).toBe(2);
      expect(again.stderr).toMatch(/already holds a store: use --resume/);
      const resumed = solveStore(store, '--resume', '--memory', '17.5M');
      expect(resumed.status, resumed.stderr).toBe(0);
      expect(resumed.stderr).toMatch(/resumed from .* after pass \d+/);
      expect(JSON.parse(resumed.stdout).tableCrc32).toBe(expectedCrc);
      expect(readdirSync(store).filter((f) => f.includes('.tmp-'))).toEqual([]);
    }
  });
});

describe('solve --store on a full disk', () => {
  it('stops with what to do (exit 2), keeps every save, and --resume ends with the same table', () => {
    const store = join(dir, 'full-disk');
    const args = ['solve', '--board', '7', '--pieces', '2', '--store', store, '--shards', '5', '--memory', '17.5M', '--threads', '1', '--quiet'];
    const full = runHooked({ diskFullAfterBytes: 700_000 }, args);
    expect(full.status, full.stderr).toBe(2);
    expect(full.stderr).toMatch(/^ccheckers: no space left on the disk \(ENOSPC\): what was saved before is intact; free some space and run the same command again \(a solve with --resume continues from its last save\)$/m);
    const saved = JSON.parse(readFileSync(join(store, 'manifest.json'), 'utf8'));
    expect(saved.stage).toBe('passes');
    const resumed = run([...args, '--resume', '--json']);
    expect(resumed.status, resumed.stderr).toBe(0);
    expect(JSON.parse(resumed.stdout).tableCrc32).toBe(expectedCrc);
    expect(readdirSync(store).filter((f) => f.includes('.tmp-') || f.startsWith('msg-') || f.startsWith('band-'))).toEqual([]);
  });

  it('names a --store path through a file', () => {
    const file = join(dir, 'a-file');
    writeFileSync(file, 'not a folder\n');
    const r = solveStore(join(file, 'store'));
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(`--store ${join(file, 'store')}: cannot make the folder: a part of its path is a file, not a folder`);
  });
});

describe('a solved store', () => {
  const store = join(dir, 'solved');
  beforeAll(() => {
    expect(solveStore(store, '--shards', '4').status).toBe(0);
  });

  it('answers queries like its single-file export, and converts back', () => {
    const file = join(dir, 'solved.ccdb');
    expect(run(['convert', store, file]).status).toBe(0);
    const fromStore = run(['query', '--db', store, START, '--json']);
    const fromFile = run(['query', '--db', file, START, '--json']);
    expect(fromStore.status, fromStore.stderr).toBe(0);
    expect(fromStore.stdout).toBe(fromFile.stdout);
    const back = join(dir, 'back');
    expect(run(['convert', file, back, '--shards', '3']).status).toBe(0);
    const checked = run(['check', '--db', back, '--recount', '--json']);
    expect(checked.status, checked.stdout).toBe(0);
    expect(JSON.parse(checked.stdout)).toMatchObject({ stage: 'complete', table: { ok: true }, recount: { manifestAgrees: true, p1Wins: 1_265_851 } });
  });

  it('with a flipped byte in one shard: check lists it (exit 1), a query names the file (exit 2)', () => {
    const copy = join(dir, 'flipped');
    expect(run(['convert', join(dir, 'solved.ccdb'), copy, '--shards', '4']).status).toBe(0);
    const manifest = JSON.parse(readFileSync(join(copy, 'manifest.json'), 'utf8'));
    const shard = join(copy, manifest.shards[1].file);
    const bytes = readFileSync(shard);
    bytes[5]! ^= 1;
    writeFileSync(shard, bytes);
    const checked = run(['check', '--db', copy]);
    expect(checked.status).toBe(1);
    expect(checked.stdout).toMatch(/^0 .* ok$/m);
    expect(checked.stdout).toMatch(/^1 .*corrupt shard 1: checksum 0x[0-9a-f]{8} but the manifest records/m);
    // A recount needs every shard: it says why it was not made.
    const recounted = run(['check', '--db', copy, '--recount']);
    expect(recounted.status).toBe(1);
    expect(recounted.stdout).toMatch(/^counts {4}not recounted: not every shard could be read$/m);
    const queried = run(['query', '--db', copy, START]);
    expect(queried.status).toBe(2);
    expect(queried.stderr).toContain(`${shard}: corrupt shard 1`);
    expect(readFileSync(shard)).toEqual(bytes); // nothing rewritten
  });

  it('of another variant is refused by solve --resume, naming the manifest (exit 2)', () => {
    const r = run(['solve', '--board', '7', '--pieces', '3', '--store', store, '--resume']);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/manifest\.json is a store of 7x7\/2 \(clean\), not 7x7\/3 \(clean\)/);
  });
});
