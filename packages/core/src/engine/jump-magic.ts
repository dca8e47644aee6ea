/**
 * Single jumps without pext (the native portable kernel's method, in 32-bit arithmetic): a jump
 * from cell c goes over one of its (at most six) neighbours onto the cell beyond. The neighbours
 * lie within 32 consecutive cells, so one shifted word holds them; a multiply by a per-cell
 * constant gathers the occupied ones into a k-bit index (k = the cell's jump directions), as
 * chess engines index sliding attacks, and a table at that index holds the cells beyond them.
 * The landing cells of every single jump are that entry less the occupied cells.
 */
import { WORDS, bitboardOf } from '../bits/bitboard.js';
import type { BoardGeometry, Jump } from '../geometry/board.js';

export interface JumpMagicTables {
  /** First cell of the 32-cell window that holds the cell's jumped-over neighbours. */
  readonly windowStart: Int32Array;
  /** The jumped-over neighbours within the window. */
  readonly windowMask: Uint32Array;
  readonly magic: Uint32Array;
  /** 32 - k (31 for a cell without jumps: index 0). */
  readonly indexShift: Int32Array;
  /** First table entry of each cell. */
  readonly entryStart: Int32Array;
  /** Landing cells, WORDS words per entry. */
  readonly landing: Uint32Array;
}

const cache = new Map<number, JumpMagicTables | null>();

/** The tables of a board, built once per size; null if some cell had no multiplier (then the
 *  engine tests the (over, to) pairs; no board of the supported variants needs that, see the tests). */
export function jumpMagicTables(g: BoardGeometry): JumpMagicTables | null {
  if (!cache.has(g.size)) cache.set(g.size, build(g));
  return cache.get(g.size)!;
}

function build(g: BoardGeometry): JumpMagicTables | null {
  const n = g.cells;
  const windowStart = new Int32Array(n);
  const windowMask = new Uint32Array(n);
  const magic = new Uint32Array(n);
  const indexShift = new Int32Array(n);
  const entryStart = new Int32Array(n);
  const landing: number[] = [];
  for (let c = 0; c < n; c++) {
    const jumps = g.jumps[c]!;
    const k = jumps.length;
    entryStart[c] = landing.length / WORDS;
    const entries = new Uint32Array((1 << k) * WORDS);
    indexShift[c] = k === 0 ? 31 : 32 - k;
    if (k > 0) {
      const start = Math.min(...jumps.map((j) => j.over));
      if (Math.max(...jumps.map((j) => j.over)) - start >= 32) return null;
      windowStart[c] = start;
      const bits = jumps.map((j) => (1 << (j.over - start)) >>> 0);
      windowMask[c] = bits.reduce((m, b) => (m | b) >>> 0, 0);
      const found = findMagic(jumps, bits, k, entries);
      if (found === undefined) return null;
      magic[c] = found;
    }
    for (const word of entries) landing.push(word);
  }
  return { windowStart, windowMask, magic, indexShift, entryStart, landing: Uint32Array.from(landing) };
}

/** A multiplier mapping the 2^k subsets of `bits` to distinct k-bit indices; fills `entries`.
 *  First guess: each run of adjacent cells moved, in order, to the top k bits by one term; then
 *  a fixed pseudo-random sequence (deterministic). */
function findMagic(jumps: readonly Jump[], bits: number[], k: number, entries: Uint32Array): number | undefined {
  const positions = bits.map((b) => 31 - Math.clz32(b)).sort((a, b) => a - b);
  let guess = 0;
  positions.forEach((bit, j) => {
    const lift = 32 - k + j - bit;
    if (lift < 0) guess = Number.NaN;
    else if (!positions.includes(bit - 1)) guess += 2 ** lift;
  });
  let seed = 0x9e3779b9;
  const next = (): number => {
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    return seed >>> 0;
  };
  const size = 1 << k;
  const seen = new Uint8Array(size);
  for (let attempt = 0; attempt < 1_000_000; attempt++) {
    const m = attempt === 0 ? (Number.isNaN(guess) ? 0 : guess >>> 0) : (next() & next() & next()) >>> 0;
    seen.fill(0);
    let distinct = true;
    for (let s = 0; s < size && distinct; s++) {
      let over = 0;
      for (let i = 0; i < k; i++) if ((s >>> i) & 1) over |= bits[i]!;
      const index = Math.imul(over, m) >>> (32 - k);
      if (seen[index]) distinct = false;
      seen[index] = 1;
    }
    if (!distinct) continue;
    for (let s = 0; s < size; s++) {
      let over = 0;
      const to: number[] = [];
      for (let i = 0; i < k; i++) {
        if (((s >>> i) & 1) === 0) continue;
        over |= bits[i]!;
        to.push(jumps[i]!.to);
      }
      entries.set(bitboardOf(to), (Math.imul(over, m) >>> (32 - k)) * WORDS);
    }
    return m;
  }
  return undefined;
}
