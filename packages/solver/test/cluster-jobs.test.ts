/**
 * The jobs of a cluster solve without Redis: payload checks, what a tile and a merge write, jobs
 * deferred (another generation, an input not there yet), and a merge that meets two values for one
 * state refusing to write anything.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { variant } from '@ccheckers/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JobDeferred, JobRefused, JobRunner, type Manifest, ShardStore, availableBackends, jobId, parseJob, parseRedisUrl, passFolder, solveSharded, tileOutput, tileOutputCrc } from '../src/index.js';

const dir = mkdtempSync(join(tmpdir(), 'ccheckers-jobs-'));
const store = join(dir, 'store');
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const backend = (await availableBackends())[0]!;
let manifest: Manifest;

beforeAll(async () => {
  // A store in its passes: 7x7/2 in 3 shards, stopped after pass 1.
  await solveSharded({ passes: 'tiles', variant: variant(7, 2), rules: 'clean', backend, threads: 1, store, shards: 3, stopAfterPass: 1 }).catch((e) => {
    if (!/interrupted/.test(String(e))) throw e;
  });
  manifest = ShardStore.open(store).manifest;
  expect(manifest.stage).toBe('passes');
});

const tile = (i: number, j: number) => ({
  kind: 'tile',
  store: manifest.id,
  board: 7,
  pieces: 2,
  rules: 'clean',
  pass: manifest.passLog.length + 1,
  generation: manifest.generation,
  shards: [i, j],
  sparse: false,
  down: false,
});

describe('job payloads', () => {
  it('a payload of this store is taken as it is, and its id names store, pass and work', () => {
    const job = parseJob(tile(0, 2), manifest);
    expect(job).toEqual(tile(0, 2));
    expect(jobId(job)).toBe(`${manifest.id}-p2-g${manifest.generation}-tile-0-2`);
  });
  it('anything else is refused with the reason', () => {
    const cases: Array<[unknown, RegExp]> = [
      [null, /not an object/],
      [[1, 2], /not an object/],
      [{ ...tile(0, 1), kind: 'rm' }, /unknown job kind "rm"/],
      [{ ...tile(0, 1), dir: '/etc' }, /unexpected field\(s\) dir/],
      [{ ...tile(0, 1), store: 'x' }, /for store "x"/],
      [{ ...tile(0, 1), pieces: 3 }, /for 7x7\/3 \(clean\)/],
      [{ ...tile(0, 1), rules: 'published' }, /\(published\)/],
      [tile(0, 3), /shards\[1\] 3 is not a shard of this store \(it has 3\)/],
      [tile(2, 1), /must not come after/],
      [{ ...tile(0, 1), shards: [0] }, /a pair/],
      [{ ...tile(0, 1), shards: [0.5, 1] }, /whole number/],
      [{ ...tile(0, 1), generation: -1 }, /generation must be a whole number/],
      [{ ...tile(0, 1), sparse: 'yes' }, /sparse must be true or false/],
      [{ kind: 'merge', store: manifest.id, board: 7, pieces: 2, rules: 'clean', pass: 2, generation: 1, shard: '../x', inputs: [[0, 0]] }, /shard must be a whole number/],
      [{ kind: 'merge', store: manifest.id, board: 7, pieces: 2, rules: 'clean', pass: 2, generation: 1, shard: 1, inputs: [] }, /inputs must be a list of 1 to 3 tiles/],
      [{ kind: 'merge', store: manifest.id, board: 7, pieces: 2, rules: 'clean', pass: 2, generation: 1, shard: 1, inputs: [[0, 2]] }, /\[0, 2\] is not a tile of shard 1/],
      [{ kind: 'merge', store: manifest.id, board: 7, pieces: 2, rules: 'clean', pass: 2, generation: 1, shard: 1, inputs: ['../../x'] }, /inputs\[0\] must be a pair/],
    ];
    for (const [data, reason] of cases) {
      expect(() => parseJob(data, manifest), JSON.stringify(data)).toThrow(JobRefused);
      expect(() => parseJob(data, manifest), JSON.stringify(data)).toThrow(reason);
    }
  });
});

describe('running jobs', () => {
  const runner = new JobRunner({ dir: store, backend, threads: 1 });
  afterAll(() => runner.close());
  const folder = () => join(store, passFolder(manifest.passLog.length + 1, manifest.generation));

  it('a tile writes the shards it changed to the pass folder, a merge the next generation', async () => {
    mkdirSync(folder(), { recursive: true });
    const { result } = await runner.run(tile(0, 1));
    expect(result.kind).toBe('tile');
    if (result.kind !== 'tile') return;
    expect(result.changed.length).toBeGreaterThan(0);
    for (const s of result.changed) expect(existsSync(join(folder(), tileOutput([0, 1], s)))).toBe(true);
    const s = result.changed[0]!;
    const merge = { kind: 'merge', store: manifest.id, board: 7, pieces: 2, rules: 'clean', pass: manifest.passLog.length + 1, generation: manifest.generation, shard: s, inputs: [[0, 1]] };
    const { result: merged } = await runner.run(merge);
    if (merged.kind !== 'merge') throw new Error('not a merge');
    expect(merged.inputs).toBe(1);
    expect(merged.newlyProven).toBeGreaterThan(0);
    expect(merged.file).toMatch(new RegExp(`^shard-0000${s}\\.g${manifest.generation + 1}\\.[0-9a-f]{8}\\.bin$`));
    expect(existsSync(join(store, merged.file))).toBe(true);
  });

  it('a job of another generation, or whose input is not there, is deferred (retried), writing nothing', async () => {
    const before = readdirSync(store).sort();
    await expect(runner.run({ ...tile(1, 2), generation: manifest.generation - 1 })).rejects.toThrow(JobDeferred);
    await expect(runner.run({ ...tile(1, 2), pass: 7 })).rejects.toThrow(/the job is for pass 7 on generation \d+; .* is at passes, pass 2, generation \d+/);
    const merge = { kind: 'merge', store: manifest.id, board: 7, pieces: 2, rules: 'clean', pass: manifest.passLog.length + 1, generation: manifest.generation, shard: 2, inputs: [[1, 2]] };
    await expect(runner.run(merge)).rejects.toThrow(/tile-1-2\.2\.bin, the output of tile 1-2, is not there \(yet\)/);
    expect(readdirSync(store).sort()).toEqual(before);
  });

  it('a merge that meets a state proven with two values stops, writing nothing', async () => {
    const shard = manifest.shards[2]!;
    const base = readFileSync(join(store, shard.file));
    const at = base.findIndex((b) => (b & 3) === 1 || (b & 3) === 2); // a lost or won state
    const forged = Buffer.from(base);
    forged[at] = (forged[at]! & ~3) | (3 - (forged[at]! & 3)); // won <-> lost
    writeFileSync(join(folder(), tileOutput([2, 2], 2)), Buffer.concat([forged, tileOutputCrc(crc32(forged))]));
    const before = readdirSync(store).sort();
    const merge = { kind: 'merge', store: manifest.id, board: 7, pieces: 2, rules: 'clean', pass: manifest.passLog.length + 1, generation: manifest.generation, shard: 2, inputs: [[2, 2]] };
    await expect(runner.run(merge)).rejects.toThrow(/a state proven with another value than in the store \(byte \d+/);
    expect(readdirSync(store).sort()).toEqual(before);
  });

  it('a merge of a tile output damaged after it was written stops, writing nothing', async () => {
    mkdirSync(folder(), { recursive: true });
    const { result } = await runner.run(tile(0, 0));
    if (result.kind !== 'tile' || result.changed.length === 0) throw new Error('tile 0-0 changed nothing');
    const path = join(folder(), tileOutput([0, 0], 0));
    const bytes = readFileSync(path);
    expect(bytes.length).toBe(manifest.shards[0]!.bytes + 4);
    expect(bytes.readUInt32LE(bytes.length - 4)).toBe(crc32(bytes.subarray(0, bytes.length - 4)));
    // A state unknown in the base and in the output made proven: no conflict, a gain, a wrong table.
    const base = readFileSync(join(store, manifest.shards[0]!.file));
    const at = base.findIndex((b, i) => (b & 3) === 0 && (bytes[i]! & 3) === 0);
    bytes[at] = bytes[at]! | 2;
    writeFileSync(path, bytes);
    const before = readdirSync(store).sort();
    const merge = { kind: 'merge', store: manifest.id, board: 7, pieces: 2, rules: 'clean', pass: manifest.passLog.length + 1, generation: manifest.generation, shard: 0, inputs: [[0, 0]] };
    await expect(runner.run(merge)).rejects.toThrow(/tile-0-0\.0\.bin, the output of tile 0-0, is damaged: CRC-32 0x[0-9a-f]{8}, written as 0x[0-9a-f]{8}; the store's disk or a worker is faulty/);
    expect(readdirSync(store).sort()).toEqual(before);
  });
});

describe('--redis URLs', () => {
  it('takes redis:// and rediss:// with a host, a port and a database number, the password masked', () => {
    expect(parseRedisUrl('redis://127.0.0.1:6379')).toEqual({ url: 'redis://127.0.0.1:6379', shown: 'redis://127.0.0.1:6379' });
    expect(parseRedisUrl('redis://:s3cret@10.0.0.2:6400/3').shown).toBe('redis://:***@10.0.0.2:6400/3');
    expect(parseRedisUrl('rediss://cache.example/').url).toBe('rediss://cache.example/');
  });

  it('refuses what is not one, naming the part (a database that is not a number included)', () => {
    const cases: Array<[string, RegExp]> = [
      ['garbage', /--redis must be a URL such as redis:\/\/127\.0\.0\.1:6379 \(got "garbage"\)/],
      ['http://127.0.0.1:6379', /--redis must start with redis:\/\/ or rediss:\/\//],
      ['redis://127.0.0.1:99999', /--redis must be a URL/],
      ['redis://127.0.0.1:6379/abc', /--redis: the database after the host must be a number, as in redis:\/\/127\.0\.0\.1:6379\/0 \(got "\/abc"\)/],
      ['redis://127.0.0.1:6379/1/2', /the database after the host must be a number/],
    ];
    for (const [url, reason] of cases) expect(() => parseRedisUrl(url), url).toThrow(reason);
  });
});
