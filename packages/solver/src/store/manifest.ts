/**
 * A sharded store's manifest (manifest.json): its type, the names of the files it records (shard
 * and band files), its checksum and canonical text, and the checks an open makes of it
 * (checkManifest), of its results among them.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { RANKING_ID, type RuleMode, StateSpace, variant } from '@ccheckers/core';
import { crc32Of } from '../crc.js';
import { DatabaseError, countsNotAddingUp, hex, positionsNotTheGame } from '../database.js';
import { type PassRecord, isCount, isSeconds, passLogProblem } from '../pass-log.js';
import { type GameCounts } from '../state-index.js';
import { type BandSchedule, MAX_WORKERS, SCHEDULE_KINDS, type ScheduleKind, type StepAt, bandSchedule, isSliceUnits, passRounds, roundOfStep, stepBefore } from './band-schedule.js';
import { layoutOf } from './layout.js';
import { MANIFEST } from './manifest-name.js';
import { MESSAGE_CODING, type MessagePack, packProblem, parseMessageFileName } from './message-pack.js';

export { MANIFEST };
export const STORE_FORMAT = 'ccheckers-store';
export const STORE_FORMAT_VERSION = 1;
/** Shard file names: index, generation, and (written by a cluster's worker) the attempt. */
export const SHARD_FILE = /^shard-\d{5,}\.g\d+(\.[0-9a-f]{8})?\.bin$/;

/** A new store's id (manifest `id`: 16 hex digits). */
export function newStoreId(): string {
  return randomBytes(8).toString('hex');
}

/** 'finishing': the passes are over, the results not yet counted. */
export type StoreStage = 'init' | 'passes' | 'finishing' | 'complete';

/** Where a pass stood when the manifest was written: shards done (in order), and what they proved. */
export interface PassInProgress {
  pass: number;
  sparse: boolean;
  shardsDone: number;
  /** Tiles (a held block, or a block and a streamed shard) done, for progress. */
  tilesDone: number;
  newlyProven: number;
  seconds: number;
}

/** What the pass under way of a band solve has done so far. */
export interface BandPassTally {
  /** Values the held bands took (their own proofs and the messages applied). */
  changed: number;
  /** Value messages sent, and messages written in all. */
  sentValues: number;
  messagesWritten: number;
  seconds: number;
  bytesRead: number;
  bytesWritten: number;
}

/** A band solve under way (band-solve.ts): its bands' files, its messages, the next step. */
export interface BandState {
  count: number;
  /** Workers the rounds are made for (band-schedule.ts): bands stepped at the same time. */
  workers: number;
  /** How the rounds are cut (band-schedule.ts; absent: segments, as earlier versions did). */
  schedule?: ScheduleKind;
  /** Shared steps (schedule 'shared'): units a worker visits between exchanges. */
  sliceUnits?: number;
  /** Shared steps: init in rounds of W bands (band-schedule.ts, passRounds); absent, a band a
   *  round, as the stores of earlier versions were made (a resume goes on as they began). */
  initBlocks?: true;
  /** Shared steps: the passes after the first in rounds of W bands (passRounds); absent, a band a
   *  round, as the stores of earlier versions were made. */
  laterBlocks?: true;
  /** CRC-32 of the band of every group (band-layout.ts): a resume by a version that cuts the
   *  bands otherwise is refused, not misread. */
  layoutCrc32: number;
  /** Bytes of messages a step holds (band-layout.ts, BandPlan): the same for every worker, so
   *  that a solve makes the same calls wherever its steps run. */
  messageBytes: number;
  /** Each band's table file ('' until init wrote it) and CRC-32. */
  files: Array<{ file: string; crc32: number }>;
  /** The attempt (token in the names of its files) of each band's last committed step: a file of
   *  that step the manifest does not name, and its target has not taken, was lost; of another
   *  attempt (a step run twice), it is a leftover. */
  attempts: string[];
  /** Shared steps: the attempts of the parts of each band's last committed step ([] until it
   *  had one), whose packs are named as the step's attempt's are (band-step.ts, runSlice). */
  sliceAttempts?: string[][];
  /** Message packs written by steps done, not yet taken by all their bands (message-pack.ts),
   *  and their coding. */
  messages: MessagePack[];
  messageCoding: typeof MESSAGE_CODING;
  /** The next round: round `round` of pass `pass` (pass 0 is init). */
  next: StepAt;
  tally: BandPassTally;
}

