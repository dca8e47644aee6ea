/**
 * The database file: a 128-byte header, the 2-bit table body, optionally the distance table (one
 * byte per stored state) and the pass log (layout in ../README.md).
 * Files are written to a temporary name, flushed and renamed, so a crash never leaves a
 * half-written database under the real name. Reading checks every header field and both
 * checksums, and names the first thing that is wrong.
 */
import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import { CCheckersError, MAX_DISTANCE, MAX_TYPED_ARRAY_BYTES, RANKING_ID, type RuleMode, StateSpace, TableBytes, type TableLike, tableViews, variant } from '@ccheckers/core';
import { type AtomicWriter, IO_CHUNK_BYTES, writeFileAtomic } from './atomic-file.js';
import { type BodyPieces, eachBodyChunk } from './body-chunks.js';
import { DirectAppender, DirectReader } from './direct-io.js';
import { crc32Of, crc32Zeros } from './crc.js';
import { checkOutputStill } from './output-file.js';
import { type PassRecord, isSeconds, passLogProblem } from './pass-log.js';

export const MAGIC = 'CCHKDB\r\n';
export const FORMAT_VERSION = 2;
/** Version 1 is version 2 without distances (its header bytes 108-123 were zero): still read. */
const READABLE_VERSIONS = [1, 2];
export const HEADER_BYTES = 128;

export type DatabaseStage = 'init' | 'checkpoint' | 'complete';
const STAGES: readonly DatabaseStage[] = ['init', 'checkpoint', 'complete'];
const RULES: readonly RuleMode[] = ['clean', 'published'];

export class DatabaseError extends CCheckersError {
  constructor(path: string, problem: string) {
    super('E_DATABASE', `${path}: ${problem}`);
  }
}

export interface DatabaseHeader {
  board: number;
  pieces: number;
  rules: RuleMode;
  rankingId: number;
  stage: DatabaseStage;
  /** Value code of the start position (see StateSpace); meaningful when complete. */
  startValue: number;
  passes: number;
  storedStates: number;
  bodyBytes: number;
  positions: number;
  p1Wins: number;
  p2Wins: number;
  draws: number;
  illegal: number;
  seconds: number;
  bodyCrc32: number;
  passLog: PassRecord[];
  /** The distance table: its size (0 without one, else one byte per stored state), checksum and
   *  largest value. */
  distanceBytes: number;
  distanceCrc32: number;
  maxDistance: number;
}

export interface Database<T extends TableLike = Uint8Array> {
  header: DatabaseHeader;
  table: T;
  /** Plies to the end per stored state (core's NO_DISTANCE for draws and illegal states). */
  distances?: T;
}

/** A body too large to hold, written piece by piece from elsewhere (a sharded store), with its
 *  checksum known beforehand. */
export interface StreamedBody {
  readonly length: number;
  readonly crc32: number;
  /** Writes the body with `write(bytes, offset)` calls, in any order. */
  stream(write: (bytes: Uint8Array, offset: number) => void): void;
}

/** A body in memory: a Uint8Array, or a TableBytes of any size (its views are its pieces). */
export type Body = TableLike | BodyPieces | StreamedBody;
export type { BodyPieces };

function asPieces(body: Body): BodyPieces | StreamedBody {
  return body instanceof Uint8Array || body instanceof TableBytes ? { length: body.length, pieces: tableViews(body) } : body;
}

function isStreamed(body: BodyPieces | StreamedBody): body is StreamedBody {
  return 'stream' in body;
}

