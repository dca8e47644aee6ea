/**
 * The band passes: the solve of a sharded store in bounded memory, one band of the proof order in
 * memory per worker at a time (band-layout.ts), proven values exchanged between bands as messages
 * in files (message packs, message-pack-format.ts; the message combining of Bal and Allis' parallel
 * retrograde analysis, 1995). One design, run by one worker or many:
 *  - a pass is rounds of steps (band-schedule.ts): with W workers, up to W bands stepped at once;
 *  - a step (band-step.ts) reads the store as the last round left it and writes new whole files;
 *  - a round ends with one commit (ShardStore.commitBands) that names what its steps wrote.
 * The steps of a round run in this process (solveBands: the local solve, one worker) or on a
 * cluster's workers (cluster/coordinator.ts): the same steps, rounds, commits, passes and table.
 * A kill at any moment loses at most the round under way.
 *
 * The end: a pass in which no band took a value and no value was sent. Then every state still
 * unknown was visited during that pass or the one before against a table that did not change
 * since (each band lists its unknown states as requests every pass, and a request is visited at
 * its target's next step; with nothing changing in the pass, that step saw the final table): the
 * fixpoint of the in-memory solve, whatever the bands, workers, backend or threads. The bands are
 * then written out as the store's shards, which the CRC is taken over.
 */
import { closeSync } from 'node:fs';
import { join } from 'node:path';
import { CCheckersError, StateSpace } from '@ccheckers/core';
import { crc32Of } from '../crc.js';
import { hex } from '../database.js';
import type { PassRecord } from '../pass-log.js';
import { checkMemory, formatBytes } from '../memory.js';
import { lockOutput } from '../output-file.js';
import type { ProgressEvent } from '../solve.js';
import { checkMoveless } from '../sweeps.js';
import { type BandLayout, type BandPlan, bandBytes, bandLayout, planBands } from './band-layout.js';
import { type BandSchedule, CLUSTER_DEFAULT_WORKERS, DEFAULT_SLICE_UNITS, type ScheduleKind, bandSchedule, defaultSchedule, isSharedStep, passRounds, sharedParts } from './band-schedule.js';
import { BandStepper } from './band-step.js';
import type { BandStepJob, BandStepOutcome } from './band-step-jobs.js';
import { runSharedStep } from './shared-step.js';
import { shardLayout } from './layout.js';
import { MESSAGE_CODING } from './message-pack.js';
import { type BandPassTally, MANIFEST, type Manifest } from './manifest.js';
import { ShardStore } from './shard-store.js';
import { openStoreFile, readAt, refuseIrregular } from './store-files.js';
import { type ShardedSolveOptions, type ShardedSolveResult, ShardedSolveInterrupted, type StoreRequest, checkStoreToResume, countStore, storeResult, storeToResume } from './sharded-solve.js';

export function emptyTally(): BandPassTally {
  return { changed: 0, sentValues: 0, messagesWritten: 0, seconds: 0, bytesRead: 0, bytesWritten: 0 };
}

/** What a band solve is asked for (StoreRequest), and whether it is a cluster's. */
export interface BandStoreRequest extends StoreRequest {
  /** A cluster's store (solve --redis): a new one is for CLUSTER_DEFAULT_WORKERS workers and in
   *  shared steps unless asked otherwise; a store resumed keeps its own. */
  cluster?: boolean;
}

