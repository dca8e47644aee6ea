/**
 * A sharded store: the 2-bit table of one variant in shard files of whole groups, in a folder,
 * with a manifest (manifest.json, manifest.ts) that names the variant, rules, ranking, shard
 * layout, each shard's file and CRC-32, the stage and the pass log.
 *
 * Crash safety: shard files are never written in place. A shard saved again goes to a new file
 * (its name carries a generation number), is flushed, then the manifest is replaced atomically
 * (temporary file, fsync, rename, fsync of the folder) to point at it, and only then is the old
 * file removed. Whenever the process dies, the manifest on disk names complete files whose CRCs
 * it records; files it does not name are leftovers, removed when the store is opened for writing.
 */
import { closeSync, existsSync, fstatSync, lstatSync, readFileSync, readdirSync, rmSync, statSync, unlinkSync } from 'node:fs';
import { type FileHandle, open as openFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CCheckersError, RANKING_ID, type RuleMode, StateSpace, type Variant, variant } from '@ccheckers/core';
import { crc32Of } from '../crc.js';
import { type DatabaseHeader, DatabaseError, IO_CHUNK_BYTES, hex } from '../database.js';
import { VERIFY_ON_OPEN_BYTES } from '../database-file.js';
import { refuseStoreFolder } from '../output-file.js';
import { TableTally } from '../state-index.js';
import { type BandSchedule, roundOfStep, stepBefore, takenAt } from './band-schedule.js';
import { type Shard, type ShardLayout, layoutOf } from './layout.js';
import { BAND_FILE, type BandStepFiles, MANIFEST, type Manifest, SHARD_FILE, STORE_FORMAT, STORE_FORMAT_VERSION, checkManifest, isAttemptToken, isCrc32, manifestChecksum, newStoreId, resultsDiffer, resultsMismatch, scheduleOf } from './manifest.js';
import { type MessagePack, parseMessageFileName, takenByAll } from './message-pack.js';
import { packFileTargets } from './message-pack-reader.js';
import { parseProofFileName } from './proof-exchange.js';
import { parseClaimFileName } from './slice-claims.js';
import { STORE_READ_FLAGS, irregular, makeFolder, openStoreFile, readAt, refuseIrregular, writeFileAtomically } from './store-files.js';

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
   * it holds a store to `resume`. `given`: how the user named the path ('--store' for a solve,
   * 'target' for convert, which makes new stores only), for the messages.
   */
  static checkPath(dir: string, resume: boolean, given: '--store' | 'target' = '--store'): void {
    if (!resume) refuseStoreFolder(dir);
    if (!existsSync(dir)) return;
    if (!statSync(dir).isDirectory()) throw new CCheckersError('E_USAGE', `${given === 'target' ? 'the target' : '--store'} ${dir} is not a folder`);
    const holdsStore = existsSync(join(dir, MANIFEST));
    if (resume && holdsStore) return;
    // A solve killed before its first save leaves its lock and temporary files only: the folder
    // is as good as empty (a live solve's lock is refused when it is taken).
    if (readdirSync(dir).some((f) => !/^manifest\.json\.lock(\.[0-9a-z-]+)?$|\.tmp-[0-9a-f-]+$/.test(f))) {
      throw new CCheckersError(
        'E_USAGE',
        holdsStore
          ? given === 'target'
            ? `${dir} already holds a store: convert makes a new store, in an empty or absent folder`
            : `${dir} already holds a store: use --resume to continue its solve, or choose another --store`
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
      format: STORE_FORMAT,
      version: STORE_FORMAT_VERSION,
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
      if (!isAttemptToken(step.attempt)) throw new RangeError(`band ${step.band}: attempt "${step.attempt}" is not a token`);
      if (step.part === undefined) state.attempts[step.band] = step.attempt;
      else ((state.sliceAttempts ??= Array.from({ length: state.count }, () => []))[step.band]!)[step.part] = step.attempt;
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
      const ours = /^(shard-\d+\.g\d+(\.[0-9a-f]+)?\.bin|band-\d+\.g\d+(\.[0-9a-f]+)?\.bin|proof-b\d+\.g\d+\.w\d+\.[0-9a-f]{8}\.\d+\.bin|msg-[0-9a-z.-]+\.msg|manifest\.json)(\.tmp-[0-9a-f-]+)?$/.test(file) || parseClaimFileName(file) !== undefined;
      if (named.has(file) || !ours) continue;
      if (keepUnderWay && (/\.tmp-[0-9a-f-]+$/.test(file) || this.underWay(file))) continue;
      // A store writes regular files only: a folder or link under such a name is someone else's.
      if (!lstatSync(join(this.dir, file)).isFile()) continue;
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
    // A shared step's proofs (proof-exchange.ts) and claims (slice-claims.ts), read until its
    // round is committed.
    const proof = parseProofFileName(file) ?? parseClaimFileName(file);
    if (proof) return proof.generation >= this.manifest.generation;
    const message = parseMessageFileName(file);
    if (!message || message.source >= bands.count) return false;
    return !stepBefore({ pass: message.pass, round: roundOfStep(this.schedule, message.pass, message.source) }, bands.next);
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
      if (!stepBefore({ pass, round: roundOfStep(schedule, pass, source) }, bands.next)) continue; // the round under way
      if (m.attempt !== bands.attempts[source] && !bands.sliceAttempts?.[source]?.includes(m.attempt)) continue; // an attempt not committed (or replaced)
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
