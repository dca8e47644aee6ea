/**
 * `solve --store`, `check --db DIR`, `convert` and queries on stores, through the real binary:
 * the table of the in-memory solve, kill -9 at any save then --resume, and damaged stores refused
 * with the file named and exit 2 (check: exit 1, every shard listed).
 */
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { manifestText } from '@ccheckers/solver';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, run, runHooked } from './support/run-cli.js';

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

  it('with --workers 3: rounds of 3 bands, the steps a cluster of 3 would run, the same table', () => {
    const r = solveStore(join(dir, 'workers'), '--shards', '6', '--workers', '3');
    expect(r.status, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out).toMatchObject({ tableCrc32: expectedCrc, p1Wins: 1_265_851, illegal: 10_810, start: 'p1-win', store: { passes: 'bands', shards: 6, workers: 3 } });
    expect(run(['solve', '--board', '7', '--pieces', '2', '--store', join(dir, 'never'), '--workers', '0']).stderr).toMatch(/--workers must be a positive integer \(got "0"\)/);
    expect(run(['solve', '--board', '7', '--pieces', '2', '--store', join(dir, 'never'), '--workers', '5000']).stderr).toMatch(/--workers must be at most 4096 \(got 5000\)/);
    // The tile passes of earlier versions are gone: --passes is an unknown option.
    expect(run(['solve', '--board', '7', '--pieces', '2', '--store', join(dir, 'never'), '--passes', 'tiles']).status).toBe(2);
    expect(existsSync(join(dir, 'never'))).toBe(false);
  });

  it('with --schedule shared: each band visited by W parts in slices at once, exchanging proofs, the same table', () => {
    const r = solveStore(join(dir, 'shared'), '--shards', '4', '--workers', '6', '--schedule', 'shared', '--slice-units', '2');
    expect(r.status, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out).toMatchObject({ tableCrc32: expectedCrc, store: { passes: 'bands', shards: 4, workers: 6, schedule: 'shared' } });
    // Proofs kept in pass 1 (segments in rounds for 6 lose most: docs/sharding.md).
    expect(out.passLog[0].proven / out.storedStates).toBeGreaterThan(0.9);
    // The parts' proof files and claims of slices go once their steps are committed.
    expect(readdirSync(join(dir, 'shared')).filter((f) => /^(proof|claim)-/.test(f))).toEqual([]);
    const refused = (more: string[], message: RegExp) => {
      const x = run(['solve', '--board', '7', '--pieces', '2', '--store', join(dir, 'never'), ...more]);
      expect(x.status, x.stderr).toBe(2);
      expect(x.stderr).toMatch(message);
    };
    refused(['--slice-units', '2'], /--slice-units needs shared steps: --schedule shared/);
    // A cluster's new store of 2 or more workers is shared by default; of 1 worker it is not (refused
    // before Redis is asked: nothing listens on port 1).
    refused(['--slice-units', '2', '--workers', '1', '--redis', 'redis://127.0.0.1:1'], /--slice-units needs shared steps/);
    refused(['--schedule', 'shared', '--slice-units', '0'], /--slice-units must be a positive integer \(got "0"\)/);
    refused(['--schedule', 'rings'], /--schedule must be one of segments, blocks, shared \(got "rings"\)/);
    // Here the 8 parts' copies of a band sized for --memory are more than it: more bands, smaller.
    refused(['--schedule', 'shared', '--workers', '8', '--memory', '17.2M'], /shared steps hold 8 workers' copies of a band here: .* more than --memory 17\.2 MiB; give --shards for smaller bands/);
    expect(existsSync(join(dir, 'never'))).toBe(false);
  });

  it('refuses a budget too small for a band and its messages, naming the minimum (exit 2)', () => {
    const r = solveStore(join(dir, 'small'), '--shards', '2', '--memory', '16M');
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/--memory 16\.0 MiB is too small for 7x7\/2 in 2 bands of up to .*: a band pass holds one band, 1\.0 MiB of messages and .* in all/);
    expect(existsSync(join(dir, 'small'))).toBe(false);
  });

  it('bounds --shards by the variant, saying the bound before any file is made, and takes the same --shards on --resume', () => {
    // 7x7/2 has 1,176 groups but a 310 KiB table: bands of 4 KiB at least, so 77 at most
    // (--shards 1000000000 made a band per group and 76,314 files in 5 minutes).
    for (const shards of ['78', '1000000000']) {
      const never = join(dir, `too-many-${shards}`);
      const r = run(['solve', '--board', '7', '--pieces', '2', '--store', never, '--shards', shards, '--threads', '1', '--json']);
      expect(r.status, r.stderr).toBe(2);
      expect(r.stderr).toMatch(new RegExp(`^ccheckers: --shards ${shards} is more than 7x7/2 takes: at most 77 \\(a band of 7x7/2 holds at least 4\\.0 KiB of its 310\\.4 KiB table\\)$`, 'm'));
      expect(existsSync(never)).toBe(false);
    }
    // 4x4/3: 20.5 KiB, at most 5 bands; 5 are taken (stopped at the first save).
    const bands = join(dir, 'bounded-bands');
    const solve43 = ['solve', '--board', '4', '--pieces', '3', '--store', bands, '--threads', '1'];
    const refused = run([...solve43, '--shards', '6']);
    expect(refused.status).toBe(2);
    expect(refused.stderr).toContain('--shards 6 is more than 4x4/3 takes: at most 5 (a band of 4x4/3 holds at least 4.0 KiB of its 20.5 KiB table)');
    expect(existsSync(bands)).toBe(false);
    const taken = runHooked({ killAfterSave: 1 }, [...solve43, '--shards', '5']);
    expect(taken.signal).toBe('SIGKILL');
    expect(taken.stderr).toMatch(/: 5 bands of up to [\d.]+ KiB, one held at a time/);
    // The same --shards passes the resume's check and meets the budget's, which says the bands are set.
    const resumed = run([...solve43, '--shards', '5', '--resume', '--memory', '1M']);
    expect(resumed.status).toBe(2);
    expect(resumed.stderr).toMatch(/--memory 1\.0 MiB is too small for 4x4\/3 in 5 bands .* in all \(the bands of a store being resumed are set\)$/m);
    expect(run([...solve43, '--shards', '4', '--resume']).stderr).toContain(`${bands} has 5 shards, which --shards 4 does not make; --shards applies to new stores only`);
    // convert: shards of 4 KiB at least too.
    const file = join(dir, 'bounded.ccdb');
    expect(run(['solve', '--board', '7', '--pieces', '2', '--out', file, '--threads', '1', '--quiet']).status).toBe(0);
    const over = run(['convert', file, join(dir, 'bounded-78'), '--shards', '78']);
    expect(over.status).toBe(2);
    expect(over.stderr).toContain('--shards 78 is more than 7x7/2 takes: at most 77 (a shard of 7x7/2 holds at least 4.0 KiB of its 310.4 KiB table)');
    expect(existsSync(join(dir, 'bounded-78'))).toBe(false);
    expect(run(['convert', file, join(dir, 'bounded-77'), '--shards', '77']).status).toBe(0);
    expect(run(['check', '--db', join(dir, 'bounded-77')]).status).toBe(0);
  });

  it('refuses --workers without --store, and a --store where no folder can be made, without hanging', () => {
    const r = run(['solve', '--board', '7', '--pieces', '2', '--workers', '2']);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('--workers needs --store DIR');
    if (process.platform !== 'linux') return;
    // Node's recursive mkdir loops forever on /proc/x (ENOENT under a folder that exists).
    const proc = run(['solve', '--board', '4', '--pieces', '3', '--store', '/proc/ccheckers-store']);
    expect(proc.status).toBe(2);
    expect(proc.stderr).toContain('--store /proc/ccheckers-store: cannot make the folder: the file system there takes no new folders (ENOENT)');
  });

  it('killed with SIGKILL after any save, resumes to the same table', () => {
    // 5 bands: saves 1-5 are init, then a save per band and pass (rounds of one band); with
    // --workers 2, a save per round of two bands.
    for (const [save, workers] of [
      [3, 1],
      [8, 1],
      [17, 1],
      [6, 2],
    ] as const) {
      const store = join(dir, `killed-${save}-${workers}`);
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
        '--workers',
        String(workers),
        '--threads',
        '1',
        '--quiet',
      ]);
      expect(killed.signal).toBe('SIGKILL');
      expect(existsSync(join(store, 'manifest.json'))).toBe(true);
      if (save === 8) {
        // Under way in bands: check lists the band files and the message files, all sound.
        const checked = run(['check', '--db', store]);
        expect(checked.status, checked.stdout).toBe(0);
        expect(checked.stdout).toMatch(/^part +file/m);
        expect(checked.stdout).toMatch(/^band 0 +band-00000\.g\d+\.[0-9a-f]{8}\.bin .* ok$/m);
        expect(checked.stdout).toMatch(/^messages +msg-p1-b\d{5}\.[0-9a-f]{8}\.msg .* ok$/m);
      }
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

describe('solve --store on a folder another machine solves', () => {
  it('refuses the store while that machine\'s lock is there, and --break-lock takes it', () => {
    const store = join(dir, 'other-machine');
    const first = runHooked({ killAfterSave: 3 }, ['solve', '--board', '7', '--pieces', '2', '--store', store, '--shards', '5', '--threads', '1', '--quiet']);
    expect(first.signal).toBe('SIGKILL');
    // A solve of the same store on another machine that shares the folder (NFS): its lock names
    // that machine, with a pid that may well be alive here too.
    const lock = `${process.pid}\nother-host:0a1b2c3d:pid4026531836\n`;
    writeFileSync(join(store, 'manifest.json.lock'), lock);
    const refused = solveStore(store, '--resume');
    expect(refused.status).toBe(2);
    expect(refused.stderr).toContain(`a solve on host other-host (process ${process.pid}) is writing ${join(store, 'manifest.json')}; wait for it, or if that solve is really gone, --break-lock takes the lock`);
    expect(readFileSync(join(store, 'manifest.json.lock'), 'utf8')).toBe(lock);
    const taken = solveStore(store, '--resume', '--break-lock');
    expect(taken.status, taken.stderr).toBe(0);
    expect(JSON.parse(taken.stdout).tableCrc32).toBe(expectedCrc);
    expect(existsSync(join(store, 'manifest.json.lock'))).toBe(false);
  });
});

describe('solve --store on a full disk', () => {
  it('stops with what to do (exit 2), keeps every save, and --resume ends with the same table', () => {
    const store = join(dir, 'full-disk');
    const args = ['solve', '--board', '7', '--pieces', '2', '--store', store, '--shards', '5', '--memory', '17.5M', '--threads', '1', '--quiet'];
    const full = runHooked({ diskFullAfterBytes: 700_000 }, args);
    expect(full.status, full.stderr).toBe(2);
    expect(full.stderr).toMatch(/^ccheckers: no space left on the disk \(ENOSPC\): what was saved before is intact; free some space and run the command again \(a solve continues from its last save with --resume\)$/m);
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
    const converted = run(['convert', file, back, '--shards', '3']);
    expect(converted.status).toBe(0);
    expect(converted.stderr).not.toContain('distance table');
    // A database with distances: the store is made of its values, and says what it left out.
    const withDistances = join(dir, 'distances.ccdb');
    expect(run(['solve', '--board', '7', '--pieces', '1', '--distances', '--out', withDistances, '--quiet']).status).toBe(0);
    const values = run(['convert', withDistances, join(dir, 'values-only')]);
    expect(values.status, values.stderr).toBe(0);
    expect(values.stderr).toContain(`${withDistances}'s distance table (1344 bytes) was left out: a store keeps the values alone`);
    // A convert that fails halfway (a body byte changed: the last shard's checksum) leaves nothing
    // at the target, nor its temporary folder: the store is made beside it and renamed at the end.
    const damaged = join(dir, 'damaged.ccdb');
    const bytes = readFileSync(file);
    bytes[bytes.length - 600] = bytes[bytes.length - 600]! ^ 1; // in the body, before the pass log
    writeFileSync(damaged, bytes);
    const half = join(dir, 'half');
    const failed = run(['convert', damaged, half, '--shards', '3']);
    expect(failed.status).toBe(2);
    expect(failed.stderr).toMatch(/damaged\.ccdb: corrupt body: checksum/);
    expect(existsSync(half)).toBe(false);
    expect(readdirSync(dir).filter((f) => f.startsWith('half'))).toEqual([]);
    // Into a folder that exists (made by the user, or holding a killed solve's lock file only):
    // made in place, and on a failure only what convert made is removed.
    const existing = join(dir, 'existing');
    mkdirSync(existing);
    writeFileSync(join(existing, 'manifest.json.lock'), '');
    expect(run(['convert', damaged, existing, '--shards', '3']).status).toBe(2);
    expect(readdirSync(existing)).toEqual(['manifest.json.lock']);
    const made = run(['convert', file, existing, '--shards', '3']);
    expect(made.status, made.stderr).toBe(0);
    expect(run(['check', '--db', existing]).status).toBe(0);
    const checked = run(['check', '--db', back, '--recount', '--json']);
    expect(checked.status, checked.stdout).toBe(0);
    expect(JSON.parse(checked.stdout)).toMatchObject({ stage: 'complete', table: { ok: true }, recount: { manifestAgrees: true, p1Wins: 1_265_851 } });
    // Again into the store just made, and onto a file: refused in convert's words (it has no
    // --resume or --store), nothing written.
    const again = run(['convert', file, back, '--shards', '3']);
    expect(again.status).toBe(2);
    expect(again.stderr).toContain(`${back} already holds a store: convert makes a new store, in an empty or absent folder`);
    expect(again.stderr).not.toMatch(/--resume|--store/);
    const onFile = run(['convert', file, join(dir, 'solved.ccdb')]);
    expect(onFile.status).toBe(2);
    const ontoFile = run(['convert', store, file]);
    expect(ontoFile.status).toBe(2);
    expect(ontoFile.stderr).not.toMatch(/--resume|--store/);
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

  it('resumed once solved: reports its results only while its shards are all there and sound', () => {
    const copy = join(dir, 'resumed-solved');
    const made = run(['convert', join(dir, 'solved.ccdb'), copy, '--shards', '3']);
    expect(made.status, made.stderr).toBe(0);
    const again = solveStore(copy, '--resume');
    expect(again.status, again.stderr).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ tableCrc32: expectedCrc, p1Wins: 1_265_851 });
    const manifest = JSON.parse(readFileSync(join(copy, 'manifest.json'), 'utf8'));
    const shard = join(copy, manifest.shards[1].file);
    const bytes = readFileSync(shard);
    bytes[7]! ^= 4;
    writeFileSync(shard, bytes);
    const flipped = solveStore(copy, '--resume');
    expect(flipped.status).toBe(2);
    expect(JSON.parse(flipped.stdout).error).toMatchObject({ code: 'E_DATABASE', exitCode: 2 }); // solveStore asks for --json
    expect(flipped.stderr).toContain(`${shard}: corrupt shard 1: checksum`);
    rmSync(shard);
    const missing = solveStore(copy, '--resume');
    expect(missing.status).toBe(2);
    expect(missing.stderr).toContain(`${shard}: shard 1 is missing or unreadable (ENOENT)`);
  });

  it('whose manifest is inconsistent is refused by resume, convert and queries (exit 2), never copied', () => {
    const edit = (name: string, change: (m: Record<string, any>) => void) => {
      const copy = join(dir, name);
      expect(run(['convert', join(dir, 'solved.ccdb'), copy, '--shards', '3']).status).toBe(0);
      const path = join(copy, 'manifest.json');
      const m = JSON.parse(readFileSync(path, 'utf8'));
      change(m);
      writeFileSync(path, manifestText(m)); // its checksum recorded: the checks behind it
      return copy;
    };
    const counts = edit('counts-off', (m) => m.results.p1Wins--);
    for (const args of [['solve', '--board', '7', '--pieces', '2', '--store', counts, '--resume'], ['convert', counts, join(dir, 'counts-off.ccdb')], ['query', '--db', counts, START]]) {
      const r = run(args);
      expect(r.status, args.join(' ')).toBe(2);
      expect(r.stderr).toContain(`${join(counts, 'manifest.json')}: corrupt manifest: results: wins, draws and illegal add up to 2542511, not 2542512`);
    }
    expect(existsSync(join(dir, 'counts-off.ccdb'))).toBe(false);
    // Counts that add up, to more positions than the variant has (a .ccdb header's are refused too).
    const positions = edit('positions-off', (m) => {
      m.results.positions += 1000;
      m.results.p1Wins += 1000;
    });
    for (const args of [['query', '--db', positions, START], ['check', '--db', positions]]) {
      const r = run(args);
      expect(r.status, args.join(' ')).toBe(2);
      expect(r.stderr).toContain(`${join(positions, 'manifest.json')}: corrupt manifest: results: 2543512 positions, where 7x7/2 has 2542512`);
    }
    const table = edit('table-crc-off', (m) => (m.results.tableCrc32 = 12345));
    const resumed = run(['solve', '--board', '7', '--pieces', '2', '--store', table, '--resume']);
    expect(resumed.status).toBe(2);
    expect(resumed.stderr).toMatch(/manifest\.json: the shards' table has checksum 0x[0-9a-f]{8}, the manifest's results record 0x00003039$/m);
    // Counts that add up but are not the table's: only a recount sees them, and says which.
    const swapped = edit('counts-swapped', (m) => {
      m.results.p1Wins--;
      m.results.draws++;
    });
    const recounted = run(['check', '--db', swapped, '--recount']);
    expect(recounted.status).toBe(1);
    expect(recounted.stdout).toMatch(/^ {10}the manifest DISAGREES with the shards: it records P1 wins 1,265,850, draws 1$/m);
    expect(JSON.parse(run(['check', '--db', swapped, '--recount', '--json']).stdout).recount.manifestDiffers).toEqual([
      { field: 'p1Wins', manifest: 1_265_850, recounted: 1_265_851 },
      { field: 'draws', manifest: 1, recounted: 0 },
    ]);
    const crc = edit('crc-off', (m) => (m.shards[0].crc32 = -1));
    expect(run(['query', '--db', crc, START]).stderr).toContain('corrupt manifest: shard 0 has the checksum -1');
    // A CRC-32 is below 2^32: 2^32 is refused, 2^32 - 1 is a checksum (here a wrong one).
    const over = edit('crc-over', (m) => (m.shards[0].crc32 = 2 ** 32));
    expect(run(['query', '--db', over, START]).stderr).toContain('corrupt manifest: shard 0 has the checksum 4294967296');
    const top = edit('crc-top', (m) => (m.shards[0].crc32 = 2 ** 32 - 1));
    expect(run(['query', '--db', top, START]).stderr).toMatch(/corrupt shard 0: checksum 0x[0-9a-f]{8} but the manifest records 0xffffffff/);
    // A band solve under way keeps its bands: a stage edited back to passes is no resume.
    const stage = edit('stage-off', (m) => {
      m.stage = 'passes';
      m.passes = 'bands';
    });
    const r = run(['solve', '--board', '7', '--pieces', '2', '--store', stage, '--resume']);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('corrupt manifest: a band solve at stage passes without its bands');
  });

  it('whose manifest was edited by hand is refused by check, query, convert and resume (exit 2): its checksum', () => {
    for (const [name, change] of [
      ['shifted', (m: Record<string, any>) => ((m.results.p1Wins -= 7), (m.results.draws += 7))],
      ['start-p2', (m: Record<string, any>) => (m.results.startValue = 1)],
    ] as const) {
      const copy = join(dir, `edited-${name}`);
      expect(run(['convert', join(dir, 'solved.ccdb'), copy, '--shards', '3']).status).toBe(0);
      const path = join(copy, 'manifest.json');
      const m = JSON.parse(readFileSync(path, 'utf8'));
      change(m);
      writeFileSync(path, JSON.stringify(m, null, 1));
      const out = join(dir, `edited-${name}.ccdb`);
      for (const args of [['check', '--db', copy], ['check', '--db', copy, '--fix'], ['query', '--db', copy, START], ['convert', copy, out], ['solve', '--board', '7', '--pieces', '2', '--store', copy, '--resume']]) {
        const r = run(args);
        expect(r.status, args.join(' ')).toBe(2);
        expect(r.stdout).toBe('');
        expect(r.stderr).toMatch(new RegExp(`^ccheckers: ${copy}: manifest\\.json was edited or damaged: its content has checksum 0x[0-9a-f]{8}, it records 0x[0-9a-f]{8}; undo the edit or restore the store from a copy`, 'm'));
      }
      expect(existsSync(out)).toBe(false);
    }
  });

  it('whose manifest has no checksum (an earlier version): check says so, a recount and convert find edited counts, --fix rewrites them', () => {
    const copy = join(dir, 'no-checksum');
    const made = run(['convert', join(dir, 'solved.ccdb'), copy, '--shards', '3']);
    expect(made.status, made.stderr).toBe(0);
    const path = join(copy, 'manifest.json');
    const { crc32: _, ...m } = JSON.parse(readFileSync(path, 'utf8'));
    writeFileSync(path, JSON.stringify({ ...m, results: { ...m.results, p1Wins: m.results.p1Wins - 7, draws: m.results.draws + 7 } }, null, 1));
    const checked = run(['check', '--db', copy]);
    // Every shard's checksum and the table's match, but what the manifest records is unprotected.
    expect(checked.status, checked.stderr).toBe(1);
    expect(checked.stdout).toMatch(/^manifest  NO CHECKSUM \(written by an earlier ccheckers, or edited\): what it records is not covered by one; check --fix records one where the shards are sound$/m);
    expect(checked.stdout).not.toMatch(/MISMATCH/);
    expect(run(['check', '--db', copy, '--recount']).status).toBe(1);
    const out = join(dir, 'no-checksum.ccdb');
    const converted = run(['convert', copy, out]);
    expect(converted.status).toBe(2);
    expect(converted.stderr).toContain(
      `${path}: the manifest's results are not what its shards hold: it records P1 wins 1265844 (the shards: 1265851), draws 7 (the shards: 0); no database file was written (check --db ${copy} --fix rewrites them from the shards)`,
    );
    expect(existsSync(out)).toBe(false);
    const resumed = run(['solve', '--board', '7', '--pieces', '2', '--store', copy, '--resume', '--json']);
    expect(resumed.status).toBe(2);
    expect(resumed.stderr).toContain("the manifest's results are not what its shards hold: it records P1 wins 1265844 (the shards: 1265851)");
    // With --json the same message is one object on stdout.
    const said = resumed.stderr.trim().split('\n').at(-1)!.replace(/^ccheckers: /, '');
    expect(JSON.parse(resumed.stdout)).toEqual({ error: { code: 'E_DATABASE', message: said, exitCode: 2 } });
    const fixed = run(['check', '--db', copy, '--fix']);
    expect(fixed.status, fixed.stdout).toBe(0);
    expect(fixed.stdout).toMatch(/^fixed {5}the manifest's results were rewritten from the shards, its checksum recorded$/m);
    const again = run(['check', '--db', copy, '--recount', '--json']);
    expect(again.status).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ manifest: { checksum: 'ok' }, table: { ok: true }, recount: { manifestAgrees: true, p1Wins: 1_265_851, draws: 0 } });
    expect(run(['convert', copy, out]).status).toBe(0);
    expect(JSON.parse(run(['check', '--db', out, '--recount', '--json']).stdout).recount).toMatchObject({ headerAgrees: true, p1Wins: 1_265_851 });
  });

  it('of another variant is refused by solve --resume, naming the manifest (exit 2)', () => {
    const r = run(['solve', '--board', '7', '--pieces', '3', '--store', store, '--resume']);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/manifest\.json is a store of 7x7\/2 \(clean\), not 7x7\/3 \(clean\)/);
  });
});