/** The store to resume, if any, and the plan: the store's band count, or --shards and --memory. */
export function planBandStore(request: BandStoreRequest): { existing: ShardStore | undefined; space: StateSpace; plan: BandPlan } {
  const existing = storeToResume(request);
  const space = existing?.space ?? new StateSpace(request.variant);
  let bands = request.shards;
  if (existing) {
    checkStoreToResume(existing, request);
    const m = existing.manifest;
    if (m.stage !== 'complete' && !m.bands && m.passes !== 'bands') {
      throw new CCheckersError('E_USAGE', `${request.store} is a store of tile passes under way, which this version of ccheckers no longer runs: resume it with the version that made it, or solve again in a new folder`);
    }
    if (request.workers !== undefined && m.bands && request.workers !== m.bands.workers) {
      throw new CCheckersError('E_USAGE', `${request.store} is solved in rounds for ${m.bands.workers} worker(s); --workers applies to new stores only`);
    }
    if (request.schedule !== undefined && m.bands && request.schedule !== (m.bands.schedule ?? 'segments')) {
      throw new CCheckersError('E_USAGE', `${request.store} is solved in rounds of ${m.bands.schedule ?? 'segments'}; --schedule applies to new stores only`);
    }
    if (request.sliceUnits !== undefined && m.bands && request.sliceUnits !== m.bands.sliceUnits) {
      throw new CCheckersError('E_USAGE', `${request.store} is solved ${m.bands.sliceUnits === undefined ? 'without shared steps' : `in slices of ${m.bands.sliceUnits} unit(s)`}; --slice-units applies to new stores only`);
    }
    bands = existing.pieces;
  }
  const plan = planBands(space, {
    ...(bands !== undefined ? { bands } : {}),
    ...(request.memoryLimit !== undefined ? { budget: request.memoryLimit } : {}),
    kernelCopies: 1,
    bandCopies: sharedParts(existing?.manifest.bands ?? { schedule: newStoreSchedule(request), workers: newStoreWorkers(request) }) > 1 ? 2 : 1,
    storeBands: existing !== undefined,
  });
  return { existing, space, plan };
}

/** The workers a new store of `request` is made for. */
function newStoreWorkers(request: Pick<BandStoreRequest, 'workers' | 'cluster'>): number {
  return request.workers ?? (request.cluster ? CLUSTER_DEFAULT_WORKERS : 1);
}

/** The schedule a new store of `request` is made with. */
export function newStoreSchedule(request: Pick<BandStoreRequest, 'workers' | 'schedule' | 'cluster'>): ScheduleKind {
  return request.schedule ?? defaultSchedule(newStoreWorkers(request), request.cluster === true);
}

/** A new store of the plan's bands, for `workers` workers (its manifest not yet on disk). */
export function createBandStore(request: BandStoreRequest, space: StateSpace, plan: BandPlan): ShardStore {
  const layout = bandLayout(space, plan.bands);
  const store = ShardStore.create(request.store, request.variant, request.rules, shardLayout(space, plan.bands));
  const kind = newStoreSchedule(request);
  if (request.sliceUnits !== undefined && kind !== 'shared') throw new CCheckersError('E_USAGE', '--slice-units needs --schedule shared');
  const schedule = bandSchedule(plan.bands, newStoreWorkers(request), kind, request.sliceUnits ?? DEFAULT_SLICE_UNITS);
  store.manifest.bands = {
    count: plan.bands,
    workers: schedule.workers,
    schedule: kind,
    ...(kind === 'shared' ? { sliceUnits: schedule.sliceUnits, initBlocks: true as const } : {}),
    ...(schedule.laterBlocks ? { laterBlocks: true as const } : {}),
    layoutCrc32: layoutCrc32(layout),
    messageBytes: plan.messageBytes,
    files: Array.from({ length: plan.bands }, () => ({ file: '', crc32: 0 })),
    attempts: Array.from({ length: plan.bands }, () => ''),
    messages: [],
    messageCoding: MESSAGE_CODING,
    next: { pass: 0, round: 0 },
    tally: emptyTally(),
  };
  store.manifest.proven = 0;
  store.manifest.passes = 'bands';
  store.manifest.bandCount = plan.bands;
  return store;
}

/** The band layout of a store, checked against what its manifest recorded. */
export function storeBandLayout(store: ShardStore): BandLayout {
  const layout = bandLayout(store.space, store.pieces);
  const recorded = store.manifest.bands?.layoutCrc32;
  if (recorded !== undefined && recorded !== layoutCrc32(layout)) {
    throw new CCheckersError('E_USAGE', `${join(store.dir, MANIFEST)}: its bands were cut by another version of ccheckers (layout CRC-32 ${hex(recorded)}); finish the solve with that version`);
  }
  return layout;
}

