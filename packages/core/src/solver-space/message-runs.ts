/**
 * The coding of band messages in files (native: native-src/include/ccheckers/message_runs.hpp,
 * the same functions): a run is its count, its first message, then each message's distance from
 * the one before, every number in LEB128 (7 bits a byte, the high bit set on all bytes of a number
 * but its last). Messages are integers below 2^53 (bandMessage), increasing within a run: the
 * kernels give each band's messages of a call sorted, so the distances are small (about 1.3 bytes
 * a message for 7x7/3 in 9 bands, where float64 numbers took 8).
 */

/** The bytes of a LEB128 number at most: messages are below 2^53. */
export const MAX_NUMBER_BYTES = 8;
const TWO_POW_53 = 2 ** 53;

/** A decoder's state between calls (a Float64Array of MESSAGE_RUN_STATE numbers): messages left in
 *  the run (0: a count next), the run's last message (-1 before its first), the number being read
 *  (its value so far, the weight of its next 7 bits), and what the last call stopped at (the next
 *  byte, the next place of the output). */
export const RUN_LEFT = 0;
export const RUN_LAST = 1;
export const RUN_VALUE = 2;
export const RUN_WEIGHT = 3;
export const RUN_NEXT_BYTE = 4;
export const RUN_NEXT_OUT = 5;
export const MESSAGE_RUN_STATE = 6;

/** A decoder's state at the start of a file. */
export function newMessageRunState(): Float64Array {
  const state = new Float64Array(MESSAGE_RUN_STATE);
  state[RUN_LAST] = -1;
  state[RUN_WEIGHT] = 1;
  return state;
}

/** Between runs, with no number half read: where a whole file ends. */
export function atRunBoundary(state: Float64Array): boolean {
  return state[RUN_LEFT] === 0 && state[RUN_WEIGHT] === 1;
}

/** The two functions of the coding; a backend may bring faster ones (native: C++). */
export interface MessageRuns {
  /** Codes messages[from, to) (from < to) as one run at bytes[at]; returns the end. The caller
   *  leaves (to - from + 2) * MAX_NUMBER_BYTES bytes from `at`. A RangeError if the messages are
   *  not increasing integers below 2^53. */
  encodeMessageRun(messages: Float64Array, from: number, to: number, bytes: Uint8Array, at: number): number;
  /** Decodes bytes[from, bytes.length) into out[at, out.length): stops at the end of either, and
   *  sets RUN_NEXT_BYTE and RUN_NEXT_OUT of `state`, which carries a run and a number across
   *  calls. A RangeError for what no encoder writes: an empty run, a message not above the one
   *  before, a number of 2^53 or more. */
  decodeMessageRuns(bytes: Uint8Array, from: number, out: Float64Array, at: number, state: Float64Array): void;
}

/** Writes `n` (an integer, 0 <= n < 2^53) at bytes[at] in LEB128; returns the end. */
function writeNumber(bytes: Uint8Array, at: number, n: number): number {
  // Bit operations only below 2^31 (they work on 32 bits): above, division.
  while (n >= 0x80) {
    if (n < 0x80000000) {
      bytes[at++] = (n & 0x7f) | 0x80;
      n >>>= 7;
    } else {
      bytes[at++] = (n % 128) | 0x80;
      n = Math.floor(n / 128);
    }
  }
  bytes[at++] = n;
  return at;
}

/** An index of an array of `length` (or its end). */
function isIndex(x: number, length: number): boolean {
  return Number.isInteger(x) && x >= 0 && x <= length;
}

export function encodeMessageRun(messages: Float64Array, from: number, to: number, bytes: Uint8Array, at: number): number {
  if (!isIndex(to, messages.length) || !isIndex(from, to) || !isIndex(at, bytes.length)) throw new RangeError('message coding: an argument is not an index of its array');
  if (from === to || Math.floor((bytes.length - at) / MAX_NUMBER_BYTES) < to - from + 2) throw new RangeError('message encoder: an empty run, or too few bytes for its worst case');
  at = writeNumber(bytes, at, to - from);
  let last = -1;
  for (let i = from; i < to; i++) {
    const m = messages[i]!;
    if (!(m > last && m < TWO_POW_53 && Number.isInteger(m))) throw new RangeError('message encoder: a run is increasing integers below 2^53');
    at = writeNumber(bytes, at, last < 0 ? m : m - last);
    last = m;
  }
  return at;
}

export function decodeMessageRuns(bytes: Uint8Array, from: number, out: Float64Array, at: number, state: Float64Array): void {
  if (!isIndex(from, bytes.length) || !isIndex(at, out.length)) throw new RangeError('message coding: an argument is not an index of its array');
  if (state.length !== MESSAGE_RUN_STATE) throw new RangeError('message decoder: a state of the wrong length');
  const integer = (x: number, low: number, high: number) => Number.isInteger(x) && x >= low && x < high;
  const w = state[RUN_WEIGHT]!;
  if (!integer(state[RUN_LEFT]!, 0, TWO_POW_53) || !integer(state[RUN_LAST]!, -1, TWO_POW_53) || !integer(state[RUN_VALUE]!, 0, w) || ![0, 7, 14, 21, 28, 35, 42, 49].some((s) => w === 2 ** s)) {
    throw new RangeError('message decoder: a state no decoder left');
  }
  let left = state[RUN_LEFT]!;
  let last = state[RUN_LAST]!;
  let value = state[RUN_VALUE]!;
  let weight = state[RUN_WEIGHT]!;
  let i = from;
  while (i < bytes.length && at < out.length) {
    const b = bytes[i++]!;
    value += (b & 0x7f) * weight;
    if (b & 0x80) {
      weight *= 128;
      if (weight > TWO_POW_53) throw new RangeError('a number of 2^53 or more');
      continue;
    }
    if (value >= TWO_POW_53) throw new RangeError('a number of 2^53 or more');
    if (left === 0) {
      if (value === 0) throw new RangeError('an empty run');
      left = value;
      last = -1;
    } else {
      if (last >= 0 && value === 0) throw new RangeError('a message repeated');
      const m = last < 0 ? value : last + value;
      if (m >= TWO_POW_53) throw new RangeError('a message of 2^53 or more');
      out[at++] = m;
      last = m;
      left--;
    }
    value = 0;
    weight = 1;
  }
  state[RUN_LEFT] = left;
  state[RUN_LAST] = last;
  state[RUN_VALUE] = value;
  state[RUN_WEIGHT] = weight;
  state[RUN_NEXT_BYTE] = i;
  state[RUN_NEXT_OUT] = at;
}

/** The coding in TS: what every backend without its own uses. */
export const tsMessageRuns: MessageRuns = { encodeMessageRun, decodeMessageRuns };
