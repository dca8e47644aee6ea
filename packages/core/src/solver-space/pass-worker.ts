/**
 * The visits of init and of the solver passes (native kernel: pass_worker.inl): a worker visits
 * one stored state at a time; the phases (phases.ts) run its visits over a unit (a group, a P2
 * placement, a batch of requests), and kernel.ts runs the phases over the units of a call.
 *
 *  - init visit: ILLEGAL for illegal states, LOSS for terminal ones (the opponent has just won),
 *    WIN for states where P1 fills its goal at once (winsAtOnce);
 *  - pass visit: for an UNKNOWN state, WIN if some move leads to a LOSS, LOSS if every legal move
 *    leads to a WIN (or there is no legal move). A new LOSS is propagated at once: every parent
 *    (StateGraph.parentsOf) becomes a WIN;
 *  - revisits: a state left UNKNOWN is visited once more REVISIT_LAG units later (see
 *    state-space.ts), the lists of waiting states kept here from unit to unit.
 *
 * A worker works on the table of the call: TableParts (the whole table), or a BandTable (one
 * band, with an outbox for what it decides about states held elsewhere). The native kernel makes
 * the table a template parameter; here it is the worker's `table`, and `sends` (a band) is checked
 * where the native code has `if constexpr (Table::kSends)`: a worker is made for one kind, so the
 * in-memory pass keeps its property accesses monomorphic.
 */
import { popcount32 } from '../bits/bit32.js';
import { WORDS, hasCell, popcount } from '../bits/bitboard.js';
import { type KernelStats, emptyKernelStats } from '../backend/backend.js';
import type { BitboardEngine, WordPosition } from '../engine/engine.js';
import type { BandTable } from './band-table.js';
import type { Outbox } from './outbox.js';
import type { StateGraph } from './state-graph.js';
import { FreePlacements, ILLEGAL, LOSS, REVISIT_LAG, type StateSpace, UNKNOWN, WIN } from './state-space.js';
import type { TableParts } from './table-parts.js';

/** pass(): the state needs no revisit. Otherwise it returns the child its visit stopped at. */
export const NO_BLOCKER = -1;

// evaluate()'s results other than a blocking child (a stored index, never negative).
const SOME_CHILD_LOST = -2; // the state is won
const ALL_CHILDREN_WON = -3; // lost: every legal child is won (or none is legal)
const NO_MOVE = -4;

const WAITING_FIELDS = 2 + 2 * WORDS;

/** The states waiting for a revisit of one unit of a sweep. */
interface WaitingList {
  count: number;
  data: Float64Array;
}

function waitingLists(): WaitingList[] {
  return Array.from({ length: REVISIT_LAG + 1 }, () => ({ count: 0, data: new Float64Array(64 * WAITING_FIELDS) }));
}

/** A sweep's waiting states kept from one band call to the next (BandPhase.UNITS_KEEP; native:
 *  PassWorker::KeptSweep): a sweep over calls of a few units each still revisits a state REVISIT_LAG
 *  units later, not at the end of its own call. */
export class KeptSweep {
  waiting: WaitingList[] = waitingLists();
  unitsDone = 0;
}

/** What decide() did: the table had the value already, took it, or it was sent (a band not
 *  holding the state; stats count the states this table took, the output the messages). */
const KNOWN = 0;
const CHANGED = 1;
const SENT = 2;

/** What a worker reads and writes values through: TableParts or BandTable. */
export interface ValueTable {
  readonly seeksLoss: boolean;
  load(index: number): number;
  prove(index: number, value: number): boolean;
}

export class PassWorker {
  /** Counts of the current kernel call (the adapter gives each call its own). */
  stats: KernelStats = emptyKernelStats();
  private readonly moves: Int32Array;
  /** The state being visited (P1 = a to move); the cells a pass unit's P2 placement leaves
   *  free and the combination of them that is P1 (passUnit); the P2 placements of a group
   *  (written into pos.p2). The phases' (phases.ts). */
  readonly pos: WordPosition = { p1: new Uint32Array(WORDS), p2: new Uint32Array(WORDS), toMove: 0 };
  readonly unitFree: Int32Array;
  readonly unitCombo: Int32Array;
  readonly groupStates: FreePlacements;
  /** initGroup's: the sets initSets writes (k + 3 of WORDS words), and a P1 placement with one. */
  readonly initSetsOut: Uint32Array;
  readonly initOccupied = new Uint32Array(WORDS);
  /** The table values are read from and written to: `parts`, or `band`. */
  readonly table: ValueTable;
  /** A band worker: visits states held elsewhere too, and sends what it decides about them. */
  readonly sends: boolean;

