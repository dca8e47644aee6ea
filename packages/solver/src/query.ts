/**
 * Questions to a solved database: the value of a position, the value of each legal move, and a
 * best move that makes progress.
 *
 * The 2-bit table alone does not say how far a win is: a "winning" move (to any lost position)
 * can go round in circles. So the winner takes the move to the nearest win and the loser the one
 * that delays the loss longest, by distances to the end: stored in the database when it was
 * solved with distances (or computed whole for a small table: distance-table.ts), else computed
 * when asked, by a retrograde analysis over the positions reachable from the queried one under
 * value-preserving play (the winner moves to lost positions, the loser anywhere), up to a size
 * limit. Either way, always playing the chosen move ends the game.
 */
import {
  BitboardEngine,
  CCheckersError,
  ILLEGAL,
  LOSS,
  type Move,
  NO_DISTANCE,
  type Position,
  type RuleMode,
  StateSpace,
  UNKNOWN,
  WIN,
  WORDS,
  type WordPosition,
  applyMove,
  distanceFits,
  toWords,
  variant,
} from '@ccheckers/core';
import type { Database } from './database.js';
import { type StoredValues, inMemoryValues } from './database-file.js';
import { NodeIds } from './node-ids.js';
import { PROBLEM_NAMES, Problem, StateJudge, readChildren, stateWords } from './consistency/judge.js';
import { StateIndexer } from './state-index.js';

export type Outcome = 'win' | 'loss' | 'draw' | 'illegal';

export interface MoveInfo {
  move: Move;
  /** The mover's outcome after this move (the child's value, seen from the mover). */
  outcome: Outcome;
  /** Plies from the child to the end of the game under best play, when known. */
  pliesToEnd?: number;
}

export interface PositionInfo {
  /** For the side to move. */
  outcome: Outcome;
  terminal: boolean;
  /** Plies to the end under best play (0 for a terminal position), when known. */
  pliesToEnd?: number;
  moves: MoveInfo[];
  best?: Move;
}

const OUTCOME: Record<number, Outcome> = { [UNKNOWN]: 'draw', [LOSS]: 'loss', [WIN]: 'win', [ILLEGAL]: 'illegal' };
const FLIP: Record<Outcome, Outcome> = { win: 'loss', loss: 'win', draw: 'draw', illegal: 'illegal' };

/** Plies to the end under best play, by stored-state index, over one reachable set. */
export interface DistanceTable {
  get(index: number): number | undefined;
  /** Whether the state is in the reachable set (its distance may still be unknown: a draw). */
  has(index: number): boolean;
  /** Positions in the reachable set. */
  readonly size: number;
}

/** Reachable-set bound for distance computations (about 100 bytes per position). */
export const DEFAULT_DISTANCE_LIMIT = 4_000_000;
/** The same where every value is a read from disk (a database too large to hold): a query must
 *  answer in well under a second, so a large reachable set is given up early. */
export const DISK_DISTANCE_LIMIT = 100_000;

/** The reachable-set bound a game over `values` explores up to unless told otherwise. */
export function defaultDistanceLimit(values: StoredValues): number {
  return values.readsFromDisk ? DISK_DISTANCE_LIMIT : DEFAULT_DISTANCE_LIMIT;
}

export class SolvedGame {
  /** Where the values are read: a table in memory or a database file opened by random access. */
  readonly values: StoredValues;
  readonly engine: BitboardEngine;
  readonly space: StateSpace;
  private readonly indexer: StateIndexer;
  private readonly moveBuffer: Int32Array;
  private cached: DistanceTable | undefined;

  readonly distanceLimit: number;
  /** Whether an exploration has given up at distanceLimit. */
  gaveUp = false;
  /** Whether a later position outside the cached reachable set is explored after one gave up. A
   *  server says no: each try would hold it as long again, and the sets seldom shrink (7x7/2's,
   *  5 plies before the end, is 1.25 million positions, as its start's). */
  retryAfterGivingUp = true;

  constructor(source: Database | StoredValues, distanceLimit?: number) {
    this.values = 'table' in source ? inMemoryValues(source) : source;
    this.distanceLimit = distanceLimit ?? defaultDistanceLimit(this.values);
    const h = source.header;
    this.engine = new BitboardEngine(variant(h.board, h.pieces), h.rules as RuleMode);
    this.space = new StateSpace(this.engine.variant);
    this.indexer = new StateIndexer(this.space, this.engine);
    this.moveBuffer = new Int32Array(2 * this.engine.maxMoves);
  }

  private codeOf(p: WordPosition): number {
    return this.values.value(this.indexer.index(p));
  }

  /** Value for the side to move. */
  outcome(p: Position): Outcome {
    const wp = toWords(p);
    if (this.engine.isIllegal(wp)) return 'illegal';
    return OUTCOME[this.codeOf(wp)]!;
  }

