/**
 * The jobs of a cluster solve without Redis: payload checks (a forged id or payload is refused),
 * what a step job writes (the files of its own attempt, nothing in the manifest), and jobs of
 * another generation deferred or refused, writing nothing.
 */
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { variant } from '@ccheckers/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JobDeferred, JobRefused, JobRunner, type Manifest, ShardStore, availableBackends, jobId, parseJob, parseRedisUrl, sameJob, solveSharded } from '../src/index.js';
import { checkResult } from '../src/cluster/job-result.js';
import { printable } from '../src/cluster/job-queue.js';
import { storeBandLayout } from '../src/store/band-solve.js';

const dir = mkdtempSync(join(tmpdir(), 'ccheckers-jobs-'));
const store = join(dir, 'store');
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const backend = (await availableBackends())[0]!;
let manifest: Manifest;

beforeAll(async () => {
  // A store in its passes: 7x7/2 in 4 bands for 2 workers, stopped after pass 1.
  await solveSharded({ variant: variant(7, 2), rules: 'clean', backend, threads: 1, store, shards: 4, workers: 2, stopAfterPass: 1 }).catch((e) => {
    if (!/interrupted/.test(String(e))) throw e;
  });
  manifest = ShardStore.open(store).manifest;
  expect(manifest.stage).toBe('passes');
  expect(manifest.bands!.next).toEqual({ pass: 2, round: 0 });
});

/** The step of `band` at the manifest's next round (bands 0 and 2 are round 0 for 2 workers). */
const step = (band: number, round = band % 2) => ({
  kind: 'step',
  store: manifest.id,
  board: 7,
  pieces: 2,
  rules: 'clean',
  pass: manifest.bands!.next.pass,
  round,
  band,
  generation: manifest.generation,
});