  /**
   * A worker over `parts` (bound by the kernel call), or with `band` and `outbox` over that band
   * (a band worker: band calls only; `parts` is then not used).
   */
  constructor(
    readonly engine: BitboardEngine,
    readonly space: StateSpace,
    readonly graph: StateGraph,
    readonly parts: TableParts,
    readonly band?: BandTable,
    readonly outbox?: Outbox,
  ) {
    this.table = band ?? parts;
    this.sends = band !== undefined;
    if (this.sends && outbox === undefined) throw new Error('a band worker needs an outbox');
    const n = space.cells;
    const k = space.pieces;
    this.moves = new Int32Array(2 * engine.maxMoves);
    this.unitFree = new Int32Array(n - k);
    this.unitCombo = new Int32Array(k);
    this.groupStates = new FreePlacements(n, k, this.pos.p2);
    this.initSetsOut = new Uint32Array((k + 3) * WORDS);
  }

  /**
   * Sets of cells P2 must fill for init to decide a state of P1 placement `a` (native:
   * PassWorker::initSets): every state init decides has P2 on all the cells of one of them (each
   * free of a, at most k cells). Writes them into `out`, WORDS words each (room for k + 3);
   * returns how many, or -1 where they bound nothing: a 6-piece placement a that blocks P2's
   * start area makes most of its group illegal. A state may fill two sets.
   */
  initSets(a: Uint32Array, out: Uint32Array): number {
    const t = this.engine.tables;
    const k = this.space.pieces;
    const cells = this.initSetCells;
    let sets = 0;
    const add = (): void => {
      if (popcount(cells) <= k) out.set(cells, WORDS * sets++);
    };
    // P1's goal filled (illegal: P1 to move has won), or all but the one cell a move fills.
    const goalLeft = this.initGoalLeft;
    for (let w = 0; w < WORDS; w++) goalLeft[w] = t.goal[w]! & ~a[w]!;
    cells.set(goalLeft);
    add();
    for (let w = 0; w < WORDS; w++) {
      for (let x = goalLeft[w]!; x !== 0; x &= x - 1) {
        cells.set(goalLeft);
        cells[w] = goalLeft[w]! & ~(x & -x);
        add();
      }
    }
    for (let w = 0; w < WORDS; w++) cells[w] = t.goal[WORDS + w]! & ~a[w]!; // P2's goal filled: P2 has won
    add();
    if (k === 6) {
      // Blocked start areas (BitboardEngine.goalBlocked): P2 blocking P1's, P1 blocking P2's.
      let p2Blocks = !hasCell(a, t.blockTip[0]);
      let p1Blocks = !hasCell(a, t.blockTip[1]);
      for (let w = 0; w < WORDS; w++) {
        if ((t.blockCells[w]! & a[w]!) !== 0) p2Blocks = false;
        if ((t.blockCells[WORDS + w]! & ~a[w]!) !== 0) p1Blocks = false;
      }
      if (p2Blocks) {
        for (let w = 0; w < WORDS; w++) cells[w] = t.blockCells[w]!;
        add();
      }
      if (p1Blocks) return -1;
    }
    return sets;
  }

  private readonly initSetCells = new Uint32Array(WORDS);
  private readonly initGoalLeft = new Uint32Array(WORDS);

  /** Init visit of stored state `index` = (a, b): illegal, terminal, or won in one move. */
  init(index: number, a: Uint32Array, b: Uint32Array): void {
    const pos = this.initPos;
    pos.p1 = a;
    pos.p2 = b;
    const stats = this.stats;
    const table = this.table;
    if (this.engine.isIllegal(pos)) {
      if (table.prove(index, ILLEGAL)) stats.illegal++;
    } else if (this.engine.hasWon(1, pos)) {
      if (table.prove(index, LOSS)) stats.terminal++;
    } else if (this.winsAtOnce(pos)) {
      if (table.prove(index, WIN)) stats.wins++;
    }
  }

  private readonly initPos: WordPosition = { p1: new Uint32Array(WORDS), p2: new Uint32Array(WORDS), toMove: 0 };

  /** P1 (to move) fills its goal with a legal move. Found at init, so that the first pass can
   *  prove most of the game in one sweep (same as the native kernel). */
  private winsAtOnce(pos: WordPosition): boolean {
    const e = this.engine;
    const a = pos.p1;
    const b = pos.p2;
    // A move fills P1's goal only if exactly one goal cell is empty (it lands there): most
    // states need no move generation at all.
    const goal = e.tables.goal;
    let emptyGoalCells = 0;
    let empty = -1;
    for (let w = 0; w < WORDS; w++) {
      const x = goal[w]! & ~(a[w]! | b[w]!);
      emptyGoalCells += popcount32(x);
      if (x !== 0) empty = (w << 5) + 31 - Math.clz32(x & -x);
    }
    if (emptyGoalCells !== 1) return false;
    const moves = this.moves;
    const count = e.generate(a[0]!, a[1]!, a[2]!, a[0]! | b[0]!, a[1]! | b[1]!, a[2]! | b[2]!, moves);
    const child = this.child;
    child.p2 = b;
    child.toMove = 1;
    for (let i = 0; i < count; i++) {
      const to = moves[2 * i + 1]!;
      if (to !== empty) continue; // only a move onto the empty goal cell can fill the goal
      const from = moves[2 * i]!;
      child.p1.set(a);
      child.p1[from >>> 5]! ^= 1 << (from & 31);
      child.p1[to >>> 5]! ^= 1 << (to & 31);
      if (e.hasWon(0, child) && !e.isIllegal(child)) return true;
    }
    return false;
  }

