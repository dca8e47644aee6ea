/** `ccheckers report`: one HTML page from saved `bench --json` and `solve --json` results of any runs and machines. */
import { readReportInputs } from '../report/report.js';
import { checkReportPath, writeReport } from '../report/write.js';

export function reportCommand(o: { from: string[]; html: string }): number {
  checkReportPath(o.html);
  writeReport(o.html, readReportInputs(o.from));
  return 0;
}
