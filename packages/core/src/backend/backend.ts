/**
 * The contract every backend (`ts`, `native-bmi2`, `native-portable`) implements. Fine-grained
 * calls (one position at a time) serve tests, play and queries; the hot work (benchmark loops,
 * solver passes over a range of stored states) crosses the backend boundary once per batch.
 */
import type { RuleMode, Variant } from '../geometry/variant.js';
import type { Move, Position, Side } from '../position/position.js';
import type { MessageRuns } from '../solver-space/message-runs.js';
import type { TableBytes, TableLike } from '../solver-space/table-bytes.js';

export type BackendName = 'ts' | 'native-bmi2' | 'native-portable';
export const BACKEND_NAMES: readonly BackendName[] = ['native-bmi2', 'native-portable', 'ts'];

/** The paper's benchmark operations (Tables 1 and 2). */
export type BenchOp =
  | 'winner'
  | 'successors'
  | 'rankP1'
  | 'rankP2'
  | 'unrankP1'
  | 'unrankP2'
  | 'incrementP2';
export const BENCH_OPS: readonly BenchOp[] = [
  'winner',
  'successors',
  'rankP1',
  'rankP2',
  'unrankP1',
  'unrankP2',
  'incrementP2',
];

export interface BenchRun {
  /** Wall time of the whole loop, in nanoseconds, measured inside the backend. */
  readonly nanoseconds: number;
  readonly iterations: number;
  /** A value computed from every iteration; identical across backends for the same run. */
  readonly checksum: number;
}

export interface Engine {
  readonly variant: Variant;
  readonly rules: RuleMode;
  /** Moves of the side to move, ignoring legality, sorted by (from, to). */
  moves(p: Position): Move[];
  /** Legal moves (docs/rules.md section 4); none for illegal or terminal positions. */
  legalMoves(p: Position): Move[];
  hasWon(player: Side, p: Position): boolean;
  isIllegal(p: Position): boolean;
  isTerminal(p: Position): boolean;
  rankP1(p1: bigint): number;
  unrankP1(rank: number): bigint;
  rankP2(p1: bigint, p2: bigint): number;
  unrankP2(p1: bigint, rank: number): bigint;
  /** The P2 placement after p2 in rank order among the cells free of p1, or null after the last. */
  nextP2(p1: bigint, p2: bigint): bigint | null;
  rank(p: Position): bigint;
  unrank(rank: bigint): Position;
  mirror(p: Position): Position;
  swapColours(p: Position): Position;
  canonical(p: Position): Position;
  /** Runs `iterations` of `op` on `p` in a loop inside the backend. */
  bench(op: BenchOp, p: Position, iterations: number): BenchRun;
  /** Batch check of every operation (see describe.ts): 7 words in, DESCRIBE_FIELDS numbers out per position. */
  describe(words: Uint32Array, count: number, out: Float64Array): void;
}

/** Counts returned by one solver kernel call over a range of groups. */
export interface KernelStats {
  /** States newly proven won (including wins propagated to parents) / lost. */
  wins: number;
  losses: number;
  /** Init only: illegal and terminal states found. */
  illegal: number;
  terminal: number;
  /** Legal, non-terminal states with no move at all (docs/rules.md section 5 says: fail loudly). */
  moveless: number;
}

/** The placement ranks unrankP1/unrankP2 accept: integers in 0 .. count - 1 (RangeError else). */
export function checkPlacementRank(rank: number, count: number, what: 'P1' | 'P2'): void {
  if (!Number.isInteger(rank) || rank < 0 || rank >= count) {
    throw new RangeError(`${what} placement rank ${rank} is outside 0 .. ${count - 1}`);
  }
}

export function emptyKernelStats(): KernelStats {
  return { wins: 0, losses: 0, illegal: 0, terminal: 0, moveless: 0 };
}

/** Adds `from` into `into` (sums of kernel calls over chunks, threads or workers). */
export function addKernelStats(into: KernelStats, from: KernelStats): KernelStats {
  into.wins += from.wins;
  into.losses += from.losses;
  into.illegal += from.illegal;
  into.terminal += from.terminal;
  into.moveless += from.moveless;
  return into;
}

export interface PassOptions {
  /** > 1 only where the backend has its own threads (Backend.kernelThreads). */
  threads?: number;
  /** The states still waiting for their revisit at the end stay for the next call (a TS worker
   *  taking one unit at a time) until revisitWaiting(); the native kernel revisits per call. */
  keepWaiting?: boolean;
}

export interface SparsePassOptions extends PassOptions {
  /** From the last group down (the solver alternates directions). */
  descending?: boolean;
  /** The solve whose sparse passes these are, on this table alone: the kernel keeps what a pass
   *  learns for the next (which states it left unknown, the child each waits on) in at most
   *  `bytes`; the stats are those of passes without it. A new token for each solve. */
  memo?: SparseMemoKey;
}

export interface ListUnknownOptions {
  /** Native threads (kernels that run their own). */
  threads?: number;
  /** The most bytes the lists may take: 4 a state and 8 a pass unit. */
  budget: number;
}