  private readonly child: WordPosition = { p1: new Uint32Array(WORDS), p2: new Uint32Array(WORDS), toMove: 1 };

  /** Evaluates one stored state (a, b) if still unknown, and propagates a new loss. Returns the
   *  child still unknown that the evaluation stopped at, else NO_BLOCKER. */
  pass(index: number, a: Uint32Array, b: Uint32Array): number {
    const table = this.table;
    if (this.sends) {
      // A band visits states held elsewhere too, without their values: init's are found again
      // (illegal, terminal; a win in one finds its lost child), the others decided again.
      if (this.band!.contains(index)) {
        if (table.load(index) !== UNKNOWN) return NO_BLOCKER;
      } else if (this.illegalOrTerminal(a, b)) {
        return NO_BLOCKER;
      }
    } else if (table.load(index) !== UNKNOWN) {
      return NO_BLOCKER;
    }
    const result = this.evaluate(a, b);
    if (result >= 0) return result;
    const stats = this.stats;
    if (result === NO_MOVE) stats.moveless++;
    else if (result === SOME_CHILD_LOST) {
      if (this.decide(index, WIN) === CHANGED) stats.wins++;
    } else {
      const loss = this.decide(index, LOSS);
      if (loss === KNOWN) return NO_BLOCKER; // another worker proved it, and tells the parents
      if (loss === CHANGED) stats.losses++;
      stats.wins += this.propagateLoss(index, a, b);
    }
    return NO_BLOCKER;
  }

  /** Writes a value the visit of stored state `index` found, or sends it (a band not holding the
   *  state): KNOWN (the table had it), CHANGED (it took it) or SENT. */
  private decide(index: number, value: number): number {
    const table = this.table;
    if (this.sends && !this.band!.contains(index)) {
      this.outbox!.sendValue(this.band!, index, value);
      return SENT;
    }
    return table.prove(index, value) ? CHANGED : KNOWN;
  }

  private readonly elsewhere: WordPosition = { p1: new Uint32Array(WORDS), p2: new Uint32Array(WORDS), toMove: 0 };

  /** (a, b), P1 to move, is illegal or terminal: init's value, for a state held elsewhere. */
  private illegalOrTerminal(a: Uint32Array, b: Uint32Array): boolean {
    const pos = this.elsewhere;
    pos.p1 = a;
    pos.p2 = b;
    return this.engine.isIllegal(pos) || this.engine.hasWon(1, pos);
  }

  /**
   * SOME_CHILD_LOST, ALL_CHILDREN_WON, or the first child still unknown, from the children's
   * current values; NO_MOVE when there is no move at all.
   * A state with a lost child is already won: every loss a pass proves is propagated to all its
   * parents at once (or is about to be, by the worker that proved it), and the parents of the
   * terminal losses of init are wins in one, found by init too. What is left to find out is
   * whether every legal child is won, and the first unknown child ends the evaluation (the later
   * ones are not even ranked).
   */
  private evaluate(a: Uint32Array, b: Uint32Array): number {
    const moves = this.moves;
    const count = this.engine.generate(a[0]!, a[1]!, a[2]!, a[0]! | b[0]!, a[1]! | b[1]!, a[2]! | b[2]!, moves);
    if (count === 0) return NO_MOVE;
    const graph = this.graph;
    const table = this.table;
    graph.prepareChildren(a, b);
    let unknown = NO_BLOCKER;
    for (let i = 0; i < count; i++) {
      const child = graph.childIndexOf(moves[2 * i]!, moves[2 * i + 1]!);
      const v = table.load(child);
      if (v === UNKNOWN) {
        if (!table.seeksLoss) return child;
        if (unknown === NO_BLOCKER) unknown = child;
      } else if (v === LOSS) return SOME_CHILD_LOST;
    }
    if (unknown !== NO_BLOCKER) return unknown;
    return ALL_CHILDREN_WON; // every legal child won (or none legal)
  }

