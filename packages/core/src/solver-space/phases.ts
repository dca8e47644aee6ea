/**
 * The solver's phases (native kernel: phases.inl, the same functions): one function per phase,
 * each the visits of one work unit (a group, a P2 placement of the proof order, a batch of
 * requests) by a worker (pass-worker.ts, distances.ts), or the values of a band apply. kernel.ts
 * runs them over the units of a call, on one thread (native: forEachUnit, on the threads of the
 * call, each with its own worker).
 */
import type { KernelStats } from '../backend/backend.js';
import { popcount32 } from '../bits/bit32.js';
import { WORDS } from '../bits/bitboard.js';
import { BINOMIAL_STRIDE as S, BINOMIAL_TABLE as C } from '../ranking/binomial.js';
import { nextCombination, unrankSet } from '../ranking/combination.js';
import { type BandTable, checkMessage, messageIndex, messageValue, requestIndex } from './band-table.js';
import type { DistanceWorker } from './distances.js';
import { NO_BLOCKER, type PassWorker } from './pass-worker.js';
import { NO_MOVES, type SparseMemo } from './sparse-memo.js';
import { LOSS, LOST_WITHOUT_DISTANCE, UNKNOWN, WIN, lostCheckedMark } from './state-space.js';
import type { UnknownLists } from './unknown-lists.js';
import { stateByte } from './value-table.js';

/**
 * Init of group `group`: the states init can decide (illegal, terminal, won in one). Only those
 * with P2 on one of a few sets of cells can be (PassWorker.initSets): the P2 placements holding
 * each set are visited, a state holding two twice (init decides it the same way again, and counts
 * it once). A group those sets do not bound is visited whole, in index order.
 */
export function initGroup(w: PassWorker, group: number): void {
  const space = w.space;
  const a = w.pos.p1;
  const b = w.pos.p2; // written by the group's placements
  const p2 = w.groupStates;
  unrankSet(space.rankOf[group]!, space.pieces, space.cells, a);
  const first = group * space.p2Placements;
  const sets = w.initSetsOut;
  const count = w.initSets(a, sets);
  if (count < 0) {
    p2.first(a);
    let index = first;
    do {
      w.init(index++, a, b);
    } while (p2.next());
    return;
  }
  const occupied = w.initOccupied;
  for (let s = 0; s < count; s++) {
    let pieces = space.pieces;
    for (let i = 0; i < WORDS; i++) {
      occupied[i] = a[i]! | sets[WORDS * s + i]!;
      pieces -= popcount32(sets[WORDS * s + i]!);
    }
    p2.first(occupied, pieces);
    do {
      for (let i = 0; i < WORDS; i++) b[i] = b[i]! | sets[WORDS * s + i]!;
      w.init(first + w.engine.rankP2(a, b), a, b);
    } while (p2.next());
  }
}

/**
 * Pass unit `unit` of the proof order: every stored state whose P2 placement is that unit, by
 * increasing P1 rank; then the unit ends (revisits). A band worker visits the units whose
 * children the band holds (it throws for others), all their states, and sends what it decides
 * about those held elsewhere.
 */
export function passUnit(w: PassWorker, unit: number): void {
  const space = w.space;
  const n = space.cells;
  const k = space.pieces;
  const a = w.pos.p1;
  const b = w.pos.p2;
  unrankSet(space.passOrder[unit]!, k, n, b);
  if (w.sends && !w.band!.holdsGroup(w.graph.childGroup(b))) {
    throw new RangeError('band units: a unit whose children the band does not hold');
  }
  // The P1 placements on the cells b leaves free, in colex order, each with its rank: what
  // FreePlacements does for a group, written out here because this is the hottest loop of a
  // pass and V8 did not inline its calls (measured: passes ~5% slower).
  const free = w.unitFree;
  const combo = w.unitCombo;
  let f = 0;
  for (let c = 0; c < n; c++) if (((b[c >>> 5]! >>> (c & 31)) & 1) === 0) free[f++] = c;
  for (let i = 0; i < k; i++) combo[i] = i;
  do {
    a[0] = 0;
    a[1] = 0;
    a[2] = 0;
    let r1 = 0;
    for (let i = 0; i < k; i++) {
      const c = free[combo[i]!]!;
      a[c >>> 5]! |= 1 << (c & 31);
      r1 += C[c * S + i + 1]!; // rankP1(a): the cells come in increasing order
    }
    if (space.mirrored[r1] === 1) continue; // stored under its mirror image
    const index = space.groupOfRank[r1]! * space.p2Placements + w.engine.rankP2(a, b);
    w.waitForRevisit(index, w.pass(index, a, b), a, b);
  } while (nextCombination(combo, k, n - k));
  w.endUnit();
}

