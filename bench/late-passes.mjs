#!/usr/bin/env node
// The solver's sparse passes from a checkpoint to the end, without and with the sparse passes' memo
// (SparsePassOptions.memo), in turn in one process from the same table: each round copies the
// checkpoint's table back and runs the passes (up and down in turn, as the solver does) until one
// proves nothing, once each way. Both must prove the same states pass by pass on one thread.
// A benchmark, not a test: its figures belong in docs/performance.md with the command.
//   node bench/late-passes.mjs CHECKPOINT THREADS ROUNDS [ROOT]
//   node bench/late-passes.mjs 7x7-4.ccdb.ckpt 2 2
// CHECKPOINT: a solve's OUT.ckpt (`solve --out OUT`), e.g. the one written after pass 1.
import { copyTable, loadPackage, nativeBuilds } from './builds-in-turn.mjs';

const [checkpoint, threads, rounds, root = '.'] = process.argv.slice(2);
if (!checkpoint || !(Number(threads) >= 1) || !(Number(rounds) >= 1)) {
  console.error('usage: node bench/late-passes.mjs CHECKPOINT THREADS ROUNDS [ROOT]');
  process.exit(2);
}
const core = await loadPackage(root, 'core');
const solver = await loadPackage(root, 'solver');
const [build] = await nativeBuilds([root]);
const start = performance.now();
const { header, table: saved } = solver.readDatabase(checkpoint, (bytes) => build.backend.allocateTable(bytes), false);
const v = core.variant(header.board, header.pieces);
const kernel = build.backend.solverKernel(v, header.rules);
const space = new core.StateSpace(v);
const table = build.backend.allocateTable(space.tableBytes);
console.log(`${checkpoint}: ${v.name}, ${header.passes} pass(es) done, read in ${((performance.now() - start) / 1000).toFixed(1)} s; ${threads} thread(s)`);

/** The passes after the checkpoint's: each one's seconds and proofs. */
function latePasses(memo) {
  const passes = [];
  for (let pass = header.passes + 1; ; pass++) {
    const t = performance.now();
    const s = kernel.sparsePass(table, 0, space.groups, { threads: Number(threads), descending: pass % 2 === 0, ...(memo ? { memo } : {}) });
    passes.push({ pass, seconds: (performance.now() - t) / 1000, proven: s.wins + s.losses });
    if (s.wins + s.losses === 0) return passes;
  }
}

const modes = [
  { name: 'without memo', memo: undefined, totals: [] },
  { name: 'with memo', memo: { token: 1, bytes: Math.floor(space.tableBytes / 2) }, totals: [] },
];
for (let r = 1; r <= Number(rounds); r++) {
  for (const mode of modes) {
    copyTable(saved, table);
    if (mode.memo) mode.memo.token = r; // a new solve each round
    const passes = latePasses(mode.memo);
    const total = passes.reduce((sum, p) => sum + p.seconds, 0);
    mode.totals.push(total);
    const held = kernel.releaseSparseMemo();
    console.log(
      `round ${r} ${mode.name}: ${total.toFixed(2)} s, ${passes.length} passes (${passes.map((p) => `${p.seconds.toFixed(2)} s/${p.proven}`).join(', ')})${mode.memo ? `, memo ${(held / 2 ** 20).toFixed(1)} MiB at the end` : ''}`,
    );
  }
}
// The middle value, or the mean of the two middle ones (two rounds: their mean).
const median = (xs) => {
  const s = [...xs].sort((x, y) => x - y);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
for (const mode of modes) console.log(`${mode.name}: median ${median(mode.totals).toFixed(2)} s (${mode.totals.map((s) => s.toFixed(2)).join(', ')})`);
