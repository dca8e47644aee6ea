/**
 * Band passes (store/band-solve.ts): for any band count and memory budget, every backend and
 * thread count, the same counts, start value and table CRC-32 as the in-memory solve; a solve
 * stopped at any save resumes to the same table; a damaged message or band file is refused with
 * its name, and nothing is overwritten.
 */
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { crc32 } from 'node:zlib';
import { join } from 'node:path';
import { StateSpace, seededRandom, unknownStates, variant } from '@ccheckers/core';
import { afterAll, describe, expect, it } from 'vitest';
import {
  DatabaseError,
  ShardStore,
  ShardedSolveInterrupted,
  availableBackends,
  bandLayout,
  childGroupsInProofOrder,
  copyStates,
  MAX_STATES_PER_CALL,
  UNITS_CALL_SECONDS,
  requestChunks,
  unitsCallSize,
  planBands,
  minMessageBytes,
  bandBytes,
  shardLayout,
  checkStore,
  manifestText,
  solveSharded,
  storeBandLayout,
  BandStepper,
  BandSolve,
  createBandStore,
  planBandStore,
  type ScheduleKind,
} from '../src/index.js';
import { type MessagePack, hasTarget } from '../src/store/message-pack.js';
import { MAX_WAIT_SECONDS, WAIT_AFTER_UNITS } from '../src/store/others-progress.js';
import { encodeProofs, proofFileName } from '../src/store/proof-exchange.js';
import { claimFileName } from '../src/store/slice-claims.js';
import { IN_MEMORY, sameTable } from './support/in-memory.js';

/** Where the values section for `target` of a message pack starts (message-pack-format.ts: the layout). */
function sectionStart(pack: Buffer, target: number): number {
  const trailer = pack.length - 32;
  const [entries, extents] = [pack.readUInt32LE(trailer + 8), pack.readUInt32LE(trailer + 12)];
  const directory = trailer - entries * 80;
  const extentsAt = directory - extents * 16;
  for (let i = 0; i < entries; i++) {
    // An entry per target: target, then first extent, extents, messages, CRC-32 of its values.
    const field = (k: number) => pack.readDoubleLE(directory + (i * 10 + k) * 8);
    if (field(0) === target && field(2) > 0) return pack.readDoubleLE(extentsAt + field(1) * 16);
  }
  throw new Error(`no values section for band ${target}`);
}

