/**
 * Where a solve writes its database, made safe: the path is checked before any work (a regular
 * file or nothing; a folder that takes new files), held by a lock file for the whole solve, and
 * checked again when the result is put in place, so that nothing a user has there (a device, a
 * folder, a file that appeared meanwhile, another solve's output) is ever replaced by surprise.
 */
import { type Stats, closeSync, lstatSync, openSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
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
    throw new OutputPathError(`${path} is ${kindOf(st)}, not a regular file: the database must go to a new file or replace a regular one`);
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
 * A lock on the output path for the duration of a solve: `PATH.lock` holding the process id,
 * created exclusively. A lock whose process is gone (a solve killed with -9) is taken over.
 */
export function lockOutput(path: string): () => void {
  const lock = `${path}.lock`;
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(lock, `${process.pid}\n`, { flag: 'wx' });
      return () => {
        try {
          if (readFileSync(lock, 'utf8').trim() === String(process.pid)) unlinkSync(lock);
        } catch {}
      };
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code !== 'EEXIST') throw new OutputPathError(`${lock}: ${problem(code, lock)}`);
      const owner = Number(readFileSync(lock, 'utf8').trim());
      if (Number.isInteger(owner) && owner > 0 && owner !== process.pid && isAlive(owner)) {
        throw new OutputPathError(`another solve (process ${owner}) is writing ${path}; wait for it, or remove ${lock} if that process is not a solve`);
      }
      unlinkSync(lock); // stale: its process is gone
    }
  }
  throw new OutputPathError(`${lock}: could not take the lock`);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}
