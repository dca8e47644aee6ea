/**
 * The playable variants of docs/rules.md section 3: board size m, pieces per player k, and the start
 * areas. P2's start is the 180-degree rotation of P1's; each player's goal is the other's start.
 */
import { UnsupportedVariantError } from '../errors.js';
import { type BoardGeometry, boardGeometry } from './board.js';

/** Rule mode of docs/rules.md section 4: `clean`, or `published` (the published-data exception). */
export type RuleMode = 'clean' | 'published';
export const RULE_MODES: readonly RuleMode[] = ['clean', 'published'];

/** P1's start cells for each supported (m, k), docs/rules.md section 3 (exactly that table). */
const P1_START: Readonly<Record<number, Readonly<Record<number, readonly number[]>>>> = {
  2: { 1: [0] },
  3: { 1: [0], 3: [0, 1, 2] },
  4: { 3: [0, 1, 2], 4: [0, 1, 2, 4], 6: [0, 1, 2, 3, 4, 5] },
  5: { 6: [0, 1, 2, 3, 4, 5] },
  6: { 4: [0, 1, 2, 4], 6: [0, 1, 2, 3, 4, 5] },
  7: {
    1: [0],
    2: [0, 1],
    3: [0, 1, 2],
    4: [0, 1, 2, 4],
    5: [1, 2, 3, 4, 5],
    6: [0, 1, 2, 3, 4, 5],
  },
  9: {
    4: [0, 1, 2, 4],
    5: [0, 1, 2, 3, 5],
    6: [0, 1, 2, 3, 4, 5],
    7: [0, 1, 2, 3, 5, 7, 8],
    8: [0, 1, 2, 3, 4, 5, 7, 8],
    10: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
  },
};

/** Every supported (m, k) pair, in table order. */
export function supportedVariants(): Array<{ size: number; pieces: number }> {
  const out: Array<{ size: number; pieces: number }> = [];
  for (const [m, byK] of Object.entries(P1_START)) {
    for (const k of Object.keys(byK)) out.push({ size: Number(m), pieces: Number(k) });
  }
  return out;
}

export class Variant {
  readonly geometry: BoardGeometry;
  /** P1's start cells (= P2's goal), increasing. */
  readonly p1Start: readonly number[];
  /** P2's start cells (= P1's goal), increasing. */
  readonly p2Start: readonly number[];
  /**
   * Whether the left-right mirror is a symmetry of the game: only when the start areas are
   * mirror-symmetric (not so on 7x7 with 2 pieces, whose start is cells 0 and 1).
   */
  readonly mirrorSymmetric: boolean;

  constructor(
    readonly size: number,
    readonly pieces: number,
  ) {
    const start = P1_START[size]?.[pieces];
    if (!start) {
      const sizes = Object.keys(P1_START).join(', ');
      const ks = P1_START[size] ? Object.keys(P1_START[size]!).join(', ') : '';
      throw new UnsupportedVariantError(
        P1_START[size]
          ? `the ${size}x${size} board is defined for ${ks} pieces per player, not ${pieces}`
          : `board size ${size} is not supported (supported sizes: ${sizes})`,
      );
    }
    this.geometry = boardGeometry(size);
    this.p1Start = start;
    const n = this.geometry.cells;
    this.p2Start = start.map((c) => n - 1 - c).sort((a, b) => a - b);
    this.mirrorSymmetric = start.every((c) => start.includes(this.geometry.mirror[c]!));
  }

  /** Number of cells N. */
  get cells(): number {
    return this.geometry.cells;
  }

  /** Goal cells of player 0 (P1) or 1 (P2). */
  goal(player: 0 | 1): readonly number[] {
    return player === 0 ? this.p2Start : this.p1Start;
  }

  /** Short name such as `7x7/3`. */
  get name(): string {
    return `${this.size}x${this.size}/${this.pieces}`;
  }
}

const variantCache = new Map<string, Variant>();

/** The variant (m, k); throws UnsupportedVariantError for pairs docs/rules.md does not define. */
export function variant(size: number, pieces: number): Variant {
  const key = `${size}/${pieces}`;
  let v = variantCache.get(key);
  if (!v) {
    v = new Variant(size, pieces);
    variantCache.set(key, v);
  }
  return v;
}
