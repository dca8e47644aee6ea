/**
 * Geometry of the m x m diamond (docs/rules.md section 1), built at run time from m.
 *
 * Cells are numbered row by row from the top tip, left to right. A cell is also addressed by
 * lattice coordinates (i, j): i down-left steps and j down-right steps from the top tip, so that
 * row r = i + j and the doubled column x = (m - 1) + j - i.
 *
 *   m = 4:          0            (i, j) = (0, 0)
 *                 1   2          (1, 0) (0, 1)
 *               3   4   5
 *             6   7   8   9
 *              10  11  12
 *                13  14
 *                  15          (3, 3)
 */

/** The six directions as lattice offsets, listed in increasing cell order of the neighbour:
 * up-left, up-right, left, right, down-left, down-right. Keeping this order makes the i-th
 * jumped-over cell and the i-th landing cell of every cell line up bit for bit (paper, 3.2). */
export const DIRECTIONS: ReadonlyArray<readonly [di: number, dj: number]> = [
  [0, -1], // up-left    (r-1, x-1)
  [-1, 0], // up-right   (r-1, x+1)
  [1, -1], // left       (r,   x-2)
  [-1, 1], // right      (r,   x+2)
  [1, 0], //  down-left  (r+1, x-1)
  [0, 1], //  down-right (r+1, x+1)
];

export interface Jump {
  /** The cell jumped over (must be occupied). */
  readonly over: number;
  /** The landing cell (must be empty). */
  readonly to: number;
}

export class BoardGeometry {
  /** Side length m. */
  readonly size: number;
  /** Number of cells N = m * m. */
  readonly cells: number;
  /** Row of each cell. */
  readonly rowOf: readonly number[];
  /** Doubled column x of each cell. */
  readonly xOf: readonly number[];
  /** Lattice coordinates of each cell. */
  readonly latticeOf: ReadonlyArray<readonly [i: number, j: number]>;
  /** First cell of each row. */
  readonly rowStart: readonly number[];
  /** Neighbours of each cell, increasing. */
  readonly neighbours: ReadonlyArray<readonly number[]>;
  /** Single jumps from each cell, increasing in both `over` and `to`. */
  readonly jumps: ReadonlyArray<readonly Jump[]>;
  /** Left-right mirror: (i, j) -> (j, i). An involution. */
  readonly mirror: readonly number[];
  /** 180-degree rotation: cell c -> N - 1 - c. An involution. */
  readonly rotate: readonly number[];

  constructor(size: number) {
    if (!Number.isInteger(size) || size < 2 || size > 9) {
      throw new RangeError(`board size must be an integer from 2 to 9, got ${size}`);
    }
    const m = size;
    this.size = m;
    this.cells = m * m;
    const rowCount = 2 * m - 1;
    const rowStart: number[] = [];
    let acc = 0;
    for (let r = 0; r < rowCount; r++) {
      rowStart.push(acc);
      acc += r <= m - 1 ? r + 1 : 2 * m - 1 - r;
    }
    this.rowStart = rowStart;

    const rowOf: number[] = [];
    const xOf: number[] = [];
    const latticeOf: Array<[number, number]> = [];
    for (let c = 0; c < this.cells; c++) {
      const [i, j] = this.latticeOfIndex(c);
      latticeOf.push([i, j]);
      rowOf.push(i + j);
      xOf.push(m - 1 + j - i);
    }
    this.rowOf = rowOf;
    this.xOf = xOf;
    this.latticeOf = latticeOf;

    const neighbours: number[][] = [];
    const jumps: Jump[][] = [];
    const mirror: number[] = [];
    const rotate: number[] = [];
    for (let c = 0; c < this.cells; c++) {
      const [i, j] = latticeOf[c]!;
      const near: number[] = [];
      const hops: Jump[] = [];
      for (const [di, dj] of DIRECTIONS) {
        const over = this.cellAt(i + di, j + dj);
        if (over < 0) continue;
        near.push(over);
        const to = this.cellAt(i + 2 * di, j + 2 * dj);
        if (to >= 0) hops.push({ over, to });
      }
      neighbours.push(near);
      jumps.push(hops);
      mirror.push(this.cellAt(j, i));
      rotate.push(this.cells - 1 - c);
    }
    this.neighbours = neighbours;
    this.jumps = jumps;
    this.mirror = mirror;
    this.rotate = rotate;
  }

  /** Number of rows, 2m - 1. */
  get rows(): number {
    return 2 * this.size - 1;
  }

  /** Cells in row r. */
  rowLength(r: number): number {
    const m = this.size;
    return r <= m - 1 ? r + 1 : 2 * m - 1 - r;
  }

  /** Cell index of lattice point (i, j), or -1 off the board. */
  cellAt(i: number, j: number): number {
    const m = this.size;
    if (i < 0 || j < 0 || i >= m || j >= m) return -1;
    const r = i + j;
    return this.rowStart[r]! + j - Math.max(0, r - m + 1);
  }

  private latticeOfIndex(c: number): [number, number] {
    const m = this.size;
    let r = 0;
    while (r + 1 < this.rowStart.length && this.rowStart[r + 1]! <= c) r++;
    const j = c - this.rowStart[r]! + Math.max(0, r - m + 1);
    return [r - j, j];
  }
}

const geometryCache = new Map<number, BoardGeometry>();

/** Shared, immutable geometry of the m x m board. */
export function boardGeometry(size: number): BoardGeometry {
  let g = geometryCache.get(size);
  if (!g) {
    g = new BoardGeometry(size);
    geometryCache.set(size, g);
  }
  return g;
}
