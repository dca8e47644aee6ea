/**
 * `plan`: what a solve of a variant needs before it starts. The sizes the solver computes (stored
 * states, table, distance table, the memory checks of memory.ts and the band plan of
 * store/band-layout.ts), the exact illegal and terminal counts (census.ts, no table), and for each
 * way of solving (in memory, a store with band passes, a cluster of W workers) the memory, disk
 * and time it needs on this machine, from rates measured here (cited below), and whether it fits.
 */
import { statfsSync } from 'node:fs';
import { availableParallelism, freemem, loadavg, totalmem } from 'node:os';
import { CCheckersError, type RuleMode, type StateSpace, type Variant } from '@ccheckers/core';
import { HEADER_BYTES } from '../database.js';
import { requiredBytes } from '../memory.js';
import { planBands, workerBytes } from '../store/band-layout.js';
import { LATER_BLOCKS_WORKERS } from '../store/band-schedule.js';
import { type Census, census, storedLayout } from './census.js';

// ------------------------------------------------------------------------------------------------
// Rates measured on this machine kind (2-core AMD EPYC, cpuid family 0x1a, Node 20.20.2,
// native-bmi2, 2 threads). An in-memory solve is modelled as a fixed cost plus a cost per stored
// state that depends on the piece count (more pieces: more moves per state and more parents per
// loss): seconds = IN_MEMORY_FIXED_SECONDS + states * inMemorySecondsPerState(pieces). Each
// constant comes from the reference solves below, which the model reproduces exactly; how the
// estimates compare with solves measured later is in docs/performance.md ("How `plan` estimates time").

/** A solve of this machine kind that a rate comes from: `seconds` of `ccheckers solve --board M
 *  --pieces K --backend native-bmi2 --threads 2 --json` (the solve, without Node's start). */
export interface ReferenceSolve {
  name: string;
  pieces: number;
  storedStates: number;
  seconds: number;
  source: string;
}

export const REFERENCE_SOLVES = {
  /** The slowest of 5.889, 5.600 and 5.784 s (the kernel of 1df5a53, quiet, in turn with 4x4/6). */
  '7x7/3': { name: '7x7/3', pieces: 3, storedStates: 141_219_540, seconds: 5.889, source: 'docs/performance.md, 2026-12-02, "plan\'s reference solves"' },
  /** a90b209, with --out (the database's writing after the solve not included); 11 passes, pass
   *  1 948.1 s. The slowest of the solves of the pass kernel of b86de08 (988.6, 1,026.4, 1,056.9
   *  s; this one and 1,056.9 s in slow spells of the machine). */
  '7x7/4': { name: '7x7/4', pieces: 4, storedStates: 15_835_337_595, seconds: 1073.8, source: 'docs/performance.md, 2026-12-03, "store, 7x7/4 at --memory 22G (4 bands), and in memory after it (a90b209)"' },
  /** 11 passes: mostly the fixed cost of a solve (threads, pass sweeps), its table is 208 KiB. The
   *  slowest of 0.175, 0.126 and 0.131 s. */
  '4x4/6': { name: '4x4/6', pieces: 6, storedStates: 853_020, seconds: 0.175, source: 'docs/performance.md, 2026-12-02, "plan\'s reference solves"' },
  /** One run, quiet, after the 7x7/3 and 4x4/6 ones: 15 passes, CRC-32 c55d10f9, peak RSS 699,464 KB. */
  '5x5/6': { name: '5x5/6', pieces: 6, storedStates: 2_410_949_520, seconds: 363.25, source: 'docs/performance.md, 2026-12-02, "plan\'s reference solves"' },
} as const satisfies Record<string, ReferenceSolve>;

/** Seconds per stored state of 6 pieces: the two 6-piece references, whose difference is all
 *  per-state cost. */
const SECONDS_PER_STATE_6 =
  (REFERENCE_SOLVES['5x5/6'].seconds - REFERENCE_SOLVES['4x4/6'].seconds) / (REFERENCE_SOLVES['5x5/6'].storedStates - REFERENCE_SOLVES['4x4/6'].storedStates);

