/**
 * One band of a band-ordered store in memory, and the messages' numbers (native kernel:
 * band_table.inl): the out-of-core solve's table (packages/solver, band passes); what its visits
 * send is kept by outbox.ts.
 *
 * A band holds whole groups (rows of the table) in its own order, `slot` by slot: stored state
 * group * per + r is, in the band that holds the group, local state slot * per + r. The driver
 * chooses the bands so that holding one is enough to visit every state whose children it holds
 * (docs/sharding.md, "Bands of the proof order"); what a visit decides about a state held
 * elsewhere, and the wins it propagates to parents held elsewhere, become messages.
 *
 * Indices reach past 2^32 (value-table.ts): nothing here shifts one; divisions are exact below
 * 2^53, and `& 3` keeps the two lowest bits of any integer below 2^53.
 */
import { type BandMap, CHANGED_LINE_STATES, changedLineWords } from '../backend/backend.js';
import { type StateSpace, UNKNOWN } from './state-space.js';
import { isShared } from './table-parts.js';
import { readValue, stateByte, stateShift } from './value-table.js';

/**
 * A message: the number local * 4 + value, exact in a double (local < 2^51). A value (1..3)
 * for the state `local` of the band it is sent to; a request (value 0) names a stored state,
 * by its stored index, for the band that holds its children to visit.
 */
export function messageOf(index: number, value: number): number {
  return index * 4 + value;
}

export function messageIndex(m: number): number {
  return Math.floor(m / 4);
}

export function messageValue(m: number): number {
  return m % 4;
}

/** Messages must be numbers messageOf() makes: integers from 0 to 2^53 - 1. */
export function checkMessage(m: number, what: string): void {
  if (!Number.isSafeInteger(m) || m < 0) throw new RangeError(`${what}: message ${m} is not a non-negative integer below 2^53`);
}

/** The band in memory as a table (the interface of TableParts the pass worker uses). */
export class BandTable {
  /** A UNITS call (pass 1, the bands in order, each after it applied the values sent to it):
   *  see leavesWinToUnits. Its visits then look past unknown children for a lost one; outside
   *  UNITS every loss reaches all its parents, as a message where not held, and a visit stops at
   *  the first unknown child. */
  seeksLoss = false;
  private table: Uint8Array = new Uint8Array(0);
  private shared = false;
  private bandOfGroup: Int32Array = new Int32Array(0);
  private slotOfGroup: Int32Array = new Int32Array(0);
  private roundOfBand: Int32Array = new Int32Array(0);
  private changedLines: Uint32Array | undefined;
  private changedLinesShared = false;
  private held = 0;
  /** States per group: C(N - k, k). */
  readonly per: number;
  /** The held band's groups, slot by slot. */
  groups: Uint32Array = new Uint32Array(0);
  /** The number of bands. */
  bands = 0;

  constructor(private readonly space: StateSpace) {
    this.per = space.p2Placements;
  }

  /** The band and map of the next kernel call, checked as the native kernel checks them (its
   *  binding: the fields; BandTable's constructor: the held band's groups). */
  bind(table: Uint8Array, map: BandMap, unitSweep = false): void {
    const groupCount = this.space.groups;
    for (const name of ['held', 'bands'] as const) {
      const v = map[name];
      if (!Number.isInteger(v) || v < 0 || v > 0x7fffffff) throw new RangeError(`band map.${name} must be an integer from 0 to 2^31 - 1`);
    }
    for (const name of ['bandOf', 'slotOf'] as const) {
      if (map[name].length < groupCount) throw new RangeError(`band map.${name} is shorter than it must be`);
    }
    if (map.roundOf.length < map.bands) throw new RangeError('band map.roundOf is shorter than it must be');
    const slots = map.groups.length;
    if (map.held >= map.bands) throw new RangeError('band map: the held band is not one of its bands');
    for (let b = 0; b < map.bands; b++) if (!(map.roundOf[b]! >= 0)) throw new RangeError('band map: a band without a round');
    if (table.length < Math.ceil((slots * this.per) / 4)) throw new RangeError('band table is smaller than its groups');
    if (map.changedLines !== undefined) {
      if (!(map.changedLines instanceof Uint32Array)) throw new TypeError('band map.changedLines must be a Uint32Array');
      if (map.changedLines.length < changedLineWords(table.length)) throw new RangeError('band map.changedLines is shorter than it must be');
    }
    // Every group's band and slot (native: a message is filed under its band).
    for (let g = 0; g < groupCount; g++) {
      const b = map.bandOf[g]!;
      if (b < 0 || b >= map.bands || map.slotOf[g]! < 0) throw new RangeError('band map: a group without a band and slot');
    }
    for (let s = 0; s < slots; s++) {
      const g = map.groups[s]!;
      if (g >= groupCount || map.bandOf[g] !== map.held || map.slotOf[g] !== s) {
        throw new RangeError("band map: the held band's groups and the group maps disagree");
      }
    }
    this.table = table;
    this.shared = isShared(table);
    this.bandOfGroup = map.bandOf;
    this.slotOfGroup = map.slotOf;
    this.roundOfBand = map.roundOf;
    this.changedLines = map.changedLines;
    this.changedLinesShared = map.changedLines !== undefined && isShared(map.changedLines);
    this.held = map.held;
    this.groups = map.groups;
    this.bands = map.bands;
    this.seeksLoss = unitSweep;
  }

