/**
 * `ccheckers bench`: the bitboard paper's operations (Tables 1 and 2) on each backend. Each figure
 * is one loop run inside the backend (C++ loops for the native ones), timed there, calibrated to
 * a minimum duration, best of five runs interleaved across backends; checksums must agree.
 */
import {
  type Backend,
  BENCH_OPS,
  type BenchOp,
  BitboardEngine,
  type Position,
  PositionFormatError,
  type Variant,
  formatPosition,
  fromWords,
  parsePosition,
  seededRandom,
  startPosition,
  toWords,
} from '@ccheckers/core';
import { type BackendRequest, availableBackends, selectBackend } from '@ccheckers/solver';
import { UsageError, backendList, integer, variantOption } from '../options.js';
import { table } from '../ui/format.js';
import { progressSink } from '../ui/progress.js';
import { machineDetails } from '../report/machine.js';
import { PAPER } from '../report/paper.js';
import { checkReportPath, pageAfterJson, writeReport } from '../report/write.js';

export interface BenchCommandOptions {
  board: string;
  pieces: string;
  backends?: string;
  ops?: string;
  minTime: string;
  position: string;
  json?: boolean;
  html?: string;
  force?: boolean;
  quiet?: boolean;
}

interface Result {
  backend: string;
  op: BenchOp;
  nsPerOp: number;
  iterations: number;
}

const ROUNDS = 5;

export async function benchCommand(o: BenchCommandOptions): Promise<number> {
  const v = variantOption(o.board, o.pieces);
  const minMs = integer('--min-time', o.minTime, 1, 60_000);
  // Given, --ops names each operation once (an empty one is no shorthand for all of them).
  const ops = o.ops !== undefined ? o.ops.split(',').map((s) => s.trim()) : [...BENCH_OPS];
  for (const op of ops) {
    if (!(BENCH_OPS as readonly string[]).includes(op)) throw new UsageError(`--ops: unknown operation "${op}" (choose from ${BENCH_OPS.join(', ')})`);
  }
  const twice = ops.find((op, i) => ops.indexOf(op) !== i);
  if (twice !== undefined) throw new UsageError(`--ops names ${twice} twice: each operation is measured once`);
  const requested: BackendRequest[] | undefined = o.backends !== undefined ? backendList(o.backends) : undefined;
  const backends: Backend[] = requested ? await Promise.all(requested.map(async (r) => (await selectBackend(r)).backend)) : await availableBackends();
  const position = benchPosition(v, o.position);
  const pageRules = { force: o.force === true };
  if (o.html !== undefined) checkReportPath(o.html, pageRules);
  const progress = progressSink(process.stderr, o.quiet);
  progress.done(`bench ${v.name} on ${formatPosition(v, position)}: best of ${ROUNDS} interleaved runs of at least ${minMs} ms each`);

  // Per operation: calibrate each backend's loop to minTime, then ROUNDS rounds that run every
  // backend once in turn, keeping each one's best. Interleaving makes the ratios fair on a machine
  // whose speed drifts (shared or throttled CPUs).
  const results: Result[] = [];
  const engines = backends.map((b) => b.engine(v, 'clean'));
  let step = 0;
  for (const op of ops as BenchOp[]) {
    progress.update('bench', step++ / ops.length, op);
    const iterations = engines.map((engine) => {
      let n = 1000;
      for (let run = engine.bench(op, position, n); run.nanoseconds < minMs * 1e6; run = engine.bench(op, position, n)) {
        n = Math.ceil(n * Math.min(100, Math.max(2, (1.2 * minMs * 1e6) / Math.max(run.nanoseconds, 1))));
      }
      return n;
    });
    const best = engines.map(() => Number.POSITIVE_INFINITY);
    for (let round = 0; round < ROUNDS; round++) {
      engines.forEach((engine, b) => {
        best[b] = Math.min(best[b]!, engine.bench(op, position, iterations[b]!).nanoseconds);
      });
    }
    backends.forEach((backend, b) => results.push({ backend: backend.name, op, nsPerOp: best[b]! / iterations[b]!, iterations: iterations[b]! }));
  }
  progress.clear();

  // Calibrated iteration counts differ per backend: compare checksums of one fixed-count run.
  const mismatches = checkChecksums(backends, ops as BenchOp[], v, position);
  for (const m of mismatches) process.stderr.write(`ccheckers: bench checksum of ${m} differs between backends\n`);

  const json = {
    board: v.size,
    pieces: v.pieces,
    position: formatPosition(v, position),
    results: results.map((r) => ({ ...r, nsPerOp: Number(r.nsPerOp.toFixed(3)) })),
    machine: await machineDetails(),
  };
  // The results first: a page refused at the last moment (see writeReport) loses none of them.
  const page = async () => {
    if (o.html !== undefined) await writeReport(o.html, [{ kind: 'bench', data: json, source: 'this run' }], pageRules);
  };
  if (o.json) {
    process.stdout.write(`${JSON.stringify(json)}\n`);
    await pageAfterJson(page);
    return mismatches.length ? 1 : 0;
  }
  const paper = v.size === 7 ? PAPER[v.pieces] : undefined;
  const names = backends.map((b) => b.name);
  const header = ['op', ...names.map((n) => `${n} ns/op`), ...(names.length > 1 ? names.slice(1).map((n) => `${n}/${names[0]}`) : [])];
  if (paper) header.push('paper BMI2', 'paper non-BMI2');
  const rows = (ops as BenchOp[]).map((op) => {
    const ns = names.map((n) => results.find((r) => r.backend === n && r.op === op)!.nsPerOp);
    const row = [op, ...ns.map((x) => x.toFixed(x < 10 ? 2 : 1)), ...ns.slice(1).map((x) => `${(x / ns[0]!).toFixed(2)}x`)];
    if (paper) row.push(paper[op] ? paper[op]!.bmi2.toFixed(2) : '-', paper[op] ? paper[op]!.nonBmi2.toFixed(2) : '-');
    return row;
  });
  process.stdout.write(`${v.name}: ns per operation (lower is better)\n${table(header, rows)}\n`);
  if (paper) process.stdout.write('paper: Sturtevant\'s bitboard paper, 2.3 GHz Core i9, C++ -O3 (different machine: compare ratios, not absolutes)\n');
  await page();
  return mismatches.length ? 1 : 0;
}

