#!/usr/bin/env node
// The coding of band message files, every backend's against the TS one in the same run: runs of
// sorted messages as a band pass makes them (a quarter of the keys below `range` present, so about
// 1.3 bytes a message, as 7x7/3 in 9 bands writes), coded and decoded through 64 KiB buffers.
// A benchmark, not a test: run it on a quiet machine.
//   node bench/message-runs.mjs [messages, default 20e6] [messages per run, default 200000]
import { MAX_NUMBER_BYTES, newMessageRunState, seededRandom, tsMessageRuns } from '@ccheckers/core';
import { availableBackends } from '@ccheckers/solver';

const total = Number(process.argv[2] ?? 20e6);
const perRun = Number(process.argv[3] ?? 200_000);
const next = seededRandom(12345);
// Increasing messages, gaps of 1 to 7 (local index * 4 + value, a quarter of the states sent).
const messages = new Float64Array(total);
for (let i = 0, m = 0; i < total; i++) messages[i] = m += 1 + Math.floor(next() * 7);
const bytes = new Uint8Array((perRun + 2) * MAX_NUMBER_BYTES);
const out = new Float64Array(1 << 13);

function run(coding) {
  const coded = [];
  let t = performance.now();
  for (let from = 0; from < total; from += perRun) {
    const to = Math.min(total, from + perRun);
    coded.push(bytes.slice(0, coding.encodeMessageRun(messages, from, to, bytes, 0)));
  }
  const encode = (performance.now() - t) / 1000;
  t = performance.now();
  const state = newMessageRunState();
  let check = 0;
  let decoded = 0;
  for (const piece of coded) {
    for (let at = 0; at < piece.length; ) {
      coding.decodeMessageRuns(piece, at, out, 0, state);
      at = state[4];
      check += out[state[5] - 1];
      decoded += state[5];
    }
  }
  const decode = (performance.now() - t) / 1000;
  if (decoded !== total) throw new Error(`decoded ${decoded} of ${total}`);
  return { encode, decode, bytes: coded.reduce((s, c) => s + c.length, 0), check };
}

const codings = [['ts', tsMessageRuns], ...(await availableBackends()).filter((b) => b.name === 'native-bmi2').map((b) => ['native', b.messageRuns])];
console.log(`${(total / 1e6).toFixed(0)} M messages in runs of ${perRun}`);
console.log('coding   encode s  decode s  M msg/s both  bytes/msg');
const results = codings.map(([name, coding]) => [name, run(coding)]);
for (const [name, r] of results) {
  console.log(`${name.padEnd(8)} ${r.encode.toFixed(2).padStart(8)}  ${r.decode.toFixed(2).padStart(8)}  ${(total / 1e6 / (r.encode + r.decode)).toFixed(1).padStart(12)}  ${(r.bytes / total).toFixed(3).padStart(9)}`);
}
if (new Set(results.map(([, r]) => `${r.bytes} ${r.check}`)).size !== 1) {
  console.error('the codings differ');
  process.exitCode = 1;
}
