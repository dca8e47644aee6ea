/**
 * One step of a band solve (band-solve.ts), as a unit of work that runs the same wherever it runs:
 * in the solving process, or on a cluster's worker (cluster/) on another machine that mounts the
 * store. A step reads the store as the last committed round left it (the band's file, its sections
 * of the message packs sent to it), writes new whole files under names of its own attempt (the
 * band's table when it changed, one pack of the messages it sends), and returns what it wrote; the commit of its round
 * (ShardStore.commitBands) names them in the manifest. A step run twice (a worker taken for dead)
 * writes other files, and the commit takes one attempt's.
 *
 * A step holds band X: it takes the values other bands sent X (APPLY), visits the states they
 * asked X to visit (VISIT: states whose children X holds), and then
 *  - in pass 1, visits every state of X's units in proof order (UNITS), as the in-memory pass
 *    does; what it decides about states held elsewhere is sent, and so are the wins of a new
 *    loss's parents held elsewhere;
 *  - every pass, lists X's unknown states as requests to the bands that hold their children
 *    (REQUESTS); those for X itself are visited at once, and in pass 1 none go to bands whose
 *    units are visited in a later round (band-schedule.ts, requestsInPass1).
 * Init (pass 0) decides X's illegal, terminal and won-in-one states: it reads no children.
 */
import { join } from 'node:path';
import { type Backend, type BandMap, BandPhase, type BandResult, type RuleMode, type SolverKernel, type StateSpace, type Variant, unknownStates } from '@ccheckers/core';
import { crc32Of } from '../crc.js';
import { chunkRanges } from '../solve.js';
import { type BandLayout, bandBytes } from './band-layout.js';
import { type BandSchedule, requestsInPass1 } from './band-schedule.js';
import { inboxOf } from './message-pack.js';
import { type MessageReading, PackReader } from './message-pack-reader.js';
import { MessagePackWriter } from './message-pack-writer.js';
import { type BandStepFiles, attemptToken, bandFileName } from './manifest.js';
import type { ShardStore } from './shard-store.js';
import { writeFileAtomicallyAsync } from './store-files.js';

/** Kernel calls per band for init and requests, at least (progress and interruption points). */
export const CALLS_PER_BAND = 16;

/**
 * Kernel calls are short: the event loop runs between them, and a cluster worker's BullMQ lock is
 * renewed from a timer on it (every half of --stall-seconds). Sized by memory alone, the UNITS
 * calls of 7x7/4 in 5 bands grew to thousands of units, minutes each on a loaded machine: the
 * workers' locks ran out mid-call, their jobs went to the other worker, and no step of pass 1
 * finished in 70 minutes. So UNITS calls aim at UNITS_CALL_SECONDS (at the rate the last call
 * took), and init and requests calls cover at most MAX_STATES_PER_CALL states (under a second).
 */
export const UNITS_CALL_SECONDS = 2;
export const MAX_STATES_PER_CALL = 2 ** 26;
/** Units of a stepper's first UNITS call, before one is timed. */
const FIRST_UNITS_CALL = 8;

/** Units in the next UNITS call: what is `left`, at most what fills its output (`byMemory`) and
 *  what takes about `callSeconds` at `secondsPerUnit` (FIRST_UNITS_CALL before any call: 0). */
export function unitsCallSize(left: number, byMemory: number, secondsPerUnit: number, callSeconds: number): number {
  const byTime = secondsPerUnit > 0 ? Math.floor(callSeconds / secondsPerUnit) : FIRST_UNITS_CALL;
  return Math.max(1, Math.min(left, byMemory, byTime));
}

/** Packs a step keeps open from their values to their requests; those past it are closed and
 *  opened again (a store of 4,096 bands has inboxes of up to 4,095 packs). */
export const MAX_OPEN_PACKS = 1024;

/** A step: band `band` in round `round` of pass `pass` (0: init), on the store as committed at
 *  `generation` (its band file and inbox are the manifest's then). */
export interface BandStepJob {
  pass: number;
  round: number;
  band: number;
  generation: number;
}