/** Header bytes 100-107: the pass log's size and checksum. */
export function encodeHeader(h: DatabaseHeader, logBytes: number, logCrc: number): Uint8Array {
  const buf = new Uint8Array(HEADER_BYTES);
  const dv = new DataView(buf.buffer);
  buf.set(Buffer.from(MAGIC, 'latin1'), 0);
  dv.setUint32(8, FORMAT_VERSION, true);
  dv.setUint32(12, HEADER_BYTES, true);
  dv.setUint8(16, h.board);
  dv.setUint8(17, h.pieces);
  dv.setUint8(18, RULES.indexOf(h.rules));
  dv.setUint8(19, h.rankingId);
  dv.setUint8(20, STAGES.indexOf(h.stage));
  dv.setUint8(21, h.startValue);
  dv.setUint32(24, h.passes, true);
  const u64 = (at: number, v: number) => dv.setBigUint64(at, BigInt(v), true);
  u64(32, h.storedStates);
  u64(40, h.bodyBytes);
  u64(48, h.positions);
  u64(56, h.p1Wins);
  u64(64, h.p2Wins);
  u64(72, h.draws);
  u64(80, h.illegal);
  dv.setFloat64(88, h.seconds, true);
  dv.setUint32(96, h.bodyCrc32, true);
  dv.setUint32(100, logBytes, true);
  dv.setUint32(104, logCrc, true);
  u64(108, h.distanceBytes);
  dv.setUint32(116, h.distanceCrc32, true);
  dv.setUint8(120, h.maxDistance);
  dv.setUint32(124, crc32Of(buf.subarray(0, 124)), true);
  return buf;
}

/**
 * How the finished file takes its path: 'replace' whatever regular file is there (checkpoints),
 * 'replace-file' the same but refusing anything else that appeared meanwhile (solve --force),
 * 'new' only where nothing is (a solve without --force: a link, which fails where a file exists).
 * A refusal keeps the finished file under its temporary name and says so.
 */
export type Placement = 'replace' | 'replace-file' | 'new';

/** Writes the database atomically (atomic-file.ts): temporary file, fsync, rename (or link, see
 *  Placement), folder fsync. The header goes last: it holds the checksums, taken of the bytes as
 *  they are written (writeBody). `staging`: memory aligned for writes past the page cache
 *  (direct-io.ts), where the bodies are in memory. */
export function writeDatabase(
  path: string,
  header: Omit<DatabaseHeader, 'bodyCrc32' | 'bodyBytes' | 'distanceBytes' | 'distanceCrc32'>,
  table: Body,
  distances?: Body,
  placement: Placement = 'replace',
  staging?: Uint8Array,
): DatabaseHeader {
  const body = asPieces(table);
  const distanceBody = distances ? asPieces(distances) : undefined;
  // Before any file is made: writeBody takes the pieces as they come.
  for (const b of [body, distanceBody]) if (b && !isStreamed(b)) checkPieces(b);
  const full: DatabaseHeader = {
    ...header,
    bodyBytes: body.length,
    bodyCrc32: 0,
    distanceBytes: distanceBody?.length ?? 0,
    distanceCrc32: 0,
    maxDistance: distanceBody ? header.maxDistance : 0,
  };
  const log = Buffer.from(JSON.stringify(full.passLog), 'utf8');
  // PATH.tmp-PID: the name lockOutput's clean-up of a killed solve knows (output-file.ts).
  writeFileAtomic(
    path,
    (file) => {
      if (staging && !isStreamed(body) && !(distanceBody && isStreamed(distanceBody))) {
        // In order from the file's start, the header (zeros until now) rewritten last.
        const out = new DirectAppender(file.fd, staging);
        try {
          out.appendZeros(HEADER_BYTES);
          full.bodyCrc32 = appendBody(out, body);
          if (distanceBody) full.distanceCrc32 = appendBody(out, distanceBody as BodyPieces);
          out.append(log);
          out.finish();
        } finally {
          out.close();
        }
      } else {
        full.bodyCrc32 = writeBody(file, body, HEADER_BYTES);
        if (distanceBody) full.distanceCrc32 = writeBody(file, distanceBody, HEADER_BYTES + body.length);
        file.write(log, HEADER_BYTES + body.length + (distanceBody?.length ?? 0));
      }
      file.write(encodeHeader(full, log.length, crc32Of(log)), 0);
    },
    {
      tag: String(process.pid),
      placement: placement === 'new' ? 'new' : 'replace',
      ...(placement === 'replace' ? {} : { check: (tmp: string) => checkOutputStill(path, placement === 'replace-file', tmp) }),
    },
  );
  return full;
}