/** Band file names: index, generation (the commit that names it), the attempt that wrote it. */
export const BAND_FILE = /^band-(\d{5,})\.g(\d+)(\.[0-9a-f]{8})?\.bin$/;

export function bandFileName(band: number, generation: number, attempt: string): string {
  return `band-${String(band).padStart(5, '0')}.g${generation}.${attempt}.bin`;
}

/** The rounds a band solve's state records (segments where it names none: earlier versions). */
export function scheduleOf(bands: Pick<BandState, 'count' | 'workers' | 'schedule' | 'sliceUnits' | 'initBlocks' | 'laterBlocks'>): BandSchedule {
  return { ...bandSchedule(bands.count, bands.workers, bands.schedule ?? 'segments', bands.sliceUnits), initBlocks: bands.initBlocks === true, laterBlocks: bands.laterBlocks === true };
}

/** A token of one attempt at a step, for file names that several machines may write at once. */
export function attemptToken(): string {
  return randomBytes(4).toString('hex');
}

/** Whether `x` has the form of an attempt token (it goes into file names). */
export function isAttemptToken(x: unknown): x is string {
  return typeof x === 'string' && /^[0-9a-f]{8}$/.test(x);
}

/** What one band step wrote (already flushed), for the commit that names it. */
export interface BandStepFiles {
  band: number;
  /** The token in the names of the files the step wrote. */
  attempt: string;
  /** The band's new table file (absent: the step changed nothing, the band keeps its file). */
  table?: { file: string; crc32: number };
  /** The message pack it wrote, if it sent anything. */
  pack?: MessagePack;
  /** A part of a shared step (band-step.ts, runSlice): which part. */
  part?: number;
}

export interface Manifest {
  format: typeof STORE_FORMAT;
  /** Random, set when the store is made: names the store's job queue on a cluster (cluster/). */
  id?: string;
  version: number;
  board: number;
  pieces: number;
  rules: RuleMode;
  rankingId: number;
  storedStates: number;
  groups: number;
  statesPerGroup: number;
  tableBytes: number;
  groupsPerShard: number;
  shards: Array<{ file: string; firstGroup: number; groups: number; bytes: number; crc32: number }>;
  /** Bumped by every save: new shard files get it in their names. */
  generation: number;
  stage: StoreStage;
  passLog: PassRecord[];
  passInProgress?: PassInProgress;
  /** Seconds of solving so far (over resumes). */
  seconds: number;
  /** Stored states decided so far, where a cluster solve (cluster/) keeps count. */
  proven?: number;
  /** A band solve under way (the shards have no files until it finishes). */
  bands?: BandState;
  /** The passes a solve of the store was started with (absent or 'tiles': the tile passes of
   *  earlier versions), its band count, and (once done) the workers its rounds were made for. */
  passes?: 'bands' | 'tiles';
  bandCount?: number;
  bandWorkers?: number;
  bandSchedule?: ScheduleKind;
  /** When complete: the results, and the CRC-32 of the whole table (the shards in order). */
  results?: GameCounts & { startValue: number; tableCrc32: number };
  /** The manifest's own checksum (manifestChecksum): recorded by every write, checked by every
   *  open. Absent from the manifests of earlier versions (accepted; check says "no checksum"). */
  crc32?: number;
}

/**
 * The checksum of a manifest: the CRC-32 of its canonical JSON (keys sorted at every level, no
 * spaces) without the `crc32` field that records it, so that a manifest re-indented or with its
 * keys in another order keeps it, and any change of a value does not.
 */
export function manifestChecksum(m: Manifest): number {
  const { crc32: _, ...content } = m;
  return crc32Of(Buffer.from(canonicalJson(content), 'utf8'));
}

function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(
          Object.keys(v)
            .sort()
            .map((k) => [k, (v as Record<string, unknown>)[k]]),
        )
      : v,
  );
}

/** A manifest as it is written: JSON with one space of indent, its checksum recorded. */
export function manifestText(m: Manifest): string {
  return `${JSON.stringify({ ...m, crc32: manifestChecksum(m) }, null, 1)}\n`;
}

/** What a store's results record: the counts, the start value, the table's CRC-32. */
export type StoreResults = NonNullable<Manifest['results']>;

