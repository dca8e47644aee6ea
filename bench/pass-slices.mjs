#!/usr/bin/env node
// Pass 1 of a variant, timed on its first units, for builds compared in one process: the table
// after init is kept, and each round copies it back and runs the first `slice` of the proof order
// with each build's native kernel in turn (A, B, A, B, ...), so that the builds meet the same
// machine load. Each build must give the same stats on 1 thread (and close ones on more). A
// benchmark, not a test: its figures belong in docs/performance.md with the command.
//   node bench/pass-slices.mjs BOARD PIECES THREADS SLICE ROUNDS ROOT_A [ROOT_B ...]
//   node bench/pass-slices.mjs 7 4 2 0.05 3 . /tmp/base
// SLICE is a fraction of the pass units (0.05: the first 5% of the proof order).
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const [board, pieces, threads, slice, rounds, ...roots] = process.argv.slice(2);
if (roots.length === 0) {
  console.error('usage: node bench/pass-slices.mjs BOARD PIECES THREADS SLICE ROUNDS ROOT_A [ROOT_B ...]');
  process.exit(2);
}
const load = async (root, pkg) => import(pathToFileURL(resolve(root, `packages/${pkg}/dist/index.js`)).href);
const core = await load(roots[0], 'core');
const v = core.variant(Number(board), Number(pieces));
const builds = [];
for (const root of roots) {
  const native = await load(root, 'native');
  const { backend, reason } = native.nativeBackend('native-bmi2');
  if (!backend) throw new Error(`${root}: ${reason}`);
  builds.push({ root, backend, kernel: backend.solverKernel(v, 'clean'), seconds: [], stats: [] });
}
const space = new core.StateSpace(v);
const bytes = space.tableBytes;
const first = builds[0];
const table = first.backend.allocateTable(bytes);
const saved = first.backend.allocateTable(bytes);
const units = first.kernel.passUnits;
const to = Math.max(1, Math.round(Number(slice) * units));
let start = performance.now();
first.kernel.init(table, 0, space.groups, Number(threads));
console.log(`${board}x${board}/${pieces}: ${bytes} table bytes, init ${((performance.now() - start) / 1000).toFixed(1)} s; units [0, ${to}) of ${units}, ${threads} thread(s)`);
const copy = (from, into) => {
  for (let i = 0; i < from.views.length; i++) into.views[i].set(from.views[i]);
};
copy(table, saved);
for (let r = 0; r < Number(rounds); r++) {
  for (const b of builds) {
    copy(saved, table);
    start = performance.now();
    const s = b.kernel.pass(table, 0, to, { threads: Number(threads) });
    const seconds = (performance.now() - start) / 1000;
    b.seconds.push(seconds);
    b.stats.push(s);
    console.log(`round ${r + 1} ${b.root}: ${seconds.toFixed(2)} s, wins ${s.wins}, losses ${s.losses}`);
  }
}
const median = (xs) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
for (const b of builds) console.log(`${b.root}: median ${median(b.seconds).toFixed(2)} s (${b.seconds.map((s) => s.toFixed(2)).join(', ')}), ${(median(b.seconds) / median(first.seconds)).toFixed(3)}x of ${first.root}`);
