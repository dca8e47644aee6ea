#!/usr/bin/env node
// Where a band solve's time goes: 7x7/3 (or any variant) sharded at a fraction of its table, with
// every kernel call timed by phase and the calling thread's file calls and message coding timed
// too (wrappers around the backend and node:fs). A benchmark, not a test: run it on a quiet
// machine, and compare builds by alternating them.
//   node bench/band-solve-profile.mjs [board] [pieces] [budget as a fraction of the table] [threads] [backend]
//   node bench/band-solve-profile.mjs 7 3 0.25 2 native-bmi2
import fs, { mkdtempSync, rmSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { BandPhase, StateSpace, variant } from '@ccheckers/core';
import { planBands, selectBackend, solveSharded } from '@ccheckers/solver';

const [board = '7', pieces = '3', fraction = '0.25', threads = String(availableParallelism()), name = 'auto'] = process.argv.slice(2);
const v = variant(Number(board), Number(pieces));
const { backend } = await selectBackend(name);
const space = new StateSpace(v);
const budget = Math.floor(planBands(space, { kernelCopies: 1 }).overheadBytes + Number(fraction) * space.tableBytes);

const seconds = new Map();
const calls = new Map();
const items = new Map(); // messages a call read (APPLY, VISIT) or units it visited (UNITS)
const timed = (label, f, n = 0) => {
  items.set(label, (items.get(label) ?? 0) + n);
  const start = performance.now();
  try {
    return f();
  } finally {
    seconds.set(label, (seconds.get(label) ?? 0) + (performance.now() - start) / 1000);
    calls.set(label, (calls.get(label) ?? 0) + 1);
  }
};
const phaseName = Object.fromEntries(Object.entries(BandPhase).map(([k, n]) => [n, k]));
const profiled = Object.create(backend);
profiled.solverKernel = (...args) => {
  const kernel = backend.solverKernel(...args);
  const k = Object.create(kernel);
  k.band = (phase, table, map, input, ...rest) =>
    timed(`kernel ${phaseName[phase]}`, () => kernel.band(phase, table, map, input, ...rest), input?.length ?? 0);
  k.bandApplyRuns = (table, map, bytes, from, ...rest) => {
    let r;
    timed('kernel APPLY (runs)', () => (r = kernel.bandApplyRuns(table, map, bytes, from, ...rest)));
    items.set('kernel APPLY (runs)', (items.get('kernel APPLY (runs)') ?? 0) + r.messages);
    return r;
  };
  return k;
};
const runs = backend.messageRuns;
Object.defineProperty(profiled, 'messageRuns', {
  value: {
    encodeMessageRun: (...a) => timed('coding (JS thread)', () => runs.encodeMessageRun(...a)),
    decodeMessageRuns: (...a) => timed('decoding (JS thread)', () => runs.decodeMessageRuns(...a)),
  },
});
// The store's file calls (its modules import them by name: the bindings follow these).
for (const f of ['fsyncSync', 'writeSync', 'readSync', 'openSync', 'closeSync', 'renameSync', 'unlinkSync', 'statSync']) {
  const original = fs[f];
  fs[f] = (...a) => timed(f, () => original(...a));
}
syncBuiltinESMExports();

const dir = mkdtempSync(join(tmpdir(), 'ccheckers-band-profile-'));
try {
  const started = performance.now();
  const marks = [];
  const r = await solveSharded({
    variant: v,
    rules: 'clean',
    backend: profiled,
    threads: Number(threads),
    store: join(dir, 'store'),
    memoryLimit: budget,
    onProgress: (e) => (e.phase === 'init-done' || e.phase === 'pass-done') && marks.push(`${e.phase === 'init-done' ? 'init' : `pass ${e.pass}`} done at ${((performance.now() - started) / 1000).toFixed(2)} s`),
  });
  const total = (performance.now() - started) / 1000;
  console.log(`${v.name}, ${backend.name}, ${threads} thread(s), --memory ${budget} bytes: ${total.toFixed(2)} s, table CRC-32 ${r.tableCrc32.toString(16).padStart(8, '0')}`);
  for (const m of marks) console.log(`  ${m}`);
  console.log('seconds  calls      input  ns/input  what');
  for (const [label, s] of [...seconds].sort((a, b) => b[1] - a[1])) {
    const n = items.get(label);
    const per = n > 0 ? ((s * 1e9) / n).toFixed(1) : '';
    console.log(`${s.toFixed(2).padStart(7)} ${String(calls.get(label)).padStart(6)} ${String(n || '').padStart(10)} ${per.padStart(9)}  ${label}`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
