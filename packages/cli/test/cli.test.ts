/**
 * The real `ccheckers` binary (dist/bin.js, built by `pnpm build`) as a subprocess: results on
 * stdout, messages on stderr, and the exit-code contract.
 */
import { spawn, spawnSync } from 'node:child_process';
import { connect } from 'node:net';
import { closeSync, existsSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Backend, LOSS, StateSpace, WIN, applyMove, formatPosition, readValue, startPosition, stateByte, stateShift, variant } from '@ccheckers/core';
import { SolvedGame, availableBackends, computeDistanceTable, openDatabase, readDatabase, writeDatabase } from '@ccheckers/solver';
import { BIN, run, runHooked } from './support/run-cli.js';

const dir = mkdtempSync(join(tmpdir(), 'ccheckers-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const START_7x7_2 = `xx${'.'.repeat(45)}oo x`;
const db2 = join(dir, '7x7-2.ccdb');
const db1 = join(dir, '7x7-1.ccdb');

beforeAll(() => {
  for (const [pieces, out] of [['2', db2], ['1', db1]] as const) {
    const r = run(['solve', '--board', '7', '--pieces', pieces, '--out', out, '--quiet']);
    expect(r.status, r.stderr).toBe(0);
  }
});

describe('solve', () => {
  it('--json prints exactly one object with the docs/rules.md counts', () => {
    const r = run(['solve', '--board', '7', '--pieces', '2', '--json']);
    expect(r.status, r.stderr).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    const o = JSON.parse(lines[0]!);
    expect(Object.keys(o)).toEqual([
      'board', 'pieces', 'rules', 'backend', 'threads', 'positions', 'p1Wins', 'p2Wins', 'draws', 'illegal', 'start', 'passes', 'seconds',
      'storedStates', 'tableCrc32', 'tableMemory', 'passLog', 'machine',
    ]);
    expect(o.tableCrc32).toBe(0x0b785a50);
    // Who allocated the table, and whether huge pages were asked for (the addon's: yes).
    expect(o.tableMemory).toMatchObject({ allocator: expect.any(String), hugePagesAdvised: o.backend === 'ts' ? false : expect.any(Boolean) });
    expect(o.passLog).toHaveLength(o.passes);
    expect(o.machine).toMatchObject({ node: process.version, hardwareThreads: expect.any(Number) });
    expect(o).toMatchObject({ board: 7, pieces: 2, rules: 'clean', positions: 2_542_512, p1Wins: 1_265_851, p2Wins: 1_265_851, draws: 0, illegal: 10_810, start: 'p1-win' });
    expect(typeof o.seconds).toBe('number');
    expect(r.stderr).toMatch(/pass 1: \+[\d,]+ proven/); // progress, one line per pass when not a TTY
  });

  it('defaults to 7x7 with 2 pieces and prints a table', () => {
    const r = run(['solve', '--backend', 'ts', '--threads', '2', '--quiet']);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^7x7\/2, clean rules\npositions\s+2,542,512\nP1 wins\s+1,265,851\nP2 wins\s+1,265,851\ndraws\s+0\nillegal\s+10,810\nstart\s+P1 wins\n/);
    expect(r.stdout).toMatch(/backend\s+ts, 2 thread\(s\)/);
    expect(r.stderr).toBe('');
  });

  it('refuses to overwrite a database without --force', () => {
    const r = run(['solve', '--out', db2]);
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/already exists \(use --force to overwrite it\)/);
  });

  it('with --json, says why it failed as one JSON object on stdout too (the exit code and stderr as without)', () => {
    for (const [args, code, message] of [
      [['solve', '--out', db2, '--json'], 'E_USAGE', /already exists \(use --force to overwrite it\)/],
      [['solve', '--board', '7', '--pieces', '5', '--json'], 'E_MEMORY', /7x7\/5/],
      [['query', '--db', join(dir, 'absent.ccdb'), `x${'.'.repeat(47)}o x`, '--json'], 'E_DATABASE', /absent\.ccdb/],
      // What the option parser refuses, before the command's options are known.
      [['solve', '--json', '--bogus'], 'E_USAGE', /^unknown option '--bogus'$/],
      [['solve', '--json', '--board'], 'E_USAGE', /^option '--board <m>' argument missing$/],
      [['query', '--json', '--db', db2], 'E_USAGE', /^missing required argument 'position'$/],
      [['info', '--json', 'extra'], 'E_USAGE', /^too many arguments for 'info'/],
    ] as const) {
      const r = run([...args]);
      expect(r.status, args.join(' ')).toBe(2);
      const said = r.stderr.trim().replace(/^ccheckers: /, '');
      expect(said).toMatch(message);
      expect(JSON.parse(r.stdout)).toEqual({ error: { code, message: said, exitCode: 2 } });
    }
  });

  it('a solve killed with SIGKILL after pass 2 resumes to the same table', () => {
    const out = join(dir, 'killed.ccdb');
    const killed = runHooked({ killAfterPass: 2 }, ['solve', '--pieces', '2', '--out', out, '--threads', '1', '--checkpoint-minutes', '0']);
    expect(killed.signal).toBe('SIGKILL');
    expect(existsSync(`${out}.ckpt`)).toBe(true);
    expect(existsSync(out)).toBe(false);
    const resumed = run(['solve', '--pieces', '2', '--out', out, '--resume', '--json']);
    expect(resumed.status, resumed.stderr).toBe(0);
    expect(resumed.stderr).toMatch(/resumed from .*killed\.ccdb\.ckpt after pass 2/);
    expect(JSON.parse(resumed.stdout)).toMatchObject({ p1Wins: 1_265_851, illegal: 10_810, start: 'p1-win' });
    expect(readDatabase(out).header.bodyCrc32).toBe(readDatabase(db2).header.bodyCrc32);
  });

  it.each(['SIGINT', 'SIGTERM'] as const)('%s stops the solve, keeps the checkpoint and exits 130', async (signal) => {
    const out = join(dir, `interrupted-${signal}.ccdb`);
    const child = spawn(process.execPath, [BIN, 'solve', '--board', '7', '--pieces', '3', '--out', out, '--threads', '1'], {
      env: { ...process.env },
    });
    let stderr = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      stderr += chunk;
      if (/^init: /m.test(stderr) && !child.killed) child.kill(signal); // after the first checkpoint
    });
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(code).toBe(130);
    expect(stderr).toMatch(/saved in .*interrupted-SIG(INT|TERM)\.ccdb\.ckpt, continue with --resume/);
    expect(existsSync(`${out}.ckpt`)).toBe(true);
    expect(existsSync(`${out}.lock`)).toBe(false);
  });
});

