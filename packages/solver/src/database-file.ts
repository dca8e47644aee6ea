/**
 * Databases read by random access, without loading the table: a query reads the few bytes it
 * needs (a 3.7 GiB 7x7/4 database answers at once with a small RSS), and `ccheckers check`
 * streams the whole file to verify every checksum and, on request, recount the results.
 */
import { closeSync, fstatSync, readSync, realpathSync, statSync } from 'node:fs';
import {
  NO_DISTANCE,
  StateSpace,
  distanceFits,
  readValue,
  stateByte,
  valueInByte,
  variant,
} from '@ccheckers/core';
import { writeFileAtomic } from './atomic-file.js';
import { crc32Of } from './crc.js';
import {
  type Database,
  type DatabaseHeader,
  DatabaseError,
  HEADER_BYTES,
  type HeaderRead,
  IO_CHUNK_BYTES,
  checkPartCrc,
  encodeHeader,
  openForReading,
  parsePassLog,
  readAll,
  readHeader,
  readPassLog,
} from './database.js';
import { type GameCounts, TableCounter, startStateIndex } from './state-index.js';

/** The values of a solved table, wherever they are kept (SolvedGame reads through this). */
export interface StoredValues {
  readonly header: DatabaseHeader;
  /** The file or store they were read from, for messages (none: a solve's own table). */
  readonly path?: string;
  /** Whether a distance table is stored (else distance() is NO_DISTANCE everywhere). */
  readonly hasDistances: boolean;
  /** Whether each value costs a read from disk (then distances are computed on demand only
   *  over small reachable sets: see SolvedGame). */
  readonly readsFromDisk?: boolean;
  /** The whole value table, where it is held in memory (a small database); else undefined. */
  heldTable?(): Uint8Array | undefined;
  /** 2-bit value code of stored state `index`. */
  value(index: number): number;
  /** Plies to the end of stored state `index`, NO_DISTANCE for none. */
  distance(index: number): number;
}

/** A database loaded whole (readDatabase, or a solve's table) as StoredValues. */
export function inMemoryValues(db: Database): StoredValues {
  const { table, distances } = db;
  return {
    header: db.header,
    hasDistances: distances !== undefined,
    heldTable: () => (table instanceof Uint8Array ? table : undefined),
    value: (index) => readValue(table, index),
    distance: (index) => (distances ? distances[index]! : NO_DISTANCE),
  };
}

/** Bodies up to this size are checksummed when opened (a fraction of a second) and kept in
 *  memory; larger ones are read by page and checked by `ccheckers check`. */
export const VERIFY_ON_OPEN_BYTES = 2 ** 26;

const PAGE_BYTES = 4096;
const CACHED_PAGES = 256;

/**
 * A database file opened for random access. The header and the pass log are checked when it is
 * opened, and so are the body and distance checksums of a small database (VERIFY_ON_OPEN_BYTES);
 * a larger body is read a 4 KiB page at a time as questions need it (a few pages stay cached:
 * the children of a position lie in one group).
 */
export class DatabaseFile implements StoredValues {
  readonly header: DatabaseHeader;
  readonly hasDistances: boolean;
  /** Whether the body and distance checksums were verified when the file was opened. */
  readonly verifiedOnOpen: boolean;
  private fd: number;
  private readonly size: number;
  private readonly pages = new Map<number, Uint8Array>();

  constructor(readonly path: string) {
    this.fd = openForReading(path);
    try {
      const read = readHeader(path, this.fd);
      const { header } = read;
      this.header = header;
      this.size = read.size;
      readPassLog(path, this.fd, read);
      this.hasDistances = header.distanceBytes > 0;
      this.verifiedOnOpen = header.bodyBytes + header.distanceBytes <= VERIFY_ON_OPEN_BYTES;
      if (this.verifiedOnOpen) {
        // Small enough to checksum on open, and so to keep: questions are then answered from memory.
        const body = new Uint8Array(header.bodyBytes + header.distanceBytes);
        readAll(this.fd, body, HEADER_BYTES);
        checkPartCrc(path, 'body', crc32Of(body.subarray(0, header.bodyBytes)), header.bodyCrc32);
        checkPartCrc(path, 'distance table', crc32Of(body.subarray(header.bodyBytes)), header.distanceCrc32);
        this.body = body;
      }
    } catch (e) {
      closeSync(this.fd);
      throw e;
    }
  }

  /** Body and distance table, where the file is small enough to be held (verifiedOnOpen). */
  private body: Uint8Array | undefined;

  /** Whether answers come from disk (a large database), not from memory. */
  get readsFromDisk(): boolean {
    return this.body === undefined;
  }

