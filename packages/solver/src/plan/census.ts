/**
 * Exact counts of illegal and terminal positions (docs/rules.md section 4) without a table, for
 * any variant: the rules look only at the two goal areas, so every cell outside them is like any
 * other, and the positions are counted by how they colour the goals.
 *
 * For each goal area every colouring (empty, P1 or P2 on each of its k cells: 3^k) is reduced to
 * a class: the pieces of each player in it, whether it satisfies its owner's win condition
 * (Def. 1), whether it holds a Def. 3 block, and whether P1's part is mirror-symmetric. A pair of
 * classes (one per goal) fixes everything the rules test, and the positions with that pair are
 * its colourings times the ways to put the remaining pieces on the R = N - 2k other cells:
 * C(R, a) C(R - a, b). Positions with P1 to move and with P2 to move are counted separately.
 *
 * Stored states (P1 to move, one per mirror class of P1's placement: core's state-space.ts) are
 * counted from the same pairs: a class of two placements has the same counts for both (the rules
 * are mirror-symmetric), so stored = (all + mirror-symmetric placements) / 2.
 *
 * Everything is exact (BigInt); 9x9 with 10 pieces takes 59,049 colourings per goal.
 */
import { type RuleMode, type Variant, WORDS, buildTables } from '@ccheckers/core';

/** Counts of one kind of position (illegal, or terminal), by side to move. */
export interface SideCounts {
  p1ToMove: bigint;
  p2ToMove: bigint;
  total: bigint;
}

export interface Census {
  board: number;
  pieces: number;
  rules: RuleMode;
  /** All positions, both sides to move, illegal included: C(N, k) C(N - k, k) 2. */
  positions: bigint;
  /** Illegal positions (both sides to move): what `solve` reports as `illegal`. */
  illegal: SideCounts;
  /** Of those, illegal by Def. 2 (the side to move has already won), and by Def. 3 only. */
  illegalDef2: bigint;
  illegalDef3Only: bigint;
  /** Published rule mode: Def. 3 blocks the published-data exception makes legal (0 in clean). */
  exempted: bigint;
  /** Terminal positions: legal, and won by the side that just moved. With P1 to move they are
   *  won by P2, with P2 to move won by P1. */
  terminal: SideCounts;
  /** The solver's stored states (P1 to move, one per mirror class of P1's placement). */
  stored: { states: bigint; illegal: bigint; terminal: bigint };
}

/** One colouring class of a goal area. */
interface GoalClass {
  /** Pieces of P1 and of P2 on the area. */
  a: number;
  b: number;
  /** The area's owner has won (Def. 1): the area full, one of the owner's pieces in it. */
  won: boolean;
  /** Def. 3 (k = 6): the area's tip empty and its four blocking cells held by the blocker. */
  blocked: boolean;
  /** P1's part of the colouring is its own mirror image. */
  symmetric: boolean;
  /** Colourings in the class. */
  count: number;
}

/**
 * The cells the rules test, read from the engine's tables (so the census and the engine cannot
 * disagree about which cells they are): each player's goal, and with 6 pieces the tip and the
 * four blocking cells of each goal.
 */
export interface RuleCells {
  cells: number;
  pieces: number;
  /** goal[0]: P1's goal (P2's start, bottom); goal[1]: P2's goal (top). */
  goal: [number[], number[]];
  /** Def. 3 of the player whose goal it is, or null where there is none (k != 6). */
  block: [{ tip: number; blockers: number[] } | null, { tip: number; blockers: number[] } | null];
  mirror: readonly number[];
  mirrorSymmetric: boolean;
}

