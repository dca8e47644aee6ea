/** `ccheckers query`: the value of a position in a solved database, each legal move's value, the best move. */
import { type ParsedPosition, formatPosition } from '@ccheckers/core';
import type { MoveInfo, PositionInfo } from '@ccheckers/solver';
import type { QueryJson } from '../query-types.js';
import { table } from '../ui/format.js';
import { checkSameVariant, moveText, openSolvedGame, positionArgument, withDistances } from './positions.js';

export async function queryCommand(text: string, o: { db: string; json?: boolean }): Promise<number> {
  const parsed = positionArgument(text);
  const opened = openSolvedGame(o.db);
  checkSameVariant(opened, parsed, o.db);
  const game = await withDistances(opened, o.db, parsed.position);
  const info = game.analyse(parsed.position);
  const side = parsed.position.toMove === 0 ? 'x' : 'o';
  if (o.json) {
    process.stdout.write(`${JSON.stringify(queryJson(parsed, info))}\n`);
    return 0;
  }
  const lines = [`position  ${formatPosition(parsed.variant, parsed.position)}`, `value     ${describeValue(info, side)}`];
  if (info.moves.length > 0) {
    lines.push(`best      ${info.best ? moveText(info.best) : '-'}`, '');
    lines.push(table(['move', `for ${side}`, 'plies to end'], info.moves.map((m) => moveRow(m))));
  }
  const note = distanceNote(info, game.values.hasDistances);
  if (note) lines.push('', note);
  process.stdout.write(`${lines.join('\n')}\n`);
  return 0;
}

/** The answer about a position as JSON (query --json, and serve's /api/position). */
export function queryJson(parsed: ParsedPosition, info: PositionInfo): QueryJson {
  return {
    position: formatPosition(parsed.variant, parsed.position),
    toMove: parsed.position.toMove === 0 ? 'x' : 'o',
    outcome: info.outcome,
    terminal: info.terminal,
    pliesToEnd: info.pliesToEnd ?? null,
    best: info.best ? moveText(info.best) : null,
    // a move's pliesToEnd: from this position, playing it, to the end under best play
    moves: info.moves.map((m) => ({ move: moveText(m.move), outcome: m.outcome, pliesToEnd: m.pliesToEnd === undefined ? null : m.pliesToEnd + 1 })),
  };
}

export function describeValue(info: PositionInfo, side: 'x' | 'o'): string {
  const other = side === 'x' ? 'o' : 'x';
  const name = (s: string) => (s === 'x' ? 'x (P1)' : 'o (P2)');
  if (info.outcome === 'illegal') return 'illegal position';
  if (info.terminal) return `game over: ${name(other)} has won`;
  const plies = info.pliesToEnd !== undefined ? ` in ${info.pliesToEnd} plies` : '';
  if (info.outcome === 'win') return `${name(side)} to move wins${plies}`;
  if (info.outcome === 'loss') return `${name(side)} to move loses${plies}`;
  return 'draw with best play';
}

/** Why a won or lost position has no distance, and what to do about it. */
export function distanceNote(info: PositionInfo, stored: boolean): string | undefined {
  if ((info.outcome !== 'win' && info.outcome !== 'loss') || info.pliesToEnd !== undefined || stored) return undefined;
  return 'note: no distances here (too many positions reachable to compute them on demand), so the best move may not make progress; solve with --distances to store them in the database';
}

function moveRow(m: MoveInfo): string[] {
  return [moveText(m.move), m.outcome, m.pliesToEnd === undefined ? '-' : String(m.pliesToEnd + 1)];
}
