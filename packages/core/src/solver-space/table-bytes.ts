/**
 * The bytes of an in-memory table of any size (the 2-bit value table, the distance table), read
 * through views of at most MAX_VIEW_BYTES, contiguous in memory. In Node 20 a typed array has at
 * most 2^32 elements, so no one Uint8Array spans a table past 4 GiB (7x7/4's distance table is
 * 14.7 GiB, 6x6/6's table 135 GiB).
 *
 * The native backends allocate theirs in the addon (one mapping of aligned anonymous memory, with
 * huge pages where the OS has them, given to JS as one external ArrayBuffer per view: Node 20's
 * N-API makes none past 4 GiB; packages/native); the TS backend's is one SharedArrayBuffer (any
 * size), which its worker threads share. The native kernel takes the whole table as one pointer
 * and length (the addon's tableArg, args.hpp, checks the views are contiguous); TS code reads it
 * by byte.
 */

/** The longest view: a typed array holds at most 2^32 elements in Node 20 (V8 11). */
export const MAX_VIEW_BYTES = 2 ** 32;

/** How a table's memory was given, where the allocator knows (the addon's; see packages/native). */
export interface TablePages {
  /** Who allocated it: the addon (mmap), or V8 (ArrayBuffer, SharedArrayBuffer). */
  allocator: 'addon' | 'v8';
  /** madvise(MADV_HUGEPAGE) was asked for and accepted (false where the OS has no such call). */
  hugePagesAdvised: boolean;
  /** Bytes of the table the kernel backs with huge pages now (/proc/self/smaps AnonHugePages;
   *  undefined where it cannot be read). */
  hugePageBytes?: number;
}

export class TableBytes {
  /** Bytes of each view but the last (which may be shorter). */
  readonly viewBytes: number;
  readonly length: number;
  /** Whether other threads may write the bytes at once (then written atomically). */
  readonly shared: boolean;
  private readonly first: Uint8Array;

  /**
   * The table whose bytes are `views`, in order: each but the last of the same length (at most
   * MAX_VIEW_BYTES; tests make it small to cross views on small tables), adjacent in memory where
   * a native kernel is to read them. `pages`: what the allocator can say about the memory now.
   */
  constructor(
    readonly views: readonly Uint8Array[],
    private readonly pages?: () => TablePages,
  ) {
    if (views.length === 0) throw new RangeError('a table of no views');
    this.first = views[0]!;
    this.viewBytes = Math.max(1, this.first.length);
    if (this.viewBytes > MAX_VIEW_BYTES) throw new RangeError(`a table view of ${this.viewBytes} bytes (at most 2^32)`);
    let length = 0;
    views.forEach((view, i) => {
      if (i < views.length - 1 ? view.length !== this.viewBytes : view.length > this.viewBytes) {
        throw new RangeError(`table view ${i} has ${view.length} bytes (views of ${this.viewBytes}, the last one at most that)`);
      }
      length += view.length;
    });
    this.length = length;
    this.shared = views.every((view) => typeof SharedArrayBuffer !== 'undefined' && view.buffer instanceof SharedArrayBuffer);
  }

  /** A table of `length` zero bytes on one SharedArrayBuffer (the TS backend's, any size). */
  static shared(length: number, viewBytes = MAX_VIEW_BYTES): TableBytes {
    const buffer = new SharedArrayBuffer(length);
    const views: Uint8Array[] = [];
    for (let at = 0; at < length || views.length === 0; at += viewBytes) views.push(new Uint8Array(buffer, at, Math.min(viewBytes, length - at)));
    return new TableBytes(views);
  }

  /** The bytes of `table` (a Uint8Array: one view). */
  static of(table: TableLike): TableBytes {
    return table instanceof TableBytes ? table : new TableBytes([table]);
  }

  /** What the allocator says about the memory (V8's buffers: no huge pages asked for). */
  get pageInfo(): TablePages {
    return this.pages ? this.pages() : { allocator: 'v8', hugePagesAdvised: false };
  }

  /** Byte `at`. */
  get(at: number): number {
    return at < this.viewBytes ? this.first[at]! : this.views[Math.floor(at / this.viewBytes)]![at % this.viewBytes]!;
  }

  set(at: number, value: number): void {
    if (at < this.viewBytes) this.first[at] = value;
    else this.views[Math.floor(at / this.viewBytes)]![at % this.viewBytes] = value;
  }

  /** ORs `bits` into byte `at` (atomically where shared); returns the byte before. */
  or(at: number, bits: number): number {
    const view = at < this.viewBytes ? this.first : this.views[Math.floor(at / this.viewBytes)]!;
    const i = at < this.viewBytes ? at : at % this.viewBytes;
    if (this.shared) return Atomics.or(view, i, bits);
    const old = view[i]!;
    view[i] = old | bits;
    return old;
  }

  /** Sets byte `at` to `value` where it is `expected` (atomically where shared); returns the byte
   *  before. */
  compareExchange(at: number, expected: number, value: number): number {
    const view = at < this.viewBytes ? this.first : this.views[Math.floor(at / this.viewBytes)]!;
    const i = at < this.viewBytes ? at : at % this.viewBytes;
    if (this.shared) return Atomics.compareExchange(view, i, expected, value);
    const old = view[i]!;
    if (old === expected) view[i] = value;
    return old;
  }

  /** Every byte set to `value`. */
  fill(value: number): this {
    for (const view of this.views) view.fill(value);
    return this;
  }

  /** The first byte of [from, to) equal to `value`, or -1. */
  indexOf(value: number, from: number, to: number): number {
    for (let at = from; at < to; ) {
      const v = Math.floor(at / this.viewBytes);
      const view = this.views[v]!;
      const base = v * this.viewBytes;
      const end = Math.min(to - base, view.length);
      const i = view.subarray(0, end).indexOf(value, at - base);
      if (i >= 0) return base + i;
      at = base + view.length;
    }
    return -1;
  }

  /** The table as one Uint8Array, where it is one view (RangeError past MAX_VIEW_BYTES). */
  asOneView(): Uint8Array {
    if (this.views.length > 1) throw new RangeError(`a table of ${this.length} bytes is more than one typed array holds (2^32 bytes in Node 20)`);
    return this.first;
  }
}

/** A table as the kernels and the solver take it: a Uint8Array (at most 4 GiB), or TableBytes. */
export type TableLike = Uint8Array | TableBytes;

/** The views of a table with their byte offsets, in order. */
export function tableViews(table: TableLike): Array<{ offset: number; bytes: Uint8Array }> {
  if (table instanceof Uint8Array) return [{ offset: 0, bytes: table }];
  return table.views.map((bytes, i) => ({ offset: i * table.viewBytes, bytes }));
}