/** What listUnknown found: the unknown states, the bytes their lists take, whether they were
 *  listed (they fit the budget and could be allocated; if not, none are kept). */
export interface ListedUnknown {
  states: number;
  bytes: number;
  listed: boolean;
}

/** Names a solve's sparse passes (SparsePassOptions.memo): token, an integer from 1 to 2^53
 *  unique to the solve (0: no memo); bytes, the most memory the memo may hold. The kernel trusts
 *  the caller: a table its passes left must not be refilled under the same token (the memo would
 *  hide the states unknown again; a solve draws a new token, solve.ts). */
export interface SparseMemoKey {
  token: number;
  bytes: number;
}

/**
 * One band of a band-ordered store in memory (the out-of-core solve's band passes, packages/solver;
 * docs/sharding.md): which band holds every group (`bandOf`), at which slot (`slotOf`); the band
 * in memory, `held`, holds `groups` (slot -> group). Stored state group * C(N - k, k) + r is, in
 * its band, local state slotOf[group] * C(N - k, k) + r. `roundOf` gives each band's round in a
 * pass (bands stepped at once share one): what comes later in a pass is a later round.
 */
export interface BandMap {
  held: number;
  bands: number;
  bandOf: Int32Array;
  slotOf: Int32Array;
  roundOf: Int32Array;
  groups: Uint32Array;
  /** Where given, the call marks each line of CHANGED_LINE_STATES states (64 bytes of the held
   *  band) in which it proves a state: bit (L & 31) of changedLines[L >>> 5] for line L. A shared
   *  step's part then publishes its proofs at the cost of the lines they touch, not of its whole
   *  copy (solver's ProofExchange). At least changedLineWords(table.length) words. */
  changedLines?: Uint32Array;
}

/** States in a line of BandMap.changedLines: 64 bytes of a band, 16 of its 32-bit words. */
export const CHANGED_LINE_STATES = 256;

/** The words of a band's changed-lines bitmap: a bit per line of its `bytes`. */
export function changedLineWords(bytes: number): number {
  return Math.ceil(bytes / (64 * 32));
}

/**
 * What a band call does (native: BandPhase in kernel_api.hpp):
 *  - INIT: init of the held band's slots [from, to) (as init());
 *  - UNITS: every state of the units `input` (positions in the proof order, ascending), whose
 *    children the band holds, visited as pass() visits them; a state held elsewhere is visited
 *    without its value (init's values are found again) and what is decided about it is sent.
 *    Pass 1 only, the bands in order, each after it applied the values sent to it: a loss held
 *    elsewhere does not send every parent its win where the band of the parents' units, which
 *    it is sent to, finds the parent won as soon (the visits of UNITS look past unknown
 *    children for a lost one; native: BandTable::leavesWinToUnits);
 *  - VISIT: the same for the states the requests `input` name (as a sparse pass);
 *  - REQUESTS: a request for every unknown state of slots [from, to), to the band that holds its
 *    children (the held band included);
 *  - APPLY: the values `input` sent to the held band, set where unknown;
 *  - UNITS_KEEP: as UNITS, but the states still waiting for their revisit at the end are kept for
 *    the kernel's next UNITS_KEEP call on the same band: one sweep over the calls, each state
 *    revisited REVISIT_LAG units later, not at the end of its call (a shared step's slices of a
 *    few units, store/band-step.ts); a call for another band is refused until REVISIT;
 *  - REVISIT: the states those calls kept, visited again: the end of their sweep.
 * A decided loss's parents held elsewhere are sent a win (but for UNITS, above). Outside UNITS a
 * visit never looks past an unknown child: every loss reaches all its parents, held or sent.
 */
export const BandPhase = { INIT: 0, UNITS: 1, VISIT: 2, REQUESTS: 3, APPLY: 4, UNITS_KEEP: 5, REVISIT: 6 } as const;
export type BandPhase = (typeof BandPhase)[keyof typeof BandPhase];

/**
 * A message between bands: local * 4 + value, exact in a double. A value (1..3) for state `local`
 * of the band it is sent to; a request (0) names a stored state by its stored index.
 */
export function bandMessage(index: number, value: number): number {
  return index * 4 + value;
}

/** A band call's counts (changes to the held band) and its messages, band by band: counts[b] of
 *  them for band b, in band order, each band's sorted ascending and without repeats (combined:
 *  several visits that send a state the same value send it once). Where the call was asked to
 *  code them and did (native, with room in `output`), they are instead `coded`: band after band,
 *  codedBytes[b] bytes of one message run (message-runs.ts) for band b, in the bytes of `output`;
 *  `messages` is then empty. */
export interface BandResult extends KernelStats {
  messages: Float64Array;
  counts: Float64Array;
  coded?: Uint8Array;
  codedBytes?: Float64Array;
}

/** What an apply of message runs did (SolverKernel.bandApplyRuns): its counts, and the values it
 *  decoded. */