export function ruleCells(v: Variant): RuleCells {
  const t = buildTables(v);
  const cellsOf = (words: Uint32Array, player: 0 | 1): number[] => {
    const out: number[] = [];
    for (let c = 0; c < v.cells; c++) if ((words[player * WORDS + (c >>> 5)]! >>> (c & 31)) & 1) out.push(c);
    return out;
  };
  const goal: [number[], number[]] = [cellsOf(t.goal, 0), cellsOf(t.goal, 1)];
  const block = ([0, 1] as const).map((p) => (v.pieces === 6 ? { tip: t.blockTip[p], blockers: cellsOf(t.blockCells, p) } : null)) as RuleCells['block'];
  for (const p of [0, 1] as const) {
    const b = block[p];
    if (b && ![b.tip, ...b.blockers].every((c) => goal[p].includes(c))) {
      throw new Error(`census: the Def. 3 cells of ${v.name} lie outside the goal, which the census assumes`);
    }
  }
  if (goal[0].some((c) => goal[1].includes(c))) throw new Error(`census: the goals of ${v.name} overlap`);
  return { cells: v.cells, pieces: v.pieces, goal, block, mirror: v.geometry.mirror, mirrorSymmetric: v.mirrorSymmetric };
}

/**
 * The classes of the colourings of goal `owner` (0: P1's goal, 1: P2's). Def. 3 on P1's goal is
 * a block by P2, on P2's goal by P1.
 */
function goalClasses(rc: RuleCells, owner: 0 | 1): GoalClass[] {
  const cells = rc.goal[owner];
  const k = cells.length;
  const index = new Map<number, number>(cells.map((c, i) => [c, i]));
  const block = rc.block[owner];
  const blockerColour = owner === 0 ? 2 : 1;
  const byKey = new Map<string, GoalClass>();
  const colour = new Array<number>(k).fill(0); // 0 empty, 1 P1, 2 P2
  const total = 3 ** k;
  for (let code = 0; code < total; code++) {
    let rest = code;
    let a = 0;
    let b = 0;
    for (let i = 0; i < k; i++) {
      colour[i] = rest % 3;
      rest = Math.floor(rest / 3);
      if (colour[i] === 1) a++;
      else if (colour[i] === 2) b++;
    }
    const own = owner === 0 ? a : b;
    const won = a + b === k && own > 0;
    const blocked = block !== null && colour[index.get(block.tip)!] === 0 && block.blockers.every((c) => colour[index.get(c)!] === blockerColour);
    let symmetric = true;
    for (let i = 0; i < k && symmetric; i++) {
      if (colour[i] !== 1) continue;
      const m = index.get(rc.mirror[cells[i]!]!);
      symmetric = m !== undefined && colour[m] === 1;
    }
    const key = `${a},${b},${won},${blocked},${symmetric}`;
    const c = byKey.get(key);
    if (c) c.count++;
    else byKey.set(key, { a, b, won, blocked, symmetric, count: 1 });
  }
  return [...byKey.values()];
}

const binomials = new Map<string, bigint>();

/** C(n, k) exactly; 0 when k < 0 or k > n. */
export function bigBinomial(n: number, k: number): bigint {
  if (k < 0 || k > n) return 0n;
  const kk = Math.min(k, n - k);
  const key = `${n},${kk}`;
  let v = binomials.get(key);
  if (v === undefined) {
    v = 1n;
    for (let i = 1; i <= kk; i++) v = (v * BigInt(n - kk + i)) / BigInt(i);
    binomials.set(key, v);
  }
  return v;
}

/** Subsets of size `size` of a set that the mirror maps onto itself, with `fixed` cells on the
 *  mirror line and `pairs` pairs of mirror images, that are their own mirror image. */
export function symmetricSubsets(fixed: number, pairs: number, size: number): bigint {
  let sum = 0n;
  for (let j = 0; 2 * j <= size; j++) sum += bigBinomial(fixed, size - 2 * j) * bigBinomial(pairs, j);
  return sum;
}

