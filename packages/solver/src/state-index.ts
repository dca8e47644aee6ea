/**
 * From a position (either side to move) to its stored state's index in the 2-bit table, and the
 * expansion of stored-state counts back to counts over the whole game (docs/rules.md section 7).
 */
import {
  BitboardEngine,
  ILLEGAL,
  LOSS,
  type StateSpace,
  type TableLike,
  UNKNOWN,
  WIN,
  WORDS,
  type WordPosition,
  rankSet,
  readValue,
  startPosition,
  stateByte,
  tableViews,
  toWords,
  valueInByte,
} from '@ccheckers/core';
import { crc32Of } from './crc.js';

export class StateIndexer {
  private readonly a = new Uint32Array(WORDS);
  private readonly b = new Uint32Array(WORDS);
  private readonly t = new Uint32Array(WORDS);

  constructor(
    readonly space: StateSpace,
    readonly engine: BitboardEngine,
  ) {}

  /** Index of the stored state standing for `p`: colour-swapped when P2 is to move, then mirrored into its group. */
  index(p: WordPosition): number {
    const { a, b, t, engine, space } = this;
    if (p.toMove === 0) {
      a.set(p.p1);
      b.set(p.p2);
    } else {
      engine.rotate(p.p2, a);
      engine.rotate(p.p1, b);
    }
    const r1 = rankSet(a);
    if (space.mirrored[r1] === 1) {
      engine.mirror(a, t);
      a.set(t);
      engine.mirror(b, t);
      b.set(t);
    }
    return space.groupOfRank[r1]! * space.p2Placements + engine.rankP2(a, b);
  }

  private readonly childA = new Uint32Array(WORDS);
  private childBase = 0;
  private childMirrored = false;
  private childRotated = false;

  /**
   * Prepares childIndex() for the positions one move after `p`: they all share the stored
   * state's P1 placement (the mover's opponent, rotated when P1 moved), hence group and mirror.
   */
  prepareChildren(p: WordPosition): void {
    const { engine, space, childA: a, t } = this;
    this.childRotated = p.toMove === 0;
    if (this.childRotated) engine.rotate(p.p2, a);
    else a.set(p.p1);
    const r1 = rankSet(a);
    this.childMirrored = space.mirrored[r1] === 1;
    if (this.childMirrored) {
      engine.mirror(a, t);
      a.set(t);
    }
    this.childBase = space.groupOfRank[r1]! * space.p2Placements;
  }

  /** Index of the child where the mover's pieces are now `moved` (after prepareChildren). */
  childIndex(moved: Uint32Array): number {
    const { engine, b, t } = this;
    if (this.childRotated) engine.rotate(moved, b);
    else b.set(moved);
    if (this.childMirrored) {
      engine.mirror(b, t);
      b.set(t);
    }
    return this.childBase + engine.rankP2(this.childA, b);
  }
}

/** Index of the stored state of the start position (P1 to move). */
export function startStateIndex(space: StateSpace): number {
  return new StateIndexer(space, new BitboardEngine(space.variant)).index(toWords(startPosition(space.variant)));
}

export type StartValue = 'p1-win' | 'p2-win' | 'draw';

/** Value code of the start position (P1 to move). */
export function valueOfStart(space: StateSpace, table: TableLike): number {
  return readValue(table, startStateIndex(space));
}

export function startValueName(code: number): StartValue {
  return code === WIN ? 'p1-win' : code === LOSS ? 'p2-win' : 'draw';
}

export interface GameCounts {
  positions: number;
  p1Wins: number;
  p2Wins: number;
  draws: number;
  illegal: number;
}

/**
 * Counts over the full game. A stored state of weight w (1 or 2 mirror images) stands for w
 * positions with P1 to move and, through the colour swap, w with P2 to move whose side to move
 * has the same value. So a stored WIN gives w P1 wins and w P2 wins, and so does a stored LOSS.
 */
export function expandCounts(space: StateSpace, table: TableLike): GameCounts {
  const counter = new TableCounter(space);
  forEachChunk(table, (chunk, firstByte) => counter.add(chunk, firstByte));
  return counter.gameCounts();
}

/** Stored states per value code (index UNKNOWN, LOSS, WIN, ILLEGAL), unweighted. */
export function storedCounts(table: TableLike, states: number): number[] {
  const counts = [0, 0, 0, 0];
  forEachChunk(table, (chunk, firstByte) => addCodeCounts(chunk, 0, Math.max(0, Math.min(states - 4 * firstByte, 4 * chunk.length)), counts));
  return counts;
}

/** Stored states decided so far (won, lost or illegal), unweighted. */
export function provenStates(table: TableLike, states: number): number {
  return states - storedCounts(table, states)[UNKNOWN]!;
}

/**
 * Counts of a table read in chunks of any size and in any order (a database body streamed from
 * disk, a table in memory): per value code, stored and weighted by group. Indexes are split into
 * (chunk, offset) so that every bit operation works on offsets within one chunk, below 2^32,
 * while the state indexes themselves go past 2^32.
 */