/** What a step did, besides the files it wrote. */
export interface BandStepOutcome extends BandStepFiles {
  pass: number;
  /** States the band took (its own proofs and the values applied; init: decided). */
  changed: number;
  /** Value messages sent, and messages written in all. */
  sentValues: number;
  messagesWritten: number;
  /** Legal non-terminal states without a move (must be 0: checkMoveless). */
  moveless: number;
  bytesRead: number;
  bytesWritten: number;
  seconds: number;
}

export interface BandStepHooks {
  /** Before each kernel call (after the event loop ran): throw to stop the step. */
  beforeCall?: () => void;
  /** The share of the step done, 0 to 1. */
  onProgress?: (fraction: number) => void;
}

export interface BandStepperOptions {
  backend: Backend;
  variant: Variant;
  rules: RuleMode;
  threads: number;
  space: StateSpace;
  layout: BandLayout;
  schedule: BandSchedule;
  /** The band buffer's bytes (the largest band, or shard the bands end as: band-layout.ts). */
  bandBufferBytes: number;
  /** Seconds a UNITS call aims at (default UNITS_CALL_SECONDS; a worker with a short
   *  --stall-seconds asks for less). */
  callSeconds?: number;
  /** The store's message bytes (BandState.messageBytes). */
  messageBytes: number;
}

/** Runs steps, one at a time, with one kernel and one set of buffers. */
export class BandStepper {
  readonly bandBuffer: Uint8Array;
  private kernel: SolverKernel;
  private readonly threads: number;
  private readonly inputBuffer: Float64Array;
  private readonly reading: MessageReading;
  private readonly writeBuffer: Uint8Array;
  private readonly outputBuffer: Float64Array;
  /** The input and output buffers as one: a UNITS call's output (it reads no messages). */
  private readonly unitsBuffer: Float64Array;
  /** Bytes of messages per unit of a UNITS call, as seen so far (sizes the next call). */
  private bytesPerUnit: number;
  /** The last UNITS call's seconds per unit (0: none yet). */
  private secondsPerUnit = 0;
  /** Shared steps: the band copies of workers 1 .. W-1 (worker 0's is bandBuffer), and the W
   *  workers' kernels (each keeps its worker's sweep between calls). */
  private readonly copies: Uint8Array[] = [];
  private readonly shareKernels: SolverKernel[] = [];

  constructor(private readonly o: BandStepperOptions) {
    this.kernel = o.backend.solverKernel(o.variant, o.rules);
    // The TS kernel runs on this thread; the native one has its own threads.
    this.threads = o.backend.kernelThreads ? Math.max(1, Math.floor(o.threads)) : 1;
    this.bandBuffer = new Uint8Array(o.bandBufferBytes);
    // The message bytes: a quarter for messages read (decoded), a sixteenth each for the bytes of
    // message files read and written, a quarter for what a call makes, a quarter for the kernel's
    // outboxes. UNITS and REQUESTS calls are sized to make at most half of their output buffer,
    // the native kernel's sort keys the other half; a UNITS call, which reads no messages, has the
    // input's quarter too. A VISIT call makes up to a value and the parents' wins per request.
    const quarter = Math.max(256, Math.floor(o.messageBytes / 4 / 8));
    this.unitsBuffer = new Float64Array(2 * quarter);
    this.inputBuffer = this.unitsBuffer.subarray(0, quarter);
    this.outputBuffer = this.unitsBuffer.subarray(quarter);
    this.reading = { runs: o.backend.messageRuns, bytes: new Uint8Array(Math.max(2048, Math.floor(o.messageBytes / 16))), messages: this.inputBuffer };
    this.writeBuffer = new Uint8Array(Math.max(2048, Math.floor(o.messageBytes / 16)));
    this.bytesPerUnit = o.space.p2Placements * 8;
  }

  private map(band: number): BandMap {
    const { bands, bandOf, slotOf, groupsOf } = this.o.layout;
    return { held: band, bands, bandOf, slotOf, roundOf: this.o.schedule.roundOf, groups: groupsOf[band]! };
  }

