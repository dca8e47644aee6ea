/**
 * One self-contained HTML page from bench and solve results (this run's, or saved `--json`
 * results of several runs and machines): charts as inline SVG, tables, the machines. No script,
 * no external resource; readable on screen in light and dark mode and printed.
 */
import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import { BACKEND_NAMES, BENCH_OPS, RULE_MODES, variant } from '@ccheckers/core';
import type { PassRecord } from '@ccheckers/solver';
import { UsageError } from '../options.js';
import { grouped } from '../ui/format.js';
import { type Reference, type Series, escape, groupedBars, linesChart } from './charts.js';
import type { MachineDetails } from './machine.js';
import { PAPER } from './paper.js';

export interface BenchResultJson {
  board: number;
  pieces: number;
  position: string;
  results: Array<{ backend: string; op: string; nsPerOp: number; iterations: number }>;
  machine?: MachineDetails;
}

export interface SolveResultJson {
  board: number;
  pieces: number;
  rules: string;
  backend: string;
  threads: number;
  positions: number;
  start: string;
  passes: number;
  seconds: number;
  storedStates?: number;
  passLog?: PassRecord[];
  machine?: MachineDetails;
}

export type ReportInput = { kind: 'bench'; data: BenchResultJson; source: string } | { kind: 'solve'; data: SolveResultJson; source: string };

/** Reads saved results (`ccheckers bench --json`, `ccheckers solve --json`), one object per file or per line. */
export function readReportInputs(files: string[]): ReportInput[] {
  const inputs: ReportInput[] = [];
  for (const file of files) {
    const text = readResultsFile(file);
    const lines = text.split('\n').filter((l) => l.trim() !== '');
    if (lines.length === 0) throw new UsageError(`--from ${file}: empty`);
    lines.forEach((line, i) => {
      let o: unknown;
      try {
        o = JSON.parse(line);
      } catch {
        throw new UsageError(`--from ${file}: line ${i + 1} is not JSON (save results with --json)`);
      }
      inputs.push(classify(o, `${file}${lines.length > 1 ? `:${i + 1}` : ''}`));
    });
  }
  return inputs;
}

/** More than any saved results take (a solve's --json with its pass log is a few kilobytes). */
export const MAX_RESULTS_BYTES = 16 * 2 ** 20;

/** A --from file's text: a regular file (not a pipe or a device, which could block or never
 *  end) of at most MAX_RESULTS_BYTES. */
function readResultsFile(file: string): string {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (e) {
    throw new UsageError(`--from ${file}: cannot read it (${(e as NodeJS.ErrnoException).code ?? String(e)})`);
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) throw new UsageError(`--from ${file}: ${stat.isDirectory() ? 'is a directory' : 'is not a regular file'} (save results with --json to a file)`);
    const tooLarge = (bytes: number) => new UsageError(`--from ${file}: ${bytes} bytes, more than saved results take (at most ${MAX_RESULTS_BYTES})`);
    if (stat.size > MAX_RESULTS_BYTES) throw tooLarge(stat.size);
    // Read up to a byte past the bound whatever the size said (a file growing, or one of /proc
    // whose size is 0): never more.
    const bytes = Buffer.alloc(MAX_RESULTS_BYTES + 1);
    let length = 0;
    for (let n; length < bytes.length && (n = readSync(fd, bytes, length, bytes.length - length, null)) > 0; ) length += n;
    if (length > MAX_RESULTS_BYTES) throw tooLarge(stat.size > length ? stat.size : length);
    return bytes.toString('utf8', 0, length);
  } finally {
    closeSync(fd);
  }
}

/**
 * A saved result, checked field by field: `--from` files may come from anywhere, so each value
 * the page shows must be of its type (a number a finite number, never a string that looks like
 * one), and the result keeps those fields only. A refusal names the file (and line) and the field.
 */
