#!/usr/bin/env node
// The solver's passes after pass 1 from a checkpoint to the end, three ways in turn in one process
// from the same table: sparse passes without the memo (SparsePassOptions.memo), with it, and (as
// the solver runs them) pass 2 listed (SolverKernel.listUnknown and listedPass), then sparse
// passes with the memo. Each round copies the checkpoint's table back and runs the passes (the
// sparse ones up and down in turn) until one proves nothing. The first two must prove the same
// states pass by pass on one thread; all three end with the same table (its CRC-32 is printed).
// A benchmark, not a test: its figures belong in docs/performance.md with the command.
//   node bench/late-passes.mjs CHECKPOINT THREADS ROUNDS [MODES] [ROOT]
//   node bench/late-passes.mjs 7x7-4.ccdb.ckpt 2 2 plain,memo,listed
// CHECKPOINT: a solve's OUT.ckpt (`solve --out OUT`) written after pass 1.
import { copyTable, loadPackage, nativeBuilds } from './builds-in-turn.mjs';

const [checkpoint, threads, rounds, modeList = 'plain,memo,listed', root = '.'] = process.argv.slice(2);
const modeNames = modeList.split(',');
if (!checkpoint || !(Number(threads) >= 1) || !(Number(rounds) >= 1) || !modeNames.every((m) => ['plain', 'memo', 'listed'].includes(m))) {
  console.error('usage: node bench/late-passes.mjs CHECKPOINT THREADS ROUNDS [plain,memo,listed] [ROOT]');
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

/** The passes after the checkpoint's: each one's seconds and proofs; the first listed (after
 *  listing the unknown states, its seconds included) where `listed`. */
function latePasses(memo, listed) {
  const passes = [];
  for (let pass = header.passes + 1; ; pass++) {
    const t = performance.now();
    let s;
    let note = '';
    if (listed && pass === header.passes + 1) {
      const lists = kernel.listUnknown(table, { threads: Number(threads), budget: memo.bytes });
      if (!lists.listed) throw new Error(`the lists (${lists.bytes} bytes) do not fit in ${memo.bytes}`);
      note = ` (listing ${((performance.now() - t) / 1000).toFixed(2)} s)`;
      s = kernel.listedPass(table, 0, kernel.passUnits, { threads: Number(threads) });
      kernel.releaseUnknownLists();
    } else {
      s = kernel.sparsePass(table, 0, space.groups, { threads: Number(threads), descending: pass % 2 === 0, ...(memo ? { memo } : {}) });
    }
    passes.push({ pass, seconds: (performance.now() - t) / 1000, proven: s.wins + s.losses, note });
    if (s.wins + s.losses === 0) return passes;
  }
}

const budget = Math.floor(space.tableBytes / 2);
const modes = [
  { name: 'plain', label: 'without memo', memo: undefined, listed: false, totals: [] },
  { name: 'memo', label: 'with memo', memo: { token: 1, bytes: budget }, listed: false, totals: [] },
  { name: 'listed', label: 'pass 2 listed, then the memo', memo: { token: 1, bytes: budget }, listed: true, totals: [] },
].filter((m) => modeNames.includes(m.name));
let token = 1;
for (let r = 1; r <= Number(rounds); r++) {
  for (const mode of modes) {
    copyTable(saved, table);
    if (mode.memo) mode.memo.token = token++; // a new solve each time
    const passes = latePasses(mode.memo, mode.listed);
    const total = passes.reduce((sum, p) => sum + p.seconds, 0);
    mode.totals.push(total);
    const held = kernel.releaseSparseMemo();
    console.log(
      `round ${r} ${mode.label}: ${total.toFixed(2)} s, ${passes.length} passes (${passes.map((p) => `${p.seconds.toFixed(2)} s/${p.proven}${p.note}`).join(', ')})${mode.memo ? `, memo ${(held / 2 ** 20).toFixed(1)} MiB at the end` : ''}, CRC-32 ${solver.tableCrc32(table).toString(16).padStart(8, '0')}`,
    );
  }
}
// The middle value, or the mean of the two middle ones (two rounds: their mean).
const median = (xs) => {
  const s = [...xs].sort((x, y) => x - y);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
for (const mode of modes) console.log(`${mode.label}: median ${median(mode.totals).toFixed(2)} s (${mode.totals.map((s) => s.toFixed(2)).join(', ')})`);
