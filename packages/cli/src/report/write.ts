/**
 * Where a report page goes, made as safe as a database's --out: the path is checked before any
 * work (a regular file or nothing, --force to replace a file; never a file the command reads or
 * writes, a file of a store folder or a database, not even with --force), checked again when the
 * page is written, and the page appears whole (temporary file, then a link or rename).
 */
import { randomBytes } from 'node:crypto';
import { type Stats, closeSync, constants, fstatSync, lstatSync, openSync, readSync, realpathSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { AtomicTargetExists, MAGIC, MANIFEST, OutputPathError, checkOutputPath, inStoreFolder, writeFileAtomic } from '@ccheckers/solver';
import { UsageError } from '../options.js';
import type { ReportInput } from './report.js';

/** What a page must leave alone, besides what is never replaced (stores, databases). */
export interface ReportPathRules {
  /** Replace an existing regular file (--force). */
  force?: boolean;
  /** Files the command reads or writes, each with what it is for messages ("the --out file"). */
  keep?: Array<{ path: string; what: string }>;
  /** Store folders the command makes or uses (--store): no page goes into one. */
  stores?: string[];
}

/** The path with its folder's symbolic links resolved, as far as the folder exists. */
function canonical(path: string): string {
  const abs = resolve(path);
  try {
    return join(realpathSync(dirname(abs)), basename(abs));
  } catch {
    return abs;
  }
}

function statOf(path: string): Stats | undefined {
  try {
    return statSync(path);
  } catch {
    return undefined;
  }
}

/** Whether two names are the same file: the same name, or (both existing) the same inode. */
function sameFile(a: string, b: string): boolean {
  if (canonical(a) === canonical(b)) return true;
  const sa = statOf(a);
  const sb = statOf(b);
  return sa !== undefined && sb !== undefined && sa.dev === sb.dev && sa.ino === sb.ino;
}

/** Whether a regular file starts with the magic bytes of a ccheckers database (or checkpoint). */
function isDatabase(path: string): boolean {
  let fd: number;
  try {
    // O_NONBLOCK: what is a regular file when looked at may be a named pipe when opened.
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
  } catch {
    return false;
  }
  try {
    if (!fstatSync(fd).isFile()) return false;
    const head = Buffer.alloc(MAGIC.length);
    const n = readSync(fd, head, 0, head.length, 0);
    return n === head.length && head.toString('latin1') === MAGIC;
  } catch {
    return false;
  } finally {
    closeSync(fd);
  }
}

/** Why a page may never go to `abs`, even with --force; undefined where it may. */
function forbidden(abs: string, rules: ReportPathRules): string | undefined {
  for (const k of rules.keep ?? []) {
    if (sameFile(abs, k.path)) return `--html: ${abs} is ${k.what}; choose another file for the page`;
  }
  const folder = canonical(dirname(abs));
  for (const store of rules.stores ?? []) {
    const s = canonical(store);
    if (canonical(abs) === s || `${folder}/`.startsWith(`${s}/`)) return `--html: ${abs} is in the --store folder ${store}; choose a file outside it`;
  }
  if (inStoreFolder(abs)) {
    return `--html: ${abs} is in ${dirname(abs)}, a ccheckers store (it holds ${MANIFEST}); a page never goes into a store, not even with --force`;
  }
  if (isDatabase(abs)) return `--html: ${abs} is a ccheckers database; a page never replaces one, not even with --force`;
  return undefined;
}

/**
 * Refuses, before any work, a page path that is not a regular file or absent, an existing file
 * without `force`, a folder that takes no files, and what `forbidden` names (give writeReport
 * the same rules).
 */
export function checkReportPath(path: string, rules: ReportPathRules = {}): void {
  const abs = resolve(path);
  const why = forbidden(abs, rules);
  if (why) throw new UsageError(why);
  try {
    checkOutputPath(abs, rules.force === true);
  } catch (e) {
    if (e instanceof OutputPathError) {
      const message = e.message.replace(/ \(use --force to overwrite it\)/, ' (use --force to replace it)').replace(/--out/g, '--html');
      throw new UsageError(`--html: ${message}`);
    }
    throw e;
  }
}

/** What makes the page not go in place at the last moment (it is kept in `tmp`). */
function stillRefused(abs: string, rules: ReportPathRules, tmp: string): string | undefined {
  const why = forbidden(abs, rules);
  if (why) return `${why}; the report is kept in ${tmp}`;
  let st: Stats;
  try {
    st = lstatSync(abs);
  } catch {
    return undefined;
  }
  if (!st.isFile()) return `--html: ${abs} is no longer a regular file or absent; the report is kept in ${tmp}`;
  if (!rules.force) return `--html: ${abs} appeared during the work (use --force to replace it); the report is kept in ${tmp}`;
  return undefined;
}

/** A failure after a command printed its one JSON object of results (a --html page refused at
 *  the last moment): said on stderr only, so that stdout keeps exactly one object. main.ts tells
 *  it by `afterResultsPrinted` (importing this module there would bundle main apart from bin). */
export class AfterResultsPrinted extends Error {
  readonly afterResultsPrinted = true;
  constructor(readonly failure: unknown) {
    super((failure as Error)?.message ?? String(failure));
  }
}

/** Writes a page once the results are on stdout as JSON: its failure is an AfterResultsPrinted. */
export async function pageAfterJson(page: () => Promise<void>): Promise<void> {
  try {
    await page();
  } catch (e) {
    throw new AfterResultsPrinted(e);
  }
}

/**
 * Writes the page of `inputs` to `path`, checked again by the rules checkReportPath applied:
 * written to a temporary file of its own first, then linked to the path (which fails where a file
 * appeared meanwhile) or, with --force, renamed over it (writeFileAtomic). A page refused at the
 * last moment is kept under its temporary name.
 */
export async function writeReport(path: string, inputs: ReportInput[], rules: ReportPathRules = {}): Promise<void> {
  // The page's renderer (and d3) loads only for a page: every other run of the CLI starts without it.
  const { renderReport } = await import('./report.js');
  const html = renderReport(inputs);
  const abs = resolve(path);
  try {
    writeFileAtomic(abs, Buffer.from(html, 'utf8'), {
      placement: rules.force ? 'replace' : 'new',
      tag: `${process.pid}-${randomBytes(2).toString('hex')}`, // no longer than checkOutputPath's probe
      check: (tmp) => {
        const why = stillRefused(abs, rules, tmp);
        if (why) throw new UsageError(why);
      },
    });
  } catch (e) {
    if (e instanceof UsageError) throw e;
    if (e instanceof AtomicTargetExists) throw new UsageError(`--html: ${abs} appeared during the work; the report is kept in ${e.tmp}`);
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOSPC' || code === 'EDQUOT') throw e; // the CLI says what to do on a full disk
    throw new UsageError(`--html: cannot write ${abs} (${code ?? String(e)})`);
  }
  process.stderr.write(`report written to ${abs}\n`);
}
