#!/usr/bin/env node
// A model of out-of-core pass designs on the explicit game graph of a small variant: how many
// passes each needs, what share of the states its first pass proves, and how many values it sends
// between shards. It decides nothing the solver ships; it measures a design before it is built
// (docs/sharding.md, "Bands and messages", "Parallel band passes"). The end table of every design
// is checked against the in-memory solve of the TS kernel.
//   node bench/message-pass-model.mjs [board] [pieces] [shard counts] [workers] [schedules] [layouts]
//   node bench/message-pass-model.mjs 7 2 1,4,16,64
//   node bench/message-pass-model.mjs 7 2 16,64 1,2,4,8,16 segments,skewed,blocks,staggered bands
//   node bench/message-pass-model.mjs 7 2 16,64 1,2,4,8,16 shared:8,shared:64,shared:512,shared:u1,shared:u4 bands
//   node bench/message-pass-model.mjs 7 2 16,64 8 shared:u1:revisit,shared:u4:revisit,shared:u16:revisit bands
//
// The designs, all with S shards of whole groups (rows of the table) held one at a time:
//   - "bands": a shard holds the groups whose *children's units* (P2 placements) are consecutive
//     in the proof order, so holding shard X lets the pass decide every unit of X's band, in proof
//     order, as the in-memory pass does. A unit's own states lie in every row: a decided value is
//     written at once where its row is held, else sent (a message applied when its shard is next
//     held); a new loss is pushed to its parents the same way. From pass 2 on only the states a
//     shard still found unknown (requests, one message each) are decided again.
//   - "colex": the same pass over shards of consecutive groups in colex order (the present layout).
//
// Workers: W machines step shards at the same time, in lockstep rounds. A round is at most W
// shards; a pass is a sequence of rounds that steps every shard once. A round's shards take their
// messages before any of them steps, so what is sent in round t is applied only at a step of a
// round after t: a message to a shard of the same round, or of an earlier one, waits for that
// shard's step in the next pass. A step reads and writes only its own rows, so the steps of a round
// are modelled one after the other. W = 1 is the serial pass 0..S-1 under every schedule. The
// schedules (L = ceil(S/W)):
//   - "segments": worker w holds shards [wS/W, (w+1)S/W) and steps them in order; round t = the
//     t-th shard of each segment.
//   - "skewed": segments, worker w starting w * ceil(L/2) rounds late (a pipeline: more rounds,
//     workers idle at its ends).
//   - "blocks": round r = shards rW .. rW+W-1.
//   - "staggered": blocks in odd passes, the cuts moved by W/2 in even ones.
//   - "shared:R" (or "shared:uN"): several workers on one band. The bands are stepped one after
//     the other in proof order, as in the serial pass, each by all W workers holding copies of it.
//     A step takes the band's units in R sub-rounds (with "uN": sub-rounds of N W units): in
//     sub-round j worker i visits the i-th of W consecutive slices of the j-th of R consecutive
//     chunks of the band's units. A worker sees its own proofs on the band's rows at once, those of
//     the others only when the sub-round ends (the copies exchange their changes: "exchanged"
//     counts the states so proven, each of which the other W-1 copies receive). A state left
//     waiting stays with its worker across sub-rounds: visited again 64 of the band's units later,
//     and at the end of the step in one more sub-round, after the last chunk's exchange. With
//     ":revisit" ("shared:8:revisit") a worker also visits its waiting states at the start of each
//     sub-round, right after an exchange (those still unknown stay waiting). "rounds" is then the
//     sub-rounds of pass 1 (chunks with units, plus one a step), "time" sums the largest slice's
//     visits over the sub-rounds.
// "visits" counts the states visited in all passes (revisits included); "time" sums over the
// rounds the largest step's visits. Both are given against the serial pass (W = 1) of the same S.
import { BitboardEngine, LOSS, StateSpace, TsSolverKernel, UNKNOWN, WIN, WORDS, rankSet, unrankSet, variant } from '@ccheckers/core';
import { StateIndexer } from '@ccheckers/solver';