/** The fixed cost of an in-memory solve (worker threads, a dozen passes over the groups, the
 *  counts): what 4x4/6 took beyond its states at the 6-piece rate. */
export const IN_MEMORY_FIXED_SECONDS = REFERENCE_SOLVES['4x4/6'].seconds - REFERENCE_SOLVES['4x4/6'].storedStates * SECONDS_PER_STATE_6;

const perState = (r: ReferenceSolve) => (r.seconds - IN_MEMORY_FIXED_SECONDS) / r.storedStates;

/** Seconds per stored state by piece count, where a reference solve has that count. */
export const IN_MEMORY_SECONDS_PER_STATE: ReadonlyArray<readonly [pieces: number, seconds: number]> = [
  [3, perState(REFERENCE_SOLVES['7x7/3'])],
  [4, perState(REFERENCE_SOLVES['7x7/4'])],
  [6, SECONDS_PER_STATE_6],
];

/** Distance tables laid over a solved table of this machine kind (`solve --distances`, after
 *  the passes): seconds for the states placed. */
export const REFERENCE_DISTANCES = {
  /** `distances.seconds` of the solve's --json: the mean of 43.24 and 47.56 s, the kernel of
   *  25f6713 (a push reads one byte). */
  '7x7/3': { name: '7x7/3', pieces: 3, storedStates: 141_219_540, seconds: 45.4, source: 'docs/performance.md, 2026-12-01, "a push reading one byte"' },
  /** Run to its end (60 layers) in three runs, resumed from checkpoints: the sum of their layers'
   *  times, 41.5, 97.5 and 26.6 minutes (the init, checkpoints of 19.8 GB every 10 minutes, and a
   *  layer and a half run again after the resumes included), over all the stored states. */
  '7x7/4': { name: '7x7/4', pieces: 4, storedStates: 15_835_337_595, seconds: (41.5 + 97.5 + 26.6) * 60, source: 'docs/performance.md, 2026-12-02, "7x7/4 with distances, in memory, to the end"' },
} as const satisfies Record<string, ReferenceSolve>;

/** Seconds of `--distances` after an in-memory solve of `states` stored states of k pieces
 *  (native-bmi2, 2 threads): 7x7/3's rate per state up to 3 pieces, 7x7/4's from 4 (the reads of
 *  parents' bytes miss the cache more in a larger table). */
export function distanceSeconds(states: number, pieces: number): number {
  const r = pieces <= 3 ? REFERENCE_DISTANCES['7x7/3'] : REFERENCE_DISTANCES['7x7/4'];
  return (states * r.seconds) / r.storedStates;
}

/** A store (band passes) against the in-memory solve: 7x7/4 at --memory 22G (4 bands, the plan
 *  here) on 2 threads took 2.13x (2,288.7 s against 1,073.8 s, one after the other with a90b209;
 *  docs/performance.md, 2026-12-03), in 10 bands 2.14x (4,826.5 s against 2,258.9 s, 2026-11-27);
 *  7x7/3 at a quarter of its table on 2 threads 1.85-1.98x over 14 runs (docs/sharding.md, "Idle
 *  threads help with open units"), in 4 bands with the kernel of 2026-12-02 1.84-2.39x
 *  (docs/performance.md, "plan's reference solves"); 7x7/4 at --memory 1.5G took 1.72x on 1
 *  thread (5,765 s against 3,352 s, docs/sharding.md, "7x7/4 sharded, done"). */
export const STORE_TIME_FACTOR = 2.14;
/** Disk a store holds at its peak, per byte of table: 7x7/4 at --memory 1.5G, 5 bands, peaked at
 *  25.2 GB for a 3,958,834,399-byte table (docs/sharding.md, "7x7/4 sharded, done"; sampled every
 *  30 s). More bands send more messages per state (2.0 at 5 bands, up to 3.6-4.2 modelled at 16-64:
 *  docs/sharding.md), so large variants may need more. */