  heldTable(): Uint8Array | undefined {
    return this.body?.subarray(0, this.header.bodyBytes);
  }

  value(index: number): number {
    if (this.body) return readValue(this.body, index);
    return valueInByte(this.byteAt(HEADER_BYTES + stateByte(index)), index);
  }

  distance(index: number): number {
    if (!this.hasDistances) return NO_DISTANCE;
    if (this.body) return this.body[this.header.bodyBytes + index]!;
    return this.byteAt(HEADER_BYTES + this.header.bodyBytes + index);
  }

  close(): void {
    if (this.fd >= 0) closeSync(this.fd);
    this.fd = -1;
  }

  private byteAt(position: number): number {
    const page = Math.floor(position / PAGE_BYTES);
    let bytes = this.pages.get(page);
    if (bytes) {
      this.pages.delete(page); // most recently used last
    } else {
      if (this.fd < 0) throw new Error(`${this.path} is closed`);
      bytes = new Uint8Array(PAGE_BYTES);
      const want = Math.min(PAGE_BYTES, this.size - page * PAGE_BYTES);
      // A short read means the file changed under us (truncated): never answer from zeros.
      if (want <= 0 || readSync(this.fd, bytes, 0, want, page * PAGE_BYTES) !== want) {
        throw new DatabaseError(this.path, 'the file is shorter than when it was opened (changed while in use?)');
      }
      if (this.pages.size >= CACHED_PAGES) this.pages.delete(this.pages.keys().next().value!);
    }
    this.pages.set(page, bytes);
    return bytes[position - page * PAGE_BYTES]!;
  }
}

/** Opens a database file by random access (see DatabaseFile). */
export function openDatabase(path: string): DatabaseFile {
  return new DatabaseFile(path);
}

/** Streams `bytes` bytes from `position` in chunks, with each chunk's offset from `position`. */
export function streamBytes(fd: number, position: number, bytes: number, visit: (chunk: Uint8Array, offset: number) => void): void {
  const buffer = new Uint8Array(Math.min(IO_CHUNK_BYTES, Math.max(1, bytes)));
  for (let at = 0; at < bytes; at += buffer.length) {
    const chunk = buffer.subarray(0, Math.min(buffer.length, bytes - at));
    readAll(fd, chunk, position + at);
    visit(chunk, at);
  }
}

export interface ChecksumResult {
  part: 'header' | 'body' | 'distances' | 'pass log';
  bytes: number;
  expected: number;
  actual: number;
  ok: boolean;
}

export interface CheckReport {
  path: string;
  header: DatabaseHeader;
  checksums: ChecksumResult[];
  /** With recount: the counts and start value recomputed from the body (and, with distances, the
   *  farthest distance in the distance table), and whether the header agrees. */
  recount?: { counts: GameCounts; startValue: number; maxDistance?: number; headerAgrees: boolean; distances?: DistanceRecount };
}

/** What a recount found of a distance table, state by state against the values (distanceFits). */
export interface DistanceRecount {
  /** States whose distance does not fit their value: a damaged or forged table (0 for a sound one). */
  wrong: number;
  /** The first of them, with its value and distance. */
  first?: { index: number; value: number; distance: number };
}

/**
 * Verifies every checksum of a database by streaming it (any size, constant memory) and, with
 * `recount`, recomputes the counts of docs/rules.md section 7 and the start value from the body.
 * Throws DatabaseError for a file that is not a readable database at all (bad header, wrong
 * size); a checksum mismatch is reported, not thrown.
 */