const args = process.argv.slice(2);
const [board = '7', pieces = '2', counts = '1,4,16,64', workers = '1'] = args;
const [schedules = 'segments,skewed,blocks,staggered', layouts = 'bands,colex'] = args.slice(4);
const v = variant(Number(board), Number(pieces));
const space = new StateSpace(v);
const engine = new BitboardEngine(v, 'clean');
const kernel = new TsSolverKernel(v, 'clean', space);
const { p2Placements: P, states, cells: n, pieces: k } = space;

// --- the in-memory solve (reference) and the game graph -----------------------------------------
const init = new Uint8Array(space.tableBytes);
kernel.init(init, 0, space.groups);
const reference = init.slice();
let referencePasses = 0;
const referenceProven = [];
for (;;) {
  const s = kernel.pass(reference, 0, kernel.passUnits);
  referencePasses++;
  referenceProven.push(s.wins + s.losses);
  if (s.wins + s.losses === 0) break;
}
const valueIn = (table, i) => (table[i >>> 2] >>> ((i & 3) << 1)) & 3;
const initValue = new Uint8Array(states);
for (let i = 0; i < states; i++) initValue[i] = valueIn(init, i);

const childStart = new Uint32Array(states + 1);
let children = new Uint32Array(states * 8);
const unitOf = new Uint32Array(states); // rank of the stored P2 placement
const a = new Uint32Array(WORDS);
const b = new Uint32Array(WORDS);
const moved = new Uint32Array(WORDS);
const rot = new Uint32Array(WORDS);
const moves = new Int32Array(2 * engine.maxMoves);
const indexer = new StateIndexer(space, engine);
let edges = 0;
for (let g = 0; g < space.groups; g++) {
  unrankSet(space.rankOf[g], k, n, a);
  for (let r = 0; r < P; r++) {
    const s = g * P + r;
    engine.unrankP2(a, r, b);
    unitOf[s] = rankSet(b);
    childStart[s] = edges;
    if (initValue[s] !== UNKNOWN) continue; // decided by init: never visited
    const pos = { p1: a, p2: b, toMove: 0 };
    indexer.prepareChildren(pos);
    const count = engine.generate(a[0], a[1], a[2], a[0] | b[0], a[1] | b[1], a[2] | b[2], moves);
    if (edges + count > children.length) {
      const grown = new Uint32Array(children.length * 2);
      grown.set(children);
      children = grown;
    }
    for (let m = 0; m < count; m++) {
      moved.set(a);
      const from = moves[2 * m];
      const to = moves[2 * m + 1];
      moved[from >>> 5] ^= 1 << (from & 31);
      moved[to >>> 5] ^= 1 << (to & 31);
      children[edges++] = indexer.childIndex(moved);
    }
  }
}
childStart[states] = edges;
// Parents: the reverse edges.
const parentStart = new Uint32Array(states + 1);
for (let e = 0; e < edges; e++) parentStart[children[e] + 1]++;
for (let i = 0; i < states; i++) parentStart[i + 1] += parentStart[i];
const parents = new Uint32Array(edges);
{
  const at = parentStart.slice(0, states);
  for (let s = 0; s < states; s++) for (let e = childStart[s]; e < childStart[s + 1]; e++) parents[at[children[e]]++] = s;
}

// Where the children of each unit lie: the group of rot b.
const childGroupOfUnit = new Int32Array(space.p1Placements);
for (let u = 0; u < space.p1Placements; u++) {
  unrankSet(u, k, n, b);
  engine.rotate(b, rot);
  childGroupOfUnit[u] = space.groupOfRank[rankSet(rot)];
}
const proofPosition = new Uint32Array(space.p1Placements);
space.passOrder.forEach((u, i) => (proofPosition[u] = i));

/** Shard of each group: bands of the proof order of the units whose children a group holds, or colex runs. */
function shardOfGroups(layout, S) {
  const key = new Float64Array(space.groups).fill(Number.POSITIVE_INFINITY);
  for (let u = 0; u < space.p1Placements; u++) {
    const g = childGroupOfUnit[u];
    key[g] = Math.min(key[g], layout === 'bands' ? proofPosition[u] : g);
  }
  const order = Array.from({ length: space.groups }, (_, g) => g).sort((x, y) => key[x] - key[y] || x - y);
  const shard = new Int32Array(space.groups);
  order.forEach((g, i) => (shard[g] = Math.floor((i * S) / space.groups)));
  return shard;
}

