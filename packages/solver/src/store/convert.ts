/**
 * A store and a single database file, each made from the other (streamed, in the memory of one
 * shard), and a store's checksums verified: `ccheckers convert` and `ccheckers check --db DIR`.
 */
import { closeSync, constants, existsSync, fstatSync, lstatSync, openSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { CCheckersError, StateSpace, tsMessageRuns, variant } from '@ccheckers/core';
import { crc32Of } from '../crc.js';
import { DatabaseError, HEADER_BYTES, hex, openForReading, readAll, readHeader, readPassLog, writeDatabase } from '../database.js';
import { type DatabaseFile, type StoredValues, openDatabase, streamBytes } from '../database-file.js';
import { type GameCounts, TableTally } from '../state-index.js';
import { bandBytes, bandLayout } from './band-layout.js';
import { checkShardCount, shardLayout } from './layout.js';
import { messageFileProblem } from './message-pack-reader.js';
import { lockOutput } from '../output-file.js';
import { type BandState, MANIFEST, type StoreResults, resultsDiffer, resultsMismatch } from './manifest.js';
import { ShardStore } from './shard-store.js';
import { StoreValues } from './store-values.js';

/** Whether `path` is a store's folder (else it is taken for a database file). */
export function isStore(path: string): boolean {
  return existsSync(path) && statSync(path).isDirectory();
}

/** Opens a database by random access: a single file, or a store's folder. */
export function openSolved(path: string): (StoredValues & { close(): void }) | DatabaseFile {
  return isStore(path) ? new StoreValues(ShardStore.open(path)) : openDatabase(path);
}

/** Writes a complete store as one database file at `out` (atomically; 'new' unless `force`). */
export function exportStore(dir: string, out: string, options: { force?: boolean } = {}): void {
  const store = ShardStore.open(dir);
  const m = store.manifest;
  if (m.stage !== 'complete' || !m.results) throw new DatabaseError(join(dir, MANIFEST), `holds an unfinished solve (${m.stage}): finish it with solve --resume first`);
  const header = store.header();
  writeDatabase(
    out,
    header,
    {
      length: m.tableBytes,
      crc32: m.results.tableCrc32,
      stream(write) {
        // The header's counts are the manifest's, so they are recounted from the shards as they
        // go: a mismatch ends the export before the file is put in place.
        const tally = new TableTally(store.space);
        store.forEachShard((shard, bytes) => {
          tally.add(bytes, shard.firstByte);
          write(bytes, shard.firstByte);
        });
        // The shards were each checked on load; the whole must also be what the manifest says.
        const recounted = tally.results();
        if (recounted.tableCrc32 !== m.results!.tableCrc32) throw new DatabaseError(dir, `the shards' table has checksum ${hex(recounted.tableCrc32)}, the manifest records ${hex(m.results!.tableCrc32)}`);
        if (resultsDiffer(m.results!, recounted).length > 0) throw resultsMismatch(dir, m.results!, recounted, 'no database file was written');
      },
    },
    undefined,
    options.force ? 'replace-file' : 'new',
  );
}

/** Makes a store in `dir` (new) from a complete database file (its distance table is not kept). */
export function importDatabase(path: string, dir: string, options: { shards?: number } = {}): ShardStore {
  const fd = openForReading(path);
  try {
    const read = readHeader(path, fd);
    readPassLog(path, fd, read);
    const { header } = read;
    if (header.stage !== 'complete') throw new DatabaseError(path, `is a ${header.stage} checkpoint: only a complete database converts to a store`);
    const v = variant(header.board, header.pieces);
    const space = new StateSpace(v);
    if (options.shards !== undefined) checkShardCount(space, options.shards);
    const layout = shardLayout(space, options.shards ?? Math.max(1, Math.ceil(space.tableBytes / 2 ** 28)));
    const store = ShardStore.create(dir, v, header.rules, layout);
    const buffer = new Uint8Array(Math.max(...layout.shards.map((s) => s.bytes)));
    let crc = 0;
    for (const shard of layout.shards) {
      const bytes = buffer.subarray(0, shard.bytes);
      readAll(fd, bytes, HEADER_BYTES + shard.firstByte);
      crc = crc32Of(bytes, crc);
      const last = shard.index === layout.shards.length - 1;
      if (last && crc !== header.bodyCrc32) throw new DatabaseError(path, `corrupt body: checksum ${hex(crc)} but the header records ${hex(header.bodyCrc32)}`);
      store.save([{ index: shard.index, bytes }], (m) => {
        m.passLog = header.passLog;
        m.seconds = header.seconds;
        if (!last) return;
        m.stage = 'complete';
        m.results = { positions: header.positions, p1Wins: header.p1Wins, p2Wins: header.p2Wins, draws: header.draws, illegal: header.illegal, startValue: header.startValue, tableCrc32: crc };
      });
    }
    return store;
  } finally {
    closeSync(fd);
  }
}

export interface ShardCheck {
  /** A line's number; a band solve under way lists its band files, then its message files. */
  shard: number;
  kind: 'shard' | 'band' | 'messages';
  file: string;
  bytes: number;
  expected: number;
  actual: number;
  ok: boolean;
  problem?: string;
}

export interface StoreCheckReport {
  path: string;
  stage: string;
  shards: ShardCheck[];
  /** The table's CRC-32 over the shards in order, and the one the manifest records (complete stores). */
  table?: { expected: number; actual: number; ok: boolean };
  recount?: { counts: GameCounts; startValue: number; manifestAgrees: boolean; /** What the manifest records otherwise. */ manifestDiffers: Array<{ field: string; manifest: number; recounted: number }> };
  /** Why a recount asked for was not made. */
  recountSkipped?: string;
  /** 'ok': the manifest's checksum matched (on open; a mismatch throws); 'none': a manifest of an
   *  earlier version, which records none. */
  manifestChecksum: 'ok' | 'none';
  /** With `fix`: the manifest's results were rewritten from the recount (and its checksum
   *  recorded), or why they were not. */
  fixed?: boolean;
  fixSkipped?: string;
}

/**
 * Verifies a store: the manifest (on open: a corrupt, edited or foreign one throws), then every
 * shard's size and checksum, reported one by one (a missing or truncated shard is a failed line,
 * not a throw), the whole table's checksum, and with `recount` the counts and start value. With
 * `fix` (a recount too), a complete store whose shards are all sound gets its manifest's results
 * rewritten from them where they differ or the manifest has no checksum (as save() writes it:
 * atomically, under the store's lock).
 */
export function checkStore(dir: string, options: { recount?: boolean; fix?: boolean; onProgress?: (fraction: number) => void } = {}): StoreCheckReport {
  const store = ShardStore.open(dir);
  const manifestChecksum = store.manifest.crc32 === undefined ? 'none' : 'ok';
  const recount = options.recount === true || options.fix === true;
  const m = store.manifest;
  const space = store.space;
  const tally = new TableTally(space, { count: recount });
  let whole = true;
  const buffer = new Uint8Array(Math.max(...store.layout.shards.map((s) => s.bytes)));
  const shards: ShardCheck[] = [];
  if (m.bands) {
    const report: StoreCheckReport = { path: dir, stage: m.stage, shards: checkBandFiles(store, m.bands), manifestChecksum };
    if (recount) report.recountSkipped = 'the solve is under way in bands, its shards not written yet (solve --resume finishes it)';
    if (options.fix) report.fixSkipped = 'the solve is under way: its results are not recorded yet (solve --resume finishes it)';
    return report;
  }
  for (const shard of store.layout.shards) {
    const entry = m.shards[shard.index]!;
    const line: ShardCheck = { shard: shard.index, kind: 'shard', file: entry.file, bytes: shard.bytes, expected: entry.crc32, actual: 0, ok: false };
    if (entry.file === '') {
      line.ok = m.stage === 'init';
      line.problem = 'not written yet';
      whole = false;
    } else {
      try {
        const bytes = store.loadShard(shard.index, buffer);
        line.actual = entry.crc32;
        line.ok = true;
        tally.add(bytes, shard.firstByte);
      } catch (e) {
        if (!(e instanceof CCheckersError)) throw e;
        const actual = /checksum ([0-9a-f]{8})/.exec(e.message);
        if (actual) line.actual = Number.parseInt(actual[1]!, 16);
        line.problem = e.message;
        whole = false;
      }
    }
    shards.push(line);
    options.onProgress?.((shard.index + 1) / store.layout.shards.length);
  }
  const report: StoreCheckReport = { path: dir, stage: m.stage, shards, manifestChecksum };
  if (m.results && whole) report.table = { expected: m.results.tableCrc32, actual: tally.tableCrc32, ok: tally.tableCrc32 === m.results.tableCrc32 };
  if (recount && !whole) report.recountSkipped = 'not every shard could be read';
  if (recount && whole) {
    const recounted = tally.results();
    const { startValue, tableCrc32: _, ...counts } = recounted;
    // The table's CRC-32 has a line of its own (report.table).
    const manifestDiffers = m.results === undefined ? [] : resultsDiffer(m.results, recounted).filter((d) => d.field !== 'tableCrc32');
    report.recount = { counts, startValue, manifestAgrees: manifestDiffers.length === 0, manifestDiffers };
  }
  if (options.fix) {
    if (m.stage !== 'complete' || m.results === undefined) {
      report.fixSkipped = `the solve is not finished (${m.stage}): its results are not recorded yet (solve --resume finishes it)`;
    } else if (!whole) {
      report.fixSkipped = 'not every shard is sound: the results cannot be recounted';
    } else if (!report.recount!.manifestAgrees || !report.table!.ok || manifestChecksum === 'none') {
      rewriteResults(store, tally.results());
      report.fixed = true;
    }
  }
  return report;
}

/**
 * Rewrites a complete store's results (and so records the manifest's checksum) under its lock,
 * atomically as save() does; refused if the manifest changed since `checked` read it.
 */
function rewriteResults(checked: ShardStore, results: StoreResults): void {
  const unlock = lockOutput(join(checked.dir, MANIFEST));
  try {
    const store = ShardStore.open(checked.dir);
    if (store.manifest.generation !== checked.manifest.generation) throw new DatabaseError(join(checked.dir, MANIFEST), 'changed while it was checked: run check again');
    store.save([], (m) => {
      m.results = results;
    });
  } finally {
    unlock();
  }
}

/**
 * A band solve under way: its shards are not written yet, so the lines are its band files and
 * message files (size and CRC-32 each), numbered on from the bands.
 */
function checkBandFiles(store: ShardStore, state: BandState): ShardCheck[] {
  const layout = bandLayout(store.space, state.count);
  const lines: ShardCheck[] = [];
  const buffer = new Uint8Array(8 * Math.ceil(Math.max(2 ** 16, ...layout.groupsOf.map((g) => bandBytes(store.space, g.length))) / 8));
  state.files.forEach((f, band) => {
    const bytes = bandBytes(store.space, layout.groupsOf[band]!.length);
    const line: ShardCheck = { shard: band, kind: 'band', file: f.file, bytes, expected: f.crc32, actual: f.crc32, ok: true };
    if (f.file === '') {
      line.problem = 'not written yet';
      line.ok = store.manifest.stage === 'init';
    } else {
      try {
        store.loadBand(band, buffer.subarray(0, bytes));
      } catch (e) {
        if (!(e instanceof CCheckersError)) throw e;
        line.ok = false;
        line.problem = e.message;
        line.actual = crcOfFile(join(store.dir, f.file));
      }
    }
    lines.push(line);
  });
  // Message files read in pieces through the band buffer (bytes in its first part, messages after),
  // decoded by the TS coding (every backend codes the same bytes).
  const half = Math.floor(buffer.length / 16) * 8;
  const reading = { runs: tsMessageRuns, bytes: buffer.subarray(0, half), messages: new Float64Array(buffer.buffer, buffer.byteOffset + half, half / 8) };
  // A pack's checksum is its directory's (each section's is in the directory): 0 as "actual" where
  // the pack does not check.
  for (const f of state.messages) {
    const problem = messageFileProblem(store.dir, f, state.count, reading);
    const actual = problem === undefined ? f.directoryCrc32 : 0;
    lines.push({ shard: lines.length, kind: 'messages', file: f.file, bytes: f.bytes, expected: f.directoryCrc32, actual, ok: problem === undefined, ...(problem ? { problem } : {}) });
  }
  for (const { file, why } of store.lostMessageFiles()) {
    const path = join(store.dir, file);
    const problem = `not named by the manifest, ${why}: a resume refuses the store`;
    lines.push({ shard: lines.length, kind: 'messages', file, bytes: lstatSync(path).size, expected: 0, actual: crcOfFile(path), ok: false, problem });
  }
  return lines;
}

/** The CRC-32 of a file's bytes as they are (0 where it cannot be read, as for a missing shard, or
 *  is not a regular file: a FIFO would hang the read): what check shows as "actual" next to a
 *  problem. */
function crcOfFile(path: string): number {
  if (lstatSync(path, { throwIfNoEntry: false })?.isFile() !== true) return 0;
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0) | (constants.O_NOFOLLOW ?? 0));
  } catch {
    return 0;
  }
  try {
    let crc = 0;
    streamBytes(fd, 0, fstatSync(fd).size, (chunk) => {
      crc = crc32Of(chunk, crc);
    });
    return crc;
  } finally {
    closeSync(fd);
  }
}
