/**
 * A mismatch of the consistency check in words (consistency.ts): the stored state, its stored and
 * expected value and distance, why, and the child that shows it.
 */
import { ILLEGAL, LOSS, NO_DISTANCE, UNKNOWN, WIN, WORDS, formatPosition, fromWords } from '@ccheckers/core';
import type { StoredValues } from '../database-file.js';
import { Kind, NO_VALUE, PROBLEM_NAMES, Problem, StateJudge, UNDETERMINED, readChildren, stateWords } from './judge.js';

export interface MismatchReport {
  index: number;
  /** The stored state (P1 to move), in the text format of core's position module. */
  position: string;
  problem: string;
  stored: { value: string; distance?: number };
  expected: { value: string; distance?: number };
  /** Why, in words (which move, which child). */
  detail: string;
  /** The child that shows it: the move, the position after it (the opponent to move), its value
   *  for the side to move there. */
  child?: { move: string; position: string; index: number; value: string; distance?: number };
}

const VALUE_WORD: Record<number, string> = { [UNKNOWN]: 'draw', [LOSS]: 'loss', [WIN]: 'win', [ILLEGAL]: 'illegal', [UNDETERMINED]: 'undetermined', [NO_VALUE]: 'no value' };

function valueWithDistance(value: number, distance: number, distances: boolean): { value: string; distance?: number } {
  return { value: VALUE_WORD[value]!, ...(distances && distance !== NO_DISTANCE ? { distance } : {}) };
}

/** Everything about the mismatch at stored state `index`, read from `reader`. */
export function explain(judge: StateJudge, reader: StoredValues, index: number): MismatchReport {
  const { space, engine } = judge;
  const a = new Uint32Array(WORDS);
  const b = new Uint32Array(WORDS);
  stateWords(space, engine, index, a, b);
  judge.prepare(b);
  judge.derive(a, b);
  readChildren(judge, reader);
  const v = reader.value(index);
  const d = reader.distance(index);
  const distances = reader.hasDistances;
  const problem = judge.judge(v, d, distances);
  const v1 = space.variant;
  const position = formatPosition(v1, fromWords({ p1: a, p2: b, toMove: 0 }));
  const stored = valueWithDistance(v, d, distances);
  const ev = judge.expectedValue;
  const expected = valueWithDistance(ev, judge.expectedDistance, distances && (ev === WIN || ev === LOSS));
  const w = judge.witness;
  const child =
    w >= 0
      ? (() => {
          const from = judge.childFrom[w]!;
          const to = judge.childTo[w]!;
          const moved = a.slice();
          moved[from >>> 5]! ^= 1 << (from & 31);
          moved[to >>> 5]! ^= 1 << (to & 31);
          return {
            move: `${from}-${to}`,
            position: formatPosition(v1, fromWords({ p1: moved, p2: b, toMove: 1 })),
            index: judge.childGroup * space.p2Placements + judge.childRank[w]!,
            ...valueWithDistance(judge.childValue[w]!, judge.childDistance[w]!, distances),
          };
        })()
      : undefined;
  const legal = judge.count;
  const pos = { p1: a, p2: b, toMove: 0 as const };
  let detail: string;
  switch (problem) {
    case Problem.ILLEGAL_STORED_LEGAL:
      detail = engine.hasWon(0, pos) ? 'illegal by Def. 2: the side to move (x) has already won' : 'illegal by Def. 3: a goal is blocked';
      break;
    case Problem.LEGAL_STORED_ILLEGAL:
      detail = 'legal under the rules (neither Def. 2 nor Def. 3 applies), so it must have a value';
      break;
    case Problem.TERMINAL_NOT_LOST:
      detail = 'terminal: o, who just moved, has filled its goal (Def. 1), so it is lost for x in 0';
      break;
    case Problem.MOVELESS:
      detail = 'legal and not terminal, but x has no move at all: such a position has no value (RULES.md section 5)';
      break;
    case Problem.WIN_WITHOUT_LOST_CHILD:
      detail = legal === 0 ? 'every move leads to an illegal position: a loss' : `none of the ${legal} legal moves leads to a loss for o`;
      break;
    case Problem.LOSS_WITH_CHILD_NOT_WON:
      detail = `the move ${child?.move} leads to a position that is a ${child?.value} for o, not a win`;
      break;
    case Problem.DRAW_DECIDED:
      detail =
        ev === WIN ? `the move ${child?.move} leads to a loss for o` : legal === 0 ? 'every move leads to an illegal position: a loss' : `all ${legal} legal moves lead to a win for o`;
      break;
    case Problem.DRAW_WITHOUT_DRAWN_CHILD:
      detail = `no legal move leads to a draw or a loss for o; the move ${child?.move} leads to a legal position stored as illegal`;
      break;
    case Problem.WRONG_DISTANCE:
      detail =
        ev === WIN
          ? `the nearest loss for o is the move ${child?.move}, at ${judge.childDistance[w]}`
          : ev === LOSS
            ? judge.kind === Kind.TERMINAL || legal === 0
              ? 'a loss without a legal move ends the game: distance 0'
              : `the farthest win for o is the move ${child?.move}, at ${judge.childDistance[w]}`
            : 'draws and illegal states have no distance';
      break;
    default:
      detail = 'agrees';
  }
  return {
    index,
    position,
    problem: PROBLEM_NAMES[problem] ?? 'none',
    stored,
    expected,
    detail,
    ...(child && problem !== Problem.WIN_WITHOUT_LOST_CHILD ? { child } : {}),
  };
}
