#!/usr/bin/env node
// Pass 1 of a variant, timed on its first units, for builds compared in one process: the table
// after init is kept, and each round copies it back and runs the first `slice` of the proof order
// with each build's native kernel in turn (A, B, A, B, ...), so that the builds meet the same
// machine load. Each build must give the same stats on 1 thread (and close ones on more). A
// benchmark, not a test: its figures belong in docs/performance.md with the command.
//   node bench/pass-slices.mjs BOARD PIECES THREADS SLICE ROUNDS ROOT_A [ROOT_B ...]
//   node bench/pass-slices.mjs 7 4 2 0.05 3 . /tmp/base
// SLICE is a fraction of the pass units (0.05: the first 5% of the proof order).
import { copyTable, loadPackage, nativeBuilds, runInTurn } from './builds-in-turn.mjs';

const [board, pieces, threads, slice, rounds, ...roots] = process.argv.slice(2);
if (roots.length === 0) {
  console.error('usage: node bench/pass-slices.mjs BOARD PIECES THREADS SLICE ROUNDS ROOT_A [ROOT_B ...]');
  process.exit(2);
}
const core = await loadPackage(roots[0], 'core');
const v = core.variant(Number(board), Number(pieces));
const builds = await nativeBuilds(roots);
for (const b of builds) b.kernel = b.backend.solverKernel(v, 'clean');
const space = new core.StateSpace(v);
const bytes = space.tableBytes;
const first = builds[0];
const table = first.backend.allocateTable(bytes);
const saved = first.backend.allocateTable(bytes);
const units = first.kernel.passUnits;
const to = Math.max(1, Math.round(Number(slice) * units));
const start = performance.now();
first.kernel.init(table, 0, space.groups, Number(threads));
console.log(`${board}x${board}/${pieces}: ${bytes} table bytes, init ${((performance.now() - start) / 1000).toFixed(1)} s; units [0, ${to}) of ${units}, ${threads} thread(s)`);
copyTable(table, saved);
runInTurn(builds, Number(rounds), saved, table, (b) => b.kernel.pass(table, 0, to, { threads: Number(threads) }));