const RESULT_FIELDS = ['positions', 'p1Wins', 'p2Wins', 'draws', 'illegal', 'startValue', 'tableCrc32'] as const;
const RESULT_NAMES: Record<(typeof RESULT_FIELDS)[number], string> = { positions: 'positions', p1Wins: 'P1 wins', p2Wins: 'P2 wins', draws: 'draws', illegal: 'illegal', startValue: 'start', tableCrc32: 'table CRC-32' };
const START_NAMES = ['draw', 'p2-win', 'p1-win', 'illegal'];

/** The fields in which `recorded` (a manifest's results) differs from `recounted` (the shards'). */
export function resultsDiffer(recorded: StoreResults, recounted: StoreResults): Array<{ field: (typeof RESULT_FIELDS)[number]; manifest: number; recounted: number }> {
  return RESULT_FIELDS.filter((field) => recorded[field] !== recounted[field]).map((field) => ({ field, manifest: recorded[field], recounted: recounted[field] }));
}

/** A DatabaseError naming both sides of each field in which a manifest's results differ from the
 *  shards' recount (`doing`: what was refused). */
export function resultsMismatch(dir: string, recorded: StoreResults, recounted: StoreResults, doing: string): DatabaseError {
  const shown = (field: (typeof RESULT_FIELDS)[number], x: number) => (field === 'startValue' ? (START_NAMES[x] ?? String(x)) : field === 'tableCrc32' ? hex(x) : String(x));
  const said = resultsDiffer(recorded, recounted)
    .map((d) => `${RESULT_NAMES[d.field]} ${shown(d.field, d.manifest)} (the shards: ${shown(d.field, d.recounted)})`)
    .join(', ');
  return new DatabaseError(join(dir, MANIFEST), `the manifest's results are not what its shards hold: it records ${said}; ${doing} (check --db ${dir} --fix rewrites them from the shards)`);
}

