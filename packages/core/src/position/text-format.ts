/**
 * The position text format used by every command: one character per cell in cell order
 * (`x` = P1, `o` = P2, `.` = empty), then a space and the side to move (`x` or `o`). The board is
 * inferred from the length (m * m) and the piece count from the pieces. Whitespace and `/` may
 * separate rows on input. Example, 4x4 with 3 pieces at the start: `xxx..........ooo x`.
 */
import { PositionFormatError } from '../errors.js';
import { type Variant, supportedVariants, variant } from '../geometry/variant.js';
import type { Position, Side } from './position.js';

export interface ParsedPosition {
  readonly variant: Variant;
  readonly position: Position;
}

export function parsePosition(text: string): ParsedPosition {
  const trimmed = text.trim();
  // The side to move is the last character, after a separator. Tested by hand, not with a regular
  // expression such as /^(.*?)[\s/]+([xo])$/, which backtracks over a long run of separators
  // (quadratic: 6.6 s for 100,000 slashes, where `serve` parses what a request sends).
  const side = trimmed.at(-1);
  if ((side !== 'x' && side !== 'o') || !/[\s/]/.test(trimmed.at(-2) ?? '')) {
    throw new PositionFormatError(`position must end with a space and the side to move ('x' or 'o'): ${quoted(text)}`);
  }
  const board = trimmed.slice(0, -1).replace(/[\s/]+/g, '');
  const toMove: Side = side === 'x' ? 0 : 1;
  const bad = /[^xo.]/.exec(board);
  if (bad) {
    throw new PositionFormatError(
      `unexpected character ${JSON.stringify(bad[0])} at cell ${bad.index}; use 'x' (P1), 'o' (P2) or '.' (empty)`,
    );
  }
  const size = Math.round(Math.sqrt(board.length));
  const sizes = [...new Set(supportedVariants().map((v) => v.size))];
  if (size * size !== board.length || !sizes.includes(size)) {
    throw new PositionFormatError(
      `position has ${board.length} cells; expected m*m cells for a supported board size m (${sizes.join(', ')}), e.g. 49 for 7x7`,
    );
  }
  let p1 = 0n;
  let p2 = 0n;
  let k1 = 0;
  let k2 = 0;
  for (let c = 0; c < board.length; c++) {
    const ch = board[c];
    if (ch === 'x') {
      p1 |= 1n << BigInt(c);
      k1++;
    } else if (ch === 'o') {
      p2 |= 1n << BigInt(c);
      k2++;
    }
  }
  if (k1 !== k2) {
    throw new PositionFormatError(`unequal piece counts: ${k1} 'x' (P1) and ${k2} 'o' (P2)`);
  }
  let v: Variant;
  try {
    v = variant(size, k1);
  } catch (e) {
    throw new PositionFormatError(`unsupported variant: ${(e as Error).message}`);
  }
  return { variant: v, position: { p1, p2, toMove } };
}

export function formatPosition(v: Variant, p: Position): string {
  let s = '';
  for (let c = 0; c < v.cells; c++) {
    const bit = 1n << BigInt(c);
    s += p.p1 & bit ? 'x' : p.p2 & bit ? 'o' : '.';
  }
  return `${s} ${p.toMove === 0 ? 'x' : 'o'}`;
}

/** The initial position: P1 on its start, P2 on its start, P1 to move. */
export function startPosition(v: Variant): Position {
  let p1 = 0n;
  let p2 = 0n;
  for (const c of v.p1Start) p1 |= 1n << BigInt(c);
  for (const c of v.p2Start) p2 |= 1n << BigInt(c);
  return { p1, p2, toMove: 0 };
}

/** The position drawn as the diamond, one text row per board row (for `show` and `play`). */
export function drawPosition(v: Variant, p: Position, withNumbers = false): string {
  const g = v.geometry;
  const lines: string[] = [];
  const width = withNumbers ? 4 : 2;
  for (let r = 0; r < g.rows; r++) {
    const len = g.rowLength(r);
    const indent = ' '.repeat(((v.size - len) * width) / 2);
    const cells: string[] = [];
    for (let q = 0; q < len; q++) {
      const c = g.rowStart[r]! + q;
      const bit = 1n << BigInt(c);
      const mark = p.p1 & bit ? 'x' : p.p2 & bit ? 'o' : '.';
      cells.push(withNumbers ? `${mark}${String(c).padStart(2, ' ')}`.padEnd(width - 1) : mark);
    }
    lines.push(indent + cells.join(' '));
  }
  return lines.join('\n');
}

/** The text as a JSON string for a message, its first 80 characters where it is longer. */
function quoted(text: string): string {
  const limit = 80;
  return text.length <= limit ? JSON.stringify(text) : `${JSON.stringify(text.slice(0, limit))} (and ${text.length - limit} more characters)`;
}
