#!/usr/bin/env node
// SolvedGame.distances (query.ts): the plies to the end computed on demand for a database without
// a distance table, from the start position, a fresh game each run (no cache).
//   node bench/query-distances.mjs DB [runs]
import { startPosition, variant } from '@ccheckers/core';
import { SolvedGame, openDatabase } from '@ccheckers/solver';

const [path, runsArg] = process.argv.slice(2);
if (!path) {
  console.error('usage: node bench/query-distances.mjs DB [runs]');
  process.exit(2);
}
const runs = Number(runsArg ?? 3);
if (!Number.isSafeInteger(runs) || runs < 1) {
  console.error(`query-distances: runs must be a whole number of at least 1 (got ${runsArg})`);
  process.exit(2);
}
const db = openDatabase(path);
if (db.hasDistances) {
  console.error(`query-distances: ${path} has a distance table, so nothing is computed; give a database solved without --distances`);
  process.exit(2);
}
const start = startPosition(variant(db.header.board, db.header.pieces));
for (let run = 0; run < runs; run++) {
  const game = new SolvedGame(db);
  const t = performance.now();
  const d = game.distances(start);
  const ms = performance.now() - t;
  const info = game.analyse(start);
  console.log(`${db.header.board}x${db.header.board}/${db.header.pieces}: ${d ? `${d.size.toLocaleString('en-US')} positions` : 'gave up'} in ${ms.toFixed(0)} ms; start: ${info.outcome} in ${info.pliesToEnd ?? '-'} plies, best ${info.best ? `${info.best.from}-${info.best.to}` : '-'}`);
}
db.close?.();
