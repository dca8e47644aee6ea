/**
 * The table a kernel call works on (native kernel: table_parts.inl): the whole 2-bit table, or
 * the one or two parts of it a TableWindow gives (sharded stores; see backend.ts). Every read and
 * write of a value goes through here, by stored index, so the workers need not know which part
 * holds a state. Value codes and the byte layout are in state-space.ts and value-table.ts.
 */
import type { TableWindow } from '../backend/backend.js';
import { type StateSpace, UNKNOWN } from './state-space.js';
import { readValue, stateByte, stateShift } from './value-table.js';

export class TableParts {
  // The part `table0`, groups [firstGroup0, endGroup0) from stored index base0 on, and a second
  // part `table1` (empty without one); see TableWindow. Without a window, part 0 is the whole
  // table.
  private table0: Uint8Array = new Uint8Array(0);
  private shared0 = false;
  private firstGroup0 = 0;
  private endGroup0 = 0;
  private base0 = 0;
  private end0 = 0;
  private table1: Uint8Array = new Uint8Array(0);
  private shared1 = false;
  private firstGroup1 = 0;
  private endGroup1 = 0;
  private base1 = 0;
  private end1 = 0;
  private seekLoss = false;
  private onlyCross = false;

  constructor(private readonly space: StateSpace) {}

  /** With a window: parents outside it are not told of a new loss, so a visit looks past an
   *  unknown child for a lost one. */
  get seeksLoss(): boolean {
    return this.seekLoss;
  }

  /** The window's crossOnly: a pass visits only the states whose children lie in the other part. */
  get crossOnly(): boolean {
    return this.onlyCross;
  }

  /** The parts of the next kernel call: `table` (the whole table without a window), checked
   *  against the state space. */
  bind(table: Uint8Array, window?: TableWindow, seekLoss = window !== undefined): void {
    const per = this.space.p2Placements;
    const w = window ?? { firstGroup: 0, groups: this.space.groups };
    const other = w.other ?? new Uint8Array(0);
    const otherFirst = w.other ? (w.otherFirstGroup ?? -1) : 0;
    const otherGroups = w.other ? (w.otherGroups ?? -1) : 0;
    for (const [first, groups, bytes, what] of [
      [w.firstGroup, w.groups, table.length, 'table'],
      [otherFirst, otherGroups, other.length, 'other part'],
    ] as const) {
      if (!Number.isSafeInteger(first) || !Number.isSafeInteger(groups) || first < 0 || groups < 0 || first + groups > this.space.groups) {
        throw new RangeError(`window ${what}: groups [${first}, ${first + groups}) outside the ${this.space.groups} groups`);
      }
      if ((first * per) % 4 !== 0) throw new RangeError(`window ${what}: group ${first} does not start on a byte of the table`);
      if (bytes < Math.ceil((groups * per) / 4)) throw new RangeError(`window ${what}: ${bytes} bytes do not hold ${groups} groups`);
    }
    if (otherGroups > 0 && otherFirst < w.firstGroup + w.groups && w.firstGroup < otherFirst + otherGroups) {
      throw new RangeError('window: the two parts overlap');
    }
    this.table0 = table;
    this.shared0 = isShared(table);
    this.firstGroup0 = w.firstGroup;
    this.endGroup0 = w.firstGroup + w.groups;
    this.base0 = w.firstGroup * per;
    this.end0 = this.endGroup0 * per;
    this.table1 = other;
    this.shared1 = isShared(other);
    this.firstGroup1 = otherFirst;
    this.endGroup1 = otherFirst + otherGroups;
    this.base1 = otherFirst * per;
    this.end1 = this.endGroup1 * per;
    this.seekLoss = seekLoss;
    this.onlyCross = w.crossOnly === true;
  }

  /** Groups a table part from firstGroup on holds whole (init's window). */
  groupsIn(table: Uint8Array, firstGroup: number): number {
    return Math.min(this.space.groups - firstGroup, Math.floor((table.length * 4) / this.space.p2Placements));
  }

  checkGroupsInside(groupFrom: number, groupTo: number): void {
    if (groupFrom < this.firstGroup0 || groupTo > this.endGroup0 || groupFrom > groupTo) {
      throw new RangeError(`groups [${groupFrom}, ${groupTo}) outside the table's [${this.firstGroup0}, ${this.endGroup0})`);
    }
  }

  /** The part (0, 1) that holds all of groups [groupFrom, groupTo) (a sparse pass's range). */
  partOfGroups(groupFrom: number, groupTo: number): number {
    const part = this.partOfGroup(groupFrom);
    if (part < 0 || this.partOfGroup(groupTo - 1) !== part || groupFrom > groupTo) {
      throw new RangeError(`groups [${groupFrom}, ${groupTo}) are not inside one part of the table`);
    }
    return part;
  }

  /** 0 or 1: the part that holds group g; -1 for none. */
  partOfGroup(g: number): number {
    return g >= this.firstGroup0 && g < this.endGroup0 ? 0 : g >= this.firstGroup1 && g < this.endGroup1 ? 1 : -1;
  }

  /** The bytes of part 0 or 1, and the stored index of their first state: a sparse pass reads
   *  four states at a time there. */
  partBytes(part: number): Uint8Array {
    return part === 0 ? this.table0 : this.table1;
  }

  partBase(part: number): number {
    return part === 0 ? this.base0 : this.base1;
  }

  /** Whether stored state `index` is in one of the parts. */
  contains(index: number): boolean {
    return (index >= this.base0 && index < this.end0) || (index >= this.base1 && index < this.end1);
  }

  /** Value of stored state `index` (in one of the parts). */
  load(index: number): number {
    return index >= this.base0 && index < this.end0 ? readValue(this.table0, index - this.base0) : readValue(this.table1, index - this.base1);
  }

  /** Sets a value where it was UNKNOWN; true when this call made the change. */
  prove(index: number, value: number): boolean {
    const first = index >= this.base0 && index < this.end0;
    const table = first ? this.table0 : this.table1;
    const shared = first ? this.shared0 : this.shared1;
    index -= first ? this.base0 : this.base1;
    const byte = stateByte(index);
    const shift = stateShift(index);
    const old = shared ? Atomics.or(table, byte, value << shift) : table[byte]!;
    if (!shared) table[byte] = old | (value << shift);
    return ((old >>> shift) & 3) === UNKNOWN;
  }
}

/** Whether the bytes may be written by other threads at once (then written atomically). */
export function isShared(bytes: Uint8Array): boolean {
  return typeof SharedArrayBuffer !== 'undefined' && bytes.buffer instanceof SharedArrayBuffer;
}
