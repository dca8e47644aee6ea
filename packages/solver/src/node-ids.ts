/**
 * Node ids of the positions a query explores (query.ts, computeDistances), keyed by stored-state
 * index: a flat array where the state space is small enough, else an open-addressing hash table of
 * typed arrays. (A JS Map of millions of number keys took 5.9 of the 11.9 s a 7x7/3 query spent
 * exploring 4 million positions before it gave up.)
 */

/** Up to this many stored states (128 MiB of ids), node ids live in a flat array. */
export const DENSE_IDS_UP_TO = 2 ** 25;

const FIRST_CAPACITY = 2 ** 16;

export class NodeIds {
  private readonly dense: Int32Array | undefined;
  /** The hash table: slot s holds a state index plus one at 2s (0: the slot is free; indices
   *  reach 2^53, so doubles) and its id at 2s + 1, side by side (one cache line a probe); at most
   *  half full, probed linearly from a Fibonacci hash of the index. */
  private slots = new Float64Array(0);
  private shift = 32;
  private used = 0;

  constructor(states: number, denseUpTo = DENSE_IDS_UP_TO) {
    if (states <= denseUpTo) this.dense = new Int32Array(states).fill(-1);
    else this.resize(FIRST_CAPACITY);
  }

  /** The id of `index`, -1 when it has none. */
  get(index: number): number {
    if (this.dense) return this.dense[index]!;
    const { slots } = this;
    const mask = slots.length - 2;
    const key = index + 1;
    for (let at = this.slotOf(index) * 2; ; at = (at + 2) & mask) {
      const k = slots[at]!;
      if (k === key) return slots[at + 1]!;
      if (k === 0) return -1;
    }
  }

  set(index: number, id: number): void {
    if (this.dense) {
      this.dense[index] = id;
      return;
    }
    if (4 * (this.used + 1) > this.slots.length) this.resize(this.slots.length); // half full at most
    const { slots } = this;
    const mask = slots.length - 2;
    const key = index + 1;
    let at = this.slotOf(index) * 2;
    while (slots[at] !== 0 && slots[at] !== key) at = (at + 2) & mask;
    if (slots[at] === 0) this.used++;
    slots[at] = key;
    slots[at + 1] = id;
  }

  /** The high bits of the index's two 32-bit halves, mixed and multiplied by 2^32 / phi. */
  private slotOf(index: number): number {
    const low = index >>> 0; // the low 32 bits (ToUint32 is modulo 2^32)
    const high = (index - low) / 2 ** 32;
    return Math.imul(low ^ Math.imul(high, 0x85ebca6b), 0x9e3779b1) >>> this.shift;
  }

  /** A table of `capacity` slots (a power of two), the entries hashed into it anew. */
  private resize(capacity: number): void {
    const old = this.slots;
    this.slots = new Float64Array(2 * capacity);
    this.shift = 32 - Math.log2(capacity);
    this.used = 0;
    for (let at = 0; at < old.length; at += 2) if (old[at] !== 0) this.set(old[at]! - 1, old[at + 1]!);
  }
}