/** A RangeError where a body's pieces overlap, are out of order or end past it. */
function checkPieces(body: BodyPieces): void {
  let at = 0;
  for (const { offset, bytes } of body.pieces) {
    if (offset < at) throw new RangeError('body pieces overlap or are out of order');
    at = offset + bytes.length;
  }
  if (at > body.length) throw new RangeError('body pieces end past the body');
}

/** CRC-32 of a body, the gaps between its pieces as zero bytes. */
export function bodyCrc(body: BodyPieces): number {
  checkPieces(body);
  let crc = 0;
  let at = 0;
  for (const { offset, bytes } of body.pieces) {
    crc = crc32Of(bytes, crc32Zeros(crc, offset - at));
    at = offset + bytes.length;
  }
  return crc32Zeros(crc, body.length - at);
}

/**
 * Writes the pieces (checked: checkPieces) at `position` onwards, IO_CHUNK_BYTES at a time, and
 * returns the body's CRC-32 (bodyCrc's, taken in the same pass over the bytes). Gaps stay holes,
 * and so do chunks of zero bytes (a table in memory is one piece, and pages of it never written
 * are zero: a distance table of 14.7 GiB written after a few layers); the CRC-32 of zeros costs
 * O(log length) (crc32Zeros). A hole at the end is made by extending the file.
 */
function writeBody(file: AtomicWriter, body: BodyPieces | StreamedBody, position: number): number {
  if (isStreamed(body)) {
    file.truncate(position + body.length);
    body.stream((bytes, offset) => file.write(bytes, position + offset));
    return body.crc32;
  }
  let end = 0;
  const crc = eachBodyChunk(body, (chunk, offset) => {
    if (!chunk) return;
    file.write(chunk, position + offset);
    end = offset + chunk.length;
  });
  if (end < body.length) file.truncate(position + body.length);
  return crc;
}

/** writeBody through a DirectAppender: the file is written in order, zeros staged or left holes. */
function appendBody(out: DirectAppender, body: BodyPieces): number {
  return eachBodyChunk(body, (chunk, _offset, length) => (chunk ? out.append(chunk) : out.appendZeros(length)));
}

export { IO_CHUNK_BYTES };

/**
 * Opens a database file for reading: a FIFO does not hang the open, and anything but a regular
 * file is refused by name.
 */
export function openForReading(path: string): number {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (e) {
    throw new DatabaseError(path, `cannot read the file (${(e as NodeJS.ErrnoException).code ?? String(e)})`);
  }
  const stat = fstatSync(fd);
  if (!stat.isFile()) {
    closeSync(fd);
    throw new DatabaseError(path, stat.isDirectory() ? 'is a directory, not a database file' : 'is not a regular file');
  }
  return fd;
}

/** The checked header of an open file, with what the decoded header does not carry. */
export interface HeaderRead {
  header: DatabaseHeader;
  /** The 128 bytes as read. */
  head: Uint8Array;
  size: number;
  logBytes: number;
  logCrc32: number;
}

