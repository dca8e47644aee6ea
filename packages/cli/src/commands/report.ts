/** `ccheckers report`: one HTML page from saved `bench --json` and `solve --json` results of any runs and machines. */
import { readReportInputs } from '../report/report.js';
import { type ReportPathRules, checkReportPath, writeReport } from '../report/write.js';

export async function reportCommand(o: { from: string[]; html: string; force?: boolean }): Promise<number> {
  const rules: ReportPathRules = { force: o.force === true, keep: o.from.map((path) => ({ path, what: 'one of the --from inputs' })) };
  checkReportPath(o.html, rules);
  await writeReport(o.html, readReportInputs(o.from), rules);
  return 0;
}