export const STORE_DISK_FACTOR = 25.2e9 / 3_958_834_399;
/** Pass 1's share of a band solve's time (one process, 2 threads): 7x7/4 in 10 bands, 4,153.6 of
 *  4,826.5 s (0.86; docs/sharding.md, 2026-11-27); 7x7/3 in 16 bands, 0.880-0.885 over four runs
 *  (runs D, against which clusterTimeFactor is checked). Fewer bands share less: 7x7/4 in 4 bands
 *  took 1,783.1 of 2,288.7 s (0.78; docs/performance.md, 2026-12-03), its later passes 0.19
 *  (17-20 s each however few states they prove; not the band files' I/O, the same row says), pass
 *  2 0.45 of those. */
export const BAND_PASS1_SHARE = 0.86;
/** The later passes' share of a band solve's time (one process, 2 threads): 7x7/4 in 10 bands,
 *  passes 2-10 542.6 of 4,826.5 s (docs/sharding.md, 2026-11-27). The rest is init and the end. */
export const BAND_LATER_SHARE = 0.11;
/** Pass 2's share of the later passes' time: 7x7/4 in 10 bands, 316.4 of 542.6 s. */
export const LATER_PASS2_SHARE = 0.58;
/** How many times the passes after the second grow in blocks of W bands (band-schedule.ts,
 *  LATER_BLOCKS_WORKERS), the most measured: 7x7/3 in 16 bands at W = 8, 4 -> 13 (6 -> 15 passes
 *  in all); at W = 4 4 -> 9, 4x4/6 at W = 8 7 -> 13 (docs/sharding.md). Cautious: the sum of the
 *  steps' seconds fell (7x7/3 at W = 4, one process: 2.3 -> 1.4 s). */
export const LATER_PASSES_GROWTH = 2.8;
/** What each part of a shared step costs beyond its share of the serial pass 1, as a share of
 *  the serial pass 1 (it applies all of its band's inbox, finds what its copy changed, reads and
 *  writes proof files): 7x7/3 in 16 bands on 2 workers, the parts' 35.0 and 35.8 worker-seconds
 *  against the single process's pass 1 on 1 thread, 26.0 s (2026-11-27), give 0.17-0.19. A part
 *  publishes about 40 times a step, or once per 16 of its units, each file costing the lines its
 *  kernel marked (proof-exchange.ts, PUBLISHES_PER_STEP): none of this grows with W, so neither
 *  does this share. */
export const SHARED_PART_OVERHEAD = 0.18;

/** The largest cluster the model was measured against (runs D: 2 workers). */
export const MEASURED_CLUSTER_WORKERS = 2;

/**
 * A cluster of W workers, each a machine like this one, against the band solve of one of them:
 * in shared steps (a cluster's default schedule) pass 1 is shared by the W, each part taking
 * 1/W of it and SHARED_PART_OVERHEAD more; the later passes run a band at a time as in the one
 * process, or from LATER_BLOCKS_WORKERS workers on W bands at a time: pass 2 as it is, the passes
 * after it LATER_PASSES_GROWTH times as many; init and the end as in the one process. 7x7/3 in 16 bands on 2 workers of 1 thread
 * (half this machine each) took 1.29-1.46 times the one process on 2 threads (docs/sharding.md,
 * runs D); this model gives 1.45.
 */
export function clusterTimeFactor(workers: number): number {
  if (workers <= 1) return 1;
  const inBlocks = (LATER_PASS2_SHARE + (1 - LATER_PASS2_SHARE) * LATER_PASSES_GROWTH) / workers;
  const later = BAND_LATER_SHARE * (workers >= LATER_BLOCKS_WORKERS ? inBlocks : 1);
  return BAND_PASS1_SHARE * (1 / workers + SHARED_PART_OVERHEAD) + later + (1 - BAND_PASS1_SHARE - BAND_LATER_SHARE);
}