  /** The buffer's view of band `band`'s table. */
  bandTable(band: number): Uint8Array {
    return this.bandBuffer.subarray(0, bandBytes(this.o.space, this.o.layout.groupsOf[band]!.length));
  }

  /** Runs `job` on `store` (its manifest as committed at job.generation). */
  async run(store: ShardStore, job: BandStepJob, hooks: BandStepHooks = {}): Promise<BandStepOutcome> {
    const started = performance.now();
    const attempt = attemptToken();
    const outcome = job.pass === 0 ? await this.init(job, attempt, hooks) : await this.step(store, job, attempt, hooks);
    const table = this.bandTable(job.band);
    if (outcome.changed > 0 || job.pass === 0) {
      const file = bandFileName(job.band, job.generation + 1, attempt);
      await writeFileAtomicallyAsync(join(store.dir, file), table, false, `${process.pid}-${attempt}`);
      outcome.table = { file, crc32: crc32Of(table) };
      outcome.bytesWritten += table.length;
    }
    outcome.seconds = (performance.now() - started) / 1000;
    return outcome;
  }

  /** Before each kernel call: the event loop runs (progress, abort signals, a worker's lock). */
  private async yieldToEvents(hooks: BandStepHooks): Promise<void> {
    await new Promise<void>((resolve) => setImmediate(resolve));
    hooks.beforeCall?.();
  }

  private async call(hooks: BandStepHooks, phase: BandPhase, table: Uint8Array, band: number, input: Float64Array | undefined, from = 0, to = 0, kernel = this.kernel): Promise<BandResult> {
    await this.yieldToEvents(hooks);
    const units = phase === BandPhase.UNITS || phase === BandPhase.UNITS_KEEP || phase === BandPhase.REVISIT;
    const output = units ? this.unitsBuffer : this.outputBuffer;
    // What UNITS and VISIT make is only written to message files: coded by the kernel where it
    // can (native: on its threads, as it merges them; 7x7/3 coded them in 1.0 s on this thread).
    const code = units || phase === BandPhase.VISIT;
    return kernel.band(phase, table, this.map(band), input, from, to, this.threads, output, code);
  }

  private emptyOutcome(job: BandStepJob, attempt: string): BandStepOutcome {
    return { band: job.band, attempt, pass: job.pass, changed: 0, sentValues: 0, messagesWritten: 0, moveless: 0, bytesRead: 0, bytesWritten: 0, seconds: 0 };
  }

  /** Init: illegal, terminal and won-in-one states (init reads no children). */
  private async init(job: BandStepJob, attempt: string, hooks: BandStepHooks): Promise<BandStepOutcome> {
    const outcome = this.emptyOutcome(job, attempt);
    const table = this.bandTable(job.band).fill(0);
    const groups = this.o.layout.groupsOf[job.band]!.length;
    const calls = Math.max(CALLS_PER_BAND, Math.ceil((groups * this.o.space.p2Placements) / MAX_STATES_PER_CALL));
    const chunks = chunkRanges(groups, calls);
    for (const [i, [from, to]] of chunks.entries()) {
      const s = await this.call(hooks, BandPhase.INIT, table, job.band, undefined, from, to);
      outcome.changed += s.illegal + s.terminal + s.wins + s.losses;
      hooks.onProgress?.((i + 1) / chunks.length);
    }
    return outcome;
  }