  /** Slots (groups) the band holds. */
  get slots(): number {
    return this.groups.length;
  }

  /** index / per (exact for every index below 2^53). */
  groupOf(index: number): number {
    return Math.floor(index / this.per);
  }

  /** The band that holds group g. */
  bandOf(group: number): number {
    return this.bandOfGroup[group]!;
  }

  holdsGroup(group: number): boolean {
    return this.bandOfGroup[group] === this.held;
  }

  contains(index: number): boolean {
    return this.holdsGroup(this.groupOf(index));
  }

  /**
   * A new loss held elsewhere, in a UNITS call: the band of its parents' units if that band's
   * UNITS come later in pass 1 (a later round: a band of the same round may have run already),
   * else -1. That band holds the loss (a unit's children lie in one
   * group, the loss's), is sent it, and applies it before its UNITS visit every state of those
   * units looking past unknown children: it finds each of these parents won and sends the win
   * itself. See leavesWinToUnits.
   */
  laterUnitsBand(loss: number): number {
    const band = this.seeksLoss ? this.bandOf(this.groupOf(loss)) : -1;
    return band >= 0 && this.later(band, this.held) ? band : -1;
  }

  /** Whether band a's step comes in a later round of the pass than band b's. */
  later(a: number, b: number): boolean {
    return this.roundOfBand[a]! > this.roundOfBand[b]!;
  }

  /**
   * Whether the win of a parent held elsewhere is left to the band of its units (laterUnitsBand)
   * because it arrives as soon from there: at the parent's band's next step either way, when that
   * band comes in a round after the units' band (pass 1) or not after this one (pass 2). A parent
   * held in between, or in the units' band's round, would take the win later from there than from
   * here (at or after its units' visits instead of before its own band's).
   */
  leavesWinToUnits(unitsBand: number, parent: number): boolean {
    if (unitsBand < 0) return false;
    const band = this.bandOf(this.groupOf(parent));
    return !this.later(band, this.held) || this.later(band, unitsBand);
  }

  /** The state's index in the band that holds its group. */
  localOf(index: number, group: number): number {
    return this.slotOfGroup[group]! * this.per + (index - group * this.per);
  }

  /** The byte of the band that holds local state `local`, as it is now. */
  localByte(local: number): number {
    return this.table[stateByte(local)]!;
  }

  loadLocal(local: number): number {
    return readValue(this.table, local);
  }

  load(index: number): number {
    return this.loadLocal(this.localOf(index, this.groupOf(index)));
  }

  /** Sets a value bit-or into the state's field; true when the state was UNKNOWN before. */
  proveLocal(local: number, value: number): boolean {
    const table = this.table;
    const byte = stateByte(local);
    const shift = stateShift(local);
    const old = this.shared ? Atomics.or(table, byte, value << shift) : table[byte]!;
    if (!this.shared) table[byte] = old | (value << shift);
    const proven = ((old >>> shift) & 3) === UNKNOWN;
    if (proven) this.markChangedLine(local);
    return proven;
  }

  /** Marks the line of local state `local` in map.changedLines (BandMap), where given. */
  markChangedLine(local: number): void {
    const lines = this.changedLines;
    if (!lines) return;
    const line = Math.floor(local / CHANGED_LINE_STATES);
    const bit = 1 << line % 32;
    const at = Math.floor(line / 32);
    if (this.changedLinesShared) Atomics.or(lines, at, bit);
    else lines[at]! |= bit;
  }

  prove(index: number, value: number): boolean {
    return this.proveLocal(this.localOf(index, this.groupOf(index)), value);
  }
}

/** Checks a request of BandPhase.VISIT (a message of value 0) and returns its stored index. */
export function requestIndex(m: number): number {
  checkMessage(m, 'band visit');
  if (messageValue(m) !== 0) throw new RangeError('band visit: a message that is not a request');
  return messageIndex(m);
}
