/**
 * The table a kernel call works on (native kernel: table_parts.inl): the whole 2-bit table. Every
 * read and write of a value goes through here, by stored index; the other table the pass worker
 * works on is a band (band-table.ts). Value codes and the byte layout are in state-space.ts and
 * value-table.ts.
 */
import { type StateSpace, UNKNOWN } from './state-space.js';
import { TableBytes, type TableLike } from './table-bytes.js';
import { stateByte, stateShift, valueInByte } from './value-table.js';

export class TableParts {
  /** Every loss reaches all its parents at once: a visit stops at the first unknown child. */
  readonly seeksLoss = false;
  private table: TableBytes = TableBytes.of(new Uint8Array(0));
  /** The table's first view (all of it up to 4 GiB): most reads and writes are there. */
  private first: Uint8Array = new Uint8Array(0);
  private firstBytes = 0;
  private shared = false;

  constructor(private readonly space: StateSpace) {}

  /** The table of the next kernel call, checked against the state space. */
  bind(table: TableLike): void {
    if (table.length < this.space.tableBytes) throw new RangeError('solver table is smaller than the state space');
    this.table = TableBytes.of(table);
    this.first = this.table.views[0]!;
    this.firstBytes = this.first.length;
    this.shared = this.table.shared;
  }

  /** The bytes of the table: a sparse pass reads four states at a time there. */
  get bytes(): TableBytes {
    return this.table;
  }

  /** Value of stored state `index`. */
  load(index: number): number {
    const byte = stateByte(index);
    return valueInByte(byte < this.firstBytes ? this.first[byte]! : this.table.get(byte), index);
  }

  /** Sets a value where it was UNKNOWN; true when this call made the change. */
  prove(index: number, value: number): boolean {
    const byte = stateByte(index);
    const shift = stateShift(index);
    let old: number;
    if (byte >= this.firstBytes) old = this.table.or(byte, value << shift);
    else if (this.shared) old = Atomics.or(this.first, byte, value << shift);
    else {
      old = this.first[byte]!;
      this.first[byte] = old | (value << shift);
    }
    return ((old >>> shift) & 3) === UNKNOWN;
  }
}

/** Whether the bytes may be written by other threads at once (then written atomically). */
export function isShared(bytes: ArrayBufferView): boolean {
  return typeof SharedArrayBuffer !== 'undefined' && bytes.buffer instanceof SharedArrayBuffer;
}
