/**
 * The answer about one position, as `query --json` prints it and `serve` sends it to the
 * explorer page (which imports these types; no imports here, so the browser build can).
 */
export type OutcomeText = 'win' | 'loss' | 'draw' | 'illegal';

export interface MoveJson {
  move: string;
  /** For the side that plays the move. */
  outcome: OutcomeText;
  /** From the position, playing this move, to the end under best play; null when unknown. */
  pliesToEnd: number | null;
}

export interface QueryJson {
  position: string;
  toMove: 'x' | 'o';
  outcome: OutcomeText;
  terminal: boolean;
  pliesToEnd: number | null;
  best: string | null;
  moves: MoveJson[];
}

/** What `serve` answers at /api/position: the query, and its value in words. */
export interface PositionAnswer extends QueryJson {
  summary: string;
}
