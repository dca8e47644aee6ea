/**
 * `ccheckers serve`: the solved-position explorer. Serves the page (built by vite into
 * dist/web) and answers position queries over HTTP from the database, on loopback by default.
 *
 *   GET /                      the page
 *   GET /assets/...            its scripts and styles
 *   GET /api/game              the variant, rules and start position of the database
 *   GET /api/position?p=POS    value, plies to the end, every legal move with its value, best move
 *
 * Bad requests get a 4xx with a JSON message; an error while answering one request is a 500 for
 * that request only.
 */
import { readFile } from 'node:fs/promises';
import { type IncomingMessage, type ServerResponse, createServer } from 'node:http';
import { extname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CCheckersError, formatPosition, startPosition } from '@ccheckers/core';
import type { SolvedGame } from '@ccheckers/solver';
import { UsageError, integer } from '../options.js';
import { grouped } from '../ui/format.js';
import { checkSameVariant, openSolvedGame, positionArgument, withDistances } from './positions.js';
import type { PositionAnswer } from '../query-types.js';
import { describeValue, queryJson } from './query.js';

const WEB_ROOT = fileURLToPath(new URL('../web/', import.meta.url)); // dist/web, beside dist/chunks (the bundle's chunk of this module)
const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
};

/**
 * The positions the server explores for distances where the database stores none (and none could
 * be computed whole), at most: a request holds its one thread meanwhile (some 2 µs a position).
 * 7x7/2's sets (1.25 million from its start, 3 s) fit, and the last one is kept: later positions of
 * a game are mostly in it. 7x7/3's do not: once an exploration has given up, the server answers
 * without distances. (query explores up to 4 million; both up to 100,000 where each value is a
 * read from disk.)
 */
export const SERVE_DISTANCE_LIMIT = 2_000_000;

export async function serveCommand(o: { db: string; port: string; host: string }): Promise<number> {
  const port = integer('--port', o.port, 0, 65535);
  // An empty address would listen on every interface, where the default is this machine alone.
  if (o.host.trim() === '') throw new UsageError('--host is empty: name an address (127.0.0.1, the default, for this machine alone; 0.0.0.0 or :: for every interface)');
  const game = await withDistances(openSolvedGame(o.db, SERVE_DISTANCE_LIMIT), o.db);
  game.retryAfterGivingUp = false;
  const server = createServer((req, res) => {
    handle(game, o.db, req, res).catch((e: unknown) => send(res, 500, { error: `internal error: ${(e as Error).message}` }));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (e: NodeJS.ErrnoException) =>
      reject(
        e.code === 'EADDRINUSE'
          ? new UsageError(`port ${port} on ${o.host} is already in use (choose another with --port)`)
          : new UsageError(`cannot listen on --host ${o.host} port ${port} (${e.code ?? e.message}${e.code === 'ENOTFOUND' || e.code === 'EAI_AGAIN' ? ': no such address' : ''})`),
      ),
    );
    server.listen(port, o.host, resolve);
  });
  // Stopped by Ctrl-C or SIGTERM from here on, before the address is said (a script that signals
  // as soon as it reads it must not meet Node's default handler). Open connections (a client's
  // unfinished request, a browser's idle keep-alive) are dropped: close() alone waits for them.
  const stopped = new Promise<void>((resolve) => {
    const stop = () => {
      server.close(() => resolve());
      server.closeAllConnections();
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  const address = server.address();
  const actual = typeof address === 'object' && address ? address.port : port;
  process.stderr.write(`serving ${game.engine.variant.name} from ${o.db} at http://${o.host.includes(':') ? `[${o.host}]` : o.host}:${actual}/ (Ctrl-C to stop)\n`);
  if (!game.values.hasDistances) {
    process.stderr.write(`${o.db} stores no distances: they are explored, up to ${grouped(game.distanceLimit)} positions (solve --distances stores them all)\n`);
  }
  await stopped;
  return 0;
}

async function handle(game: SolvedGame, db: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
  let url: URL;
  let pathname: string;
  try {
    url = new URL(req.url ?? '/', 'http://localhost');
    pathname = decodeURIComponent(url.pathname); // a malformed escape (/%E0%A4%A) is the client's error
  } catch {
    return send(res, 400, { error: `malformed request path ${JSON.stringify(req.url)}` });
  }
  if (req.method !== 'GET' && req.method !== 'HEAD') return send(res, 405, { error: `method ${req.method} not allowed (GET only)` });
  if (url.pathname === '/api/game') {
    const v = game.engine.variant;
    const h = game.values.header;
    return send(res, 200, { board: v.size, pieces: v.pieces, rules: h.rules, start: formatPosition(v, startPosition(v)), positions: h.positions });
  }
  if (url.pathname === '/api/position') {
    const text = url.searchParams.get('p');
    if (!text) return send(res, 400, { error: 'missing query parameter p (a position such as "xx...oo x")' });
    try {
      const parsed = positionArgument(text);
      checkSameVariant(game, parsed, db);
      const gaveUp = game.gaveUp;
      const info = game.analyse(parsed.position);
      if (game.gaveUp && !gaveUp) {
        process.stderr.write(`${db}: the positions reachable from ${formatPosition(game.engine.variant, parsed.position)} pass ${grouped(game.distanceLimit)}: answering without distances from now on (solve --distances stores them all)\n`);
      }
      const answer: PositionAnswer = { ...queryJson(parsed, info), summary: describeValue(info, parsed.position.toMove === 0 ? 'x' : 'o') };
      return send(res, 200, answer);
    } catch (e) {
      // The database's fault (a corrupt distance table found by this answer), not the request's.
      if (e instanceof CCheckersError && e.code === 'E_DATABASE') return send(res, 500, { error: e.message });
      if (e instanceof CCheckersError) return send(res, 400, { error: e.code === 'E_POSITION' ? `malformed position: ${e.message}` : e.message });
      throw e;
    }
  }
  if (url.pathname.startsWith('/api/')) return send(res, 404, { error: `unknown API path ${url.pathname}` });
  // Static files of the page; never outside WEB_ROOT.
  const relative = url.pathname === '/' ? 'index.html' : pathname.slice(1);
  const path = normalize(join(WEB_ROOT, relative));
  if (!path.startsWith(WEB_ROOT) || relative.split(/[\\/]/).includes('..') || !TYPES[extname(path)]) {
    return send(res, 404, { error: `not found: ${url.pathname}` });
  }
  let body: Buffer;
  try {
    body = await readFile(path);
  } catch {
    const missingPage = relative === 'index.html';
    return send(res, missingPage ? 500 : 404, { error: missingPage ? `the page is not built (${WEB_ROOT}); run pnpm build` : `not found: ${url.pathname}` });
  }
  res.writeHead(200, { 'content-type': TYPES[extname(path)]!, 'content-length': body.length, 'cache-control': 'no-cache' });
  res.end(req.method === 'HEAD' ? undefined : body);
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

