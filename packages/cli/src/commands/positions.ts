/** Reading positions and databases given on the command line, with errors a user can act on. */
import { availableParallelism } from 'node:os';
import { type BitboardEngine, CCheckersError, type ParsedPosition, type Position, type Side, WORDS, cellsOf, parsePosition, toWords } from '@ccheckers/core';
import { SolvedGame, type StoredValues, canComputeDistances, defaultDistanceLimit, openSolved, selectBackend, withComputedDistances } from '@ccheckers/solver';
import { UsageError } from '../options.js';

export function positionArgument(text: string): ParsedPosition {
  return parsePosition(text); // PositionFormatError: "malformed position" (exit 2)
}

/** A complete database (a file, or a store's folder), opened by random access, and the game it
 *  solves; refuses checkpoints, unfinished stores and missing files. */
/** The solved game of the database at `path`. Where it stores no distances a query explores up to
 *  SolvedGame's bound (4 million positions; 100,000 where each value is a read from disk), or
 *  `distanceLimit` where that is lower. */
export function openSolvedGame(path: string, distanceLimit?: number): SolvedGame {
  const db = openSolved(path);
  if (db.header.stage !== 'complete') {
    db.close();
    throw new UsageError(`${path} is an unfinished solve (a checkpoint after pass ${db.header.passes}); finish it with solve --resume`);
  }
  return new SolvedGame(db, distanceLimit === undefined ? undefined : Math.min(distanceLimit, defaultDistanceLimit(db)));
}

/**
 * `game` (of the database at `path`) with every stored state's distance to the end, where the
 * database stores none and is small enough: computed whole by the native kernel
 * (distance-table.ts; 7x7/2 in a third of a second). Else `game` as it is, which explores from
 * each won or lost position asked. With `position`: only where its answer has a distance (won or
 * lost, the game not over). A table whose values do not fit together (distance-table.ts says so)
 * is answered by exploring, as before, with a warning on stderr.
 */
export async function withDistances(game: SolvedGame, path: string, position?: Position): Promise<SolvedGame> {
  if (!canComputeDistances(game.values)) return game;
  if (position !== undefined) {
    const outcome = game.outcome(position);
    if ((outcome !== 'win' && outcome !== 'loss') || game.engine.isTerminal(toWords(position))) return game;
  }
  const { backend } = await selectBackend('auto');
  let values: StoredValues;
  try {
    values = await withComputedDistances(game.values, backend, availableParallelism());
  } catch (e) {
    if (!(e instanceof CCheckersError)) throw e;
    process.stderr.write(`ccheckers: warning: ${path}: no distance table could be computed (${e.message}); distances are explored from the position instead. ccheckers check --db ${path} --consistency checks every value\n`);
    return game;
  }
  return values === game.values ? game : new SolvedGame(values);
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

const SIDE_NAMES = ['x (P1)', 'o (P2)'] as const;

/** Why `engine` takes `p` for illegal (docs/rules.md section 4), as a clause; undefined when it is legal. */
export function illegalReason(engine: BitboardEngine, p: Position): string | undefined {
  const wp = toWords(p);
  if (!engine.isIllegal(wp)) return undefined;
  if (engine.hasWon(p.toMove, wp)) return `${SIDE_NAMES[p.toMove]} is to move but has already won, and only the player who just moved can have won`;
  // Def. 3 (6 pieces): a goal's tip empty and the cells in front of it all held by the other side;
  // the goal of the side not to move first (that one is illegal in either rule mode).
  const held = (cells: bigint, c: number) => ((cells >> BigInt(c)) & 1n) === 1n;
  const blocked = ([1 - p.toMove, p.toMove] as Side[]).find((b) => {
    const tip = engine.tables.blockTip[b];
    const blocker = b === 0 ? p.p2 : p.p1;
    return !held(p.p1 | p.p2, tip) && blockCells(engine, b).every((c) => held(blocker, c));
  });
  if (blocked === undefined) return 'it breaks a rule of docs/rules.md section 4';
  const tip = engine.tables.blockTip[blocked];
  const cells = blockCells(engine, blocked).sort((a, b) => Math.abs(a - tip) - Math.abs(b - tip));
  const list = `${cells.slice(0, -1).join(', ')} and ${cells.at(-1)}`;
  return `the goal of ${SIDE_NAMES[blocked]} is blocked, cell ${tip} empty and cells ${list} held by ${SIDE_NAMES[1 - blocked]}`;
}

function blockCells(engine: BitboardEngine, side: Side): number[] {
  return cellsOf(engine.tables.blockCells.subarray(side * WORDS, (side + 1) * WORDS));
}
