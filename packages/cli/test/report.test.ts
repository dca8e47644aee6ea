/**
 * The HTML report in the real Chromium the explorer test uses: two solve results of different
 * runs and a bench result, saved with --json, combine into one page; every chart has one mark per
 * input row, and the page asks for nothing over the network. A screenshot stays in test-output/.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run } from './support/run-cli.js';

const CHROMIUM = '/usr/bin/chromium';
const SHOTS = fileURLToPath(new URL('../test-output/', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'ccheckers-report-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const files = { solveNative: join(dir, 'solve-a.json'), solveTs: join(dir, 'solve-b.json'), bench: join(dir, 'bench.json') };
const page = join(dir, 'report.html');
let solves: Array<{ passLog: unknown[] }> = [];
let bench: { results: unknown[] };

beforeAll(() => {
  const a = run(['solve', '--board', '7', '--pieces', '2', '--json', '--quiet']);
  const b = run(['solve', '--board', '7', '--pieces', '2', '--backend', 'ts', '--threads', '1', '--json', '--quiet']);
  const c = run(['bench', '--board', '7', '--pieces', '3', '--min-time', '5', '--ops', 'winner,successors,rankP2', '--json', '--quiet']);
  for (const r of [a, b, c]) expect(r.status, r.stderr).toBe(0);
  writeFileSync(files.solveNative, a.stdout);
  writeFileSync(files.solveTs, b.stdout);
  writeFileSync(files.bench, c.stdout);
  solves = [JSON.parse(a.stdout), JSON.parse(b.stdout)];
  bench = JSON.parse(c.stdout);
  const r = run(['report', '--from', files.solveNative, files.solveTs, files.bench, '--html', page]);
  expect(r.status, r.stderr).toBe(0);
}, 300_000);

describe('report', () => {
  it('is one self-contained page: no script, no external reference, the machine named', () => {
    const html = readFileSync(page, 'utf8');
    expect(html).not.toMatch(/<script|<link|https?:\/\/|@import|url\(/);
    expect(html).toMatch(/<h2>Machines<\/h2>/);
    expect(html).toContain(`<td>${process.version}</td>`);
    expect(html).toMatch(/<td>(fast|no|microcoded \(slow\)|unknown)<\/td>/);
  });

  it('refuses what is not a result, naming the file', () => {
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, '{"hello": 1}\n');
    const r = run(['report', '--from', bad, '--html', join(dir, 'x.html')]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(`${bad}: neither a bench nor a solve result`);
  });

  it.each([
    ['board 99', (o: Record<string, unknown>) => ({ ...o, board: 99 }), /board 99 with 2 pieces is not a variant ccheckers has/],
    ['100 KB of rules', (o: Record<string, unknown>) => ({ ...o, rules: 'x'.repeat(100_000) }), /rules must be one of clean, published/],
    ['an unknown backend', (o: Record<string, unknown>) => ({ ...o, backend: 'gpu' }), /backend must be one of native-bmi2, native-portable, ts/],
    ['a start that is no value', (o: Record<string, unknown>) => ({ ...o, start: '<b>' }), /start must be one of p1-win, p2-win, draw/],
    ['a CPU name of 10,000 characters', (o: Record<string, unknown>) => ({ ...o, machine: { ...(o.machine as object), cpu: 'c'.repeat(10_000) } }), /machine\.cpu must be a string of at most 200 characters/],
  ])('refuses a solve result with %s, naming the field', (_what, edit, message) => {
    const bad = join(dir, 'edited.json');
    writeFileSync(bad, `${JSON.stringify(edit(solves[0] as unknown as Record<string, unknown>))}\n`);
    const r = run(['report', '--from', bad, '--html', join(dir, 'y.html')]);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.stderr.length).toBeLessThan(1000);
    expect(existsSync(join(dir, 'y.html'))).toBe(false);
  });

  it.skipIf(!existsSync(CHROMIUM))('renders in chromium: one mark per input row in every chart, no request leaves the page', async () => {
    const { chromium } = await import('playwright-core');
    const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
    try {
      const tab = await browser.newPage({ viewport: { width: 900, height: 1200 } });
      const requests: string[] = [];
      tab.on('request', (r) => requests.push(r.url()));
      await tab.goto(`file://${page}`);
      const charts = await tab.$$eval('figure.chart', (figures) =>
        figures.map((f) => ({ title: f.querySelector('figcaption')!.textContent!, marks: f.querySelectorAll('.mark').length })),
      );
      const passes = solves.reduce((n, s) => n + s.passLog.length, 0);
      expect(charts.map((c) => c.title)).toEqual([
        '7x7/3: ns per operation (lower is better)',
        '7x7/2 (clean): states proven in each pass',
        '7x7/2 (clean): share of the stored states decided after each pass',
        '7x7/2 (clean): seconds per pass',
      ]);
      expect(charts.map((c) => c.marks)).toEqual([bench.results.length, passes, passes, passes]);
      // The paper's figures as reference marks: two per operation it has (winner, successors, rankP2).
      expect(await tab.$$eval('line.reference', (l) => l.length)).toBe(6);
      expect(requests).toEqual([`file://${page}`]);
      mkdirSync(SHOTS, { recursive: true });
      await tab.screenshot({ path: join(SHOTS, 'report.png'), fullPage: true });
      await tab.emulateMedia({ colorScheme: 'dark' });
      await tab.screenshot({ path: join(SHOTS, 'report-dark.png'), fullPage: true });
    } finally {
      await browser.close();
    }
  });
});

describe('report paths', () => {
  it('a --html that cannot be written is refused before the solve or bench starts', () => {
    const r = run(['solve', '--board', '7', '--pieces', '1', '--html', dir]);
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(`--html: ${dir} is a directory, not a regular file`);
    expect(r.stderr).not.toMatch(/pass 1/);
    const b = run(['bench', '--html', join(dir, 'no-such-folder', 'b.html'), '--ops', 'winner']);
    expect(b.status).toBe(2);
    expect(b.stderr).toMatch(/--html: .*no-such-folder/);
  });
});
