/**
 * The explorer in a real browser: Debian's chromium driven by playwright-core (never a downloaded
 * browser), headless, against `ccheckers serve` on 127.0.0.1. Skipped, saying so, where
 * /usr/bin/chromium is missing (.ci/run installs it).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readDatabase, writeDatabase } from '@ccheckers/solver';
import { BIN, run } from './support/run-cli.js';

const CHROMIUM = '/usr/bin/chromium';
const dir = mkdtempSync(join(tmpdir(), 'ccheckers-explorer-'));
const db = join(dir, '7x7-2.ccdb');
/** Where the screenshot goes (kept after the run; ignored by git). */
const SHOTS = fileURLToPath(new URL('../test-output/', import.meta.url));
let server: ChildProcess;
let base = '';

/** `ccheckers serve --db path` on a free port of 127.0.0.1, and its address once it listens. */
async function serve(path: string): Promise<{ process: ChildProcess; base: string }> {
  const child = spawn(process.execPath, [BIN, 'serve', '--db', path, '--port', '0'], { stdio: ['ignore', 'ignore', 'pipe'] });
  const address = await new Promise<string>((resolve, reject) => {
    let err = '';
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (chunk: string) => {
      err += chunk;
      const m = /at (http:\/\/127\.0\.0\.1:\d+)\//.exec(err);
      if (m) resolve(m[1]!);
    });
    child.on('exit', (code) => reject(new Error(`serve exited with ${code}: ${err}`)));
  });
  return { process: child, base: address };
}

beforeAll(async () => {
  expect(run(['solve', '--board', '7', '--pieces', '2', '--out', db, '--quiet']).status).toBe(0);
  ({ process: server, base } = await serve(db));
}, 120_000);

afterAll(() => {
  server?.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
});

describe('the HTTP API', () => {
  it('answers the start position: P1 to move wins in 33 plies', async () => {
    const res = await fetch(`${base}/api/position?p=${encodeURIComponent(`xx${'.'.repeat(45)}oo x`)}`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ outcome: 'win', pliesToEnd: 33, toMove: 'x' });
  });

  it.each([
    ['/nope', 404, /not found: \/nope/],
    ['/api/nope', 404, /unknown API path/],
    ['/api/position', 400, /missing query parameter p/],
    ['/api/position?p=xxq%20x', 400, /malformed position: unexpected character "q"/],
    [`/api/position?p=${encodeURIComponent(`x${'.'.repeat(47)}o x`)}`, 400, /the position is 7x7\/1/],
    ['/../../etc/passwd', 404, /not found/],
    ['/%2e%2e/%2e%2e/etc/passwd', 404, /not found/],
  ])('%s gives %i with a message, and the server lives on', async (path, status, message) => {
    const res = await fetch(`${base}${path}`);
    expect(res.status).toBe(status);
    expect(((await res.json()) as { error: string }).error).toMatch(message);
    expect((await fetch(`${base}/api/game`)).status).toBe(200);
  });
});

describe('a database whose distance table does not fit its values (checksums recomputed)', () => {
  it('answers 500 naming the file, never a forged distance, and lives on', async () => {
    const withDistances = join(dir, 'distances.ccdb');
    expect(run(['solve', '--board', '7', '--pieces', '1', '--distances', '--out', withDistances, '--quiet']).status).toBe(0);
    const sound = readDatabase(withDistances);
    const forged = join(dir, 'forged-distances.ccdb');
    writeDatabase(forged, sound.header, sound.table, new Uint8Array(sound.distances!.length).fill(252));
    const bad = await serve(forged);
    try {
      const res = await fetch(`${bad.base}/api/position?p=${encodeURIComponent(`x${'.'.repeat(47)}o x`)}`);
      expect(res.status).toBe(500);
      expect(((await res.json()) as { error: string }).error).toMatch(/forged-distances\.ccdb: stored state \d+ contradicts its children \(wrong-distance\)/);
      expect((await fetch(`${bad.base}/api/game`)).status).toBe(200);
    } finally {
      bad.process.kill('SIGTERM');
    }
  }, 60_000);
});

describe.skipIf(!existsSync(CHROMIUM))('the page in headless chromium', () => {
  it('shows "P1 wins" at the start, plays a clicked move and shows the new value', async () => {
    const { chromium } = await import('playwright-core');
    const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
    try {
      const page = await browser.newPage({ viewport: { width: 1100, height: 760 } });
      await page.goto(`${base}/`);
      const headline = page.getByTestId('headline');
      await expect.poll(() => headline.textContent(), { timeout: 60_000 }).toBe('P1 wins in 33 plies');
      expect(await page.locator('#position').inputValue()).toBe(`xx${'.'.repeat(45)}oo x`);

      await page.click('circle[data-cell="0"]'); // P1's piece on cell 0 ...
      const target = page.locator('circle.target[data-cell="3"]');
      expect(await target.getAttribute('data-outcome')).toBe('win'); // ... its destination 3 keeps the win
      await target.click();

      await expect.poll(() => page.locator('#position').inputValue()).toBe(`.x.x${'.'.repeat(43)}oo o`);
      await expect.poll(() => headline.textContent(), { timeout: 60_000 }).toBe('P1 wins in 32 plies');
      expect(await page.locator('#detail').textContent()).toBe('o (P2) to move loses in 32 plies');

      await page.click('#undo');
      await expect.poll(() => headline.textContent()).toBe('P1 wins in 33 plies');
      mkdirSync(SHOTS, { recursive: true });
      await page.click('circle[data-cell="1"]');
      await page.screenshot({ path: join(SHOTS, 'explorer-7x7-2.png') });
      expect(existsSync(join(SHOTS, 'explorer-7x7-2.png'))).toBe(true);

      // A position in the address after '#': shown; one that does not decode or is not this game's:
      // the start position, and why.
      const opened = async (hash: string) => {
        const other = await browser.newPage();
        await other.goto(`${base}/#${hash}`);
        return other;
      };
      const after = await opened(encodeURIComponent(`.x.x${'.'.repeat(43)}oo o`));
      await expect.poll(() => after.getByTestId('headline').textContent(), { timeout: 60_000 }).toBe('P1 wins in 32 plies');
      for (const [hash, why] of [
        ['%E0%A4%A', /^the position after # in the address \(a malformed escape\): the start position instead$/],
        ['xx', /^the position after # in the address \(.+\): the start position instead$/],
      ] as const) {
        const bad = await opened(hash);
        await expect.poll(() => bad.getByTestId('headline').textContent(), { timeout: 60_000 }).toBe('P1 wins in 33 plies');
        expect(await bad.locator('#error').textContent()).toMatch(why);
      }
    } finally {
      await browser.close();
    }
  });
});