/** The rounds of a pass: arrays of at most W shards stepped at once, every shard once a pass. */
function schedule(design, S, W, pass) {
  const rounds = [];
  if (design === 'segments') {
    const start = (w) => Math.floor((w * S) / W);
    for (let t = 0; t < Math.ceil(S / W); t++) {
      const round = [];
      for (let w = 0; w < W; w++) if (start(w) + t < start(w + 1)) round.push(start(w) + t);
      rounds.push(round);
    }
  } else if (design === 'skewed') {
    // A chain that reaches the end of segment w finds the second half of segment w+1 not yet stepped.
    const start = (w) => Math.floor((w * S) / W);
    const skew = Math.ceil(Math.ceil(S / W) / 2);
    for (let t = 0; ; t++) {
      const round = [];
      for (let w = 0; w < W; w++) {
        const X = start(w) + t - w * skew;
        if (X >= start(w) && X < start(w + 1)) round.push(X);
      }
      if (round.length === 0 && t >= (W - 1) * skew) break;
      if (round.length > 0) rounds.push(round);
    }
  } else if (design === 'blocks' || design === 'staggered') {
    const shift = design === 'staggered' && pass % 2 === 0 ? Math.floor(W / 2) : 0;
    const clip = (x) => Math.max(0, Math.min(S, x));
    for (let from = shift - W; from < S; from += W) {
      const [a, b] = [clip(from), clip(from + W)];
      if (b > a) rounds.push(Array.from({ length: b - a }, (_, i) => a + i));
    }
  } else if (sharedPlan(design)) {
    for (let X = 0; X < S; X++) rounds.push([X]); // a band at a time, all W workers on it
  } else throw new Error(`unknown design ${design}`);
  return rounds;
}

/** "shared:R" or "shared:uN" (then ":revisit") as { subRounds | sliceUnits, revisit }; null for the other schedules. */
function sharedPlan(design) {
  const m = /^shared:(u?)([1-9][0-9]*)(:revisit)?$/.exec(design);
  if (!m) return null;
  return { [m[1] ? 'sliceUnits' : 'subRounds']: Number(m[2]), revisit: m[3] !== undefined };
}

/** The chunks [from, to) of a band of U units, one a sub-round. */
function chunksOf(U, W, plan) {
  const chunks = [];
  if (plan.sliceUnits) {
    for (let from = 0; from < U; from += plan.sliceUnits * W) chunks.push([from, Math.min(U, from + plan.sliceUnits * W)]);
  } else {
    for (let j = 0; j < plan.subRounds; j++) {
      const [from, to] = [Math.floor((j * U) / plan.subRounds), Math.floor(((j + 1) * U) / plan.subRounds)];
      if (to > from) chunks.push([from, to]);
    }
  }
  return chunks;
}

