/**
 * Memory planning: what a solve needs, what the machine has, and a refusal with both figures
 * before anything large is allocated (never let the OOM killer decide).
 */
import { freemem } from 'node:os';
import { CCheckersError, MAX_TYPED_ARRAY_BYTES, type StateSpace } from '@ccheckers/core';

export class InsufficientMemoryError extends CCheckersError {
  constructor(message: string) {
    super('E_MEMORY', message);
  }
}

const UNITS: Record<string, number> = { '': 1, b: 1, k: 2 ** 10, m: 2 ** 20, g: 2 ** 30, t: 2 ** 40 };

/** Parses sizes such as `512M`, `4G`, `1.5GiB`, `1000000` (bytes; binary units). */
export function parseSize(text: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*$/i.exec(text);
  if (!m) throw new CCheckersError('E_USAGE', `invalid size "${text}" (expected e.g. 512M, 4G, 1.5GiB)`);
  return Math.floor(Number(m[1]) * UNITS[m[2]!.toLowerCase()]!);
}

export function formatBytes(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = bytes;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${v.toFixed(u === 0 ? 0 : 1)} ${units[u]}`;
}

/** Bytes a solve of `space` holds at its peak: the 2-bit table plus the P1 group maps, and with
 *  `distances` one more byte per stored state. */
export function requiredBytes(space: StateSpace, nativeCopies = 1, distances = false): number {
  // groupOfRank + mirroredRank + passOrder per P1 placement, groupRank + weight per group
  const groupMaps = space.p1Placements * 9 + space.groups * 9;
  return space.tableBytes + (distances ? space.states : 0) + groupMaps * (1 + nativeCopies) + 16 * 2 ** 20; // + buffers and scratch
}

/** Throws InsufficientMemoryError when `required` exceeds the limit or the available memory. */
export function checkMemory(required: number, limit?: number): void {
  const available = freemem();
  if (limit !== undefined && required > limit) {
    throw new InsufficientMemoryError(
      `not enough memory: the solve needs ${formatBytes(required)} but --memory allows ${formatBytes(limit)}`,
    );
  }
  if (required > available) {
    throw new InsufficientMemoryError(
      `not enough memory: the solve needs ${formatBytes(required)} but only ${formatBytes(available)} is available`,
    );
  }
}

/**
 * The one bound on an in-memory solve besides memory itself: the 2-bit table (and the distance
 * table, one byte per state) must each fit one typed array, at most 4 GiB in Node 20. That covers
 * 7x7/4 (3.7 GiB) and everything smaller; 6x6/6 (135 GiB) and 7x7/5 (241 GiB) need more.
 */
export function checkTableLimits(space: StateSpace, distances = false): void {
  const name = space.variant.name;
  const limit = formatBytes(MAX_TYPED_ARRAY_BYTES);
  if (space.tableBytes > MAX_TYPED_ARRAY_BYTES) {
    throw new InsufficientMemoryError(
      `${name} needs a ${formatBytes(space.tableBytes)} table, and an in-memory solve holds at most ${limit} in one table (a typed array has at most 2^32 elements in Node 20)`,
    );
  }
  if (distances && space.states > MAX_TYPED_ARRAY_BYTES) {
    throw new InsufficientMemoryError(
      `--distances on ${name} needs a ${formatBytes(space.states)} distance table (one byte per stored state), and an in-memory solve holds at most ${limit} in one table`,
    );
  }
}
