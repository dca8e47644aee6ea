/**
 * solve --checkpoint-minutes (issue 36): checkpoints inside a pass and between distance layers.
 * A solve killed with SIGKILL once a checkpoint inside pass 1 (or of the distances) is on disk
 * resumes from there to the table (and distances) of an uninterrupted solve; bad values are
 * refused before any work.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { availableBackends, readDatabase } from '@ccheckers/solver';
import { run, runHooked } from './support/run-cli.js';

const dir = mkdtempSync(join(tmpdir(), 'ccheckers-ckpt-min-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const loaded = new Set((await availableBackends()).map((b) => b.name));

describe('--checkpoint-minutes', () => {
  it.each([['-1'], ['abc'], [''], ['1e3'], ['Infinity'], ['0x10']])('refuses %j with exit 2 and says what it takes', (value) => {
    const r = run(['solve', '--pieces', '1', '--out', join(dir, 'bad.ccdb'), '--checkpoint-minutes', value]);
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(`--checkpoint-minutes must be a number of minutes, e.g. 10 or 0.5 (0: at every step; got "${value}")`);
    expect(existsSync(join(dir, 'bad.ccdb.ckpt'))).toBe(false);
  });

  it('needs an in-memory solve with --out', () => {
    for (const args of [[], ['--store', join(dir, 'store'), '--out', join(dir, 'x.ccdb')]]) {
      const r = run(['solve', '--pieces', '1', '--checkpoint-minutes', '1', ...args]);
      expect(r.status).toBe(2);
      expect(r.stderr).toMatch(/--checkpoint-minutes is for in-memory solves with --out FILE/);
    }
    expect(existsSync(join(dir, 'store'))).toBe(false);
  });

  // 7x7/3 (6bcd2ea1 on every backend) where the kernel is fast enough for a test; the TS
  // kernel takes over 10 minutes for it on 2 cores, so it is killed in 7x7/2 (0b785a50).
  const cases = [
    { backend: 'native-bmi2' as const, pieces: '3', crc: 0x6bcd2ea1 },
    { backend: 'ts' as const, pieces: '2', crc: 0x0b785a50 },
  ].filter((c) => loaded.has(c.backend));
  it.each(cases)('kill -9 inside pass 1 ($backend, 7x7/$pieces), then --resume: the same table', ({ backend, pieces, crc }) => {
    const out = join(dir, `killed-${backend}.ccdb`);
    const args = ['solve', '--board', '7', '--pieces', pieces, '--backend', backend, '--threads', '2', '--out', out];
    // A checkpoint at the first boundary between kernel calls 6 ms after the last: pass 1 takes
    // far longer, so one is written inside it, and the hook kills the solve once it is on disk.
    const killed = runHooked({ killInPass: 1 }, [...args, '--checkpoint-minutes', '0.0001']);
    expect(killed.signal, killed.stderr).toBe('SIGKILL');
    expect(existsSync(out)).toBe(false);
    const { header } = readDatabase(`${out}.ckpt`);
    expect(header.passes).toBe(0);
    expect(header.passLog).toHaveLength(1);
    const part = header.passLog[0]!;
    expect(part.pass).toBe(1);
    expect(part.unitsDone).toBeGreaterThan(0);

    const resumed = run([...args, '--resume', '--json']);
    expect(resumed.status, resumed.stderr).toBe(0);
    expect(resumed.stderr).toMatch(/resumed from .*\.ckpt after the init and [\d.]+% of pass 1 \(/);
    const o = JSON.parse(resumed.stdout);
    expect(o.tableCrc32).toBe(crc);
    // The resumed pass is still one pass: one record each, numbered from 1, none unfinished.
    expect(o.passLog.map((r: { pass: number }) => r.pass)).toEqual(Array.from({ length: o.passes }, (_, i) => i + 1));
    expect(o.passLog.some((r: { unitsDone?: number }) => r.unitsDone !== undefined)).toBe(false);
    expect(o.passLog[0].newlyProven).toBeGreaterThan(part.newlyProven);
    expect(readDatabase(out).header.bodyCrc32).toBe(crc);
    expect(existsSync(`${out}.ckpt`)).toBe(false);
  }, 600_000); // 7x7/3 twice (the killed part and the rest): 84 s alone, minutes on a loaded machine

  it('kill -9 after a checkpoint of the distances (7x7/2), then --resume: the same distances', () => {
    const out = join(dir, 'killed-distances.ccdb');
    const args = ['solve', '--board', '7', '--pieces', '2', '--distances', '--out', out];
    const killed = runHooked({ killInDistances: 10 }, [...args, '--checkpoint-minutes', '0']);
    expect(killed.signal, killed.stderr).toBe('SIGKILL');
    expect(existsSync(out)).toBe(false);
    const { header } = readDatabase(`${out}.ckpt`);
    expect(header).toMatchObject({ stage: 'checkpoint', maxDistance: 10 });
    expect(header.distanceBytes).toBe(header.storedStates);

    const resumed = run([...args, '--resume', '--json']);
    expect(resumed.status, resumed.stderr).toBe(0);
    expect(resumed.stderr).toMatch(/resumed from .*\.ckpt after pass \d+ and distance layers 0-10 \([\d.]+% of the won and lost states placed\)/);
    const o = JSON.parse(resumed.stdout);
    expect(o.tableCrc32).toBe(0x0b785a50);
    expect(o.distances).toMatchObject({ maxPlies: 37, crc32: 0x5926a8d1, resumedFromLayer: 10 });
    expect(readDatabase(out).header).toMatchObject({ stage: 'complete', maxDistance: 37, distanceCrc32: 0x5926a8d1 });
    expect(existsSync(`${out}.ckpt`)).toBe(false);
  });
});