  private async step(store: ShardStore, job: BandStepJob, attempt: string, hooks: BandStepHooks): Promise<BandStepOutcome> {
    const { pass, band } = job;
    const { bands } = this.o.layout;
    const state = store.manifest.bands!;
    const table = store.loadBand(band, this.bandTable(band));
    const inbox = inboxOf(state.messages, this.o.schedule, band, job);
    const outcome = this.emptyOutcome(job, attempt);
    outcome.bytesRead += table.length;
    const writer = new MessagePackWriter(store.dir, pass, band, attempt, bands, this.o.backend.messageRuns, this.writeBuffer);
    const progress = (fraction: number) => hooks.onProgress?.(Math.min(1, fraction));
    try {
      // What a call decided: its changes here, its messages to the others.
      // (Shared steps count the band's changes themselves: two copies may prove one state.)
      const route = (r: BandResult, countChanges = true) => {
        if (countChanges) outcome.changed += r.wins + r.losses + r.illegal;
        outcome.moveless += r.moveless;
        let at = 0;
        r.counts.forEach((count, target) => {
          if (r.coded) {
            const bytes = r.codedBytes![target]!;
            writer.writeRun(target, 'values', r.coded.subarray(at, at + bytes), count);
            at += bytes;
          } else {
            writer.write(target, 'values', r.messages.subarray(at, at + count));
            at += count;
          }
          outcome.sentValues += count;
        });
      };
      const visit = async (requests: Float64Array) => {
        // A request makes up to a value and a win per parent: small calls keep the output bounded.
        const per = Math.max(256, Math.floor(this.inputBuffer.length / 32));
        for (let at = 0; at < requests.length; at += per) {
          route(await this.call(hooks, BandPhase.VISIT, table, band, requests.subarray(at, at + per)));
        }
      };
      // The values the others sent, applied by the kernel from the files' bytes, then the visits
      // they asked for: each pack opened once, its entry for this band read once.
      const asked: PackReader[] = [];
      try {
        for (const pack of inbox) {
          const reader = PackReader.open(store.dir, pack, bands, band);
          // Kept open for its requests (closed by the finally below), up to MAX_OPEN_PACKS.
          const keep = reader.has('requests');
          if (keep) asked.push(reader);
          try {
            await reader.applyValues(this.reading, async (bytes, runState) => {
              await this.yieldToEvents(hooks);
              const r = this.kernel.bandApplyRuns(table, this.map(band), bytes, 0, runState, this.threads);
              outcome.changed += r.wins + r.losses + r.illegal;
              return r.messages;
            });
          } finally {
            if (!keep || asked.length > MAX_OPEN_PACKS) reader.close();
          }
          if (!keep) outcome.bytesRead += reader.bytesRead;
        }
        for (const reader of asked) {
          reader.reopen(bands);
          await reader.readMessages('requests', this.reading, visit);
          reader.close();
          outcome.bytesRead += reader.bytesRead;
        }
      } finally {
        for (const reader of asked) reader.close();
      }
      progress(0.1);
      if (pass === 1 && this.o.schedule.kind === 'shared' && this.o.schedule.workers > 1) {
        outcome.changed += await this.sharedUnits(hooks, band, table, (r) => route(r, false), (f) => progress(0.1 + 0.8 * f));
      } else if (pass === 1) await this.units(hooks, band, table, route, (f) => progress(0.1 + 0.8 * f));
      // Requests for the unknown states held here, in slots of at most half the output buffer's
      // worth of unknown states a call (a request each): the sort keys take the other half, the
      // kernel's outboxes as much again.
      const chunks = requestChunks(table, this.o.layout.groupsOf[band]!.length, this.o.space.p2Placements, Math.floor(this.outputBuffer.length / 2));
      for (const [i, [from, to]] of chunks.entries()) {
        const r = await this.call(hooks, BandPhase.REQUESTS, table, band, undefined, from, to);
        let at = 0;
        let own: Float64Array | undefined;
        for (let target = 0; target < bands; target++) {
          const count = r.counts[target]!;
          const requests = r.messages.subarray(at, at + count);
          at += count;
          if (count === 0) continue;
          // This band's own are copied (the visits' output goes where they are) to the input
          // buffer, idle meanwhile and as large as the output.
          if (target === band && pass > 1) {
            own = this.inputBuffer.subarray(0, count);
            own.set(requests);
          } else if (pass > 1 || requestsInPass1(this.o.schedule, band, target)) writer.write(target, 'requests', requests);
        }
        if (own) await visit(own);
        progress(0.9 + (0.1 * (i + 1)) / chunks.length);
      }
      const pack = writer.finish();
      if (pack) outcome.pack = pack;
    } finally {
      writer.close(); // a step that throws: its files are leftovers, removed on resume
    }
    outcome.messagesWritten = writer.messagesWritten;
    outcome.bytesWritten += writer.bytesWritten;
    return outcome;
  }

