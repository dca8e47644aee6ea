/** Writing a report file: refused where it cannot go, written whole (temporary name, rename). */
import { renameSync, writeFileSync } from 'node:fs';
import { UsageError } from '../options.js';
import { type ReportInput, renderReport } from './report.js';

export function writeReport(path: string, inputs: ReportInput[]): void {
  const html = renderReport(inputs);
  const tmp = `${path}.tmp-${process.pid}`;
  try {
    writeFileSync(tmp, html);
    renameSync(tmp, path);
  } catch (e) {
    throw new UsageError(`--html ${path}: cannot write it (${(e as NodeJS.ErrnoException).code ?? String(e)})`);
  }
  process.stderr.write(`report written to ${path}\n`);
}