/** The solver's own limits: StateSpace enumerates the P1 placements (at most 2^31), and state
 *  indexes are doubles (exact up to 2^53). */
const MAX_P1_PLACEMENTS = 2 ** 31;

export interface MachineResources {
  threads: number;
  freeMemory: number;
  totalMemory: number;
  /** Free disk (for an unprivileged user) of `diskPath`. */
  freeDisk: number;
  diskPath: string;
  /** The 1-minute load average (0 where the system has none): the estimates are for an idle
   *  machine, and a solve shares the cores with what runs meanwhile. */
  loadAverage?: number;
}

export function machineResources(diskPath = process.cwd()): MachineResources {
  const fs = statfsSync(diskPath);
  return { threads: availableParallelism(), freeMemory: freemem(), totalMemory: totalmem(), freeDisk: fs.bavail * fs.bsize, diskPath, loadAverage: loadavg()[0]! };
}

export interface Way {
  /** distances: in memory with --distances (a store keeps none). */
  way: 'memory' | 'store' | 'cluster' | 'distances';
  /** How it is run. */
  command: string;
  /** Bytes held in memory (per worker for a cluster), and on disk at the peak (shared). */
  memoryBytes: number;
  diskBytes: number;
  /** Estimated wall seconds on machines like this one. */
  seconds: number;
  /** Whether it fits this machine (a cluster: one worker, and the shared store on this disk),
   *  and why not. */
  fits: boolean;
  why: string;
  /** store and cluster: the band plan of planBands. */
  bands?: number;
  bandBytes?: number;
  messageBytes?: number;
  budget?: number;
  workers?: number;
}

export interface Plan {
  board: number;
  pieces: number;
  rules: RuleMode;
  census: Census;
  censusSeconds: number;
  /** The in-memory time model for this piece count: inMemorySeconds. */
  inMemoryFixedSeconds: number;
  inMemorySecondsPerState: number;
  /** --distances on top of it, per stored state: distanceSeconds. */
  distanceSecondsPerState: number;
  p1Placements: bigint;
  p2Placements: bigint;
  groups: bigint;
  storedStates: bigint;
  tableBytes: bigint;
  distanceBytes: bigint;
  /** The database file of `solve --out` (header and table; a pass log of a few KiB comes on top). */
  databaseBytes: bigint;
  /** Why this solver cannot solve the variant at all, if it cannot. */
  beyondSolver?: string;
  machine: MachineResources;
  ways: Way[];
}

export interface PlanOptions {
  variant: Variant;
  rules: RuleMode;
  /** Memory a store (or a cluster worker) may hold; default: this machine's free memory. */
  budget?: number;
  /** Cluster sizes to plan. */
  workers?: number[];
  machine?: MachineResources;
}

/**
 * The solver's StateSpace with only the sizes the planners read (p1Placements, p2Placements,
 * groups, states, tableBytes, variant), computed without enumerating the P1 placements: what
 * requiredBytes and planBands are given here. The tests check both give the same results as with
 * the real StateSpace.
 */
export function sizedSpace(v: Variant): StateSpace {
  const layout = storedLayout(v);
  const states = Number(layout.states);
  const sized = {
    variant: v,
    cells: v.cells,
    pieces: v.pieces,
    p1Placements: Number(layout.p1Placements),
    p2Placements: Number(layout.p2Placements),
    groups: Number(layout.groups),
    states,
    tableBytes: Math.ceil(states / 4),
  };
  return sized as unknown as StateSpace;
}

/** Seconds per stored state with k pieces: IN_MEMORY_SECONDS_PER_STATE, linear between its piece
 *  counts (5 pieces: halfway between 4 and 6), its first below it and its last above it. */
export function inMemorySecondsPerState(pieces: number): number {
  const points = IN_MEMORY_SECONDS_PER_STATE;
  if (pieces <= points[0]![0]) return points[0]![1];
  for (let i = 1; i < points.length; i++) {
    const [k1, r1] = points[i]!;
    const [k0, r0] = points[i - 1]!;
    if (pieces <= k1) return r0 + ((pieces - k0) / (k1 - k0)) * (r1 - r0);
  }
  return points[points.length - 1]![1];
}