export function checkDatabase(path: string, options: { recount?: boolean; onProgress?: (fraction: number) => void } = {}): CheckReport {
  const fd = openForReading(path);
  try {
    const { header, head, size, logCrc32 } = readHeader(path, fd);
    const space = options.recount ? new StateSpace(variant(header.board, header.pieces)) : undefined;
    const counter = space ? new TableCounter(space) : undefined;
    const total = size - HEADER_BYTES;
    let done = 0;
    const sum = (position: number, bytes: number, each?: (chunk: Uint8Array, offset: number) => void) => {
      let crc = 0;
      streamBytes(fd, position, bytes, (chunk, offset) => {
        crc = crc32Of(chunk, crc);
        each?.(chunk, offset);
        done += chunk.length;
        options.onProgress?.(total === 0 ? 1 : done / total);
      });
      return crc;
    };
    const result = (part: ChecksumResult['part'], bytes: number, expected: number, actual: number): ChecksumResult => ({
      part,
      bytes,
      expected,
      actual,
      ok: expected === actual,
    });
    const checksums = [
      result('header', HEADER_BYTES, new DataView(head.buffer).getUint32(124, true), crc32Of(head.subarray(0, 124))),
      result('body', header.bodyBytes, header.bodyCrc32, sum(HEADER_BYTES, header.bodyBytes, counter && ((chunk, offset) => counter.add(chunk, offset)))),
    ];
    // Each distance against its state's value and the header's farthest distance (a checksum
    // recomputed by a forger says nothing), read beside it: a distance past the header's is
    // wrong, not a reason for --fix to raise the bound. And the farthest distance (the plies
    // `info` and `query` report as the longest game), which the header's must be.
    // (A checkpoint's table is being laid: it holds marks, and no farthest distance yet.)
    let maxDistance = 0;
    const distances: DistanceRecount = { wrong: 0 };
    let valueBytes: Uint8Array | undefined;
    const recountDistances = (chunk: Uint8Array, offset: number) => {
      if (header.stage !== 'complete') return;
      valueBytes ??= new Uint8Array(Math.ceil(IO_CHUNK_BYTES / 4) + 1);
      const firstByte = stateByte(offset);
      const chunkValues = valueBytes.subarray(0, stateByte(offset + chunk.length - 1) - firstByte + 1);
      readAll(fd, chunkValues, HEADER_BYTES + firstByte);
      for (let i = 0; i < chunk.length; i++) {
        const index = offset + i;
        const d = chunk[i]!;
        const value = valueInByte(chunkValues[stateByte(index) - firstByte]!, index);
        if (!distanceFits(value, d, header.maxDistance)) {
          if (distances.wrong++ === 0) distances.first = { index, value, distance: d };
        } else if (d !== NO_DISTANCE && d > maxDistance) {
          maxDistance = d;
        }
      }
    };
    if (header.distanceBytes > 0) {
      checksums.push(result('distances', header.distanceBytes, header.distanceCrc32, sum(HEADER_BYTES + header.bodyBytes, header.distanceBytes, counter && recountDistances)));
    }
    const logAt = HEADER_BYTES + header.bodyBytes + header.distanceBytes;
    const log = result('pass log', size - logAt, logCrc32, sum(logAt, size - logAt));
    checksums.push(log);
    if (log.ok) {
      // Its checksum says it is what was written, not that it is a pass log (a forged file).
      const bytes = new Uint8Array(size - logAt);
      readAll(fd, bytes, logAt);
      parsePassLog(path, bytes, header);
    }
    const report: CheckReport = { path, header, checksums };
    if (space && counter) {
      const counts = counter.gameCounts();
      const startIndex = startStateIndex(space);
      const startByte = new Uint8Array(1);
      readAll(fd, startByte, HEADER_BYTES + stateByte(startIndex));
      const startValue = valueInByte(startByte[0]!, startIndex);
      const headerAgrees =
        header.stage !== 'complete' ||
        (header.positions === counts.positions &&
          header.p1Wins === counts.p1Wins &&
          header.p2Wins === counts.p2Wins &&
          header.draws === counts.draws &&
          header.illegal === counts.illegal &&
          header.startValue === startValue &&
          (header.distanceBytes === 0 || header.maxDistance === maxDistance));
      const withDistances = header.distanceBytes > 0 && header.stage === 'complete';
      report.recount = { counts, startValue, ...(withDistances ? { maxDistance, distances } : {}), headerAgrees };
    }
    return report;
  } finally {
    closeSync(fd);
  }
}

/**
 * Rewrites the header of a complete database with recounted results, atomically: a copy of the
 * file (a reflink where the filesystem has them) gets the new header, is flushed and renamed over
 * the original (atomic-file.ts), so a crash leaves either the old file or the new one.
 */
export function rewriteCounts(given: string, counts: GameCounts, startValue: number, maxDistance?: number): DatabaseHeader {
  // The file itself, not a symbolic link to it (a rename over the link would replace the link
  // with a copy and leave the file's wrong header as it was).
  const path = realpathSync(given);
  const fd = openForReading(path);
  let read: HeaderRead;
  try {
    read = readHeader(path, fd);
  } finally {
    closeSync(fd);
  }
  const { header } = read;
  if (header.stage !== 'complete') throw new DatabaseError(path, `is a ${header.stage} checkpoint: its header carries no counts to fix`);
  const fixed: DatabaseHeader = { ...header, ...counts, startValue, ...(maxDistance !== undefined && header.distanceBytes > 0 ? { maxDistance } : {}) };
  const size = statSync(path).size;
  writeFileAtomic(
    path,
    (file) => {
      file.write(encodeHeader(fixed, read.logBytes, read.logCrc32), 0);
      if (fstatSync(file.fd).size !== size) throw new DatabaseError(path, 'the copy has another size than the original');
    },
    { copyOf: path, tag: String(process.pid) },
  );
  return fixed;
}
