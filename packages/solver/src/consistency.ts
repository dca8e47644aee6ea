/**
 * `ccheckers check --consistency`: every stored state's class derived again from the rules and its
 * children's stored values, with the engine (move generator, Def. 1-3), not the solver's passes.
 *
 *   - illegal and terminal states are classified by the rules and compared;
 *   - a WIN needs a legal child that is a LOSS for its side to move; a LOSS needs every legal child
 *     to be a WIN (or no legal child at all: every move leads to an illegal position, RULES.md
 *     section 5); a DRAW needs no LOSS child and some DRAW child; a legal non-terminal state
 *     without any move has no value and is reported;
 *   - with distances (solve --distances): a WIN at d has its nearest LOSS child at d - 1, a LOSS
 *     at d its farthest WIN child at d - 1 (0 for terminal and all-moves-illegal losses), draws
 *     and illegal states none. Distances strictly decrease along the witnesses, so with them the
 *     check is a full proof of the table; without them it proves local consistency only (a ring
 *     of wins and losses that should be draws passes it).
 *
 * Children are found by the move generator, their legality by the rules, their stored index by
 * the ranking of state-space.ts computed here (colour swap for P2 to move, mirror into the group,
 * colex rank among the free cells), apart from the solver's state graph. The children of stored
 * state (a, b) all lie in the group of rot(b), so the full check goes child group by child group:
 * for group h and each P2 placement b whose children lie there, every parent (rep(g), b) of the
 * held groups g is checked against h's values, decoded once. Parents are read one per group, children from one small group: cache-friendly.
 * Within a memory budget the table is held whole, or in blocks of parent groups while the child
 * groups are streamed past each block (a nested-loop join; the table is read once per block).
 * Work is shared between worker threads by child group; the first mismatches reported are the
 * ones of lowest index, whatever the thread count.
 */
