#!/usr/bin/env node
// Solve one variant on each backend in the same run and compare wall time (ratios against the
// first backend) and tables (CRC-32). A benchmark, not a test: run it on a quiet machine.
//   node bench/solve-backends.mjs [board] [pieces] [threads] [backends, comma-separated]
//   node bench/solve-backends.mjs 7 3 2 native-bmi2,native-portable,ts
import { availableParallelism } from 'node:os';
import { variant } from '@ccheckers/core';
import { availableBackends, selectBackend, solve } from '@ccheckers/solver';

const [board = '7', pieces = '2', threads = String(availableParallelism()), list] = process.argv.slice(2);
const backends = list ? await Promise.all(list.split(',').map(async (n) => (await selectBackend(n)).backend)) : await availableBackends();
const v = variant(Number(board), Number(pieces));
const rows = [];
for (const backend of backends) {
  const r = await solve({
    variant: v,
    rules: 'clean',
    backend,
    threads: Number(threads),
    onProgress: (e) => e.phase === 'pass-done' && process.stderr.write(`${backend.name} pass ${e.pass}: +${e.record.newlyProven} in ${e.record.seconds.toFixed(2)} s\n`),
  });
  rows.push(r);
  process.stderr.write(`${backend.name}: ${r.seconds.toFixed(2)} s\n`);
}
const base = rows[0].seconds;
console.log(`${v.name}, ${threads} thread(s)`);
console.log('backend          seconds  ratio  passes  first-pass share  table CRC-32');
for (const r of rows) {
  const first = r.passLog[0];
  const share = first ? `${((100 * first.proven) / r.storedStates).toFixed(1)}%` : '-';
  console.log(
    `${r.backend.padEnd(15)} ${r.seconds.toFixed(2).padStart(8)} ${(r.seconds / base).toFixed(2).padStart(5)}x ${String(r.passes).padStart(7)} ${share.padStart(17)}  ${r.tableCrc32.toString(16).padStart(8, '0')}`,
  );
}
if (new Set(rows.map((r) => r.tableCrc32)).size > 1) {
  console.error('tables differ between backends');
  process.exit(1);
}
