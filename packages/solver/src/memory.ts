/**
 * Memory planning: what a solve needs, what the machine has, and a refusal with both figures
 * before anything large is allocated (never let the OOM killer decide).
 */
import { freemem, totalmem } from 'node:os';
import { type Backend, CCheckersError, type StateSpace, TableBytes } from '@ccheckers/core';

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
  // groupOfRank + mirrored + passOrder per P1 placement, rankOf + weight per group
  const groupMaps = space.p1Placements * 9 + space.groups * 9;
  return space.tableBytes + (distances ? space.states : 0) + groupMaps * (1 + nativeCopies) + 16 * 2 ** 20; // + buffers and scratch
}

/**
 * Bytes the late passes may take: a listed pass 2's lists (SolverKernel.listUnknown, 4 bytes a
 * state; released before pass 3), then the sparse passes' memo (SparsePassOptions.memo, 12 bytes
 * a state). At most half the table, and only memory the solve leaves (`required`, checked by
 * checkMemory) under the limit and the memory `available` at its start, less 256 MiB for
 * everything else. 0: none. They save time, never memory. Fixed for the solve: what others take
 * later is the 256 MiB's, and a list the kernel cannot allocate is dropped, not an error. Not
 * counted: the memo's headers (24 bytes a group in C++, some 100 in JS; 7x7/4 has 106,281
 * groups) and the listing's counters while it runs (at most an eighth of the budget).
 */
export function sparseMemoBudget(space: StateSpace, required: number, limit?: number, available = freemem()): number {
  const left = Math.min(available, limit ?? Infinity) - required - 256 * 2 ** 20;
  return Math.max(0, Math.floor(Math.min(space.tableBytes / 2, left)));
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
 * The one bound on an in-memory solve besides the memory free now (checkMemory): the machine's
 * memory. A table of any size is held (TableBytes, past the 4 GiB of a typed array), so 6x6/6
 * (135 GiB) solves in memory on a server that has the memory, and is refused here, before any
 * work, with the way that fits: a store, band by band within --memory (no distances there).
 */
export function checkTableLimits(space: StateSpace, distances = false, machineBytes = totalmem()): void {
  const name = space.variant.name;
  const needed = requiredBytes(space, 1, distances);
  if (needed <= machineBytes) return;
  const has = `this machine has ${formatBytes(machineBytes)}`;
  throw new InsufficientMemoryError(
    distances && requiredBytes(space, 1, false) <= machineBytes
      ? `--distances on ${name} needs ${formatBytes(needed)} (one byte per stored state besides the table), ${has}: solve without --distances`
      : `${name} needs ${formatBytes(needed)}${distances ? ' with --distances' : ''}, ${has}: use --store DIR --memory SIZE${distances ? ' (without --distances)' : ''}`,
  );
}

/** A table (or distance table) of `bytes` zero bytes, any size, for an in-memory solve on
 *  `backend`: the backend's own (native: the addon's memory, huge pages where the OS has them),
 *  else one SharedArrayBuffer (ts: its worker threads share it). */
export function allocateTable(backend: Backend, bytes: number): TableBytes {
  return backend.allocateTable ? backend.allocateTable(bytes) : TableBytes.shared(bytes);
}
