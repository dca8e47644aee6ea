/**
 * Where a solve writes its database, made safe: the path is checked before any work (a regular
 * file or nothing; a folder that takes new files), held by a lock file for the whole solve, and
 * checked again when the result is put in place, so that nothing a user has there (a device, a
 * folder, a file that appeared meanwhile, another solve's output) is ever replaced by surprise.
 */
import { randomBytes } from 'node:crypto';
import { type Stats, closeSync, constants, fstatSync, linkSync, lstatSync, openSync, readFileSync, readSync, readdirSync, renameSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { CCheckersError } from '@ccheckers/core';
import { hostOf, thisMachine } from './machine.js';
import { MANIFEST } from './store/manifest-name.js';

export class OutputPathError extends CCheckersError {
  constructor(message: string) {
    super('E_USAGE', message);
  }
}

/** What a non-regular file is, for messages. */
function kindOf(st: Stats): string {
  if (st.isDirectory()) return 'a directory';
  if (st.isSymbolicLink()) return 'a symbolic link';
  if (st.isCharacterDevice() || st.isBlockDevice()) return 'a device';
  if (st.isFIFO()) return 'a named pipe';
  if (st.isSocket()) return 'a socket';
  return 'not a regular file';
}

function problem(code: string | undefined, path: string): string {
  const folder = dirname(path);
  switch (code) {
    case 'ENOENT':
      return `the folder ${folder} does not exist or takes no new files`;
    case 'ENOTDIR':
      return `${folder} is not a folder`;
    case 'EACCES':
    case 'EPERM':
    case 'EROFS':
      return `cannot create files in ${folder} (${code})`;
    case 'ENAMETOOLONG':
      return `the file name is too long (${Buffer.byteLength(basename(path))} bytes; the solve also writes it with .ckpt.tmp-PID appended, and names stop at 255 bytes)`;
    default:
      return `cannot write there (${code ?? 'unknown error'})`;
  }
}

/** The file at `path`, or undefined where there is none; other failures are OutputPathErrors. */
function statOrNothing(path: string): Stats | undefined {
  try {
    return lstatSync(path);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    throw new OutputPathError(`${path}: ${problem(code, path)}`);
  }
}

/**
 * Refuses, before any work, an output path that is not a regular file or absent (even with
 * `force`, which replaces regular files only), an existing file without `force`, and a folder
 * where the solve could not create its files (tried with the longest name it will use).
 */
export function checkOutputPath(path: string, force: boolean): void {
  if (path === '') throw new OutputPathError('--out needs a file name');
  refuseStoreFolder(path);
  const st = statOrNothing(path);
  if (st && !st.isFile()) {
    throw new OutputPathError(`${path} is ${kindOf(st)}, not a regular file: the output must go to a new file or replace a regular one`);
  }
  if (st && !force) throw new OutputPathError(`${path} already exists (use --force to overwrite it)`);
  // Its checkpoint too: a solve replaces or removes PATH.ckpt, and --force must not take a
  // folder, link or named pipe for a checkpoint it may replace.
  let checkpoint: Stats | undefined;
  try {
    checkpoint = lstatSync(`${path}.ckpt`);
  } catch {
    // None, or a name too long and the like: the probe below says what, for PATH itself.
  }
  if (checkpoint && !checkpoint.isFile()) {
    throw new OutputPathError(`${path}.ckpt is ${kindOf(checkpoint)}, not a checkpoint: move it away or choose another output file`);
  }
  const probe = `${path}.ckpt.tmp-${process.pid}`;
  try {
    closeSync(openSync(probe, 'wx'));
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== 'EEXIST') throw new OutputPathError(`${path}: ${problem(code, path)}`);
  }
  unlinkSync(probe);
}

/**
 * Refuses an output in the folder of a ccheckers store (it holds manifest.json), even with
 * --force: the store's solves remove the files there that their manifest does not name and that
 * are named as theirs are (a leftover of a crash), so a file put there could be lost.
 */
export function refuseStoreFolder(path: string): void {
  if (inStoreFolder(path)) throw new OutputPathError(`${path} is in ${dirname(path)}, a ccheckers store (it holds ${MANIFEST}): a store's folder holds its own files only; choose another folder`);
}