  /** Pass 1's visit of every state of the band's units, in calls sized to the message buffer. */
  private async units(hooks: BandStepHooks, band: number, table: Uint8Array, route: (r: BandResult) => void, progress: (fraction: number) => void): Promise<void> {
    try {
      await this.unitsSweep(hooks, band, table, route, progress);
    } catch (e) {
      // The kernel keeps this band's sweep: the next step (another band's) starts with a new one.
      this.kernel = this.o.backend.solverKernel(this.o.variant, this.o.rules);
      throw e;
    }
  }

  /** The units in calls of about UNITS_CALL_SECONDS, one sweep over them all (UNITS_KEEP, then
   *  REVISIT): a state left waiting at a call's end is revisited REVISIT_LAG units later, as in
   *  the in-memory pass (7x7/3 in 9 bands: 98.6% of the states in pass 1, 98.1% revisited at
   *  each call's end). */
  private async unitsSweep(hooks: BandStepHooks, band: number, table: Uint8Array, route: (r: BandResult) => void, progress: (fraction: number) => void): Promise<void> {
    const units = this.o.layout.unitsOf[band]!;
    for (let at = 0; at < units.length; ) {
      const n = unitsCallSize(units.length - at, this.unitsThatFit(), this.secondsPerUnit, this.o.callSeconds ?? UNITS_CALL_SECONDS);
      const started = performance.now();
      const r = await this.call(hooks, BandPhase.UNITS_KEEP, table, band, units.subarray(at, at + n));
      const made = r.counts.reduce((a, b) => a + b, 0);
      // Units differ along the proof order: a call is at most twice the last one (by either bound).
      this.bytesPerUnit = Math.max(this.bytesPerUnit * 0.5, (made * 8) / n);
      this.secondsPerUnit = Math.max(this.secondsPerUnit * 0.5, (performance.now() - started) / 1000 / n);
      route(r);
      at += n;
      progress(at / units.length);
    }
    route(await this.call(hooks, BandPhase.REVISIT, table, band, undefined));
  }

  /** Units whose messages fill at most half the UNITS output (the sort keys take the other half),
   *  at the bytes per unit seen so far. */
  private unitsThatFit(): number {
    return Math.max(1, Math.floor(this.unitsBuffer.byteLength / 2 / this.bytesPerUnit));
  }

  /**
   * Pass 1's visit of the band's units shared by the schedule's W workers (schedule 'shared'), as
   * W workers holding copies of the band would make it: in sub-rounds, worker w visits the w-th
   * slice of sliceUnits units of each chunk of W slices on its own copy, and between sub-rounds
   * the copies exchange their proofs, so a chain of proofs crosses from slice to slice a
   * sub-round later. Each worker's slices are one sweep (UNITS_KEEP: a state its visit left
   * waiting is revisited REVISIT_LAG of its units later, and those still waiting at the end of the
   * step, REVISIT), with a kernel of its own. The copies are held here and the slices run one
   * after the other: what W workers would prove, measured in one process (a cluster refuses the
   * schedule so far). Returns the states of the band proven (two copies may prove one state: not
   * the calls' sum).
   */
  private async sharedUnits(hooks: BandStepHooks, band: number, table: Uint8Array, route: (r: BandResult) => void, progress: (fraction: number) => void): Promise<number> {
    const { workers } = this.o.schedule;
    const units = this.o.layout.unitsOf[band]!;
    const states = this.o.layout.groupsOf[band]!.length * this.o.space.p2Placements;
    const unknownBefore = unknownStates(table, 0, states);
    while (this.copies.length < workers - 1) this.copies.push(new Uint8Array(this.bandBuffer.length));
    while (this.shareKernels.length < workers) this.shareKernels.push(this.o.backend.solverKernel(this.o.variant, this.o.rules));
    const kernels = this.shareKernels.slice(0, workers);
    const copies = [table, ...this.copies.slice(0, workers - 1).map((c) => c.subarray(0, table.length))];
    for (const copy of copies.slice(1)) copy.set(table);
    try {
      await this.sharedSweeps(hooks, band, units, copies, kernels, route, progress);
    } catch (e) {
      // Their kept sweeps are of this band: the next step starts with new kernels.
      this.shareKernels.length = 0;
      throw e;
    }
    return unknownBefore - unknownStates(table, 0, states);
  }