describe('a store whose file is a FIFO or a symbolic link', () => {
  // Opened for reading, a FIFO waits for a writer forever: each command must refuse it by name
  // instead, at once (each run here is stopped after 20 s, far more than any of them takes).
  const bounded = (args: string[]) => {
    const r = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', env: { ...process.env, NO_COLOR: '1' }, timeout: 20_000 });
    expect(r.signal, `${args.join(' ')} hung`).toBe(null);
    return r;
  };
  const fifoInstead = (path: string) => {
    rmSync(path);
    expect(spawnSync('mkfifo', [path]).status).toBe(0);
  };
  const solved = join(dir, 'fifo-solved');
  const underWay = join(dir, 'fifo-under-way');
  beforeAll(() => {
    expect(solveStore(solved, '--shards', '3').status).toBe(0);
    const killed = runHooked({ killAfterSave: 8 }, ['solve', '--board', '7', '--pieces', '2', '--store', underWay, '--shards', '5', '--threads', '1', '--quiet']);
    expect(killed.signal).toBe('SIGKILL');
  });
  const copyOf = (from: string, name: string) => {
    const to = join(dir, name);
    cpSync(from, to, { recursive: true });
    return { store: to, manifest: JSON.parse(readFileSync(join(to, 'manifest.json'), 'utf8')) };
  };

  it.skipIf(process.platform === 'win32')('manifest.json a FIFO: query, check, convert and solve --resume refuse it (exit 2)', () => {
    const { store } = copyOf(solved, 'fifo-manifest');
    fifoInstead(join(store, 'manifest.json'));
    for (const args of [['query', '--db', store, START], ['check', '--db', store], ['convert', store, join(dir, 'fifo-manifest.ccdb')], ['solve', '--board', '7', '--pieces', '2', '--store', store, '--resume']]) {
      const r = bounded(args);
      expect(r.status, args.join(' ')).toBe(2);
      expect(r.stderr).toContain(`${join(store, 'manifest.json')}: the manifest is a FIFO (named pipe), not a regular file`);
    }
  });

  it.skipIf(process.platform === 'win32')('a shard a FIFO or a symbolic link: check lists it (exit 1), query, convert and solve --resume refuse it (exit 2)', () => {
    for (const kind of ['fifo', 'link'] as const) {
      const { store, manifest } = copyOf(solved, `${kind}-shard`);
      const shard = join(store, manifest.shards[1].file);
      if (kind === 'fifo') {
        fifoInstead(shard);
      } else {
        cpSync(shard, join(dir, `${kind}-shard-target.bin`));
        rmSync(shard);
        symlinkSync(join(dir, `${kind}-shard-target.bin`), shard);
      }
      const said = `${shard}: shard 1 is ${kind === 'fifo' ? 'a FIFO (named pipe)' : 'a symbolic link'}, not a regular file`;
      const checked = bounded(['check', '--db', store]);
      expect(checked.status, checked.stderr).toBe(1);
      expect(checked.stdout).toMatch(/^0 .* ok$/m);
      expect(checked.stdout).toContain(said);
      for (const args of [['query', '--db', store, START], ['convert', store, join(dir, `${kind}-shard.ccdb`)], ['solve', '--board', '7', '--pieces', '2', '--store', store, '--resume']]) {
        const r = bounded(args);
        expect(r.status, args.join(' ')).toBe(2);
        expect(r.stderr).toContain(said);
      }
    }
  });

  it.skipIf(process.platform === 'win32')('manifest.json.lock a FIFO, a directory or a symbolic link: solve --resume refuses it by name (exit 2) and leaves it', () => {
    const target = join(dir, 'fifo-lock-target');
    expect(spawnSync('mkfifo', [target]).status).toBe(0);
    for (const [kind, said] of [['fifo', 'a named pipe'], ['folder', 'a directory'], ['link', 'a symbolic link']] as const) {
      const { store } = copyOf(underWay, `lock-${kind}`);
      const lock = join(store, 'manifest.json.lock');
      rmSync(lock, { force: true });
      if (kind === 'fifo') expect(spawnSync('mkfifo', [lock]).status).toBe(0);
      else if (kind === 'folder') mkdirSync(lock);
      else symlinkSync(target, lock); // to a FIFO: following it would hang as well
      const before = readFileSync(join(store, 'manifest.json'), 'utf8');
      const r = bounded(['solve', '--board', '7', '--pieces', '2', '--store', store, '--resume', '--threads', '1']);
      expect(r.status, kind).toBe(2);
      expect(r.stderr).toContain(`${lock} is ${said}, not a regular file, so not a lock a solve made: remove it`);
      expect(readFileSync(join(store, 'manifest.json'), 'utf8')).toBe(before);
      const left = lstatSync(lock);
      expect(kind === 'fifo' ? left.isFIFO() : kind === 'folder' ? left.isDirectory() : left.isSymbolicLink()).toBe(true);
    }
  });

  it.skipIf(process.platform === 'win32')('a band file or a message file a FIFO: check lists it (exit 1), solve --resume refuses it (exit 2)', () => {
    for (const kind of ['band', 'message'] as const) {
      const { store, manifest } = copyOf(underWay, `fifo-${kind}`);
      const file = kind === 'band' ? manifest.bands.files[0].file : manifest.bands.messages[0].file;
      fifoInstead(join(store, file));
      const said = `${join(store, file)}: ${kind === 'band' ? 'band 0' : 'message file'} is a FIFO (named pipe), not a regular file`;
      const checked = bounded(['check', '--db', store]);
      expect(checked.status, checked.stderr).toBe(1);
      expect(checked.stdout).toContain(said);
      const resumed = bounded(['solve', '--board', '7', '--pieces', '2', '--store', store, '--resume', '--threads', '1']);
      expect(resumed.status).toBe(2);
      expect(resumed.stderr).toContain(said);
    }
  });
});
