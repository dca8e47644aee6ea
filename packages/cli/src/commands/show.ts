/** `ccheckers show`: a position drawn as the diamond, with its status under the rules. */
import { BitboardEngine, drawPosition, toWords } from '@ccheckers/core';
import { rulesOption } from '../options.js';
import { positionArgument } from './positions.js';

export function showCommand(text: string, o: { numbers?: boolean; rules: string }): number {
  const { variant: v, position } = positionArgument(text);
  const engine = new BitboardEngine(v, rulesOption(o.rules));
  const wp = toWords(position);
  const side = position.toMove === 0 ? 'x (P1)' : 'o (P2)';
  const status = engine.isIllegal(wp)
    ? 'illegal (docs/rules.md section 4)'
    : engine.isTerminal(wp)
      ? `game over: ${position.toMove === 0 ? 'o (P2)' : 'x (P1)'} has won`
      : `${engine.legalMoves(wp, new Int32Array(2 * engine.maxMoves))} legal moves`;
  process.stdout.write(`${drawPosition(v, position, o.numbers)}\n${v.name}, ${side} to move, ${status}\n`);
  return 0;
}