function classify(o: unknown, source: string): ReportInput {
  const c = new Checker(source);
  if (isRecord(o) && 'results' in o) {
    return {
      kind: 'bench',
      data: {
        ...c.variant(o),
        position: c.string(o, 'position'),
        results: c.list(o, 'results', (r, at) => ({
          backend: c.string(r, 'backend', at, BACKEND_NAMES),
          op: c.string(r, 'op', at, BENCH_OPS),
          nsPerOp: c.number(r, 'nsPerOp', { min: 0 }, at),
          iterations: c.number(r, 'iterations', { min: 0 }, at),
        })),
        ...c.machine(o),
      },
      source,
    };
  }
  if (isRecord(o) && ('passes' in o || 'passLog' in o)) {
    if (o.passLog === undefined) throw new UsageError(`--from ${source}: a solve result without its pass log (written by an older ccheckers): solve again with --json`);
    return {
      kind: 'solve',
      data: {
        ...c.variant(o),
        rules: c.string(o, 'rules', '', RULE_MODES),
        backend: c.string(o, 'backend', '', BACKEND_NAMES),
        threads: c.number(o, 'threads', { integer: true, min: 0 }),
        positions: c.number(o, 'positions', { integer: true, min: 0 }),
        start: c.string(o, 'start', '', START_VALUES),
        passes: c.number(o, 'passes', { integer: true, min: 0 }),
        seconds: c.number(o, 'seconds', { min: 0 }),
        ...(o.storedStates !== undefined ? { storedStates: c.number(o, 'storedStates', { integer: true, min: 1 }) } : {}),
        passLog: c.list(o, 'passLog', (p, at) => ({
          pass: c.number(p, 'pass', { integer: true, min: 0 }, at),
          proven: c.number(p, 'proven', { min: 0 }, at),
          newlyProven: c.number(p, 'newlyProven', { min: 0 }, at),
          seconds: c.number(p, 'seconds', { min: 0 }, at),
        })),
        ...c.machine(o),
      },
      source,
    };
  }
  throw new UsageError(`--from ${source}: neither a bench nor a solve result (expected the output of bench --json or solve --json)`);
}

/** The longest free text a result may carry (a CPU's name, a position, a date). */
const MAX_TEXT = 200;
const START_VALUES = ['p1-win', 'p2-win', 'draw'];

function isRecord(o: unknown): o is Record<string, unknown> {
  return typeof o === 'object' && o !== null && !Array.isArray(o);
}

/** The fields of one input, each checked, a refusal naming the input and the field's path. */
class Checker {
  constructor(private readonly source: string) {}

  private refuse(field: string, want: string, got: unknown): never {
    if (got === undefined) throw new UsageError(`--from ${this.source}: ${field} is missing (expected ${want})`);
    const shown = JSON.stringify(got);
    throw new UsageError(`--from ${this.source}: ${field} must be ${want} (got ${shown.length > 60 ? `${shown.slice(0, 60)}...` : shown})`);
  }

  private name(key: string, at: string): string {
    return at === '' ? key : `${at}.${key}`;
  }