/** The local solve: the rounds' steps run one after the other in this process. */
export async function solveBands(options: ShardedSolveOptions): Promise<ShardedSolveResult> {
  const { existing, space, plan } = planBandStore(options);
  // Shared steps: this process runs the parts of all W workers at once (band-step.ts, runSlice),
  // each with its stepper: its copy of the band, the copy as last published, its messages.
  const parts = sharedParts(existing?.manifest.bands ?? { schedule: newStoreSchedule(options), workers: newStoreWorkers(options) });
  const needs = (parts > 1 ? parts * (2 * plan.bandBytes + plan.messageBytes) : plan.bandBytes + plan.messageBytes) + plan.overheadBytes;
  if (parts > 1 && options.memoryLimit !== undefined && needs > options.memoryLimit) {
    // The plan sized the bands for one worker: more bands make each smaller.
    throw new CCheckersError('E_USAGE', `shared steps hold ${parts} workers' copies of a band here: ${formatBytes(needs)} in bands of ${formatBytes(plan.bandBytes)}, more than --memory ${formatBytes(options.memoryLimit)}; give --shards for smaller bands`);
  }
  checkMemory(needs, options.memoryLimit);
  options.onPlan?.(plan);
  const store = existing ?? createBandStore(options, space, plan);
  const unlock = lockOutput(join(options.store, MANIFEST), { breakLock: options.breakLock === true });
  try {
    store.removeLeftovers();
    const layout = storeBandLayout(store);
    const threads = options.backend.kernelThreads ? Math.max(1, Math.floor(options.threads)) : 1;
    const newStepper = () =>
      new BandStepper({
        backend: options.backend,
        variant: options.variant,
        rules: options.rules,
        threads,
        space,
        layout,
        schedule: store.schedule,
        bandBufferBytes: plan.bandBytes,
        messageBytes: store.manifest.bands!.messageBytes,
      });
    const stepper = store.manifest.bands === undefined ? undefined : newStepper();
    const partSteppers: BandStepper[] = [];
    const checkAbort = () => {
      if (options.signal?.aborted) throw new ShardedSolveInterrupted(options.store, store.manifest);
    };
    const solve = new BandSolve(store, layout, stepper?.bandBuffer ?? new Uint8Array(plan.bandBytes), {
      ...(options.onProgress ? { onProgress: options.onProgress } : {}),
      ...(options.stopAfterPass !== undefined ? { stopAfterPass: options.stopAfterPass } : {}),
      onCommit: () => {
        // A shared step's proof files are done with once its round is committed.
        if (parts > 1) store.removeLeftovers();
        options.onSave?.(store.manifest.passLog.length);
      },
      checkAbort,
      runRound: async (steps, progress) => {
        const outcomes: BandStepOutcome[] = [];
        for (const [i, job] of steps.entries()) {
          const onProgress = (f: number) => progress((i + f) / steps.length);
          if (isSharedStep(store.schedule, job)) {
            while (partSteppers.length < parts) partSteppers.push(partSteppers.length === 0 ? stepper! : newStepper());
            outcomes.push(...(await runSharedStep(store, job, partSteppers, { beforeCall: checkAbort, onProgress })));
          } else outcomes.push(await stepper!.run(store, job, { beforeCall: checkAbort, onProgress }));
        }
        return outcomes;
      },
    });
    await solve.run();
    return {
      ...storeResult(store, options.backend.name, threads, solve.resumedFromPass),
      store: options.store,
      storePasses: 'bands',
      shards: layout.bands,
      workers: store.manifest.bandWorkers ?? 1,
      schedule: store.manifest.bandSchedule ?? 'segments',
      bytesRead: solve.bytesRead,
      bytesWritten: solve.bytesWritten,
    };
  } finally {
    unlock();
  }
}