/** Seconds of an in-memory solve (native-bmi2, 2 threads) of `states` stored states of k pieces:
 *  the solve's `seconds`, without Node's start (about 0.3 s more for the process). */
export function inMemorySeconds(states: number, pieces: number): number {
  return IN_MEMORY_FIXED_SECONDS + states * inMemorySecondsPerState(pieces);
}

export function plan(options: PlanOptions): Plan {
  const v = options.variant;
  const machine = options.machine ?? machineResources();
  const started = performance.now();
  const counts = census(v, options.rules);
  const censusSeconds = (performance.now() - started) / 1000;
  const layout = storedLayout(v);
  const tableBytes = (layout.states + 3n) / 4n;
  let beyondSolver: string | undefined;
  if (layout.p1Placements > BigInt(MAX_P1_PLACEMENTS)) {
    beyondSolver = `${v.name} has ${layout.p1Placements} P1 placements; the solver's state space enumerates at most 2^31`;
  } else if (layout.states > BigInt(Number.MAX_SAFE_INTEGER)) {
    beyondSolver = `${v.name} has ${layout.states} stored states; the solver indexes them with doubles, exact up to 2^53`;
  }
  const result: Plan = {
    board: v.size,
    pieces: v.pieces,
    rules: options.rules,
    census: counts,
    censusSeconds,
    inMemoryFixedSeconds: IN_MEMORY_FIXED_SECONDS,
    inMemorySecondsPerState: inMemorySecondsPerState(v.pieces),
    distanceSecondsPerState: distanceSeconds(1, v.pieces),
    ...layout,
    storedStates: layout.states,
    tableBytes,
    distanceBytes: layout.states,
    databaseBytes: BigInt(HEADER_BYTES) + tableBytes,
    ...(beyondSolver ? { beyondSolver } : {}),
    machine,
    ways: beyondSolver ? [] : ways(v, options, machine),
  };
  return result;
}