describe('job payloads', () => {
  it('a payload of this store is taken as it is, and its id names store, pass, round, generation and band', () => {
    const job = parseJob(step(2, 0), manifest);
    expect(job).toEqual(step(2, 0));
    expect(jobId(job)).toBe(`${manifest.id}-p2-r0-g${manifest.generation}-b2`);
    expect(parseJob(step(2, 0), manifest, jobId(job))).toEqual(job);
    expect(sameJob(job, step(2, 0))).toBe(true);
    expect(sameJob(job, step(0, 0))).toBe(false);
    expect(sameJob(job, { ...step(2, 0), extra: 1 })).toBe(false);
  });
  it('anything else is refused with the reason, and so is a payload under another job\'s id', () => {
    const cases: Array<[unknown, RegExp]> = [
      [null, /not an object/],
      [[1, 2], /not an object/],
      [{ ...step(0), kind: 'tile' }, /unknown job kind "tile"/],
      [{ ...step(0), dir: '/etc' }, /unexpected field\(s\) dir/],
      [{ ...step(0), store: 'x' }, /for store "x"/],
      [{ ...step(0), pieces: 3 }, /for 7x7\/3 \(clean\)/],
      [{ ...step(0), rules: 'published' }, /\(published\)/],
      [step(4, 0), /band 4 is not a band of this store \(it has 4\)/],
      [step(1, 0), /band 1 is stepped in round 1, not 0/],
      [{ ...step(0), band: '../x' }, /band must be a whole number/],
      [{ ...step(0), band: 0.5 }, /band must be a whole number/],
      [{ ...step(0), generation: -1 }, /generation must be a whole number/],
    ];
    for (const [data, reason] of cases) {
      expect(() => parseJob(data, manifest), JSON.stringify(data)).toThrow(JobRefused);
      expect(() => parseJob(data, manifest), JSON.stringify(data)).toThrow(reason);
    }
    // A valid payload for band 0 queued under the id of band 2's step (issue: a forged queue).
    expect(() => parseJob(step(0), manifest, jobId(parseJob(step(2, 0), manifest)))).toThrow(/the job's id ".*-b2" is not the id of its payload \(.*-b0\)/);
  });

  it('the rounds are those of the store\'s schedule: in blocks of 2, bands 0 and 1 are round 0', () => {
    const blocks: Manifest = { ...manifest, bands: { ...manifest.bands!, schedule: 'blocks' } };
    expect(parseJob(step(1, 0), blocks)).toEqual(step(1, 0));
    expect(parseJob(step(2, 1), blocks)).toEqual(step(2, 1));
    expect(() => parseJob(step(2, 0), blocks)).toThrow(/band 2 is stepped in round 1, not 0/);
  });
});

describe('running jobs', () => {
  const runner = new JobRunner({ dir: store, backend, threads: 1 });
  afterAll(() => runner.close());

  it('a step writes its band and message files under its attempt\'s names, and leaves the manifest alone', async () => {
    const before = readFileSyncText(join(store, 'manifest.json'));
    const { job, result } = await runner.run(step(0), jobId(parseJob(step(0), manifest)));
    expect(result.job).toEqual(job);
    const o = result.outcome;
    expect(o.band).toBe(0);
    if (o.table) expect(o.table.file).toMatch(new RegExp(`^band-00000\\.g${manifest.generation + 1}\\.[0-9a-f]{8}\\.bin$`));
    // One pack of all it sent, named for the step and attempt.
    expect(o.pack).toBeDefined();
    expect(o.pack!.file).toBe(`msg-p2-b00000.${o.attempt}.msg`);
    expect(o.pack!.count).toBe(o.messagesWritten);
    expect(existsSync(join(store, o.pack!.file))).toBe(true);
    expect(readFileSyncText(join(store, 'manifest.json'))).toBe(before);
    // Run again (a worker taken for dead): other files, the same work.
    const again = await runner.run(step(0));
    expect(again.result.outcome.changed).toBe(o.changed);
    expect(again.result.outcome.pack!.file).not.toBe(o.pack!.file);
  });

  it('the coordinator takes a step\'s result as it is, built anew from what it checked, and refuses it forged, the manifest untouched', async () => {
    const { job, result } = await runner.run(step(0), jobId(parseJob(step(0), manifest)));
    expect(result.outcome.table).toBeDefined();
    const shardStore = ShardStore.open(store);
    const taken = await checkResult({ ...result, extra: '../x', outcome: { ...result.outcome, extra: 1 } }, job, shardStore, false);
    expect(taken).toEqual(result);
    const before = readFileSyncText(join(store, 'manifest.json'));
    const forged = (change: (r: Record<string, unknown>, o: Record<string, unknown>) => void) => {
      const copy = structuredClone(result) as unknown as Record<string, unknown> & { outcome: Record<string, unknown> };
      change(copy, copy.outcome);
      return checkResult(copy, job, shardStore, false);
    };
    const states = storeBandLayout(shardStore).groupsOf[0]!.length * shardStore.space.p2Placements;
    const cases: Array<[string, (r: Record<string, unknown>, o: Record<string, unknown>) => void, RegExp]> = [
      // A part only from a part of a shared step (committed as one, the manifest would not open).
      ['a part', (_r, o) => (o.part = 1), /a part of a shared step from a step that is not one/],
      ['a part 0', (_r, o) => (o.part = 0), /a part of a shared step from a step that is not one/],
      // Counts within what the step can have done, times and bytes that keep the pass's sums exact.
      ['changes past the band', (_r, o) => (o.changed = states + 1), /a malformed changed/],
      ['changes of 2^52', (_r, o) => (o.changed = 2 ** 52), /a malformed changed/],
      ['values past the messages', (_r, o) => (o.sentValues = (o.messagesWritten as number) + 1), /malformed message counts/],
      ['a time of 1e308', (_r, o) => (o.seconds = 1e308), /a malformed time/],
      ['a report of 1e308 s', (r) => (r.seconds = 1e308), /a malformed report/],
      ['bytes of 2^50', (_r, o) => (o.bytesWritten = 2 ** 50), /a malformed byte count/],
      ['a backend that is none', (r) => (r.backend = 'native\u001b[2J'), /a malformed report/],
      ['moveless past the states', (_r, o) => (o.moveless = shardStore.space.states + 1), /a malformed moveless/],
      // The band file's CRC-32 read, not taken on the worker's word.
      ['another CRC-32', (_r, o) => ((o.table as { crc32: number }).crc32 = ((o.table as { crc32: number }).crc32 ^ 1) >>> 0), /whose CRC-32 is not the 0x[0-9a-f]{8} it says/],
    ];
    for (const [what, change, reason] of cases) await expect(forged(change), what).rejects.toThrow(reason);
    expect(readFileSyncText(join(store, 'manifest.json'))).toBe(before);
  });

  it('a job of a later generation is deferred (retried), of an earlier one or another round refused, writing nothing', async () => {
    const before = readdirSync(store).sort();
    await expect(runner.run({ ...step(2, 0), generation: manifest.generation + 1 })).rejects.toThrow(JobDeferred);
    await expect(runner.run({ ...step(2, 0), generation: manifest.generation - 1 })).rejects.toThrow(JobRefused);
    await expect(runner.run(step(1, 1))).rejects.toThrow(/the job is for pass 2, round 1 on generation \d+; the store is at pass 2, round 0, generation \d+/);
    expect(readdirSync(store).sort()).toEqual(before);
  });
});

function readFileSyncText(path: string): string {
  return readFileSync(path, 'utf8');
}

describe('text from Redis', () => {
  it('reaches the terminal without control characters (escape sequences), and cut short', () => {
    expect(printable('band 3: \u001b[2J\u001b]0;title\u0007gone\r\n\u009b31m')).toBe('band 3: ?[2J?]0;title?gone???31m');
    expect(printable('x'.repeat(600))).toBe(`${'x'.repeat(500)}...`);
    expect(printable(undefined)).toBe('undefined');
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

describe('the jobs of a shared step', () => {
  const shared = join(dir, 'shared');
  let m: Manifest;
  beforeAll(async () => {
    // 7x7/2 in 4 bands for 2 workers in shared steps, stopped after init (2 bands a round: 2 saves).
    const controller = new AbortController();
    let saves = 0;
    await solveSharded({ variant: variant(7, 2), rules: 'clean', backend, threads: 1, store: shared, shards: 4, workers: 2, schedule: 'shared', signal: controller.signal, onSave: () => {
      if (++saves === 2) controller.abort();
    } }).catch((e) => {
      if (!/interrupted/.test(String(e))) throw e;
    });
    m = ShardStore.open(shared).manifest;
    expect(m.bands!.next).toEqual({ pass: 1, round: 0 });
  });
  const base = () => ({ store: m.id, board: 7, pieces: 2, rules: 'clean', pass: 1, round: 0, band: 0, generation: m.generation });
  const slice = (part: number) => ({ kind: 'slice', ...base(), part });
  const finish = (slices: unknown) => ({ kind: 'finish', ...base(), slices });

  it('a part and a finish are taken as they are, each with an id of its own', () => {
    expect(parseJob(slice(1), m)).toEqual(slice(1));
    expect(jobId(parseJob(slice(1), m))).toBe(`${m.id}-p1-r0-g${m.generation}-b0-s1`);
    const f = finish([{ attempt: '0123abcd', proofs: 3 }, { attempt: 'ffffffff', proofs: 0 }]);
    expect(parseJob(f, m)).toEqual(f);
    expect(jobId(parseJob(f, m))).toBe(`${m.id}-p1-r0-g${m.generation}-b0-f`);
    expect(sameJob(parseJob(f, m) as never, finish([{ attempt: '0123abcd', proofs: 4 }, { attempt: 'ffffffff', proofs: 0 }]))).toBe(false);
  });

  it('refuses a whole step where the step is shared, a part past the workers, a finish of other parts, and parts where nothing is shared', () => {
    const cases: Array<[unknown, Manifest, RegExp]> = [
      [{ kind: 'step', ...base() }, m, /band 0's step of pass 1 is shared by 2 workers/],
      [slice(2), m, /part must be a whole number from 0 to 1/],
      [{ ...slice(0), part: -1 }, m, /part must be a whole number/],
      [{ ...slice(0), slices: [] }, m, /unexpected field\(s\) slices in a slice job/],
      [finish([{ attempt: '0123abcd', proofs: 3 }]), m, /a finish names the 2 parts of its step/],
      [finish([{ attempt: '../../x', proofs: 3 }, { attempt: 'ffffffff', proofs: 0 }]), m, /part 0 of the finish is not an attempt/],
      [finish([{ attempt: '0123abcd', proofs: 1.5 }, { attempt: 'ffffffff', proofs: 0 }]), m, /part 0's proof files must be a whole number/],
      [finish([{ attempt: '0123abcd', proofs: 1, path: '/etc' }, { attempt: 'ffffffff', proofs: 0 }]), m, /part 0 of the finish is not an attempt/],
      [{ ...step(0, 0), kind: 'slice', part: 0 }, manifest, /step of pass 2 is not shared \(schedule segments, 2 worker\(s\)\): it has no slice/],
    ];
    for (const [data, of, reason] of cases) {
      expect(() => parseJob(data, of), JSON.stringify(data)).toThrow(JobRefused);
      expect(() => parseJob(data, of), JSON.stringify(data)).toThrow(reason);
    }
  });

  it('parts write proofs and packs of their own, the finish the band; a finish that names a proof file not there fails and writes nothing', async () => {
    const runners = [0, 1].map(() => new JobRunner({ dir: shared, backend, threads: 1 }));
    const runner = runners[0]!;
    const before = readFileSyncText(join(shared, 'manifest.json'));
    const parts = [];
    // The two parts at once, as two workers run them (taking turns at each kernel call here).
    const ran = await Promise.all([0, 1].map((part) => runners[part]!.run(slice(part), jobId(parseJob(slice(part), m)))));
    const units = storeBandLayout(ShardStore.open(shared)).unitsOf[0]!.length;
    const slicesOf = (part: number) => (ran[part]!.result.outcome as typeof ran[0]['result']['outcome'] & { slices: number }).slices;
    expect(slicesOf(0) + slicesOf(1)).toBe(units);
    for (const part of [0, 1]) {
      const { job, result } = ran[part]!;
      // The coordinator takes the result as it is, and refuses it forged (a worker's word is
      // not trusted: its proof files are looked for, with their sizes).
      const store = ShardStore.open(shared);
      await expect(checkResult(result, job, store)).resolves.toMatchObject({ outcome: { part, attempt: result.outcome.attempt } });
      const forged = (change: (o: Record<string, unknown>) => void) => {
        const copy = structuredClone(result) as unknown as { outcome: Record<string, unknown> };
        change(copy.outcome);
        return checkResult(copy, job, store, false);
      };
      await expect(forged((o) => (o.took = ['../../etc']))).rejects.toThrow(/a malformed list of the attempts a part took from/);
      await expect(forged((o) => (o.proofBytes = (o.proofBytes as number) + 1))).rejects.toThrow(/proof files of \d+ bytes, not the \d+ it says/);
      await expect(forged((o) => (o.proofs = (o.proofs as number) + 1))).rejects.toThrow(/the file proof-b00000\.g\d+\.w\d\.[0-9a-f]{8}\.\d+\.bin, which is missing/);
      await expect(forged((o) => (o.part = 1 - part))).rejects.toThrow(/a malformed part of a shared step/);
      await expect(forged((o) => (o.slices = -1))).rejects.toThrow(/a malformed part of a shared step/);
      for (const waited of [-1, Number.NaN, 1e12, '1', undefined]) await expect(forged((o) => (o.waited = waited)), String(waited)).rejects.toThrow(/a malformed part of a shared step/);
      await expect(forged((o) => (o.changed = 5))).rejects.toThrow(/no band file for a band it changed/);
      const o = result.outcome as typeof result.outcome & { part: number; slices: number; proofs: number; proofBytes: number };
      expect(o).toMatchObject({ part, changed: 0 });
      expect(o.table).toBeUndefined();
      // Each part visits the slices it claims first (slice-claims.ts): together, every one.
      expect(o.slices).toBeGreaterThan(0);
      expect(o.proofs).toBeGreaterThan(0);
      expect(o.pack?.part).toBe(part);
      parts.push({ attempt: o.attempt, proofs: o.proofs });
    }
    const files = readdirSync(shared).sort();
    await expect(runner.run(finish([parts[0], { ...parts[1]!, proofs: parts[1]!.proofs + 1 }]))).rejects.toThrow(/proof file cannot be read/);
    expect(readdirSync(shared).sort()).toEqual(files);
    const { result } = await runner.run(finish(parts));
    expect(result.outcome.changed).toBeGreaterThan(0);
    expect(result.outcome.table!.file).toMatch(new RegExp(`^band-00000\\.g${m.generation + 1}\\.${result.outcome.attempt}\\.bin$`));
    expect(readFileSyncText(join(shared, 'manifest.json'))).toBe(before);
    for (const r of runners) await r.close();
  });
});