export function checkManifest(path: string, m: Manifest): void {
  const bad = (what: string) => new DatabaseError(path, `corrupt manifest: ${what}`);
  if (m === null || typeof m !== 'object' || m.format !== STORE_FORMAT) throw bad('not a ccheckers store manifest');
  if (m.version !== STORE_FORMAT_VERSION) throw new DatabaseError(path, `store format version ${m.version}; this ccheckers reads version ${STORE_FORMAT_VERSION}`);
  if (m.rankingId !== RANKING_ID) throw new DatabaseError(path, `ranking ${m.rankingId}; this ccheckers uses ranking ${RANKING_ID}`);
  if (m.rules !== 'clean' && m.rules !== 'published') throw bad(`unknown rules ${String(m.rules)}`);
  let space: StateSpace;
  try {
    space = new StateSpace(variant(m.board, m.pieces));
  } catch (e) {
    throw bad(`variant ${m.board}x${m.board}/${m.pieces}: ${(e as Error).message}`);
  }
  if (m.storedStates !== space.states || m.groups !== space.groups || m.statesPerGroup !== space.p2Placements || m.tableBytes !== space.tableBytes) {
    throw bad(`its sizes are not those of ${space.variant.name}`);
  }
  // The fields a solve reads back (forged ones would stop it with a TypeError, not a message).
  if (!isCount(m.generation)) throw bad(`generation ${String(m.generation)}`);
  if (!isSeconds(m.seconds)) throw bad(`seconds ${String(m.seconds)}`);
  if (m.proven !== undefined && !(isCount(m.proven) && m.proven <= space.states)) throw bad(`proven ${String(m.proven)}`);
  const logProblem = passLogProblem(m.passLog);
  if (logProblem) throw bad(`pass log: ${logProblem}`);
  if (m.passInProgress !== undefined && !(countsAndSeconds(m.passInProgress, ['pass', 'shardsDone', 'tilesDone', 'newlyProven']) && typeof m.passInProgress.sparse === 'boolean')) {
    throw bad('pass in progress');
  }
  if (m.passes !== undefined && m.passes !== 'bands' && m.passes !== 'tiles') throw bad(`passes ${String(m.passes)}`);
  if (m.bandCount !== undefined && (!Number.isSafeInteger(m.bandCount) || m.bandCount < 1 || m.bandCount > space.groups)) throw bad(`band count ${String(m.bandCount)}`);
  if (m.bandWorkers !== undefined && (!Number.isSafeInteger(m.bandWorkers) || m.bandWorkers < 1 || m.bandWorkers > MAX_WORKERS)) throw bad(`band workers ${String(m.bandWorkers)}`);
  if (!Number.isSafeInteger(m.groupsPerShard) || m.groupsPerShard < 4 || m.groupsPerShard % 4 !== 0) throw bad(`groups per shard ${m.groupsPerShard}`);
  const layout = layoutOf(space, m.groupsPerShard);
  if (!Array.isArray(m.shards) || m.shards.length !== layout.shards.length) throw bad(`${m.shards?.length} shards, the layout has ${layout.shards.length}`);
  layout.shards.forEach((s, i) => {
    const e = m.shards[i]!;
    if (e.firstGroup !== s.firstGroup || e.groups !== s.groups || e.bytes !== s.bytes) throw bad(`shard ${i} is not where the layout puts it`);
    if (typeof e.file !== 'string' || (e.file !== '' && !SHARD_FILE.test(e.file))) throw bad(`shard ${i} names the file "${String(e.file)}"`);
    if (e.file === '' && m.stage !== 'init' && m.bands === undefined) throw bad(`shard ${i} has no file`);
    if (!isCrc32(e.crc32)) throw bad(`shard ${i} has the checksum ${String(e.crc32)}`);
  });
  if (m.bands !== undefined) {
    const b = m.bands;
    if (b !== null && typeof b === 'object' && b.workers === undefined) {
      throw new DatabaseError(path, 'a band solve under way from an earlier version of ccheckers (its rounds are not recorded): finish it with that version, or start it again');
    }
    if (!Number.isSafeInteger(b.count) || b.count < 1 || !Array.isArray(b.files) || b.files.length !== b.count) throw bad('band solve: band count and files');
    if (!Number.isSafeInteger(b.workers) || b.workers < 1 || b.workers > MAX_WORKERS) throw bad(`band solve: workers ${String(b.workers)}`);
    if (!Number.isSafeInteger(b.messageBytes) || b.messageBytes < 2 ** 10 || b.messageBytes > 2 ** 40) throw bad(`band solve: message bytes ${String(b.messageBytes)}`);
    if (!Array.isArray(b.attempts) || b.attempts.length !== b.count || !b.attempts.every((a) => a === '' || isAttemptToken(a))) throw bad('band solve: attempts');
    b.files.forEach((f, i) => {
      // Its own band's, of a generation committed: no two bands name one file (a commit of one
      // would delete the other's).
      const name = typeof f.file === 'string' ? BAND_FILE.exec(f.file) : null;
      if (f.file !== '' && (!name || Number(name[1]) !== i || !(Number(name[2]) <= m.generation))) throw bad(`band ${i} names the file "${String(f.file)}"`);
      if (!isCrc32(f.crc32)) throw bad(`band ${i} has the checksum ${String(f.crc32)}`);
    });
    if (b.messageCoding !== MESSAGE_CODING) {
      // Float64 message files (no messageCoding): a store of a band solve left by an earlier version.
      throw new DatabaseError(path, `a band solve under way whose message files are coded as ${String(b.messageCoding ?? 'float64')}; this ccheckers codes them as ${MESSAGE_CODING}: finish the solve with the version that started it, or start it again`);
    }
    if (!countsAndSeconds(b.tally, ['changed', 'sentValues', 'messagesWritten', 'bytesRead', 'bytesWritten'])) throw bad('band solve: tally of the pass under way');
    if (!isCrc32(b.layoutCrc32)) throw bad(`band solve: layout checksum ${String(b.layoutCrc32)}`);
    if (b.schedule !== undefined && !SCHEDULE_KINDS.includes(b.schedule)) throw bad(`band solve: schedule ${String(b.schedule)}`);
    if (b.schedule === 'shared' ? !isSliceUnits(b.sliceUnits) : b.sliceUnits !== undefined) {
      throw bad(`band solve: slice units ${String(b.sliceUnits)}`);
    }
    if (b.initBlocks !== undefined && (b.initBlocks !== true || b.schedule !== 'shared')) throw bad(`band solve: init blocks ${String(b.initBlocks)}`);
    if (b.laterBlocks !== undefined && (b.laterBlocks !== true || b.initBlocks !== true)) throw bad(`band solve: later blocks ${String(b.laterBlocks)}`);
    // A pack's entry agrees with its file's name; one pack per step.
    if (!Array.isArray(b.messages)) throw bad('band solve: message files');
    for (const pack of b.messages) {
      const problem = packProblem(pack, b.count);
      if (problem !== undefined) throw bad(`band solve: message files: ${problem}`);
    }
    if (new Set(b.messages.map((p) => `${p.pass}-${p.source}-${p.part ?? ''}`)).size !== b.messages.length) throw bad('band solve: message files: two packs of one step');
    if (b.sliceAttempts !== undefined) {
      const parts = b.sliceAttempts;
      if (!Array.isArray(parts) || parts.length !== b.count || !parts.every((a) => Array.isArray(a) && a.length <= b.workers && a.every(isAttemptToken))) throw bad('band solve: attempts of shared steps');
    }
    const next = b.next as { pass?: unknown; round?: unknown } | null;
    const schedule = scheduleOf(b);
    if (next === null || typeof next !== 'object' || !Number.isSafeInteger(next.pass) || !Number.isSafeInteger(next.round) || (next.pass as number) < 0 || (next.round as number) < 0 || (next.round as number) >= passRounds(schedule, next.pass as number).length) {
      throw bad('band solve: next step');
    }
    // A pack the manifest names is of a committed step, and of its source's last committed
    // attempt: its targets have all taken it before the source steps again (commitBands).
    for (const pack of b.messages) {
      const step = { pass: pack.pass, round: roundOfStep(schedule, pack.pass, pack.source) };
      if (!stepBefore(step, b.next)) throw bad(`band solve: message files: ${pack.file} is of a step not committed yet`);
      const committed = pack.part === undefined ? b.attempts[pack.source] : b.sliceAttempts?.[pack.source]?.[pack.part];
      if (parseMessageFileName(pack.file)!.attempt !== committed) throw bad(`band solve: message files: ${pack.file} is not of band ${pack.source}'s committed attempt`);
    }
  }
  if (m.bandSchedule !== undefined && !SCHEDULE_KINDS.includes(m.bandSchedule)) throw bad(`band schedule ${String(m.bandSchedule)}`);
  if (!['init', 'passes', 'finishing', 'complete'].includes(m.stage)) throw bad(`stage ${String(m.stage)}`);
  // A band solve keeps its bands until it writes out the shards (stage finishing).
  if (m.passes === 'bands' && (m.stage === 'init' || m.stage === 'passes') && m.bands === undefined) throw bad(`a band solve at stage ${m.stage} without its bands`);
  if (m.stage === 'complete') checkResults(m.results, space, bad);
  if (m.id !== undefined && (typeof m.id !== 'string' || !/^[0-9a-f]{16}$/.test(m.id))) throw bad(`store id ${String(m.id)}`);
}

