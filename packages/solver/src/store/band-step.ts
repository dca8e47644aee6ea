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
 *
 * A store of schedule 'shared' steps each band in pass 1 as W parts and a finish (runSlice,
 * runFinish): each part on its own copy of the band, the W workers at once, each visiting the
 * slices of units it claims first (slice-claims.ts), their proofs exchanged as they go
 * (proof-exchange.ts).
 */
import { join } from 'node:path';
import { type Backend, type BandMap, BandPhase, type BandResult, type RuleMode, type SolverKernel, type StateSpace, type Variant, unknownStates } from '@ccheckers/core';
import { crc32Of } from '../crc.js';
import { chunkRanges } from '../sweeps.js';
import { type BandLayout, bandBytes } from './band-layout.js';
import { type BandSchedule, isSharedStep, requestsInPass1 } from './band-schedule.js';
import { inboxOf } from './message-pack.js';
import { type MessageReading, PackReader } from './message-pack-reader.js';
import { MessagePackWriter } from './message-pack-writer.js';
import { OthersProgress } from './others-progress.js';
import { PROOF_HEADER_BYTES, ProofExchange, orProofs, readProofFile, tableWords } from './proof-exchange.js';
import type { BandStepHooks, BandStepJob, BandStepOutcome, FinishStepJob, SliceOutcome, SliceStepJob } from './band-step-jobs.js';
import { CALLS_PER_BAND, MAX_STATES_PER_CALL, UNITS_CALL_SECONDS, requestChunks, unitsCallSize } from './kernel-calls.js';
import { attemptToken, bandFileName } from './manifest.js';
import type { ShardStore } from './shard-store.js';
import { type PartClaims, SliceClaims } from './slice-claims.js';
import { writeFileAtomicallyAsync } from './store-files.js';

/** Packs a step keeps open from their values to their requests; those past it are closed and
 *  opened again (a store of 4,096 bands has inboxes of up to 4,095 packs). */
