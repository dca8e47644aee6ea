/**
 * What `--html` may replace and what a report takes from its `--from` inputs (issue 35): a page
 * follows the --out rules (a regular file or nothing, --force to replace, never a command's own
 * input or output, a store's file or a database), checked before the work and again when written;
 * saved results are untrusted, so every field is checked (exit 2 naming the file and the field)
 * and every value is escaped where it goes.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_RESULTS_BYTES } from '../src/report/report.js';
import { run, runHooked } from './support/run-cli.js';

const dir = mkdtempSync(join(tmpdir(), 'ccheckers-report-safety-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A saved solve result of 7x7/1 (solve --json), parsed. */
let solved: Record<string, unknown>;
let solvedText: string;
const store = join(dir, 'store');
const database = join(dir, 'solved.ccdb');

beforeAll(() => {
  const r = run(['solve', '--board', '7', '--pieces', '1', '--json', '--quiet', '--out', database]);
  expect(r.status, r.stderr).toBe(0);
  solvedText = r.stdout;
  solved = JSON.parse(r.stdout);
  const s = run(['solve', '--board', '7', '--pieces', '1', '--store', store, '--quiet']);
  expect(s.status, s.stderr).toBe(0);
});

/** A file of the user's, with its content, for checking that it is left as it was. */
function userFile(name: string, content = `the user's ${name}\n`): { path: string; content: string } {
  const path = join(dir, name);
  writeFileSync(path, content);
  return { path, content };
}

/** No temporary file of a page beside `path`. */
function noLeftovers(path: string): void {
  const base = path.split('/').pop()!;
  expect(readdirSync(join(path, '..')).filter((f) => f.startsWith(`${base}.tmp`))).toEqual([]);
}

describe('--html never replaces what is not a page of its own', () => {
  it('solve refuses an --html that is its --out, before solving', () => {
    const same = join(dir, 'same.ccdb');
    const r = run(['solve', '--board', '7', '--pieces', '1', '--out', same, '--html', same]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(`--html: ${same} is the --out file`);
    expect(r.stderr).not.toMatch(/pass 1/);
    expect(existsSync(same)).toBe(false);
  });

  it('report refuses to write over one of its --from inputs, even with --force', () => {
    const input = userFile('input.json', solvedText);
    for (const force of [[], ['--force']]) {
      const r = run(['report', '--from', input.path, '--html', input.path, ...force]);
      expect(r.status, r.stderr).toBe(2);
      expect(r.stderr).toContain(`--html: ${input.path} is one of the --from inputs`);
      expect(readFileSync(input.path, 'utf8')).toBe(input.content);
    }
  });

  it("refuses a store's file, a new file in a store and a database, even with --force", () => {
    const input = userFile('input2.json', solvedText);
    const shard = readdirSync(store).find((f) => f !== 'manifest.json')!;
    const before = readFileSync(join(store, shard));
    for (const target of [join(store, shard), join(store, 'page.html')]) {
      const r = run(['report', '--from', input.path, '--html', target, '--force']);
      expect(r.status, r.stderr).toBe(2);
      expect(r.stderr).toContain(`--html: ${target} is in ${store}, a ccheckers store`);
    }
    expect(readFileSync(join(store, shard)).equals(before)).toBe(true);
    expect(existsSync(join(store, 'page.html'))).toBe(false);

    const db = readFileSync(database);
    const r = run(['report', '--from', input.path, '--html', database, '--force']);
    expect(r.status, r.stderr).toBe(2);
    expect(r.stderr).toContain(`--html: ${database} is a ccheckers database`);
    expect(readFileSync(database).equals(db)).toBe(true);
  });

  it('an existing page needs --force in report, bench and solve, checked before the work', () => {
    const input = userFile('input3.json', solvedText);
    const page = userFile('page.html');
    const commands = [
      ['report', '--from', input.path],
      ['bench', '--ops', 'winner', '--min-time', '1', '--backends', 'ts'],
      ['solve', '--board', '7', '--pieces', '1'],
    ];
    for (const command of commands) {
      const r = run([...command, '--html', page.path]);
      expect(r.status, r.stderr).toBe(2);
      expect(r.stderr).toContain(`--html: ${page.path} already exists (use --force to replace it)`);
      expect(r.stderr).not.toMatch(/^bench|pass 1/m);
      expect(readFileSync(page.path, 'utf8')).toBe(page.content);
    }
    for (const command of commands) {
      writeFileSync(page.path, page.content);
      const r = run([...command, '--html', page.path, '--force', ...(command[0] === 'report' ? [] : ['--quiet'])]);
      expect(r.status, r.stderr).toBe(0);
      expect(readFileSync(page.path, 'utf8')).toMatch(/^<!doctype html>/);
      noLeftovers(page.path);
    }
  });

  it('a page that appears at --html during the solve is not replaced; the report is kept aside', () => {
    const out = join(dir, 'during.ccdb');
    const page = join(dir, 'during.html');
    const r = runHooked({ createAtHtmlAfterPass: 1 }, ['solve', '--board', '7', '--pieces', '1', '--threads', '1', '--out', out, '--html', page, '--quiet', '--checkpoint-minutes', '0']);
    expect(r.status, r.stderr).toBe(2);
    expect(readFileSync(page, 'utf8')).toBe('a page of the user\n');
    const kept = /the report is kept in (\S+)\)?$/m.exec(r.stderr)?.[1];
    expect(kept, r.stderr).toBeDefined();
    expect(readFileSync(kept!, 'utf8')).toMatch(/^<!doctype html>/);
    expect(r.stderr).toContain(`--html: ${page} appeared during the work (use --force to replace it)`);
    // The solve's own output is whole, and its summary was printed.
    expect(existsSync(out)).toBe(true);
    expect(r.stdout).toMatch(/^7x7\/1/);
    // With --json: the results' one object on stdout, the page's failure on stderr alone.
    rmSync(page);
    const json = runHooked({ createAtHtmlAfterPass: 1 }, ['solve', '--board', '7', '--pieces', '1', '--threads', '1', '--out', join(dir, 'during-json.ccdb'), '--html', page, '--quiet', '--checkpoint-minutes', '0', '--json']);
    expect(json.status, json.stderr).toBe(2);
    expect(json.stderr).toContain(`--html: ${page} appeared during the work (use --force to replace it)`);
    expect(json.stdout.trim().split('\n')).toHaveLength(1);
    expect(JSON.parse(json.stdout)).toMatchObject({ board: 7, pieces: 1, start: expect.any(String) });
  });
});

