/**
 * `ccheckers plan`: know before you solve. The sizes the solver will use, the exact illegal and
 * terminal counts (computed without a table), and for each way of solving the memory, disk and
 * time it needs here, and whether it fits (packages/solver/src/plan).
 */
import {
  BAND_LATER_SHARE,
  BAND_PASS1_SHARE,
  LATER_BLOCKS_WORKERS,
  MAX_WORKERS,
  type Plan,
  SHARED_PART_OVERHEAD,
  STORE_TIME_FACTOR,
  formatBytes,
  plan,
} from '@ccheckers/solver';
import { UsageError, memoryOption, rulesOption, variantOption } from '../options.js';
import { grouped, table } from '../ui/format.js';

export interface PlanCommandOptions {
  board: string;
  pieces: string;
  rules: string;
  memory?: string;
  workers?: string;
  json?: boolean;
}

function workerList(text: string): number[] {
  const parts = text.split(',').map((s) => s.trim());
  return parts.map((p) => {
    const n = Number(p);
    if (!/^\d+$/.test(p) || !Number.isSafeInteger(n) || n < 1 || n > MAX_WORKERS) {
      throw new UsageError(`--workers takes worker counts from 1 to ${MAX_WORKERS}, separated by commas (got "${text}")`);
    }
    return n;
  });
}

export function planCommand(o: PlanCommandOptions): number {
  const v = variantOption(o.board, o.pieces);
  const rules = rulesOption(o.rules);
  const budget = memoryOption(o.memory);
  if (budget !== undefined && budget < 1) throw new UsageError(`--memory must be more than 0 bytes (got "${o.memory}")`);
  const workers = workerList(o.workers ?? '2,8');
  const p = plan({ variant: v, rules, workers, ...(budget !== undefined ? { budget } : {}) });
  process.stdout.write(o.json ? `${JSON.stringify(planJson(p))}\n` : `${planText(p)}\n`);
  return 0;
}

/** Exact counts as JSON numbers where they are exact as doubles, else as decimal strings. */
function count(n: bigint): number | string {
  return n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n.toString();
}

export function planJson(p: Plan) {
  const c = p.census;
  return {
    board: p.board,
    pieces: p.pieces,
    rules: p.rules,
    positions: count(c.positions),
    // Positions: both sides to move, as `solve` counts them (its `illegal`).
    illegal: count(c.illegal.total),
    illegalP1ToMove: count(c.illegal.p1ToMove),
    illegalP2ToMove: count(c.illegal.p2ToMove),
    illegalDef2: count(c.illegalDef2),
    illegalDef3Only: count(c.illegalDef3Only),
    exempted: count(c.exempted),
    terminal: count(c.terminal.total),
    terminalP1ToMove: count(c.terminal.p1ToMove),
    terminalP2ToMove: count(c.terminal.p2ToMove),
    // Stored states: P1 to move, one per mirror class of P1's placement (the solver's table).
    storedStates: count(p.storedStates),
    storedIllegal: count(c.stored.illegal),
    storedTerminal: count(c.stored.terminal),
    groups: count(p.groups),
    tableBytes: count(p.tableBytes),
    distanceBytes: count(p.distanceBytes),
    databaseBytes: count(p.databaseBytes),
    censusSeconds: Number(p.censusSeconds.toFixed(4)),
    // The in-memory time model: seconds = inMemoryFixedSeconds + storedStates * inMemorySecondsPerState.
    inMemoryFixedSeconds: p.inMemoryFixedSeconds,
    inMemorySecondsPerState: p.inMemorySecondsPerState,
    // --distances: storedStates * distanceSecondsPerState more.
    distanceSecondsPerState: p.distanceSecondsPerState,
    ...(p.beyondSolver ? { beyondSolver: p.beyondSolver } : {}),
    machine: p.machine,
    ways: p.ways.map((w) => ({ ...w, seconds: Math.round(w.seconds * 10) / 10 })),
  };
}

function bytes(n: bigint | number): string {
  return formatBytes(Number(n));
}

/** An estimate, as roughly as it is known: seconds, minutes, hours or days. */
function estimate(seconds: number): string {
  if (seconds >= 2 * 86400) return `${(seconds / 86400).toFixed(seconds >= 100 * 86400 ? 0 : 1)} days`;
  if (seconds >= 2 * 3600) return `${(seconds / 3600).toFixed(1)} h`;
  if (seconds >= 120) return `${Math.round(seconds / 60)} min`;
  return seconds >= 10 ? `${Math.round(seconds)} s` : `${seconds.toFixed(1)} s`;
}

