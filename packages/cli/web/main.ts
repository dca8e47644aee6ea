/**
 * The explorer page: draws the position as an SVG diamond with @ccheckers/core's geometry, asks
 * the server (`ccheckers serve`) for the value and the legal moves, and lets the user play them.
 */
import { type Position, type Variant, applyMove, formatPosition, parsePosition, variant } from '@ccheckers/core';

import type { PositionAnswer as Analysis, MoveJson as MoveInfo } from '../src/query-types.js';

const SVG = 'http://www.w3.org/2000/svg';
const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const board = document.getElementById('board') as unknown as SVGSVGElement;

let v: Variant;
let history: Position[] = [];
let at = 0;
let analysis: Analysis | undefined;
let selected: number | undefined;
let request = 0;

async function api<T>(path: string): Promise<T> {
  const res = await fetch(path);
  const body = (await res.json()) as T & { error?: string };
  if (!res.ok) throw new Error(body.error ?? `HTTP ${res.status}`);
  return body;
}

function current(): Position {
  return history[at]!;
}

/** "P1 wins in 33 plies", from P1's point of view whoever is to move. */
function headline(a: Analysis): string {
  if (a.outcome === 'illegal') return 'Illegal position';
  if (a.outcome === 'draw') return 'Draw';
  const moverWins = a.outcome === 'win';
  const p1Wins = (a.toMove === 'x') === moverWins;
  const plies = a.pliesToEnd !== null ? (a.terminal ? ' (game over)' : ` in ${a.pliesToEnd} plies`) : '';
  return `${p1Wins ? 'P1' : 'P2'} wins${plies}`;
}

function cellXY(c: number): [number, number] {
  const g = v.geometry;
  return [30 + g.xOf[c]! * 22, 30 + g.rowOf[c]! * 38];
}

function draw(): void {
  const g = v.geometry;
  const p = current();
  board.replaceChildren();
  board.setAttribute('viewBox', `0 0 ${60 + (2 * v.size - 2) * 22} ${60 + (2 * v.size - 2) * 38}`);
  const goalOfX = new Set(v.p2Start);
  const goalOfO = new Set(v.p1Start);
  const moves = new Map<number, MoveInfo>();
  if (selected !== undefined && analysis) {
    for (const m of analysis.moves) {
      const [from, to] = m.move.split('-').map(Number) as [number, number];
      if (from === selected) moves.set(to, m);
    }
  }
  const movable = new Set((analysis?.moves ?? []).map((m) => Number(m.move.split('-')[0])));
  for (let c = 0; c < g.cells; c++) {
    const [x, y] = cellXY(c);
    const bit = 1n << BigInt(c);
    const circle = document.createElementNS(SVG, 'circle');
    circle.setAttribute('cx', String(x));
    circle.setAttribute('cy', String(y));
    circle.dataset.cell = String(c);
    const target = moves.get(c);
    if (p.p1 & bit || p.p2 & bit) {
      const side = p.p1 & bit ? 'x' : 'o';
      circle.setAttribute('r', '13');
      circle.setAttribute('class', `piece ${side}${movable.has(c) ? ' movable' : ''}${selected === c ? ' selected' : ''}`);
      if (movable.has(c)) circle.addEventListener('click', () => select(c));
    } else if (target) {
      circle.setAttribute('r', '10');
      circle.setAttribute('class', `target ${target.outcome}`);
      circle.dataset.outcome = target.outcome;
      const title = document.createElementNS(SVG, 'title');
      title.textContent = `${target.move}: ${target.outcome}${target.pliesToEnd !== null ? ` in ${target.pliesToEnd} plies` : ''}`;
      circle.append(title);
      circle.addEventListener('click', () => play(target.move));
    } else {
      circle.setAttribute('r', '9');
      circle.setAttribute('class', `cell${goalOfX.has(c) ? ' goal-x' : goalOfO.has(c) ? ' goal-o' : ''}`);
      if (selected !== undefined) circle.addEventListener('click', () => select(undefined));
    }
    board.append(circle);
    const label = document.createElementNS(SVG, 'text');
    label.setAttribute('x', String(x + 11));
    label.setAttribute('y', String(y - 9));
    label.setAttribute('class', 'label');
    label.textContent = String(c);
    board.append(label);
  }
  ($('undo') as HTMLButtonElement).disabled = at === 0;
  ($('redo') as HTMLButtonElement).disabled = at === history.length - 1;
  ($('best') as HTMLButtonElement).disabled = !analysis?.best;
}

