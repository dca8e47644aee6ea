/**
 * The band passes: the solve of a sharded store in bounded memory, one band of the proof order in
 * memory at a time (band-layout.ts), proven values exchanged between bands as messages in files
 * (messages.ts; the message combining of Bal and Allis' parallel retrograde analysis, 1995).
 *
 * A step holds one band X: it takes the values other bands sent X (APPLY), visits the states they
 * asked X to visit (VISIT: states whose children X holds), and then
 *  - in pass 1, visits every state of X's units in proof order (UNITS), as the in-memory pass
 *    does; what it decides about states held elsewhere is sent, and so are the wins of a new
 *    loss's parents held elsewhere;
 *  - every pass, lists X's unknown states as requests to the bands that hold their children
 *    (REQUESTS); those for X itself are visited at once, those for later bands in pass 1 are
 *    not sent (that band's UNITS visit them anyway).
 * Every step ends with one atomic save (band file, its message files, the manifest), so a kill at
 * any moment loses at most the step under way.
 *
 * The end: a pass in which no band took a value and no value was sent. Then every state still
 * unknown was visited during that pass (its request was made after its last change) against a
 * table that did not change: the fixpoint of the in-memory solve, whatever the bands, backend or
 * threads. The bands are then written out as the store's shards, which the CRC is taken over.
 */
import { closeSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { type BandMap, BandPhase, type BandResult, CCheckersError, type SolverKernel, StateSpace, unknownStates } from '@ccheckers/core';
import { crc32Of } from '../crc.js';
import { type PassRecord, hex } from '../database.js';
import { checkMemory } from '../memory.js';
import { lockOutput } from '../output-file.js';
import { checkMoveless, chunkRanges } from '../solve.js';
import { type BandLayout, type BandPlan, bandBytes, bandLayout, planBands } from './band-layout.js';
import { shardLayout } from './layout.js';
import { type MessageReading, MessageWriter, applyMessageFile, readMessages } from './messages.js';
import { type BandPassTally, MANIFEST, MESSAGE_CODING, type Manifest, type MessageFile, ShardStore, readAt } from './shard-store.js';
import { type ShardedSolveOptions, type ShardedSolveResult, ShardedSolveInterrupted, checkStoreToResume, countStore, storeResult, storeToResume } from './sharded-solve.js';

/** Kernel calls per band for init and requests (progress and interruption points). */
const CALLS_PER_BAND = 16;

function emptyTally(): BandPassTally {
  return { changed: 0, sentValues: 0, messagesWritten: 0, seconds: 0, bytesRead: 0, bytesWritten: 0 };
}

/** The store to resume, if any, and the plan: the store's band count, or --shards and --memory. */
function planBandStore(options: ShardedSolveOptions): { existing: ShardStore | undefined; space: StateSpace; plan: BandPlan } {
  const existing = storeToResume(options);
  const space = existing?.space ?? new StateSpace(options.variant);
  let bands = options.shards;
  if (existing) {
    checkStoreToResume(existing, options);
    bands = existing.pieces;
  }
  const plan = planBands(space, {
    ...(bands !== undefined ? { bands } : {}),
    ...(options.memoryLimit !== undefined ? { budget: options.memoryLimit } : {}),
    kernelCopies: 1,
    storeBands: existing !== undefined,
  });
  return { existing, space, plan };
}

export async function solveBands(options: ShardedSolveOptions): Promise<ShardedSolveResult> {
  const { existing, space, plan } = planBandStore(options);
  checkMemory(plan.bandBytes + plan.messageBytes + plan.overheadBytes, options.memoryLimit);
  options.onPlan?.(plan);
  const layout = bandLayout(space, plan.bands);
  let store: ShardStore;
  if (existing) {
    store = existing;
  } else {
    store = ShardStore.create(options.store, options.variant, options.rules, shardLayout(space, plan.bands));
    store.manifest.bands = {
      count: plan.bands,
      layoutCrc32: layoutCrc32(layout),
      files: Array.from({ length: plan.bands }, () => ({ file: '', crc32: 0 })),
      messages: [],
      messageCoding: MESSAGE_CODING,
      next: { pass: 0, band: 0 },
      tally: emptyTally(),
    };
    store.manifest.proven = 0;
    store.manifest.passes = 'bands';
    store.manifest.bandCount = plan.bands;
  }
  const unlock = lockOutput(join(options.store, MANIFEST));
  try {
    store.removeLeftovers();
    return await new BandSolve(options, store, plan, layout).run();
  } finally {
    unlock();
  }
}

class BandSolve {
  private readonly space: StateSpace;
  private readonly kernel: SolverKernel;
  private readonly threads: number;
  private readonly bandBuffer: Uint8Array;
  private readonly inputBuffer: Float64Array;
  private readonly reading: MessageReading;
  private readonly writeBuffer: Uint8Array;
  private readonly outputBuffer: Float64Array;
  /** The input and output buffers as one: a UNITS call's output (it reads no messages). */
  private readonly unitsBuffer: Float64Array;
  private readonly report: NonNullable<ShardedSolveOptions['onProgress']>;
  private readonly started = performance.now();
  private readonly secondsBefore: number;
  private bytesRead = 0;
  private bytesWritten = 0;
  private moveless = 0;
  /** Bytes of messages per unit of a UNITS call, as seen so far (sizes the next call). */
  private bytesPerUnit: number;

  constructor(
    private readonly options: ShardedSolveOptions,
    private readonly store: ShardStore,
    plan: BandPlan,
    private readonly layout: BandLayout,
  ) {
    this.space = store.space;
    const recorded = store.manifest.bands?.layoutCrc32;
    if (recorded !== undefined && recorded !== layoutCrc32(this.layout)) {
      throw new CCheckersError('E_USAGE', `${join(store.dir, MANIFEST)}: its bands were cut by another version of ccheckers (layout CRC-32 ${hex(recorded)}); finish the solve with that version`);
    }
    this.kernel = options.backend.solverKernel(options.variant, options.rules);
    // The TS kernel runs on this thread; the native one has its own threads.
    this.threads = options.backend.kernelThreads ? Math.max(1, Math.floor(options.threads)) : 1;
    this.bandBuffer = new Uint8Array(plan.bandBytes);
    // The message bytes: a quarter for messages read (decoded), a sixteenth each for the bytes of
    // message files read and written, a quarter for what a call makes, a quarter for the kernel's
    // outboxes. UNITS and REQUESTS calls are sized to make at most half of their output buffer,
    // the native kernel's sort keys the other half; a UNITS call, which reads no messages, has the
    // input's quarter too. A VISIT call makes up to a value and the parents' wins per request.
    const quarter = Math.max(256, Math.floor(plan.messageBytes / 4 / 8));
    this.unitsBuffer = new Float64Array(2 * quarter);
    this.inputBuffer = this.unitsBuffer.subarray(0, quarter);
    this.outputBuffer = this.unitsBuffer.subarray(quarter);
    this.reading = { runs: options.backend.messageRuns, bytes: new Uint8Array(Math.max(2048, Math.floor(plan.messageBytes / 16))), messages: this.inputBuffer };
    this.writeBuffer = new Uint8Array(Math.max(2048, Math.floor(plan.messageBytes / 16)));
    this.report = options.onProgress ?? (() => {});
    this.secondsBefore = store.manifest.seconds;
    this.bytesPerUnit = this.space.p2Placements * 8;
  }

  private get m(): Manifest {
    return this.store.manifest;
  }

  private elapsed(): number {
    return this.secondsBefore + (performance.now() - this.started) / 1000;
  }

  private map(band: number): BandMap {
    const { bands, bandOf, slotOf, groupsOf } = this.layout;
    return { held: band, bands, bandOf, slotOf, groups: groupsOf[band]! };
  }

  private bandTable(band: number): Uint8Array {
    return this.bandBuffer.subarray(0, bandBytes(this.space, this.layout.groupsOf[band]!.length));
  }

  private checkAbort(): void {
    if (this.options.signal?.aborted) throw new ShardedSolveInterrupted(this.options.store, this.m);
  }

  /** Before each kernel call: the event loop runs (progress, abort signals). */
  private async yieldToEvents(): Promise<void> {
    await new Promise<void>((resolve) => setImmediate(resolve));
    this.checkAbort();
  }

  /** One band call; yields to the event loop first. */
  private async call(phase: BandPhase, table: Uint8Array, band: number, input: Float64Array | undefined, from = 0, to = 0): Promise<BandResult> {
    await this.yieldToEvents();
    const output = phase === BandPhase.UNITS ? this.unitsBuffer : this.outputBuffer;
    // What UNITS and VISIT make is only written to message files: coded by the kernel where it
    // can (native: on its threads, as it merges them; 7x7/3 coded them in 1.0 s on this thread).
    const code = phase === BandPhase.UNITS || phase === BandPhase.VISIT;
    const r = this.kernel.band(phase, table, this.map(band), input, from, to, this.threads, output, code);
    this.moveless += r.moveless;
    return r;
  }

  async run(): Promise<ShardedSolveResult> {
    const resumedFromPass = this.m.generation > 0 ? this.m.passLog.length : undefined;
    const proven = () => this.m.proven ?? 0;
    if (resumedFromPass !== undefined) this.report({ phase: 'resumed', pass: resumedFromPass, fraction: 0, proven: proven(), storedStates: this.space.states });
    if (this.m.stage === 'init') await this.init();
    while (this.m.stage === 'passes') await this.step();
    if (this.m.stage === 'finishing') {
      if (this.m.bands) this.writeShards();
      const tally = countStore(this.store, this.bandBuffer, (n) => {
        this.bytesRead += n;
      });
      this.store.save([], (next) => {
        next.stage = 'complete';
        next.results = tally;
        next.seconds = this.elapsed();
      });
    }
    return {
      ...storeResult(this.store, this.options.backend.name, this.threads, resumedFromPass),
      store: this.options.store,
      storePasses: 'bands',
      shards: this.layout.bands,
      blockShards: 1,
      bytesRead: this.bytesRead,
      bytesWritten: this.bytesWritten,
    };
  }

  /** Init, band by band (init reads no children): illegal, terminal, won in one. */
  private async init(): Promise<void> {
    const { bands } = this.layout;
    for (let band = this.m.bands!.next.band; band < bands; band++) {
      const table = this.bandTable(band).fill(0);
      let proved = 0;
      const chunks = chunkRanges(this.layout.groupsOf[band]!.length, CALLS_PER_BAND);
      for (const [i, [from, to]] of chunks.entries()) {
        const s = await this.call(BandPhase.INIT, table, band, undefined, from, to);
        proved += s.illegal + s.terminal + s.wins + s.losses;
        this.report({ phase: 'init', pass: 0, fraction: (band + (i + 1) / chunks.length) / bands, proven: (this.m.proven ?? 0) + proved, storedStates: this.space.states });
      }
      this.bytesWritten += table.length;
      this.store.saveBandStep({ index: band, bytes: table }, [], [], (next) => {
        next.proven = (next.proven ?? 0) + proved;
        next.bands!.next = band + 1 < bands ? { pass: 0, band: band + 1 } : { pass: 1, band: 0 };
        if (band + 1 === bands) next.stage = 'passes';
        next.seconds = this.elapsed();
      });
      this.options.onSave?.(0);
    }
    this.report({ phase: 'init-done', pass: 0, fraction: 1, proven: this.m.proven ?? 0, storedStates: this.space.states });
  }

  /** One step: band `next.band` of pass `next.pass`, then the pass's end after its last band. */
  private async step(): Promise<void> {
    const state = this.m.bands!;
    const { pass, band } = state.next;
    const { bands } = this.layout;
    const stepStart = performance.now();
    const table = this.store.loadBand(band, this.bandTable(band));
    let read = table.length;
    let changed = 0;
    let sentValues = 0;
    const inbox = state.messages.filter((f) => f.target === band);
    const writer = new MessageWriter(this.store.dir, pass, band, this.options.backend.messageRuns, this.writeBuffer);
    let added: MessageFile[];
    try {
      const progress = (fraction: number) =>
        this.report({ phase: 'pass', pass, fraction: (band + Math.min(1, fraction)) / bands, proven: (this.m.proven ?? 0) + changed, storedStates: this.space.states });
      // What a call decided: its changes here, its messages to the others.
      const route = (r: BandResult) => {
        changed += r.wins + r.losses + r.illegal;
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
          sentValues += count;
        });
      };
      const visit = async (requests: Float64Array) => {
        // A request makes up to a value and a win per parent: small calls keep the output bounded.
        const per = Math.max(256, Math.floor(this.inputBuffer.length / 32));
        for (let at = 0; at < requests.length; at += per) {
          route(await this.call(BandPhase.VISIT, table, band, requests.subarray(at, at + per)));
        }
      };
      // A step that throws leaves its message files behind: leftovers, removed on resume.
      // The values the others sent, applied by the kernel from the files' bytes, then the visits
      // they asked for.
      for (const file of inbox.filter((f) => f.kind === 'values')) {
        read += await applyMessageFile(this.store.dir, file, this.reading, async (bytes, state) => {
          await this.yieldToEvents();
          const r = this.kernel.bandApplyRuns(table, this.map(band), bytes, 0, state, this.threads);
          changed += r.wins + r.losses + r.illegal;
          return r.messages;
        });
      }
      for (const file of inbox.filter((f) => f.kind === 'requests')) read += await readMessages(this.store.dir, file, this.reading, visit);
      progress(0.1);
      if (pass === 1) await this.units(band, table, route, (f) => progress(0.1 + 0.8 * f));
      // Requests for the unknown states held here: this band's own visited at once; in pass 1
      // none to later bands (their UNITS visit those states).
      // Slots of at most half the output buffer's worth of unknown states a call (a request
      // each): the sort keys take the other half, the kernel's outboxes as much again.
      const chunks = requestChunks(table, this.layout.groupsOf[band]!.length, this.space.p2Placements, Math.floor(this.outputBuffer.length / 2));
      for (const [i, [from, to]] of chunks.entries()) {
        const r = await this.call(BandPhase.REQUESTS, table, band, undefined, from, to);
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
          } else if (pass > 1 || target < band) writer.write(target, 'requests', requests);
        }
        if (own) await visit(own);
        progress(0.9 + (0.1 * (i + 1)) / chunks.length);
      }
      checkMoveless(this.moveless, this.options.variant);
      added = writer.finish();
    } finally {
      writer.close(); // a step that throws: its files are leftovers, removed on resume
    }
    // A band nothing changed keeps its file (every change is counted in `changed`).
    const tableWritten = changed > 0 ? table.length : 0;
    this.bytesRead += read;
    this.bytesWritten += tableWritten + writer.bytesWritten;
    const last = band + 1 === bands;
    const seconds = (performance.now() - stepStart) / 1000;
    let record: PassRecord | undefined;
    this.store.saveBandStep(
      changed > 0 ? { index: band, bytes: table } : { index: band },
      added,
      inbox.map((f) => f.file),
      (next) => {
        const s = next.bands!;
        const t = s.tally;
        t.changed += changed;
        t.sentValues += sentValues;
        t.messagesWritten += writer.messagesWritten;
        t.seconds += seconds;
        t.bytesRead += read;
        t.bytesWritten += tableWritten + writer.bytesWritten;
        next.proven = (next.proven ?? 0) + changed;
        next.seconds = this.elapsed();
        s.next = last ? { pass: pass + 1, band: 0 } : { pass, band: band + 1 };
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
        next.passLog.push(record);
        // The end (see the top of the file): the requests still waiting are for states that
        // were visited against this table already.
        if (t.changed === 0 && t.sentValues === 0) next.stage = 'finishing';
        s.tally = emptyTally();
      },
    );
    this.options.onSave?.(this.m.passLog.length);
    if (record) {
      this.report({ phase: 'pass-done', pass, fraction: 1, proven: this.m.proven ?? 0, storedStates: this.space.states, record });
      if (this.m.stage === 'passes' && this.options.stopAfterPass !== undefined && pass >= this.options.stopAfterPass) {
        throw new ShardedSolveInterrupted(this.options.store, this.m);
      }
    }
  }

  /** Pass 1's visit of every state of the band's units, in calls sized to the message buffer. */
  private async units(
    band: number,
    table: Uint8Array,
    route: (r: BandResult) => void,
    progress: (fraction: number) => void,
  ): Promise<void> {
    const units = this.layout.unitsOf[band]!;
    const target = this.unitsBuffer.byteLength / 2;
    for (let at = 0; at < units.length; ) {
      const n = Math.max(1, Math.min(units.length - at, Math.floor(target / this.bytesPerUnit)));
      const r = await this.call(BandPhase.UNITS, table, band, units.subarray(at, at + n));
      const made = r.counts.reduce((a, b) => a + b, 0);
      this.bytesPerUnit = Math.max(this.bytesPerUnit * 0.5, (made * 8) / n);
      route(r);
      at += n;
      progress(at / units.length);
    }
  }

  /**
   * The bands written out as the store's shards (each group from its band, checked first), then
   * the band files go: the store is then what every other command reads.
   */
  private writeShards(): void {
    const state = this.m.bands!;
    const per = this.space.p2Placements;
    // Every band's CRC first: the shards are made of pieces of them.
    state.files.forEach((_, band) => {
      this.store.loadBand(band, this.bandTable(band));
      this.bytesRead += bandBytes(this.space, this.layout.groupsOf[band]!.length);
    });
    // The band buffer holds a shard too (planBands): it is free now.
    const piece = new Uint8Array(Math.ceil(per / 4) + 1);
    for (const shard of this.store.layout.shards) {
      if (this.m.shards[shard.index]!.file !== '') continue; // written before a resume
      const bytes = this.bandBuffer.subarray(0, shard.bytes).fill(0);
      let band = -1;
      let fd = -1;
      try {
        for (let g = shard.firstGroup; g < shard.firstGroup + shard.groups; g++) {
          if (this.layout.bandOf[g] !== band) {
            if (fd >= 0) closeSync(fd);
            band = this.layout.bandOf[g]!;
            fd = openSync(join(this.store.dir, state.files[band]!.file), 'r');
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
      this.store.save([{ index: shard.index, bytes }], (next) => {
        next.seconds = this.elapsed();
      });
      this.bytesWritten += bytes.length;
      this.options.onSave?.(this.m.passLog.length);
    }
    this.store.save([], (next) => {
      delete next.bands;
    });
    this.store.removeLeftovers();
  }
}

/**
 * Slot ranges [from, to) of a band of `slots` slots of `per` states, each with at most `limit`
 * unknown states (a slot alone may have more if limit < per) and at most a sixteenth of the
 * slots (progress, and interruption points): REQUESTS calls, which make a request per unknown
 * state. Late passes, with few unknown states left, take a band in a few calls, not hundreds.
 */
export function requestChunks(table: Uint8Array, slots: number, per: number, limit: number): Array<[number, number]> {
  const chunks: Array<[number, number]> = [];
  const most = Math.max(1, Math.ceil(slots / CALLS_PER_BAND));
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

/** CRC-32 of the band of every group: what a store records of its layout. */
function layoutCrc32(layout: BandLayout): number {
  return crc32Of(new Uint8Array(layout.bandOf.buffer, layout.bandOf.byteOffset, layout.bandOf.byteLength));
}

/** Copies `count` 2-bit states from state `from` of `src` to state `to` of `dst` (zero there). */
export function copyStates(src: Uint8Array, from: number, dst: Uint8Array, to: number, count: number): void {
  // Indices past 2^32 (a shard of up to 4 GiB holds 2^34 states): Math.floor, never >>>.
  let i = 0;
  if (from % 4 === 0 && to % 4 === 0) {
    i = Math.floor(count / 4) * 4;
    dst.set(src.subarray(from / 4, (from + i) / 4), to / 4);
  }
  for (; i < count; i++) {
    const s = from + i;
    const d = to + i;
    dst[Math.floor(d / 4)]! |= ((src[Math.floor(s / 4)]! >>> ((s % 4) * 2)) & 3) << ((d % 4) * 2);
  }
}
