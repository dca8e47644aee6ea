/**
 * The sizes of a band step's kernel calls (band-step.ts): short enough that the event loop runs
 * between them (progress, interruption, a cluster worker's lock renewal), large enough that the
 * calls' overhead stays small.
 */
import { unknownStates } from '@ccheckers/core';

/** Kernel calls per band for init and requests, at least (progress and interruption points). */
export const CALLS_PER_BAND = 16;

/**
 * Kernel calls are short: the event loop runs between them, and a cluster worker's BullMQ lock is
 * renewed from a timer on it (every half of --stall-seconds). Sized by memory alone, the UNITS
 * calls of 7x7/4 in 5 bands grew to thousands of units, minutes each on a loaded machine: the
 * workers' locks ran out mid-call, their jobs went to the other worker, and no step of pass 1
 * finished in 70 minutes. So UNITS calls aim at UNITS_CALL_SECONDS (at the rate the last call
 * took), and init and requests calls cover at most MAX_STATES_PER_CALL states (under a second).
 */
export const UNITS_CALL_SECONDS = 2;
export const MAX_STATES_PER_CALL = 2 ** 26;
/** Units of a stepper's first UNITS call, before one is timed. */
const FIRST_UNITS_CALL = 8;

/** Units in the next UNITS call: what is `left`, at most what fills its output (`byMemory`) and
 *  what takes about `callSeconds` at `secondsPerUnit` (FIRST_UNITS_CALL before any call: 0). */
export function unitsCallSize(left: number, byMemory: number, secondsPerUnit: number, callSeconds: number): number {
  const byTime = secondsPerUnit > 0 ? Math.floor(callSeconds / secondsPerUnit) : FIRST_UNITS_CALL;
  return Math.max(1, Math.min(left, byMemory, byTime));
}

/**
 * Slot ranges [from, to) of a band of `slots` slots of `per` states, each with at most `limit`
 * unknown states (a slot alone may have more if limit < per), at most a sixteenth of the slots
 * (progress, and interruption points) and MAX_STATES_PER_CALL states: REQUESTS calls, which make a request per unknown
 * state. Late passes, with few unknown states left, take a band in a few calls, not hundreds.
 */
export function requestChunks(table: Uint8Array, slots: number, per: number, limit: number, maxStates = MAX_STATES_PER_CALL): Array<[number, number]> {
  const chunks: Array<[number, number]> = [];
  const most = Math.max(1, Math.min(Math.ceil(slots / CALLS_PER_BAND), Math.floor(maxStates / per)));
  let from = 0;
  let unknown = 0;
  for (let slot = 0; slot < slots; slot++) {
    const n = unknownStates(table, slot * per, (slot + 1) * per);
    if (slot > from && (unknown + n > limit || slot - from >= most)) {
      chunks.push([from, slot]);
      from = slot;
      unknown = 0;
    }
    unknown += n;
  }
  if (slots > from) chunks.push([from, slots]);
  return chunks;
}
