/**
 * Files that appear whole or not at all, the one way every writer of ccheckers writes them
 * (databases and checkpoints, store manifests and shards, report pages): a temporary file in the
 * same folder (`PATH.tmp-TAG`), positioned writes of any size in calls of at most
 * IO_CHUNK_BYTES, fsync of the file, then the rename over the path (or, where nothing may be
 * replaced, a hard link, which fails where the path is taken), then fsync of the folder, so that
 * after a crash the path holds the old file or the new one, and the new one survives a power cut
 * once the call returned.
 *
 * An error while the file is written removes the temporary file. A complete file that may not
 * take its path (the `check` refused, or the path was taken meanwhile) is kept under its
 * temporary name, and the error says where: it may be the result of hours of work.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, constants, copyFileSync, fsyncSync, ftruncateSync, linkSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { type FileHandle, open as openFile, rename as renameFile, rm as removeFile } from 'node:fs/promises';
import { dirname } from 'node:path';

/** One fs call moves at most 2 GiB (and a smaller call keeps memory and latency low): the
 *  largest single read or write of ccheckers. */
export const IO_CHUNK_BYTES = 2 ** 26;

export interface AtomicFileOptions {
  /** 'replace' (default): rename over whatever file is at the path. 'new': only where nothing is
   *  (a hard link; on a filesystem without them, `check` once more and a rename). */
  placement?: 'replace' | 'new';
  /** Flush the folder once the file has its name (default true). false where a later write in
   *  the same folder flushes it (a store's shards, named by the manifest written after them). */
  syncFolder?: boolean;
  /** The temporary name is `PATH.tmp-TAG` (default: the process id and 8 random hex digits). A
   *  given tag replaces a leftover temporary file of the same name. */
  tag?: string;
  /** Start from a copy of this file (a reflink where the filesystem has them): the writes change
   *  the copy. */
  copyOf?: string;
  /** Called with the complete temporary file right before it takes the path (again before the
   *  rename where the folder has no hard links, and when the link found the path taken): throw
   *  to refuse, which keeps the file under its temporary name (say so in the error). */
  check?: (tmp: string) => void;
  /** Flush the file before it takes its name (default true). false only for files whose loss
   *  a crash may cost, that are made again then (a shared step's proofs: proof-exchange.ts). */
  flush?: boolean;
  /** Permission bits of a new file (default 0o666, less the umask). */
  mode?: number;
  /** The largest single write (default IO_CHUNK_BYTES; tests make it small). */
  maxChunkBytes?: number;
}

/** The temporary file while it is written. */
export interface AtomicWriter {
  readonly tmp: string;
  readonly fd: number;
  /** Writes all of `data` at `position`, in calls of at most maxChunkBytes. */
  write(data: Uint8Array, position: number): void;
  /** Sets the file's length (a longer file ends in a hole of zeros). */
  truncate(length: number): void;
}

/** The path was taken while the file was written: the file is kept under its temporary name. */
export class AtomicTargetExists extends Error {
  readonly code = 'EEXIST';
  constructor(
    readonly path: string,
    readonly tmp: string,
  ) {
    super(`${path} appeared meanwhile; the new file is kept in ${tmp}`);
  }
}

/** A refusal that keeps the complete file: the check's own error, or the path taken. */
class Kept extends Error {
  constructor(readonly error: unknown) {
    super('kept');
  }
}

/** Writes all of `data` at `position` of `fd`, in calls of at most `maxChunk` bytes (each call
 *  may write less than asked: the loop goes on from where it stopped). */
export function writeAllAt(fd: number, data: Uint8Array, position: number, maxChunk = IO_CHUNK_BYTES, write: typeof writeSync = writeSync): void {
  for (let at = 0; at < data.length; ) at += write(fd, data, at, Math.min(data.length - at, maxChunk), position + at);
}

/** writeAllAt without blocking the event loop. */
export async function writeAllAtAsync(file: FileHandle, data: Uint8Array, position: number, maxChunk = IO_CHUNK_BYTES): Promise<void> {
  for (let at = 0; at < data.length; ) at += (await file.write(data, at, Math.min(data.length - at, maxChunk), position + at)).bytesWritten;
}

/** The temporary name a write of `path` uses. */
export function temporaryName(path: string, tag?: string): string {
  return `${path}.tmp-${tag ?? `${process.pid}-${randomBytes(4).toString('hex')}`}`;
}