  number(o: Record<string, unknown>, key: string, { integer = false, min = 0 }: { integer?: boolean; min?: number }, at = ''): number {
    const v = o[key];
    // At most 2^53 - 1: past it counts are not exact, and sums of a chart's values could overflow
    // to Infinity (1e308 seconds drew as NaN).
    const want = `a ${integer ? 'whole ' : ''}number of at least ${min} and at most ${Number.MAX_SAFE_INTEGER}`;
    if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > Number.MAX_SAFE_INTEGER || (integer && !Number.isInteger(v))) this.refuse(this.name(key, at), want, v);
    return v;
  }

  /** A string of at most MAX_TEXT characters, or (`oneOf`) one of those words. */
  string(o: Record<string, unknown>, key: string, at = '', oneOf?: readonly string[]): string {
    const v = o[key];
    if (oneOf) {
      if (typeof v !== 'string' || !oneOf.includes(v)) this.refuse(this.name(key, at), `one of ${oneOf.join(', ')}`, v);
    } else if (typeof v !== 'string' || v.length > MAX_TEXT) {
      this.refuse(this.name(key, at), `a string of at most ${MAX_TEXT} characters`, v);
    }
    return v;
  }

  /** board and pieces: a variant ccheckers has (core's variant()). */
  variant(o: Record<string, unknown>): { board: number; pieces: number } {
    const board = this.number(o, 'board', { integer: true, min: 1 });
    const pieces = this.number(o, 'pieces', { integer: true, min: 1 });
    try {
      variant(board, pieces);
    } catch (e) {
      throw new UsageError(`--from ${this.source}: board ${board} with ${pieces} pieces is not a variant ccheckers has (${e instanceof Error ? e.message : String(e)})`);
    }
    return { board, pieces };
  }

  list<T>(o: Record<string, unknown>, key: string, item: (r: Record<string, unknown>, at: string) => T): T[] {
    const v = o[key];
    if (!Array.isArray(v)) this.refuse(key, 'a list', v);
    return v.map((r: unknown, i) => {
      const at = `${key}[${i}]`;
      if (!isRecord(r)) this.refuse(at, 'an object', r);
      return item(r, at);
    });
  }

  /** The machine of a result, where it has one. */
  machine(o: Record<string, unknown>): { machine?: MachineDetails } {
    const m = o.machine;
    if (m === undefined) return {};
    if (!isRecord(m)) this.refuse('machine', 'an object', m);
    const at = 'machine';
    return {
      machine: {
        cpu: this.string(m, 'cpu', at),
        bmi2: this.string(m, 'bmi2', at),
        node: this.string(m, 'node', at),
        platform: this.string(m, 'platform', at),
        hardwareThreads: this.number(m, 'hardwareThreads', { integer: true, min: 0 }, at),
        date: this.string(m, 'date', at),
      },
    };
  }
}

function table(header: string[], rows: string[][], numeric: boolean[] = []): string {
  const cell = (tag: string, text: string, i: number) => `<${tag}${numeric[i] ? ' class="num"' : ''}>${escape(text)}</${tag}>`;
  return `<table><thead><tr>${header.map((h, i) => cell('th', h, i)).join('')}</tr></thead><tbody>${rows.map((r) => `<tr>${r.map((c, i) => cell('td', c, i)).join('')}</tr>`).join('')}</tbody></table>`;
}

const nsText = (v: number) => (v < 10 ? v.toFixed(2) : v.toFixed(1));

/** The machines of the inputs, once each, numbered as the runs refer to them. */
function machines(inputs: ReportInput[]): { list: MachineDetails[]; of: (input: ReportInput) => number } {
  const list: MachineDetails[] = [];
  const keys: string[] = [];
  const key = (m: MachineDetails | undefined) => (m ? `${m.cpu}|${m.bmi2}|${m.node}|${m.platform}|${m.hardwareThreads}` : 'unknown');
  for (const input of inputs) {
    const k = key(input.data.machine);
    if (!keys.includes(k)) {
      keys.push(k);
      list.push(input.data.machine ?? { cpu: 'not recorded', bmi2: 'unknown', node: '?', platform: '?', hardwareThreads: 0, date: '' });
    }
  }
  return { list, of: (input) => keys.indexOf(key(input.data.machine)) + 1 };
}