describe('report --from inputs are untrusted', () => {
  it('a string where a number belongs (an attribute injection) is refused, naming the file and the field', () => {
    const evil = '"><meta http-equiv=refresh content=0;url=https://example.invalid>';
    const data = structuredClone(solved) as { passLog: Array<Record<string, unknown>> };
    data.passLog[0]!.pass = evil;
    const input = userFile('evil.json', `${JSON.stringify(data)}\n`);
    const page = join(dir, 'evil.html');
    const r = run(['report', '--from', input.path, '--html', page]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(`--from ${input.path}: passLog[0].pass must be a whole number`);
    expect(existsSync(page)).toBe(false);
  });

  it('free text goes into the page escaped for its place (element text, attribute, SVG)', () => {
    // rules, backend, start and op must be one of their words (see report.test.ts); the machine's
    // fields and a bench's position are the free text left, shown as given.
    const evil = `"'><meta http-equiv=refresh content=0;url=https://example.invalid><script>alert(1)</script>`;
    const data = structuredClone(solved) as Record<string, unknown> & { machine: Record<string, unknown> };
    Object.assign(data.machine, { cpu: evil, bmi2: evil, node: evil, platform: evil, date: evil });
    const bench = { board: 7, pieces: 3, position: evil, results: [{ backend: 'ts', op: 'winner', nsPerOp: 2, iterations: 1000 }], machine: data.machine };
    const input = userFile('evil-text.json', `${JSON.stringify(data)}\n${JSON.stringify(bench)}\n`);
    const page = join(dir, 'evil-text.html');
    const r = run(['report', '--from', input.path, '--html', page]);
    expect(r.status, r.stderr).toBe(0);
    const html = readFileSync(page, 'utf8');
    expect(html).not.toMatch(/<meta http-equiv=refresh|<script|example\.invalid>/);
    expect(html).toContain('&quot;&#39;&gt;&lt;meta http-equiv=refresh');
    // Every tag is the page's own: a name and quoted attribute values holding no quote or bracket.
    for (const tag of html.match(/<[a-z][^>]*>/g)!) expect(tag.replace(/\s+[a-zA-Z0-9:-]+="[^"<>]*"/g, '')).toMatch(/^<[a-z][a-z0-9]*\s*\/?>$/);
  });

  it.each(['constructor', '__proto__', 'toString'])("a bench operation named like an object's property (%s) is refused like any unknown word", (op) => {
    const bench = { board: 7, pieces: 3, position: 'start', results: [{ backend: 'ts', op, nsPerOp: 2, iterations: 1000 }] };
    const input = userFile(`proto-${op}.json`, `${JSON.stringify(bench)}\n`);
    const page = join(dir, `proto-${op}.html`);
    const r = run(['report', '--from', input.path, '--html', page]);
    expect(r.status, r.stderr).toBe(2);
    expect(r.stderr).toContain(`--from ${input.path}: results[0].op must be one of winner, successors`);
    expect(r.stderr).not.toContain('fatal error');
    expect(existsSync(page)).toBe(false);
  });

  it('a malformed input is refused with the file and the field, not a fatal error', () => {
    const cases: Array<[string, (d: Record<string, any>) => void, string]> = [
      ['pass-seconds', (d) => (d.passLog[1].seconds = '0.5'), 'passLog[1].seconds must be a number'],
      ['seconds', (d) => (d.seconds = '1.5'), 'seconds must be a number'],
      ['seconds-huge', (d) => (d.seconds = 1e308), 'seconds must be a number of at least 0 and at most 9007199254740991'],
      ['proven-past-2^53', (d) => (d.passLog[0].proven = 2 ** 53), 'passLog[0].proven must be a number of at least 0 and at most 9007199254740991'],
      ['passlog-object', (d) => (d.passLog = { 0: d.passLog[0] }), 'passLog must be a list'],
      ['pass-null', (d) => (d.passLog[0] = null), 'passLog[0] must be an object'],
      ['stored', (d) => (d.storedStates = 0), 'storedStates must be a whole number of at least 1'],
      ['machine-cpu', (d) => (d.machine.cpu = 7), 'machine.cpu must be a string'],
      ['machine-date', (d) => (d.machine.date = null), 'machine.date must be a string'],
      ['bench-ns', () => {}, 'results[0].nsPerOp must be a number'],
      ['bench-null', () => {}, 'results[0] must be an object'],
    ];
    for (const [name, spoil, message] of cases) {
      let data: Record<string, any> = structuredClone(solved);
      if (name === 'bench-ns') data = { board: 7, pieces: 3, position: 'start', results: [{ backend: 'ts', op: 'winner', nsPerOp: '2.5', iterations: 1000 }] };
      if (name === 'bench-null') data = { board: 7, pieces: 3, position: 'start', results: [null] };
      spoil(data);
      const input = userFile(`bad-${name}.json`, `${JSON.stringify(data)}\n`);
      const page = join(dir, `bad-${name}.html`);
      const r = run(['report', '--from', input.path, '--html', page]);
      expect(r.status, `${name}: ${r.stderr}`).toBe(2);
      expect(r.stderr, name).toContain(`--from ${input.path}: ${message}`);
      expect(r.stderr, name).not.toContain('fatal error');
      expect(existsSync(page), name).toBe(false);
    }
    // The other side of 2^53: 2^53 - 1 is drawn, a number on the page, never NaN.
    const largest = structuredClone(solved) as Record<string, any>;
    largest.seconds = Number.MAX_SAFE_INTEGER;
    largest.passLog[0].proven = Number.MAX_SAFE_INTEGER;
    const input = userFile('largest.json', `${JSON.stringify(largest)}\n`);
    const page = join(dir, 'largest.html');
    const r = run(['report', '--from', input.path, '--html', page]);
    expect(r.status, r.stderr).toBe(0);
    expect(readFileSync(page, 'utf8')).not.toMatch(/NaN|Infinity/);
  });

  it('a --from that is not a regular file (a pipe, a device) or is larger than results take is refused, not read', () => {
    const fifo = join(dir, 'results.fifo');
    execFileSync('mkfifo', [fifo]);
    for (const [input, message] of [
      [fifo, 'is not a regular file'],
      ['/dev/zero', 'is not a regular file'],
      [dir, 'is a directory'],
    ]) {
      const page = join(dir, 'not-read.html');
      const r = run(['report', '--from', input!, '--html', page]);
      expect(r.status, `${input}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toContain(`--from ${input}: ${message}`);
      expect(existsSync(page)).toBe(false);
    }
    // Both sides of the bound: a saved result padded to exactly MAX_RESULTS_BYTES is read, a byte
    // more is refused before reading.
    const line = JSON.stringify(solved);
    const atBound = userFile('at-bound.json', `${line}${' '.repeat(MAX_RESULTS_BYTES - line.length - 1)}\n`);
    expect(statSync(atBound.path).size).toBe(MAX_RESULTS_BYTES);
    const read = run(['report', '--from', atBound.path, '--html', join(dir, 'at-bound.html')]);
    expect(read.status, read.stderr).toBe(0);
    const over = userFile('over-bound.json', `${atBound.content} `);
    const refused = run(['report', '--from', over.path, '--html', join(dir, 'over-bound.html')]);
    expect(refused.status).toBe(2);
    expect(refused.stderr).toContain(`--from ${over.path}: ${MAX_RESULTS_BYTES + 1} bytes, more than saved results take (at most ${MAX_RESULTS_BYTES})`);
  });
});
