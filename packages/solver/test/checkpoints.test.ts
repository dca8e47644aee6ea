/**
 * Checkpoints inside a pass (solve.ts, issue 36): a pass interrupted at a unit boundary and
 * resumed from its checkpoint is still one pass, and gives the same table, pass by pass, as a
 * pass run in one piece; on every backend this machine loads, in a full pass, a listed one and a
 * sparse one sweeping down. The distances likewise, between their layers and inside one.
 */
import { copyFileSync, existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Backend, LOST_WITHOUT_DISTANCE, MAX_DISTANCE, WIN, lostCheckedMark, readValue, variant } from '@ccheckers/core';
import { afterAll, describe, expect, it } from 'vitest';
import { type InPass, type PassRecord, type SolveResult, SolveInterrupted, availableBackends, readDatabase, solve, unitsAfter, writeDatabase } from '../src/index.js';
import { passesDone } from '../src/pass-log.js';

const dir = mkdtempSync(join(tmpdir(), 'ccheckers-ckpt-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const backends = await availableBackends();

/** What a pass proved, without its time. */
const proofs = (log: PassRecord[]) => log.map(({ pass, proven, newlyProven, sparse, listed }) => ({ pass, proven, newlyProven, sparse, listed }));

describe('passesDone: the passes end with one that proves nothing', () => {
  const record = (pass: number, newlyProven: number, unitsDone?: number): PassRecord => ({ pass, proven: 10, newlyProven, seconds: 1, unitsDone });
  it('the last finished pass proved nothing: done; anything else: not', () => {
    expect(passesDone([record(1, 5), record(2, 0)])).toBe(true);
    expect(passesDone([])).toBe(false);
    expect(passesDone([record(1, 5)])).toBe(false);
    expect(passesDone([record(1, 0), record(2, 3)])).toBe(false);
    // An unfinished pass that has proved nothing so far is not the end.
    expect(passesDone([record(1, 5), record(2, 0, 7)])).toBe(false);
  });
});

describe('unitsAfter: the chunks of a sweep left after its first units', () => {
  const chunks: Array<[number, number]> = [
    [0, 4],
    [4, 8],
    [8, 10],
  ];
  it('ascending: from the first unit not done', () => {
    expect(unitsAfter(chunks, 0, false)).toEqual(chunks);
    expect(unitsAfter(chunks, 4, false)).toEqual([
      [4, 8],
      [8, 10],
    ]);
    expect(unitsAfter(chunks, 5, false)).toEqual([
      [5, 8],
      [8, 10],
    ]);
    expect(unitsAfter(chunks, 10, false)).toEqual([]);
  });
  it('descending (a sparse pass down): the chunks come last first, each visited from its top', () => {
    const down = [...chunks].reverse();
    expect(unitsAfter(down, 1, true)).toEqual([
      [8, 9],
      [4, 8],
      [0, 4],
    ]);
    expect(unitsAfter(down, 3, true)).toEqual([
      [4, 7],
      [0, 4],
    ]);
    expect(unitsAfter(down, 10, true)).toEqual([]);
  });
});

/** `backend` with a solver kernel that records the unit ranges of its pass calls in `calls`. */
function recordingCalls(backend: Backend, calls: Array<[string, number, number]>): Backend {
  const recording = Object.create(backend) as Backend;
  recording.solverKernel = (v, rules) => {
    const kernel = backend.solverKernel(v, rules);
    return new Proxy(kernel, {
      get(target, prop) {
        const value = Reflect.get(target, prop, target) as unknown;
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          if (prop === 'pass' || prop === 'listedPass' || prop === 'sparsePass') calls.push([prop, args[1] as number, args[2] as number]);
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
  };
  return recording;
}

describe.each(backends.map((b) => [b.name, b] as const))('a pass checkpointed inside, on %s', (name, backend) => {
  const v = variant(7, 2);
  let whole: SolveResult;

  it('7x7/2 in one piece', async () => {
    whole = await solve({ variant: v, rules: 'clean', backend, threads: 1 });
    // Pass 2 is listed (pass 1's units, the states unknown at its start), pass 4 sparse and
    // sweeps down: the tests below stop in the three kinds of sweep.
    expect(whole.passLog[0]!.sparse).toBe(false);
    expect(whole.passLog[1]).toMatchObject({ sparse: false, listed: true });
    expect(whole.passLog[2]!.sparse).toBe(true);
    expect(whole.passLog[3]!.sparse).toBe(true);
  });

  it.each([1, 2, 4])('stopped inside pass %i, then resumed: the same passes and table', async (target) => {
    const out = join(dir, `${name}-${target}.ccdb`);
    const controller = new AbortController();
    const saved: Array<[number, InPass | undefined]> = [];
    const stopped = solve({
      variant: v,
      rules: 'clean',
      backend,
      threads: 1,
      out,
      checkpointMinutes: 0, // at every unit boundary between kernel calls
      signal: controller.signal,
      onCheckpoint: (passes, inPass) => {
        saved.push([passes, inPass]);
        if (inPass?.pass === target) controller.abort();
      },
    });
    await expect(stopped).rejects.toThrow(SolveInterrupted);
    await expect(stopped).rejects.toThrow(new RegExp(`% of pass ${target} are saved in .*\\.ckpt, continue with --resume`));
    // The abort is seen at the boundary of that checkpoint: one checkpoint inside the pass.
    const inside = saved.filter(([, p]) => p?.pass === target).map(([passes, p]) => ({ passes, ...p! }));
    expect(inside).toHaveLength(1);
    expect(inside[0]!.passes).toBe(target - 1);
    expect(inside[0]!.unitsDone).toBeGreaterThan(0);
    expect(inside[0]!.unitsDone).toBeLessThan(inside[0]!.units);
    const { header } = readDatabase(`${out}.ckpt`);
    expect(header).toMatchObject({ stage: 'checkpoint', passes: target - 1 });
    expect(header.passLog).toHaveLength(target);
    expect(header.passLog[target - 1]).toMatchObject({ pass: target, unitsDone: inside[0]!.unitsDone });

    const events: Array<{ pass: number; fraction: number }> = [];
    const calls: Array<[string, number, number]> = [];
    const resumed = await solve({
      variant: v,
      rules: 'clean',
      backend: recordingCalls(backend, calls),
      threads: 1,
      out,
      resume: true,
      onProgress: (e) => e.phase === 'resumed' && events.push({ pass: e.pass, fraction: e.fraction }),
    });
    expect(events).toEqual([{ pass: target - 1, fraction: inside[0]!.unitsDone / inside[0]!.units }]);
    expect(resumed.resumedFromPass).toBe(target - 1);
    // The pass went on at the first unit not done: passes 1 and 2 (listed, its lists made again)
    // sweep the units up, pass 4 (sparse) the groups down.
    const { unitsDone, units } = inside[0]!;
    expect(calls[0]).toEqual(
      target === 1 ? ['pass', unitsDone, expect.any(Number)] : target === 2 ? ['listedPass', unitsDone, expect.any(Number)] : ['sparsePass', expect.any(Number), units - unitsDone],
    );
    // One record per pass, none with unitsDone, and the same proofs pass by pass: the resumed
    // pass went on at the same unit boundary.
    expect(resumed.passLog.every((r) => r.unitsDone === undefined)).toBe(true);
    expect(proofs(resumed.passLog)).toEqual(proofs(whole.passLog));
    expect(resumed.tableCrc32).toBe(whole.tableCrc32);
    expect(existsSync(`${out}.ckpt`)).toBe(false);
    expect(readDatabase(out).header.passLog.map((r) => r.pass)).toEqual(whole.passLog.map((r) => r.pass));
  });

  it.each([1, 2])('stopped inside pass %i, resumed on 2 threads (other chunks; ts: worker threads, without lists): the same table', async (target) => {
    const out = join(dir, `${name}-threads-${target}.ccdb`);
    const controller = new AbortController();
    const stopped = solve({
      variant: v,
      rules: 'clean',
      backend,
      threads: 1,
      out,
      checkpointMinutes: 0,
      signal: controller.signal,
      onCheckpoint: (_passes, inPass) => inPass?.pass === target && inPass.unitsDone * 3 >= inPass.units && controller.abort(),
    });
    await expect(stopped).rejects.toThrow(new RegExp(`% of pass ${target} are saved`));
    const resumed = await solve({ variant: v, rules: 'clean', backend, threads: 2, out, resume: true });
    // Not always in as many passes: two threads prove in another order (and the TS backend's
    // worker threads run no listed pass), so a pass may prove what the next would have.
    expect(resumed.passLog.at(-1)!.newlyProven).toBe(0);
    expect(resumed.tableCrc32).toBe(whole.tableCrc32);
  });
});

describe.each(backends.map((b, i) => [b.name, b, backends[(i + 1) % backends.length]!] as const))('distances checkpointed, on %s', (name, backend, other) => {
  const v = variant(4, 3); // 22 layers, 0.8 s on the TS kernel
  let whole: SolveResult;

  it('4x4/3 with distances in one piece', async () => {
    whole = await solve({ variant: v, rules: 'clean', backend, threads: 2, distances: true });
    expect(whole.distances!.maxPlies).toBeGreaterThan(20);
  });

  it('a checkpoint after every layer; stopped halfway through layer 14, then resumed on the next backend: the same distances', async () => {
    const out = join(dir, `${name}-distances.ccdb`);
    const controller = new AbortController();
    const layers: number[] = [];
    const stopped = solve({
      variant: v,
      rules: 'clean',
      backend,
      threads: 2,
      out,
      distances: true,
      checkpointMinutes: 0,
      signal: controller.signal,
      onCheckpoint: (_passes, inPass, layer) => {
        if (layer === undefined) return;
        expect(inPass).toBeUndefined();
        layers.push(layer);
      },
      onProgress: (e) => e.phase === 'distances' && e.pass === 14 && e.fraction >= 0.5 && controller.abort(),
    });
    // One checkpoint after the init and after each of layers 1-13 (depth d pushed: layer d + 1
    // as the progress numbers them), then one halfway through layer 14, at the first chunk
    // boundary after the abort. Its depth 13 is odd: won states push to lost parents, and mark
    // the ones they find undecided.
    await expect(stopped).rejects.toThrow(/the init, passes 1-\d+ and distance layers 0-13 are saved in .*\.ckpt, continue with --resume/);
    expect(layers).toEqual([...Array.from({ length: 14 }, (_, i) => i), 13]);
    const { header, distances } = readDatabase(`${out}.ckpt`, undefined, true);
    expect(header).toMatchObject({ stage: 'checkpoint', distanceBytes: whole.storedStates, maxDistance: 13 });
    expect(header.passLog.at(-1)!.newlyProven).toBe(0);
    // Both marks of lost states without a distance are in the checkpoint (a database holds none):
    // the layer run again must trust the checks its first part marked.
    expect(distances!.includes(LOST_WITHOUT_DISTANCE)).toBe(true);
    expect(distances!.includes(lostCheckedMark(13))).toBe(true);
    const plain = join(dir, `${name}-plain.ccdb`);
    copyFileSync(`${out}.ckpt`, `${plain}.ckpt`);

    // Resumed on the next backend this machine loads: the marks are the same bytes in both kernels.
    const events: Array<{ pass: number; distanceLayer?: number }> = [];
    const resumed = await solve({
      variant: v,
      rules: 'clean',
      backend: other,
      threads: 2,
      out,
      resume: true,
      distances: true,
      onProgress: (e) => e.phase === 'resumed' && events.push({ pass: e.pass, distanceLayer: e.distanceLayer }),
    });
    expect(events).toEqual([{ pass: header.passes, distanceLayer: 13 }]);
    // No pass run again: the checkpoint's (2 threads may take a pass more or less than `whole`).
    expect(resumed.passLog).toEqual(header.passLog);
    expect(resumed.tableCrc32).toBe(whole.tableCrc32);
    expect(resumed.distances).toMatchObject({ maxPlies: whole.distances!.maxPlies, crc32: whole.distances!.crc32, resumedFromLayer: 13 });
    expect(readDatabase(out).header).toMatchObject({ stage: 'complete', maxDistance: whole.distances!.maxPlies, distanceCrc32: whole.distances!.crc32 });
    expect(existsSync(`${out}.ckpt`)).toBe(false);

    // Without --distances the checkpoint is refused, not dropped, and stays as it was.
    const before = statSync(`${plain}.ckpt`);
    await expect(solve({ variant: v, rules: 'clean', backend, threads: 2, out: plain, resume: true })).rejects.toThrow(
      /-plain\.ccdb\.ckpt holds distance layers 0-13: continue with --resume --distances, or start over with --force/,
    );
    expect(statSync(`${plain}.ckpt`)).toMatchObject({ size: before.size, mtimeMs: before.mtimeMs });
    expect(existsSync(plain)).toBe(false);

    // A checkpoint whose next layer is past the last one a byte holds (a forged header, its
    // checksums right) is refused before any layer runs.
    const forged = join(dir, `${name}-forged.ccdb`);
    const { header: h, table, distances: d } = readDatabase(`${plain}.ckpt`, undefined, true);
    writeDatabase(`${forged}.ckpt`, { ...h, maxDistance: MAX_DISTANCE }, table, d);
    await expect(solve({ variant: v, rules: 'clean', backend, threads: 2, out: forged, resume: true, distances: true })).rejects.toThrow(
      /-forged\.ccdb\.ckpt: it holds distances from layer 251 on, past the last one \(250\)/,
    );
    // Nor one whose distances end elsewhere than at the layer it names (13, partly done: 14).
    for (const [depth, why] of [
      [200, /-forged\.ccdb\.ckpt: its distances do not end at the layer it names \(200\): none is 200 or 201/],
      [5, /-forged\.ccdb\.ckpt: its distances do not end at the layer it names \(5\): some are deeper than 6/],
    ] as const) {
      writeDatabase(`${forged}.ckpt`, { ...h, maxDistance: depth }, table, d);
      await expect(solve({ variant: v, rules: 'clean', backend, threads: 2, out: forged, resume: true, distances: true })).rejects.toThrow(why);
    }
    // Nor does a pass follow the one that proved nothing (a part of one, forged after it).
    const last = h.passLog.at(-1)!;
    writeDatabase(`${forged}.ckpt`, { ...h, maxDistance: 0, passLog: [...h.passLog, { ...last, pass: last.pass + 1, unitsDone: 1 }] }, table);
    await expect(solve({ variant: v, rules: 'clean', backend, threads: 2, out: forged, resume: true })).rejects.toThrow(
      /-forged\.ccdb\.ckpt: its pass log goes on after a pass that proved nothing/,
    );
    expect(existsSync(forged)).toBe(false);
    expect(existsSync(`${forged}.ckpt`)).toBe(true);
    // Nor a pass log that says "done" over a table that is not (a won state made unknown again,
    // its checksums recomputed): the pass the resume runs first proves it, and the file is refused.
    const undone = Uint8Array.from(table);
    let won = 0;
    while (readValue(undone, won) !== WIN) won++;
    undone[won >>> 2] = undone[won >>> 2]! & ~(3 << ((won & 3) * 2));
    writeDatabase(`${forged}.ckpt`, { ...h, maxDistance: 0 }, undone);
    await expect(solve({ variant: v, rules: 'clean', backend, threads: 2, out: forged, resume: true })).rejects.toThrow(
      /-forged\.ccdb\.ckpt: its pass log says the passes were done, but a pass over its table proved \d+ more states: the checkpoint was damaged or forged/,
    );
    expect(existsSync(forged)).toBe(false);
  });
});

it('distances stopped at the end of a layer save the next one, and a complete database is no checkpoint', async () => {
  const [backend] = backends;
  const v = variant(7, 2);
  const whole = await solve({ variant: v, rules: 'clean', backend: backend!, threads: 2, distances: true });
  const out = join(dir, 'layer-end.ccdb');
  const controller = new AbortController();
  const saved: number[] = [];
  // Aborted once layer 6's second-to-last chunk is reported (its first report says how many
  // chunks it has): its last chunk is the next one seen.
  let chunks = 0;
  const stopped = solve({
    variant: v,
    rules: 'clean',
    backend: backend!,
    threads: 2,
    out,
    distances: true,
    signal: controller.signal,
    onCheckpoint: (_passes, _inPass, layer) => layer !== undefined && saved.push(layer),
    onProgress: (e) => {
      if (e.phase !== 'distances' || e.pass !== 6) return;
      if (chunks === 0) chunks = Math.round(1 / e.fraction);
      if (Math.round(e.fraction * chunks) === chunks - 1) controller.abort();
    },
  });
  await expect(stopped).rejects.toThrow(/distance layers 0-6 are saved/);
  expect(saved).toEqual([6]);
  const resumed = await solve({ variant: v, rules: 'clean', backend: backend!, threads: 2, out, resume: true, distances: true });
  expect(resumed.distances).toMatchObject({ maxPlies: whole.distances!.maxPlies, crc32: whole.distances!.crc32, resumedFromLayer: 6 });

  copyFileSync(out, join(dir, 'complete.ccdb.ckpt'));
  await expect(solve({ variant: v, rules: 'clean', backend: backend!, threads: 2, out: join(dir, 'complete.ccdb'), resume: true, distances: true })).rejects.toThrow(
    /complete\.ccdb\.ckpt is a complete database, not a checkpoint/,
  );
});

it('a checkpoint interval that is not a number of minutes from 0 up is refused', async () => {
  const [backend] = backends;
  for (const checkpointMinutes of [-1, Number.NaN]) {
    await expect(solve({ variant: variant(7, 1), rules: 'clean', backend: backend!, threads: 1, checkpointMinutes })).rejects.toThrow(
      /checkpointMinutes .* is not a number of minutes from 0 up/,
    );
  }
});