/** Whether `x` (read from a manifest) is an object whose fields `counts` are counts and whose
 *  `seconds` are seconds. */
function countsAndSeconds(x: unknown, counts: string[]): boolean {
  if (x === null || typeof x !== 'object') return false;
  const record = x as Record<string, unknown>;
  return counts.every((field) => isCount(record[field])) && isSeconds(record.seconds);
}

/** A CRC-32 as a manifest records it: an unsigned 32-bit integer. */
export function isCrc32(x: unknown): boolean {
  return Number.isSafeInteger(x) && (x as number) >= 0 && (x as number) < 2 ** 32;
}

/** A complete store's results: counts that add up to the variant's positions (as a database
 *  file's must), a start value and a table checksum. */
function checkResults(r: Manifest['results'], space: StateSpace, bad: (what: string) => DatabaseError): void {
  if (r === null || typeof r !== 'object') throw bad('complete without results');
  const counts = [r.positions, r.p1Wins, r.p2Wins, r.draws, r.illegal];
  if (!counts.every((c) => Number.isSafeInteger(c) && c >= 0)) throw bad('results: counts that are not whole numbers');
  const problem = countsNotAddingUp(r) ?? positionsNotTheGame(r, space);
  if (problem) throw bad(`results: ${problem}`);
  if (!Number.isSafeInteger(r.startValue) || r.startValue < 0 || r.startValue > 3) throw bad(`results: start value ${String(r.startValue)}`);
  if (!isCrc32(r.tableCrc32)) throw bad(`results: table checksum ${String(r.tableCrc32)}`);
}