/** Whether `path` is in the folder of a store: one holding manifest.json (as any kind of file;
 *  an unreadable folder: no, and the checks after this one say what is wrong with it). */
export function inStoreFolder(path: string): boolean {
  try {
    lstatSync(join(dirname(path), MANIFEST));
    return true;
  } catch {
    return false;
  }
}

/** Checks again just before the result replaces or takes `path` (something may have appeared). */
export function checkOutputStill(path: string, force: boolean, keptIn: string): void {
  const st = statOrNothing(path);
  if (!st) return;
  if (!st.isFile()) throw new OutputPathError(`${path} became ${kindOf(st)} during the solve; the database is kept in ${keptIn}`);
  if (!force) throw new OutputPathError(`${path} appeared during the solve (use --force to overwrite it); the database is kept in ${keptIn}`);
}

export interface LockOptions {
  /** Take a lock held by a solve of another machine (whose process cannot be seen from here):
   *  for when that solve is known to be gone. A live process of this machine is never displaced. */
  breakLock?: boolean;
}

/**
 * A lock on the output path for the duration of a solve: `PATH.lock` holding the process id and,
 * on the next line, the machine (thisMachine(): host, boot, pid namespace), since a folder may be
 * shared by several machines (NFS) and a pid means something only where it runs. It appears
 * with its content (written to a file of this process, then hard-linked to the lock name, which
 * fails where a lock exists), so no one ever reads a half-made lock. A lock of this machine whose
 * process is gone (a solve killed with -9) is moved aside and taken over, and so are the
 * temporary files such a solve left (PATH.tmp-PID, PATH.ckpt.tmp-PID: up to a table's size). A
 * lock of another machine is held until released there or taken with `breakLock`. A lock with
 * a pid alone (made by an older ccheckers) is taken as one of this machine.
 */
export function lockOutput(path: string, options: LockOptions = {}): () => void {
  const lock = `${path}.lock`;
  const here = thisMachine();
  const content = `${process.pid}\n${here}\n`;
  // Random too: a process of another machine sharing the folder may have the same pid.
  const tag = `${process.pid}-${randomBytes(4).toString('hex')}`;
  const mine = `${lock}.${tag}`;
  try {
    writeFileSync(mine, content);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOSPC' || code === 'EDQUOT') throw e; // the CLI says what to do on a full disk
    throw new OutputPathError(`cannot take the lock ${lock}: ${problem(code, lock)}`);
  }
  try {
    for (let attempt = 0; attempt < 5; attempt++) {
      try {
        try {
          linkSync(mine, lock);
        } catch (e) {
          const code = (e as NodeJS.ErrnoException).code;
          // No hard links here (FAT, exFAT, some network mounts): an exclusive create instead.
          if (code === 'EPERM' || code === 'ENOTSUP' || code === 'EOPNOTSUPP' || code === 'ENOSYS') writeFileSync(lock, content, { flag: 'wx' });
          else throw e;
        }
        removeLeftovers(path);
        return () => {
          try {
            if (readLock(lock) === content) unlinkSync(lock);
          } catch {} // gone, or not a lock any more (left as it is)
        };
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code !== 'EEXIST') throw new OutputPathError(`${lock}: ${problem(code, lock)}`);
      }
      const owner = ownerOf(lock); // refuses a lock that is not a regular file
      if (owner === undefined) continue; // gone meanwhile: try again
      const elsewhere = owner.machine !== undefined && owner.machine !== here;
      if (elsewhere) {
        if (!options.breakLock) {
          const host = hostOf(owner.machine!);
          const which = host === hostOf(here) ? `host ${host} (another boot or pid namespace of this host; process ${owner.pid})` : `host ${host} (process ${owner.pid})`;
          throw new OutputPathError(`a solve on ${which} is writing ${path}; wait for it, or if that solve is really gone, --break-lock takes the lock`);
        }
      } else {
        if (owner.pid === process.pid) throw new OutputPathError(`this process is already writing ${path} (another solve to the same file)`);
        if (isAlive(owner.pid)) {
          throw new OutputPathError(`another solve (process ${owner.pid}) is writing ${path}; wait for it, or remove ${lock} if that process is not a solve`);
        }
      }
      // Stale, or broken. Move it aside (atomic) and make sure what was moved is that lock: if
      // another solve took the path over in between, its fresh lock goes back.
      const aside = `${lock}.stale-${tag}`;
      try {
        renameSync(lock, aside);
      } catch {
        continue;
      }
      let movedText: string | undefined;
      try {
        movedText = readLock(aside);
      } catch {} // not a regular file: put back, and refused by name on the next attempt
      if (movedText !== owner.text) {
        try {
          linkSync(aside, lock);
        } catch {}
      }
      rmSync(aside, { force: true });
    }
    throw new OutputPathError(`${lock}: could not take the lock (other solves keep starting on ${path})`);
  } finally {
    rmSync(mine, { force: true });
  }
}

