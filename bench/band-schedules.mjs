#!/usr/bin/env node
// Band passes in rounds for W workers on the real solver, schedule against schedule, in one
// process: the local solve runs the steps W workers would (band-schedule.ts), so the passes and
// what pass 1 proves are those of a cluster of W; the seconds are the local solve's (all the
// work on this process's threads), not a cluster's. Each store's table CRC-32 must be the
// in-memory solve's (solved first, in the same run).
//   node bench/band-schedules.mjs BOARD PIECES BANDS,.. WORKERS,.. SCHEDULE,.. [threads] [backend]
//   node bench/band-schedules.mjs 7 3 16 1,2,8 segments,shared:1,shared:4 1 native-bmi2
// A schedule is segments, blocks, or shared:N (shared steps, slices of N units).
// A cell: passes / pass 1's share of the states unknown after init / values sent over the solve /
// seconds.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { variant } from '@ccheckers/core';
import { selectBackend, solve, solveSharded } from '@ccheckers/solver';

const [board = '7', pieces = '2', bandList = '16', workerList = '1,2,8', scheduleList = 'segments,shared:1', threads = '1', name = 'auto'] = process.argv.slice(2);
const v = variant(Number(board), Number(pieces));
const { backend } = await selectBackend(name);
const list = (s) => s.split(',').filter((x) => x !== '');
const schedules = list(scheduleList).map((s) => {
  const [kind, slice] = s.split(':');
  if (!['segments', 'blocks', 'shared'].includes(kind) || (slice !== undefined && kind !== 'shared')) throw new Error(`a schedule is segments, blocks or shared:N (got ${s})`);
  return { label: s, kind, ...(kind === 'shared' ? { sliceUnits: Number(slice ?? 1) } : {}) };
});
const memory = await solve({ variant: v, rules: 'clean', backend, threads: Number(threads) });
const unknownAfterInit = (r) => r.storedStates - (r.passLog[0].proven - r.passLog[0].newlyProven);
const sent = (r) => r.passLog.reduce((sum, p) => sum + (p.messages ?? 0), 0);
console.log(`${v.name}, ${backend.name}, ${threads} thread(s); in memory: ${memory.passes} passes, pass 1 ${((100 * memory.passLog[0].newlyProven) / unknownAfterInit(memory)).toFixed(2)}%, ${memory.seconds.toFixed(2)} s, CRC-32 ${memory.tableCrc32.toString(16).padStart(8, '0')}`);
console.log(`| S | W | ${schedules.map((s) => s.label).join(' | ')} |`);
console.log(`|--:|--:|${schedules.map(() => '---|').join('')}`);
const dir = mkdtempSync(join(tmpdir(), 'ccheckers-bench-schedules-'));
try {
  for (const bands of list(bandList).map(Number)) {
    for (const workers of list(workerList).map(Number)) {
      const cells = [];
      for (const s of schedules) {
        const store = join(dir, `s${bands}-w${workers}-${s.label.replace(':', '-')}`);
        const r = await solveSharded({ variant: v, rules: 'clean', backend, threads: Number(threads), store, shards: bands, workers, schedule: s.kind, ...(s.sliceUnits !== undefined ? { sliceUnits: s.sliceUnits } : {}) });
        rmSync(store, { recursive: true, force: true });
        if (r.tableCrc32 !== memory.tableCrc32) {
          console.error(`S = ${bands}, W = ${workers}, ${s.label}: table CRC-32 ${r.tableCrc32.toString(16)}, not the in-memory solve's`);
          process.exitCode = 1;
        }
        const share = (100 * r.passLog[0].newlyProven) / unknownAfterInit(r);
        cells.push(`${r.passes} / ${share.toFixed(2)}% / ${(sent(r) / 1e6).toFixed(2)} M / ${r.seconds.toFixed(1)} s`);
      }
      console.log(`| ${bands} | ${workers} | ${cells.join(' | ')} |`);
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