describe('info, bench, query, show, play', () => {
  it('info names the backend auto picks and why', () => {
    const r = run(['info', '--json']);
    expect(r.status).toBe(0);
    const o = JSON.parse(r.stdout);
    expect(o.backends.map((b: { name: string }) => b.name)).toEqual(['native-bmi2', 'native-portable', 'ts']);
    expect(o.auto.reason.length).toBeGreaterThan(0);
    const disabled = JSON.parse(run(['info', '--json'], { CCHECKERS_DISABLE_NATIVE: '1' }).stdout);
    expect(disabled.auto.backend).toBe('ts');
  });

  it('bench --json gives ns per operation for each backend and op', () => {
    const r = run(['bench', '--board', '7', '--pieces', '3', '--backends', 'ts', '--min-time', '5', '--json']);
    expect(r.status, r.stderr).toBe(0);
    const o = JSON.parse(r.stdout);
    expect(o).toMatchObject({ board: 7, pieces: 3, position: `xxx${'.'.repeat(43)}ooo x` });
    expect(o.results.map((x: { op: string }) => x.op)).toEqual(['winner', 'successors', 'rankP1', 'rankP2', 'unrankP1', 'unrankP2', 'incrementP2']);
    for (const x of o.results) {
      expect(Object.keys(x)).toEqual(['backend', 'op', 'nsPerOp', 'iterations']);
      expect(x.nsPerOp).toBeGreaterThan(0);
    }
  });

  it('query on the start of 7x7/2 says P1 (to move) wins in 33 plies', () => {
    const r = run(['query', '--db', db2, START_7x7_2]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/value\s+x \(P1\) to move wins in 33 plies/);
  });

  it('query of a database without distances: the whole table computed where the addon loads, else explored from the position (file and store)', async () => {
    const native = (await availableBackends()).some((b) => b.kernelThreads);
    const moveOf = (db: string, position: string, move: string, env: Record<string, string> = {}) => {
      const r = run(['query', '--db', db, position, '--json'], env);
      expect(r.status, r.stderr).toBe(0);
      return JSON.parse(r.stdout).moves.find((m: { move: string }) => m.move === move);
    };
    // A losing move's distance: the whole table has it; exploring follows only the winner's wins.
    expect(moveOf(db2, START_7x7_2, '1-3')).toEqual({ move: '1-3', outcome: 'loss', pliesToEnd: native ? 34 : null });
    const store = join(dir, '7x7-1.store');
    expect(run(['convert', db1, store]).status).toBe(0);
    const position = `.x${'.'.repeat(42)}o.... x`;
    for (const db of [db1, store]) {
      expect(moveOf(db, position, '1-0')).toEqual({ move: '1-0', outcome: 'loss', pliesToEnd: native ? 22 : null });
      expect(moveOf(db, position, '1-0', { CCHECKERS_DISABLE_NATIVE: '1' })).toEqual({ move: '1-0', outcome: 'loss', pliesToEnd: null });
      expect(moveOf(db, position, '1-4', { CCHECKERS_DISABLE_NATIVE: '1' })).toEqual({ move: '1-4', outcome: 'win', pliesToEnd: 23 });
    }
  });

  it('serve of a database without distances (TS alone): explored up to its bound, the start and a position 5 plies before the end', async () => {
    // 7x7/2's start reaches 1.25 million positions, within serve's 2 million. (That the set is
    // kept, and that past the bound the server stops exploring: play.test.ts, distances explored
    // up to distanceLimit.)
    const game = new SolvedGame(openDatabase(db2));
    let late = startPosition(variant(7, 2));
    for (let ply = 0; ply < 28; ply++) late = applyMove(late, game.analyse(late).best!);
    const child = spawn(process.execPath, [BIN, 'serve', '--db', db2, '--port', '0'], { env: { ...process.env, CCHECKERS_DISABLE_NATIVE: '1' } });
    try {
      let stderr = '';
      const port = await new Promise<number>((resolve, reject) => {
        child.stderr.on('data', (d: Buffer) => {
          stderr += d;
          const m = /http:\/\/127\.0\.0\.1:(\d+)\//.exec(stderr);
          if (m && stderr.includes('stores no distances') && stderr.endsWith('\n')) resolve(Number(m[1]));
        });
        child.once('exit', () => reject(new Error(stderr)));
      });
      expect(stderr).toContain(`${db2} stores no distances: they are explored, up to 2,000,000 positions (solve --distances stores them all)`);
      const ask = async (p: string) => (await fetch(`http://127.0.0.1:${port}/api/position?p=${encodeURIComponent(p)}`)).json();
      expect(await ask(START_7x7_2)).toMatchObject({ outcome: 'win', pliesToEnd: 33 });
      expect(await ask(formatPosition(variant(7, 2), late))).toMatchObject({ outcome: 'win', pliesToEnd: 5 });
      expect(stderr).not.toContain('answering without distances');
    } finally {
      child.kill('SIGTERM');
    }
  });

  it('serve stops at Ctrl-C with a client\'s request unfinished, and prints an IPv6 host in brackets', async () => {
    const child = spawn(process.execPath, [BIN, 'serve', '--db', db2, '--port', '0', '--host', '::1'], { env: { ...process.env, CCHECKERS_DISABLE_NATIVE: '1' } });
    let stderr = '';
    const port = await new Promise<number>((resolve, reject) => {
      child.stderr.on('data', (d: Buffer) => {
        stderr += d;
        const m = /at http:\/\/\[::1\]:(\d+)\/ /.exec(stderr);
        if (m) resolve(Number(m[1]));
      });
      child.once('exit', () => reject(new Error(stderr)));
    });
    const socket = connect(port, '::1');
    socket.on('error', () => {}); // the server drops the connection (ECONNRESET): expected
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write('GET /api/game HTTP/1.1\r\nHost: x\r\n'); // never ended
    const exited = new Promise<string>((resolve) => child.once('exit', (code, signal) => resolve(`code ${code}, signal ${signal}`)));
    child.kill('SIGINT');
    const end = await Promise.race([exited, new Promise<string>((resolve) => setTimeout(() => resolve('still running'), 10_000))]);
    socket.destroy();
    if (end === 'still running') child.kill('SIGKILL');
    expect(end, stderr).toBe('code 0, signal null');
  });

  it('query of a database whose values do not fit together (checksums right): explored, with a warning naming the file', async () => {
    const native = (await availableBackends()).find((b) => b.kernelThreads);
    const { header, table } = readDatabase(db1);
    // One lost state made won: its children are all won, so no layer gives it a distance.
    const space = new StateSpace(variant(7, 1));
    let flipped = -1;
    for (let i = 0; i < space.states && flipped < 0; i++) {
      if (readValue(table, i) !== LOSS || (native && !(await layersFailWith(native, space, table, i)))) continue;
      flipped = i;
    }
    expect(flipped).toBeGreaterThanOrEqual(0);
    setValue(table, flipped, WIN);
    const { bodyCrc32: _b, bodyBytes: _n, distanceBytes: _d, distanceCrc32: _c, ...rest } = header;
    const bad = join(dir, '7x7-1-forged.ccdb');
    writeDatabase(bad, rest, table);
    const position = `x${'.'.repeat(47)}o x`;
    const r = run(['query', '--db', bad, position, '--json']);
    expect(r.status, r.stderr).toBe(0);
    // The answer of the exploration from the position, as before the whole tables.
    const explored = new SolvedGame(openDatabase(bad)).analyse(startPosition(variant(7, 1)));
    expect(JSON.parse(r.stdout)).toMatchObject({ outcome: 'win', pliesToEnd: explored.pliesToEnd });
    if (native) {
      expect(r.stderr).toContain(`ccheckers: warning: ${bad}: no distance table could be computed (`);
      expect(r.stderr).toMatch(/the table is inconsistent\); distances are explored from the position instead\. ccheckers check --db .* --consistency/);
    } else expect(r.stderr).toBe('');
  });

  it('query --json on the start of 7x7/1: P1 wins in 25 plies, and the best move keeps it', () => {
    const o = JSON.parse(run(['query', '--db', db1, `x${'.'.repeat(47)}o x`, '--json']).stdout);
    expect(o).toMatchObject({ outcome: 'win', pliesToEnd: 25, toMove: 'x', terminal: false });
    expect(o.moves.find((m: { move: string }) => m.move === o.best)).toMatchObject({ outcome: 'win', pliesToEnd: 25 });
  });

  it('solve --distances stores the distances; query reads them from the database', () => {
    const out = join(dir, '7x7-1-distances.ccdb');
    const r = run(['solve', '--board', '7', '--pieces', '1', '--distances', '--out', out, '--json']);
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ positions: 4_704, distances: { maxPlies: 25 } });
    expect(r.stderr).toMatch(/^distances: 25 layers in /m);
    expect(readDatabase(out).header).toMatchObject({ maxDistance: 25, distanceCrc32: JSON.parse(r.stdout).distances.crc32 });
    const o = JSON.parse(run(['query', '--db', out, `x${'.'.repeat(47)}o x`, '--json']).stdout);
    expect(o).toMatchObject({ outcome: 'win', pliesToEnd: 25 });
    const text = run(['solve', '--board', '7', '--pieces', '1', '--distances', '--quiet']);
    expect(text.stdout).toMatch(/^distances\s+up to 25 plies, [\d.]+ s, CRC-32 [0-9a-f]{8}$/m);
  });

  it('show draws the diamond', () => {
    const r = run(['show', START_7x7_2]);
    expect(r.status).toBe(0);
    expect(r.stdout.split('\n').slice(0, 3)).toEqual(['      x', '     x .', '    . . .']);
    expect(r.stdout).toMatch(/7x7\/2, x \(P1\) to move, \d+ legal moves/);
  });

  it('play answers with perfect moves and ends the game', () => {
    // As o (P2) we lose against perfect play whatever we do: we answer with our first legal move,
    // worked out beforehand with the library on the same database (its best moves are ccheckers').
    const game = new SolvedGame(readDatabase(db1));
    let p = startPosition(game.engine.variant);
    const ours: string[] = [];
    let theirs = 0;
    while (!game.analyse(p).terminal) {
      const move = p.toMove === 0 ? game.analyse(p).best! : game.legalMoves(p)[0]!;
      if (p.toMove === 0) theirs++;
      else ours.push(`${move.from}-${move.to}`);
      p = applyMove(p, move);
    }
    expect(p.toMove).toBe(1); // o to move, and x has won
    const r = run(['play', '--db', db1, '--as', 'o'], {}, `moves\n${ours.join('\n')}\n`);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout.match(/ccheckers plays \d+-\d+/g)).toHaveLength(theirs);
    expect(r.stdout).toMatch(/ccheckers wins\.\n$/);
    expect(r.stdout).not.toMatch(/not a legal move|end of input/);
  });
});