const dir = mkdtempSync(join(tmpdir(), 'ccheckers-bands-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const backends = await availableBackends();
/** The first native backend (native-bmi2 where the CPU has BMI2), if one loads. */
const fastest = backends.find((b) => b.kernelThreads);
let stores = 0;
const newStore = () => join(dir, `store-${stores++}`);

const same = sameTable;

/** A budget whose band is 1/`of` of the table, with as much (at least a MiB) for messages. */
function budgetFor(board: number, pieces: number, of: number): number {
  const space = new StateSpace(variant(board, pieces));
  const plan = planBands(space, { kernelCopies: 1 });
  return plan.overheadBytes + space.tableBytes / of + Math.max(2 ** 20, space.tableBytes / of);
}

describe('band layouts', () => {
  for (const [board, pieces, bands] of [
    [7, 2, 3],
    [4, 6, 16],
    [7, 3, 7],
  ] as const) {
    it(`${board}x${board}/${pieces} in ${bands} bands: every group in one slot of one band, every unit in the band of its children`, () => {
      const space = new StateSpace(variant(board, pieces));
      const layout = bandLayout(space, bands);
      expect(layout.bands).toBe(bands);
      const seen = new Uint8Array(space.groups);
      layout.groupsOf.forEach((groups, b) => {
        groups.forEach((g, slot) => {
          expect(layout.bandOf[g]).toBe(b);
          expect(layout.slotOf[g]).toBe(slot);
          seen[g]!++;
        });
      });
      expect(seen.every((n) => n === 1)).toBe(true);
      // Bands of as equal a size as can be.
      const sizes = layout.groupsOf.map((g) => g.length);
      expect(Math.max(...sizes) - Math.min(...sizes)).toBeLessThanOrEqual(1);
      const child = childGroupsInProofOrder(space);
      const units = new Uint8Array(space.p1Placements);
      layout.unitsOf.forEach((list, b) => {
        for (let i = 0; i < list.length; i++) {
          if (i > 0) expect(list[i]).toBeGreaterThan(list[i - 1]!);
          expect(layout.bandOf[child[list[i]!]!]).toBe(b);
          units[list[i]!]!++;
        }
      });
      expect(units.every((n) => n === 1)).toBe(true);
    });
  }
});

describe('band plans', () => {
  const space = new StateSpace(variant(7, 3));
  it('split the budget into a band and messages, within the budget', () => {
    const budget = planBands(space, { kernelCopies: 1 }).overheadBytes + space.tableBytes / 4;
    const plan = planBands(space, { budget, kernelCopies: 1 });
    expect(plan.bandBytes + plan.messageBytes + plan.overheadBytes).toBeLessThanOrEqual(budget);
    expect(plan.bandBytes).toBeLessThanOrEqual(space.tableBytes / 8);
    // The rest of the budget for messages (at least the band's half of it, at most twice the band).
    expect(plan.bandBytes + plan.messageBytes + plan.overheadBytes).toBe(Math.floor(budget));
    expect(plan.messageBytes).toBeGreaterThan(plan.bandBytes);
    expect(plan.bands).toBeGreaterThanOrEqual(8);
    expect(plan.bands).toBeLessThanOrEqual(9); // whole groups
  });
  it('refuse a budget below one band and its messages, naming the minimum', () => {
    const plan = planBands(space, { bands: 4, kernelCopies: 1 });
    const minimum = plan.overheadBytes + plan.bandBytes + minMessageBytes(space);
    expect(minMessageBytes(space)).toBe(16 * 8 * space.p2Placements); // 1.9 MiB: a unit's states, 16 messages each
    expect(planBands(space, { bands: 4, budget: minimum, kernelCopies: 1 }).messageBytes).toBe(minMessageBytes(space));
    expect(() => planBands(space, { bands: 4, budget: minimum - 1, kernelCopies: 1 })).toThrow(/too small .* in 4 bands .* one band, 1\.9 MiB of messages .* in all/);
  });
  it('bound the bands: at most 4096 (7x7/3), bands of 4 KiB at least (7x7/2), a budget\'s too', () => {
    expect(planBands(space, { bands: 4096, kernelCopies: 1 }).bands).toBe(4096);
    expect(() => planBands(space, { bands: 4097, kernelCopies: 1 })).toThrow(/^--shards 4097 is more than 7x7\/3 takes: at most 4096 \(a store's solve has at most 4096 bands\)$/);
    const small = new StateSpace(variant(7, 2));
    expect(planBands(small, { bands: 77, kernelCopies: 1 }).bands).toBe(77);
    expect(() => planBands(small, { bands: 78, kernelCopies: 1 })).toThrow(/^--shards 78 is more than 7x7\/2 takes: at most 77 \(a band of 7x7\/2 holds at least 4\.0 KiB of its 310\.4 KiB table\)$/);
    // A store being resumed keeps the bands it has (made by an earlier version, unbounded).
    expect(planBands(small, { bands: 294, kernelCopies: 1, storeBands: true }).bands).toBe(294);
    // A budget that would need more bands than that is refused in 4096, naming the minimum.
    const overhead = planBands(space, { kernelCopies: 1 }).overheadBytes;
    expect(() => planBands(space, { budget: overhead + minMessageBytes(space) + 2 ** 12, kernelCopies: 1 })).toThrow(/is too small for 7x7\/3 in 4096 bands of up to .* in all$/);
  });
  it('take no more than they use from a large budget', () => {
    const small = new StateSpace(variant(7, 2));
    const plan = planBands(small, { budget: 30 * 2 ** 30, kernelCopies: 1 });
    expect(plan.bands).toBe(1);
    expect(plan.bandBytes + plan.messageBytes).toBeLessThanOrEqual(small.tableBytes + minMessageBytes(small));
  });
  it('hold a shard of the store in the band buffer, and refuse bands over 4 GiB (one typed array)', () => {
    for (const n of [3, 4, 9]) {
      expect(planBands(space, { bands: n, kernelCopies: 1 }).bandBytes).toBe(
        Math.max(bandBytes(space, Math.ceil(space.groups / n)), ...shardLayout(space, n).shards.map((s) => s.bytes)),
      );
    }
    // 6x6/6: a 134.8 GiB table; 34 bands would be 3.96 GiB, the shards of 4 groups a little more.
    const big = new StateSpace(variant(6, 6));
    expect(() => planBands(big, { bands: 33, kernelCopies: 1 })).toThrow(/bands of 6x6\/6 in 33 would be over 4 GiB .*: use --shards 35 or more/);
    expect(planBands(big, { bands: 35, kernelCopies: 1 }).bandBytes).toBeLessThanOrEqual(2 ** 32);
  });
});

describe('units calls', () => {
  it('are sized by time as well as memory: a few units first, then about the seconds asked for, growing at most twofold', () => {
    expect(unitsCallSize(10_000, 500, 0, UNITS_CALL_SECONDS)).toBe(8); // none timed yet
    expect(unitsCallSize(5, 500, 0, UNITS_CALL_SECONDS)).toBe(5);
    expect(unitsCallSize(10_000, 500, 0.01, 2)).toBe(200); // by time
    expect(unitsCallSize(10_000, 50, 0.01, 2)).toBe(50); // by memory
    expect(unitsCallSize(10_000, 500, 10, 2)).toBe(1); // a unit longer than the call: one
    // 7x7/4 in 5 bands: 42,376 units a band at 37 ms a unit (one thread, pass 1) make calls of 54
    // units for 2 s, where memory alone allowed the whole band.
    expect(unitsCallSize(42_376, 42_376, 0.037, 2)).toBe(54);
  });

  it('request calls cover at most MAX_STATES_PER_CALL states (7x7/4: 450 groups a call)', () => {
    const per = 37;
    const slots = 200;
    const known = new Uint8Array(Math.ceil((slots * per) / 4)).fill(0x55);
    // A bound of 5 slots' states: calls of 5 slots, not the sixteenths' 13.
    const chunks = requestChunks(known, slots, per, 1e9, 5 * per + 3);
    expect(chunks.map(([from, to]) => to - from)).toEqual(Array<number>(40).fill(5));
    expect(requestChunks(known, slots, per, 1e9).length).toBe(16); // the default bound is far
    expect(Math.floor(MAX_STATES_PER_CALL / 148_995)).toBe(450);
  });
});

describe('request calls', () => {
  it('cover the band in slot ranges of at most the limit of unknown states (or one slot), at least 16', () => {
    const random = seededRandom(3);
    const per = 37;
    for (const [slots, share, limit] of [[200, 0.5, 100], [200, 0.01, 100], [200, 0, 10], [5, 1, 10], [300, 0.9, 20]] as const) {
      const table = new Uint8Array(Math.ceil((slots * per) / 4));
      for (let i = 0; i < slots * per; i++) if (random() >= share) table[Math.floor(i / 4)]! |= 1 << ((i % 4) * 2);
      const chunks = requestChunks(table, slots, per, limit);
      expect(chunks[0]![0]).toBe(0);
      expect(chunks.at(-1)![1]).toBe(slots);
      chunks.forEach(([from, to], i) => {
        expect(to).toBeGreaterThan(from);
        if (i > 0) expect(from).toBe(chunks[i - 1]![1]);
        expect(to - from).toBeLessThanOrEqual(Math.ceil(slots / 16));
        if (to - from > 1) expect(unknownStates(table, from * per, to * per)).toBeLessThanOrEqual(limit);
      });
      // Few unknown states: as few calls as the sixteenths allow.
      if (share === 0) expect(chunks.length).toBe(16);
    }
  });
});

describe('copying states between bands and shards', () => {
  it('copies 2-bit states at any offsets, aligned or not', () => {
    const src = Uint8Array.from({ length: 40 }, (_, i) => (i * 37 + 11) & 255);
    const at = (bytes: Uint8Array, i: number) => (bytes[Math.floor(i / 4)]! >> ((i % 4) * 2)) & 3;
    // Every phase of source and destination in a byte, counts that end in each phase, with and
    // without whole destination bytes; nothing written outside [to, to + count).
    for (let from = 0; from < 8; from++) {
      for (let to = 0; to < 8; to++) {
        for (const count of [0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 61, 100]) {
          const dst = new Uint8Array(40);
          copyStates(src, from, dst, to, count);
          for (let i = 0; i < 4 * dst.length; i++) {
            const want = i >= to && i < to + count ? at(src, from + i - to) : 0;
            if (at(dst, i) !== want) expect({ from, to, count, state: i, value: at(dst, i) }).toEqual({ from, to, count, state: i, value: want });
          }
        }
      }
    }
  });
  it('copies to states on both sides of 2^32 (a shard of up to 4 GiB holds 2^34)', () => {
    const dst = new Uint8Array(2 ** 30 + 8);
    const src = Uint8Array.of(0b11100100, 0b00011011, 0b10011100);
    for (const to of [2 ** 32 - 6, 2 ** 32 + 3]) {
      dst.fill(0, 2 ** 30 - 4);
      copyStates(src, 1, dst, to, 10);
      for (let i = 0; i < 10; i++) expect((dst[Math.floor((to + i) / 4)]! >> (((to + i) % 4) * 2)) & 3).toBe((src[Math.floor((1 + i) / 4)]! >> (((1 + i) % 4) * 2)) & 3);
    }
    // Nothing written below 2^32 - 6 states: an index wrapped by >>> would land near 0.
    expect(dst.subarray(0, 2 ** 20).every((b) => b === 0)).toBe(true);
  });
});

describe.each(backends.map((b) => [b.name, b] as const))('band solves on %s', (_name, backend) => {
  // [board, pieces, bands, budget as 1/n of the table (0: none), threads, workers the rounds are
  // made for (a local solve runs the steps a cluster of that many would), how the rounds are cut
  // (default: segments, for so few bands), units a slice, and whether the run is a kernel's (every
  // backend) or the schedule's alone]. Rounds, blocks and segments are the solver's TS, the same on
  // every backend: they run on the fastest kernel alone and leave the others the runs their own
  // code takes (threads, budgets, bands of one or many groups, the shared parts' sweeps).
  const runs: Array<[number, number, number, number, number, number, ScheduleKind | undefined, number | undefined, 'kernel' | 'schedule']> = [
    [7, 2, 1, 0, 1, 1, undefined, undefined, 'kernel'],
    [7, 2, 3, 0, 2, 1, undefined, undefined, 'schedule'],
    [7, 2, 16, 0, 2, 1, undefined, undefined, 'kernel'],
    [7, 2, 0, 4, 1, 1, undefined, undefined, 'kernel'], // the budget sets the bands
    [7, 2, 4, 0, 1, 2, undefined, undefined, 'schedule'],
    [7, 2, 4, 0, 1, 3, undefined, undefined, 'schedule'],
    [7, 2, 16, 0, 1, 3, undefined, undefined, 'schedule'],
    [4, 6, 0, 6, 2, 1, undefined, undefined, 'kernel'],
    [4, 6, 3, 0, 2, 1, undefined, undefined, 'schedule'],
    [4, 6, 16, 0, 1, 1, undefined, undefined, 'kernel'],
    [4, 6, 4, 0, 1, 3, undefined, undefined, 'schedule'],
    [4, 6, 16, 0, 2, 2, undefined, undefined, 'schedule'],
    // Blocks: many small bands, a round of W consecutive ones (each message pack read by many).
    [7, 2, 48, 0, 1, 4, 'blocks', undefined, 'schedule'],
    [4, 6, 32, 0, 2, 3, 'blocks', undefined, 'schedule'],
    // Shared steps: the bands in order, each visited in pass 1 by W parts in slices of a unit
    // (or 4: a kernel call each), more parts than bands too, the parts exchanging their proofs.
    [7, 2, 16, 0, 1, 8, 'shared', undefined, 'kernel'],
    [7, 2, 4, 0, 2, 6, 'shared', undefined, 'schedule'],
    [4, 6, 16, 0, 2, 3, 'shared', 4, 'kernel'],
  ].filter((run) => backend === fastest || run[8] === 'kernel') as typeof runs;
  // 7x7/3 (141 million states) in an eighth of its table and as much for messages (a quarter in
  // all): on the fastest kernel only (native-portable runs the same code with pext emulated, and
  // band-kernel.test.ts holds its steps to the others'; the TS kernel takes minutes; in bands for
  // 2 workers: the cluster's tests).
  if (backend === fastest) runs.push([7, 3, 0, 8, 2, 1, undefined, undefined, 'kernel']);
  for (const [board, pieces, bands, of, threads, workers, schedule, sliceUnits] of runs) {
    it(`${board}x${board}/${pieces} in ${bands || 'budgeted'} bands, ${of === 0 ? 'no budget' : `a budget of 1/${of} of the table`}, ${threads} thread(s), rounds for ${workers} worker(s)${schedule ? ` in ${schedule}` : ''}${sliceUnits ? ` of ${sliceUnits} units` : ''}: the in-memory table`, async () => {
      const memoryLimit = of === 0 ? undefined : budgetFor(board, pieces, of);
      let planned: unknown;
      const r = await solveSharded({
        variant: variant(board, pieces),
        rules: 'clean',
        backend,
        threads,
        store: newStore(),
        workers,
        ...(schedule ? { schedule } : {}),
        ...(sliceUnits ? { sliceUnits } : {}),
        ...(bands > 0 ? { shards: bands } : {}),
        ...(memoryLimit !== undefined ? { memoryLimit } : {}),
        onPlan: (p) => (planned = p),
      });
      expect(same(r)).toEqual(IN_MEMORY.get(`${board}/${pieces}`)!);
      expect(r.passLog.at(-1)!.newlyProven).toBe(0);
      // The last pass changes no band: each keeps its file (only message packs are written, less
      // than the bands would be; with many bands the requests that cross them are many).
      const tableBytes = new StateSpace(variant(board, pieces)).tableBytes;
      expect(r.passLog.at(-1)!.bytesWritten).toBeLessThan(bands >= 32 ? tableBytes : tableBytes / 2);
      expect(r.passLog[0]!.bytesWritten).toBeGreaterThanOrEqual(tableBytes);
      const plan = planned as { bands: number; bandBytes: number; messageBytes: number; overheadBytes: number };
      expect(r.shards).toBe(plan.bands);
      expect(r.workers).toBe(schedule === 'shared' ? workers : Math.min(workers, plan.bands));
      expect(r.schedule).toBe(schedule ?? 'segments');
      if (bands > 0) expect(plan.bands).toBe(bands);
      if (memoryLimit !== undefined) {
        // The band a little under 1/of of the table (whole groups): `of` bands, or one more.
        expect(plan.bands).toBeGreaterThanOrEqual(of);
        expect(plan.bands).toBeLessThanOrEqual(of + 1);
        expect(plan.bandBytes + plan.messageBytes + plan.overheadBytes).toBeLessThanOrEqual(memoryLimit);
      }
      // Bands keep the in-memory pass's proofs: pass 1 decides most of the table (with rounds of
      // several bands, the chains that cross into the next worker's bands wait a pass: about 1/W;
      // blocks lose most chains, docs/sharding.md: 7x7/2 in 48 bands for 4, 5.3%; shared steps
      // keep them: 7x7/2 in 16 bands for 8, 97.6% of what init left as serially, segments 14.3%).
      const least = workers === 1 ? 0.9 : schedule === 'blocks' ? 0.03 : schedule === 'shared' ? 0.85 : 0.25;
      expect(r.passLog[0]!.proven / r.storedStates).toBeGreaterThan(least);
    }, 300_000); // a hang catcher: 7x7/3 took 134-142 s on a machine at load 10
  }
});

describe('progress of band solves', () => {
  it('says each round as it starts, so a pass is timed from its first round (a cluster reports steps only as they end)', async () => {
    const events: Array<{ phase: string; pass: number; fraction: number }> = [];
    const r = await solveSharded({
      variant: variant(7, 2),
      rules: 'clean',
      backend: backends[0]!,
      threads: 1,
      store: newStore(),
      shards: 4,
      workers: 2,
      onProgress: (e) => events.push({ phase: e.phase, pass: e.pass, fraction: e.fraction }),
    });
    const rounds = Math.ceil(4 / 2);
    for (let pass = 1; pass <= r.passes; pass++) {
      const fractions = events.filter((e) => e.phase === 'pass' && e.pass === pass).map((e) => e.fraction);
      // Each round's start (round / rounds) comes, in order, before anything of that round.
      expect(fractions[0]).toBe(0);
      for (let round = 0; round < rounds; round++) expect(fractions).toContain(round / rounds);
      expect([...fractions].sort((a, b) => a - b)).toEqual(fractions);
    }
  });
});

describe('interrupted band solves', () => {
  it('start again in a folder a solve killed before its first save left (its lock and temporary files only)', async () => {
    const store = newStore();
    mkdirSync(store);
    writeFileSync(join(store, 'manifest.json.lock'), '999999\n');
    writeFileSync(join(store, 'band-00000.g1.bin.tmp-999999'), 'half a band');
    for (const resume of [true, false]) {
      if (!resume) {
        rmSync(store, { recursive: true });
        mkdirSync(store);
        writeFileSync(join(store, 'manifest.json.lock'), '999999\n');
      }
      const r = await solveSharded({ variant: variant(7, 2), rules: 'clean', backend: backends[0]!, threads: 1, store, shards: 3, resume });
      expect(same(r)).toEqual(IN_MEMORY.get('7/2')!);
      expect(readdirSync(store).filter((f) => f.includes('.tmp-') || f.startsWith('band-'))).toEqual([]);
    }
    const other = newStore();
    mkdirSync(other);
    writeFileSync(join(other, 'notes.txt'), 'mine');
    await expect(solveSharded({ variant: variant(7, 2), rules: 'clean', backend: backends[0]!, threads: 1, store: other })).rejects.toThrow(/is not empty/);
  });

  it.each(backends.flatMap((b) => (['segments', 'shared'] as const).map((kind) => [b.name, kind, b] as const)))('%s, %s: a step stopped inside its units leaves the next step (another band\'s) its kernels free', async (_name, kind, backend) => {
    // A cluster worker whose job stops (its lock lost) takes the next job, of another band, with
    // the same stepper: the sweep its kernel kept of the stopped band must not refuse it.
    const v = variant(7, 2);
    const dir = newStore();
    const controller = new AbortController();
    let saves = 0;
    await solveSharded({ variant: v, rules: 'clean', backend, threads: 1, store: dir, shards: 4, ...(kind === 'shared' ? { schedule: kind, workers: 2 } : {}), signal: controller.signal, onSave: () => {
      // init's rounds saved (shared: 2 bands a round, the steps read and send nothing): pass 1 is next
      if (++saves === (kind === 'shared' ? 2 : 4)) controller.abort();
    } }).catch(() => {});
    const store = ShardStore.open(dir);
    expect(store.manifest.bands!.next).toEqual({ pass: 1, round: 0 });
    const plan = planBands(store.space, { bands: store.pieces, kernelCopies: 1, storeBands: true });
    const stepper = new BandStepper({ backend, variant: v, rules: 'clean', threads: 1, space: store.space, layout: storeBandLayout(store), schedule: store.schedule, bandBufferBytes: plan.bandBytes, messageBytes: store.manifest.bands!.messageBytes });
    let calls = 0;
    const stop = () => {
      if (++calls === 2) throw new Error('stopped in its units');
    };
    const generation = store.manifest.generation;
    if (kind === 'shared') {
      // A part of a shared step (a cluster worker's slice job), then a part of the next band's.
      await expect(stepper.runSlice(store, { pass: 1, round: 0, band: 0, generation, part: 0 }, { beforeCall: stop })).rejects.toThrow('stopped in its units');
      const next = await stepper.runSlice(store, { pass: 1, round: 1, band: 1, generation, part: 0 });
      expect(next.proofs).toBeGreaterThan(0);
      return;
    }
    await expect(stepper.run(store, { pass: 1, round: 0, band: 0, generation }, { beforeCall: stop })).rejects.toThrow('stopped in its units');
    const next = await stepper.run(store, { pass: 1, round: 1, band: 1, generation });
    expect(next.changed).toBeGreaterThan(0);
  });

  it.each([
    ['publishes it while the part waits: it goes on with the proofs', true],
    ['never publishes it: the part waits MAX_WAIT_SECONDS once, and goes on', false],
  ])('a part of a shared step passes a slice another part holds by WAIT_AFTER_UNITS units; the other %s', async (_what, publishes) => {
    const v = variant(7, 2);
    const dir = newStore();
    const controller = new AbortController();
    let saves = 0;
    await solveSharded({ variant: v, rules: 'clean', backend: backends[0]!, threads: 1, store: dir, shards: 4, schedule: 'shared', workers: 2, signal: controller.signal, onSave: () => {
      if (++saves === 2) controller.abort(); // init's rounds (2 bands each) saved
    } }).catch(() => {});
    const store = ShardStore.open(dir);
    expect(store.manifest.bands!.next).toEqual({ pass: 1, round: 0 });
    const plan = planBands(store.space, { bands: store.pieces, kernelCopies: 1, storeBands: true });
    const layout = storeBandLayout(store);
    const stepper = new BandStepper({ backend: backends[0]!, variant: v, rules: 'clean', threads: 1, space: store.space, layout, schedule: store.schedule, bandBufferBytes: plan.bandBytes, messageBytes: store.manifest.bands!.messageBytes });
    const { generation } = store.manifest;
    const units = layout.unitsOf[0]!.length;
    expect(store.schedule.sliceUnits).toBe(1);
    expect(units).toBeGreaterThan(WAIT_AFTER_UNITS + 2);
    // Part 1 (its worker stopped, say) has claimed slice 1 and published nothing.
    writeFileSync(join(dir, claimFileName({ band: 0, generation, slice: 1 })), '1 bbbbbbbb\n');
    // Kernel calls and slices take two looks at the events between two slices; a wait many.
    let looks = 0;
    let published = false;
    const hooks = {
      beforeCall: () => {
        if (++looks === 5 && publishes && !published) {
          const id = { band: 0, generation, part: 1, attempt: 'bbbbbbbb', seq: 0 };
          writeFileSync(join(dir, proofFileName(id)), encodeProofs(id, new Uint32Array(0), new Uint32Array(0), 0, units));
          published = true;
        }
      },
      onProgress: () => {
        looks = 0;
      },
    };
    const part = await stepper.runSlice(store, { pass: 1, round: 0, band: 0, generation, part: 0 }, hooks);
    expect(part.slices).toBe(units - 1);
    expect(part.waited).toBeGreaterThan(0);
    expect(published).toBe(publishes);
    // Its file taken, as its claim named it: the part's attempts are the step's to commit.
    expect(part.took).toEqual(publishes ? ['bbbbbbbb'] : []);
    if (!publishes) expect(part.waited).toBeGreaterThanOrEqual(MAX_WAIT_SECONDS);
  });

  it('a shared step whose parts took proofs of an attempt not theirs runs them again, from no proof files: the same table', async () => {
    const v = variant(4, 6);
    const options = { variant: v, rules: 'clean' as const, backend: backends[0]!, threads: 1, shards: 4, schedule: 'shared' as const, workers: 2 };
    // Band 0 as it ends: its draws stay unknown through every pass, so a proof file may mark them.
    const clean = newStore();
    let band0: Uint32Array = new Uint32Array(0);
    await solveSharded({ ...options, store: clean, onSave: () => {
      const store = ShardStore.open(clean);
      if (store.manifest.bands === undefined) return; // the shards written: the band files gone
      const bytes = bandBytes(store.space, storeBandLayout(store).groupsOf[0]!.length);
      const words = new Uint32Array(Math.ceil(bytes / 4));
      store.loadBand(0, new Uint8Array(words.buffer, 0, bytes));
      band0 = words;
    } });
    const indices: number[] = [];
    const words: number[] = [];
    for (let i = 0; i + 1 < band0.length && indices.length < 8; i++) {
      let drawn = 0;
      for (let f = 0; f < 16; f++) if (((band0[i]! >>> (2 * f)) & 3) === 0) drawn |= 2 << (2 * f);
      if (drawn !== 0) {
        indices.push(i);
        words.push(drawn >>> 0);
      }
    }
    expect(indices.length).toBeGreaterThan(0);
    // A proof file of a foreign attempt that marks those draws won appears as pass 1 starts (a
    // cluster worker still running a part of the step, say): taken, the table would be wrong.
    const dir = newStore();
    let forgedFile = '';
    const r = await solveSharded({ ...options, store: dir, onProgress: (e) => {
      if (e.phase !== 'pass' || e.pass !== 1 || forgedFile !== '') return;
      const forged = { band: 0, generation: ShardStore.open(dir).manifest.generation, part: 1, attempt: 'deadbeef', seq: 0 };
      forgedFile = proofFileName(forged);
      writeFileSync(join(dir, forgedFile), encodeProofs(forged, Uint32Array.from(indices), Uint32Array.from(words), indices.length));
    } });
    expect(forgedFile).not.toBe('');
    expect(same(r)).toEqual(IN_MEMORY.get('4/6'));
    expect(existsSync(join(dir, forgedFile))).toBe(false);
  });

  it('refuse a round whose steps report counts past the store\'s, committing nothing (a cluster\'s results are bounded one by one)', async () => {
    const v = variant(7, 2);
    const options = { variant: v, rules: 'clean' as const, backend: backends[0]!, threads: 1, store: newStore(), shards: 4 };
    const { space, plan } = planBandStore(options);
    const store = createBandStore(options, space, plan);
    const layout = storeBandLayout(store);
    const stepper = new BandStepper({ backend: backends[0]!, variant: v, rules: 'clean', threads: 1, space, layout, schedule: store.schedule, bandBufferBytes: plan.bandBytes, messageBytes: store.manifest.bands!.messageBytes });
    for (const inflate of [(o: { bytesRead: number }) => (o.bytesRead = 2 ** 53), (o: { changed: number }) => (o.changed = space.states + 1)]) {
      const manifest = () => (existsSync(join(options.store, 'manifest.json')) ? readFileSync(join(options.store, 'manifest.json'), 'utf8') : undefined);
      const before = manifest();
      const solve = new BandSolve(store, layout, stepper.bandBuffer, {
        runRound: async (steps) => {
          const outcomes = [];
          for (const job of steps) outcomes.push(await stepper.run(store, job));
          inflate(outcomes[0]! as never);
          return outcomes;
        },
      });
      await expect(solve.run()).rejects.toThrow(/round 0 of pass 0 reports counts past the store's .*: not committed/);
      expect(manifest()).toBe(before);
      expect(store.manifest.bands!.next).toEqual({ pass: 0, round: 0 });
    }
  });

  it('go on solving where a manifest edited to say "finishing" has bands that are not (its checksum recomputed)', async () => {
    const v = variant(7, 2);
    const store = newStore();
    await expect(solveSharded({ variant: v, rules: 'clean', backend: backends[0]!, threads: 1, store, shards: 4, stopAfterPass: 1 })).rejects.toThrow(ShardedSolveInterrupted);
    const path = join(store, 'manifest.json');
    const m = JSON.parse(readFileSync(path, 'utf8'));
    expect([m.stage, m.bands.next]).toEqual(['passes', { pass: 2, round: 0 }]);
    m.stage = 'finishing';
    writeFileSync(path, manifestText(m));
    // Taken at its word, the store would count pass 1's table: unknown states as draws.
    const r = await solveSharded({ variant: v, rules: 'clean', backend: backends[0]!, threads: 1, store, resume: true });
    expect(same(r)).toEqual(IN_MEMORY.get('7/2')!);
    expect(r.passLog.at(-1)!.newlyProven).toBe(0);
  }, 60_000);

  it('refuse a manifest edited by hand: a message entry unlike its file, one lost, a bad next step', async () => {
    const v = variant(7, 2);
    const store = newStore();
    const controller = new AbortController();
    let saves = 0;
    await solveSharded({ variant: v, rules: 'clean', backend: backends[0]!, threads: 1, store, shards: 5, signal: controller.signal, onSave: () => {
      if (++saves === 8) controller.abort();
    } }).catch(() => {});
    const manifestPath = join(store, 'manifest.json');
    const text = readFileSync(manifestPath, 'utf8');
    const m = JSON.parse(text);
    const resume = () => solveSharded({ variant: v, rules: 'clean', backend: backends[0]!, threads: 1, store, resume: true });
    const edits: Array<[string, (m: any) => void, RegExp]> = [
      ['source', (x) => (x.bands.messages[0].source = (x.bands.messages[0].source + 1) % 5), /corrupt manifest: band solve: message files: msg-\S+: pass and source other than its name's/],
      ['targets', (x) => (x.bands.messages[0].targets = 'AQAA'), /corrupt manifest: band solve: message files: msg-\S+: targets of 3 bytes/],
      ['next', (x) => (x.bands.next = { pass: 1, round: 99 }), /corrupt manifest: band solve: next step/],
      ['attempt', (x) => (x.bands.messages[0].file = x.bands.messages[0].file.replace(/\.[0-9a-f]{8}\.msg$/, '.0000abcd.msg')), /corrupt manifest: band solve: message files: msg-\S+ is not of band \d+'s committed attempt/],
      [
        'a step to come',
        (x) => Object.assign(x.bands.messages[0], { pass: x.bands.next.pass + 1, file: x.bands.messages[0].file.replace(/^msg-p\d+/, `msg-p${x.bands.next.pass + 1}`) }),
        /corrupt manifest: band solve: message files: msg-\S+ is of a step not committed yet/,
      ],
      // Slices of units belong to shared steps only, and are a count.
      ['slices', (x) => (x.bands.sliceUnits = 4), /corrupt manifest: band solve: slice units 4/],
      ['shared', (x) => (x.bands.schedule = 'shared'), /corrupt manifest: band solve: slice units undefined/],
      ['slices of none', (x) => Object.assign(x.bands, { schedule: 'shared', sliceUnits: 0 }), /corrupt manifest: band solve: slice units 0/],
      // Init in blocks of W bands: shared stores made since, and a flag.
      ['init blocks of segments', (x) => (x.bands.initBlocks = true), /corrupt manifest: band solve: init blocks true/],
      ['init blocks, not a flag', (x) => Object.assign(x.bands, { schedule: 'shared', sliceUnits: 1, initBlocks: 1 }), /corrupt manifest: band solve: init blocks 1/],
      // The later passes in blocks: shared stores made since (init in blocks too), and a flag.
      ['later blocks of segments', (x) => (x.bands.laterBlocks = true), /corrupt manifest: band solve: later blocks true/],
      ['later blocks without init blocks', (x) => Object.assign(x.bands, { schedule: 'shared', sliceUnits: 1, laterBlocks: true }), /corrupt manifest: band solve: later blocks true/],
      ['later blocks, not a flag', (x) => Object.assign(x.bands, { schedule: 'shared', sliceUnits: 1, initBlocks: true, laterBlocks: 'yes' }), /corrupt manifest: band solve: later blocks yes/],
      // A band's file is its own, of a generation committed: two bands naming one file would lose it.
      ['another band\'s file', (x) => (x.bands.files[1] = { ...x.bands.files[0] }), /corrupt manifest: band 1 names the file "band-00000\.g/],
      ['a file to come', (x) => (x.bands.files[0].file = x.bands.files[0].file.replace(/\.g\d+\./, `.g${x.generation + 1}.`)), /corrupt manifest: band 0 names the file "band-00000\.g/],
      // Parts' attempts: a list of tokens for each band.
      ['parts\' attempts', (x) => (x.bands.sliceAttempts = [['../x']]), /corrupt manifest: band solve: attempts of shared steps/],
      // Last: check below lists what this one lost.
      ['lost', (x) => (x.bands.messages = x.bands.messages.filter((p: MessagePack) => !hasTarget(p, x.bands.next.round))), /corrupt manifest: it does not name msg-.*, which band \d+ has not taken yet/],
    ];
    expect(m.bands.messages.some((p: MessagePack) => hasTarget(p, m.bands.next.round))).toBe(true);
    const files = readdirSync(store).sort();
    expect(checkStore(store).shards.every((line) => line.ok)).toBe(true);
    for (const [what, edit, error] of edits) {
      const copy = JSON.parse(text);
      edit(copy);
      writeFileSync(manifestPath, manifestText(copy)); // its checksum recorded: the checks behind it
      await expect(resume(), what).rejects.toThrow(error);
      expect(readdirSync(store).sort(), what).toEqual(files);
    }
    // check lists what a resume refuses: the message files the manifest lost.
    const lost = checkStore(store).shards.filter((line) => !line.ok);
    expect(lost.length).toBeGreaterThan(0);
    for (const line of lost) expect(line.problem).toMatch(/^not named by the manifest, which band \d+ has not taken yet: a resume refuses the store$/);
    writeFileSync(manifestPath, text);
    expect(same(await resume())).toEqual(IN_MEMORY.get('7/2')!);
  });


  it('resume from any save to the same table, leftovers removed', async () => {
    const v = variant(7, 2);
    const expected = IN_MEMORY.get('7/2')!;
    // 5 bands: saves 1-5 are init, 6-10 pass 1, then later passes (4 in all), then the shards
    // written from the bands (27: between two of them).
    for (const stopAt of [1, 5, 7, 10, 13, 19, 27]) {
      const store = newStore();
      const controller = new AbortController();
      let saves = 0;
      await expect(
        solveSharded({
          variant: v,
          rules: 'clean',
          backend: backends[0]!,
          threads: 1,
          store,
          shards: 5,
          signal: controller.signal,
          onSave: () => {
            if (++saves === stopAt) controller.abort();
          },
        }),
      ).rejects.toThrow(ShardedSolveInterrupted);
      // Leftovers of a crash in the middle of a step: its message files, a band file.
      writeFileSync(join(store, 'msg-p9-b00002.0123abcd.msg'), 'half a message file');
      writeFileSync(join(store, 'band-00001.g999.0123abcd.bin'), 'half a band');
      // The last one resumes on another backend (the TS one where the native addon loads), and
      // its workers: the store keeps its own.
      const backend = stopAt === 19 ? backends.at(-1)! : backends[0]!;
      const r = await solveSharded({ variant: v, rules: 'clean', backend, threads: 2, store, resume: true });
      expect(same(r)).toEqual(expected);
      expect(r.storePasses).toBe('bands');
      expect(readdirSync(store).filter((f) => f.startsWith('band-') || f.startsWith('msg-'))).toEqual([]);
      expect(ShardStore.open(store).manifest.bands).toBeUndefined();
    }
  }, 120_000);

  it('a shared store of 3 workers steps its later passes in blocks of 3 bands; one of 2, or made before, a band a round', async () => {
    const v = variant(7, 2);
    const stopped = async (workers: number) => {
      const store = newStore();
      await expect(solveSharded({ variant: v, rules: 'clean', backend: backends[0]!, threads: 1, store, shards: 16, workers, schedule: 'shared', stopAfterPass: 1 })).rejects.toThrow(
        ShardedSolveInterrupted,
      );
      return store;
    };
    const [three, two] = [await stopped(3), await stopped(2)];
    const older = newStore();
    cpSync(three, older, { recursive: true });
    const manifest = (store: string) => JSON.parse(readFileSync(join(store, 'manifest.json'), 'utf8'));
    const m = manifest(three);
    expect([m.bands.initBlocks, m.bands.laterBlocks, m.bands.next]).toEqual([true, true, { pass: 2, round: 0 }]);
    expect([manifest(two).bands.initBlocks, manifest(two).bands.laterBlocks]).toEqual([true, undefined]);
    delete m.bands.laterBlocks;
    writeFileSync(join(older, 'manifest.json'), manifestText(m));
    // The rounds of pass 2: the commits while the next step is still of pass 2, and the last.
    const pass2Rounds = async (store: string) => {
      let rounds = 1;
      const r = await solveSharded({ variant: v, rules: 'clean', backend: backends[0]!, threads: 1, store, resume: true, onSave: () => {
        if (manifest(store).bands?.next.pass === 2) rounds++;
      } });
      expect(same(r)).toEqual(IN_MEMORY.get('7/2')!);
      return rounds;
    };
    expect([await pass2Rounds(three), await pass2Rounds(two), await pass2Rounds(older)]).toEqual([6, 16, 16]);
  });

  it('resume a shared store of 3 workers from saves inside and between its later passes (blocks)', async () => {
    const v = variant(7, 2);
    // 7 bands for 3 workers: init in 3 rounds (saves 1-3), pass 1 in 7 (4-10), the later passes
    // in 3 each (pass 2: 11-13).
    const stoppedAt: unknown[] = [];
    for (const stopAt of [11, 12, 13, 15]) {
      const store = newStore();
      const controller = new AbortController();
      let saves = 0;
      await expect(
        solveSharded({ variant: v, rules: 'clean', backend: backends[0]!, threads: 1, store, shards: 7, workers: 3, schedule: 'shared', signal: controller.signal, onSave: () => {
          if (++saves === stopAt) controller.abort();
        } }),
      ).rejects.toThrow(ShardedSolveInterrupted);
      stoppedAt.push(JSON.parse(readFileSync(join(store, 'manifest.json'), 'utf8')).bands.next);
      // The last one resumes on the TS backend (where the native addon loads).
      const r = await solveSharded({ variant: v, rules: 'clean', backend: stopAt === 15 ? backends.at(-1)! : backends[0]!, threads: 2, store, resume: true });
      expect(same(r), `stopped at save ${stopAt}`).toEqual(IN_MEMORY.get('7/2')!);
    }
    expect(stoppedAt).toEqual([
      { pass: 2, round: 1 },
      { pass: 2, round: 2 },
      { pass: 3, round: 0 },
      { pass: 3, round: 2 },
    ]);
  });

  it('refuse a damaged message or band file, naming it, and keep the store as it was', async () => {
    const v = variant(7, 2);
    const store = newStore();
    const controller = new AbortController();
    let saves = 0;
    // Stopped after pass 1's first two steps: bands 2 and 3 have messages waiting.
    await solveSharded({
      variant: v,
      rules: 'clean',
      backend: backends[0]!,
      threads: 1,
      store,
      shards: 4,
      signal: controller.signal,
      onSave: () => {
        if (++saves === 6) controller.abort();
      },
    }).catch(() => {});
    const m = ShardStore.open(store).manifest;
    // check lists the band and message files of a solve under way, all good.
    const healthy = checkStore(store);
    expect(healthy.shards).toHaveLength(4 + m.bands!.messages.length);
    expect(healthy.shards.every((l) => l.ok)).toBe(true);
    expect(checkStore(store, { recount: true }).recountSkipped).toMatch(/^the solve is under way in bands, its shards not written yet/);
    const waiting = m.bands!.messages.find((p) => hasTarget(p, 2))!;
    const path = join(store, waiting.file);
    const bytes = readFileSync(path);
    const at = sectionStart(bytes, 2);
    bytes[at]! ^= 0x10;
    writeFileSync(path, bytes);
    const damaged = checkStore(store).shards.filter((l) => !l.ok);
    expect(damaged.map((l) => l.file)).toEqual([waiting.file]);
    expect(damaged[0]!.problem).toMatch(/message file's section for band 2 \(values\) (fails its CRC-32 check|is not a list of message runs|ends inside a run)/);
    // The directory's CRC-32 the manifest records, and none as it is (the pack does not check).
    expect(damaged[0]!.expected).toBe(waiting.directoryCrc32);
    expect(damaged[0]!.actual).toBe(0);
    const before = readdirSync(store).sort();
    const resume = () => solveSharded({ variant: v, rules: 'clean', backend: backends[0]!, threads: 1, store, resume: true });
    const error = await resume().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DatabaseError);
    expect((error as Error).message).toContain(path);
    expect((error as Error).message).toMatch(/message file's section for band 2 \(values\) (fails its CRC-32 check|holds messages its band refuses|is not a list of message runs|holds \d+ messages|ends inside a run)/);
    expect(readdirSync(store).sort()).toEqual(before);
    expect(ShardStore.open(store).manifest).toEqual(m);
    // Put right, the solve goes on; a band file damaged instead is refused the same way.
    bytes[at]! ^= 0x10;
    writeFileSync(path, bytes);
    const bandPath = join(store, m.bands!.files[2]!.file);
    const band = readFileSync(bandPath);
    band[7]! ^= 0x01;
    writeFileSync(bandPath, band);
    await expect(resume()).rejects.toThrow(new RegExp(`${bandPath}: band 2 fails its CRC-32 check`));
    expect(checkStore(store).shards[2]).toMatchObject({ ok: false, expected: m.bands!.files[2]!.crc32, actual: crc32(band) });
    band[7]! ^= 0x01;
    writeFileSync(bandPath, band);
    // A store whose bands were cut otherwise (another version) is refused, not misread.
    const manifestPath = join(store, 'manifest.json');
    const text = readFileSync(manifestPath, 'utf8');
    writeFileSync(manifestPath, manifestText(JSON.parse(text.replace(/"layoutCrc32": \d+/, '"layoutCrc32": 12345'))));
    await expect(resume()).rejects.toThrow(/its bands were cut by another version of ccheckers \(layout CRC-32 0x00003039\)/);
    writeFileSync(manifestPath, text);
    // So is one whose message files an earlier version coded as float64 numbers.
    expect(text).toMatch(/,\s*"messageCoding": "leb128-runs-packs2"/);
    // Stores of earlier versions: packs whose directory each target read whole (leb128-runs-packs),
    // a file per target and kind (leb128-runs), float64 files (none).
    for (const earlier of ['leb128-runs-packs', 'leb128-runs']) {
      writeFileSync(manifestPath, manifestText(JSON.parse(text.replace('"leb128-runs-packs2"', `"${earlier}"`))));
      await expect(resume()).rejects.toThrow(`message files are coded as ${earlier}; this ccheckers codes them as leb128-runs-packs2: finish the solve with the version that started it, or start it again`);
      expect(readdirSync(store).sort()).toEqual(before);
    }
    const { crc32: _, ...float64 } = JSON.parse(text.replace(/,\s*"messageCoding": "leb128-runs-packs2"/, '')); // an earlier version: no checksum
    writeFileSync(manifestPath, JSON.stringify(float64));
    await expect(resume()).rejects.toThrow(/message files are coded as float64; this ccheckers codes them as leb128-runs-packs2/);
    writeFileSync(manifestPath, text);
    // The rounds are the store's: another schedule is refused too.
    await expect(solveSharded({ variant: v, rules: 'clean', backend: backends[0]!, threads: 1, store, resume: true, schedule: 'blocks' })).rejects.toThrow(/solved in rounds of segments; --schedule applies to new stores only/);
    // A resume with rounds for another number of workers is refused: the rounds are the store's.
    await expect(solveSharded({ variant: v, rules: 'clean', backend: backends[0]!, threads: 1, store, resume: true, workers: 2 })).rejects.toThrow(/solved in rounds for 1 worker\(s\); --workers applies to new stores only/);
    expect(same(await resume())).toEqual(IN_MEMORY.get('7/2')!);
    expect(existsSync(path)).toBe(false);
  });

  it('refuse to continue a store of the tile passes of earlier versions, saying what to do', async () => {
    const v = variant(7, 2);
    const done = newStore();
    await solveSharded({ variant: v, rules: 'clean', backend: backends[0]!, threads: 1, store: done, shards: 3 });
    const manifestPath = join(done, 'manifest.json');
    const m = JSON.parse(readFileSync(manifestPath, 'utf8'));
    // What such a store looked like under way: shards with files, stage passes, no bands.
    delete m.results;
    delete m.passes;
    delete m.bandCount;
    delete m.bandWorkers;
    m.stage = 'passes';
    delete m.crc32; // an earlier version's manifest has no checksum
    writeFileSync(manifestPath, JSON.stringify(m));
    await expect(solveSharded({ variant: v, rules: 'clean', backend: backends[0]!, threads: 1, store: done, resume: true })).rejects.toThrow(
      /is a store of tile passes under way, which this version of ccheckers no longer runs: resume it with the version that made it, or solve again in a new folder/,
    );
  });
});
