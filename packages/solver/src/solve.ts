/**
 * The strong solver, written once against core's Backend interface:
 * init (illegal and terminal states), then passes until nothing changes, with a checkpoint on disk
 * every few minutes (checkpointMinutes) and when stopped; optionally the distance to the end of every won or lost state (layer by layer
 * from the ends of the game); then the counts of docs/rules.md section 7 and the database file.
 */
import { randomInt } from 'node:crypto';
import { existsSync, unlinkSync } from 'node:fs';
import {
  type Backend,
  CCheckersError,
  type KernelStats,
  LOSS,
  NO_DISTANCE,
  type RuleMode,
  MAX_VIEW_BYTES,
  type ListedUnknown,
  type SparseMemoKey,
  StateSpace,
  unknownListsBytes,
  TableBytes,
  type TablePages,
  UNKNOWN,
  type Variant,
  WIN,
} from '@ccheckers/core';
import { type DatabaseHeader, tableCrc32, writeDatabase } from './database.js';
import { distanceLayers, headerFor, readCheckpoint } from './solve-checkpoint.js';
import { DIRECT_STAGING_BYTES } from './direct-io.js';
import { type PassRecord, passesDone } from './pass-log.js';
import { InsufficientMemoryError, allocateTable, checkMemory, checkTableLimits, requiredBytes, sparseMemoBudget } from './memory.js';
import { checkOutputPath, lockOutput } from './output-file.js';
import { type StartValue, expandCounts, provenStates, startValueName, storedCounts, valueOfStart } from './state-index.js';
import { type DistancePhase, layDistances } from './distance-table.js';
import { CHUNKS_PER_PHASE, checkMoveless, chunkRanges, inProcessRunner, kindOf, nextPassKind, unitsAfter } from './sweeps.js';
import { type ChunkRunner, createWorkerPool, runPhase } from './worker-pool.js';

export interface SolveOptions {
  variant: Variant;
  rules: RuleMode;
  backend: Backend;
  threads: number;
  /** Database path; its checkpoint is `${out}.ckpt`. Without it nothing is written. */
  out?: string;
  /** Continue from `${out}.ckpt` when it exists. */
  resume?: boolean;
  /** Replace an existing database at `out` (a regular file only) and start over from an existing
   *  checkpoint instead of refusing. */
  force?: boolean;
  /** Take the lock on `out` (OUT.lock) of a solve on another machine, known to be gone (lockOutput). */
  breakLock?: boolean;
  /** Upper bound on memory, in bytes. */
  memoryLimit?: number;
  onProgress?: (event: ProgressEvent) => void;
  /** Stops the solve between chunks (e.g. on SIGINT) with SolveInterrupted; the last checkpoint stays. */
  signal?: AbortSignal;
  /** Test hook: stop (throw) after this many passes, leaving the checkpoint behind. */
  stopAfterPass?: number;
  /** Return the 2-bit table in the result (verify compares tables state by state). */
  keepTable?: boolean;
  /** Called after each checkpoint is on disk (the CLI's kill -9 test hook uses it): `passes`
   *  finished, and for a checkpoint inside a pass, where in it; for one of the distances, the
   *  layer a resume starts from. */
  onCheckpoint?: (passes: number, inPass?: InPass, distanceLayer?: number) => void;
  /** A checkpoint is written at the first boundary (after the init, a kernel call of a pass, a
   *  pass, a distance layer) once this many minutes have gone by since the solve started or the
   *  last checkpoint (default DEFAULT_CHECKPOINT_MINUTES; 0: at every boundary), and whenever the
   *  solve stops (signal, stopAfterPass). */
  checkpointMinutes?: number;
  /** Also compute every position's distance to the end (one byte per stored state, kept in the
   *  database) so that queries pick moves that make progress in games of any size. */
  distances?: boolean;
}

/** Where a checkpoint inside a pass was taken: the first `unitsDone` of the `units` units of
 *  pass `pass`'s sweep are done. */
export interface InPass {
  pass: number;
  unitsDone: number;
  units: number;
}

export const DEFAULT_CHECKPOINT_MINUTES = 10;

