/**
 * The solver kernel of the TS backend (the native backend has the same one in C++, kernel.inl and
 * the files it includes): passes over a range of groups of the state space, on a shared 2-bit
 * table.
 *
 *  - init: ILLEGAL for illegal states, LOSS for terminal ones (the opponent has just won);
 *  - pass: for each UNKNOWN state, WIN if some move leads to a LOSS, LOSS if every legal move
 *    leads to a WIN (or there is no legal move). A new LOSS is propagated at once: every parent
 *    (moves are reversible, so parents are found with the move generator) becomes a WIN. A state
 *    left UNKNOWN is visited once more REVISIT_LAG units later (see state-space.ts);
 *  - distanceInit / distanceLayer: plies to the end for every won or lost state, over a solved
 *    table, layer by layer from the ends of the game (see SolverKernel in backend.ts);
 *  - band: the same visits on one band of a band-ordered store, with messages to the others
 *    (BandPhase in backend.ts; band-table.ts).
 *
 * This class is the adapter of the SolverKernel interface (native: BoardKernel in kernel.inl):
 * each call binds the table and runs a phase (phases.ts) over its units (groups, or P2
 * placements in proof order); the visits are the workers' (pass-worker.ts, distances.ts), over
 * the table (table-parts.ts) and the moves between stored states (state-graph.ts): the native
 * kernel's files, by job and by name.
 */
import {
  type BandApplyResult,
  type BandMap,
  BandPhase,
  type BandResult,
  type KernelStats,
  type ListUnknownOptions,
  type ListedUnknown,
  type PassOptions,
  type SolverKernel,
  type SparsePassOptions,
  emptyKernelStats,
} from '../backend/backend.js';
import { BitboardEngine } from '../engine/engine.js';
import type { RuleMode, Variant } from '../geometry/variant.js';
import { BandTable } from './band-table.js';
import { DistanceWorker } from './distances.js';
import { RUN_NEXT_BYTE, RUN_NEXT_OUT, decodeMessageRuns } from './message-runs.js';
import { Outbox, collectOutboxes } from './outbox.js';
import { KeptSweep, PassWorker } from './pass-worker.js';
import { applyValues, distanceInitGroup, distanceLayerGroup, initGroup, listedUnit, passUnit, requestsOfSlot, sparseGroup, visitRequests } from './phases.js';
import { StateGraph } from './state-graph.js';
import { MAX_DISTANCE, StateSpace } from './state-space.js';
import type { TableLike } from './table-bytes.js';
import { SparseMemo } from './sparse-memo.js';
import { UnknownLists } from './unknown-lists.js';
import { TableParts } from './table-parts.js';

/** Requests per unit of a band visit (native: kVisitBatch in kernel.inl). */
const VISIT_BATCH = 256;
/** Values decoded at a time by bandApplyRuns (512 KiB of doubles). */
const APPLY_SCRATCH = 65536;

export class TsSolverKernel implements SolverKernel {
  private readonly space: StateSpace;
  private readonly engine: BitboardEngine;
  private readonly graph: StateGraph;
  private readonly parts: TableParts;
  private readonly passWorker: PassWorker;
  private readonly distanceWorker: DistanceWorker;
  /** Band calls: their own table and worker (made on first use), so that the passes' worker only
   *  ever sees TableParts. */
  private bandParts?: { table: BandTable; outbox: Outbox; worker: PassWorker };
  /** The sweep UNITS_KEEP calls keep, and its band (-1: none). */
  private kept?: KeptSweep;
  private keptBand = -1;
  private applyScratch?: Float64Array;
  /** The sparse passes' memo, kept between calls of one solve. */
  private readonly memo = new SparseMemo();
  /** The unknown states by pass unit, kept for the listed passes. */
  private readonly lists = new UnknownLists();

  constructor(variant: Variant, rules: RuleMode, space?: StateSpace) {
    const engine = new BitboardEngine(variant, rules);
    this.engine = engine;
    this.space = space ?? new StateSpace(variant);
    this.parts = new TableParts(this.space);
    const graph = new StateGraph(engine, this.space);
    this.graph = graph;
    this.passWorker = new PassWorker(engine, this.space, graph, this.parts);
    this.distanceWorker = new DistanceWorker(engine, this.space, graph, this.parts);
  }