  legalMoves(p: Position): Move[] {
    const n = this.engine.legalMoves(toWords(p), this.moveBuffer);
    const out: Move[] = [];
    for (let i = 0; i < n; i++) out.push({ from: this.moveBuffer[2 * i]!, to: this.moveBuffer[2 * i + 1]! });
    return out.sort((a, b) => a.from - b.from || a.to - b.to);
  }

  /** Everything about a position: value, distance, each legal move's value, the best move. */
  analyse(p: Position): PositionInfo {
    const wp = toWords(p);
    this.checkStored(wp);
    const outcome = this.outcome(p);
    const terminal = outcome !== 'illegal' && this.engine.isTerminal(wp);
    if (outcome === 'illegal' || terminal) return { outcome, terminal, ...(terminal ? { pliesToEnd: 0 } : {}), moves: [] };
    const distances = outcome === 'draw' ? undefined : this.distances(p);
    const moves: MoveInfo[] = this.legalMoves(p).map((move) => {
      const child = applyMove(p, move);
      const childIndex = this.indexer.index(toWords(child));
      const d = distances?.get(childIndex);
      return { move, outcome: FLIP[OUTCOME[this.values.value(childIndex)]!], ...(d !== undefined ? { pliesToEnd: d } : {}) };
    });
    const own = distances?.get(this.indexer.index(wp));
    return { outcome, terminal, ...(own !== undefined ? { pliesToEnd: own } : {}), moves, best: pickBest(outcome, moves) };
  }

  /**
   * The stored value (and distance) of the position asked about, judged against its children's
   * by the rules (check --consistency's judge, on one state): a table edited with its checksums
   * recomputed answers no question whose own state it contradicts.
   */
  private checkStored(p: WordPosition): void {
    const judge = (this.judge ??= new StateJudge(this.space, this.values.header.rules as RuleMode));
    const index = this.indexer.index(p);
    const a = new Uint32Array(WORDS);
    const b = new Uint32Array(WORDS);
    stateWords(this.space, this.engine, index, a, b);
    judge.prepare(b);
    judge.derive(a, b);
    readChildren(judge, this.values);
    const problem = judge.judge(this.values.value(index), this.values.distance(index), this.values.hasDistances);
    if (problem !== Problem.OK) {
      const where = this.values.path === undefined ? '' : `${this.values.path}: `;
      throw new CCheckersError('E_DATABASE', `${where}stored state ${index} contradicts its children (${PROBLEM_NAMES[problem]}): the file was damaged or forged; ccheckers check --consistency finds every such state`);
    }
  }

  private judge: StateJudge | undefined;

  /**
   * Plies to the end under best play, keyed by stored-state index: the database's distance table
   * when it has one, else for every position reachable from `p` under value-preserving play,
   * undefined beyond `distanceLimit`.
   * The result is cached: later queries inside the same reachable set (a game being played) are
   * free.
   */
  distances(p: Position): DistanceTable | undefined {
    const values = this.values;
    if (values.hasDistances) {
      const farthest = values.header.maxDistance;
      return {
        get: (index) => {
          const d = values.distance(index);
          // Stored, so checked: a forged table (its checksum recomputed) must not be answered from.
          if (!distanceFits(values.value(index), d, farthest)) {
            const where = values.path === undefined ? '' : `${values.path}: `;
            throw new CCheckersError('E_DATABASE', `${where}the distance table is corrupt: stored state ${index} is ${OUTCOME[values.value(index)]} with a distance of ${d} (farthest ${farthest}); ccheckers check --recount finds every such state`);
          }
          return d === NO_DISTANCE ? undefined : d;
        },
        has: () => true,
        size: this.space.states,
      };
    }
    const index = this.indexer.index(toWords(p));
    if (this.cached?.has(index)) return this.cached;
    if (this.gaveUp && !this.retryAfterGivingUp) return undefined;
    const computed = this.computeDistances(toWords(p));
    if (computed) this.cached = computed;
    else this.gaveUp = true;
    return computed;
  }

