/** Writing a report file: refused where it cannot go, written whole (temporary name, rename). */
import { renameSync, rmSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { OutputPathError, checkOutputPath } from '@ccheckers/solver';
import { UsageError } from '../options.js';
import { type ReportInput, renderReport } from './report.js';

/** Refuses, before any work, a report path that is not a regular file or a new one in a folder
 *  that takes files (the same checks as a database's --out, replacing a regular file). */
export function checkReportPath(path: string): void {
  try {
    checkOutputPath(resolve(path), true);
  } catch (e) {
    if (e instanceof OutputPathError) throw new UsageError(`--html: ${e.message.replace(/--out/g, '--html')}`);
    throw e;
  }
}

export function writeReport(path: string, inputs: ReportInput[]): void {
  const html = renderReport(inputs);
  const tmp = `${path}.tmp-${process.pid}`;
  try {
    writeFileSync(tmp, html);
    renameSync(tmp, path);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw new UsageError(`--html ${path}: cannot write it (${(e as NodeJS.ErrnoException).code ?? String(e)})`);
  }
  process.stderr.write(`report written to ${path}\n`);
}