function checkChecksums(backends: Backend[], ops: BenchOp[], v: Variant, p: Position): string[] {
  const bad: string[] = [];
  for (const op of ops) {
    const sums = new Set(backends.map((b) => b.engine(v, 'clean').bench(op, p, 10_007).checksum));
    if (sums.size > 1) bad.push(op);
  }
  return bad;
}

/**
 * The position the per-position operations (winner, successors) run on: `start` (the paper's
 * choice and the default), `midgame` (a fixed seeded position with both sides spread out: more
 * moves, longer jump chains), or a position string of the variant.
 */
export function benchPosition(v: Variant, which: string): Position {
  if (which === 'start') return startPosition(v);
  if (which === 'midgame') return midgamePosition(v);
  let parsed;
  try {
    parsed = parsePosition(which);
  } catch (e) {
    if (e instanceof PositionFormatError) throw new UsageError(`--position: ${e.message} (or use "start" or "midgame")`);
    throw e;
  }
  if (parsed.variant.size !== v.size || parsed.variant.pieces !== v.pieces) {
    throw new UsageError(`--position is a ${parsed.variant.name} position but the bench variant is ${v.name}`);
  }
  return parsed.position;
}

function midgamePosition(v: Variant): Position {
  const engine = new BitboardEngine(v);
  const random = seededRandom(v.size * 131 + v.pieces);
  for (;;) {
    const cells = Array.from({ length: v.cells }, (_, c) => c);
    for (let i = cells.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      [cells[i], cells[j]] = [cells[j]!, cells[i]!];
    }
    let p1 = 0n;
    let p2 = 0n;
    for (let i = 0; i < v.pieces; i++) {
      p1 |= 1n << BigInt(cells[i]!);
      p2 |= 1n << BigInt(cells[v.pieces + i]!);
    }
    const wp = toWords({ p1, p2, toMove: 0 });
    if (!engine.isIllegal(wp) && !engine.isTerminal(wp) && !engine.hasWon(0, wp) && !engine.hasWon(1, wp)) return fromWords(wp);
  }
}
