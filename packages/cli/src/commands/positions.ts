/** Reading positions and databases given on the command line, with errors a user can act on. */
import { type ParsedPosition, parsePosition } from '@ccheckers/core';
import { SolvedGame, openSolved } from '@ccheckers/solver';
import { UsageError } from '../options.js';

export function positionArgument(text: string): ParsedPosition {
  return parsePosition(text); // PositionFormatError: "malformed position" (exit 2)
}

/** A complete database (a file, or a store's folder), opened by random access, and the game it
 *  solves; refuses checkpoints, unfinished stores and missing files. */
export function openSolvedGame(path: string): SolvedGame {
  const db = openSolved(path);
  if (db.header.stage !== 'complete') {
    db.close();
    throw new UsageError(`${path} is an unfinished solve (a checkpoint after pass ${db.header.passes}); finish it with solve --resume`);
  }
  return new SolvedGame(db);
}

export function checkSameVariant(game: SolvedGame, parsed: ParsedPosition, path: string): void {
  const h = game.values.header;
  if (parsed.variant.size !== h.board || parsed.variant.pieces !== h.pieces) {
    throw new UsageError(`the position is ${parsed.variant.name} but ${path} solves ${game.engine.variant.name}`);
  }
}

export function moveText(m: { from: number; to: number }): string {
  return `${m.from}-${m.to}`;
}