/** Flushes a folder's entries (a rename or link in it) to the disk. */
export function syncFolder(dir: string): void {
  let fd: number;
  try {
    fd = openSync(dir, constants.O_RDONLY);
  } catch (e) {
    if (unsupported(e)) return;
    throw e;
  }
  try {
    fsyncSync(fd);
  } catch (e) {
    // Some filesystems cannot flush a folder (EINVAL): the rename is as durable as they make it.
    if (!unsupported(e)) throw e;
  } finally {
    closeSync(fd);
  }
}

function unsupported(e: unknown): boolean {
  const code = (e as NodeJS.ErrnoException).code;
  return code === 'EINVAL' || code === 'ENOTSUP' || code === 'EOPNOTSUPP' || code === 'EISDIR' || code === 'EACCES' || code === 'EPERM';
}

function noHardLinks(code: string | undefined): boolean {
  return code === 'EPERM' || code === 'ENOTSUP' || code === 'EOPNOTSUPP' || code === 'ENOSYS';
}

/** Opens the temporary file: a new one (a copy of `copyOf` where given). */
function openTemporary(tmp: string, options: AtomicFileOptions): number {
  if (options.copyOf !== undefined) {
    copyFileSync(options.copyOf, tmp, constants.COPYFILE_FICLONE);
    return openSync(tmp, 'r+');
  }
  if (options.tag !== undefined) rmSync(tmp, { force: true }); // a leftover of this tag
  return openSync(tmp, 'wx', options.mode ?? 0o666);
}

/** The complete, flushed temporary file takes the path (see AtomicFileOptions.placement). */
function place(path: string, tmp: string, options: AtomicFileOptions): void {
  const check = () => {
    try {
      options.check?.(tmp);
    } catch (e) {
      throw new Kept(e);
    }
  };
  check();
  if (options.placement !== 'new') {
    renameSync(tmp, path);
    return;
  }
  try {
    linkSync(tmp, path); // atomic: fails if anything took the path since the check
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') {
      check();
      throw new Kept(new AtomicTargetExists(path, tmp));
    }
    if (!noHardLinks(code)) throw e;
    // A filesystem without hard links (FAT, exFAT, some network mounts): check once more and
    // rename, which leaves a moment in which a file appearing at `path` would be replaced.
    check();
    renameSync(tmp, path);
    return;
  }
  rmSync(tmp, { force: true });
}

/**
 * Writes the file at `path` atomically (see the top of this file): `fill` is the bytes, pieces
 * written one after the other, or a function that writes the temporary file (positioned writes,
 * holes by truncate).
 */
export function writeFileAtomic(path: string, fill: Uint8Array | readonly Uint8Array[] | ((file: AtomicWriter) => void), options: AtomicFileOptions = {}): void {
  const tmp = temporaryName(path, options.tag);
  const maxChunk = options.maxChunkBytes ?? IO_CHUNK_BYTES;
  try {
    const fd = openTemporary(tmp, options);
    try {
      if (typeof fill === 'function') {
        fill({ tmp, fd, write: (data, position) => writeAllAt(fd, data, position, maxChunk), truncate: (length) => ftruncateSync(fd, length) });
      } else {
        let position = 0;
        for (const piece of fill instanceof Uint8Array ? [fill] : fill) {
          writeAllAt(fd, piece, position, maxChunk);
          position += piece.length;
        }
      }
      if (options.flush !== false) fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    place(path, tmp, options);
  } catch (e) {
    if (e instanceof Kept) throw e.error;
    rmSync(tmp, { force: true });
    throw e;
  }
  if (options.syncFolder !== false) syncFolder(dirname(path));
}

/** writeFileAtomic of bytes (or pieces written one after the other) without blocking the
 *  event loop while they are written. */
export async function writeFileAtomicAsync(path: string, data: Uint8Array | readonly Uint8Array[], options: Omit<AtomicFileOptions, 'copyOf'> = {}): Promise<void> {
  const tmp = temporaryName(path, options.tag);
  const maxChunk = options.maxChunkBytes ?? IO_CHUNK_BYTES;
  try {
    if (options.tag !== undefined) await removeFile(tmp, { force: true });
    const file = await openFile(tmp, 'wx', options.mode ?? 0o666);
    try {
      let position = 0;
      for (const piece of data instanceof Uint8Array ? [data] : data) {
        await writeAllAtAsync(file, piece, position, maxChunk);
        position += piece.length;
      }
      await file.sync();
    } finally {
      await file.close();
    }
    if (options.placement === 'new' || options.check !== undefined) place(path, tmp, options);
    else await renameFile(tmp, path);
  } catch (e) {
    if (e instanceof Kept) throw e.error;
    await removeFile(tmp, { force: true });
    throw e;
  }
  if (options.syncFolder !== false) syncFolder(dirname(path));
}