function benchSection(input: Extract<ReportInput, { kind: 'bench' }>, machine: number): string {
  const b = input.data;
  const backends = [...new Set(b.results.map((r) => r.backend))];
  const ops = [...new Set(b.results.map((r) => r.op))];
  const ns = (backend: string, op: string) => b.results.find((r) => r.backend === backend && r.op === op)?.nsPerOp;
  const series: Series[] = backends.map((name) => ({ name, values: ops.map((op) => ns(name, op)) }));
  const paper = b.board === 7 && Object.hasOwn(PAPER, b.pieces) ? PAPER[b.pieces] : undefined;
  // An operation of the input is any string ("constructor" too): the paper's own only.
  const paperOf = (op: string) => (paper && Object.hasOwn(paper, op) ? paper[op as keyof typeof paper] : undefined);
  const references: Reference[] = [];
  for (const op of ops) {
    const p = paperOf(op);
    if (p) references.push({ category: op, label: "paper, BMI2", value: p.bmi2 }, { category: op, label: 'paper, non-BMI2', value: p.nonBmi2 });
  }
  const variant = `${b.board}x${b.board}/${b.pieces}`;
  const chart = groupedBars({ title: `${variant}: ns per operation (lower is better)`, categories: ops, series, yLabel: 'ns per operation', references });
  const header = ['op', ...backends.map((n) => `${n} ns`), ...backends.slice(1).map((n) => `${n} / ${backends[0]}`), ...(paper ? ['paper BMI2', 'paper non-BMI2'] : [])];
  const rows = ops.map((op) => {
    const values = backends.map((n) => ns(n, op));
    const first = values[0];
    const p = paperOf(op);
    return [
      op,
      ...values.map((v) => (v === undefined ? '-' : nsText(v))),
      ...values.slice(1).map((v) => (v === undefined || first === undefined ? '-' : `${(v / first).toFixed(2)}x`)),
      ...(paper ? [p ? nsText(p.bmi2) : '-', p ? nsText(p.nonBmi2) : '-'] : []),
    ];
  });
  const note = paper
    ? '<p class="note">Dashed marks: the figures of Sturtevant\'s bitboard paper (2.3 GHz Core i9, C++ -O3), light for BMI2, dark for the software pext/pdep. A different machine: compare ratios, not absolutes.</p>'
    : '';
  return `<section class="run"><h2>Bench ${escape(variant)} <span class="tag">machine ${machine}</span></h2><p class="meta">position ${escape(b.position)} &middot; ${escape(input.source)}</p>${chart}${note}${table(header, rows, header.map((_, i) => i > 0))}</section>`;
}

function solveSection(variant: string, runs: Array<{ input: Extract<ReportInput, { kind: 'solve' }>; machine: number }>): string {
  const name = (r: (typeof runs)[number], i: number) => `${i + 1}: ${r.input.data.backend}, ${r.input.data.threads} thr., machine ${r.machine}`;
  const passes = Math.max(...runs.map((r) => r.input.data.passLog!.length), 1);
  const categories = Array.from({ length: passes }, (_, i) => String(i + 1));
  const proven: Series[] = runs.map((r, i) => ({ name: name(r, i), values: categories.map((_, p) => r.input.data.passLog![p]?.newlyProven) }));
  const seconds: Series[] = runs.map((r, i) => ({ name: name(r, i), values: categories.map((_, p) => r.input.data.passLog![p]?.seconds) }));
  const shares = runs.map((r, i) => ({
    name: name(r, i),
    points: r.input.data.passLog!.map((p) => [p.pass, (100 * p.proven) / (r.input.data.storedStates ?? Math.max(p.proven, 1))] as [number, number]),
  }));
  const rows = runs.map((r, i) => {
    const d = r.input.data;
    return [String(i + 1), d.backend, String(d.threads), `machine ${r.machine}`, String(d.passes), d.seconds.toFixed(2), grouped(d.positions), d.start];
  });
  return `<section class="run"><h2>Solve ${escape(variant)}</h2>${table(['run', 'backend', 'threads', 'machine', 'passes', 'seconds', 'positions', 'start'], rows, [true, false, true, false, true, true, true, false])}
${groupedBars({ title: `${variant}: states proven in each pass`, categories, series: proven, yLabel: 'stored states proven' })}
${linesChart({ title: `${variant}: share of the stored states decided after each pass`, series: shares, xLabel: 'pass', yLabel: '% decided', yMin: lowestTen(shares), yMax: 100 })}
${groupedBars({ title: `${variant}: seconds per pass`, categories, series: seconds, yLabel: 'seconds' })}</section>`;
}

/** The y axis of the shares starts at the tens below the lowest (99.9% after pass 1 would be a flat line on 0-100). */
function lowestTen(series: Array<{ points: Array<[number, number]> }>): number {
  const lowest = Math.min(...series.flatMap((s) => s.points.map((p) => p[1])), 100);
  return Math.max(0, Math.floor(lowest / 10) * 10 - (lowest % 10 < 1 ? 10 : 0));
}