export const MAX_OPEN_PACKS = 1024;

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
  /** A slice of a shared step: its copy of the band as last published (runSlice). */
  private synced = new Uint8Array(0);
  /** While a slice runs: the lines its kernel calls mark where they prove a state (its
   *  ProofExchange's, BandMap.changedLines). */
  private changedLines: Uint32Array | undefined;

  constructor(private readonly o: BandStepperOptions) {
    this.kernel = o.backend.solverKernel(o.variant, o.rules);
    // The TS kernel runs on this thread; the native one has its own threads.
    this.threads = o.backend.kernelThreads ? Math.max(1, Math.floor(o.threads)) : 1;
    // Whole 64-bit words, zero past the band: a shared step compares copies word by word.
    this.bandBuffer = new Uint8Array(Math.ceil(o.bandBufferBytes / 8) * 8);
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

  /** The kernel's map of the bands. Its rounds are pass 1's: the kernel consults them only in
   *  pass 1's UNITS calls (BandTable.later), whatever rounds init and later passes go in. */
  private map(band: number): BandMap {
    const { bands, bandOf, slotOf, groupsOf } = this.o.layout;
    const map: BandMap = { held: band, bands, bandOf, slotOf, roundOf: this.o.schedule.roundOf, groups: groupsOf[band]! };
    if (this.changedLines) map.changedLines = this.changedLines;
    return map;
  }

  /** The buffer's view of band `band`'s table. */
  bandTable(band: number): Uint8Array {
    return this.bandBuffer.subarray(0, bandBytes(this.o.space, this.o.layout.groupsOf[band]!.length));
  }

  /** Runs `job` on `store` (its manifest as committed at job.generation). */
  async run(store: ShardStore, job: BandStepJob, hooks: BandStepHooks = {}): Promise<BandStepOutcome> {
    if (isSharedStep(this.o.schedule, job)) throw new RangeError(`band ${job.band}'s step of pass ${job.pass} is shared: it runs as parts (runSlice) and a finish (runFinish)`);
    const started = performance.now();
    const attempt = attemptToken();
    const outcome = job.pass === 0 ? await this.init(job, attempt, hooks) : await this.step(store, job, attempt, hooks);
    if (outcome.changed > 0 || job.pass === 0) await this.writeBand(store, job, attempt, this.bandTable(job.band), outcome);
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
    const table = store.loadBand(job.band, this.bandTable(job.band));
    const outcome = this.emptyOutcome(job, attempt);
    outcome.bytesRead += table.length;
    const writer = new MessagePackWriter(store.dir, job.pass, job.band, attempt, this.o.layout.bands, this.o.backend.messageRuns, this.writeBuffer);
    const progress = (fraction: number) => hooks.onProgress?.(Math.min(1, fraction));
    try {
      const route = this.router(outcome, writer);
      await this.takeInbox(store, job, table, outcome, hooks, route);
      progress(0.1);
      if (job.pass === 1) await this.units(hooks, job.band, table, route, (f) => progress(0.1 + 0.8 * f));
      await this.listRequests(job, table, writer, route, hooks, (f) => progress(0.9 + 0.1 * f));
      const pack = writer.finish();
      if (pack) outcome.pack = pack;
    } finally {
      writer.close(); // a step that throws: its files are leftovers, removed on resume
    }
    outcome.messagesWritten = writer.messagesWritten;
    outcome.bytesWritten += writer.bytesWritten;
    return outcome;
  }

  /** What a call decided, taken into the outcome: its changes here (counted unless
   *  `countChanges` is false), its messages to the others into the step's pack. */
  private router(outcome: BandStepOutcome, writer: MessagePackWriter): (r: BandResult, countChanges?: boolean) => void {
    return (r, countChanges = true) => {
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
  }

  /** The requests of `requests`, visited in calls small enough for the output (a request makes
   *  up to a value and a win per parent), their messages routed. */
  private async visit(hooks: BandStepHooks, band: number, table: Uint8Array, requests: Float64Array, route: (r: BandResult) => void, share?: PartShare): Promise<void> {
    const per = Math.max(256, Math.floor(this.inputBuffer.length / 32));
    for (let at = 0; at < requests.length; at += per) {
      if (share && !share.takesNext()) continue;
      route(await this.call(hooks, BandPhase.VISIT, table, band, requests.subarray(at, at + per)));
    }
  }

  /**
   * The values the others sent the band, applied by the kernel from the files' bytes (APPLY),
   * then the visits they asked for (VISIT), their messages routed: each pack of the step's inbox
   * opened once, its entry for this band read once.
   */
  private async takeInbox(store: ShardStore, job: BandStepJob, table: Uint8Array, outcome: BandStepOutcome, hooks: BandStepHooks, route: (r: BandResult) => void, share?: PartShare): Promise<void> {
    const { band } = job;
    const { bands } = this.o.layout;
    const inbox = inboxOf(store.manifest.bands!.messages, this.o.schedule, band, job);
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
        await reader.readMessages('requests', this.reading, (requests) => this.visit(hooks, band, table, requests, route, share));
        reader.close();
        outcome.bytesRead += reader.bytesRead;
      }
    } finally {
      for (const reader of asked) reader.close();
    }
  }

  /**
   * Requests for the unknown states held here (REQUESTS), in slots of at most half the output
   * buffer's worth of unknown states a call (a request each): the sort keys take the other half,
   * the kernel's outboxes as much again. Those for this band are visited at once (pass > 1).
   */
  private async listRequests(
    job: BandStepJob,
    table: Uint8Array,
    writer: MessagePackWriter,
    route: (r: BandResult) => void,
    hooks: BandStepHooks,
    progress: (fraction: number) => void,
  ): Promise<void> {
    const { pass, band } = job;
    const { bands } = this.o.layout;
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
      if (own) await this.visit(hooks, band, table, own, route);
      progress((i + 1) / chunks.length);
    }
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
   * Worker `part`'s share of a shared step (pass 1: band-schedule.ts, isSharedStep), on its own
   * copy of the band. It takes all the values of the band's inbox before its first slice, as the
   * serial step does before its units: a loss sent here leaves its parents' wins to this band's
   * units (BandTable.laterUnitsBand), so every part's copy must hold it when its slices visit
   * them (each part taking every W-th pack and the others' from their files gave 4x4/6 in 16 bands
   * on 2 workers 2,368 more draws than the in-memory table). It visits every W-th block of its
   * requests, then the slices of sliceUnits units it claims first (slice-claims.ts: the parts
   * claim them in order, as they go, so a faster part visits more), one sweep of its kernel
   * (UNITS_KEEP, then REVISIT), taking the other parts' proofs before each slice and publishing
   * its own after it (proof-exchange.ts), waiting only for a part that has fallen far behind
   * (others-progress.ts), and for the others' last proofs before the revisit that ends the
   * sweep. Its messages to other bands go in a pack of its own (part `part`). The band's file is
   * not written: the step's finish (runFinish) merges the parts' proofs into it. Each part may
   * run anywhere, at the same time as the others or not; `claimsOf` gives claims held in this
   * process (StepClaims) to parts that all run here.
   */
  async runSlice(store: ShardStore, job: SliceStepJob, hooks: BandStepHooks = {}, claimsOf?: (attempt: string, slices: number) => PartClaims): Promise<SliceOutcome> {
    const started = performance.now();
    const attempt = attemptToken();
    const { band, part } = job;
    const table = this.zeroPadded(store.loadBand(band, this.bandTable(band)));
    const synced = this.syncedTable(table.length);
    synced.set(table); // the first file holds what the inbox decided
    const outcome: SliceOutcome = { ...this.emptyOutcome(job, attempt), part, slices: 0, proofs: 0, proofBytes: 0, took: [], waited: 0 };
    outcome.bytesRead += table.length;
    const writer = new MessagePackWriter(store.dir, job.pass, band, attempt, this.o.layout.bands, this.o.backend.messageRuns, this.writeBuffer, part);
    const exchange = new ProofExchange(store.dir, { band, generation: job.generation, part, attempt }, this.o.schedule.workers, table, synced);
    const slices = Math.ceil(this.o.layout.unitsOf[band]!.length / this.o.schedule.sliceUnits);
    const claims = claimsOf?.(attempt, slices) ?? new SliceClaims(store.dir, { band, generation: job.generation }, part, attempt, slices);
    const progress = (fraction: number) => hooks.onProgress?.(Math.min(1, fraction));
    this.changedLines = exchange.changedLines;
    try {
      const route = this.router(outcome, writer);
      await this.takeInbox(store, job, table, outcome, hooks, route, new PartShare(part, this.o.schedule.workers));
      progress(0.1);
      try {
        await this.sliceSweep(hooks, job, claims, table, exchange, outcome, route, (f) => progress(0.1 + 0.9 * f));
      } catch (e) {
        // The kernel keeps this band's sweep: the next step (another band's) starts with a new one.
        this.kernel = this.o.backend.solverKernel(this.o.variant, this.o.rules);
        throw e;
      }
      const pack = writer.finish();
      if (pack) outcome.pack = pack;
    } finally {
      this.changedLines = undefined;
      writer.close();
    }
    // The band's changes are counted by the finish, once (two parts may prove one state).
    outcome.changed = 0;
    outcome.messagesWritten = writer.messagesWritten;
    outcome.slices = claims.won;
    outcome.proofs = exchange.files;
    outcome.took = [...exchange.took].sort();
    outcome.proofBytes = exchange.bytesWritten;
    outcome.bytesRead += exchange.bytesRead;
    outcome.bytesWritten += writer.bytesWritten + exchange.bytesWritten;
    outcome.seconds = (performance.now() - started) / 1000;
    return outcome;
  }

  private async sliceSweep(hooks: BandStepHooks, job: SliceStepJob, claims: PartClaims, table: Uint8Array, exchange: ProofExchange, outcome: SliceOutcome, route: (r: BandResult) => void, progress: (fraction: number) => void): Promise<void> {
    const { sliceUnits } = this.o.schedule;
    const units = this.o.layout.unitsOf[job.band]!;
    const statesPerUnit = (this.o.layout.groupsOf[job.band]!.length * this.o.space.p2Placements) / Math.max(1, units.length);
    const others = new OthersProgress(claims, exchange, sliceUnits, this.o.schedule.workers);
    for (let slice = await claims.next(); slice !== undefined; slice = await claims.next()) {
      const at = slice * sliceUnits;
      const end = Math.min(units.length, at + sliceUnits);
      // The others' proofs as late as can be: those of the slices right before this one.
      await this.yieldToEvents(hooks);
      outcome.waited += await others.waitBefore(at, hooks);
      for (let from = at; from < end; ) {
        const to = Math.min(end, from + this.unitsThatFit());
        const r = await this.call(hooks, BandPhase.UNITS_KEEP, table, job.band, units.subarray(from, to));
        this.bytesPerUnit = Math.max(this.bytesPerUnit * 0.5, (r.counts.reduce((a, b) => a + b, 0) * 8) / (to - from));
        route(r);
        from = to;
      }
      exchange.publishSoon((end - at) * statesPerUnit, end - at, end);
      progress((slice + 1) / claims.slices);
    }
    // Its slices done, this part's states wait for their revisit: the others' last proofs first.
    exchange.publish(units.length);
    outcome.waited += await others.waitBefore(Number.POSITIVE_INFINITY, hooks);
    route(await this.call(hooks, BandPhase.REVISIT, table, job.band, undefined));
    exchange.publish();
    exchange.checkPublished();
  }

  /**
   * The end of a shared step: the band as committed, with the proofs of the parts' committed
   * attempts ORed in (proof-exchange.ts: each file checked, and no value changed), written as
   * the band's new file, and its requests listed as a step lists them. Changes: the band's
   * states proven in the step.
   */
  async runFinish(store: ShardStore, job: FinishStepJob, hooks: BandStepHooks = {}): Promise<BandStepOutcome> {
    const started = performance.now();
    const attempt = attemptToken();
    const { band } = job;
    const table = this.zeroPadded(store.loadBand(band, this.bandTable(band)));
    const words = tableWords(table);
    const states = this.o.layout.groupsOf[band]!.length * this.o.space.p2Placements;
    const outcome = this.emptyOutcome(job, attempt);
    outcome.bytesRead += table.length;
    const unknownBefore = unknownStates(table, 0, states);
    for (const [part, { attempt: of, proofs }] of job.slices.entries()) {
      for (let seq = 0; seq < proofs; seq++) {
        await this.yieldToEvents(hooks);
        const { path, indices, words: proven } = readProofFile(store.dir, { band, generation: job.generation, part, attempt: of, seq }, words.length);
        orProofs(path, words, indices, proven);
        outcome.bytesRead += PROOF_HEADER_BYTES + indices.length * 8;
      }
    }
    outcome.changed = unknownBefore - unknownStates(table, 0, states);
    const writer = new MessagePackWriter(store.dir, job.pass, band, attempt, this.o.layout.bands, this.o.backend.messageRuns, this.writeBuffer);
    try {
      await this.listRequests(job, table, writer, this.router(outcome, writer), hooks, (f) => hooks.onProgress?.(f));
      const pack = writer.finish();
      if (pack) outcome.pack = pack;
    } finally {
      writer.close();
    }
    outcome.messagesWritten = writer.messagesWritten;
    outcome.bytesWritten += writer.bytesWritten;
    if (outcome.changed > 0) await this.writeBand(store, job, attempt, table, outcome);
    outcome.seconds = (performance.now() - started) / 1000;
    return outcome;
  }

  /** The band's table as its file of the next generation, named in the outcome. */
  private async writeBand(store: ShardStore, job: BandStepJob, attempt: string, table: Uint8Array, outcome: BandStepOutcome): Promise<void> {
    const file = bandFileName(job.band, job.generation + 1, attempt);
    await writeFileAtomicallyAsync(join(store.dir, file), table, false, `${process.pid}-${attempt}`);
    outcome.table = { file, crc32: crc32Of(table) };
    outcome.bytesWritten += table.length;
  }

  /** The buffer a slice keeps its copy as last published in (proof-exchange.ts), zero to the
   *  end of the band's last word. */
  private syncedTable(bytes: number): Uint8Array {
    if (this.synced.length < this.bandBuffer.length) this.synced = new Uint8Array(this.bandBuffer.length);
    return this.zeroPadded(this.synced.subarray(0, bytes));
  }

  /** `table`, its buffer zeroed from its end to its last 32-bit word's (a larger band's bytes
   *  may be there): the words a shared step compares and ORs hold nothing else. */
  private zeroPadded(table: Uint8Array): Uint8Array {
    new Uint8Array(table.buffer, table.byteOffset + table.length, (4 - (table.length % 4)) % 4).fill(0);
    return table;
  }
}

/** A part's share of a shared step's blocks of visits, in an order every part sees alike (the
 *  packs' requests, read in the same pieces): the part-th of every W. */
class PartShare {
  private block = 0;
  constructor(
    private readonly part: number,
    private readonly parts: number,
  ) {}

  takesNext(): boolean {
    return this.block++ % this.parts === this.part;
  }
}