  /** Number of work units of pass(): P2 placements, C(N, k). init() works on groups. */
  get passUnits(): number {
    return this.space.p1Placements;
  }

  init(table: TableLike, groupFrom: number, groupTo: number): KernelStats {
    this.parts.bind(table);
    checkUnits(groupFrom, groupTo, this.space.groups);
    const stats = this.startPassCall();
    for (let g = groupFrom; g < groupTo; g++) initGroup(this.passWorker, g);
    return stats;
  }

  /**
   * One pass over the stored states whose P2 placement is in [unitFrom, unitTo) of the proof
   * order (space.passOrder: C(N, k) P2 placements), with the revisits of REVISIT_LAG. Same order
   * as the native kernel (phases.inl), so single-threaded solves agree pass by pass.
   * `keepWaiting`: the states still waiting for their revisit at the end stay for the next call
   * (a worker taking one unit at a time) until revisitWaiting().
   */
  pass(table: TableLike, unitFrom: number, unitTo: number, { keepWaiting = false }: PassOptions = {}): KernelStats {
    this.parts.bind(table);
    const stats = this.startPassCall();
    const worker = this.passWorker;
    for (let unit = unitFrom; unit < unitTo; unit++) passUnit(worker, unit);
    if (!keepWaiting) worker.endSweep();
    return stats;
  }

  /** The same over groups [groupFrom, groupTo), visiting only states still unknown (late passes);
   *  `keepWaiting` as in pass(); with the memo of the solve `memo` names (sparse-memo.ts). */
  sparsePass(
    table: TableLike,
    groupFrom: number,
    groupTo: number,
    { descending = false, keepWaiting = false, memo }: SparsePassOptions = {},
  ): KernelStats {
    this.parts.bind(table);
    checkUnits(groupFrom, groupTo, this.space.groups);
    if (memo) checkMemoKey(memo.token, memo.bytes);
    // Offsets in a group are 32-bit (Uint32Array), as in the native kernel.
    const kept = memo && memo.token !== 0 && this.space.p2Placements <= 0xffffffff ? this.memo : undefined;
    kept?.bind(memo!.token, table, memo!.bytes, this.space.groups);
    const stats = this.startPassCall();
    const worker = this.passWorker;
    for (let j = groupFrom; j < groupTo; j++) sparseGroup(worker, descending ? groupFrom + groupTo - 1 - j : j, kept);
    if (!keepWaiting) worker.endSweep();
    return stats;
  }

  /** Drops the sparse passes' memo; returns the bytes it counted for. */
  releaseSparseMemo(): number {
    return this.memo.release();
  }

  /** Lists the table's unknown states by pass unit within `budget` bytes, for the listed passes
   *  over this table that follow (unknown-lists.ts); lists made before are dropped. */
  listUnknown(table: TableLike, { budget }: ListUnknownOptions): ListedUnknown {
    checkCount('unknown lists budget', budget);
    this.parts.bind(table);
    return this.lists.list(this.engine, this.space, this.parts, table, budget);
  }

  /** Pass units [unitFrom, unitTo) of the proof order, as pass(), visiting only the states the
   *  lists of this table hold (listUnknown). */
  listedPass(table: TableLike, unitFrom: number, unitTo: number, { keepWaiting = false }: PassOptions = {}): KernelStats {
    this.parts.bind(table);
    checkUnits(unitFrom, unitTo, this.space.p1Placements);
    if (!this.lists.of(table)) throw new Error('a listed pass over a table whose unknown states were not listed');
    const stats = this.startPassCall();
    const worker = this.passWorker;
    for (let u = unitFrom; u < unitTo; u++) listedUnit(worker, u, this.lists);
    if (!keepWaiting) worker.endSweep();
    return stats;
  }

  /** Drops the lists; returns the bytes they held. */
  releaseUnknownLists(): number {
    return this.lists.release();
  }

