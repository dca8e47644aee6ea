/**
 * The rounds of a band pass: which bands are stepped at the same time when W workers hold bands
 * at once (a cluster, cluster/), and in which order. A pass is a sequence of rounds that steps
 * every band once; the steps of a round run in parallel, each on the store as the previous round
 * left it, and the round is committed as a whole. What a step sends is therefore seen from the
 * next round on: by a later round of the same pass, or by the band's next step in the next pass.
 * With one worker a round is one band and the pass is the serial band pass of band-solve.ts.
 *
 * Three schedules (docs/sharding.md, "Parallel band passes"); the chains of proofs mostly go
 * forward in the proof order from band to band, and a chain waits a pass where its next band is
 * stepped in the same round or an earlier one:
 *  - "segments": worker w owns a run of consecutive bands, and round t steps the t-th band of
 *    each run. Each segment keeps its own chains; those crossing into the next segment wait. Best
 *    with few bands a worker (tens of bands in all: pass 1 proves about 1.3 / W of what it does
 *    serially at W >= 4, but the passes stay few).
 *  - "blocks": round r steps the W bands r W .. r W + W - 1. A chain waits only for a hop shorter
 *    than a round. The model of 7x7/2 kept 92.8% of pass 1 at W = 8 with one group a band (1,024
 *    bands), but the solver on 7x7/3 in 1,024 bands (18 groups each) proved 0.7% in pass 1 at
 *    W = 8, against 15.6% for segments in 16 bands: the short hops are a few groups long, so
 *    blocks need bands of about a group, which large variants cannot have. There to measure.
 *  - "shared": pass 1 one band a round, in order, each band's step shared by the W workers
 *    (band-step.ts, runSlice and runFinish): pass 1 proves what the serial pass does (7x7/3 in 16
 *    bands: 98.1-98.2% for 2 workers, 97.0% for 8), so the passes stay about the serial solve's.
 *    Init goes in blocks, and the later passes from 3 workers on (passRounds).
 * A cluster's store of 2 or more workers is shared unless asked otherwise; a local solve's is in
 * segments (defaultSchedule).
 */
import { CCheckersError } from '@ccheckers/core';

export type ScheduleKind = 'segments' | 'blocks' | 'shared';
export const SCHEDULE_KINDS: readonly ScheduleKind[] = ['segments', 'blocks', 'shared'];

/** Workers a cluster's new store is made for when --workers is not given. */
export const CLUSTER_DEFAULT_WORKERS = 2;

/**
 * The schedule of a new store when none is asked for. A cluster of W >= 2 workers shares each
 * band's pass-1 step: 7x7/3 in 16 bands on 2 workers took 5 passes against 7 in segments and
 * 1.34x against 1.46x the single process (docs/sharding.md, run B; 5-6 passes in runs D, one
 * process 5), and the whole 7x7/4 10 passes (98.1% of 7x7/3 and 93.6% of 7x7/4 in pass 1), while
 * segments proved 48.0% of 7x7/4 in pass 1 in 5 bands, where one process proves 93.4%. A local
 * solve keeps segments: its W parts of a shared step would all be held in one process (two copies
 * of the band each).
 */
export function defaultSchedule(workers: number, cluster: boolean): ScheduleKind {
  return cluster && workers > 1 ? 'shared' : 'segments';
}

/** Units a worker visits between exchanges in a shared step (the model kept pass 1 with 1). */
export const DEFAULT_SLICE_UNITS = 1;
/** The most --slice-units (a chunk of W slices is then a band's units or more anyway). */
export const MAX_SLICE_UNITS = 2 ** 20;

/** Whether `x` is a slice of units a shared step may have: a whole number from 1 to MAX_SLICE_UNITS. */
export function isSliceUnits(x: unknown): x is number {
  return Number.isSafeInteger(x) && (x as number) >= 1 && (x as number) <= MAX_SLICE_UNITS;
}