  private async sharedSweeps(
    hooks: BandStepHooks,
    band: number,
    units: Float64Array,
    copies: Uint8Array[],
    kernels: SolverKernel[],
    route: (r: BandResult) => void,
    progress: (fraction: number) => void,
  ): Promise<void> {
    const { workers, sliceUnits } = this.o.schedule;
    const chunk = workers * sliceUnits;
    for (let at = 0; at < units.length; at += chunk) {
      for (let w = 0; w < workers && at + w * sliceUnits < units.length; w++) {
        const end = Math.min(units.length, at + (w + 1) * sliceUnits);
        for (let from = at + w * sliceUnits; from < end; ) {
          const to = Math.min(end, from + this.unitsThatFit());
          const r = await this.call(hooks, BandPhase.UNITS_KEEP, copies[w]!, band, units.subarray(from, to), 0, 0, kernels[w]);
          this.bytesPerUnit = Math.max(this.bytesPerUnit * 0.5, (r.counts.reduce((a, b) => a + b, 0) * 8) / (to - from));
          route(r);
          from = to;
        }
      }
      exchangeProofs(copies);
      progress(Math.min(1, (at + chunk) / units.length));
    }
    // The end of each worker's sweep, then the last exchange.
    for (let w = 0; w < workers; w++) route(await this.call(hooks, BandPhase.REVISIT, copies[w]!, band, undefined, 0, 0, kernels[w]));
    exchangeProofs(copies);
  }
}

/**
 * The proofs of copies of one band, exchanged: each copy becomes the OR of all. Sound because a
 * state's value only goes from UNKNOWN (0) to a value, set by an OR of its bits
 * (BandTable.proveLocal), and a state proven in two copies has the same value in both.
 */
export function exchangeProofs(copies: readonly Uint8Array[]): void {
  const [first, ...rest] = copies;
  if (first === undefined || rest.length === 0) return;
  const words = Math.floor(first.length / 4);
  const aligned = copies.every((c) => c.byteOffset % 4 === 0 && c.length === first.length);
  if (!aligned) throw new RangeError('exchangeProofs: copies of unequal length or unaligned');
  const merged = new Int32Array(first.buffer, first.byteOffset, words);
  for (const copy of rest) {
    const other = new Int32Array(copy.buffer, copy.byteOffset, words);
    for (let i = 0; i < words; i++) merged[i]! |= other[i]!;
    for (let i = words * 4; i < first.length; i++) first[i]! |= copy[i]!;
  }
  for (const copy of rest) copy.set(first);
}

/**
 * Slot ranges [from, to) of a band of `slots` slots of `per` states, each with at most `limit`
 * unknown states (a slot alone may have more if limit < per), at most a sixteenth of the slots
 * (progress, and interruption points) and MAX_STATES_PER_CALL states: REQUESTS calls, which make a request per unknown
 * state. Late passes, with few unknown states left, take a band in a few calls, not hundreds.
 */
export function requestChunks(table: Uint8Array, slots: number, per: number, limit: number, maxStates = MAX_STATES_PER_CALL): Array<[number, number]> {
  const chunks: Array<[number, number]> = [];
  const most = Math.max(1, Math.min(Math.ceil(slots / CALLS_PER_BAND), Math.floor(maxStates / per)));
  let from = 0;
  let unknown = 0;
  for (let slot = 0; slot < slots; slot++) {
    const n = unknownStates(table, slot * per, (slot + 1) * per);
    if (slot > from && (unknown + n > limit || slot - from >= most)) {
      chunks.push([from, slot]);
      from = slot;
      unknown = 0;
    }
    unknown += n;
  }
  if (slots > from) chunks.push([from, slots]);
  return chunks;
}