  /** Visits again every state still waiting from pass() or sparsePass() calls with keepWaiting. */
  revisitWaiting(table: TableLike): KernelStats {
    this.parts.bind(table);
    const stats = this.startPassCall();
    this.passWorker.endSweep();
    return stats;
  }

  distanceInit(table: TableLike, distances: TableLike, groupFrom: number, groupTo: number): KernelStats {
    this.parts.bind(table);
    const stats = this.startDistanceCall(distances);
    for (let g = groupFrom; g < groupTo; g++) distanceInitGroup(this.distanceWorker, g);
    return stats;
  }

  distanceLayer(table: TableLike, distances: TableLike, depth: number, groupFrom: number, groupTo: number): KernelStats {
    if (!(depth >= 0 && depth < MAX_DISTANCE)) throw new RangeError(`distance layer ${depth} outside 0..${MAX_DISTANCE - 1}`);
    this.parts.bind(table);
    const stats = this.startDistanceCall(distances);
    for (let g = groupFrom; g < groupTo; g++) distanceLayerGroup(this.distanceWorker, g, depth);
    return stats;
  }

  /**
   * A band call (BandPhase in backend.ts; native: BoardKernel::solverBand) on the held band
   * `table`, single-threaded (`threads` is ignored): INIT and REQUESTS over slots [from, to);
   * UNITS visits the units `input` (positions in the proof order), each one unit of the revisits;
   * VISIT the requests `input` in batches of VISIT_BATCH, each batch one unit; APPLY sets the
   * values `input`. Messages to the bands, band by band, in the result: in the front of `output`
   * where they fit (a view of it), else in a new array.
   */
  band(
    phase: BandPhase,
    table: Uint8Array,
    map: BandMap,
    input: Float64Array | undefined,
    from: number,
    to: number,
    _threads?: number,
    output?: Float64Array,
  ): BandResult {
    if (!Object.values(BandPhase).includes(phase)) throw new RangeError('unknown band phase');
    for (const [name, v] of [
      ['from', from],
      ['to', to],
    ] as const) {
      if (!Number.isInteger(v) || v < 0 || v > 0xffffffff) throw new RangeError(`band ${name} ${v} is not an integer from 0 to 2^32 - 1`);
    }
    if ((phase === BandPhase.UNITS_KEEP || phase === BandPhase.REVISIT) && this.keptBand >= 0 && this.keptBand !== map.held) {
      // Refused before anything is done: the sweep kept stays for its band.
      throw new RangeError(`band ${phase === BandPhase.REVISIT ? 'revisit' : 'units'}: the waiting states kept are another band's${phase === BandPhase.REVISIT ? '' : ' (revisit them first)'}`);
    }
    this.bandParts ??= this.makeBandParts();
    const { table: band, outbox, worker } = this.bandParts;
    // UNITS visits look past unknown children for a lost one, and so do the revisits of kept sweeps.
    band.bind(table, map, phase === BandPhase.UNITS || phase === BandPhase.UNITS_KEEP || phase === BandPhase.REVISIT);
    outbox.reset(map.bands);
    const values = input ?? new Float64Array(0);
    let stats = emptyKernelStats();
    worker.stats = stats;
    try {
      stats = this.bandPhase(phase, band, worker, map, values, from, to) ?? stats;
    } catch (e) {
      // As a native call that throws: its messages and the states waiting for a revisit are
      // dropped (with the worker), and a failed UNITS_KEEP or REVISIT drops the sweep kept.
      this.bandParts = undefined;
      if (phase === BandPhase.UNITS_KEEP || phase === BandPhase.REVISIT) this.dropKept();
      throw e;
    }
    return { ...stats, ...collectOutboxes([outbox], map.bands, output) };
  }