/**
 * Pass unit `unit` of a listed pass (unknown-lists.ts): the unit's states that were unknown when
 * the lists were made, in the order passUnit lists them (by group), visited as passUnit visits.
 */
export function listedUnit(w: PassWorker, unit: number, lists: UnknownLists): void {
  const space = w.space;
  const a = w.pos.p1;
  const b = w.pos.p2;
  unrankSet(space.passOrder[unit]!, space.pieces, space.cells, b);
  for (const group of lists.groupsOf(unit)) {
    unrankSet(space.rankOf[group]!, space.pieces, space.cells, a);
    const index = group * space.p2Placements + w.engine.rankP2(a, b);
    w.waitForRevisit(index, w.pass(index, a, b), a, b);
  }
  w.endUnit();
}

/** Sparse pass over group `group` (late passes, few states left): scans it for unknown states and
 *  unranks only those; then the unit ends. (The native kernel visits each a few states after it
 *  finds it, for its cache misses: prepareSparseVisit. The visits and what they read are the
 *  same.) With a memo (sparse-memo.ts) that lists every unknown state of the group, only the
 *  listed states are read, and those whose last visit stopped at a child still unknown are not
 *  visited: the same visits, in the same order, with the same outcome. */
export function sparseGroup(w: PassWorker, group: number, memo?: SparseMemo): void {
  const space = w.space;
  const parts = w.parts;
  const bytes = parts.bytes;
  const per = space.p2Placements;
  const a = w.pos.p1;
  const b = w.pos.p2;
  unrankSet(space.rankOf[group]!, space.pieces, space.cells, a);
  const first = group * per;
  /** The visit's end: what it left unknown is remembered, and waits for its revisit. */
  const visited = (i: number, blocker: number) => {
    if (memo) {
      if (blocker !== NO_BLOCKER) memo.remember(i - first, blocker);
      else if (parts.load(i) === UNKNOWN) memo.remember(i - first, NO_MOVES);
    }
    w.waitForRevisit(i, blocker, a, b);
  };
  memo?.startGroup();
  if (memo?.complete(group)) {
    const { offsets, blockers } = memo.entries(group);
    for (let k = 0; k < offsets.length; k++) {
      const i = first + offsets[k]!;
      if (parts.load(i) !== UNKNOWN) continue;
      w.engine.unrankP2(a, offsets[k]!, b);
      const waitsOn = blockers[k]!;
      visited(i, waitsOn !== NO_MOVES && parts.load(waitsOn) === UNKNOWN ? waitsOn : w.pass(i, a, b));
    }
    memo.endGroup(group);
    w.endUnit();
    return;
  }
  for (let i = first; i < first + per; i++) {
    // 4 states known (no 2-bit field 0) are skipped with one byte.
    if ((i & 3) === 0 && i + 4 <= first + per) {
      const byte = bytes.get(stateByte(i));
      if (byte & 0x03 && byte & 0x0c && byte & 0x30 && byte & 0xc0) {
        i += 3;
        continue;
      }
    }
    if (parts.load(i) !== UNKNOWN) continue;
    w.engine.unrankP2(a, i - first, b);
    visited(i, w.pass(i, a, b));
  }
  memo?.endGroup(group);
  w.endUnit();
}

/**
 * Band requests (BandPhase.VISIT): the stored states messages[from, to) name, whose children the
 * band holds, visited as a sparse pass visits (their own values are mostly held elsewhere); then
 * the unit (this batch of requests) ends.
 */
