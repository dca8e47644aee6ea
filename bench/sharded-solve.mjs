#!/usr/bin/env node
// A sharded solve in bounded memory against the in-memory solve of the same variant, in the same
// run: wall time (ratio), passes, share proven in pass 1, bytes read and written per pass, peak
// RSS, and the table CRC-32 (must be equal). A benchmark, not a test: run it on a quiet machine.
//   node bench/sharded-solve.mjs [board] [pieces] [budget as a fraction of the table] [threads] [backend] [workers]
//   node bench/sharded-solve.mjs 7 3 0.25 2 native-bmi2 1
// (workers: the rounds of a new store, run here one after the other as a cluster of W would.)
// The budget is the fraction of the table plus the plan's group maps and scratch.
// The sharded solve runs first, so that the peak RSS it reports is its own.
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { StateSpace, variant } from '@ccheckers/core';
import { formatBytes, planBands, selectBackend, solve, solveSharded } from '@ccheckers/solver';

const [board = '7', pieces = '3', fraction = '0.25', threads = String(availableParallelism()), name = 'auto', workers = '1'] = process.argv.slice(2);
const v = variant(Number(board), Number(pieces));
const { backend } = await selectBackend(name);
const space = new StateSpace(v);
const overhead = planBands(space, { kernelCopies: 1 }).overheadBytes;
const budget = Math.floor(overhead + Number(fraction) * space.tableBytes);
const dir = mkdtempSync(join(tmpdir(), 'ccheckers-bench-store-'));
const progress = (label) => (e) => e.phase === 'pass-done' && process.stderr.write(`${label} pass ${e.pass}: +${e.record.newlyProven} in ${e.record.seconds.toFixed(2)} s\n`);
try {
  let plan;
  const rssBefore = process.resourceUsage().maxRSS * 1024;
  const sharded = await solveSharded({
    variant: v,
    rules: 'clean',
    backend,
    threads: Number(threads),
    store: join(dir, 'store'),
    memoryLimit: budget,
    workers: Number(workers),
    onPlan: (p) => (plan = p),
    onProgress: progress('sharded'),
  });
  const shardedRss = process.resourceUsage().maxRSS * 1024;
  const memory = await solve({ variant: v, rules: 'clean', backend, threads: Number(threads), onProgress: progress('in-memory') });
  const share = (r) => `${((100 * r.passLog[0].proven) / r.storedStates).toFixed(1)}%`;
  console.log(`${v.name}, ${backend.name}, ${threads} thread(s); table ${formatBytes(space.tableBytes)}, --memory ${formatBytes(budget)} (${fraction} of the table + ${formatBytes(overhead)} maps and scratch)`);
  console.log(
    `sharded: ${plan.bands} bands of up to ${formatBytes(plan.bandBytes)}, ${formatBytes(plan.messageBytes)} of messages, rounds for ${sharded.workers} worker(s); peak RSS ${formatBytes(shardedRss)} (${formatBytes(rssBefore)} before it)`,
  );
  for (const p of sharded.passLog) {
    console.log(`  pass ${p.pass}: +${p.newlyProven} in ${p.seconds.toFixed(2)} s, ${p.messages} messages, read ${formatBytes(p.bytesRead)}, written ${formatBytes(p.bytesWritten)}`);
  }
  console.log('solve       seconds  ratio  passes  pass-1 share  read/pass   written/pass  table CRC-32');
  for (const [label, r] of [['in-memory', memory], ['sharded', sharded]]) {
    const reads = r.passLog.map((p) => p.bytesRead ?? 0);
    const writes = r.passLog.map((p) => p.bytesWritten ?? 0);
    const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
    console.log(
      `${label.padEnd(10)} ${r.seconds.toFixed(2).padStart(8)} ${(r.seconds / memory.seconds).toFixed(2).padStart(5)}x ${String(r.passes).padStart(7)} ${share(r).padStart(13)}  ${formatBytes(mean(reads)).padStart(10)}  ${formatBytes(mean(writes)).padStart(12)}  ${r.tableCrc32.toString(16).padStart(8, '0')}`,
    );
  }
  if (sharded.tableCrc32 !== memory.tableCrc32) {
    console.error('the tables differ');
    process.exitCode = 1;
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
