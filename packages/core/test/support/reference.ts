/**
 * The obvious array-based implementation of docs/rules.md (the paper's "original"): a board array,
 * neighbours from (row, doubled column) coordinates, and a depth-first search for jump chains.
 * It shares nothing with the bitboard engine but the rules text, and exists only to check it.
 */

export const EMPTY = 0;
export const P1 = 1;
export const P2 = 2;

/** docs/rules.md section 3, typed again from the rules text on purpose. */
const START: Record<string, number[]> = {
  '2/1': [0], '3/1': [0], '3/3': [0, 1, 2],
  '4/3': [0, 1, 2], '4/4': [0, 1, 2, 4], '4/6': [0, 1, 2, 3, 4, 5],
  '5/6': [0, 1, 2, 3, 4, 5], '6/4': [0, 1, 2, 4], '6/6': [0, 1, 2, 3, 4, 5],
  '7/1': [0], '7/2': [0, 1], '7/3': [0, 1, 2], '7/4': [0, 1, 2, 4], '7/5': [1, 2, 3, 4, 5],
  '7/6': [0, 1, 2, 3, 4, 5],
  '9/4': [0, 1, 2, 4], '9/5': [0, 1, 2, 3, 5], '9/6': [0, 1, 2, 3, 4, 5], '9/7': [0, 1, 2, 3, 5, 7, 8],
  '9/8': [0, 1, 2, 3, 4, 5, 7, 8], '9/10': [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
};

export interface RefPosition {
  board: Int8Array; // EMPTY, P1, P2 per cell
  toMove: 1 | 2;
}

export class ReferenceGame {
  readonly n: number;
  readonly row: number[] = [];
  readonly col: number[] = [];
  private readonly at = new Map<string, number>();
  readonly start1: number[];
  readonly start2: number[];

  constructor(readonly m: number, readonly k: number, readonly published = false) {
    this.n = m * m;
    let cell = 0;
    for (let r = 0; r < 2 * m - 1; r++) {
      const count = r <= m - 1 ? r + 1 : 2 * m - 1 - r;
      for (let p = 0; p < count; p++) {
        const x = m - count + 2 * p;
        this.row.push(r);
        this.col.push(x);
        this.at.set(`${r},${x}`, cell++);
      }
    }
    const s = START[`${m}/${k}`];
    if (!s) throw new Error(`no start for ${m}/${k}`);
    this.start1 = s;
    this.start2 = s.map((c) => this.n - 1 - c);
  }

  cell(r: number, x: number): number {
    return this.at.get(`${r},${x}`) ?? -1;
  }

  static readonly DIRS: Array<[number, number]> = [[0, -2], [0, 2], [-1, -1], [-1, 1], [1, -1], [1, 1]];

  private readonly neighbourCache: number[][] = [];
  private readonly jumpCache: Array<Array<[number, number]>> = [];

  neighbours(c: number): number[] {
    return (this.neighbourCache[c] ??= this.computeNeighbours(c));
  }

  singleJumps(c: number): Array<[over: number, to: number]> {
    return (this.jumpCache[c] ??= this.computeJumps(c));
  }

  private computeNeighbours(c: number): number[] {
    const out: number[] = [];
    for (const [dr, dx] of ReferenceGame.DIRS) {
      const d = this.cell(this.row[c]! + dr, this.col[c]! + dx);
      if (d >= 0) out.push(d);
    }
    return out.sort((a, b) => a - b);
  }

  private computeJumps(c: number): Array<[over: number, to: number]> {
    const out: Array<[number, number]> = [];
    for (const [dr, dx] of ReferenceGame.DIRS) {
      const over = this.cell(this.row[c]! + dr, this.col[c]! + dx);
      const to = this.cell(this.row[c]! + 2 * dr, this.col[c]! + 2 * dx);
      if (over >= 0 && to >= 0) out.push([over, to]);
    }
    return out.sort((a, b) => a[1] - b[1]);
  }

  /** Moves of the side to move as "from-to" strings, sorted; legality ignored. */
  moves(p: RefPosition): Array<[number, number]> {
    const out: Array<[number, number]> = [];
    for (let from = 0; from < this.n; from++) {
      if (p.board[from] !== p.toMove) continue;
      const dests = new Set<number>();
      for (const d of this.neighbours(from)) if (p.board[d] === EMPTY) dests.add(d);
      const seen = new Set<number>([from]);
      const dfs = (c: number): void => {
        for (const [over, to] of this.singleJumps(c)) {
          if (p.board[over] !== EMPTY && p.board[to] === EMPTY && !seen.has(to)) {
            seen.add(to);
            dests.add(to);
            dfs(to);
          }
        }
      };
      dfs(from);
      for (const d of dests) out.push([from, d]);
    }
    return out.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  }

  /** Def. 1 for player 1 or 2. */
  hasWon(player: 1 | 2, p: RefPosition): boolean {
    const goal = player === 1 ? this.start2 : this.start1;
    let mine = false;
    for (const c of goal) {
      if (p.board[c] === EMPTY) return false;
      if (p.board[c] === player) mine = true;
    }
    return mine;
  }

  isIllegal(p: RefPosition): boolean {
    if (this.hasWon(p.toMove, p)) return true;
    if (this.k !== 6) return false;
    const n = this.n;
    const b = p.board;
    const p1Blocked = b[n - 1] === EMPTY && [n - 2, n - 3, n - 4, n - 6].every((c) => b[c] === P2);
    const p2Blocked = b[0] === EMPTY && [1, 2, 3, 5].every((c) => b[c] === P1);
    const areas = [...this.start1, ...this.start2];
    const exempt = (player: 1 | 2): boolean =>
      this.published && p.toMove === player && areas.every((c) => b[c] !== player);
    return (p1Blocked && !exempt(1)) || (p2Blocked && !exempt(2));
  }

  isTerminal(p: RefPosition): boolean {
    return !this.isIllegal(p) && this.hasWon(p.toMove === 1 ? 2 : 1, p);
  }

  legalMoves(p: RefPosition): Array<[number, number]> {
    if (this.isIllegal(p) || this.isTerminal(p)) return [];
    return this.moves(p).filter(([from, to]) => {
      const board = Int8Array.from(p.board);
      board[to] = board[from]!;
      board[from] = EMPTY;
      return !this.isIllegal({ board, toMove: p.toMove === 1 ? 2 : 1 });
    });
  }
}

/** Naive colex rank: sum of C(c_i, i) over the sorted cells, with BigInt binomials. */
export function naiveColexRank(cells: number[]): bigint {
  const sorted = [...cells].sort((a, b) => a - b);
  let r = 0n;
  sorted.forEach((c, i) => (r += naiveBinomial(c, i + 1)));
  return r;
}

export function naiveBinomial(n: number, k: number): bigint {
  if (k > n) return 0n;
  let r = 1n;
  for (let i = 0; i < k; i++) r = (r * BigInt(n - i)) / BigInt(i + 1);
  return r;
}