export function planText(p: Plan): string {
  const c = p.census;
  const g = grouped;
  const lines = [
    `${p.board}x${p.board}/${p.pieces}, ${p.rules} rules`,
    '',
    'positions (both sides to move, illegal included)',
    `  positions       ${g(c.positions)}`,
    `  illegal         ${g(c.illegal.total)} (${g(c.illegal.p1ToMove)} with P1 to move, ${g(c.illegal.p2ToMove)} with P2 to move): Def. 2 ${g(c.illegalDef2)}, Def. 3 only ${g(c.illegalDef3Only)}` +
      (p.rules === 'published' ? `, ${g(c.exempted)} blocks exempted` : ''),
    `  terminal        ${g(c.terminal.total)} (legal and won by the side that just moved)`,
    "stored states (the solver's table: P1 to move, one per mirror class of P1's placement)",
    `  stored states   ${g(p.storedStates)} (${g(p.groups)} groups x ${g(p.p2Placements)})`,
    `  illegal         ${g(c.stored.illegal)}`,
    `  terminal        ${g(c.stored.terminal)}`,
    `  table           ${bytes(p.tableBytes)} (${g(p.tableBytes)} bytes, 2 bits per stored state)`,
    `  distance table  ${bytes(p.distanceBytes)} (1 byte per stored state, solve --distances)`,
    `counted in ${(p.censusSeconds * 1000).toFixed(1)} ms, without a table`,
    '',
  ];
  const m = p.machine;
  lines.push(
    `this machine: ${m.threads} hardware threads, ${bytes(m.freeMemory)} of ${bytes(m.totalMemory)} memory free, ${bytes(m.freeDisk)} disk free at ${m.diskPath}`,
  );
  if (m.loadAverage !== undefined && m.loadAverage > m.threads) {
    // Measured: 7x7/3 took 124 s instead of 11 s at a load of 15 on 2 threads (docs/performance.md).
    lines.push(`busy now: load average ${m.loadAverage.toFixed(1)} on ${m.threads} hardware threads; the times below are for an idle machine, and a solve now takes longer`);
  }
  if (p.beyondSolver) {
    lines.push(`no way of solving it here: ${p.beyondSolver}`);
    return lines.join('\n');
  }
  const rows = p.ways.map((w) => [
    w.way === 'memory'
      ? 'in memory'
      : w.way === 'distances'
        ? 'in memory, --distances'
        : w.way === 'store'
          ? `store, --memory ${bytes(w.budget!)}`
          : `cluster of ${w.workers}`,
    w.way === 'cluster' ? `${bytes(w.memoryBytes)} each` : bytes(w.memoryBytes),
    bytes(w.diskBytes),
    estimate(w.seconds),
    w.fits ? 'yes' : 'no',
    [w.bands !== undefined ? `${grouped(w.bands)} band${w.bands === 1 ? '' : 's'} of up to ${bytes(w.bandBytes!)}` : '', w.why].filter(Boolean).join('; '),
  ]);
  lines.push(
    '',
    table(['way', 'memory', 'disk', 'time (est.)', 'fits here', 'notes'], rows),
    '',
    `Times are for an idle 2-core machine like the AMD EPYC of docs/performance.md (native-bmi2, 2 threads): in memory`,
    `${p.inMemoryFixedSeconds.toFixed(2)} s plus ${(p.inMemorySecondsPerState * 1e9).toFixed(1)} ns per stored state with ${p.pieces} piece${p.pieces === 1 ? '' : 's'}, from solves of 7x7/3,`,
    '7x7/4, 4x4/6 and 5x5/6; other work on the cores, or slower cores, make a solve slower. A store',
    `${STORE_TIME_FACTOR.toFixed(2)}x the in-memory time; a cluster of W machines like this one, in shared steps, shares pass 1`,
    `of the store's band solve (${percent(BAND_PASS1_SHARE)} of it) among the W, each paying ${percent(SHARED_PART_OVERHEAD)} of it more, and runs the`,
    `later passes (${percent(BAND_LATER_SHARE)}) a band at a time, or from ${LATER_BLOCKS_WORKERS} workers W at a time in more passes`,
    `(docs/performance.md, docs/sharding.md). --distances (in memory only: a store keeps none) adds`,
    `${(p.distanceSecondsPerState * 1e9).toFixed(0)} ns per stored state after the passes (the rate of 7x7/${p.pieces <= 3 ? 3 : 4}). Disk: --out keeps a checkpoint`,
    'and the database (2x the file); a store peaked at 6.4x its table (7x7/4 in 5 bands). In memory,',
    'the late passes take up to half the table again where that memory is free (their lists and memo).',
    ...p.ways.map((w) => `  ${w.way}: ${w.command}`),
  );
  return lines.join('\n');
}

const percent = (share: number) => `${Math.round(share * 100)}%`;
