#!/usr/bin/env node
// copyStates (store/band-solve.ts), which writes a store's shards from its bands at the end of a
// band solve, against the state-at-a-time copy it replaced, in one process: 7x7/4's groups
// (148,995 states) copied at a phase that is not byte-aligned, 2^30 states a run, alternated.
//   node bench/copy-states.mjs [runs]
import { copyStates } from '@ccheckers/solver';

function stateAtATime(src, from, dst, to, count) {
  for (let i = 0; i < count; i++) {
    const s = from + i;
    const d = to + i;
    dst[Math.floor(d / 4)] |= ((src[Math.floor(s / 4)] >>> ((s % 4) * 2)) & 3) << ((d % 4) * 2);
  }
}

const runs = Number(process.argv[2] ?? 3);
const per = 148_995;
const groups = Math.floor(2 ** 30 / per);
const src = new Uint8Array(Math.ceil((groups * per) / 4) + 8).map((_, i) => (i * 37 + 11) & 255);
const copies = [];
for (let run = 0; run < runs; run++) {
  for (const [name, copy] of [['state at a time', stateAtATime], ['copyStates', copyStates]]) {
    const dst = new Uint8Array(src.length);
    const t = performance.now();
    for (let g = 0; g < groups; g++) copy(src, g * per + 1, dst, g * per + 2, per);
    const ns = ((performance.now() - t) * 1e6) / (groups * per);
    copies.push(dst);
    console.log(`${name.padEnd(15)} ${ns.toFixed(2)} ns a state`);
  }
  if (!copies.every((c) => c.every((b, i) => b === copies[0][i]))) throw new Error('the copies differ');
  copies.length = 0;
}
