#!/usr/bin/env node
// The TS engine's jump methods side by side: generate over the same random positions, in
// alternating rounds in one process (ns per call; the best round counts). A benchmark, not a test.
//   node bench/jump-methods.mjs [board] [pieces,...] [rounds]
//   node bench/jump-methods.mjs 7 3,6 6
import { BitboardEngine, seededRandom, variant } from '@ccheckers/core';

const [board = '7', pieceList = '3,6', roundsArg = '6'] = process.argv.slice(2);
const methods = ['magic', 'pairs', 'pext'];
const positions = 20_000;
const repeats = 10;

for (const k of pieceList.split(',').map(Number)) {
  const v = variant(Number(board), k);
  const n = v.cells;
  const random = seededRandom(7);
  // Random positions: 2k distinct cells, the first k are the side to move; words 0..2 each.
  const own = new Uint32Array(positions * 3);
  const occ = new Uint32Array(positions * 3);
  for (let i = 0; i < positions; i++) {
    const cells = Array.from({ length: n }, (_, c) => c);
    for (let j = 0; j < 2 * k; j++) {
      const r = j + Math.floor(random() * (n - j));
      [cells[j], cells[r]] = [cells[r], cells[j]];
      const c = cells[j];
      occ[3 * i + (c >>> 5)] |= 1 << (c & 31);
      if (j < k) own[3 * i + (c >>> 5)] |= 1 << (c & 31);
    }
  }
  const engines = methods.map((name) => new BitboardEngine(v, 'clean', name));
  const out = new Int32Array(2 * engines[0].maxMoves);
  const times = methods.map(() => []);
  let checksum = 0;
  for (let round = 0; round < Number(roundsArg); round++) {
    engines.forEach((e, x) => {
      const start = process.hrtime.bigint();
      for (let rep = 0; rep < repeats; rep++) {
        for (let i = 0; i < positions; i++) {
          const s = 3 * i;
          checksum += e.generate(own[s], own[s + 1], own[s + 2], occ[s], occ[s + 1], occ[s + 2], out);
        }
      }
      times[x].push(Number(process.hrtime.bigint() - start) / (repeats * positions));
    });
  }
  const best = times.map((t) => Math.min(...t));
  const cells = methods.map((name, x) => `${name} ${best[x].toFixed(1)} ns (${(best[x] / best[0]).toFixed(2)}x)`);
  console.log(`${v.name}: generate, best of ${roundsArg} rounds: ${cells.join(', ')}  [checksum ${checksum}]`);
}