/** Reads and checks the header, and the file's size against it. */
export function readHeader(path: string, fd: number): HeaderRead {
  const size = fstatSync(fd).size;
  if (size < HEADER_BYTES) {
    // Shorter than a header: a database cut short starts with the magic bytes, anything else is not one.
    const start = new Uint8Array(Math.min(size, MAGIC.length));
    readAll(fd, start, 0);
    const magic = Buffer.from(MAGIC, 'latin1');
    if (size === 0 || !magic.subarray(0, start.length).equals(start)) throw new DatabaseError(path, `not a ccheckers database (${size} bytes${size === 0 ? '' : ', without its magic bytes'})`);
    throw new DatabaseError(path, `truncated: ${size} bytes, but the header alone is ${HEADER_BYTES}`);
  }
  const head = new Uint8Array(HEADER_BYTES);
  readAll(fd, head, 0);
  const header = decodeHeader(path, head);
  const dv = new DataView(head.buffer);
  const logBytes = dv.getUint32(100, true);
  const expected = HEADER_BYTES + header.bodyBytes + header.distanceBytes + logBytes;
  if (size < expected) throw new DatabaseError(path, `truncated: ${size} bytes, the header announces ${expected}`);
  if (size > expected) throw new DatabaseError(path, `${size - expected} unexpected bytes after the end of the database`);
  return { header, head, size, logBytes, logCrc32: dv.getUint32(104, true) };
}

/** Reads and checks the pass log into `read.header.passLog`. */
export function readPassLog(path: string, fd: number, read: HeaderRead): void {
  const { header } = read;
  const log = new Uint8Array(read.logBytes);
  readAll(fd, log, HEADER_BYTES + header.bodyBytes + header.distanceBytes);
  if (crc32Of(log) !== read.logCrc32) throw new DatabaseError(path, 'corrupt pass log: checksum mismatch');
  parsePassLog(path, log, header);
}

/** The pass log of a file's bytes into `header.passLog`, checked as passLogProblem does (a
 *  DatabaseError naming the file where it is not one: its checksum proves only that it is what
 *  was written), and against the header: a complete database's log, where it has one, holds a
 *  record per pass, numbered from 1 (a checkpoint's may end with the pass under way:
 *  solve-checkpoint.ts). Files from before the log have none, or an empty one once converted to a
 *  store and back. */
export function parsePassLog(path: string, bytes: Uint8Array, header: DatabaseHeader): void {
  let log: unknown;
  try {
    log = JSON.parse(Buffer.from(bytes).toString('utf8'));
  } catch {
    throw new DatabaseError(path, 'corrupt pass log: not JSON');
  }
  const problem = passLogProblem(log);
  if (problem) throw new DatabaseError(path, `corrupt pass log: ${problem}`);
  const records = log as PassRecord[];
  if (header.stage === 'complete' && records.length > 0 && (records.length !== header.passes || records.some((r, i) => r.pass !== i + 1))) {
    throw new DatabaseError(path, `corrupt pass log: ${records.length} record(s) for the header's ${header.passes} passes`);
  }
  header.passLog = records;
}

/** Refuses a body (or distance table) whose checksum is not the one its header records. */
export function checkPartCrc(path: string, part: 'body' | 'distance table', actual: number, recorded: number): void {
  if (actual !== recorded) throw new DatabaseError(path, `corrupt ${part}: checksum ${hex(actual)} but the header records ${hex(recorded)}`);
}

/**
 * Reads and checks a database. `table` is allocated by `allocate` (e.g. on a SharedArrayBuffer)
 * once the header has been checked, so a bad header costs no memory; so is the distance table,
 * where the file has one, unless `withDistances` is false (then it is skipped unread). A table
 * past 4 GiB needs an `allocate` that gives TableBytes (the default gives one Uint8Array).
 */
