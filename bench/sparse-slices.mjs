#!/usr/bin/env node
// A sparse pass (the solver's passes after the first) of a checkpoint's table, timed for builds
// compared in one process: each round copies the checkpoint's table back and runs the first
// `slice` of the groups, upwards, with each build's native kernel in turn (A, B, A, B, ...), so
// that the builds meet the same machine load. Each build must give the same stats on 1 thread.
// A benchmark, not a test: its figures belong in docs/performance.md with the command.
//   node bench/sparse-slices.mjs CHECKPOINT THREADS SLICE ROUNDS ROOT_A [ROOT_B ...]
//   node bench/sparse-slices.mjs 7x7-4.ccdb.ckpt 2 0.2 3 . /tmp/base
// CHECKPOINT: a solve's OUT.ckpt (`solve --out OUT`), e.g. the one written after pass 1.
import { loadPackage, nativeBuilds, runInTurn } from './builds-in-turn.mjs';

const [checkpoint, threads, slice, rounds, ...roots] = process.argv.slice(2);
if (roots.length === 0) {
  console.error('usage: node bench/sparse-slices.mjs CHECKPOINT THREADS SLICE ROUNDS ROOT_A [ROOT_B ...]');
  process.exit(2);
}
const core = await loadPackage(roots[0], 'core');
const solver = await loadPackage(roots[0], 'solver');
const builds = await nativeBuilds(roots);
const first = builds[0];
const start = performance.now();
const { header, table: saved } = solver.readDatabase(checkpoint, (bytes) => first.backend.allocateTable(bytes), false);
const v = core.variant(header.board, header.pieces);
for (const b of builds) b.kernel = b.backend.solverKernel(v, header.rules);
const space = new core.StateSpace(v);
const table = first.backend.allocateTable(space.tableBytes);
const to = Math.max(1, Math.round(Number(slice) * space.groups));
console.log(
  `${checkpoint}: ${v.name}, ${header.passes} pass(es) done, read in ${((performance.now() - start) / 1000).toFixed(1)} s; groups [0, ${to}) of ${space.groups}, ${threads} thread(s)`,
);
runInTurn(builds, Number(rounds), saved, table, (b) => b.kernel.sparsePass(table, 0, to, { threads: Number(threads) }));
