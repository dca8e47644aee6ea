/** `ccheckers show`: a position drawn as the diamond, with its status under the rules, and with
 *  --db its value and best move from a solved database (as `query` gives them). */
import { BitboardEngine, drawPosition, toWords } from '@ccheckers/core';
import { UsageError, rulesOption } from '../options.js';
import { checkSameVariant, illegalReason, moveText, openSolvedGame, positionArgument, withDistances } from './positions.js';
import { describeValue, distanceNote } from './query.js';

export async function showCommand(text: string, o: { numbers?: boolean; rules?: string; db?: string }): Promise<number> {
  const parsed = positionArgument(text);
  const { variant: v, position } = parsed;
  const rules = rulesOption(o.rules ?? 'clean');
  const game = o.db === undefined ? undefined : openSolvedGame(o.db);
  if (game) {
    checkSameVariant(game, parsed, o.db!);
    const solvedUnder = game.values.header.rules;
    if (o.rules !== undefined && o.rules !== solvedUnder) throw new UsageError(`--rules ${o.rules}, but ${o.db} was solved under the ${solvedUnder} rules`);
  }
  const engine = game?.engine ?? new BitboardEngine(v, rules);
  const wp = toWords(position);
  const side = position.toMove === 0 ? 'x (P1)' : 'o (P2)';
  const status = engine.isIllegal(wp)
    ? `illegal: ${illegalReason(engine, position)} (docs/rules.md section 4)`
    : engine.isTerminal(wp)
      ? `game over: ${position.toMove === 0 ? 'o (P2)' : 'x (P1)'} has won`
      : `${engine.legalMoves(wp, new Int32Array(2 * engine.maxMoves))} legal moves`;
  const lines = [drawPosition(v, position, o.numbers), `${v.name}, ${side} to move, ${status}`];
  if (game) {
    const answering = await withDistances(game, o.db!, position);
    const info = answering.analyse(position);
    lines.push(`value     ${describeValue(info, position.toMove === 0 ? 'x' : 'o')}`);
    if (info.best) lines.push(`best      ${moveText(info.best)}`);
    const note = distanceNote(info, answering.values.hasDistances);
    if (note) lines.push(note);
  }
  process.stdout.write(`${lines.join('\n')}\n`);
  return 0;
}