  /** Stored state `loss` = (a, b) with P1 to move is lost: every parent (a, b', P2 to move) is
   *  won, and so is its mirror twin where it has one (same value); a band sends the parents it
   *  does not hold their win, unless the band of their units finds it
   *  (BandTable.leavesWinToUnits). Returns the wins proven. */
  private propagateLoss(loss: number, a: Uint32Array, b: Uint32Array): number {
    const table = this.table;
    const unitsBand = this.sends ? this.band!.laterUnitsBand(loss) : -1;
    const parents = this.graph.parentsOf(a, b);
    const index = parents.index;
    let proven = 0;
    for (let i = 0; i < parents.count; i++) {
      const parent = index[i]!;
      if (this.sends && !this.band!.contains(parent)) {
        if (!this.band!.leavesWinToUnits(unitsBand, parent)) this.outbox!.sendValue(this.band!, parent, WIN);
      } else if (table.load(parent) === UNKNOWN && table.prove(parent, WIN)) {
        proven++;
      }
    }
    return proven;
  }

  // Revisits (REVISIT_LAG): the states waiting, by unit of the sweep modulo REVISIT_LAG + 1, each
  // WAITING_FIELDS numbers: the stored index, the child the first visit stopped at, and a and b
  // (WORDS words each). Typed arrays that only grow: no garbage per unit. They outlive a kernel
  // call with keepWaiting (see TsSolverKernel.pass).
  private waiting = waitingLists();
  private unitsDone = 0;
  /** Set: the sweep goes on from there, and endSweep keeps its waiting states there. */
  private kept: KeptSweep | undefined;
  private readonly revisitPos: WordPosition = { p1: new Uint32Array(WORDS), p2: new Uint32Array(WORDS), toMove: 0 };

  /** Keeps (a, b) for a revisit REVISIT_LAG units later when its visit stopped at a child. */
  waitForRevisit(index: number, blocker: number, a: Uint32Array, b: Uint32Array): void {
    if (blocker === NO_BLOCKER) return;
    const list = this.waiting[this.unitsDone % (REVISIT_LAG + 1)]!;
    let o = list.count * WAITING_FIELDS;
    if (o === list.data.length) {
      const grown = new Float64Array(2 * list.data.length);
      grown.set(list.data);
      list.data = grown;
    }
    const data = list.data;
    data[o++] = index;
    data[o++] = blocker;
    for (let w = 0; w < WORDS; w++) data[o++] = a[w]!;
    for (let w = 0; w < WORDS; w++) data[o++] = b[w]!;
    list.count++;
  }

  /** A unit is done: the states that waited REVISIT_LAG units ago are visited again. */
  endUnit(): void {
    this.unitsDone++;
    if (this.unitsDone > REVISIT_LAG) this.revisit(this.waiting[this.unitsDone % (REVISIT_LAG + 1)]!);
  }

  /** The end of a sweep: every state still waiting is visited again, oldest first (a sweep
   *  kept goes on instead: its waiting states go back to it). */
  endSweep(): void {
    const kept = this.kept;
    if (kept) {
      [this.waiting, kept.waiting] = [kept.waiting, this.waiting];
      kept.unitsDone = this.unitsDone;
      this.kept = undefined;
    } else {
      this.revisitSweep(this.waiting, this.unitsDone);
    }
    this.unitsDone = 0;
  }

  /** Goes on with the sweep `kept` (its waiting states and units) until endSweep. */
  keeping(kept: KeptSweep): void {
    [this.waiting, kept.waiting] = [kept.waiting, this.waiting];
    this.unitsDone = kept.unitsDone;
    this.kept = kept;
  }

  /** The states a sweep kept, visited again, oldest first: the end of that sweep. */
  revisitKept(kept: KeptSweep): void {
    this.revisitSweep(kept.waiting, kept.unitsDone);
    kept.unitsDone = 0;
  }

  /** The end of a sweep of `units` units: every state still waiting in `lists`, oldest first. */
  private revisitSweep(lists: WaitingList[], units: number): void {
    for (let u = Math.max(0, units - REVISIT_LAG); u < units; u++) this.revisit(lists[u % (REVISIT_LAG + 1)]!);
  }

  /** A revisit that finds the child its first visit stopped at still unknown would stop there
   *  again (the children before it were won, and values never change back): skipped. */
  private revisit(list: WaitingList): void {
    const data = list.data;
    const a = this.revisitPos.p1;
    const b = this.revisitPos.p2;
    for (let o = 0; o < list.count * WAITING_FIELDS; o += WAITING_FIELDS) {
      if (this.table.load(data[o + 1]!) === UNKNOWN) continue;
      for (let w = 0; w < WORDS; w++) {
        a[w] = data[o + 2 + w]!;
        b[w] = data[o + 2 + WORDS + w]!;
      }
      this.pass(data[o]!, a, b);
    }
    list.count = 0;
  }
}