/** How the rounds of a band solve are run and committed: here, or by a cluster. */
export interface BandSolveHooks {
  /** Runs a round's steps on the store as committed (in any order, at once or not) and returns
   *  what each did; `progress` takes the share of the round done. */
  runRound: (steps: BandStepJob[], progress: (fraction: number) => void) => Promise<BandStepOutcome[]>;
  /** Before every commit (a cluster's coordinator checks its lease and the manifest on disk). */
  beforeCommit?: () => Promise<void> | void;
  /** After every commit. */
  onCommit?: () => void;
  /** Between rounds and long reads: throws to stop the solve (Ctrl-C). */
  checkAbort?: () => void;
  onProgress?: (event: ProgressEvent) => void;
  /** Test hook: stop after this many passes (the store keeps them). */
  stopAfterPass?: number;
  /** Adds figures of its own to a pass's record before it is logged (a cluster's jobs). */
  onPassRecord?: (record: PassRecord) => void;
}

/** The rounds of a band solve, from where its manifest stands to the store's results. */
export class BandSolve {
  readonly resumedFromPass: number | undefined;
  bytesRead = 0;
  bytesWritten = 0;
  private readonly space: StateSpace;
  private readonly schedule: BandSchedule;
  private readonly started = performance.now();
  private readonly secondsBefore: number;
  private readonly report: (event: ProgressEvent) => void;

  /** `bandBuffer`: at least the plan's band bytes (the end reads bands and writes shards there). */
  constructor(
    private readonly store: ShardStore,
    private readonly layout: BandLayout,
    private readonly bandBuffer: Uint8Array,
    private readonly hooks: BandSolveHooks,
  ) {
    this.space = store.space;
    this.schedule = store.manifest.bands ? store.schedule : bandSchedule(layout.bands, 1);
    this.secondsBefore = store.manifest.seconds;
    this.report = hooks.onProgress ?? (() => {});
    this.resumedFromPass = store.manifest.generation > 0 ? store.manifest.passLog.length : undefined;
  }

  private get m(): Manifest {
    return this.store.manifest;
  }

  private elapsed(): number {
    return this.secondsBefore + (performance.now() - this.started) / 1000;
  }

  async run(): Promise<void> {
    const proven = this.m.proven ?? 0;
    if (this.resumedFromPass !== undefined) this.report({ phase: 'resumed', pass: this.resumedFromPass, fraction: 0, proven, storedStates: this.space.states });
    // A resumed store that says its passes are over runs one more here first, which ends them
    // only if it proves and sends nothing: a manifest edited to say "finishing" over bands that
    // are not (its checksum recomputed) goes on solving instead of counting an unfinished table.
    if (this.resumedFromPass !== undefined && this.m.stage === 'finishing' && this.m.bands) {
      await this.commit(() =>
        this.store.save([], (next) => {
          next.stage = 'passes';
        }),
      );
    }
    while (this.m.stage === 'init' || this.m.stage === 'passes') await this.round();
    if (this.m.stage === 'finishing') {
      if (this.m.bands) await this.writeShards();
      const tally = countStore(this.store, this.bandBuffer, (n) => {
        this.bytesRead += n;
      });
      await this.commit(() =>
        this.store.save([], (next) => {
          next.stage = 'complete';
          next.results = tally;
          next.seconds = this.elapsed();
        }),
      );
    }
  }

  private async commit(write: () => void): Promise<void> {
    await this.hooks.beforeCommit?.();
    write();
    this.hooks.onCommit?.();
  }

  /** The manifest keeps exact counts and finite times (checkManifest): a round whose steps report
   *  more than that allows (a cluster's results are bounded one by one in cluster/job-result.ts,
   *  not in sum) is refused before anything is committed, the store as it was. */
  private refusePastCounts(pass: number, round: number, outcomes: BandStepOutcome[], read: number, written: number): void {
    const t = this.m.bands!.tally;
    const sum = (of: (o: BandStepOutcome) => number) => outcomes.reduce((total, o) => total + of(o), 0);
    const exact = [this.bytesRead + read, this.bytesWritten + written, t.bytesRead + read, t.bytesWritten + written, t.sentValues + sum((o) => o.sentValues), t.messagesWritten + sum((o) => o.messagesWritten)];
    const proven = (this.m.proven ?? 0) + sum((o) => o.changed);
    if (exact.every(Number.isSafeInteger) && proven <= this.space.states && Number.isFinite(t.seconds + Math.max(0, ...outcomes.map((o) => o.seconds)))) return;
    throw new CCheckersError('E_DATABASE', `${this.store.dir}: round ${round} of pass ${pass} reports counts past the store's (${proven} states proven of ${this.space.states}, or byte and message counts past 2^53): not committed; solve --resume runs it again`);
  }