function model(layout, S, W, design) {
  const shardOfGroup = shardOfGroups(layout, S);
  const rowShard = (s) => shardOfGroup[Math.floor(s / P)];
  const value = initValue.slice();
  const plan = sharedPlan(design);
  const copies = plan ? W : 1; // the workers on one band
  if (copies > 32) throw new Error('at most 32 workers on one band');
  // The units of each band in proof order: the states of each unit that init left unknown.
  const byUnit = Array.from({ length: space.p1Placements }, () => []);
  for (let s = 0; s < states; s++) if (initValue[s] === UNKNOWN) byUnit[unitOf[s]].push(s);
  const bandUnits = Array.from({ length: S }, () => []);
  for (const u of space.passOrder) bandUnits[shardOfGroup[childGroupOfUnit[u]]].push(byUnit[u]);
  // Proofs on the held band's rows not yet exchanged: the copies that made them (a bit each), the value.
  const madeBy = new Uint32Array(states);
  const madeValue = new Uint8Array(states);
  let inbox = Array.from({ length: S }, () => []);
  let requested = null; // all states in pass 1
  const log = [];
  for (let pass = 1; ; pass++) {
    let proven = 0;
    let sent = 0;
    let pushed = 0;
    let exchanged = 0;
    const targets = new Uint8Array(states);
    const nextRequests = new Uint8Array(states);
    let requests = 0;
    const step = (X, messages) => {
      // What copy i sees of a state of the held band: the exchanged table and its own proofs.
      const seen = (i, s) => (value[s] !== UNKNOWN ? value[s] : (madeBy[s] >>> i) & 1 ? madeValue[s] : UNKNOWN);
      let made = [];
      const set = (i, s, val) => {
        if (seen(i, s) !== UNKNOWN) return;
        if (madeBy[s] === 0) made.push(s);
        madeBy[s] |= 1 << i;
        madeValue[s] = val;
      };
      // The end of a sub-round: every copy gets the others' proofs.
      const exchange = () => {
        for (const s of made) {
          value[s] = madeValue[s];
          madeBy[s] = 0;
          proven++;
          if (copies > 1) exchanged++;
        }
        made = [];
      };
      const emit = (i, s, val, push) => {
        if (rowShard(s) === X) set(i, s, val);
        else {
          inbox[rowShard(s)].push(s, val);
          sent++;
          targets[s] = 1;
          if (push) pushed++;
        }
      };
      for (let m = 0; m < messages.length; m += 2) {
        if (value[messages[m]] === UNKNOWN) {
          value[messages[m]] = messages[m + 1];
          proven++;
        }
      }
      const work = new Array(copies).fill(0);
      const visit = (i, s) => {
        if (rowShard(s) === X && seen(i, s) !== UNKNOWN) return true; // known here; elsewhere it is not seen
        work[i]++;
        const first = childStart[s];
        const last = childStart[s + 1];
        if (first === last) return true; // moveless: stays unknown
        for (let e = first; e < last; e++) {
          const c = children[e];
          if (rowShard(c) !== X) throw new Error('a child outside the held shard');
          const cv = seen(i, c);
          if (cv === UNKNOWN) return false;
          if (cv === LOSS) {
            emit(i, s, WIN);
            return true;
          }
        }
        emit(i, s, LOSS);
        for (let e = parentStart[s]; e < parentStart[s + 1]; e++) emit(i, parents[e], WIN, true);
        return true;
      };
      // The band's units in proof order, by chunks (one, unless shared); copy i takes the i-th of
      // W slices of each. A state left waiting for a child is visited again 64 units later and at
      // the end (the kernel's revisits).
      const units = bandUnits[X];
      const chunks = plan ? chunksOf(units.length, copies, plan) : [[0, units.length]];
      const waiting = Array.from({ length: copies }, () => []);
      let visited = 0;
      let span = 0;
      chunks.forEach(([from, to], j) => {
        work.fill(0);
        for (let i = 0; i < copies; i++) {
          // ":revisit": first what the copy left waiting, now that the last exchange came in.
          if (plan?.revisit && j > 0) waiting[i] = waiting[i].filter((w) => !visit(i, w.s));
          const first = from + Math.floor((i * (to - from)) / copies);
          const last = from + Math.floor(((i + 1) * (to - from)) / copies);
          for (let q = first; q < last; q++) {
            for (const s of units[q]) {
              if (requested && !requested[s]) continue;
              if (!visit(i, s)) waiting[i].push({ s, unit: q });
            }
            const due = waiting[i].filter((w) => w.unit <= q + 1 - 64);
            for (const w of due) visit(i, w.s);
            waiting[i].splice(0, due.length);
          }
        }
        exchange();
        visited += work.reduce((x, y) => x + y, 0);
        span += Math.max(...work);
      });
      // The end of the step: each copy visits what it left waiting, with all proofs exchanged (with
      // copies, one more sub-round).
      work.fill(0);
      for (let i = 0; i < copies; i++) for (const w of waiting[i]) visit(i, w.s);
      exchange();
      visited += work.reduce((x, y) => x + y, 0);
      span += Math.max(...work);
      // Requests for the next pass: the unknown states of the rows held.
      for (let g = 0; g < space.groups; g++) {
        if (shardOfGroup[g] !== X) continue;
        for (let s = g * P; s < (g + 1) * P; s++) {
          if (value[s] === UNKNOWN && childStart[s + 1] > childStart[s]) {
            nextRequests[s] = 1;
            requests++;
          }
        }
      }
      return { visited, span, subRounds: chunks.length + 1 };
    };
    // A round's shards take their messages first: what one of them sends to another is applied
    // at that shard's next step.
    const rounds = schedule(design, S, W, pass);
    let visited = 0; // states visited (revisits included)
    let span = 0; // the largest step's visits (shared: the largest slice's), summed over the rounds: the pass's time
    let subRounds = 0;
    for (const round of rounds) {
      const taken = round.map((X) => {
        const messages = inbox[X];
        inbox[X] = [];
        return messages;
      });
      const steps = round.map((X, i) => step(X, taken[i]));
      visited += steps.reduce((x, r) => x + r.visited, 0);
      span += Math.max(...steps.map((r) => r.span));
      subRounds += steps.reduce((x, r) => x + r.subRounds, 0);
    }
    const distinct = targets.reduce((x, y) => x + y, 0);
    log.push({ pass, rounds: plan ? subRounds : rounds.length, visited, span, proven, sent, pushed, distinct, requests, exchanged });
    requested = nextRequests;
    if (proven === 0 && inbox.every((q) => q.length === 0)) break;
  }
  for (let i = 0; i < states; i++) {
    if (value[i] !== valueIn(reference, i)) throw new Error(`${layout} S=${S} W=${W} ${design}: state ${i} is ${value[i]}, the in-memory solve has ${valueIn(reference, i)}`);
  }
  return log;
}