describe('bad input: exit 2, one line on stderr, nothing on stdout', () => {
  const bad = join(dir, 'bad.ccdb');
  beforeAll(() => writeFileSync(bad, 'this is not a database, just some bytes'.repeat(10)));
  const cases: Array<[string, () => string[], RegExp]> = [
    ['unknown option', () => ['solve', '--frobnicate'], /unknown option '--frobnicate'/],
    ['unknown command', () => ['solv'], /unknown command 'solv'/],
    ['board 10', () => ['solve', '--board', '10'], /board 10 is not supported \(board sizes: 2, 3, 4, 5, 6, 7, 9\)/],
    ['20 pieces', () => ['solve', '--pieces', '20'], /7x7 with 20 pieces is not a supported variant/],
    ['a non-number', () => ['solve', '--threads', 'many'], /--threads must be a whole number, got "many"/],
    ['a board of 20 digits, echoed as typed', () => ['solve', '--board', '99999999999999999999'], /--board must be between 1 and 99, got 99999999999999999999$/m],
    ['unknown backend', () => ['solve', '--backend', 'gpu'], /--backend must be one of auto, native-bmi2, native-portable, ts/],
    ['unknown rules', () => ['solve', '--rules', 'house'], /--rules must be one of clean, published/],
    ['bad memory size', () => ['solve', '--memory', 'lots'], /--memory: invalid size "lots"/],
    ['not enough memory', () => ['solve', '--pieces', '3', '--memory', '1M'], /not enough memory: the solve needs [\d.]+ MiB but --memory allows 1\.0 MiB/],
    ['malformed position', () => ['query', '--db', db2, 'xxq.. x'], /malformed position: unexpected character "q"/],
    ['position of another variant', () => ['query', '--db', db2, `x${'.'.repeat(47)}o x`], /the position is 7x7\/1 but .* solves 7x7\/2/],
    ['missing database', () => ['query', '--db', join(dir, 'nope.ccdb'), START_7x7_2], /nope\.ccdb: cannot read the file \(ENOENT\)/],
    ['corrupt database', () => ['query', '--db', bad, START_7x7_2], /bad\.ccdb: not a ccheckers database \(bad magic bytes\)/],
    ['missing --db', () => ['query', START_7x7_2], /required option '--db <path>' not specified/],
    ['bad --as', () => ['play', '--db', db2, '--as', 'z'], /--as must be x \(P1, moves first\) or o \(P2\)/],
    ['bench position of another variant', () => ['bench', '--pieces', '3', '--position', START_7x7_2], /--position is a 7x7\/2 position but the bench variant is 7x7\/3/],
    ['resume without --out', () => ['solve', '--resume'], /--resume needs --out FILE/],
    ['an empty --host', () => ['serve', '--db', db2, '--host', ''], /--host is empty: name an address/],
    ['an empty --ops', () => ['bench', '--ops', ''], /--ops: unknown operation ""/],
    ['an operation twice', () => ['bench', '--ops', 'winner,winner'], /--ops names winner twice: each operation is measured once/],
  ];
  it.each(cases)('%s', (_what, args, message) => {
    const r = run(args());
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(message);
    expect(r.stderr.trim().split('\n')).toHaveLength(r.stderr.includes('Did you mean') ? 2 : 1);
  });
});