export interface BandSchedule {
  kind: ScheduleKind;
  bands: number;
  /** Workers the schedule was made for (at most the band count, but for shared steps). */
  workers: number;
  /** Shared steps: the units a worker visits between exchanges (other kinds: 0). */
  sliceUnits: number;
  /** The bands of each round of a pass, ascending (passRounds: init and the later passes of a
   *  shared schedule go otherwise). */
  rounds: number[][];
  /** The round of each band (roundOfStep). */
  roundOf: Int32Array;
  /** Init in rounds of W consecutive bands (passRounds; shared schedules made since it was). */
  initBlocks: boolean;
  /** The passes after the first in rounds of W consecutive bands (passRounds; shared schedules
   *  of LATER_BLOCKS_WORKERS or more made since they were). */
  laterBlocks: boolean;
  /** Rounds of W consecutive bands (blockRounds): a 'blocks' schedule's own, a shared one's init
   *  and later passes (passRounds). */
  blocks: Rounds;
}

/** Which bands each round steps, and the round of each band. */
export interface Rounds {
  rounds: number[][];
  roundOf: Int32Array;
}

/** Rounds of `w` consecutive bands: round r steps the bands r w .. r w + w - 1 (w = 1: a band a
 *  round). */
function blockRounds(bands: number, w: number): Rounds {
  const roundOf = new Int32Array(bands);
  const rounds: number[][] = [];
  for (let band = 0; band < bands; band++) {
    const r = Math.floor(band / w);
    roundOf[band] = r;
    (rounds[r] ??= []).push(band);
  }
  return { rounds, roundOf };
}

/** Rounds of segments: worker s runs the bands floor(s B / w) .. floor((s + 1) B / w) - 1 in
 *  order, round t stepping the t-th band of each (w <= B). */
function segmentRounds(bands: number, w: number): Rounds {
  const roundOf = new Int32Array(bands);
  const rounds: number[][] = [];
  for (let s = 0; s < w; s++) {
    const first = Math.floor((s * bands) / w);
    const end = Math.floor(((s + 1) * bands) / w);
    for (let band = first; band < end; band++) {
      const t = band - first;
      roundOf[band] = t;
      (rounds[t] ??= []).push(band);
    }
  }
  return { rounds, roundOf };
}

/**
 * The fewest workers whose shared schedule steps the passes after the first in blocks of W bands.
 * A band a round, the later passes run on one worker while the others wait (7x7/4 on 2 workers:
 * passes 2-10 took 1,538 s, 30% of pass 1's time); shared as pass 1 is, 7x7/3 took 12 passes
 * instead of 7. In blocks a message to a band of the same or an earlier round waits a pass
 * (takenAt), and the passes about double (7x7/3 in 16 bands: 5 -> 8 and 10 passes at W = 2, 5 ->
 * 10 at 4; 4x4/6: 8 -> 14 at 8; docs/sharding.md): W workers run them W times as fast, so blocks
 * pay from 3 workers. At 2 the cluster took the same time (7x7/3: 46.4 and 51.8 s against 44.5 and
 * 52.1 s) in more passes. (Segments took fewer passes than blocks, but let a band step again in
 * pass 2 before an earlier band took its pass-1 messages, and the manifest keeps each band's last
 * attempt only: a pack is taken by all its targets before its source steps again, an order blocks
 * keep, as a pass's rounds keep it from pass to pass.)
 */
export const LATER_BLOCKS_WORKERS = 3;

/** The most workers a store may be solved with (the rounds of a pass are at least this long). */
export const MAX_WORKERS = 4096;

export function bandSchedule(bands: number, workers: number, kind: ScheduleKind = 'segments', sliceUnits = DEFAULT_SLICE_UNITS): BandSchedule {
  if (!Number.isSafeInteger(workers) || workers < 1 || workers > MAX_WORKERS) {
    throw new CCheckersError('E_USAGE', `--workers must be a whole number from 1 to ${MAX_WORKERS} (got ${workers})`);
  }
  if (kind === 'shared' && !isSliceUnits(sliceUnits)) {
    throw new CCheckersError('E_USAGE', `--slice-units must be a whole number from 1 to ${MAX_SLICE_UNITS} (got ${sliceUnits})`);
  }
  // Shared steps: every worker on every band, so more workers than bands is no waste.
  const w = kind === 'shared' ? workers : Math.min(workers, bands);
  // Blocks of more workers than bands are one round, as of as many workers as bands.
  const blocks = blockRounds(bands, Math.min(workers, bands));
  const { rounds, roundOf } = kind === 'shared' ? blockRounds(bands, 1) : kind === 'segments' ? segmentRounds(bands, w) : blocks;
  return { kind, bands, workers: w, sliceUnits: kind === 'shared' ? sliceUnits : 0, rounds, roundOf, initBlocks: kind === 'shared', laterBlocks: kind === 'shared' && w >= LATER_BLOCKS_WORKERS, blocks };
}

