/**
 * Questions to a solved database: the value of a position, the value of each legal move, and a
 * best move that makes progress.
 *
 * The 2-bit table alone does not say how far a win is: a "winning" move (to any lost position)
 * can go round in circles. So distances are computed when asked, by a retrograde analysis over the
 * positions reachable from the queried one under value-preserving play (the winner moves to lost
 * positions, the loser anywhere); the winner then takes the move to the nearest win and the loser
 * the one that delays the loss longest, and always playing the chosen move ends the game.
 */
import {
  BitboardEngine,
  ILLEGAL,
  LOSS,
  type Move,
  type Position,
  type RuleMode,
  StateSpace,
  UNKNOWN,
  WIN,
  WORDS,
  type WordPosition,
  applyMove,
  readValue,
  toWords,
  variant,
} from '@ccheckers/core';
import type { Database } from './database.js';
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

/** Reachable-set bound for distance computations (about 100 bytes per position). */
export const DEFAULT_DISTANCE_LIMIT = 4_000_000;

export class SolvedGame {
  readonly engine: BitboardEngine;
  readonly space: StateSpace;
  private readonly indexer: StateIndexer;
  private readonly moveBuffer: Int32Array;

  constructor(
    readonly database: Database,
    readonly distanceLimit = DEFAULT_DISTANCE_LIMIT,
  ) {
    const h = database.header;
    this.engine = new BitboardEngine(variant(h.board, h.pieces), h.rules as RuleMode);
    this.space = new StateSpace(this.engine.variant);
    this.indexer = new StateIndexer(this.space, this.engine);
    this.moveBuffer = new Int32Array(2 * this.engine.maxMoves);
  }

  private codeOf(p: WordPosition): number {
    return readValue(this.database.table, this.indexer.index(p));
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
    const outcome = this.outcome(p);
    const wp = toWords(p);
    const terminal = outcome !== 'illegal' && this.engine.isTerminal(wp);
    if (outcome === 'illegal' || terminal) return { outcome, terminal, ...(terminal ? { pliesToEnd: 0 } : {}), moves: [] };
    const distances = outcome === 'draw' ? undefined : this.distances(p);
    const moves: MoveInfo[] = this.legalMoves(p).map((move) => {
      const child = applyMove(p, move);
      const childIndex = this.indexer.index(toWords(child));
      const d = distances?.get(childIndex);
      return { move, outcome: FLIP[OUTCOME[readValue(this.database.table, childIndex)]!], ...(d !== undefined ? { pliesToEnd: d } : {}) };
    });
    const own = distances?.get(this.indexer.index(wp));
    return { outcome, terminal, ...(own !== undefined ? { pliesToEnd: own } : {}), moves, best: pickBest(outcome, moves) };
  }

  /**
   * Plies to the end under best play for every position reachable from `p` under
   * value-preserving play, keyed by stored-state index; undefined beyond `distanceLimit`.
   */
  distances(p: Position): Map<number, number> | undefined {
    const e = this.engine;
    const table = this.database.table;
    const nodes = new Map<number, number>(); // state index -> node id
    const code: number[] = [];
    const children: number[][] = [];
    const queue: WordPosition[] = [];
    const add = (wp: WordPosition): number => {
      const index = this.indexer.index(wp);
      let id = nodes.get(index);
      if (id === undefined) {
        id = code.length;
        nodes.set(index, id);
        code.push(readValue(table, index));
        children.push([]);
        queue.push({ p1: wp.p1.slice(), p2: wp.p2.slice(), toMove: wp.toMove });
      }
      return id;
    };
    add(toWords(p));
    const moves = this.moveBuffer;
    for (let q = 0; q < queue.length; q++) {
      if (queue.length > this.distanceLimit) return undefined;
      const wp = queue[q]!;
      const c = code[q]!;
      if (c !== WIN && c !== LOSS) continue;
      const n = e.legalMoves(wp, moves); // none for terminal positions
      const own = wp.toMove === 0 ? wp.p1 : wp.p2;
      const list: number[] = [];
      for (let i = 0; i < n; i++) {
        const from = moves[2 * i]!;
        const to = moves[2 * i + 1]!;
        own[from >>> 5]! ^= 1 << (from & 31);
        own[to >>> 5]! ^= 1 << (to & 31);
        const child: WordPosition = { p1: wp.p1, p2: wp.p2, toMove: wp.toMove === 0 ? 1 : 0 };
        const childCode = readValue(table, this.indexer.index(child));
        if (c === LOSS || childCode === LOSS) list.push(add(child));
        own[from >>> 5]! ^= 1 << (from & 31);
        own[to >>> 5]! ^= 1 << (to & 31);
      }
      children[q] = list;
      queue[q] = EMPTY_POSITION; // free the words
    }
    // Bellman-Ford style relaxation from "unknown" downwards: a lost node with no legal child
    // ends the game now; a won node is one ply more than its nearest lost child; a lost node one
    // more than its farthest won child, once all are known. Values only decrease: this ends.
    const INF = Number.MAX_SAFE_INTEGER;
    const dist = new Array<number>(code.length).fill(INF);
    for (let changed = true; changed; ) {
      changed = false;
      for (let id = code.length - 1; id >= 0; id--) {
        const list = children[id]!;
        let d = INF;
        if (code[id] === WIN) {
          for (const ch of list) if (dist[ch]! + 1 < d) d = dist[ch]! + 1;
        } else if (code[id] === LOSS) {
          d = 0;
          for (const ch of list) d = Math.max(d, dist[ch]! === INF ? INF : dist[ch]! + 1);
        }
        if (d < dist[id]!) {
          dist[id] = d;
          changed = true;
        }
      }
    }
    const out = new Map<number, number>();
    for (const [index, id] of nodes) if (dist[id]! !== INF) out.set(index, dist[id]!);
    return out;
  }
}

const EMPTY_POSITION: WordPosition = { p1: new Uint32Array(WORDS), p2: new Uint32Array(WORDS), toMove: 0 };

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