export interface ProgressEvent {
  phase: 'init' | 'init-done' | 'pass' | 'pass-done' | 'resumed' | 'distances' | 'distances-done';
  /** The pass; in the distance phases the layer: 0 the ends of the game, d + 1 the one that pushes
   *  distance d to the parents (at 'distances-done': the largest distance). */
  pass: number;
  /** Fraction of the current phase done, 0..1 (distances: of the layer, a scan of the whole table;
   *  resumed: of the unfinished pass the checkpoint holds, 0 without one). */
  fraction: number;
  /** In the distance phases: the fraction of the won and lost states that have their distance
   *  (resumed: the checkpoint's, where it holds distances). */
  distanced?: number;
  /** Resumed from a checkpoint of the distances: the layers 0 to this one are done (numbered as
   *  `pass` numbers them in the distance phases). */
  distanceLayer?: number;
  /** Stored states decided so far (won, lost or illegal). */
  proven: number;
  storedStates: number;
  record?: PassRecord;
}

export interface SolveResult {
  board: number;
  pieces: number;
  rules: RuleMode;
  backend: string;
  threads: number;
  positions: number;
  p1Wins: number;
  p2Wins: number;
  draws: number;
  illegal: number;
  start: StartValue;
  passes: number;
  seconds: number;
  storedStates: number;
  tableBytes: number;
  /** CRC-32 of the 2-bit table: equal across backends and thread counts. */
  tableCrc32: number;
  passLog: PassRecord[];
  resumedFromPass?: number;
  /** With keepTable: the 2-bit table (see core's state-space.ts for the layout). */
  table?: Uint8Array;
  /** With the distances option: the largest distance (plies) and the time it took (resumed from a
   *  checkpoint of the distances: this run's part, from layer `resumedFromLayer` on). */
  distances?: { maxPlies: number; seconds: number; crc32: number; resumedFromLayer?: number };
  /** With keepTable and distances: the distance table. */
  distanceTable?: Uint8Array;
  /** An in-memory solve: the table's memory at its end, whether it has huge pages (TablePages). */
  tablePages?: TablePages;
}

export { distanceLayers };

export class SolveInterrupted extends CCheckersError {
  /** `passes`: passes saved in `checkpoint` (0: only the init), and `inPass` the part of the next
   *  one, or `distanceLayer` the distance layer a resume starts from; no checkpoint: nothing saved. */
  constructor(
    readonly passes: number,
    checkpoint?: string,
    inPass?: InPass,
    distanceLayer?: number,
  ) {
    const parts = ['the init', ...(passes === 1 ? ['pass 1'] : passes > 1 ? [`passes 1-${passes}`] : [])];
    if (inPass) parts.push(`${Math.floor((1000 * inPass.unitsDone) / inPass.units) / 10}% of pass ${inPass.pass}`);
    if (distanceLayer !== undefined) parts.push(distanceLayers(distanceLayer));
    const saved = parts.length === 1 ? 'the init is' : `${parts.slice(0, -1).join(', ')} and ${parts[parts.length - 1]} are`;
    super(
      'E_INTERRUPTED',
      checkpoint ? `solve interrupted; ${saved} saved in ${checkpoint}, continue with --resume` : 'solve interrupted before anything was saved (a checkpoint needs --out)',
    );
  }
}

export async function solve(options: SolveOptions): Promise<SolveResult> {
  const { variant: v, backend } = options;
  const space = new StateSpace(v);
  // More threads than work units (groups) only wait: 7x7/1 has 49.
  const threads = Math.max(1, Math.min(Math.floor(options.threads), space.groups));
  if (!((options.checkpointMinutes ?? 0) >= 0)) throw new RangeError(`checkpointMinutes ${options.checkpointMinutes} is not a number of minutes from 0 up`);
  checkTableLimits(space, options.distances);
  if (options.keepTable && Math.max(space.tableBytes, options.distances ? space.states : 0) > MAX_VIEW_BYTES) {
    throw new CCheckersError('E_LIMIT', `${v.name}: a table past 4 GiB cannot be kept as one typed array (keepTable, as verify does)`);
  }
  const required = requiredBytes(space, backend.kernelThreads ? 1 : threads, options.distances);
  checkMemory(required, options.memoryLimit);
  const memo: SparseMemoKey = { token: randomInt(1, 2 ** 48), bytes: sparseMemoBudget(space, required, options.memoryLimit) };
  const checkpointPath = options.out ? `${options.out}.ckpt` : undefined;
  if (options.out) checkSolveOutput(options.out, options);
  const unlock = options.out ? lockOutput(options.out, { breakLock: options.breakLock === true }) : () => {};
  try {
    return await solveLocked(options, space, threads, checkpointPath, memo);
  } finally {
    unlock();
  }
}

