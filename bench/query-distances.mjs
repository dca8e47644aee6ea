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
const db = openDatabase(path);
const start = startPosition(variant(db.header.board, db.header.pieces));
for (let run = 0; run < Number(runsArg ?? 3); run++) {
  const game = new SolvedGame(db);
  const t = performance.now();
  const d = game.distances(start);
  const ms = performance.now() - t;
  const info = game.analyse(start);
  console.log(`${db.header.board}x${db.header.board}/${db.header.pieces}: ${d ? `${d.size.toLocaleString('en-US')} positions` : 'gave up'} in ${ms.toFixed(0)} ms; start: ${info.outcome} in ${info.pliesToEnd ?? '-'} plies, best ${info.best ? `${info.best.from}-${info.best.to}` : '-'}`);
}
db.close?.();
