#!/usr/bin/env node
// writeDatabase and readDatabase of 7x7/4's table (3.96 GB, every byte set, as mid-solve), the
// ordinary way (through the page cache) and past it (direct-io.ts: how a native solve writes its
// checkpoints and database and reads a checkpoint back), in turn in one process. Each round writes
// a new file each way; the one written past the page cache (none of it cached) is read past it,
// then the ordinary way; both files are removed after the round.
// A benchmark, not a test: its figures belong in docs/performance.md with the command.
//   node bench/database-io.mjs [DIR] [ROUNDS]
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { RANKING_ID, StateSpace, variant } from '@ccheckers/core';
import { DIRECT_STAGING_BYTES, availableBackends, readDatabase, tableCrc32, writeDatabase } from '@ccheckers/solver';

const [root = '.', rounds = '3'] = process.argv.slice(2);
const native = (await availableBackends()).find((b) => b.allocateTable);
if (!native) throw new Error('no native backend: its memory is what the direct calls need');
const space = new StateSpace(variant(7, 4));
const table = native.allocateTable(space.tableBytes);
for (const view of table.views) view.fill(0x5a);
const crc = tableCrc32(table);
const into = native.allocateTable(space.tableBytes);
const staging = native.allocateTable(DIRECT_STAGING_BYTES).views[0];
const header = { board: 7, pieces: 4, rules: 'clean', rankingId: RANKING_ID, stage: 'checkpoint', startValue: 0, passes: 0, storedStates: space.states, positions: 0, p1Wins: 0, p2Wins: 0, draws: 0, illegal: 0, seconds: 0, passLog: [], maxDistance: 0 };
const dir = mkdtempSync(join(root, 'database-io-'));
const seconds = {};
const timed = (name, run) => {
  const start = performance.now();
  run();
  (seconds[name] ??= []).push((performance.now() - start) / 1000);
  console.log(`${name}: ${seconds[name].at(-1).toFixed(2)} s`);
};
try {
  for (let r = 0; r < Number(rounds); r++) {
    console.log(`round ${r + 1}`);
    const ordinary = join(dir, 'ordinary.ccdb');
    const direct = join(dir, 'direct.ccdb');
    timed('write, ordinary', () => writeDatabase(ordinary, header, table));
    timed('write, direct', () => writeDatabase(direct, header, table, undefined, 'replace', staging));
    for (const [way, via] of [
      ['read, direct', staging],
      ['read, ordinary', undefined],
    ]) {
      timed(way, () => {
        if (tableCrc32(readDatabase(direct, () => into, false, via).table) !== crc) throw new Error('read back other bytes');
      });
    }
    rmSync(ordinary);
    rmSync(direct);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
for (const [name, xs] of Object.entries(seconds)) console.log(`${name}: median ${median(xs).toFixed(2)} s (${xs.map((x) => x.toFixed(2)).join(', ')})`);