export class TableCounter {
  /** Stored states per value code, and the same weighted by their group's weight. */
  readonly stored = [0, 0, 0, 0];
  readonly weighted = [0, 0, 0, 0];
  private readonly part = [0, 0, 0, 0];

  constructor(readonly space: StateSpace) {}

  /** Counts the states whose bytes are `chunk`, byte `firstByte` of the table onwards. */
  add(chunk: Uint8Array, firstByte: number): void {
    if (chunk.length >= 2 ** 30) throw new RangeError('TableCounter.add: chunks must be under 1 GiB');
    const { space, part } = this;
    const per = space.p2Placements;
    const from = 4 * firstByte;
    const to = Math.min(space.states, from + 4 * chunk.length);
    for (let g = Math.floor(from / per); g * per < to; g++) {
      const begin = Math.max(from, g * per);
      const end = Math.min(to, (g + 1) * per);
      part.fill(0);
      addCodeCounts(chunk, begin - from, end - from, part);
      const w = space.groupWeight[g]!;
      for (let v = 0; v < 4; v++) {
        this.stored[v]! += part[v]!;
        this.weighted[v]! += w * part[v]!;
      }
    }
  }

  /** docs/rules.md section 7 over what has been added (the whole table: the game's counts). */
  gameCounts(): GameCounts {
    const counts = this.weighted;
    const decided = counts[WIN]! + counts[LOSS]!;
    return {
      positions: 2 * (counts[0]! + counts[1]! + counts[2]! + counts[3]!),
      p1Wins: decided,
      p2Wins: decided,
      draws: 2 * counts[UNKNOWN]!,
      illegal: 2 * counts[ILLEGAL]!,
    };
  }
}

/**
 * The results of a table read part by part in order (the shards of a store): its CRC-32, and
 * unless `count` is false the game's counts and the start value.
 */
export class TableTally {
  private readonly counter: TableCounter | undefined;
  private readonly startIndex: number;
  private crc = 0;
  private startValue = 0;

  constructor(space: StateSpace, { count = true }: { count?: boolean } = {}) {
    this.counter = count ? new TableCounter(space) : undefined;
    this.startIndex = startStateIndex(space);
  }

  /** The next part of the table, `firstByte` its offset in the table. */
  add(bytes: Uint8Array, firstByte: number): void {
    this.crc = crc32Of(bytes, this.crc);
    if (!this.counter) return;
    forEachChunk(bytes, (chunk, at) => this.counter!.add(chunk, firstByte + at));
    const local = stateByte(this.startIndex) - firstByte;
    if (local >= 0 && local < bytes.length) this.startValue = valueInByte(bytes[local]!, this.startIndex);
  }

  get tableCrc32(): number {
    return this.crc;
  }

  /** The counts, start value and CRC-32 of what has been added (counted). */
  results(): GameCounts & { startValue: number; tableCrc32: number } {
    if (!this.counter) throw new Error('TableTally.results: made without counting');
    return { ...this.counter.gameCounts(), startValue: this.startValue, tableCrc32: this.crc };
  }
}

/** Chunks of the table small enough for 32-bit offsets within them. */
const COUNT_CHUNK_BYTES = 2 ** 24;

/** The table in chunks of at most COUNT_CHUNK_BYTES, view by view (a table of any size). */
function forEachChunk(table: TableLike, visit: (chunk: Uint8Array, firstByte: number) => void): void {
  for (const { offset, bytes } of tableViews(table)) {
    for (let at = 0; at < bytes.length; at += COUNT_CHUNK_BYTES) visit(bytes.subarray(at, Math.min(bytes.length, at + COUNT_CHUNK_BYTES)), offset + at);
  }
}

/**
 * BYTE_CODES[byte]: how many of its four 2-bit fields hold each value code, one count per 8 bits
 * (code v in bits 8v..8v+7), so that the bytes of a run add up in one number: 63 bytes hold at
 * most 252 of a code, below 256.
 */
const BYTE_CODES = Uint32Array.from({ length: 256 }, (_, byte) => {
  let packed = 0;
  for (let f = 0; f < 4; f++) packed += 1 << (8 * ((byte >>> (2 * f)) & 3));
  return packed;
});
const RUN_BYTES = 63;

/** Adds to counts[v] the states of value v among local indexes [from, to) of `chunk` (< 2^32). */
function addCodeCounts(chunk: Uint8Array, from: number, to: number, counts: number[]): void {
  let i = from;
  for (; i < to && (i & 3) !== 0; i++) counts[readValue(chunk, i)]!++;
  let byte = i >>> 2;
  const lastByte = (to - (to & 3)) >>> 2; // the whole bytes end here
  while (byte < lastByte) {
    const runEnd = Math.min(lastByte, byte + RUN_BYTES);
    let packed = 0;
    for (; byte < runEnd; byte++) packed += BYTE_CODES[chunk[byte]!]!;
    counts[0]! += packed & 0xff;
    counts[1]! += (packed >>> 8) & 0xff;
    counts[2]! += (packed >>> 16) & 0xff;
    counts[3]! += packed >>> 24;
  }
  for (i = Math.max(i, 4 * lastByte); i < to; i++) counts[readValue(chunk, i)]!++;
}