/** Mirror structure of a set of cells closed under the mirror: cells on the mirror line, pairs. */
function mirrorStructure(cells: number[], mirror: readonly number[]): { fixed: number; pairs: number } {
  const set = new Set(cells);
  let fixed = 0;
  for (const c of cells) {
    if (!set.has(mirror[c]!)) throw new Error('census: a cell set that the mirror does not map onto itself');
    if (mirror[c] === c) fixed++;
  }
  return { fixed, pairs: (cells.length - fixed) / 2 };
}

/**
 * Stored-state counts of the solver's layout: P1 placements (groups: one per mirror class where
 * the mirror is a symmetry of the variant) times P2 placements among the free cells.
 */
export function storedLayout(v: Variant): { p1Placements: bigint; p2Placements: bigint; groups: bigint; states: bigint } {
  const n = v.cells;
  const k = v.pieces;
  const p1Placements = bigBinomial(n, k);
  const p2Placements = bigBinomial(n - k, k);
  let groups = p1Placements;
  if (v.mirrorSymmetric) {
    const all = Array.from({ length: n }, (_, c) => c);
    const { fixed, pairs } = mirrorStructure(all, v.geometry.mirror);
    groups = (p1Placements + symmetricSubsets(fixed, pairs, k)) / 2n;
  }
  return { p1Placements, p2Placements, groups, states: groups * p2Placements };
}

/** Illegal, and terminal, for the side to move of a position whose goals are coloured c1, c2. */
function judge(c1: GoalClass, c2: GoalClass, side: 0 | 1, published: boolean): { illegal: boolean; def2: boolean; exempt: boolean; terminal: boolean } {
  // Def. 2: the side to move has won (c1 is P1's goal, c2 P2's).
  const def2 = side === 0 ? c1.won : c2.won;
  // Def. 3: a block against the side to move is not illegal in the published mode when that
  // side has no piece in either start area (= either goal); a block against the other side is.
  const blockedMover = side === 0 ? c1.blocked : c2.blocked;
  const blockedOther = side === 0 ? c2.blocked : c1.blocked;
  const moverOutside = side === 0 ? c1.a === 0 && c2.a === 0 : c1.b === 0 && c2.b === 0;
  const exempt = blockedMover && published && moverOutside;
  const illegal = def2 || (blockedMover && !exempt) || blockedOther;
  const terminal = !illegal && (side === 0 ? c2.won : c1.won);
  return { illegal, def2, exempt: exempt && !def2 && !blockedOther, terminal };
}

/** The census of docs/rules.md section 4 for a variant and rule mode (see the file comment). */
export function census(v: Variant, rules: RuleMode): Census {
  const rc = ruleCells(v);
  const n = v.cells;
  const k = v.pieces;
  const published = rules === 'published';
  const classes1 = goalClasses(rc, 0);
  const classes2 = goalClasses(rc, 1);
  const goalCells = new Set([...rc.goal[0], ...rc.goal[1]]);
  const rest = Array.from({ length: n }, (_, c) => c).filter((c) => !goalCells.has(c));
  const r = rest.length;
  const restMirror = v.mirrorSymmetric ? mirrorStructure(rest, rc.mirror) : undefined;

  const illegal = [0n, 0n];
  const terminal = [0n, 0n];
  let def2 = 0n;
  let exempted = 0n;
  // P1 to move, over mirror-symmetric P1 placements only (for the stored-state counts).
  let illegalSym = 0n;
  let terminalSym = 0n;
  for (const c1 of classes1) {
    for (const c2 of classes2) {
      const ka = k - c1.a - c2.a;
      const kb = k - c1.b - c2.b;
      if (ka < 0 || kb < 0 || ka + kb > r) continue;
      const colourings = BigInt(c1.count) * BigInt(c2.count);
      const ways = colourings * bigBinomial(r, ka) * bigBinomial(r - ka, kb);
      const symWays =
        restMirror && c1.symmetric && c2.symmetric ? colourings * symmetricSubsets(restMirror.fixed, restMirror.pairs, ka) * bigBinomial(r - ka, kb) : 0n;
      for (const side of [0, 1] as const) {
        const j = judge(c1, c2, side, published);
        if (j.illegal) illegal[side]! += ways;
        if (j.def2) def2 += ways;
        if (j.exempt) exempted += ways;
        if (j.terminal) terminal[side]! += ways;
        if (side === 0) {
          if (j.illegal) illegalSym += symWays;
          if (j.terminal) terminalSym += symWays;
        }
      }
    }
  }
  const layout = storedLayout(v);
  const stored = (all: bigint, sym: bigint) => (v.mirrorSymmetric ? (all + sym) / 2n : all);
  const sides = (x: bigint[]): SideCounts => ({ p1ToMove: x[0]!, p2ToMove: x[1]!, total: x[0]! + x[1]! });
  const illegalCounts = sides(illegal);
  return {
    board: v.size,
    pieces: k,
    rules,
    positions: layout.p1Placements * layout.p2Placements * 2n,
    illegal: illegalCounts,
    illegalDef2: def2,
    illegalDef3Only: illegalCounts.total - def2,
    exempted,
    terminal: sides(terminal),
    stored: { states: layout.states, illegal: stored(illegal[0]!, illegalSym), terminal: stored(terminal[0]!, terminalSym) },
  };
}