import { availableParallelism, freemem } from 'node:os';
import { closeSync, statSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import {
  BINOMIAL_STRIDE,
  BINOMIAL_TABLE,
  BitboardEngine,
  CCheckersError,
  ILLEGAL,
  LOSS,
  MAX_TYPED_ARRAY_BYTES,
  NO_DISTANCE,
  type RuleMode,
  StateSpace,
  UNKNOWN,
  WIN,
  WORDS,
  type WordPosition,
  formatPosition,
  fromWords,
  permuteSet,
  rankSet,
  seededRandom,
  unrankSet,
  variant,
} from '@ccheckers/core';
import { crc32Of } from './crc.js';
import { type DatabaseHeader, DatabaseError, HEADER_BYTES, checkPartCrc, openForReading, readAll, readHeader } from './database.js';
import { type StoredValues, openDatabase } from './database-file.js';
import { formatBytes } from './memory.js';
import { ShardStore, StoreValues } from './store/shard-store.js';

/** What is wrong with a state (0: nothing). */
export const Problem = {
  OK: 0,
  /** Illegal under the rules (Def. 2 or 3), stored as legal. */
  ILLEGAL_STORED_LEGAL: 1,
  /** Legal under the rules, stored as illegal. */
  LEGAL_STORED_ILLEGAL: 2,
  /** The side that just moved has won (terminal): must be a LOSS for the side to move. */
  TERMINAL_NOT_LOST: 3,
  /** A legal, non-terminal state with no move at all: no value (RULES.md section 5). */
  MOVELESS: 4,
  /** A WIN without a legal child that is a LOSS. */
  WIN_WITHOUT_LOST_CHILD: 5,
  /** A LOSS with a legal child that is not a WIN. */
  LOSS_WITH_CHILD_NOT_WON: 6,
  /** A DRAW with a LOSS child, or whose children are all WINs (or that has no legal move). */
  DRAW_DECIDED: 7,
  /** A DRAW without a LOSS child and without a DRAW child (a legal child stored illegal). */
  DRAW_WITHOUT_DRAWN_CHILD: 8,
  /** The right value, the wrong distance to the end. */
  WRONG_DISTANCE: 9,
} as const;
export type Problem = (typeof Problem)[keyof typeof Problem];

export const PROBLEM_NAMES: Record<number, string> = {
  1: 'illegal-stored-legal',
  2: 'legal-stored-illegal',
  3: 'terminal-not-lost',
  4: 'moveless',
  5: 'win-without-lost-child',
  6: 'loss-with-child-not-won',
  7: 'draw-decided',
  8: 'draw-without-drawn-child',
  9: 'wrong-distance',
};

/** How the rules classify a state before its children are looked at. */
export const Kind = { ILLEGAL: 0, TERMINAL: 1, MOVELESS: 2, PLAY: 3 } as const;

/** The expected value when it cannot be told (a legal child stored illegal, no other reason). */
const UNDETERMINED = -1;
/** The expected value of a moveless state: none. */
const NO_VALUE = -2;

/**
 * Classifies stored states by the rules and judges their stored value against their children's.
 * Reuses its buffers: one per thread. Call prepare(b) for the states with P2 placement b, then
 * derive(a, b), fill childValue/childDistance for the `count` legal children (ranks in childRank,
 * within group childGroup), then judge().
 */
export class StateJudge {
  readonly engine: BitboardEngine;
  /** Legal children of the derived state: the move and the child's rank in the child group. */
  count = 0;
  readonly childRank: Float64Array;
  readonly childFrom: Int32Array;
  readonly childTo: Int32Array;
  /** Filled by the caller: the children's stored value codes and distances. */
  readonly childValue: Uint8Array;
  readonly childDistance: Uint8Array;
  /** The group all children of the prepared states lie in. */
  childGroup = 0;
  kind: number = Kind.PLAY;
  /** Set by judge(): the value (or UNDETERMINED, NO_VALUE) and distance the rules and the
   *  children give, and the child that shows it (-1: none). */
  expectedValue = 0;
  expectedDistance = NO_DISTANCE;
  witness = -1;
  /** Pseudo-moves of the derived state (legal or not). */
  moves = 0;

  private readonly moveBuffer: Int32Array;
  private readonly pos: WordPosition = { p1: new Uint32Array(WORDS), p2: new Uint32Array(WORDS), toMove: 0 };
  private readonly child: WordPosition = { p1: new Uint32Array(WORDS), p2: new Uint32Array(WORDS), toMove: 1 };
  private readonly rotated = new Uint32Array(WORDS);

  constructor(
    readonly space: StateSpace,
    rules: RuleMode,
  ) {
    this.engine = new BitboardEngine(space.variant, rules);
    const max = this.engine.maxMoves;
    this.moveBuffer = new Int32Array(2 * max);
    this.childRank = new Float64Array(max);
    this.childFrom = new Int32Array(max);
    this.childTo = new Int32Array(max);
    this.childValue = new Uint8Array(max);
    this.childDistance = new Uint8Array(max);
    const n = space.cells;
    const mirror = space.variant.geometry.mirror;
    this.rot = Int32Array.from({ length: n }, (_, c) => n - 1 - c);
    this.rotMirror = Int32Array.from({ length: n }, (_, c) => mirror[n - 1 - c]!);
    this.map = this.rot;
    this.freeRow = new Int32Array(n);
  }

  // The children of (a, b) are (rot b, rot a'), mirrored together when rot(b) is not its group's
  // representative: their P1 placement `childP1` = map(b) for one map (rotation, or rotation and
  // mirror), and their P2 placement map(a') is ranked among the cells childP1 leaves free (colex,
  // as StateIndexer ranks it): `freeRow[c]` is the binomial-table row of cell c's index there.
  private map: Int32Array;
  private readonly rot: Int32Array;
  private readonly rotMirror: Int32Array;
  private readonly childP1 = new Uint32Array(WORDS);
  private readonly freeRow: Int32Array;
  private readonly mapped = new Uint32Array(WORDS);

  /** Prepares the children of the states whose P2 placement is b; returns their group. */
  prepare(b: Uint32Array): number {
    const { space, engine, rotated } = this;
    engine.rotateSet(b, rotated);
    const r1 = rankSet(rotated);
    this.childGroup = space.groupOfRank[r1]!;
    this.map = space.mirroredRank[r1] === 1 ? this.rotMirror : this.rot;
    permuteSet(b, this.map, this.childP1);
    const p1 = this.childP1;
    let below = 0;
    for (let c = 0; c < space.cells; c++) {
      this.freeRow[c] = (c - below) * BINOMIAL_STRIDE;
      if ((p1[c >>> 5]! >>> (c & 31)) & 1) below++;
    }
    return this.childGroup;
  }

  /** The rules' class of (a, b), P1 to move (b prepared), and its legal children. */
  derive(a: Uint32Array, b: Uint32Array): number {
    const { engine, pos, child } = this;
    pos.p1.set(a);
    pos.p2.set(b);
    this.count = 0;
    this.moves = 0;
    if (engine.isIllegal(pos)) return (this.kind = Kind.ILLEGAL);
    if (engine.hasWon(1, pos)) return (this.kind = Kind.TERMINAL);
    const a0 = a[0]!;
    const a1 = a[1]!;
    const a2 = a[2]!;
    const moves = this.moveBuffer;
    const n = engine.generateMoves(a0, a1, a2, a0 | b[0]!, a1 | b[1]!, a2 | b[2]!, moves);
    this.moves = n;
    if (n === 0) return (this.kind = Kind.MOVELESS);
    const moved = child.p1;
    child.p2.set(b);
    const map = this.map;
    const m = this.mapped;
    permuteSet(a, map, m);
    const m0 = m[0]!;
    const m1 = m[1]!;
    const m2 = m[2]!;
    const rows = this.freeRow;
    let count = 0;
    for (let i = 0; i < n; i++) {
      const from = moves[2 * i]!;
      const to = moves[2 * i + 1]!;
      let w0 = a0;
      let w1 = a1;
      let w2 = a2;
      if (from < 32) w0 ^= 1 << from;
      else if (from < 64) w1 ^= 1 << (from - 32);
      else w2 ^= 1 << (from - 64);
      if (to < 32) w0 ^= 1 << to;
      else if (to < 64) w1 ^= 1 << (to - 32);
      else w2 ^= 1 << (to - 64);
      moved[0] = w0;
      moved[1] = w1;
      moved[2] = w2;
      if (engine.isIllegal(child)) continue; // a move into an illegal position does not exist
      // The child's P2 placement, map(a'), and its colex rank among the free cells.
      const f = map[from]!;
      const t = map[to]!;
      let d0 = m0;
      let d1 = m1;
      let d2 = m2;
      if (f < 32) d0 ^= 1 << f;
      else if (f < 64) d1 ^= 1 << (f - 32);
      else d2 ^= 1 << (f - 64);
      if (t < 32) d0 ^= 1 << t;
      else if (t < 64) d1 ^= 1 << (t - 32);
      else d2 ^= 1 << (t - 64);
      let rank = 0;
      let k = 1;
      for (let w = 0; w < WORDS; w++) {
        let x = w === 0 ? d0 : w === 1 ? d1 : d2;
        while (x !== 0) {
          const low = x & -x;
          x ^= low;
          rank += BINOMIAL_TABLE[rows[(w << 5) + 31 - Math.clz32(low)]! + k]!;
          k++;
        }
      }
      this.childFrom[count] = from;
      this.childTo[count] = to;
      this.childRank[count] = rank;
      count++;
    }
    this.count = count;
    return (this.kind = Kind.PLAY);
  }

  /** Judges stored value `v` (and distance `d` when `distances`) of the derived state: a Problem. */
  judge(v: number, d: number, distances: boolean): number {
    this.witness = -1;
    switch (this.kind) {
      case Kind.ILLEGAL:
        this.expectedValue = ILLEGAL;
        this.expectedDistance = NO_DISTANCE;
        if (v !== ILLEGAL) return Problem.ILLEGAL_STORED_LEGAL;
        return distances && d !== NO_DISTANCE ? Problem.WRONG_DISTANCE : Problem.OK;
      case Kind.TERMINAL:
        this.expectedValue = LOSS;
        this.expectedDistance = 0;
        if (v === ILLEGAL) return Problem.LEGAL_STORED_ILLEGAL;
        if (v !== LOSS) return Problem.TERMINAL_NOT_LOST;
        return distances && d !== 0 ? Problem.WRONG_DISTANCE : Problem.OK;
      case Kind.MOVELESS:
        this.expectedValue = NO_VALUE;
        this.expectedDistance = NO_DISTANCE;
        return v === ILLEGAL ? Problem.LEGAL_STORED_ILLEGAL : Problem.MOVELESS;
    }
    // Nearest lost child, farthest won child, a drawn child, a legal child stored illegal.
    let lost = -1;
    let won = -1;
    let drawn = -1;
    let bad = -1;
    const values = this.childValue;
    const dist = this.childDistance;
    for (let i = 0; i < this.count; i++) {
      const c = values[i]!;
      if (c === LOSS) {
        if (lost < 0 || dist[i]! < dist[lost]!) lost = i;
      } else if (c === WIN) {
        if (won < 0 || dist[i]! > dist[won]!) won = i;
      } else if (c === UNKNOWN) {
        if (drawn < 0) drawn = i;
      } else if (bad < 0) bad = i;
    }
    if (this.count === 0) {
      this.expectedValue = LOSS; // every move leads to an illegal position
      this.expectedDistance = 0;
    } else if (lost >= 0) {
      this.expectedValue = WIN;
      this.expectedDistance = dist[lost]! + 1;
      this.witness = lost;
    } else if (drawn < 0 && bad < 0) {
      this.expectedValue = LOSS;
      this.expectedDistance = dist[won]! + 1;
      this.witness = won;
    } else if (drawn >= 0) {
      this.expectedValue = UNKNOWN;
      this.expectedDistance = NO_DISTANCE;
      this.witness = drawn;
    } else {
      this.expectedValue = UNDETERMINED;
      this.expectedDistance = NO_DISTANCE;
      this.witness = bad;
    }
    const ev = this.expectedValue;
    switch (v) {
      case ILLEGAL:
        return Problem.LEGAL_STORED_ILLEGAL;
      case WIN:
        if (ev !== WIN) {
          this.witness = -1;
          return Problem.WIN_WITHOUT_LOST_CHILD;
        }
        break;
      case LOSS:
        if (ev !== LOSS) {
          // The child that is not a WIN.
          this.witness = lost >= 0 ? lost : drawn >= 0 ? drawn : bad;
          return Problem.LOSS_WITH_CHILD_NOT_WON;
        }
        break;
      default:
        if (ev === WIN || ev === LOSS) return Problem.DRAW_DECIDED;
        if (ev !== UNKNOWN) return Problem.DRAW_WITHOUT_DRAWN_CHILD;
        break;
    }
    if (distances && d !== this.expectedDistance) return Problem.WRONG_DISTANCE;
    return Problem.OK;
  }
}

/** Stored states per value code and per rules class, over the states checked. */
export interface ConsistencyCounts {
  win: number;
  loss: number;
  draw: number;
  illegal: number;
  /** Terminal (already won by the side that just moved). */
  terminal: number;
  /** Legal, non-terminal, every move into an illegal position (a LOSS by RULES.md section 5). */
  allMovesIllegal: number;
}

export function emptyConsistencyCounts(): ConsistencyCounts {
  return { win: 0, loss: 0, draw: 0, illegal: 0, terminal: 0, allMovesIllegal: 0 };
}

function addCounts(into: ConsistencyCounts, from: ConsistencyCounts): void {
  for (const k of Object.keys(into) as Array<keyof ConsistencyCounts>) into[k] += from[k];
}

const VALUE_KEY = ['draw', 'loss', 'win', 'illegal'] as const;

/** The mismatches of lowest index, at most `limit`, and how many there were in all. */
export class MismatchList {
  total = 0;
  readonly first: number[] = [];

  constructor(readonly limit: number) {}

  add(index: number): void {
    this.total++;
    const f = this.first;
    if (f.length === this.limit && index >= f[f.length - 1]!) return;
    let at = f.length;
    while (at > 0 && f[at - 1]! > index) at--;
    f.splice(at, 0, index);
    if (f.length > this.limit) f.pop();
  }

  merge(total: number, first: readonly number[]): void {
    for (const i of first) this.add(i);
    this.total += total - first.length;
  }
}

/**
 * The check of one step of the full check: the parents in `block` (groups [blockFirst,
 * blockFirst + blockGroups), values and distances) against the child groups [childFrom, childTo)
 * of `chunk` (which starts at group chunkFirst). Shared by the main thread and the workers: each
 * takes child groups from `next()` until it returns -1.
 */
export interface StepTables {
  blockValues: Uint8Array;
  blockDistances?: Uint8Array | undefined;
  blockFirst: number;
  blockGroups: number;
  chunkValues: Uint8Array;
  chunkDistances?: Uint8Array | undefined;
  chunkFirst: number;
}

export class GroupChecker {
  readonly judge: StateJudge;
  counts = emptyConsistencyCounts();
  checked = 0;
  mismatches: MismatchList;
  private readonly reps: Uint32Array;
  private readonly decoded: Uint8Array;
  private readonly a = new Uint32Array(WORDS);
  private readonly b = new Uint32Array(WORDS);
  private readonly t = new Uint32Array(WORDS);

  constructor(
    readonly space: StateSpace,
    rules: RuleMode,
    limit = 10,
  ) {
    this.judge = new StateJudge(space, rules);
    this.mismatches = new MismatchList(limit);
    this.reps = groupRepresentatives(space);
    this.decoded = new Uint8Array(space.p2Placements);
  }

  /** Starts counting afresh (a worker's next step). */
  reset(): void {
    this.counts = emptyConsistencyCounts();
    this.checked = 0;
    this.mismatches = new MismatchList(this.mismatches.limit);
  }

  /** Checks every parent in the block whose children lie in child group h (held by the chunk). */
  checkChildGroup(h: number, t: StepTables): void {
    const { space, judge, reps, decoded, a, b } = this;
    const per = space.p2Placements;
    const distances = t.blockDistances !== undefined;
    // The child group's values, one byte each.
    const start = (h - t.chunkFirst) * per;
    const chunk = t.chunkValues;
    for (let r = 0; r < per; r++) {
      const i = start + r;
      decoded[r] = (chunk[(i - (i & 3)) / 4]! >>> ((i & 3) << 1)) & 3;
    }
    const childDistances = t.chunkDistances?.subarray(start, start + per);
    // The P2 placements whose children lie in h: rot(rep(h)), and rot(mirror(rep(h))) when the
    // group stands for two placements.
    const copies = space.variant.mirrorSymmetric && space.groupWeight[h] === 2 ? 2 : 1;
    const engine = judge.engine;
    for (let copy = 0; copy < copies; copy++) {
      for (let w = 0; w < WORDS; w++) this.t[w] = reps[WORDS * h + w]!;
      if (copy === 1) {
        engine.mirrorSet(this.t, b);
        this.t.set(b);
      }
      engine.rotateSet(this.t, b);
      if (judge.prepare(b) !== h) throw new Error(`consistency: the children of P2 placement ${rankSet(b)} are not in group ${h}`);
      const b0 = b[0]!;
      const b1 = b[1]!;
      const b2 = b[2]!;
      const blockEnd = t.blockFirst + t.blockGroups;
      const values = t.blockValues;
      for (let g = t.blockFirst; g < blockEnd; g++) {
        const o = WORDS * g;
        if (((reps[o]! & b0) | (reps[o + 1]! & b1) | (reps[o + 2]! & b2)) !== 0) continue;
        a[0] = reps[o]!;
        a[1] = reps[o + 1]!;
        a[2] = reps[o + 2]!;
        const r = engine.rankP2(a, b);
        const local = (g - t.blockFirst) * per + r;
        const v = (values[(local - (local & 3)) / 4]! >>> ((local & 3) << 1)) & 3;
        const d = distances ? t.blockDistances![local]! : NO_DISTANCE;
        const kind = judge.derive(a, b);
        const n = judge.count;
        for (let i = 0; i < n; i++) {
          const cr = judge.childRank[i]!;
          judge.childValue[i] = decoded[cr]!;
          judge.childDistance[i] = childDistances ? childDistances[cr]! : NO_DISTANCE;
        }
        const problem = judge.judge(v, d, distances);
        this.tally(v, kind);
        if (problem !== Problem.OK) this.mismatches.add(g * per + r);
      }
    }
  }

  tally(v: number, kind: number): void {
    this.checked++;
    const c = this.counts;
    c[VALUE_KEY[v]!]++;
    if (kind === Kind.TERMINAL) c.terminal++;
    else if (kind === Kind.PLAY && this.judge.count === 0) c.allMovesIllegal++;
  }
}

/** Each group's representative P1 placement, WORDS words per group. */
export function groupRepresentatives(space: StateSpace): Uint32Array {
  const reps = new Uint32Array(space.groups * WORDS);
  for (let g = 0; g < space.groups; g++) unrankSet(space.groupRank[g]!, space.pieces, space.cells, reps, g * WORDS);
  return reps;
}

// -------------------------------------------------------------------------------------------------
// Sources: a database file or a complete store, read in runs of whole groups.

/** A table read in runs of groups (a multiple of 4 each, so that each starts on a byte). */
interface TableSource {
  readonly header: DatabaseHeader;
  readonly kind: 'database' | 'store';
  readonly hasDistances: boolean;
  /** Groups per unit of reading (a store's shard; for a database file, see unitGroupsFor). */
  unitGroupsFor(budget: number, overhead: number): number;
  /** Reads groups [first, first + groups) into `values` (and `distances`), `first` a multiple of
   *  unitGroups, `groups` whole units (or up to the end). */
  read(first: number, groups: number, values: Uint8Array, distances?: Uint8Array): void;
  /** Random access to the same values (sample mode, explanations). */
  randomAccess(): StoredValues & { close(): void };
  /** After the blocks were read once each, in order, covering the table: checks what a whole
   *  read can check (a database file's body and distance checksums). */
  finish(): void;
  close(): void;
}

class DatabaseSource implements TableSource {
  readonly kind = 'database';
  readonly header: DatabaseHeader;
  readonly hasDistances: boolean;
  private readonly fd: number;
  private readonly per: number;
  private bodyCrc = 0;
  private distanceCrc = 0;
  private readEnd = 0;

  constructor(
    readonly path: string,
    space: StateSpace,
  ) {
    this.fd = openForReading(path);
    try {
      this.header = readHeader(path, this.fd).header;
    } catch (e) {
      closeSync(this.fd);
      throw e;
    }
    this.hasDistances = this.header.distanceBytes > 0;
    this.per = space.p2Placements;
  }

  /** Units of 16 MiB, or an eighth of the budget where that is less: a block holds several. */
  unitGroupsFor(budget: number, overhead: number): number {
    const perGroup = this.per * (this.hasDistances ? 1.25 : 0.25);
    return Math.max(4, 4 * Math.floor(Math.min(2 ** 24, (budget - overhead) / 8) / perGroup / 4));
  }

  read(first: number, groups: number, values: Uint8Array, distances?: Uint8Array): void {
    const per = this.per;
    const firstByte = (first * per) / 4;
    const bytes = Math.ceil(((first + groups) * per) / 4) - firstByte;
    const v = values.subarray(0, bytes);
    readAll(this.fd, v, HEADER_BYTES + firstByte);
    const sequential = firstByte === this.readEnd;
    if (sequential) {
      this.bodyCrc = crc32Of(v, this.bodyCrc);
      this.readEnd = firstByte + bytes;
    }
    if (distances) {
      const d = distances.subarray(0, groups * per);
      readAll(this.fd, d, HEADER_BYTES + this.header.bodyBytes + first * per);
      if (sequential) this.distanceCrc = crc32Of(d, this.distanceCrc);
    }
  }

  finish(): void {
    if (this.readEnd !== this.header.bodyBytes) return;
    checkPartCrc(this.path, 'body', this.bodyCrc, this.header.bodyCrc32);
    if (this.hasDistances) checkPartCrc(this.path, 'distance table', this.distanceCrc, this.header.distanceCrc32);
  }

  randomAccess() {
    return openDatabase(this.path);
  }

  close(): void {
    closeSync(this.fd);
  }
}

class StoreSource implements TableSource {
  readonly kind = 'store';
  readonly header: DatabaseHeader;
  readonly hasDistances = false;

  constructor(private readonly store: ShardStore) {
    if (store.manifest.stage !== 'complete') {
      throw new DatabaseError(store.dir, `holds an unfinished solve (${store.manifest.stage}): only a complete store can be checked for consistency`);
    }
    this.header = store.header();
  }

  unitGroupsFor(): number {
    return this.store.layout.groupsPerShard;
  }

  read(first: number, groups: number, values: Uint8Array): void {
    const { layout } = this.store;
    const base = layout.shards[first / layout.groupsPerShard]!.firstByte;
    for (const shard of layout.shards) {
      if (shard.firstGroup < first || shard.firstGroup >= first + groups) continue;
      this.store.loadShard(shard.index, values.subarray(shard.firstByte - base)); // checks its CRC-32
    }
  }

  finish(): void {}

  randomAccess() {
    return new StoreValues(this.store);
  }

  close(): void {}
}

function openSource(path: string): TableSource {
  let isDir = false;
  try {
    isDir = statSync(path).isDirectory();
  } catch {}
  if (isDir) {
    const store = ShardStore.open(path);
    return new StoreSource(store);
  }
  const fd = openForReading(path);
  let header: DatabaseHeader;
  try {
    header = readHeader(path, fd).header;
  } finally {
    closeSync(fd);
  }
  if (header.stage !== 'complete') {
    throw new DatabaseError(path, `is a ${header.stage} of an unfinished solve: its unknown states are not yet draws, so only a complete database can be checked for consistency`);
  }
  return new DatabaseSource(path, new StateSpace(variant(header.board, header.pieces)));
}

// -------------------------------------------------------------------------------------------------
// The check.

export interface ConsistencyOptions {
  /** Check this many stored states chosen by `seed` instead of all. */
  sample?: number;
  seed?: number;
  /** Worker threads for the full check (default: all cores). */
  threads?: number;
  /** Memory budget in bytes for the tables the full check holds (default: 80% of free memory). */
  memory?: number;
  /** Mismatches reported in detail (the lowest indices). */
  limit?: number;
  onProgress?: (fraction: number, checked: number) => void;
}

export interface MismatchReport {
  index: number;
  /** The stored state (P1 to move), in the text format of core's position module. */
  position: string;
  problem: string;
  stored: { value: string; distance?: number };
  expected: { value: string; distance?: number };
  /** Why, in words (which move, which child). */
  detail: string;
  /** The child that shows it: the move, the position after it (the opponent to move), its value
   *  for the side to move there. */
  child?: { move: string; position: string; index: number; value: string; distance?: number };
}

export interface ConsistencyReport {
  path: string;
  kind: 'database' | 'store';
  board: number;
  pieces: number;
  rules: RuleMode;
  /** Whether distances were stored and checked (then a pass is a full proof). */
  distances: boolean;
  /** Stored states in the table, and how many were checked (all, or the sample). */
  states: number;
  checked: number;
  sample?: { size: number; seed: number };
  threads: number;
  /** How the tables were held: blocks of parent groups, reads of the table. */
  blocks: number;
  memoryBytes: number;
  counts: ConsistencyCounts;
  mismatches: number;
  first: MismatchReport[];
  seconds: number;
}

/** The fixed seed of --sample. */
export const DEFAULT_SAMPLE_SEED = 20_260_101;

/** Checks the database file or store at `path` (see the module comment). */
export async function checkConsistency(path: string, options: ConsistencyOptions = {}): Promise<ConsistencyReport> {
  const started = performance.now();
  const source = openSource(path);
  try {
    const h = source.header;
    const space = new StateSpace(variant(h.board, h.pieces));
    const limit = options.limit ?? 10;
    const sampleSize = options.sample;
    if (sampleSize !== undefined && (!Number.isSafeInteger(sampleSize) || sampleSize < 1)) {
      throw new CCheckersError('E_USAGE', `--sample must be a positive integer (got ${sampleSize})`);
    }
    const base = {
      path,
      kind: source.kind,
      board: h.board,
      pieces: h.pieces,
      rules: h.rules,
      distances: source.hasDistances,
      states: space.states,
    };
    let found: { counts: ConsistencyCounts; checked: number; mismatches: MismatchList; threads: number; blocks: number; memoryBytes: number };
    let sample: ConsistencyReport['sample'];
    if (sampleSize !== undefined && sampleSize < space.states) {
      const seed = options.seed ?? DEFAULT_SAMPLE_SEED;
      sample = { size: sampleSize, seed };
      found = checkSample(source, space, sampleIndices(space.states, sampleSize, seed), limit, options.onProgress);
    } else {
      found = await checkAll(source, space, options, limit);
    }
    const reader = source.randomAccess();
    let first: MismatchReport[];
    try {
      first = found.mismatches.first.map((index) => explain(new StateJudge(space, h.rules), reader, index));
    } finally {
      reader.close();
    }
    return {
      ...base,
      checked: found.checked,
      ...(sample ? { sample } : {}),
      threads: found.threads,
      blocks: found.blocks,
      memoryBytes: found.memoryBytes,
      counts: found.counts,
      mismatches: found.mismatches.total,
      first,
      seconds: (performance.now() - started) / 1000,
    };
  } finally {
    source.close();
  }
}

/** `size` distinct stored-state indices below `states`, from `seed`, ascending. */
export function sampleIndices(states: number, size: number, seed: number): number[] {
  const random = seededRandom(seed);
  const chosen = new Set<number>();
  const n = Math.min(size, states);
  while (chosen.size < n) {
    // Two draws: indices past 2^32 (7x7/4 has 1.6e10 states) are reachable too.
    const x = (Math.floor(random() * 2 ** 21) * 2 ** 32 + Math.floor(random() * 2 ** 32)) / 2 ** 53;
    chosen.add(Math.floor(x * states));
  }
  return [...chosen].sort((p, q) => p - q);
}

/** Reads the children of the derived state into the judge from a random-access source. */
function readChildren(judge: StateJudge, reader: StoredValues): void {
  const base = judge.childGroup * judge.space.p2Placements;
  for (let i = 0; i < judge.count; i++) {
    const index = base + judge.childRank[i]!;
    judge.childValue[i] = reader.value(index);
    judge.childDistance[i] = reader.distance(index);
  }
}

/** The stored state's position words. */
function stateWords(space: StateSpace, engine: BitboardEngine, index: number, a: Uint32Array, b: Uint32Array): void {
  const per = space.p2Placements;
  const g = Math.floor(index / per);
  unrankSet(space.groupRank[g]!, space.pieces, space.cells, a);
  engine.unrankP2(a, index - g * per, b);
}

function checkSample(
  source: TableSource,
  space: StateSpace,
  indices: number[],
  limit: number,
  onProgress?: (fraction: number, checked: number) => void,
) {
  const checker = new GroupChecker(space, source.header.rules, limit);
  const judge = checker.judge;
  const reader = source.randomAccess();
  const a = new Uint32Array(WORDS);
  const b = new Uint32Array(WORDS);
  try {
    indices.forEach((index, i) => {
      stateWords(space, judge.engine, index, a, b);
      judge.prepare(b);
      const kind = judge.derive(a, b);
      readChildren(judge, reader);
      const v = reader.value(index);
      if (judge.judge(v, reader.distance(index), reader.hasDistances) !== Problem.OK) checker.mismatches.add(index);
      checker.tally(v, kind);
      if ((i & 1023) === 1023) onProgress?.((i + 1) / indices.length, i + 1);
    });
  } finally {
    reader.close();
  }
  onProgress?.(1, indices.length);
  return { counts: checker.counts, checked: checker.checked, mismatches: checker.mismatches, threads: 1, blocks: 0, memoryBytes: 0 };
}

/** Bytes a block of groups takes (values and distances), and a chunk. */
function groupBytes(space: StateSpace, groups: number, distances: boolean): number {
  return Math.ceil((groups * space.p2Placements) / 4) + (distances ? groups * space.p2Placements : 0);
}

export interface ConsistencyPlan {
  unitGroups: number;
  units: number;
  /** Units per block of parents; blocks = ceil(units / blockUnits). */
  blockUnits: number;
  blocks: number;
  /** Bytes held: the block, and the chunk the child groups are streamed through (0 for one block). */
  blockBytes: number;
  chunkBytes: number;
  overheadBytes: number;
}

/** Per-thread maps and buffers besides the tables (group maps, engine tables, representatives). */
function overheadBytes(space: StateSpace, threads: number): number {
  return (1 + threads) * (space.p1Placements * 10 + space.groups * 24 + 4 * 2 ** 20) + 32 * 2 ** 20;
}

/** How the full check holds the table within `budget` bytes. */
export function planConsistency(space: StateSpace, unitGroups: number, distances: boolean, threads: number, budget: number): ConsistencyPlan {
  const units = Math.ceil(space.groups / unitGroups);
  const unitBytes = groupBytes(space, unitGroups, distances);
  const overhead = overheadBytes(space, threads);
  const whole = groupBytes(space, space.groups, distances);
  const maxBlockUnits = Math.max(1, Math.floor(MAX_TYPED_ARRAY_BYTES / Math.max(unitBytes, 1)));
  if (whole + overhead <= budget && units <= maxBlockUnits) {
    return { unitGroups, units, blockUnits: units, blocks: 1, blockBytes: whole, chunkBytes: 0, overheadBytes: overhead };
  }
  const blockUnits = Math.min(maxBlockUnits, units - 1, Math.floor((budget - overhead) / unitBytes) - 1);
  if (blockUnits < 1) {
    throw new CCheckersError(
      'E_MEMORY',
      `--memory ${formatBytes(budget)} is too small for a consistency check of ${space.variant.name}: it holds at least two runs of ` +
        `${formatBytes(unitBytes)} plus ${formatBytes(overhead)} of maps, ${formatBytes(2 * unitBytes + overhead)} in all`,
    );
  }
  return { unitGroups, units, blockUnits, blocks: Math.ceil(units / blockUnits), blockBytes: blockUnits * unitBytes, chunkBytes: unitBytes, overheadBytes: overhead };
}

/** A step's work for the workers (typed arrays on SharedArrayBuffers). */
export interface ConsistencyStep extends StepTables {
  childFrom: number;
  childTo: number;
}

export interface ConsistencyWorkerData {
  board: number;
  pieces: number;
  rules: RuleMode;
  limit: number;
  /** [0]: next child group of the current step; [1]: child groups done (progress). */
  counter: Int32Array;
}

export interface ConsistencyWorkerResult {
  counts: ConsistencyCounts;
  checked: number;
  total: number;
  first: number[];
}

/** The worker script sits next to this module in dist/ (tests running from src/ use the built one). */
function workerUrl(): URL {
  const here = import.meta.url;
  return new URL(here.endsWith('.ts') ? '../dist/consistency-worker.js' : './consistency-worker.js', here);
}

function sharedBytes(bytes: number): Uint8Array {
  return new Uint8Array(new SharedArrayBuffer(Math.max(1, bytes)));
}

async function checkAll(source: TableSource, space: StateSpace, options: ConsistencyOptions, limit: number) {
  const distances = source.hasDistances;
  const threads = options.threads ?? availableParallelism();
  if (!Number.isSafeInteger(threads) || threads < 1) throw new CCheckersError('E_USAGE', `--threads must be a positive integer (got ${threads})`);
  const budget = options.memory ?? Math.floor(0.8 * freemem());
  const plan = planConsistency(space, source.unitGroupsFor(budget, overheadBytes(space, threads)), distances, threads, budget);
  const { unitGroups, units, blockUnits } = plan;
  const blockGroups = Math.min(space.groups, blockUnits * unitGroups);
  const alloc = threads > 1 ? sharedBytes : (n: number) => new Uint8Array(Math.max(1, n));
  const blockValues = alloc(Math.ceil((blockGroups * space.p2Placements) / 4));
  const blockDistances = distances ? alloc(blockGroups * space.p2Placements) : undefined;
  const chunkValues = plan.blocks > 1 ? alloc(Math.ceil((unitGroups * space.p2Placements) / 4)) : undefined;
  const chunkDistances = plan.blocks > 1 && distances ? alloc(unitGroups * space.p2Placements) : undefined;

  const counter = new Int32Array(new SharedArrayBuffer(8));
  const totalWork = plan.blocks * space.groups;
  const mismatches = new MismatchList(limit);
  const counts = emptyConsistencyCounts();
  let checked = 0;
  let workers: Worker[] = [];
  let inline: GroupChecker | undefined;
  if (threads > 1) {
    const data: ConsistencyWorkerData = { board: space.variant.size, pieces: space.pieces, rules: source.header.rules, limit, counter };
    workers = Array.from({ length: threads }, () => new Worker(workerUrl(), { workerData: data }));
  } else {
    inline = new GroupChecker(space, source.header.rules, limit);
  }
  const progress = () => {
    const fraction = Math.min(1, Atomics.load(counter, 1) / totalWork);
    options.onProgress?.(fraction, Math.round(fraction * space.states)); // states, as if in one block
  };
  try {
    for (let u0 = 0; u0 < units; u0 += blockUnits) {
      const first = u0 * unitGroups;
      const groups = Math.min(space.groups, (u0 + blockUnits) * unitGroups) - first;
      source.read(first, groups, blockValues, blockDistances);
      const block = { blockValues, blockDistances, blockFirst: first, blockGroups: groups };
      for (let u = 0; u < units; u++) {
        const chunkFirst = u * unitGroups;
        const chunkGroups = Math.min(space.groups, chunkFirst + unitGroups) - chunkFirst;
        const held = chunkFirst >= first && chunkFirst < first + groups;
        if (!held) source.read(chunkFirst, chunkGroups, chunkValues!, chunkDistances);
        const step: ConsistencyStep = {
          ...block,
          chunkValues: held ? blockValues : chunkValues!,
          chunkDistances: held ? blockDistances : chunkDistances,
          chunkFirst: held ? first : chunkFirst,
          childFrom: chunkFirst,
          childTo: chunkFirst + chunkGroups,
        };
        if (inline) {
          for (let h = step.childFrom; h < step.childTo; h++) {
            inline.checkChildGroup(h, step);
            Atomics.add(counter, 1, 1);
            if ((h & 15) === 15) progress();
          }
        } else {
          Atomics.store(counter, 0, step.childFrom);
          const timer = setInterval(progress, 250);
          try {
            const results = await Promise.all(workers.map((w) => runWorker(w, step)));
            for (const r of results) {
              addCounts(counts, r.counts);
              checked += r.checked;
              mismatches.merge(r.total, r.first);
            }
          } finally {
            clearInterval(timer);
          }
          progress();
        }
      }
    }
  } finally {
    await Promise.all(workers.map((w) => w.terminate()));
  }
  source.finish();
  if (inline) {
    addCounts(counts, inline.counts);
    checked = inline.checked;
    mismatches.merge(inline.mismatches.total, inline.mismatches.first);
  }
  if (checked !== space.states) throw new Error(`consistency: checked ${checked} stored states of ${space.states}`);
  const memoryBytes = plan.blockBytes + plan.chunkBytes;
  return { counts, checked, mismatches, threads, blocks: plan.blocks, memoryBytes };
}

function runWorker(worker: Worker, step: ConsistencyStep): Promise<ConsistencyWorkerResult> {
  return new Promise((resolve, reject) => {
    const onMessage = (r: ConsistencyWorkerResult) => {
      worker.off('error', onError);
      resolve(r);
    };
    const onError = (e: Error) => {
      worker.off('message', onMessage);
      reject(e);
    };
    worker.once('message', onMessage);
    worker.once('error', onError);
    worker.postMessage(step);
  });
}

// -------------------------------------------------------------------------------------------------
// Explanations of mismatches.

const VALUE_WORD: Record<number, string> = { [UNKNOWN]: 'draw', [LOSS]: 'loss', [WIN]: 'win', [ILLEGAL]: 'illegal', [UNDETERMINED]: 'undetermined', [NO_VALUE]: 'no value' };

function valueWithDistance(value: number, distance: number, distances: boolean): { value: string; distance?: number } {
  return { value: VALUE_WORD[value]!, ...(distances && distance !== NO_DISTANCE ? { distance } : {}) };
}

/** Everything about the mismatch at stored state `index`, read from `reader`. */
export function explain(judge: StateJudge, reader: StoredValues, index: number): MismatchReport {
  const { space, engine } = judge;
  const a = new Uint32Array(WORDS);
  const b = new Uint32Array(WORDS);
  stateWords(space, engine, index, a, b);
  judge.prepare(b);
  judge.derive(a, b);
  readChildren(judge, reader);
  const v = reader.value(index);
  const d = reader.distance(index);
  const distances = reader.hasDistances;
  const problem = judge.judge(v, d, distances);
  const v1 = space.variant;
  const position = formatPosition(v1, fromWords({ p1: a, p2: b, toMove: 0 }));
  const stored = valueWithDistance(v, d, distances);
  const ev = judge.expectedValue;
  const expected = valueWithDistance(ev, judge.expectedDistance, distances && (ev === WIN || ev === LOSS));
  const w = judge.witness;
  const child =
    w >= 0
      ? (() => {
          const from = judge.childFrom[w]!;
          const to = judge.childTo[w]!;
          const moved = a.slice();
          moved[from >>> 5]! ^= 1 << (from & 31);
          moved[to >>> 5]! ^= 1 << (to & 31);
          return {
            move: `${from}-${to}`,
            position: formatPosition(v1, fromWords({ p1: moved, p2: b, toMove: 1 })),
            index: judge.childGroup * space.p2Placements + judge.childRank[w]!,
            ...valueWithDistance(judge.childValue[w]!, judge.childDistance[w]!, distances),
          };
        })()
      : undefined;
  const legal = judge.count;
  const pos = { p1: a, p2: b, toMove: 0 as const };
  let detail: string;
  switch (problem) {
    case Problem.ILLEGAL_STORED_LEGAL:
      detail = engine.hasWon(0, pos) ? 'illegal by Def. 2: the side to move (x) has already won' : 'illegal by Def. 3: a goal is blocked';
      break;
    case Problem.LEGAL_STORED_ILLEGAL:
      detail = 'legal under the rules (neither Def. 2 nor Def. 3 applies), so it must have a value';
      break;
    case Problem.TERMINAL_NOT_LOST:
      detail = 'terminal: o, who just moved, has filled its goal (Def. 1), so it is lost for x in 0';
      break;
    case Problem.MOVELESS:
      detail = 'legal and not terminal, but x has no move at all: such a position has no value (RULES.md section 5)';
      break;
    case Problem.WIN_WITHOUT_LOST_CHILD:
      detail = legal === 0 ? 'every move leads to an illegal position: a loss' : `none of the ${legal} legal moves leads to a loss for o`;
      break;
    case Problem.LOSS_WITH_CHILD_NOT_WON:
      detail = `the move ${child?.move} leads to a position that is a ${child?.value} for o, not a win`;
      break;
    case Problem.DRAW_DECIDED:
      detail =
        ev === WIN ? `the move ${child?.move} leads to a loss for o` : legal === 0 ? 'every move leads to an illegal position: a loss' : `all ${legal} legal moves lead to a win for o`;
      break;
    case Problem.DRAW_WITHOUT_DRAWN_CHILD:
      detail = `no legal move leads to a draw or a loss for o; the move ${child?.move} leads to a legal position stored as illegal`;
      break;
    case Problem.WRONG_DISTANCE:
      detail =
        ev === WIN
          ? `the nearest loss for o is the move ${child?.move}, at ${judge.childDistance[w]}`
          : ev === LOSS
            ? judge.kind === Kind.TERMINAL || legal === 0
              ? 'a loss without a legal move ends the game: distance 0'
              : `the farthest win for o is the move ${child?.move}, at ${judge.childDistance[w]}`
            : 'draws and illegal states have no distance';
      break;
    default:
      detail = 'agrees';
  }
  return {
    index,
    position,
    problem: PROBLEM_NAMES[problem] ?? 'none',
    stored,
    expected,
    detail,
    ...(child && problem !== Problem.WIN_WITHOUT_LOST_CHILD ? { child } : {}),
  };
}
