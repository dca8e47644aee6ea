/**
 * Where a solve writes its database, made safe: the path is checked before any work (a regular
 * file or nothing; a folder that takes new files), held by a lock file for the whole solve, and
 * checked again when the result is put in place, so that nothing a user has there (a device, a
 * folder, a file that appeared meanwhile, another solve's output) is ever replaced by surprise.
 */
import { type Stats, closeSync, linkSync, lstatSync, openSync, readFileSync, readdirSync, renameSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import { CCheckersError } from '@ccheckers/core';

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
  const st = statOrNothing(path);
  if (st && !st.isFile()) {
    throw new OutputPathError(`${path} is ${kindOf(st)}, not a regular file: the output must go to a new file or replace a regular one`);
  }
  if (st && !force) throw new OutputPathError(`${path} already exists (use --force to overwrite it)`);
  const probe = `${path}.ckpt.tmp-${process.pid}`;
  try {
    closeSync(openSync(probe, 'wx'));
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== 'EEXIST') throw new OutputPathError(`${path}: ${problem(code, path)}`);
  }
  unlinkSync(probe);
}

/** Checks again just before the result replaces or takes `path` (something may have appeared). */
export function checkOutputStill(path: string, force: boolean, keptIn: string): void {
  const st = statOrNothing(path);
  if (!st) return;
  if (!st.isFile()) throw new OutputPathError(`${path} became ${kindOf(st)} during the solve; the database is kept in ${keptIn}`);
  if (!force) throw new OutputPathError(`${path} appeared during the solve (use --force to overwrite it); the database is kept in ${keptIn}`);
}

/**
 * A lock on the output path for the duration of a solve: `PATH.lock` holding the process id. It
 * appears with its content (written to a file of this process, then hard-linked to the lock
 * name, which fails where a lock exists), so no one ever reads a half-made lock. A lock whose
 * process is gone (a solve killed with -9) is moved aside and taken over, and so are the
 * temporary files such a solve left (PATH.tmp-PID, PATH.ckpt.tmp-PID: up to a table's size).
 */
export function lockOutput(path: string): () => void {
  const lock = `${path}.lock`;
  const mine = `${lock}.${process.pid}`;
  try {
    writeFileSync(mine, `${process.pid}\n`);
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
          if (code === 'EPERM' || code === 'ENOTSUP' || code === 'EOPNOTSUPP' || code === 'ENOSYS') writeFileSync(lock, `${process.pid}\n`, { flag: 'wx' });
          else throw e;
        }
        removeLeftovers(path);
        return () => {
          try {
            if (readFileSync(lock, 'utf8').trim() === String(process.pid)) unlinkSync(lock);
          } catch {}
        };
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code !== 'EEXIST') throw new OutputPathError(`${lock}: ${problem(code, lock)}`);
      }
      const owner = ownerOf(lock);
      if (owner === undefined) continue; // gone meanwhile: try again
      if (owner === process.pid) throw new OutputPathError(`this process is already writing ${path} (another solve to the same file)`);
      if (isAlive(owner)) {
        throw new OutputPathError(`another solve (process ${owner}) is writing ${path}; wait for it, or remove ${lock} if that process is not a solve`);
      }
      // Stale. Move it aside (atomic) and make sure what was moved is that stale lock: if another
      // solve took the path over in between, its fresh lock goes back.
      const aside = `${lock}.stale-${process.pid}`;
      try {
        renameSync(lock, aside);
      } catch {
        continue;
      }
      if (!Object.is(ownerOf(aside), owner)) {
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

/** The process id in a lock file; NaN for one without (not made by lockOutput); undefined when gone. */
function ownerOf(lock: string): number | undefined {
  try {
    return Number.parseInt(readFileSync(lock, 'utf8').trim(), 10);
  } catch {
    return undefined;
  }
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