describe('stdout that cannot be written', () => {
  it('(a full disk) is said on stderr, without a stack, exit 2; a closed pipe is not an error', () => {
    const full = openSync('/dev/full', 'w');
    try {
      const r = spawnSync(process.execPath, [BIN, 'query', '--db', db2, START_7x7_2], { stdio: ['ignore', full, 'pipe'], encoding: 'utf8' });
      expect(r.status).toBe(2);
      expect(r.stderr).toMatch(/^ccheckers: cannot write to stdout \(ENOSPC\): the output is lost; files the command writes are kept\n$/);
    } finally {
      closeSync(full);
    }
    const piped = spawnSync('sh', ['-c', `"${process.execPath}" "${BIN}" query --db "${db2}" '${START_7x7_2}' | head -c 1`], { encoding: 'utf8' });
    expect(piped.status).toBe(0);
    expect(piped.stderr).toBe('');
  });
});

/** Sets stored state `index`'s 2-bit value in `table` (a test's forgery). */
function setValue(table: Uint8Array, index: number, value: number): void {
  const at = stateByte(index);
  table[at] = (table[at]! & ~(3 << stateShift(index))) | (value << stateShift(index));
}

/** Whether the distance layers refuse `table` with state `index` made won. */
async function layersFailWith(backend: Backend, space: StateSpace, table: Uint8Array, index: number): Promise<boolean> {
  const copy = table.slice();
  setValue(copy, index, WIN);
  return computeDistanceTable(backend.solverKernel(space.variant, 'clean'), space, copy, 1).then(
    () => false,
    () => true,
  );
}