  private computeDistances(root: WordPosition): DistanceTable | undefined {
    const e = this.engine;
    const values = this.values;
    // Explore: nodes in discovery order, their positions packed 7 words each, their edges in CSR
    // form (the winner's moves to lost children; all of the loser's moves).
    const ids = new NodeIds(this.space.states); // state index -> node id
    const codes = new Growable(Uint8Array);
    const words = new Growable(Uint32Array);
    const edgeStart = new Growable(Int32Array);
    const edges = new Growable(Int32Array);
    const add = (wp: WordPosition, index: number): number => {
      let id = ids.get(index);
      if (id < 0) {
        id = codes.length;
        ids.set(index, id);
        codes.push(values.value(index));
        for (let i = 0; i < WORDS; i++) words.push(wp.p1[i]!);
        for (let i = 0; i < WORDS; i++) words.push(wp.p2[i]!);
        words.push(wp.toMove);
      }
      return id;
    };
    add(root, this.indexer.index(root));
    const moves = this.moveBuffer;
    const wp: WordPosition = { p1: new Uint32Array(WORDS), p2: new Uint32Array(WORDS), toMove: 0 };
    for (let q = 0; q < codes.length; q++) {
      if (codes.length > this.distanceLimit) return undefined;
      edgeStart.push(edges.length);
      const c = codes.at(q);
      if (c !== WIN && c !== LOSS) continue;
      const w = words.view(7 * q, 7 * q + 7);
      wp.p1.set(w.subarray(0, 3));
      wp.p2.set(w.subarray(3, 6));
      wp.toMove = w[6] as 0 | 1;
      const n = e.legalMoves(wp, moves); // none for terminal positions
      const own = wp.toMove === 0 ? wp.p1 : wp.p2;
      this.indexer.prepareChildren(wp);
      wp.toMove = wp.toMove === 0 ? 1 : 0;
      for (let i = 0; i < n; i++) {
        const from = moves[2 * i]!;
        const to = moves[2 * i + 1]!;
        own[from >>> 5]! ^= 1 << (from & 31);
        own[to >>> 5]! ^= 1 << (to & 31);
        const childIndex = this.indexer.childIndex(own);
        if (c === LOSS || values.value(childIndex) === LOSS) edges.push(add(wp, childIndex));
        own[from >>> 5]! ^= 1 << (from & 31);
        own[to >>> 5]! ^= 1 << (to & 31);
      }
    }
    edgeStart.push(edges.length);
    // Retrograde over that graph, in order of distance: a lost node without moves ends the game
    // (0); a won node is one more than its nearest lost child (the first one finished); a lost
    // node one more than its farthest won child (the last one finished).
    const count = codes.length;
    const start = edgeStart.view(0, count + 1);
    const out = edges.view(0, edges.length);
    const parentStart = new Int32Array(count + 1);
    for (const child of out) parentStart[child + 1]!++;
    for (let i = 0; i < count; i++) parentStart[i + 1]! += parentStart[i]!;
    const parents = new Int32Array(out.length);
    const fill = parentStart.slice(0, count);
    for (let id = 0; id < count; id++) for (let j = start[id]!; j < start[id + 1]!; j++) parents[fill[out[j]!]!++] = id;
    const dist = new Int32Array(count).fill(-1);
    const pending = new Int32Array(count);
    const queue = new Int32Array(count);
    let tail = 0;
    for (let id = 0; id < count; id++) {
      pending[id] = start[id + 1]! - start[id]!;
      if (codes.at(id) === LOSS && pending[id] === 0) {
        dist[id] = 0;
        queue[tail++] = id;
      }
    }
    for (let head = 0; head < tail; head++) {
      const id = queue[head]!;
      const d = dist[id]! + 1;
      for (let j = parentStart[id]!; j < parentStart[id + 1]!; j++) {
        const parent = parents[j]!;
        if (dist[parent]! >= 0) continue;
        if (codes.at(parent) === WIN || --pending[parent]! === 0) {
          dist[parent] = d;
          queue[tail++] = parent;
        }
      }
    }
    return {
      get: (index) => {
        const id = ids.get(index);
        return id >= 0 && dist[id]! >= 0 ? dist[id] : undefined;
      },
      has: (index) => ids.get(index) >= 0,
      size: count,
    };
  }
}

/** An append-only typed array that doubles when full. */
class Growable<T extends Int32Array | Uint32Array | Uint8Array> {
  private data: T;
  length = 0;

  constructor(private readonly kind: { new (n: number): T }) {
    this.data = new kind(1024);
  }

  push(value: number): void {
    if (this.length === this.data.length) {
      const bigger = new this.kind(2 * this.data.length);
      bigger.set(this.data as never);
      this.data = bigger;
    }
    this.data[this.length++] = value;
  }

  at(i: number): number {
    return this.data[i]!;
  }

  view(from: number, to: number): T {
    return this.data.subarray(from, to) as T;
  }
}

/** The winner's nearest win, the loser's farthest loss, else any drawing move. */
function pickBest(outcome: Outcome, moves: MoveInfo[]): Move | undefined {
  const want: Outcome = outcome === 'win' ? 'win' : outcome === 'loss' ? 'loss' : 'draw';
  const candidates = moves.filter((m) => m.outcome === want);
  if (candidates.length === 0) return moves[0]?.move;
  const known = candidates.filter((m) => m.pliesToEnd !== undefined);
  if (known.length === 0) return candidates[0]!.move;
  const key = (m: MoveInfo) => m.pliesToEnd!;
  const best = known.reduce((a, b) => (outcome === 'win' ? (key(b) < key(a) ? b : a) : key(b) > key(a) ? b : a));
  return best.move;
}