export function visitRequests(w: PassWorker, messages: Float64Array, from: number, to: number): void {
  const band = w.band!;
  const space = w.space;
  const per = space.p2Placements;
  const a = w.pos.p1;
  const b = w.pos.p2;
  for (let i = from; i < to; i++) {
    const index = requestIndex(messages[i]!);
    const group = band.groupOf(index);
    if (group >= space.groups) throw new RangeError('band visit: a request outside the state space');
    unrankSet(space.rankOf[group]!, space.pieces, space.cells, a);
    w.engine.unrankP2(a, index - group * per, b);
    if (!band.holdsGroup(w.graph.childGroup(b))) {
      throw new RangeError('band visit: a request whose children the band does not hold');
    }
    w.waitForRevisit(index, w.pass(index, a, b), a, b);
  }
  w.endUnit();
}

/**
 * Band requests (BandPhase.REQUESTS) of slot `slot`: a request for each unknown state of its
 * group, to the band that holds the state's children (the held band's own included).
 */
export function requestsOfSlot(w: PassWorker, slot: number): void {
  const band = w.band!;
  const outbox = w.outbox!;
  const space = w.space;
  const per = space.p2Placements;
  const group = band.groups[slot]!;
  const a = w.pos.p1;
  const b = w.pos.p2;
  unrankSet(space.rankOf[group]!, space.pieces, space.cells, a);
  const first = slot * per;
  for (let r = 0; r < per; r++) {
    const local = first + r;
    // 4 states known (no 2-bit field 0) are skipped with one byte.
    if ((local & 3) === 0 && r + 4 <= per) {
      const byte = band.localByte(local);
      if (byte & 0x03 && byte & 0x0c && byte & 0x30 && byte & 0xc0) {
        r += 3;
        continue;
      }
    }
    if (band.loadLocal(local) !== UNKNOWN) continue;
    w.engine.unrankP2(a, r, b);
    outbox.sendRequest(band.bandOf(w.graph.childGroup(b)), group * per + r);
  }
}

/** Band values (BandPhase.APPLY) messages[from, to), for the held band: set where unknown,
 *  counted into `s`. */
export function applyValues(band: BandTable, messages: Float64Array, from: number, to: number, s: KernelStats): void {
  const states = band.slots * band.per;
  for (let i = from; i < to; i++) {
    const m = messages[i]!;
    checkMessage(m, 'band apply');
    const local = messageIndex(m);
    const value = messageValue(m);
    if (value === 0 || local >= states) throw new RangeError("band apply: a message that is not a value of the band's states");
    // Only where unknown: a win sent to a parent that init found terminal or illegal (a visit
    // skips known parents it holds) must not be OR-ed into its value.
    if (band.loadLocal(local) === UNKNOWN && band.proveLocal(local, value)) {
      if (value === WIN) s.wins++;
      else if (value === LOSS) s.losses++;
      else s.illegal++;
    }
  }
}

/** Distance init of group `group`: 0 for its lost states without a legal move. */
export function distanceInitGroup(w: DistanceWorker, group: number): void {
  const space = w.space;
  const a = w.pos.p1;
  const b = w.pos.p2; // written by the group's placements
  const p2 = w.groupStates;
  unrankSet(space.rankOf[group]!, space.pieces, space.cells, a);
  p2.first(a);
  let index = group * space.p2Placements;
  do {
    w.distanceInit(index++, a, b);
  } while (p2.next());
}

/** The states of group `group` at distance `depth`, found in the distance table, unranked one by
 *  one and pushed to their parents (depth + 1 to the parents they decide). The next layer's mark
 *  (set by the layer before) goes back to LOST_WITHOUT_DISTANCE first: no thread sets it during
 *  this layer. */
export function distanceLayerGroup(w: DistanceWorker, group: number, depth: number): void {
  const space = w.space;
  const per = space.p2Placements;
  const first = group * per;
  const end = first + per;
  const distances = w.distances;
  const staleMark = lostCheckedMark(depth + 1);
  for (let i = distances.indexOf(staleMark, first, end); i >= 0; i = distances.indexOf(staleMark, i + 1, end)) {
    distances.compareExchange(i, staleMark, LOST_WITHOUT_DISTANCE);
  }
  let i = distances.indexOf(depth, first, end);
  if (i < 0) return;
  const a = w.pos.p1;
  const b = w.pos.p2;
  unrankSet(space.rankOf[group]!, space.pieces, space.cells, a);
  for (; i >= 0; i = distances.indexOf(depth, i + 1, end)) {
    w.engine.unrankP2(a, i - first, b);
    w.pushDistance(a, b, w.parts.load(i), depth);
  }
}