/** The parts a shared step of a store is cut into: the schedule's workers (1: not shared). */
export function sharedParts(bands: { schedule?: ScheduleKind; workers: number }): number {
  return bands.schedule === 'shared' ? bands.workers : 1;
}

/**
 * Whether a step of `pass` is one its schedule shares between its workers: pass 1 of 'shared'
 * (band-step.ts, runSlice and runFinish). The later passes' steps are whole (W at a time from
 * LATER_BLOCKS_WORKERS on: passRounds). Shared too (each part listing the requests of every W-th
 * slot range of its copy), 7x7/3 in 16 bands for 2 workers took 12 passes instead of 7, and no
 * less time (docs/sharding.md).
 */
export function isSharedStep(schedule: BandSchedule, step: { pass: number }): boolean {
  return schedule.kind === 'shared' && schedule.workers > 1 && step.pass === 1;
}

/**
 * Whether pass `pass` of a shared schedule goes in rounds of W consecutive bands, each band's step
 * whole on one worker, rather than a band a round:
 *  - init (pass 0): its steps read no children and send nothing (7x7/4 in 10 bands on 2 workers:
 *    init stepped one band at a time left a worker idle for 5 minutes);
 *  - the passes after the first, from LATER_BLOCKS_WORKERS workers on (laterBlocks).
 * Stores made before each of these go on as they began (initBlocks, laterBlocks).
 */
function inBlocks(schedule: BandSchedule, pass: number): boolean {
  return pass === 0 ? schedule.initBlocks : pass >= 2 && schedule.laterBlocks;
}

/** The rounds of pass `pass` (pass 0 is init): the schedule's, or blocks (inBlocks). */
export function passRounds(schedule: BandSchedule, pass: number): number[][] {
  return inBlocks(schedule, pass) ? schedule.blocks.rounds : schedule.rounds;
}

/** The round of each band in pass `pass` (passRounds): for loops over many bands, such as
 *  lastTakenAt's over a pack's targets. */
export function passRoundOf(schedule: BandSchedule, pass: number): Int32Array {
  return inBlocks(schedule, pass) ? schedule.blocks.roundOf : schedule.roundOf;
}

/** The round of pass `pass` in which band `band` is stepped (passRounds). */
export function roundOfStep(schedule: BandSchedule, pass: number, band: number): number {
  return passRoundOf(schedule, pass)[band]!;
}

/** A step in the order of a solve: init is pass 0. */
export interface StepAt {
  pass: number;
  round: number;
}

export function stepBefore(a: StepAt, b: StepAt): boolean {
  return a.pass < b.pass || (a.pass === b.pass && a.round < b.round);
}

/** The step at which `target` takes what band `source` sent in `pass`: its first step in a
 *  later round (this pass if its round comes after the source's, else the next). */
export function takenAt(schedule: BandSchedule, pass: number, source: number, target: number): StepAt {
  const to = roundOfStep(schedule, pass, target);
  return to > roundOfStep(schedule, pass, source) ? { pass, round: to } : { pass: pass + 1, round: roundOfStep(schedule, pass + 1, target) };
}

/**
 * Whether a band's step of pass 1 sends requests to `target`: not to itself (its units were just
 * visited) nor to a band whose pass-1 step comes in a later round (that band's units visit every
 * state whose children it holds anyway). With one worker: the bands before it.
 */
export function requestsInPass1(schedule: BandSchedule, band: number, target: number): boolean {
  return target !== band && schedule.roundOf[target]! <= schedule.roundOf[band]!;
}
