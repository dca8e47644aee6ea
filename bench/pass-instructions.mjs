#!/usr/bin/env node
// Pass 1 of a variant on a few units from its middle, for counting a build's instructions with
// callgrind (a count is the same run after run, to a few thousand of 1e10, where a time drifts by
// up to 1.5x in a sitting), or for timing builds in turn on one thread or two (which differ: two
// threads also wait on memory they share; docs/performance.md). `save` runs init and the first
// FROM of the proof order natively (2 threads) and writes the table to FILE; `run` reads it back
// and runs the units [FROM, TO) on one thread (or THREADS), printing the stats (every build must
// give the same on one thread). A benchmark, not a test: its figures belong in
// docs/performance.md with the command.
//   node bench/pass-instructions.mjs save BOARD PIECES FROM FILE ROOT
//   node bench/pass-instructions.mjs run BOARD PIECES FROM TO FILE ROOT [THREADS]
//   node bench/pass-instructions.mjs save 7 4 0.05 /tmp/7x7-4-at-5.table .
//   valgrind --tool=callgrind --collect-atstart=no --toggle-collect='*passUnit*' \
//     node bench/pass-instructions.mjs run 7 4 0.05 0.0505 /tmp/7x7-4-at-5.table /path/to/build
// FROM, TO: fractions of the pass units (0.05: 5% into the proof order).
import { closeSync, openSync, readSync, writeSync } from 'node:fs';
import { loadPackage, nativeBuilds } from './builds-in-turn.mjs';

const [mode, board, pieces, from, ...rest] = process.argv.slice(2);
const usage = () => {
  console.error('usage: node bench/pass-instructions.mjs save BOARD PIECES FROM FILE ROOT | run BOARD PIECES FROM TO FILE ROOT [THREADS]');
  process.exit(2);
};
if (!((mode === 'save' && rest.length === 2) || (mode === 'run' && (rest.length === 3 || rest.length === 4)))) usage();
const [to, file, root, threads = '1'] = mode === 'run' ? rest : [undefined, ...rest];
const core = await loadPackage(root, 'core');
const v = core.variant(Number(board), Number(pieces));
const [build] = await nativeBuilds([root]);
const kernel = build.backend.solverKernel(v, 'clean');
const space = new core.StateSpace(v);
const table = build.backend.allocateTable(space.tableBytes);
const unitAt = (fraction) => Math.round(Number(fraction) * kernel.passUnits);
const CHUNK = 1 << 30; // bytes per read or write: below the 2 GiB of one fs call

/** Calls io(part, position) on the table's bytes, in order, a chunk at a time. */
function eachChunk(io) {
  let position = 0;
  for (const view of table.views) {
    for (let offset = 0; offset < view.length; offset += CHUNK) {
      const part = view.subarray(offset, Math.min(view.length, offset + CHUNK));
      io(part, position);
      position += part.length;
    }
  }
}

if (mode === 'save') {
  kernel.init(table, 0, space.groups, 2);
  const s = kernel.pass(table, 0, unitAt(from), { threads: 2 });
  const fd = openSync(file, 'w');
  eachChunk((part) => writeSync(fd, part));
  closeSync(fd);
  console.log(`${v.name}: init and units [0, ${unitAt(from)}) of ${kernel.passUnits}: wins ${s.wins}, losses ${s.losses}; table in ${file}`);
} else {
  const fd = openSync(file, 'r');
  eachChunk((part, position) => {
    if (readSync(fd, part, 0, part.length, position) !== part.length) throw new Error(`${file}: shorter than the ${v.name} table`);
  });
  closeSync(fd);
  const start = performance.now();
  const s = kernel.pass(table, unitAt(from), unitAt(to), { threads: Number(threads) });
  console.log(`${v.name}: units [${unitAt(from)}, ${unitAt(to)}), ${threads} thread(s), in ${((performance.now() - start) / 1000).toFixed(2)} s, wins ${s.wins}, losses ${s.losses}`);
}