export function readDatabase(path: string, allocate?: (bytes: number) => Uint8Array, withDistances?: boolean): Database;
export function readDatabase<T extends TableLike>(path: string, allocate: (bytes: number) => T, withDistances?: boolean, staging?: Uint8Array): Database<T>;
export function readDatabase(
  path: string,
  allocate: (bytes: number) => TableLike = oneTypedArray(path),
  withDistances = true,
  staging?: Uint8Array,
): Database<TableLike> {
  const fd = openForReading(path);
  const direct = staging && new DirectReader(fd, staging);
  try {
    const read = readHeader(path, fd);
    const { header } = read;
    const table = allocate(header.bodyBytes);
    readTable(fd, table, HEADER_BYTES, direct);
    checkPartCrc(path, 'body', tableCrc32(table), header.bodyCrc32);
    let distances: TableLike | undefined;
    if (header.distanceBytes > 0 && withDistances) {
      distances = allocate(header.distanceBytes);
      readTable(fd, distances, HEADER_BYTES + header.bodyBytes, direct);
      checkPartCrc(path, 'distance table', tableCrc32(distances), header.distanceCrc32);
    }
    readPassLog(path, fd, read);
    return { header, table, ...(distances ? { distances } : {}) };
  } finally {
    direct?.close();
    closeSync(fd);
  }
}

/** readDatabase's allocator by default: one Uint8Array, refusing what it cannot hold. */
function oneTypedArray(path: string): (bytes: number) => Uint8Array {
  return (bytes) => {
    if (bytes > MAX_TYPED_ARRAY_BYTES) {
      throw new DatabaseError(path, `a table of ${bytes} bytes does not fit in one typed array (at most ${MAX_TYPED_ARRAY_BYTES} bytes in Node 20): open it with openDatabase, which reads by random access`);
    }
    return new Uint8Array(bytes);
  };
}

/** Reads a table from `position` on, view by view (each in fs calls of at most IO_CHUNK_BYTES),
 *  past the page cache where `direct` can. */
export function readTable(fd: number, into: TableLike, position: number, direct?: DirectReader): void {
  for (const { offset, bytes } of tableViews(into)) if (!direct?.read(bytes, position + offset)) readAll(fd, bytes, position + offset);
}

/** CRC-32 of a table of any size, view by view. */
export function tableCrc32(table: TableLike): number {
  let crc = 0;
  for (const { bytes } of tableViews(table)) crc = crc32Of(bytes, crc);
  return crc;
}

