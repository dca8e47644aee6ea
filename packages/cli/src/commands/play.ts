/**
 * `ccheckers play`: a game against perfect play in the terminal. The board is drawn with cell
 * numbers; moves are typed as `from-to`. Reads lines from stdin, so it also works from a pipe.
 */
import { createInterface } from 'node:readline';
import { type Move, type Position, applyMove, drawPosition, formatPosition, startPosition } from '@ccheckers/core';
import { UsageError } from '../options.js';
import { describeValue, distanceNote } from './query.js';
import { EXIT_INTERRUPTED } from '../exit-codes.js';
import { checkSameVariant, illegalReason, moveText, openSolvedGame, positionArgument, withDistances } from './positions.js';

export async function playCommand(o: { db: string; as: string; from?: string }): Promise<number> {
  if (o.as !== 'x' && o.as !== 'o') throw new UsageError(`--as must be x (P1, moves first) or o (P2), got "${o.as}"`);
  const human = o.as === 'x' ? 0 : 1;
  const opened = openSolvedGame(o.db);
  const v = opened.engine.variant;
  let p: Position = startPosition(v);
  if (o.from !== undefined) {
    const parsed = positionArgument(o.from);
    checkSameVariant(opened, parsed, o.db);
    const why = illegalReason(opened.engine, parsed.position);
    if (why) throw new UsageError(`--from ${o.from} is an illegal position: ${why} (docs/rules.md section 4)`);
    p = parsed.position;
  }
  const game = await withDistances(opened, o.db);
  const say = (s: string) => process.stdout.write(`${s}\n`);
  const rl = createInterface({ input: process.stdin, terminal: process.stdin.isTTY === true });
  // Ctrl-C at a terminal reaches readline, not the process: end the game as an interrupt (130).
  let interrupted = false;
  rl.on('SIGINT', () => {
    interrupted = true;
    say('');
    rl.close();
  });
  const lines = rl[Symbol.asyncIterator]();
  const side = (s: 0 | 1) => (s === 0 ? 'x' : 'o');
  const named = (s: 0 | 1) => (s === 0 ? 'x (P1)' : 'o (P2)');
  // Whoever is to move moves first: x from the initial position, either side from --from.
  const first = game.analyse(p).terminal ? '' : p.toMove === human ? ' and move first' : `; ccheckers plays ${named(p.toMove)} and moves first`;
  say(`${v.name}: you play ${named(human)}${first}. Moves are from-to (e.g. ${moveText(game.legalMoves(p)[0] ?? { from: 0, to: 0 })}); "moves" lists them, "quit" ends.`);
  const note = distanceNote(game.analyse(p), game.values.hasDistances);
  if (note) say(note);
  try {
    for (;;) {
      const info = game.analyse(p);
      say(`\n${drawPosition(v, p, true)}\n${formatPosition(v, p)}  ${describeValue(info, side(p.toMove))}`);
      if (info.terminal || info.outcome === 'illegal') {
        const winner = p.toMove === 0 ? 1 : 0;
        say(info.outcome === 'illegal' ? 'illegal position: nothing to play' : winner === human ? 'You win.' : 'ccheckers wins.');
        return 0;
      }
      if (p.toMove !== human) {
        const best = info.best!;
        say(`ccheckers plays ${moveText(best)}`);
        p = applyMove(p, best);
        continue;
      }
      let move: Move | undefined;
      while (!move) {
        process.stdout.write('your move> ');
        const next = await lines.next();
        if (next.done) {
          if (interrupted) return EXIT_INTERRUPTED;
          say('\n(end of input)');
          return 0;
        }
        const text = next.value.trim();
        if (text === 'quit' || text === 'q') return 0;
        if (text === 'moves' || text === '?') {
          say(info.moves.map((m) => `${moveText(m.move)} (${m.outcome})`).join('  '));
          continue;
        }
        const m = /^(\d+)\s*-\s*(\d+)$/.exec(text);
        const candidate = m ? info.moves.find((x) => x.move.from === Number(m[1]) && x.move.to === Number(m[2])) : undefined;
        if (!candidate) say(m ? `${text} is not a legal move here; "moves" lists them` : 'type a move as from-to, e.g. 3-10');
        else move = candidate.move;
      }
      p = applyMove(p, move);
    }
  } finally {
    rl.close();
  }
}