/**
 * What a solve to `out` refuses before any work (the CLI calls it before its first output): a
 * path that is not a regular file or absent, an existing database without `force`, a folder that
 * takes no files, and a checkpoint that neither `resume` continues nor `force` replaces.
 */
export function checkSolveOutput(out: string, options: { resume?: boolean; force?: boolean }): void {
  checkOutputPath(out, options.force === true);
  if (!options.resume && !options.force && existsSync(`${out}.ckpt`)) {
    throw new CCheckersError('E_USAGE', `${out}.ckpt holds an unfinished solve: use --resume to continue it, or --force to start over`);
  }
}

/** `memo`: the key of this solve's sparse passes (a kernel's memo of what each leaves unknown). */
async function solveLocked(options: SolveOptions, space: StateSpace, threads: number, checkpointPath: string | undefined, memo: SparseMemoKey): Promise<SolveResult> {
  const { variant: v, rules, backend } = options;

  // Tables of any size (TableBytes: views of at most 4 GiB), in the backend's memory.
  const allocate = (bytes: number) => allocateTable(backend, bytes);
  // The native addon's memory is aligned: its checkpoints and databases go past the page cache.
  let staging: Uint8Array | undefined;
  const stagingBuffer = () => (backend.allocateTable ? (staging ??= backend.allocateTable(DIRECT_STAGING_BYTES).views[0]) : undefined);
  let distances: TableBytes | undefined;
  /** A checkpoint of the distances (every pass done): the layer to go on with, and the won and
   *  lost states it has placed. */
  let resumedDistances: { depth: number; assigned: number } | undefined;
  let table: TableBytes;
  let passLog: PassRecord[] = [];
  let initDone = false;
  let elapsedBefore = 0;
  let resumedFromPass: number | undefined;
  /** The unfinished pass of a checkpoint taken inside a pass (PassRecord.unitsDone). */
  let unfinished: PassRecord | undefined;
  if (options.resume && checkpointPath && existsSync(checkpointPath)) {
    const c = readCheckpoint(checkpointPath, v, rules, options.distances === true, allocate, stagingBuffer());
    ({ table, passLog, unfinished, distances, resumedDistances } = c);
    initDone = true;
    elapsedBefore = c.seconds;
    resumedFromPass = passLog.length;
  } else {
    table = allocate(space.tableBytes);
  }

  const kernel = backend.solverKernel(v, rules);
  const ownThreads = backend.kernelThreads || threads === 1;
  // A worker pool gets its tables when it starts: the distances' layers start one of their own.
  const startRunner = (): ChunkRunner =>
    ownThreads
      ? inProcessRunner((phase, from, to, depth) => runPhase(kernel, phase, { table, distances }, from, to, depth, threads, memo))
      : createWorkerPool(threads, { board: v.size, pieces: v.pieces, rules, table, ...(distances ? { distances } : {}) });
  let runner = startRunner();
  const pieces = Math.max(CHUNKS_PER_PHASE, threads * 8);
  const initChunks = chunkRanges(space.groups, pieces);
  // Pass units are P2 placements, ascending: the kernels' proof order (native-src phases.inl, passUnit).
  const passChunks = chunkRanges(kernel.passUnits, pieces);
  const started = performance.now();
  const elapsed = () => elapsedBefore + (performance.now() - started) / 1000;
  const report = options.onProgress ?? (() => {});
  let proven = initDone ? provenStates(table, space.states) : 0;
  let distanceInfo: SolveResult['distances'];
  let seconds = 0; // the solve itself, without the distances

  let saved = initDone ? passLog.length : -1; // passes in the checkpoint on disk; -1: none
  let savedInPass: InPass | undefined; // and the part of the next one
  let savedLayer = resumedDistances?.depth; // or the distance layer to go on with
  const checkpointMs = 60_000 * (options.checkpointMinutes ?? DEFAULT_CHECKPOINT_MINUTES);
  let lastCheckpoint = performance.now();
  /** A checkpoint after the init or a pass, or with `part` (its record's unitsDone set) inside a pass. */
  const checkpoint = (stage: 'init' | 'checkpoint', part?: { record: PassRecord; inPass: InPass }) => {
    if (!checkpointPath) return;
    const log = part ? [...passLog, part.record] : passLog;
    writeDatabase(checkpointPath, headerFor(v, rules, stage, passLog.length, space, elapsed(), log, UNKNOWN), table, undefined, 'replace', stagingBuffer());
    saved = passLog.length;
    savedInPass = part?.inPass;
    lastCheckpoint = performance.now();
    options.onCheckpoint?.(saved, savedInPass);
  };
  /** A checkpoint of the distances (every pass done), from which a resume goes on with layer
   *  `depth`: the distance table as it is, marks included (see distance-table.ts). */
  const checkpointDistances = (depth: number) => {
    if (!checkpointPath || !distances) return;
    writeDatabase(checkpointPath, { ...headerFor(v, rules, 'checkpoint', passLog.length, space, seconds, passLog, UNKNOWN), maxDistance: depth }, table, distances, 'replace', stagingBuffer());
    saved = passLog.length;
    savedInPass = undefined;
    savedLayer = depth;
    lastCheckpoint = performance.now();
    options.onCheckpoint?.(saved, undefined, depth);
  };
  let wonAndLostStates: number | undefined; // counted once every pass is done
  const wonAndLost = () => {
    if (wonAndLostStates === undefined) {
      const stored = storedCounts(table, space.states);
      wonAndLostStates = stored[WIN]! + stored[LOSS]!;
    }
    return wonAndLostStates;
  };
  const interrupted = () => new SolveInterrupted(Math.max(0, saved), saved >= 0 ? checkpointPath : undefined, savedInPass, savedLayer);
  const checkAbort = () => {
    if (options.signal?.aborted) throw interrupted();
  };

  try {
    if (resumedFromPass !== undefined) {
      const fraction = unfinished ? unfinished.unitsDone! / (unfinished.sparse ? space.groups : kernel.passUnits) : 0;
      const placed = resumedDistances && { distanced: resumedDistances.assigned / Math.max(1, wonAndLost()), distanceLayer: resumedDistances.depth };
      report({ phase: 'resumed', pass: resumedFromPass, fraction, proven, storedStates: space.states, ...placed });
    }
    if (!initDone) {
      let done = 0;
      await runner.run('init', initChunks, (s) => {
        proven += s.illegal + s.terminal + s.wins + s.losses;
        done++;
        checkAbort();
        report({ phase: 'init', pass: 0, fraction: done / initChunks.length, proven, storedStates: space.states });
      });
      report({ phase: 'init-done', pass: 0, fraction: 1, proven, storedStates: space.states });
      if (performance.now() - lastCheckpoint >= checkpointMs) checkpoint('init');
    }
    // A checkpoint taken after the last pass (one of the distances, or one written when the
    // distance table could not be allocated) goes on from there, once a pass over its table has
    // proved nothing here too: a pass log edited to say "done" over a table that is not (its
    // checksums recomputed) must not make a complete database. That pass is not recorded.
    let confirming = resumedFromPass !== undefined && passesDone(passLog);
    while (confirming || !passesDone(passLog)) {
      const confirm = confirming;
      confirming = false;
      const pass = passLog.length + 1;
      const passStart = performance.now();
      // A pass a checkpoint caught partway goes on where it was: its units [0, unitsDone) of the
      // sweep are in the table, and it is still one pass (one record, its counts and seconds the
      // sum of its parts). Sound because values only go from unknown to proven (never back): the
      // checkpoint, taken between two kernel calls, holds only proven values, and whatever the
      // crashed run had proven after it is proven again; visiting a unit twice, or a state whose
      // children are further on than they were, proves nothing false. The pass's count of newly
      // proven states includes its first part, so `newly === 0` still means a whole sweep with
      // no change: the table is final.
      const part = unfinished?.pass === pass ? unfinished : undefined;
      unfinished = undefined;
      let newly = part?.newlyProven ?? 0;
      let moveless = 0; // 0 in a checkpoint: checked before writing one
      // After pass 1, visit only the unknown states once few are left or full passes stop
      // paying (sweeps.ts): first listed by pass unit, then by group.
      let kind = part ? kindOf(part) : nextPassKind(passLog, proven, space.states);
      // A listed pass's lists are made at its start, or again at its resume (the states decided
      // since are left out, which changes nothing: a listed pass skips known states), by this
      // process's kernel (some seconds: 17 s for 7x7/4's 381 million, 1.4 GiB). Where they would
      // not fit the memo's budget, a new pass is a sparse one and a resumed one goes on as a full
      // pass, as it does on worker threads, which have no lists.
      const listsFit = unknownListsBytes(space.states - proven, kernel.passUnits) <= memo.bytes;
      let lists: ListedUnknown | undefined;
      if (kind === 'listed' && ownThreads && kernel.listUnknown && listsFit) {
        report({ phase: 'pass', pass, fraction: (part?.unitsDone ?? 0) / kernel.passUnits, proven, storedStates: space.states });
        lists = kernel.listUnknown(table, { threads, budget: memo.bytes }); // a stop is seen after its first chunk, which checkpoints
      }
      if (kind === 'listed' && !lists?.listed) kind = part ? 'full' : 'sparse';
      const sparse = kind === 'sparse';
      const sweep = { sparse, ...(kind === 'listed' ? { listed: true } : {}) }; // what its records say it was
      // Sparse passes sweep the groups up and down in turn: a state whose proof waits on a state
      // after it in one direction is reached in the next pass (7x7/3: 11 passes instead of 17).
      const down = sparse && pass % 2 === 0;
      const units = sparse ? space.groups : kernel.passUnits;
      let unitsDone = part?.unitsDone ?? 0;
      if (!(Number.isInteger(unitsDone) && unitsDone >= 0 && unitsDone <= units)) {
        throw new CCheckersError('E_DATABASE', `${checkpointPath}: pass ${pass} is recorded ${unitsDone} units in, of ${units}`);
      }
      const chunks = unitsAfter(sparse ? (down ? [...initChunks].reverse() : initChunks) : passChunks, unitsDone, down);
      let done = 0;
      const seconds = () => (part?.seconds ?? 0) + (performance.now() - passStart) / 1000;
      await runner.run(down ? 'sparse-down' : sparse ? 'sparse' : kind === 'listed' ? 'listed' : 'pass', chunks, (s) => {
        newly += s.wins + s.losses;
        moveless += s.moveless;
        proven += s.wins + s.losses;
        const [from, to] = chunks[done++]!;
        unitsDone += to - from;
        // Every kernel call returns once all its threads are done with their units: between two
        // calls, the units [0, unitsDone) of the sweep are done and nothing writes to the table.
        if (!confirm && unitsDone < units && checkpointPath && (options.signal?.aborted || performance.now() - lastCheckpoint >= checkpointMs)) {
          checkMoveless(moveless, v);
          const record: PassRecord = { pass, proven, newlyProven: newly, seconds: seconds(), ...sweep, unitsDone };
          checkpoint('checkpoint', { record, inPass: { pass, unitsDone, units } });
        }
        checkAbort();
        report({ phase: 'pass', pass, fraction: unitsDone / units, proven, storedStates: space.states });
      });
      if (lists) kernel.releaseUnknownLists?.();
      checkMoveless(moveless, v);
      if (confirm) {
        if (newly === 0) break;
        throw new CCheckersError(
          'E_DATABASE',
          `${checkpointPath}: its pass log says the passes were done, but a pass over its table proved ${newly} more states: the checkpoint was damaged or forged; solve again without --resume`,
        );
      }
      const record: PassRecord = { pass, proven, newlyProven: newly, seconds: seconds(), ...sweep };
      passLog.push(record);
      report({ phase: 'pass-done', pass, fraction: 1, proven, storedStates: space.states, record });
      if (newly === 0) break;
      // Not after every pass: 7x7/4's last ten passes take 3-9 s each, and a checkpoint of its
      // 3.7 GiB table about 8 s.
      const stopping = options.stopAfterPass !== undefined && pass >= options.stopAfterPass;
      if (stopping || options.signal?.aborted || performance.now() - lastCheckpoint >= checkpointMs) checkpoint('checkpoint');
      if (stopping) throw interrupted();
    }
    seconds = resumedDistances ? elapsedBefore : elapsed();
    kernel.releaseSparseMemo?.(); // the passes are over: its memory goes to the distances
    if (options.distances && !distances) {
      // The distance table comes once the passes are done, which need the values alone (7x7/4:
      // 3.7 of 18.4 GiB for the 40 minutes of its passes). The solve was refused at its start
      // without the memory for both; memory taken since is refused here, the passes saved.
      try {
        checkMemory(space.states, options.memoryLimit === undefined ? undefined : options.memoryLimit - space.tableBytes);
        distances = allocate(space.states).fill(NO_DISTANCE);
      } catch (e) {
        const why = `${e instanceof Error ? e.message : String(e)} (for the distance table)`;
        if (!checkpointPath) throw new InsufficientMemoryError(`${why}; nothing was saved (a checkpoint needs --out)`);
        checkpoint('checkpoint');
        throw new InsufficientMemoryError(`${why}; the passes are saved in ${checkpointPath}: continue with --resume --distances once there is memory`);
      }
      if (!ownThreads) {
        await runner.close();
        runner = startRunner();
      }
    }
    if (distances) {
      // Layer by layer from the ends of the game (distance-table.ts), or from a checkpoint's layer.
      const distanceStart = performance.now();
      const decided = wonAndLost();
      let assigned = resumedDistances?.assigned ?? 0;
      let layer = 0;
      let chunksDone = 0;
      // Each layer scans the whole table, and the early ones give few states a distance (7x7/4's
      // first ones take minutes each): the progress is the layer's, the share placed beside it.
      const progress = (phase: 'distances' | 'distances-done') =>
        report({ phase, pass: layer, fraction: phase === 'distances-done' ? 1 : chunksDone / initChunks.length, distanced: decided === 0 ? 1 : assigned / decided, proven, storedStates: space.states });
      const runLayer = async (phase: DistancePhase, d: number) => {
        layer = phase === 'distance-init' ? 0 : d + 1; // 0: the ends of the game
        chunksDone = 0;
        let newly = 0;
        await runner.run(
          phase,
          initChunks,
          (s: KernelStats) => {
            newly += s.wins + s.losses;
            assigned += s.wins + s.losses;
            chunksDone++;
            if (phase === 'distance' && options.signal?.aborted) {
              // Stopped inside a layer: saved as it is, the layer to be run again whole (a
              // layer's pushes can be repeated: see layDistances); at its end, the next one.
              // After the last layer the solve just ends (writing the database is the save).
              if (chunksDone < initChunks.length) checkpointDistances(d);
              else if (assigned < decided) checkpointDistances(d + 1);
              else return;
            }
            checkAbort();
            progress('distances');
          },
          d,
        );
        return newly;
      };
      const depth = await layDistances(decided, runLayer, {
        ...(resumedDistances ? { from: resumedDistances } : {}),
        onLayerDone: (next) => {
          if (performance.now() - lastCheckpoint >= checkpointMs) checkpointDistances(next);
        },
      });
      layer = depth;
      distanceInfo = {
        maxPlies: depth,
        seconds: (performance.now() - distanceStart) / 1000,
        crc32: 0,
        ...(resumedDistances ? { resumedFromLayer: resumedDistances.depth } : {}),
      };
      progress('distances-done');
    }
  } finally {
    kernel.releaseUnknownLists?.();
    kernel.releaseSparseMemo?.();
    await runner.close();
  }

  const counts = expandCounts(space, table);
  const startValue = valueOfStart(space, table);
  let written: DatabaseHeader | undefined;
  if (options.out) {
    written = writeDatabase(
      options.out,
      { ...headerFor(v, rules, 'complete', passLog.length, space, seconds, passLog, startValue), ...counts, maxDistance: distanceInfo?.maxPlies ?? 0 },
      table,
      distances,
      options.force ? 'replace-file' : 'new',
      stagingBuffer(),
    );
    // Only a checkpoint of this solve: one it wrote, or the one it resumed from.
    if (checkpointPath && (saved >= 0 || resumedFromPass !== undefined) && existsSync(checkpointPath)) unlinkSync(checkpointPath);
  }
  if (distanceInfo && distances) distanceInfo.crc32 = written?.distanceCrc32 ?? tableCrc32(distances);
  return {
    board: v.size,
    pieces: v.pieces,
    rules,
    backend: backend.name,
    threads,
    ...counts,
    start: startValueName(startValue),
    passes: passLog.length,
    seconds,
    storedStates: space.states,
    tableBytes: space.tableBytes,
    tableCrc32: written?.bodyCrc32 ?? tableCrc32(table),
    passLog,
    ...(resumedFromPass !== undefined ? { resumedFromPass } : {}),
    ...(options.keepTable ? { table: table.asOneView() } : {}),
    ...(distanceInfo ? { distances: distanceInfo } : {}),
    ...(options.keepTable && distances ? { distanceTable: distances.asOneView() } : {}),
    tablePages: table.pageInfo,
  };
}
