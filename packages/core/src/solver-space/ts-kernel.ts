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
 *    table, layer by layer from the ends of the game (see SolverKernel in backend.ts).
 *
 * This class is the adapter of the SolverKernel interface (native: phases.inl): each phase binds
 * the table parts and loops over its units (groups, or P2 placements in proof order); the work on
 * a unit is the workers' (pass-worker.ts, distances.ts), over the table parts (table-parts.ts)
 * and the moves between stored states (state-graph.ts): the native kernel's files, by job.
 */
import { type KernelStats, type PassOptions, type SolverKernel, type SparsePassOptions, type TableWindow, emptyKernelStats } from '../backend/backend.js';
import { BitboardEngine } from '../engine/engine.js';
import type { RuleMode, Variant } from '../geometry/variant.js';
import { DistanceWorker } from './distances.js';
import { PassWorker } from './pass-worker.js';
import { StateGraph } from './state-graph.js';
import { MAX_DISTANCE, StateSpace } from './state-space.js';
import { TableParts } from './table-parts.js';

export class TsSolverKernel implements SolverKernel {
  private readonly space: StateSpace;
  private readonly parts: TableParts;
  private readonly passWorker: PassWorker;
  private readonly distanceWorker: DistanceWorker;

  constructor(variant: Variant, rules: RuleMode, space?: StateSpace) {
    const engine = new BitboardEngine(variant, rules);
    this.space = space ?? new StateSpace(variant);
    this.parts = new TableParts(this.space);
    const graph = new StateGraph(engine, this.space);
    this.passWorker = new PassWorker(engine, this.space, graph, this.parts);
    this.distanceWorker = new DistanceWorker(engine, this.space, graph, this.parts);
  }

  /** Number of work units of pass(): P2 placements, C(N, k). init() works on groups. */
  get passUnits(): number {
    return this.space.p1Placements;
  }

  init(table: Uint8Array, groupFrom: number, groupTo: number, _threads?: number, firstGroup = 0): KernelStats {
    this.parts.bind(table, { firstGroup, groups: this.parts.groupsIn(table, firstGroup) }, false);
    this.parts.checkGroupsInside(groupFrom, groupTo);
    const stats = this.startPassCall();
    for (let g = groupFrom; g < groupTo; g++) this.passWorker.initGroup(g);
    return stats;
  }

  /**
   * One pass over the stored states whose P2 placement is in [unitFrom, unitTo) of the proof
   * order (space.passOrder: C(N, k) P2 placements), with the revisits of REVISIT_LAG. Same order
   * as the native kernel (phases.inl), so single-threaded solves agree pass by pass.
   * `keepWaiting`: the states still waiting for their revisit at the end stay for the next call
   * (a worker taking one unit at a time) until revisitWaiting().
   */
  pass(table: Uint8Array, unitFrom: number, unitTo: number, { keepWaiting = false, window }: PassOptions = {}): KernelStats {
    this.parts.bind(table, window);
    const stats = this.startPassCall();
    const worker = this.passWorker;
    const order = this.space.passOrder;
    for (let unit = unitFrom; unit < unitTo; unit++) {
      if (worker.passUnit(order[unit]!)) worker.endUnit();
    }
    if (!keepWaiting) worker.endSweep();
    return stats;
  }

  /** The same over groups [groupFrom, groupTo), visiting only states still unknown (late passes);
   *  `keepWaiting` as in pass(). */
  sparsePass(
    table: Uint8Array,
    groupFrom: number,
    groupTo: number,
    { descending = false, keepWaiting = false, window }: SparsePassOptions = {},
  ): KernelStats {
    this.parts.bind(table, window);
    const part = this.parts.partOfGroups(groupFrom, groupTo);
    const stats = this.startPassCall();
    const worker = this.passWorker;
    for (let j = groupFrom; j < groupTo; j++) {
      worker.sparseGroup(descending ? groupFrom + groupTo - 1 - j : j, part);
      worker.endUnit();
    }
    if (!keepWaiting) worker.endSweep();
    return stats;
  }

  /** Visits again every state still waiting from pass() or sparsePass() calls with keepWaiting. */
  revisitWaiting(table: Uint8Array, window?: TableWindow): KernelStats {
    this.parts.bind(table, window);
    const stats = this.startPassCall();
    this.passWorker.endSweep();
    return stats;
  }

  distanceInit(table: Uint8Array, distances: Uint8Array, groupFrom: number, groupTo: number): KernelStats {
    this.parts.bind(table);
    const stats = this.startDistanceCall(distances);
    for (let g = groupFrom; g < groupTo; g++) this.distanceWorker.initGroup(g);
    return stats;
  }

  distanceLayer(table: Uint8Array, distances: Uint8Array, depth: number, groupFrom: number, groupTo: number): KernelStats {
    if (!(depth >= 0 && depth < MAX_DISTANCE)) throw new RangeError(`distance layer ${depth} outside 0..${MAX_DISTANCE - 1}`);
    this.parts.bind(table);
    const stats = this.startDistanceCall(distances);
    for (let g = groupFrom; g < groupTo; g++) this.distanceWorker.pushLayer(g, depth);
    return stats;
  }

  /** The counts of a new init or pass call. */
  private startPassCall(): KernelStats {
    const stats = emptyKernelStats();
    this.passWorker.stats = stats;
    return stats;
  }

  private startDistanceCall(distances: Uint8Array): KernelStats {
    const stats = emptyKernelStats();
    this.distanceWorker.stats = stats;
    this.distanceWorker.bind(distances);
    return stats;
  }
}