/** Checks and decodes the 128 header bytes (every field against the variant it names). */
export function decodeHeader(path: string, head: Uint8Array): DatabaseHeader {
  const dv = new DataView(head.buffer);
  if (Buffer.from(head.subarray(0, 8)).toString('latin1') !== MAGIC) throw new DatabaseError(path, 'not a ccheckers database (bad magic bytes)');
  const version = dv.getUint32(8, true);
  if (dv.getUint32(124, true) !== crc32Of(head.subarray(0, 124))) throw new DatabaseError(path, 'corrupt header: checksum mismatch');
  if (!READABLE_VERSIONS.includes(version)) {
    throw new DatabaseError(path, `format version ${version} is not supported (this build reads versions ${READABLE_VERSIONS.join(' and ')})`);
  }
  if (dv.getUint32(12, true) !== HEADER_BYTES) throw new DatabaseError(path, `header size ${dv.getUint32(12, true)} (expected ${HEADER_BYTES})`);
  const board = dv.getUint8(16);
  const pieces = dv.getUint8(17);
  let space: StateSpace;
  try {
    space = new StateSpace(variant(board, pieces));
  } catch (e) {
    throw new DatabaseError(path, `invalid variant in header: ${(e as Error).message}`);
  }
  const rules = RULES[dv.getUint8(18)];
  if (!rules) throw new DatabaseError(path, `unknown rule mode ${dv.getUint8(18)} in header`);
  const rankingId = dv.getUint8(19);
  if (rankingId !== RANKING_ID) throw new DatabaseError(path, `ranking ${rankingId} is not supported (this build uses ranking ${RANKING_ID})`);
  const stage = STAGES[dv.getUint8(20)];
  if (!stage) throw new DatabaseError(path, `unknown stage ${dv.getUint8(20)} in header`);
  const u64 = (at: number) => Number(dv.getBigUint64(at, true));
  // The game's counts: exact doubles, or refused (a forged header past 2^53 would be rounded).
  const count = (at: number, name: string) => {
    const c = dv.getBigUint64(at, true);
    if (c > BigInt(Number.MAX_SAFE_INTEGER)) throw new DatabaseError(path, `header says ${c} ${name}, past what is counted exactly (2^53)`);
    return Number(c);
  };
  const header: DatabaseHeader = {
    board,
    pieces,
    rules,
    rankingId,
    stage,
    startValue: dv.getUint8(21),
    passes: dv.getUint32(24, true),
    storedStates: u64(32),
    bodyBytes: u64(40),
    positions: count(48, 'positions'),
    p1Wins: count(56, 'P1 wins'),
    p2Wins: count(64, 'P2 wins'),
    draws: count(72, 'draws'),
    illegal: count(80, 'illegal'),
    seconds: dv.getFloat64(88, true),
    bodyCrc32: dv.getUint32(96, true),
    passLog: [],
    distanceBytes: u64(108),
    distanceCrc32: dv.getUint32(116, true),
    maxDistance: dv.getUint8(120),
  };
  if (header.storedStates !== space.states) {
    throw new DatabaseError(path, `header says ${header.storedStates} stored states, but ${space.variant.name} has ${space.states}`);
  }
  if (header.bodyBytes !== space.tableBytes) {
    throw new DatabaseError(path, `header says ${header.bodyBytes} body bytes, but ${space.variant.name} needs ${space.tableBytes}`);
  }
  if (header.distanceBytes !== 0 && header.distanceBytes !== space.states) {
    throw new DatabaseError(path, `header says ${header.distanceBytes} distance bytes, but ${space.variant.name} needs 0 or ${space.states}`);
  }
  if (header.startValue > 3) throw new DatabaseError(path, `unknown start value ${header.startValue} in header (0-3: draw, P2 wins, P1 wins, illegal)`);
  // Above it lie the marks of a table being laid: a query's bound on every distance it reads.
  if (stage === 'complete' && header.maxDistance > MAX_DISTANCE) throw new DatabaseError(path, `header says the farthest distance is ${header.maxDistance} plies, past ${MAX_DISTANCE}`);
  if (!isSeconds(header.seconds)) throw new DatabaseError(path, `header says ${header.seconds} seconds of solving`);
  const problem = stage === 'complete' ? countsNotAddingUp(header) ?? positionsNotTheGame(header, space) : undefined;
  if (problem) throw new DatabaseError(path, `inconsistent counts: ${problem}`);
  return header;
}

/** How a solved table's counts fail to add up (the wins, draws and illegal states are all the
 *  positions), or undefined: the check a database header and a store's results both pass. */
export function countsNotAddingUp(c: { positions: number; p1Wins: number; p2Wins: number; draws: number; illegal: number }): string | undefined {
  // Summed exactly: doubles past 2^53 would let 2^53 + 1 add up as 2^53.
  const sum = BigInt(c.p1Wins) + BigInt(c.p2Wins) + BigInt(c.draws) + BigInt(c.illegal);
  return sum === BigInt(c.positions) ? undefined : `wins, draws and illegal add up to ${sum}, not ${c.positions}`;
}

/** Whether a complete file's positions are its variant's: both sides to move, every placement
 *  of P1 with every one of P2 on the cells left. */
export function positionsNotTheGame(c: { positions: number }, space: StateSpace): string | undefined {
  const positions = 2n * BigInt(space.p1Placements) * BigInt(space.p2Placements);
  return BigInt(c.positions) === positions ? undefined : `${c.positions} positions, where ${space.variant.name} has ${positions}`;
}

export function readAll(fd: number, into: Uint8Array, position: number): void {
  for (let at = 0; at < into.length; ) {
    const n = readSync(fd, into, at, Math.min(into.length - at, IO_CHUNK_BYTES), position + at);
    if (n === 0) throw new Error('unexpected end of file');
    at += n;
  }
}

export function hex(n: number): string {
  return `0x${n.toString(16).padStart(8, '0')}`;
}