export function renderReport(inputs: ReportInput[], generated = new Date()): string {
  if (inputs.length === 0) throw new UsageError('nothing to report');
  const m = machines(inputs);
  const machineRows = m.list.map((x, i) => [String(i + 1), x.cpu, x.bmi2, x.node, x.platform, x.hardwareThreads ? String(x.hardwareThreads) : '?', x.date ? x.date.replace('T', ' ').slice(0, 19) : '?']);
  const sections: string[] = [];
  for (const input of inputs) if (input.kind === 'bench') sections.push(benchSection(input, m.of(input)));
  const byVariant = new Map<string, Array<{ input: Extract<ReportInput, { kind: 'solve' }>; machine: number }>>();
  for (const input of inputs) {
    if (input.kind !== 'solve') continue;
    const v = `${input.data.board}x${input.data.board}/${input.data.pieces} (${input.data.rules})`;
    byVariant.set(v, [...(byVariant.get(v) ?? []), { input, machine: m.of(input) }]);
  }
  for (const [variant, runs] of byVariant) sections.push(solveSection(variant, runs));
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>ccheckers report</title><style>${STYLE}</style></head>
<body><header><h1>ccheckers report</h1><p class="meta">generated ${escape(generated.toISOString().replace('T', ' ').slice(0, 19))} UTC from ${inputs.length} result(s)</p></header>
<section><h2>Machines</h2>${table(['machine', 'CPU', 'BMI2', 'Node', 'platform', 'hardware threads', 'measured (UTC)'], machineRows, [true, false, false, false, false, true, false])}</section>
${sections.join('\n')}
</body></html>
`;
}

const STYLE = `
:root { color-scheme: light dark; --fg: #1b1f24; --bg: #ffffff; --muted: #57606a; --grid: #d8dee4; --panel: #f6f8fa;
  --s0: #0969da; --s1: #cf222e; --s2: #1a7f37; --s3: #8250df; --s4: #bf8700; --s5: #1b7c83; --s6: #bc4c00; --s7: #57606a; --ref0: #8c959f; --ref1: #24292f; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6edf3; --bg: #0d1117; --muted: #8d96a0; --grid: #30363d; --panel: #161b22;
  --s0: #4493f8; --s1: #f85149; --s2: #3fb950; --s3: #a371f7; --s4: #d29922; --s5: #39c5cf; --s6: #db6d28; --s7: #8d96a0; --ref0: #6e7681; --ref1: #e6edf3; } }
@media print { :root { --fg: #000; --bg: #fff; --muted: #444; --grid: #ccc; --panel: #fff; } section, figure { break-inside: avoid; } }
body { font: 14px/1.45 system-ui, sans-serif; color: var(--fg); background: var(--bg); max-width: 860px; margin: 2em auto; padding: 0 1em; }
h1 { font-size: 1.6em; margin: 0; } h2 { font-size: 1.2em; margin: 1.6em 0 0.4em; } .meta, .note { color: var(--muted); font-size: 0.9em; }
.tag { font-size: 0.7em; font-weight: normal; color: var(--muted); border: 1px solid var(--grid); border-radius: 4px; padding: 0 0.4em; }
table { border-collapse: collapse; margin: 0.6em 0; font-variant-numeric: tabular-nums; } th, td { padding: 0.2em 0.7em; border-bottom: 1px solid var(--grid); text-align: left; } .num { text-align: right; }
figure.chart { margin: 1em 0; padding: 0.6em; background: var(--panel); border-radius: 6px; } figcaption { font-weight: 600; }
.legend { display: flex; flex-wrap: wrap; gap: 0.4em 1.2em; font-size: 0.85em; margin: 0.3em 0; } .swatch { display: inline-block; width: 0.8em; height: 0.8em; margin-right: 0.35em; border-radius: 2px; vertical-align: -0.05em; }
svg { width: 100%; height: auto; font-size: 11px; } svg text { fill: var(--fg); } .tick line { stroke: var(--grid); } .label { fill: var(--muted); }
path.line { fill: none; stroke-width: 2; } .reference { stroke-width: 2; stroke-dasharray: 4 3; } .ref-0 { stroke: var(--ref0); } .ref-1 { stroke: var(--ref1); }
${Array.from({ length: 8 }, (_, i) => `.series-${i} { fill: var(--s${i}); stroke: var(--s${i}); } span.series-${i} { background: var(--s${i}); } path.series-${i} { fill: none; }`).join('\n')}
rect.mark { stroke: none; }
`;
