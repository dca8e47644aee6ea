/**
 * The table a kernel call works on (native kernel: table_parts.inl): the whole 2-bit table. Every
 * read and write of a value goes through here, by stored index; the other table the pass worker
 * works on is a band (band-table.ts). Value codes and the byte layout are in state-space.ts and
 * value-table.ts.
 */
import { type StateSpace, UNKNOWN } from './state-space.js';
import { readValue, stateByte, stateShift } from './value-table.js';

export class TableParts {
  /** Every loss reaches all its parents at once: a visit stops at the first unknown child. */
  readonly seeksLoss = false;
  private table: Uint8Array = new Uint8Array(0);
  private shared = false;

  constructor(private readonly space: StateSpace) {}

  /** The table of the next kernel call, checked against the state space. */
  bind(table: Uint8Array): void {
    if (table.length < this.space.tableBytes) throw new RangeError('solver table is smaller than the state space');
    this.table = table;
    this.shared = isShared(table);
  }

  /** The bytes of the table: a sparse pass reads four states at a time there. */
  get bytes(): Uint8Array {
    return this.table;
  }

  /** Value of stored state `index`. */
  load(index: number): number {
    return readValue(this.table, index);
  }

  /** Sets a value where it was UNKNOWN; true when this call made the change. */
  prove(index: number, value: number): boolean {
    const table = this.table;
    const byte = stateByte(index);
    const shift = stateShift(index);
    const old = this.shared ? Atomics.or(table, byte, value << shift) : table[byte]!;
    if (!this.shared) table[byte] = old | (value << shift);
    return ((old >>> shift) & 3) === UNKNOWN;
  }
}

/** Whether the bytes may be written by other threads at once (then written atomically). */
export function isShared(bytes: Uint8Array): boolean {
  return typeof SharedArrayBuffer !== 'undefined' && bytes.buffer instanceof SharedArrayBuffer;
}
