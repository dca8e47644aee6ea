#!/usr/bin/env node
// writeDatabase of 7x7/4's table (3.96 GB, every byte set, as mid-solve), the ordinary way
// (through the page cache) and past it (direct-write.ts: how a native solve writes its
// checkpoints and database), alternated in one process, each into a new file removed after it.
// A benchmark, not a test: its figures belong in docs/performance.md with the command.
//   node bench/database-write.mjs [DIR] [ROUNDS]
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { RANKING_ID, StateSpace, variant } from '@ccheckers/core';
import { DIRECT_STAGING_BYTES, availableBackends, writeDatabase } from '@ccheckers/solver';

const [root = '.', rounds = '3'] = process.argv.slice(2);
const native = (await availableBackends()).find((b) => b.allocateTable);
if (!native) throw new Error('no native backend: its memory is what the direct writes need');
const space = new StateSpace(variant(7, 4));
const table = native.allocateTable(space.tableBytes);
for (const view of table.views) view.fill(0x5a);
const staging = native.allocateTable(DIRECT_STAGING_BYTES).views[0];
const header = { board: 7, pieces: 4, rules: 'clean', rankingId: RANKING_ID, stage: 'checkpoint', startValue: 0, passes: 0, storedStates: space.states, positions: 0, p1Wins: 0, p2Wins: 0, draws: 0, illegal: 0, seconds: 0, passLog: [], maxDistance: 0 };
const dir = mkdtempSync(join(root, 'database-write-'));
const seconds = { ordinary: [], direct: [] };
try {
  for (let r = 0; r < Number(rounds); r++) {
    for (const way of ['ordinary', 'direct']) {
      const path = join(dir, `${way}.ccdb`);
      const start = performance.now();
      writeDatabase(path, header, table, undefined, 'replace', way === 'direct' ? staging : undefined);
      seconds[way].push((performance.now() - start) / 1000);
      rmSync(path);
      console.log(`round ${r + 1} ${way}: ${seconds[way].at(-1).toFixed(2)} s`);
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(`${space.tableBytes} bytes: ordinary median ${median(seconds.ordinary).toFixed(2)} s, direct ${median(seconds.direct).toFixed(2)} s (${(median(seconds.ordinary) / median(seconds.direct)).toFixed(2)}x)`);