  /** APPLY of message runs (SolverKernel.bandApplyRuns): decoded a piece at a time into a scratch
   *  array, and applied as band(APPLY) applies values. */
  bandApplyRuns(table: Uint8Array, map: BandMap, bytes: Uint8Array, from: number, state: Float64Array): BandApplyResult {
    this.bandParts ??= this.makeBandParts();
    const band = this.bandParts.table;
    band.bind(table, map, false);
    this.applyScratch ??= new Float64Array(APPLY_SCRATCH);
    const total: BandApplyResult = { ...emptyKernelStats(), messages: 0 };
    let at = from;
    do {
      decodeMessageRuns(bytes, at, this.applyScratch, 0, state);
      at = state[RUN_NEXT_BYTE]!;
      const n = state[RUN_NEXT_OUT]!;
      const s = emptyKernelStats();
      applyValues(band, this.applyScratch, 0, n, s);
      total.wins += s.wins;
      total.losses += s.losses;
      total.illegal += s.illegal;
      total.messages += n;
    } while (at < bytes.length);
    return total;
  }

  /** The work of a band call; the counts of APPLY (the others count in the worker's). */
  private bandPhase(
    phase: BandPhase,
    band: BandTable,
    worker: PassWorker,
    map: BandMap,
    values: Float64Array,
    from: number,
    to: number,
  ): KernelStats | undefined {
    switch (phase) {
      case BandPhase.INIT:
        checkUnits(from, to, band.slots);
        for (let s = from; s < to; s++) initGroup(worker, map.groups[s]!);
        break;
      case BandPhase.UNITS:
      case BandPhase.UNITS_KEEP: {
        const units = this.space.p1Placements;
        for (const u of values) {
          if (!(u >= 0 && u < units && Number.isInteger(u))) throw new RangeError('band units: a unit outside the proof order');
        }
        if (phase === BandPhase.UNITS_KEEP) {
          this.keptBand = map.held;
          worker.keeping((this.kept ??= new KeptSweep()));
        }
        for (const u of values) passUnit(worker, u);
        worker.endSweep();
        break;
      }
      case BandPhase.REVISIT:
        if (this.kept) worker.revisitKept(this.kept);
        this.dropKept();
        break;
      case BandPhase.VISIT:
        // Batches of requests are the units (a revisit comes REVISIT_LAG batches later).
        for (let i = 0; i < values.length; i += VISIT_BATCH) visitRequests(worker, values, i, Math.min(values.length, i + VISIT_BATCH));
        worker.endSweep();
        break;
      case BandPhase.REQUESTS:
        checkUnits(from, to, band.slots);
        for (let s = from; s < to; s++) requestsOfSlot(worker, s);
        break;
      case BandPhase.APPLY: {
        const s = emptyKernelStats();
        applyValues(band, values, 0, values.length, s);
        return s;
      }
    }
    return undefined;
  }

  private dropKept(): void {
    this.kept = undefined;
    this.keptBand = -1;
  }

  private makeBandParts(): { table: BandTable; outbox: Outbox; worker: PassWorker } {
    const table = new BandTable(this.space);
    const outbox = new Outbox();
    return { table, outbox, worker: new PassWorker(this.engine, this.space, this.graph, this.parts, table, outbox) };
  }

  /** The counts of a new init or pass call. */
  private startPassCall(): KernelStats {
    const stats = emptyKernelStats();
    this.passWorker.stats = stats;
    return stats;
  }

  private startDistanceCall(distances: TableLike): KernelStats {
    const stats = emptyKernelStats();
    this.distanceWorker.stats = stats;
    this.distanceWorker.bind(distances);
    return stats;
  }
}

/** A memo's token and budget: integers from 0 to 2^53 (native: countArg in the addon's args.hpp). */
function checkMemoKey(token: number, bytes: number): void {
  checkCount('sparse memo token', token);
  checkCount('sparse memo budget', bytes);
}

/** An integer from 0 to 2^53 (native: countArg in the addon's args.hpp). */
function checkCount(what: string, x: number): void {
  if (!(Number.isInteger(x) && x >= 0 && x <= 2 ** 53)) throw new RangeError(`${what} must be an integer from 0 to 2^53`);
}

/** A range of units [from, to) of `units` (native: checkUnits in kernel.inl). */
function checkUnits(from: number, to: number, units: number): void {
  if (to > units || from > to || from < 0) throw new RangeError('unit range outside the state space');
}