const unknownAfterInit = initValue.reduce((sum, x) => sum + (x === UNKNOWN ? 1 : 0), 0);
const pct = (x) => `${((100 * x) / unknownAfterInit).toFixed(2)}%`;
const total = (log, key) => log.reduce((sum, r) => sum + r[key], 0);
console.log(`${v.name}: ${states} stored states, ${unknownAfterInit} unknown after init, ${edges} moves`);
console.log(`in memory (TS kernel): ${referencePasses} passes; pass 1 proves ${pct(referenceProven[0])}`);
console.log('rounds: of pass 1; visits: states visited in all passes; time: the largest step of each round, summed;');
console.log('visits and time against the serial pass (W = 1) of the same shards; shared: rounds are the sub-rounds of pass 1,');
console.log('time sums the largest slice of each, exchanged counts the states proven on a held band (each sent to W-1 copies)');
console.log(
  'layout  shards  workers  schedule            rounds  passes  pass-1 share  proven per pass (share of unknown after init)      visits   time  values sent  of which pushes  distinct targets  requests  exchanged (pass 1, all)',
);
for (const S of counts.split(',').map(Number)) {
  for (const layout of layouts.split(',')) {
    if (S === 1 && layout === 'colex') continue;
    const serial = model(layout, S, 1, 'blocks');
    const serialVisits = total(serial, 'visited');
    for (const W of workers.split(',').map(Number)) {
      if (W > S) continue;
      // At W = 1 every schedule is the serial pass, but for the extra revisits of ":revisit".
      const designs = schedules.split(',');
      for (const design of W === 1 ? ['serial', ...designs.filter((d) => sharedPlan(d)?.revisit)] : designs) {
        const log = design === 'serial' ? serial : model(layout, S, W, design);
        const perPass = log.slice(0, 6).map((r) => pct(r.proven)).join(', ') + (log.length > 6 ? ', ...' : '');
        const x = (key) => `${(total(log, key) / serialVisits).toFixed(2)}x`;
        console.log(
          `${layout.padEnd(6)}  ${String(S).padStart(6)}  ${String(W).padStart(7)}  ${design.padEnd(18)}  ${String(log[0].rounds).padStart(6)}  ${String(log.length).padStart(6)}  ${pct(log[0].proven).padStart(12)}  ${perPass.padEnd(48)}  ${x('visited').padStart(6)}  ${x('span').padStart(5)}  ${String(total(log, 'sent')).padStart(11)}  ${String(total(log, 'pushed')).padStart(15)}  ${String(total(log, 'distinct')).padStart(16)}  ${String(total(log, 'requests')).padStart(8)}  ${String(log[0].exchanged).padStart(10)} ${String(total(log, 'exchanged')).padStart(10)}`,
        );
      }
    }
  }
}
