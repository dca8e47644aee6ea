// `node scripts/test-summary.mjs REPORT.json...`: vitest JSON reports (--reporter=json) summed up:
// each test file's seconds, slowest first, the 10 slowest tests, then the line
// "N passed, N failed, N skipped" over all reports (.ci/run ends with it). A report that is missing
// (a run that never wrote one) counts as a failure.
import { existsSync, readFileSync } from 'node:fs';
import { relative } from 'node:path';

let passed = 0;
let failed = 0;
let skipped = 0;
const files = [];
const tests = [];
for (const path of process.argv.slice(2)) {
  if (!existsSync(path)) {
    failed++;
    console.log(`no report at ${path}`);
    continue;
  }
  const r = JSON.parse(readFileSync(path, 'utf8'));
  passed += r.numPassedTests;
  failed += r.numFailedTests;
  skipped += r.numPendingTests + r.numTodoTests;
  for (const f of r.testResults) {
    const name = relative(process.cwd(), f.name);
    files.push({ name, seconds: (f.endTime - f.startTime) / 1000, tests: f.assertionResults.length });
    for (const t of f.assertionResults) if (typeof t.duration === 'number') tests.push({ name: `${name} > ${t.fullName}`, seconds: t.duration / 1000 });
  }
}
const s = (x) => x.toFixed(1).padStart(7);
if (files.length > 0) {
  console.log('\nseconds per test file (slowest first):');
  for (const f of files.sort((a, b) => b.seconds - a.seconds)) console.log(`${s(f.seconds)}  ${f.name} (${f.tests} tests)`);
  console.log('\nthe 10 slowest tests:');
  for (const t of tests.sort((a, b) => b.seconds - a.seconds).slice(0, 10)) console.log(`${s(t.seconds)}  ${t.name}`);
  console.log('');
}
console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);