function show(a: Analysis): void {
  $('headline').textContent = headline(a);
  $('detail').textContent = a.summary;
  const list = $('moves');
  list.replaceChildren(
    ...a.moves.map((m) => {
      const li = document.createElement('li');
      li.innerHTML = `<span class="dot ${m.outcome}"></span>`;
      li.append(`${m.move}${m.pliesToEnd !== null ? ` (${m.pliesToEnd})` : ''}${m.move === a.best ? ' ★' : ''}`);
      return li;
    }),
  );
}

async function refresh(): Promise<void> {
  const mine = ++request;
  const text = formatPosition(v, current());
  ($('position') as HTMLInputElement).value = text;
  history[at] = current();
  analysis = undefined;
  selected = undefined;
  draw();
  $('headline').textContent = 'thinking…';
  try {
    const a = await api<Analysis>(`/api/position?p=${encodeURIComponent(text)}`);
    if (mine !== request) return;
    analysis = a;
    $('error').textContent = '';
    show(a);
  } catch (e) {
    if (mine === request) $('error').textContent = (e as Error).message;
  }
  draw();
  document.body.dataset.ready = String(mine === request);
}

function select(c: number | undefined): void {
  selected = selected === c ? undefined : c;
  draw();
}

function play(move: string): void {
  const [from, to] = move.split('-').map(Number) as [number, number];
  history = history.slice(0, at + 1);
  history.push(applyMove(current(), { from, to }));
  at++;
  void refresh();
}

/** Shows position `text` (its analysis once the server answers: the promise), or says why it is
 *  none of this game's (undefined). */
function load(text: string): Promise<void> | undefined {
  try {
    const parsed = parsePosition(text);
    if (parsed.variant.size !== v.size || parsed.variant.pieces !== v.pieces) {
      throw new Error(`this database solves ${v.name}; the position is ${parsed.variant.name}`);
    }
    history = [parsed.position];
    at = 0;
    return refresh();
  } catch (e) {
    $('error').textContent = (e as Error).message;
    return undefined;
  }
}

/** The position the address names after its '#', if any (undefined: one that does not decode). */
function positionInAddress(): string | undefined {
  try {
    return decodeURIComponent(location.hash.slice(1));
  } catch {
    return undefined;
  }
}

async function start(): Promise<void> {
  const game = await api<{ board: number; pieces: number; rules: string; start: string; positions: number }>('/api/game');
  v = variant(game.board, game.pieces);
  $('variant').textContent = `${v.name}, ${game.rules} rules, ${game.positions.toLocaleString('en-US')} positions solved`;
  const fromAddress = positionInAddress();
  if (fromAddress === '' || fromAddress === undefined || load(fromAddress) === undefined) {
    // None, or not one of this game's: the start position, and why beside it.
    const why = fromAddress === undefined ? 'a malformed escape' : $('error').textContent;
    await load(game.start);
    if (fromAddress !== '') $('error').textContent = `the position after # in the address (${why}): the start position instead`;
  }
  $('undo').addEventListener('click', () => at > 0 && (at--, void refresh()));
  $('redo').addEventListener('click', () => at < history.length - 1 && (at++, void refresh()));
  $('best').addEventListener('click', () => analysis?.best && play(analysis.best));
  $('restart').addEventListener('click', () => load(game.start));
  $('load').addEventListener('click', () => load(($('position') as HTMLInputElement).value));
  $('copy').addEventListener('click', () => void navigator.clipboard?.writeText(formatPosition(v, current())));
  document.addEventListener('keydown', (e) => {
    if (e.target instanceof HTMLInputElement) return;
    if (e.key === 'ArrowLeft') $('undo').click();
    if (e.key === 'ArrowRight') $('redo').click();
    if (e.key === 'b') $('best').click();
  });
}

start().catch((e) => {
  $('error').textContent = `cannot reach the server: ${(e as Error).message}`;
});
