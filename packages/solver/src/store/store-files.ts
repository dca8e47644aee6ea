/**
 * A store's files on disk. Reading them safely: by name, refused unless a regular file (a FIFO
 * would hang the open, a symbolic link may lead out of the store), in reads of at most
 * IO_CHUNK_BYTES. Writing them atomically (atomic-file.ts), and making the store's folder.
 */
import { type Stats, closeSync, constants, existsSync, fstatSync, lstatSync, mkdirSync, openSync, readSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { writeFileAtomic, writeFileAtomicAsync } from '../atomic-file.js';
import { DatabaseError, IO_CHUNK_BYTES } from '../database.js';

/** How the store's files are opened for reading: a FIFO put in place of one since it was checked
 *  (refuseIrregular) does not hang the open, and a symbolic link is not followed. */
export const STORE_READ_FLAGS = constants.O_RDONLY | (constants.O_NONBLOCK ?? 0) | (constants.O_NOFOLLOW ?? 0);

function kindOf(stat: Stats): string {
  if (stat.isFIFO()) return 'a FIFO (named pipe)';
  if (stat.isSymbolicLink()) return 'a symbolic link';
  if (stat.isDirectory()) return 'a directory';
  if (stat.isSocket()) return 'a socket';
  if (stat.isCharacterDevice() || stat.isBlockDevice()) return 'a device';
  return 'of an unknown kind';
}

export function irregular(path: string, what: string, stat: Stats): DatabaseError {
  return new DatabaseError(path, `${what} is ${kindOf(stat)}, not a regular file`);
}

/**
 * Refuses by name a file of the store (`what`: "shard 3", "the manifest") that is there but is not
 * a regular file, before anything opens it for reading: a FIFO (or a device) would hang the open
 * and the reads, and a symbolic link (lstat: the link itself) may lead anywhere, out of the store.
 * A missing file is left to the open, whose error each caller words.
 */
export function refuseIrregular(path: string, what: string): void {
  const stat = lstatSync(path, { throwIfNoEntry: false });
  if (stat !== undefined && !stat.isFile()) throw irregular(path, what, stat);
}

/** Opens a file of the store for reading, refused by name (a DatabaseError) unless it is a regular
 *  file; call refuseIrregular first, so that a FIFO is refused before any open. An open that fails
 *  throws as openSync does (the callers word ENOENT and the like). */
export function openStoreFile(path: string, what: string): number {
  const fd = openSync(path, STORE_READ_FLAGS);
  const stat = fstatSync(fd);
  if (!stat.isFile()) {
    closeSync(fd);
    throw irregular(path, what, stat);
  }
  return fd;
}

/** Fills `bytes` from `fd` at `position`, in chunks a single read can take; a file too short is a
 *  DatabaseError naming `what`. */
export function readAt(fd: number, path: string, bytes: Uint8Array, position: number, what: string): void {
  for (let at = 0; at < bytes.length; ) {
    const got = readSync(fd, bytes, at, Math.min(IO_CHUNK_BYTES, bytes.length - at), position + at);
    if (got === 0) throw new DatabaseError(path, `${what} is shorter than the manifest records`);
    at += got;
  }
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
export function makeFolder(dir: string): void {
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