export interface BandApplyResult extends KernelStats {
  messages: number;
}

/**
 * Solver passes over stored states, implemented by each backend on a shared 2-bit value table
 * (see ../solver-space/state-space.ts for the layout and value codes). Safe to run on several
 * threads at once over disjoint group ranges: values only ever change from UNKNOWN, by atomic OR.
 */
export interface SolverKernel {
  /** Work units of pass(): the C(N, k) P2 placements, by colex rank (init() works on groups). */
  readonly passUnits: number;
  /** `threads` > 1 only where the backend has its own threads (Backend.kernelThreads). */
  init(table: TableLike, groupFrom: number, groupTo: number, threads?: number): KernelStats;
  /** A pass over the P2 placements [unitFrom, unitTo) of the proof order; each thread visits the
   *  states its first visit left waiting again REVISIT_LAG units later (state-space.ts). */
  pass(table: TableLike, unitFrom: number, unitTo: number, options?: PassOptions): KernelStats;
  /** A pass over groups [groupFrom, groupTo) that visits only unknown states (late passes). */
  sparsePass(table: TableLike, groupFrom: number, groupTo: number, options?: SparsePassOptions): KernelStats;
  /** Frees what sparse passes with a memo kept (SparsePassOptions.memo); returns its bytes. A
   *  kernel that keeps none need not have it. */
  releaseSparseMemo?(): number;
  /** Lists the table's unknown states by pass unit, for listed passes over it (a kernel without
   *  lists need not have these three; the solver then runs a sparse pass). */
  listUnknown?(table: TableLike, options: ListUnknownOptions): ListedUnknown;
  /** A pass over the P2 placements [unitFrom, unitTo) of the proof order, as pass(), visiting only
   *  the states listUnknown listed (unknown then): the same visits, the same outcome. */
  listedPass?(table: TableLike, unitFrom: number, unitTo: number, options?: PassOptions): KernelStats;
  /** Frees the lists; returns their bytes. */
  releaseUnknownLists?(): number;
  /**
   * Distances (see NO_DISTANCE in state-space.ts) over a solved table, layer by layer. Init sets
   * 0 for the lost states of groups [groupFrom, groupTo) that have no legal move (terminal ones
   * included) and LOST_WITHOUT_DISTANCE for their other lost states; `distances` starts as all
   * NO_DISTANCE, and every layer runs over all groups. Layer `depth` takes the states of the groups
   * at that distance and gives depth + 1 to their parents that it decides: a won parent of a lost
   * state, a lost parent whose children all have a distance of at most `depth`. A distance, once
   * set, is the same whichever thread gets there first, so the result does not depend on threads
   * or order; the table holds no mark once every won and lost state has its distance. Stats:
   * states given a distance, in `wins` and `losses`.
   */
  distanceInit(table: TableLike, distances: TableLike, groupFrom: number, groupTo: number, threads?: number): KernelStats;
  distanceLayer(table: TableLike, distances: TableLike, depth: number, groupFrom: number, groupTo: number, threads?: number): KernelStats;
  /** A band call on the held band `table` (see BandPhase). The messages are returned in the
   *  front of `output` where they fit before their repeats are dropped (a view of it: valid until
   *  the next call), else in a new array. `code`: a caller that only writes them to message
   *  files may take them coded (BandResult.coded); a backend may ignore it (ts does). */
  band(
    phase: BandPhase,
    table: Uint8Array,
    map: BandMap,
    input: Float64Array | undefined,
    from: number,
    to: number,
    threads?: number,
    output?: Float64Array,
    code?: boolean,
  ): BandResult;
  /**
   * band(APPLY) of the values coded in bytes[from, bytes.length) as message files hold them
   * (message-runs.ts): `state` carries a run and a number across the pieces of a file, as
   * decodeMessageRuns's does, and is left at the end of these bytes. The same changes as APPLY of
   * the decoded values; a RangeError for bytes that do not decode or a value not of the band's
   * states (the table may then be changed in part). Native decodes on every thread, each setting
   * the values of its own part of the band: no doubles, no atomic writes.
   */
  bandApplyRuns(table: Uint8Array, map: BandMap, bytes: Uint8Array, from: number, state: Float64Array, threads?: number): BandApplyResult;
}

export interface Backend {
  readonly name: BackendName;
  /** True when the solver kernel runs several threads itself (native); else the solver uses workers. */
  readonly kernelThreads: boolean;
  engine(v: Variant, rules: RuleMode): Engine;
  solverKernel(v: Variant, rules: RuleMode): SolverKernel;
  /** The coding of band message files (the same bytes on every backend). */
  readonly messageRuns: MessageRuns;
  /** A table (or distance table) of `bytes` zero bytes, of any size, for an in-memory solve
   *  (native: the addon's memory, with huge pages where the OS has them; TablePages says). A
   *  backend without one (ts, whose worker threads share the table) gets TableBytes.shared. */
  allocateTable?(bytes: number): TableBytes;
}
