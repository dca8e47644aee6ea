/**
 * Distances to the end of the game over a solved table (native kernel: distances.inl), one state
 * at a time; the phases (phases.ts: distanceInitGroup, distanceLayerGroup) run them over a group,
 * and kernel.ts over the groups of a call. Layer by layer from the ends of the
 * game (see SolverKernel in backend.ts and NO_DISTANCE in state-space.ts): init gives 0 to the
 * lost states with no legal move, and each layer `depth` gives depth + 1 to the parents its
 * states decide.
 */
import { WORDS } from '../bits/bitboard.js';
import { type KernelStats, emptyKernelStats } from '../backend/backend.js';
import type { BitboardEngine, WordPosition } from '../engine/engine.js';
import type { ParentList, StateGraph } from './state-graph.js';
import { FreePlacements, ILLEGAL, LOSS, LOST_WITHOUT_DISTANCE, NO_DISTANCE, type StateSpace, WIN, isLostWithoutDistance, lostCheckedMark } from './state-space.js';
import { TableBytes, type TableLike } from './table-bytes.js';
import type { TableParts } from './table-parts.js';

export class DistanceWorker {
  /** Counts of the current kernel call (the adapter gives each call its own). */
  stats: KernelStats = emptyKernelStats();
  /** The distance table of the call (bind). */
  distances: TableBytes = TableBytes.of(new Uint8Array(0));
  private readonly moves: Int32Array;
  /** The state being visited, and the P2 placements of a group (written into pos.p2): the
   *  phases' (phases.ts). */
  readonly pos: WordPosition = { p1: new Uint32Array(WORDS), p2: new Uint32Array(WORDS), toMove: 0 };
  readonly groupStates: FreePlacements;
  private readonly parentPos: WordPosition = { p1: new Uint32Array(WORDS), p2: new Uint32Array(WORDS), toMove: 0 };

  constructor(
    readonly engine: BitboardEngine,
    readonly space: StateSpace,
    readonly graph: StateGraph,
    readonly parts: TableParts,
  ) {
    this.moves = new Int32Array(2 * engine.maxMoves);
    this.groupStates = new FreePlacements(space.cells, space.pieces, this.pos.p2);
  }

  /** The distance table of the next calls. */
  bind(distances: TableLike): void {
    this.distances = TableBytes.of(distances);
  }

  /** Distance 0 for a lost state without a legal move (terminal ones included), the mark of a lost
   *  state without a distance for the other lost states (see LOST_WITHOUT_DISTANCE). */
  distanceInit(index: number, a: Uint32Array, b: Uint32Array): void {
    if (this.parts.load(index) !== LOSS) return;
    const pos = this.initPos;
    pos.p1 = a;
    pos.p2 = b;
    if (!this.engine.hasWon(1, pos) && this.hasLegalChild(a, b)) {
      this.distances.set(index, LOST_WITHOUT_DISTANCE);
      return;
    }
    this.distances.set(index, 0);
    this.stats.losses++;
  }

  private readonly initPos: WordPosition = { p1: new Uint32Array(WORDS), p2: new Uint32Array(WORDS), toMove: 0 };

  /**
   * (a, b) is at distance `depth`: gives depth + 1 to each parent it decides (see
   * distanceLayerGroup).
   * A parent whose P1 placement is its own mirror image is stored twice, as itself and as its
   * mirror twin (same value, same distance), and both get it.
   */
  pushDistance(a: Uint32Array, b: Uint32Array, value: number, depth: number): void {
    const parents = this.graph.parentsWithPositions(a, b);
    for (let i = 0; i < parents.count; i++) this.pushDistanceTo(parents, i, value, depth);
  }

  /** To parent number i of the list. A lost state's parents are won (or illegal, which only their
   *  value tells); a won state's lost parents are known by their distance byte alone. */
  private pushDistanceTo(parents: ParentList, i: number, value: number, depth: number): void {
    const parent = parents.index[i]!;
    const d = this.distances.get(parent);
    if (value === LOSS) {
      if (d === NO_DISTANCE && this.parts.load(parent) === WIN && this.distances.compareExchange(parent, NO_DISTANCE, depth + 1) === NO_DISTANCE) {
        this.stats.wins++;
      }
    } else if (isLostWithoutDistance(d) && d !== lostCheckedMark(depth)) {
      const pos = this.parentPos;
      for (let w = 0; w < WORDS; w++) {
        pos.p1[w] = parents.p1[i * WORDS + w]!;
        pos.p2[w] = parents.p2[i * WORDS + w]!;
      }
      // Within a layer the answer cannot change (the won children's distances are all laid
      // already), so a parent found undecided is marked and not checked again this layer.
      if (!this.childrenWithin(pos.p1, pos.p2, depth)) this.distances.compareExchange(parent, d, lostCheckedMark(depth));
      else if (this.setLostDistance(parent, depth + 1)) this.stats.losses++;
    }
  }

  /** Whether every legal child of (a, b) has a distance of at most `depth`. */
  private childrenWithin(a: Uint32Array, b: Uint32Array, depth: number): boolean {
    const moves = this.moves;
    const count = this.engine.generate(a[0]!, a[1]!, a[2]!, a[0]! | b[0]!, a[1]! | b[1]!, a[2]! | b[2]!, moves);
    this.graph.prepareChildren(a, b);
    for (let i = 0; i < count; i++) {
      const child = this.graph.childIndexOf(moves[2 * i]!, moves[2 * i + 1]!);
      if (this.parts.load(child) !== ILLEGAL && this.distances.get(child) > depth) return false;
    }
    return true;
  }

  /** Whether (a, b) has a move to a state that is not illegal. A stored state is illegal exactly
   *  where isIllegal says so (the solver's init proves nothing else illegal), so each child's
   *  position answers without its table byte: no cache miss per lost state. */
  private hasLegalChild(a: Uint32Array, b: Uint32Array): boolean {
    const moves = this.moves;
    const count = this.engine.generate(a[0]!, a[1]!, a[2]!, a[0]! | b[0]!, a[1]! | b[1]!, a[2]! | b[2]!, moves);
    const child = this.childPos;
    child.p2 = b;
    for (let i = 0; i < count; i++) {
      const from = moves[2 * i]!;
      const to = moves[2 * i + 1]!;
      child.p1.set(a);
      child.p1[from >>> 5]! ^= 1 << (from & 31);
      child.p1[to >>> 5]! ^= 1 << (to & 31);
      if (!this.engine.isIllegal(child)) return true;
    }
    return false;
  }

  /** A child of the state being initialised: P1's pieces moved, P2 to move. */
  private readonly childPos: WordPosition = { p1: new Uint32Array(WORDS), p2: new Uint32Array(WORDS), toMove: 1 };

  /** Gives a lost state its distance whatever mark it holds (another thread may change the mark
   *  meanwhile); true when this call gave it. */
  private setLostDistance(index: number, distance: number): boolean {
    let d = this.distances.get(index);
    while (isLostWithoutDistance(d)) {
      const before = this.distances.compareExchange(index, d, distance);
      if (before === d) return true;
      d = before;
    }
    return false;
  }
}
