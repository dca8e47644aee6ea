/**
 * The messages one worker's visits of a band send to the other bands (native kernel: outbox.inl):
 * kept by band, sorted without repeats, and the workers' outboxes collected into a kernel call's
 * output.
 */
import { type BandTable, messageOf } from './band-table.js';

/** The messages of one worker, by the band they are for. */
export class Outbox {
  byBand: number[][] = [];

  constructor(bands = 0) {
    this.reset(bands);
  }

  /** Empty, for `bands` bands. */
  reset(bands: number): void {
    this.byBand = Array.from({ length: bands }, () => []);
  }

  /** The value of a state held elsewhere, to the band that holds it. */
  sendValue(table: BandTable, index: number, value: number): void {
    const g = table.groupOf(index);
    this.listFor(table.bandOf(g)).push(messageOf(table.localOf(index, g), value));
  }

  /** A request to visit stored state `index` again, to `band` (that of its children). */
  sendRequest(band: number, index: number): void {
    this.listFor(band).push(messageOf(index, 0));
  }

  private listFor(band: number): number[] {
    const list = this.byBand[band];
    if (list === undefined) throw new RangeError(`band map: a message for band ${band}, not one of the ${this.byBand.length} bands`);
    return list;
  }
}

/**
 * Sorts messages m ascending and drops repeats (message combining: a state sent the same value by
 * several visits is sent it once, and the file of a run of sorted messages codes each as its
 * distance from the one before). Returns the count kept, in the front of m. (Native: a radix sort.)
 */
export function sortMessages(m: Float64Array): number {
  if (m.length < 2) return m.length;
  m.sort();
  let kept = 1;
  for (let i = 1; i < m.length; i++) if (m[i] !== m[kept - 1]) m[kept++] = m[i]!;
  return kept;
}

/** The workers' outboxes as one output, band by band, each band's messages sorted and without
 *  repeats (sortMessages); the outboxes are emptied. The messages are in the front of `output`
 *  where they all fit before the repeats go (a view of it), else in a new array. */
export function collectOutboxes(outboxes: readonly Outbox[], bands: number, output?: Float64Array): { messages: Float64Array; counts: Float64Array } {
  const counts = new Float64Array(bands);
  let total = 0;
  for (const o of outboxes) for (let b = 0; b < bands; b++) total += o.byBand[b]!.length;
  const all = output !== undefined && output.length >= total ? output : new Float64Array(total);
  let at = 0;
  for (let b = 0; b < bands; b++) {
    const start = at;
    for (const o of outboxes) {
      const list = o.byBand[b]!;
      for (let i = 0; i < list.length; i++) all[at++] = list[i]!;
      o.byBand[b] = [];
    }
    counts[b] = sortMessages(all.subarray(start, at));
    at = start + counts[b]!;
  }
  return { messages: all.subarray(0, at), counts };
}