interface LockOwner {
  /** NaN for a lock without one (not made by lockOutput). */
  pid: number;
  /** The machine of the pid; undefined in a lock of an older ccheckers (a pid alone). */
  machine?: string;
  /** The whole lock file. */
  text: string;
}

/** Locks are a line or two: a longer file is not one (and is not read whole). */
const LOCK_MAX_BYTES = 4096;

/**
 * The text of a lock file; undefined when it is gone. Anything but a regular file (a FIFO, a
 * symbolic link, a directory, a device, a socket) is an OutputPathError naming it, refused before
 * it is opened (lstat), since opening a FIFO for reading waits for a writer forever; the open is
 * O_NONBLOCK | O_NOFOLLOW and fstat'ed as well, for one that replaced the file after the lstat.
 */
function readLock(lock: string): string | undefined {
  const notLock = (st: Stats) =>
    new OutputPathError(`${lock} is ${kindOf(st)}, not a regular file, so not a lock a solve made: remove it (or move it away) and run again`);
  let st: Stats;
  try {
    st = lstatSync(lock);
  } catch {
    return undefined;
  }
  if (!st.isFile()) throw notLock(st);
  let fd: number;
  try {
    fd = openSync(lock, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0) | (constants.O_NOFOLLOW ?? 0));
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    if (code === 'ELOOP') throw notLock(lstatSync(lock)); // a symbolic link since the lstat
    throw new OutputPathError(`${lock}: cannot read the lock (${code ?? String(e)})`);
  }
  try {
    const opened = fstatSync(fd);
    if (!opened.isFile()) throw notLock(opened);
    const buf = Buffer.alloc(Math.min(opened.size, LOCK_MAX_BYTES));
    let got = 0;
    while (got < buf.length) {
      const n = readSync(fd, buf, got, buf.length - got, got);
      if (n === 0) break;
      got += n;
    }
    return buf.subarray(0, got).toString('utf8');
  } finally {
    closeSync(fd);
  }
}

/** Who holds a lock file; undefined when it is gone. A lock that is not a regular file is an
 *  OutputPathError (readLock). */
function ownerOf(lock: string): LockOwner | undefined {
  const text = readLock(lock);
  if (text === undefined) return undefined;
  const [first = '', second = ''] = text.split('\n');
  const machine = second.trim();
  return { pid: Number.parseInt(first.trim(), 10), ...(machine !== '' ? { machine } : {}), text };
}

/** Temporary files of earlier solves to `path` whose process is gone. */
function removeLeftovers(path: string): void {
  const folder = dirname(path);
  const name = basename(path);
  const pattern = new RegExp(`^${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(\\.ckpt)?\\.tmp-(\\d+)$`);
  let entries: string[];
  try {
    entries = readdirSync(folder);
  } catch {
    return;
  }
  for (const entry of entries) {
    const m = pattern.exec(entry);
    if (m && Number(m[2]) !== process.pid && !isAlive(Number(m[2]))) rmSync(`${folder}/${entry}`, { force: true });
  }
}

function isAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
  return !isZombie(pid);
}

/** A process that has ended but is not yet reaped by its parent (Linux: state Z in
 *  /proc/PID/stat) still takes signals: a solve killed with -9 is one for a moment. */
function isZombie(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8'); // "pid (name) S ...": the state follows the name
    return stat[stat.lastIndexOf(')') + 2] === 'Z';
  } catch {
    return false; // not Linux, or gone
  }
}