function ways(v: Variant, options: PlanOptions, machine: MachineResources): Way[] {
  const space = sizedSpace(v);
  const name = `--board ${v.size} --pieces ${v.pieces}${options.rules === 'clean' ? '' : ` --rules ${options.rules}`}`;
  const out: Way[] = [];
  const memorySeconds = inMemorySeconds(space.states, v.pieces);

  // In memory: the native backend's needs (one copy of the group maps in the addon).
  const memoryBytes = requiredBytes(space, 1);
  // With --out: the checkpoint and the database (each written to a temporary name first) exist
  // together at the end, so twice the file.
  const memoryDisk = 2 * (HEADER_BYTES + space.tableBytes);
  const memoryWhy: string[] = [];
  if (memoryBytes > machine.freeMemory) memoryWhy.push(`needs more memory than is free`);
  if (memoryDisk > machine.freeDisk) memoryWhy.push(`--out needs more disk than is free`);
  out.push({
    way: 'memory',
    command: `ccheckers solve ${name} --out FILE`,
    memoryBytes,
    diskBytes: memoryDisk,
    seconds: memorySeconds,
    fits: memoryWhy.length === 0,
    why: memoryWhy.join('; '),
  });

  // A store on this machine: band passes within the budget.
  const budget = options.budget ?? machine.freeMemory;
  const storeDisk = Math.ceil(STORE_DISK_FACTOR * space.tableBytes);
  const storeSeconds = memorySeconds * STORE_TIME_FACTOR;
  let bandPlan: ReturnType<typeof planBands> | undefined;
  let refusal = '';
  try {
    bandPlan = planBands(space, { budget, kernelCopies: 1 });
  } catch (e) {
    if (!(e instanceof CCheckersError)) throw e;
    refusal = e.message;
  }
  const storeWhy: string[] = refusal ? [refusal] : [];
  if (budget > machine.freeMemory) storeWhy.push(`the budget is more memory than is free`);
  if (storeDisk > machine.freeDisk) storeWhy.push(`needs more disk than is free`);
  const budgetText = formatSizeOption(budget);
  const storeMemory = bandPlan ? workerBytes(bandPlan, 1) : budget;
  const storeWay: Way = {
    way: 'store',
    command: `ccheckers solve ${name} --store DIR --memory ${budgetText}`,
    memoryBytes: storeMemory,
    diskBytes: storeDisk,
    seconds: storeSeconds,
    fits: storeWhy.length === 0,
    why: storeWhy.join('; '),
    budget,
    ...(bandPlan ? { bands: bandPlan.bands, bandBytes: bandPlan.bandBytes, messageBytes: bandPlan.messageBytes } : {}),
  };
  out.push(storeWay);

  // A cluster of W workers in shared steps, each a machine like this one holding two copies of a
  // band (its own and as it last published it) within the budget.
  let clusterPlan: ReturnType<typeof planBands> | undefined;
  let clusterRefusal = '';
  try {
    clusterPlan = planBands(space, { budget, kernelCopies: 1, bandCopies: 2 });
  } catch (e) {
    if (!(e instanceof CCheckersError)) throw e;
    clusterRefusal = e.message;
  }
  for (const workers of options.workers ?? [2, 8]) {
    // One worker: no shared steps, one copy (the store's plan).
    const shared = workers > 1;
    const wayPlan = shared ? clusterPlan : bandPlan;
    const wayRefusal = shared ? clusterRefusal : refusal;
    const why: string[] = [];
    if (wayRefusal) why.push(wayRefusal);
    if (budget > machine.freeMemory) why.push(`a worker's budget is more memory than is free here`);
    if (storeDisk > machine.freeDisk) why.push(`the shared store needs more disk than is free here`);
    if (workers > MEASURED_CLUSTER_WORKERS) why.push(`time modelled past ${MEASURED_CLUSTER_WORKERS} workers`);
    out.push({
      way: 'cluster',
      // --memory on the coordinator too: it sets the bands, which each worker must hold.
      command: `ccheckers solve ${name} --store DIR --workers ${workers} --memory ${budgetText} --redis URL, ${workers} x ccheckers worker --memory ${budgetText}`,
      memoryBytes: wayPlan ? workerBytes(wayPlan, shared ? 2 : 1) : budget,
      diskBytes: storeDisk,
      seconds: storeSeconds * clusterTimeFactor(workers),
      fits: wayRefusal === '' && budget <= machine.freeMemory && storeDisk <= machine.freeDisk,
      why: why.join('; '),
      budget,
      workers,
      ...(wayPlan ? { bands: wayPlan.bands, bandBytes: wayPlan.bandBytes, messageBytes: wayPlan.messageBytes } : {}),
    });
  }

  // In memory with --distances: the distance table beside the values (a byte per stored state),
  // laid once the passes are done; the checkpoint and the database hold both.
  const distancesBytes = requiredBytes(space, 1, true);
  const distancesDisk = 2 * (HEADER_BYTES + space.tableBytes + space.states);
  const distancesWhy: string[] = [];
  if (distancesBytes > machine.freeMemory) distancesWhy.push(`needs more memory than is free`);
  if (distancesDisk > machine.freeDisk) distancesWhy.push(`--out needs more disk than is free`);
  out.push({
    way: 'distances',
    command: `ccheckers solve ${name} --distances --out FILE`,
    memoryBytes: distancesBytes,
    diskBytes: distancesDisk,
    seconds: memorySeconds + distanceSeconds(space.states, v.pieces),
    fits: distancesWhy.length === 0,
    why: distancesWhy.join('; '),
  });
  return out;
}

/** A --memory value that parseSize reads back as at most `bytes` (MiB, rounded down). */
export function formatSizeOption(bytes: number): string {
  const mib = Math.floor(bytes / 2 ** 20);
  return mib >= 10 * 1024 ? `${Math.floor(mib / 1024)}G` : `${mib}M`;
}