  /** One round: its steps, then the commit, and the pass's end after its last round. */
  private async round(): Promise<void> {
    this.hooks.checkAbort?.();
    const { pass, round } = this.m.bands!.next;
    const passRoundList = passRounds(this.schedule, pass);
    const rounds = passRoundList.length;
    const steps = passRoundList[round]!.map((band): BandStepJob => ({ pass, round, band, generation: this.m.generation }));
    const progress = (fraction: number) => {
      this.report({ phase: pass === 0 ? 'init' : 'pass', pass, fraction: (round + Math.min(1, fraction)) / rounds, proven: this.m.proven ?? 0, storedStates: this.space.states });
    };
    // Said as the round starts: a cluster's steps report only when they end (minutes apart on
    // 7x7/4), and a pass's elapsed time and rate count from its first report.
    progress(0);
    const outcomes = await this.hooks.runRound(steps, progress);
    checkMoveless(
      outcomes.reduce((sum, o) => sum + o.moveless, 0),
      this.space.variant,
    );
    const last = round + 1 === rounds;
    let record: PassRecord | undefined;
    let read = 0;
    let written = 0;
    for (const o of outcomes) {
      read += o.bytesRead;
      written += o.bytesWritten;
    }
    this.refusePastCounts(pass, round, outcomes, read, written);
    this.bytesRead += read;
    this.bytesWritten += written;
    await this.commit(() =>
      this.store.commitBands(outcomes, (next) => {
        const s = next.bands!;
        const changed = outcomes.reduce((sum, o) => sum + o.changed, 0);
        next.proven = (next.proven ?? 0) + changed;
        next.seconds = this.elapsed();
        s.next = last ? { pass: pass + 1, round: 0 } : { pass, round: round + 1 };
        if (pass === 0) {
          if (last) next.stage = 'passes';
          return;
        }
        const t = s.tally;
        t.changed += changed;
        t.sentValues += outcomes.reduce((sum, o) => sum + o.sentValues, 0);
        t.messagesWritten += outcomes.reduce((sum, o) => sum + o.messagesWritten, 0);
        // A round takes as long as its slowest step.
        t.seconds += Math.max(0, ...outcomes.map((o) => o.seconds));
        t.bytesRead += read;
        t.bytesWritten += written;
        if (!last) return;
        record = {
          pass,
          proven: next.proven,
          newlyProven: t.changed,
          seconds: t.seconds,
          sparse: pass > 1,
          bytesRead: t.bytesRead,
          bytesWritten: t.bytesWritten,
          messages: t.messagesWritten,
        };
        this.hooks.onPassRecord?.(record);
        next.passLog.push(record);
        // The end (see the top of the file).
        if (t.changed === 0 && t.sentValues === 0) next.stage = 'finishing';
        s.tally = emptyTally();
      }),
    );
    if (pass === 0) {
      if (last) this.report({ phase: 'init-done', pass: 0, fraction: 1, proven: this.m.proven ?? 0, storedStates: this.space.states });
      return;
    }
    if (record) {
      this.report({ phase: 'pass-done', pass, fraction: 1, proven: this.m.proven ?? 0, storedStates: this.space.states, record });
      if (this.m.stage === 'passes' && this.hooks.stopAfterPass !== undefined && pass >= this.hooks.stopAfterPass) {
        throw new ShardedSolveInterrupted(this.store.dir, this.m);
      }
    }
  }

