/**
 * A sharded store: the 2-bit table of one variant in shard files of whole groups, in a folder,
 * with a manifest (manifest.json) that names the variant, rules, ranking, shard layout, each
 * shard's file and CRC-32, the stage and the pass log.
 *
 * Crash safety: shard files are never written in place. A shard saved again goes to a new file
 * (its name carries a generation number), is flushed, then the manifest is replaced atomically
 * (temporary file, fsync, rename, fsync of the folder) to point at it, and only then is the old
 * file removed. Whenever the process dies, the manifest on disk names complete files whose CRCs
 * it records; files it does not name are leftovers, removed when the store is opened for writing.
 */
import { type Stats, closeSync, constants, existsSync, fstatSync, lstatSync, mkdirSync, openSync, readFileSync, readSync, readdirSync, rmSync, statSync, unlinkSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { type FileHandle, open as openFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { CCheckersError, NO_DISTANCE, RANKING_ID, type RuleMode, StateSpace, type Variant, readValue, stateByte, valueInByte, variant } from '@ccheckers/core';
import { writeFileAtomic, writeFileAtomicAsync } from '../atomic-file.js';
import { crc32Of } from '../crc.js';
import { type DatabaseHeader, DatabaseError, IO_CHUNK_BYTES, type PassRecord, countsNotAddingUp, hex } from '../database.js';
import { type StoredValues, VERIFY_ON_OPEN_BYTES } from '../database-file.js';
import { type GameCounts, TableTally } from '../state-index.js';
import { type BandSchedule, MAX_WORKERS, SCHEDULE_KINDS, type ScheduleKind, type StepAt, bandSchedule, stepBefore, takenAt } from './band-schedule.js';
import { type Shard, type ShardLayout, layoutOf, shardOfGroup } from './layout.js';
import { MESSAGE_CODING, type MessagePack, packProblem, parseMessageFileName, takenByAll } from './message-pack.js';
import { packFileTargets } from './messages.js';
import { STORE_READ_FLAGS, irregular, openStoreFile, readAt, refuseIrregular } from './store-files.js';

export { openStoreFile, readAt, refuseIrregular } from './store-files.js';

export const MANIFEST = 'manifest.json';
const FORMAT = 'ccheckers-store';
const FORMAT_VERSION = 1;
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
export function scheduleOf(bands: Pick<BandState, 'count' | 'workers' | 'schedule'>): BandSchedule {
  return bandSchedule(bands.count, bands.workers, bands.schedule ?? 'segments');
}

/** A token of one attempt at a step, for file names that several machines may write at once. */
export function attemptToken(): string {
  return randomBytes(4).toString('hex');
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
}

export interface Manifest {
  format: typeof FORMAT;
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

export class ShardStore {
  readonly space: StateSpace;
  readonly layout: ShardLayout;

  private constructor(
    readonly dir: string,
    public manifest: Manifest,
  ) {
    this.space = new StateSpace(variant(manifest.board, manifest.pieces));
    this.layout = layoutOf(this.space, manifest.groupsPerShard);
  }

  /**
   * Refuses, before any work, a store path that is not a folder, and one that is not empty unless
   * it holds a store to `resume`.
   */
  static checkPath(dir: string, resume: boolean): void {
    if (!existsSync(dir)) return;
    if (!statSync(dir).isDirectory()) throw new CCheckersError('E_USAGE', `--store ${dir} is not a folder`);
    const holdsStore = existsSync(join(dir, MANIFEST));
    if (resume && holdsStore) return;
    // A solve killed before its first save leaves its lock and temporary files only: the folder
    // is as good as empty (a live solve's lock is refused when it is taken).
    if (readdirSync(dir).some((f) => !/^manifest\.json\.lock(\.[0-9a-z-]+)?$|\.tmp-[0-9a-f-]+$/.test(f))) {
      throw new CCheckersError(
        'E_USAGE',
        holdsStore
          ? `${dir} already holds a store: use --resume to continue its solve, or choose another --store`
          : `${dir} is not empty: a new store needs an empty or absent folder`,
      );
    }
  }

  /** A new store in `dir` (absent or empty): every shard all zero (unknown), stage 'init'. */
  static create(dir: string, v: Variant, rules: RuleMode, layout: ShardLayout): ShardStore {
    ShardStore.checkPath(dir, false);
    try {
      makeFolder(dir);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      const why =
        code === 'ENOTDIR'
          ? 'a part of its path is a file, not a folder'
          : code === 'EACCES' || code === 'EPERM' || code === 'EROFS'
            ? `not allowed (${code})`
            : code === 'ENOENT'
              ? 'the file system there takes no new folders (ENOENT)'
              : (e as Error).message;
      throw new CCheckersError('E_USAGE', `--store ${dir}: cannot make the folder: ${why}`);
    }
    const space = new StateSpace(v);
    const manifest: Manifest = {
      format: FORMAT,
      version: FORMAT_VERSION,
      id: newStoreId(),
      board: v.size,
      pieces: v.pieces,
      rules,
      rankingId: RANKING_ID,
      storedStates: space.states,
      groups: space.groups,
      statesPerGroup: space.p2Placements,
      tableBytes: space.tableBytes,
      groupsPerShard: layout.groupsPerShard,
      shards: layout.shards.map((s) => ({ file: '', firstGroup: s.firstGroup, groups: s.groups, bytes: s.bytes, crc32: 0 })),
      generation: 0,
      stage: 'init',
      passLog: [],
      seconds: 0,
    };
    return new ShardStore(dir, manifest);
  }

  /** Opens a store and checks its manifest (not the shards: see loadShard and checkStore). */
  static open(dir: string): ShardStore {
    const path = join(dir, MANIFEST);
    let text: string;
    refuseIrregular(path, 'the manifest');
    try {
      const fd = openStoreFile(path, 'the manifest');
      try {
        text = readFileSync(fd, 'utf8');
      } finally {
        closeSync(fd);
      }
    } catch (e) {
      if (e instanceof DatabaseError) throw e;
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') throw new DatabaseError(dir, 'is a directory, not a database file or a store (no manifest.json)');
      throw new DatabaseError(path, `cannot read the manifest (${code ?? String(e)})`);
    }
    let m: Manifest;
    try {
      m = JSON.parse(text) as Manifest;
    } catch {
      throw new DatabaseError(path, 'corrupt manifest: not JSON');
    }
    // A manifest of an earlier version has no checksum: accepted as it is (check reports it as "no
    // checksum"), and its next write records one.
    if (m !== null && typeof m === 'object' && m.crc32 !== undefined) {
      const actual = manifestChecksum(m);
      if (m.crc32 !== actual) {
        throw new DatabaseError(dir, `manifest.json was edited or damaged: its content has checksum ${hex(actual)}, it records ${isCrc32(m.crc32) ? hex(m.crc32) : String(m.crc32)}; undo the edit or restore the store from a copy (nothing it records can be trusted)`);
      }
    }
    checkManifest(path, m);
    return new ShardStore(dir, m);
  }

  get variantName(): string {
    return this.space.variant.name;
  }

  /** The store holds a solve of this variant and rules, else a clear refusal. */
  checkVariant(v: Variant, rules: RuleMode): void {
    const m = this.manifest;
    if (m.board !== v.size || m.pieces !== v.pieces || m.rules !== rules) {
      throw new CCheckersError('E_USAGE', `${join(this.dir, MANIFEST)} is a store of ${m.board}x${m.board}/${m.pieces} (${m.rules}), not ${v.name} (${rules})`);
    }
  }

  /** The pieces the table was cut in: bands (a band solve, under way or done), else shards. */
  get pieces(): number {
    const m = this.manifest;
    return m.bands?.count ?? m.bandCount ?? this.layout.shards.length;
  }

  shardPath(index: number): string {
    return join(this.dir, this.manifest.shards[index]!.file);
  }

  /** Reads shard `index` into `into` (at least its bytes long) and checks its CRC; a shard never
   *  written (stage init) reads as zeros. */
  loadShard(index: number, into: Uint8Array): Uint8Array {
    const { bytes, path } = this.shardTarget(index, into);
    if (path === undefined) return bytes.fill(0);
    refuseIrregular(path, `shard ${index}`);
    let fd: number;
    try {
      fd = openStoreFile(path, `shard ${index}`);
    } catch (e) {
      throw this.unreadable(index, e);
    }
    try {
      this.checkShardSize(index, fstatSync(fd).size);
      readAt(fd, path, bytes, 0, `shard ${index}`);
    } finally {
      closeSync(fd);
    }
    return this.checkShardCrc(index, bytes);
  }

  /** loadShard without blocking the event loop (a cluster worker renews its job's lock meanwhile). */
  async loadShardAsync(index: number, into: Uint8Array): Promise<Uint8Array> {
    const { bytes, path } = this.shardTarget(index, into);
    if (path === undefined) return bytes.fill(0);
    refuseIrregular(path, `shard ${index}`);
    let file: FileHandle;
    try {
      file = await openFile(path, STORE_READ_FLAGS);
    } catch (e) {
      throw this.unreadable(index, e);
    }
    try {
      const stat = await file.stat();
      if (!stat.isFile()) throw irregular(path, `shard ${index}`, stat);
      this.checkShardSize(index, stat.size);
      for (let at = 0; at < bytes.length; ) {
        const { bytesRead } = await file.read(bytes, at, Math.min(IO_CHUNK_BYTES, bytes.length - at), at);
        if (bytesRead === 0) throw new DatabaseError(path, `shard ${index} is shorter than the manifest records`);
        at += bytesRead;
      }
    } finally {
      await file.close();
    }
    return this.checkShardCrc(index, bytes);
  }

  private shardTarget(index: number, into: Uint8Array): { bytes: Uint8Array; path: string | undefined } {
    const entry = this.manifest.shards[index]!;
    return { bytes: into.subarray(0, entry.bytes), path: entry.file === '' ? undefined : this.shardPath(index) };
  }

  private unreadable(index: number, e: unknown): DatabaseError {
    if (e instanceof DatabaseError) return e;
    return new DatabaseError(this.shardPath(index), `shard ${index} is missing or unreadable (${(e as NodeJS.ErrnoException).code ?? String(e)})`);
  }

  private checkShardSize(index: number, size: number): void {
    const recorded = this.manifest.shards[index]!.bytes;
    if (size !== recorded) throw new DatabaseError(this.shardPath(index), `shard ${index} has ${size} bytes, the manifest records ${recorded}`);
  }

  private checkShardCrc(index: number, bytes: Uint8Array): Uint8Array {
    const crc = crc32Of(bytes);
    const recorded = this.manifest.shards[index]!.crc32;
    if (crc !== recorded) throw new DatabaseError(this.shardPath(index), `corrupt shard ${index}: checksum ${hex(crc)} but the manifest records ${hex(recorded)}`);
    return bytes;
  }

  /**
   * Saves shards (each with its bytes) and the manifest changes `update` makes, atomically as a
   * whole: new files first, then the manifest that names them, then the old files go.
   */
  save(shards: Array<{ index: number; bytes: Uint8Array }>, update: (m: Manifest) => void): void {
    const m: Manifest = structuredClone(this.manifest);
    m.generation++;
    const replaced: string[] = [];
    for (const { index, bytes } of shards) {
      const entry = m.shards[index]!;
      if (bytes.length !== entry.bytes) throw new RangeError(`shard ${index}: ${bytes.length} bytes, expected ${entry.bytes}`);
      const file = `shard-${String(index).padStart(5, '0')}.g${m.generation}.bin`;
      writeFileAtomically(join(this.dir, file), bytes, false);
      if (entry.file !== '') replaced.push(entry.file);
      entry.file = file;
      entry.crc32 = crc32Of(bytes);
    }
    update(m);
    this.writeManifest(m);
    this.manifest = m;
    for (const file of replaced) unlinkSync(join(this.dir, file));
  }

  /**
   * Names shard files that are already written and flushed (by the workers of a cluster solve),
   * with the manifest changes `update` makes, atomically; the files they replace go afterwards.
   * The generation becomes `generation` (the one in the new files' names).
   */
  adopt(files: Array<{ index: number; file: string; crc32: number }>, generation: number, update: (m: Manifest) => void): void {
    const m: Manifest = structuredClone(this.manifest);
    m.generation = generation;
    const replaced: string[] = [];
    for (const { index, file, crc32 } of files) {
      const entry = m.shards[index]!;
      if (!SHARD_FILE.test(file)) throw new RangeError(`shard ${index}: "${file}" is not a shard file name`);
      if (entry.file !== '' && entry.file !== file) replaced.push(entry.file);
      entry.file = file;
      entry.crc32 = crc32;
    }
    update(m);
    this.writeManifest(m);
    this.manifest = m;
    for (const file of replaced) rmSync(join(this.dir, file), { force: true });
  }

  /** A band's table from its file into `into` (exactly the band's bytes), checked (size and
   *  CRC-32) as a shard is. */
  loadBand(index: number, into: Uint8Array): Uint8Array {
    const entry = this.manifest.bands!.files[index]!;
    const path = join(this.dir, entry.file);
    refuseIrregular(path, `band ${index}`);
    let size: number;
    try {
      size = statSync(path).size;
    } catch (e) {
      throw new DatabaseError(path, `band ${index} is missing or unreadable (${(e as Error).message})`);
    }
    if (size !== into.length) throw new DatabaseError(path, `band ${index} has ${size} bytes, its groups take ${into.length}`);
    const fd = openStoreFile(path, `band ${index}`);
    try {
      readAt(fd, path, into, 0, `band ${index}`);
    } finally {
      closeSync(fd);
    }
    if (crc32Of(into) !== entry.crc32) throw new DatabaseError(path, `band ${index} fails its CRC-32 check (manifest ${hex(entry.crc32)})`);
    return into;
  }

  /**
   * Commits a round of a band solve atomically: names each step's new band file and the message
   * pack it wrote (all already written and flushed, by this process or a cluster's workers), with
   * the manifest changes `update` makes (the next round), and drops the packs every target of
   * which has now taken them. Replaced and dropped files go once the manifest no longer names
   * them.
   */
  commitBands(steps: BandStepFiles[], update: (m: Manifest) => void): void {
    const m: Manifest = structuredClone(this.manifest);
    const state = m.bands!;
    m.generation++;
    const replaced: string[] = [];
    const added: MessagePack[] = [];
    for (const step of steps) {
      const entry = state.files[step.band]!;
      if (step.table === undefined) {
        // A band the step did not change keeps its file (7x7/4 rewrote 4 GB of unchanged bands
        // in each of its last 6 passes).
        if (entry.file === '') throw new RangeError(`band ${step.band} has no file yet: its step must write one`);
      } else {
        const name = BAND_FILE.exec(step.table.file);
        if (!name || Number(name[1]) !== step.band || Number(name[2]) !== m.generation) throw new RangeError(`band ${step.band}: "${step.table.file}" is not its file of generation ${m.generation}`);
        if (entry.file !== '') replaced.push(entry.file);
        entry.file = step.table.file;
        entry.crc32 = step.table.crc32;
      }
      if (!/^[0-9a-f]{8}$/.test(step.attempt)) throw new RangeError(`band ${step.band}: attempt "${step.attempt}" is not a token`);
      state.attempts[step.band] = step.attempt;
      if (step.pack) added.push(step.pack);
    }
    update(m);
    if (m.bands) {
      // The packs' targets took them in their steps of this round or before (takenAt).
      const schedule = scheduleOf(m.bands);
      const next = m.bands.next;
      const kept: MessagePack[] = [];
      for (const pack of state.messages) {
        if (takenByAll(schedule, pack, next)) replaced.push(pack.file);
        else kept.push(pack);
      }
      m.bands.messages = [...kept, ...added];
    }
    this.writeManifest(m);
    this.manifest = m;
    for (const file of replaced) rmSync(join(this.dir, file), { force: true });
  }

  /** Writes `m` atomically as the manifest, its checksum recorded (in `m` too). */
  private writeManifest(m: Manifest): void {
    m.crc32 = manifestChecksum(m);
    writeFileAtomically(join(this.dir, MANIFEST), Buffer.from(`${JSON.stringify(m, null, 1)}\n`), true);
  }

  /** The rounds of the band solve under way. */
  get schedule(): BandSchedule {
    return scheduleOf(this.manifest.bands!);
  }

  /**
   * Removes files the manifest does not name (a crash between writing a file and the manifest).
   * `keepUnderWay`: not those of the round under way, nor temporary files (a cluster's workers
   * may be writing them now).
   */
  removeLeftovers({ keepUnderWay = false }: { keepUnderWay?: boolean } = {}): string[] {
    const bands = this.manifest.bands;
    const lost = this.lostMessageFiles()[0];
    if (lost) throw new DatabaseError(join(this.dir, MANIFEST), `corrupt manifest: it does not name ${lost.file}, ${lost.why}`);
    const named = new Set([MANIFEST, ...this.manifest.shards.map((s) => s.file), ...(bands ? [...bands.files.map((f) => f.file), ...bands.messages.map((f) => f.file)] : [])]);
    const removed: string[] = [];
    for (const file of readdirSync(this.dir)) {
      if (named.has(file) || !/^(shard-\d+\.g\d+(\.[0-9a-f]+)?\.bin|band-\d+\.g\d+(\.[0-9a-f]+)?\.bin|msg-[0-9a-z.-]+\.msg|manifest\.json)(\.tmp-[0-9a-f-]+)?$/.test(file)) continue;
      if (keepUnderWay && (/\.tmp-[0-9a-f-]+$/.test(file) || this.underWay(file))) continue;
      unlinkSync(join(this.dir, file));
      removed.push(file);
    }
    return removed;
  }

  /** Whether `file` is one the round under way may write: a band file of the next generation, a
   *  message file of a step of this round. */
  private underWay(file: string): boolean {
    const bands = this.manifest.bands;
    if (!bands) return false;
    const band = BAND_FILE.exec(file);
    if (band) return Number(band[2]) > this.manifest.generation;
    const message = parseMessageFileName(file);
    if (!message || message.source >= bands.count) return false;
    return !stepBefore({ pass: message.pass, round: this.schedule.roundOf[message.source]! }, bands.next);
  }

  /**
   * A message pack the manifest does not name is a leftover when its step is in the round under
   * way or an attempt not committed, or when all its targets have taken it since (the deletion
   * after that commit was cut short). Any other holds messages still to be taken that the manifest
   * lost: listed here with why, refused by a resume and by check, never deleted.
   */
  lostMessageFiles(): Array<{ file: string; why: string }> {
    const bands = this.manifest.bands;
    if (!bands) return [];
    const schedule = this.schedule;
    const lost: Array<{ file: string; why: string }> = [];
    const named = new Set(bands.messages.map((f) => f.file));
    for (const file of readdirSync(this.dir)) {
      const m = parseMessageFileName(file);
      if (!m || named.has(file) || m.source >= bands.count) continue;
      const { pass, source } = m;
      if (!stepBefore({ pass, round: schedule.roundOf[source]! }, bands.next)) continue; // the round under way
      if (m.attempt !== bands.attempts[source]) continue; // an attempt not committed (or replaced)
      const targets = packFileTargets(join(this.dir, file), bands.count);
      if (targets === undefined) {
        lost.push({ file, why: 'a message pack of a committed step whose index does not read' });
        continue;
      }
      const waiting = targets.find((t) => !stepBefore(takenAt(schedule, pass, source, t), bands.next));
      if (waiting !== undefined) lost.push({ file, why: `which band ${waiting} has not taken yet` });
    }
    return lost;
  }

  /** A database header (as single files have) for the store's contents, for queries and reports. */
  header(): DatabaseHeader {
    const m = this.manifest;
    const r = m.results;
    return {
      board: m.board,
      pieces: m.pieces,
      rules: m.rules,
      rankingId: m.rankingId,
      stage: m.stage === 'complete' ? 'complete' : m.stage === 'init' ? 'init' : 'checkpoint',
      startValue: r?.startValue ?? 0,
      passes: m.passLog.length,
      storedStates: m.storedStates,
      bodyBytes: m.tableBytes,
      positions: r?.positions ?? 0,
      p1Wins: r?.p1Wins ?? 0,
      p2Wins: r?.p2Wins ?? 0,
      draws: r?.draws ?? 0,
      illegal: r?.illegal ?? 0,
      seconds: m.seconds,
      bodyCrc32: r?.tableCrc32 ?? 0,
      passLog: m.passLog,
      distanceBytes: 0,
      distanceCrc32: 0,
      maxDistance: 0,
    };
  }

  /**
   * A complete store's shards are there: each file present with the size the manifest records,
   * and up to VERIFY_ON_OPEN_BYTES of table (as StoreValues reads whole) each checksum checked
   * and the whole table's against the results', the counts recounted. What a resume of a
   * finished solve checks before it reports the manifest's results.
   */
  checkShardFiles(): void {
    if (this.manifest.tableBytes <= VERIFY_ON_OPEN_BYTES) {
      // Read whole anyway: recounted too, so that a resume never reports counts its shards
      // contradict (a manifest of an earlier version, without a checksum, edited by hand).
      const tally = new TableTally(this.space);
      this.forEachShard((shard, bytes) => tally.add(bytes, shard.firstByte));
      const recorded = this.manifest.results!;
      const recounted = tally.results();
      if (recounted.tableCrc32 !== recorded.tableCrc32) throw new DatabaseError(join(this.dir, MANIFEST), `the shards' table has checksum ${hex(recounted.tableCrc32)}, the manifest's results record ${hex(recorded.tableCrc32)}`);
      if (resultsDiffer(recorded, recounted).length > 0) throw resultsMismatch(this.dir, recorded, recounted, 'its results are not reported');
      return;
    }
    for (const shard of this.layout.shards) {
      let size: number;
      refuseIrregular(this.shardPath(shard.index), `shard ${shard.index}`);
      try {
        size = statSync(this.shardPath(shard.index)).size;
      } catch (e) {
        throw this.unreadable(shard.index, e);
      }
      this.checkShardSize(shard.index, size);
    }
  }

  /** Streams the table shard by shard, in order, through one buffer of the largest shard's size. */
  forEachShard(visit: (shard: Shard, bytes: Uint8Array) => void): void {
    const buffer = new Uint8Array(Math.max(...this.layout.shards.map((s) => s.bytes)));
    for (const shard of this.layout.shards) visit(shard, this.loadShard(shard.index, buffer));
  }
}

function checkManifest(path: string, m: Manifest): void {
  const bad = (what: string) => new DatabaseError(path, `corrupt manifest: ${what}`);
  if (m === null || typeof m !== 'object' || m.format !== FORMAT) throw bad('not a ccheckers store manifest');
  if (m.version !== FORMAT_VERSION) throw new DatabaseError(path, `store format version ${m.version}; this ccheckers reads version ${FORMAT_VERSION}`);
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
    if (!Array.isArray(b.attempts) || b.attempts.length !== b.count || !b.attempts.every((a) => a === '' || /^[0-9a-f]{8}$/.test(a))) throw bad('band solve: attempts');
    b.files.forEach((f, i) => {
      if (typeof f.file !== 'string' || (f.file !== '' && !BAND_FILE.test(f.file))) throw bad(`band ${i} names the file "${String(f.file)}"`);
      if (!isCrc32(f.crc32)) throw bad(`band ${i} has the checksum ${String(f.crc32)}`);
    });
    if (b.messageCoding !== MESSAGE_CODING) {
      // Float64 message files (no messageCoding): a store of a band solve left by an earlier version.
      throw new DatabaseError(path, `a band solve under way whose message files are coded as ${String(b.messageCoding ?? 'float64')}; this ccheckers codes them as ${MESSAGE_CODING}: finish the solve with the version that started it, or start it again`);
    }
    if (b.schedule !== undefined && !SCHEDULE_KINDS.includes(b.schedule)) throw bad(`band solve: schedule ${String(b.schedule)}`);
    // A pack's entry agrees with its file's name; one pack per step.
    if (!Array.isArray(b.messages)) throw bad('band solve: message files');
    for (const pack of b.messages) {
      const problem = packProblem(pack, b.count);
      if (problem !== undefined) throw bad(`band solve: message files: ${problem}`);
    }
    if (new Set(b.messages.map((p) => `${p.pass}-${p.source}`)).size !== b.messages.length) throw bad('band solve: message files: two packs of one step');
    const next = b.next as { pass?: unknown; round?: unknown } | null;
    const schedule = scheduleOf(b);
    if (next === null || typeof next !== 'object' || !Number.isSafeInteger(next.pass) || !Number.isSafeInteger(next.round) || (next.pass as number) < 0 || (next.round as number) < 0 || (next.round as number) >= schedule.rounds.length) {
      throw bad('band solve: next step');
    }
    // A pack the manifest names is of a committed step, and of its source's last committed
    // attempt: its targets have all taken it before the source steps again (commitBands).
    for (const pack of b.messages) {
      const step = { pass: pack.pass, round: schedule.roundOf[pack.source]! };
      if (!stepBefore(step, b.next)) throw bad(`band solve: message files: ${pack.file} is of a step not committed yet`);
      if (parseMessageFileName(pack.file)!.attempt !== b.attempts[pack.source]) throw bad(`band solve: message files: ${pack.file} is not of band ${pack.source}'s committed attempt`);
    }
  }
  if (m.bandSchedule !== undefined && !SCHEDULE_KINDS.includes(m.bandSchedule)) throw bad(`band schedule ${String(m.bandSchedule)}`);
  if (!['init', 'passes', 'finishing', 'complete'].includes(m.stage)) throw bad(`stage ${String(m.stage)}`);
  // A band solve keeps its bands until it writes out the shards (stage finishing).
  if (m.passes === 'bands' && (m.stage === 'init' || m.stage === 'passes') && m.bands === undefined) throw bad(`a band solve at stage ${m.stage} without its bands`);
  if (m.stage === 'complete') checkResults(m.results, bad);
  if (m.id !== undefined && (typeof m.id !== 'string' || !/^[0-9a-f]{16}$/.test(m.id))) throw bad(`store id ${String(m.id)}`);
}

/** A CRC-32 as a manifest records it: an unsigned 32-bit integer. */
export function isCrc32(x: unknown): boolean {
  return Number.isSafeInteger(x) && (x as number) >= 0 && (x as number) < 2 ** 32;
}

/** A complete store's results: counts that add up (as a database file's must), a start value
 *  and a table checksum. */
function checkResults(r: Manifest['results'], bad: (what: string) => DatabaseError): void {
  if (r === null || typeof r !== 'object') throw bad('complete without results');
  const counts = [r.positions, r.p1Wins, r.p2Wins, r.draws, r.illegal];
  if (!counts.every((c) => Number.isSafeInteger(c) && c >= 0)) throw bad('results: counts that are not whole numbers');
  const problem = countsNotAddingUp(r);
  if (problem) throw bad(`results: ${problem}`);
  if (!Number.isSafeInteger(r.startValue) || r.startValue < 0 || r.startValue > 3) throw bad(`results: start value ${String(r.startValue)}`);
  if (!isCrc32(r.tableCrc32)) throw bad(`results: table checksum ${String(r.tableCrc32)}`);
}

/** Writes a file atomically (writeFileAtomic: temporary file, fsync, rename); `syncDir` also
 *  flushes the rename. `tag` makes the temporary name unique where processes of several machines
 *  write one folder. */
export function writeFileAtomically(path: string, data: Uint8Array, syncDir: boolean, tag = String(process.pid)): void {
  writeFileAtomic(path, data, { syncFolder: syncDir, tag });
}

/** writeFileAtomically without blocking the event loop; `data` may come in pieces, written one
 *  after the other. */
export async function writeFileAtomicallyAsync(path: string, data: Uint8Array | readonly Uint8Array[], syncDir: boolean, tag = String(process.pid)): Promise<void> {
  await writeFileAtomicAsync(path, data, { syncFolder: syncDir, tag });
}

/**
 * mkdir -p, one folder at a time from the deepest that exists: Node's recursive mkdirSync loops
 * forever where a folder cannot be made under one that exists (/proc/x: ENOENT).
 */
function makeFolder(dir: string): void {
  const missing: string[] = [];
  for (let at = resolve(dir); !existsSync(at); at = dirname(at)) {
    missing.push(at);
    if (dirname(at) === at) break;
  }
  for (const folder of missing.reverse()) {
    try {
      mkdirSync(folder);
    } catch (e) {
      // made meanwhile by another process: as mkdir -p, fine if it is a folder
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST' || !statSync(folder).isDirectory()) throw e;
    }
  }
}

const PAGE_BYTES = 4096;
const CACHED_PAGES = 256;

/**
 * A complete store read by random access (StoredValues for queries, show, play, serve): the
 * manifest is checked on open; each question reads the 4 KiB page of the shard that holds it
 * (a few stay cached). `ccheckers check --db DIR` verifies the shards' checksums. A table of up to
 * VERIFY_ON_OPEN_BYTES is read whole on open, every shard checked, as a small database file is.
 */
export class StoreValues implements StoredValues {
  readonly header: DatabaseHeader;
  readonly hasDistances = false;
  private readonly fds = new Map<number, number>();
  private readonly pages = new Map<number, Uint8Array>();
  /** The table, where it was read whole on open (not named `table`: SolvedGame takes an object
   *  with a table for a database in memory). */
  private readonly whole: Uint8Array | undefined;

  /** `wholeUpTo`: read the table whole on open up to this size (tests read small ones by page). */
  constructor(
    readonly store: ShardStore,
    { wholeUpTo = VERIFY_ON_OPEN_BYTES }: { wholeUpTo?: number } = {},
  ) {
    if (store.manifest.stage !== 'complete') {
      throw new DatabaseError(join(store.dir, MANIFEST), `holds an unfinished solve (${store.manifest.stage}, ${store.manifest.passLog.length} passes): finish it with solve --resume`);
    }
    this.header = store.header();
    if (store.manifest.tableBytes <= wholeUpTo) {
      const table = new Uint8Array(store.manifest.tableBytes);
      for (const shard of store.layout.shards) store.loadShard(shard.index, table.subarray(shard.firstByte));
      this.whole = table;
    }
  }

  /** Whether answers come from disk (a large store), not from memory. */
  get readsFromDisk(): boolean {
    return this.whole === undefined;
  }

  value(index: number): number {
    if (this.whole) return readValue(this.whole, index);
    const { store } = this;
    const shard = shardOfGroup(store.layout, Math.floor(index / store.space.p2Placements));
    const local = stateByte(index) - shard.firstByte;
    const pageKey = shard.index * 2 ** 32 + Math.floor(local / PAGE_BYTES); // a shard is under 2^44 bytes
    let page = this.pages.get(pageKey);
    if (page) {
      this.pages.delete(pageKey);
    } else {
      page = this.readPage(shard, Math.floor(local / PAGE_BYTES));
      if (this.pages.size >= CACHED_PAGES) this.pages.delete(this.pages.keys().next().value!);
    }
    this.pages.set(pageKey, page);
    return valueInByte(page[local % PAGE_BYTES]!, index);
  }

  distance(): number {
    return NO_DISTANCE; // stores keep no distance tables
  }

  close(): void {
    for (const fd of this.fds.values()) closeSync(fd);
    this.fds.clear();
  }

  private readPage(shard: Shard, page: number): Uint8Array {
    const path = this.store.shardPath(shard.index);
    let fd = this.fds.get(shard.index);
    if (fd === undefined) {
      refuseIrregular(path, `shard ${shard.index}`);
      try {
        fd = openStoreFile(path, `shard ${shard.index}`);
      } catch (e) {
        if (e instanceof DatabaseError) throw e;
        throw new DatabaseError(path, `shard ${shard.index} is missing or unreadable (${(e as NodeJS.ErrnoException).code ?? String(e)})`);
      }
      const size = fstatSync(fd).size;
      if (size !== shard.bytes) {
        closeSync(fd);
        throw new DatabaseError(path, `shard ${shard.index} has ${size} bytes, the manifest records ${shard.bytes}`);
      }
      this.fds.set(shard.index, fd);
    }
    const bytes = new Uint8Array(PAGE_BYTES);
    const want = Math.min(PAGE_BYTES, shard.bytes - page * PAGE_BYTES);
    if (want <= 0 || readSync(fd, bytes, 0, want, page * PAGE_BYTES) !== want) {
      throw new DatabaseError(path, 'the shard is shorter than when it was opened (changed while in use?)');
    }
    return bytes;
  }
}