/**
 * The same counts for one P1 placement (cells `p1`), over every P2 placement and both sides to
 * move, by a different route: the P2 pieces on the goal cells P1 leaves free are enumerated as
 * subsets and the rest counted by a binomial. The tests compare it with the engine position by
 * position, and its sum over all P1 placements with census().
 */
export function placementCensus(rc: RuleCells, rules: RuleMode, p1: readonly number[]): { illegal: [bigint, bigint]; terminal: [bigint, bigint] } {
  const k = rc.pieces;
  const a = new Set(p1);
  if (a.size !== k) throw new RangeError(`placementCensus: ${k} distinct cells expected`);
  const free = rc.goal.map((g) => g.filter((c) => !a.has(c)));
  const goalCells = new Set([...rc.goal[0], ...rc.goal[1]]);
  const restFree = rc.cells - goalCells.size - p1.filter((c) => !goalCells.has(c)).length;
  const inStart = p1.some((c) => goalCells.has(c)); // P1 in either start area (= either goal)
  const illegal: [bigint, bigint] = [0n, 0n];
  const terminal: [bigint, bigint] = [0n, 0n];
  const f0 = free[0]!;
  const f1 = free[1]!;
  for (let m0 = 0; m0 < 1 << f0.length; m0++) {
    for (let m1 = 0; m1 < 1 << f1.length; m1++) {
      const b = new Set<number>();
      f0.forEach((c, i) => (m0 >>> i) & 1 && b.add(c));
      f1.forEach((c, i) => (m1 >>> i) & 1 && b.add(c));
      const kb = k - b.size;
      if (kb < 0 || kb > restFree) continue;
      const ways = bigBinomial(restFree, kb);
      const occupied = (c: number) => a.has(c) || b.has(c);
      const won = (p: 0 | 1) => rc.goal[p].every(occupied) && rc.goal[p].some((c) => (p === 0 ? a : b).has(c));
      const blocked = (p: 0 | 1) => {
        const blk = rc.block[p];
        return blk !== null && !occupied(blk.tip) && blk.blockers.every((c) => (p === 0 ? b : a).has(c));
      };
      const bInStart = [...b].some((c) => goalCells.has(c));
      for (const side of [0, 1] as const) {
        const other = side === 0 ? 1 : 0;
        const exempt = rules === 'published' && !(side === 0 ? inStart : bInStart);
        const bad = won(side) || (blocked(side) && !exempt) || blocked(other);
        if (bad) illegal[side] += ways;
        else if (won(other)) terminal[side] += ways;
      }
    }
  }
  return { illegal, terminal };
}