  /**
   * The bands written out as the store's shards (each group from its band, checked first), then
   * the band files go: the store is then what every other command reads.
   */
  private async writeShards(): Promise<void> {
    const state = this.m.bands!;
    const per = this.space.p2Placements;
    // Every band's CRC first: the shards are made of pieces of them.
    for (let band = 0; band < state.files.length; band++) {
      this.hooks.checkAbort?.();
      const bytes = bandBytes(this.space, this.layout.groupsOf[band]!.length);
      this.store.loadBand(band, this.bandBuffer.subarray(0, bytes));
      this.bytesRead += bytes;
      await new Promise<void>((resolve) => setImmediate(resolve)); // a coordinator's lease is renewed meanwhile
    }
    // The band buffer holds a shard too (planBands): it is free now.
    const piece = new Uint8Array(Math.ceil(per / 4) + 1);
    for (const shard of this.store.layout.shards) {
      if (this.m.shards[shard.index]!.file !== '') continue; // written before a resume
      this.hooks.checkAbort?.();
      const bytes = this.bandBuffer.subarray(0, shard.bytes).fill(0);
      let band = -1;
      let fd = -1;
      try {
        for (let g = shard.firstGroup; g < shard.firstGroup + shard.groups; g++) {
          if (this.layout.bandOf[g] !== band) {
            if (fd >= 0) closeSync(fd);
            band = this.layout.bandOf[g]!;
            const path = join(this.store.dir, state.files[band]!.file);
            refuseIrregular(path, `band ${band}`);
            fd = openStoreFile(path, `band ${band}`);
          }
          const from = this.layout.slotOf[g]! * per;
          const first = Math.floor(from / 4);
          const bytesOfGroup = piece.subarray(0, Math.ceil((from + per) / 4) - first);
          readAt(fd, join(this.store.dir, state.files[band]!.file), bytesOfGroup, first, `band ${band}`);
          this.bytesRead += bytesOfGroup.length;
          copyStates(bytesOfGroup, from - first * 4, bytes, (g - shard.firstGroup) * per, per);
        }
      } finally {
        if (fd >= 0) closeSync(fd);
      }
      await this.commit(() =>
        this.store.save([{ index: shard.index, bytes }], (next) => {
          next.seconds = this.elapsed();
        }),
      );
      this.bytesWritten += bytes.length;
    }
    await this.commit(() =>
      this.store.save([], (next) => {
        next.bandWorkers = next.bands!.workers;
        next.bandSchedule = next.bands!.schedule ?? 'segments';
        delete next.bands;
      }),
    );
    this.store.removeLeftovers();
  }
}

/** CRC-32 of the band of every group: what a store records of its layout. */
function layoutCrc32(layout: BandLayout): number {
  return crc32Of(new Uint8Array(layout.bandOf.buffer, layout.bandOf.byteOffset, layout.bandOf.byteLength));
}

/**
 * Copies `count` 2-bit states from state `from` of `src` to state `to` of `dst` (zero there). The
 * destination's whole bytes are made a byte at a time, from one or two source bytes: a store's
 * shards are written from its bands this way at the end of a solve (7x7/4: 15.8e9 states, 0.9 ns
 * a state; a state at a time took 5.7 ns, bench/copy-states.mjs).
 */
export function copyStates(src: Uint8Array, from: number, dst: Uint8Array, to: number, count: number): void {
  // Indices past 2^32 (a shard of up to 4 GiB holds 2^34 states): Math.floor, never >>>.
  const copyOne = (i: number) => {
    const s = from + i;
    const d = to + i;
    dst[Math.floor(d / 4)]! |= ((src[Math.floor(s / 4)]! >>> ((s % 4) * 2)) & 3) << ((d % 4) * 2);
  };
  let i = 0;
  for (; i < count && (to + i) % 4 !== 0; i++) copyOne(i); // up to the destination's next byte
  const whole = Math.floor((count - i) / 4);
  if (whole > 0) {
    let sb = Math.floor((from + i) / 4);
    const db = (to + i) / 4;
    const shift = ((from + i) % 4) * 2;
    if (shift === 0) dst.set(src.subarray(sb, sb + whole), db);
    else {
      // Destination byte k holds source states 4k .. 4k + 3 past the shift: the high bits of one
      // source byte and the low bits of the next.
      const back = 8 - shift;
      for (let k = 0; k < whole; k++, sb++) dst[db + k] = (src[sb]! >>> shift) | ((src[sb + 1]! << back) & 0xff);
    }
    i += 4 * whole;
  }
  for (; i < count; i++) copyOne(i);
}
