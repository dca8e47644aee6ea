/**
 * Real parts for the cluster tests: a Redis started by scripts/redis.sh on a free loopback port
 * (with a password, persistence on), and `ccheckers` processes (workers, coordinators) run
 * side by side. Everything started here is stopped by stopAll().
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BIN, HOOKED_BIN } from './run-cli.js';

const REDIS_SH = fileURLToPath(new URL('../../../../scripts/redis.sh', import.meta.url));

export const haveRedis = spawnSync('redis-server', ['--version']).status === 0;

const started = new Set<ChildProcess>();

/** Stops every process started here (SIGKILL: the tests have already checked what they need). */
export function stopAll(): void {
  for (const p of started) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
  started.clear();
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as { port: number }).port;
      server.close(() => resolve(port));
    });
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits for `test` (polled every 50 ms) up to `ms`, else throws `what`. */
export async function waitFor(what: string, test: () => boolean, ms = 60_000): Promise<void> {
  const until = performance.now() + ms;
  while (!test()) {
    if (performance.now() > until) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

export class TestRedis {
  readonly dir = mkdtempSync(join(tmpdir(), 'ccheckers-redis-'));
  port = 0;
  private proc: ChildProcess | undefined;

  /** `password` '': a Redis that asks for none. */
  constructor(readonly password = 'cluster-test-secret') {}

  get url(): string {
    return this.password === '' ? `redis://127.0.0.1:${this.port}` : `redis://:${this.password}@127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    if (this.port === 0) this.port = await freePort();
    this.proc = spawn('bash', [REDIS_SH, 'run', this.dir, String(this.port), this.password], { stdio: 'ignore' });
    started.add(this.proc);
    await waitFor(`Redis on port ${this.port}`, () => this.ping(), 20_000);
  }

  /** SHUTDOWN (the append-only file is flushed), and the process gone. */
  async stop(): Promise<void> {
    const proc = this.proc!;
    this.cli('shutdown');
    await waitFor('Redis to stop', () => proc.exitCode !== null || proc.signalCode !== null, 20_000);
  }

  ping(): boolean {
    return this.cli('ping').stdout.includes('PONG');
  }

  private cli(...args: string[]) {
    return spawnSync('redis-cli', ['-h', '127.0.0.1', '-p', String(this.port), ...args], { encoding: 'utf8', env: { ...process.env, ...(this.password === '' ? {} : { REDISCLI_AUTH: this.password }) }, timeout: 10_000 });
  }
}

export interface Running {
  proc: ChildProcess;
  /** stdout and stderr so far. */
  stdout(): string;
  stderr(): string;
  /** Resolves when the process has exited. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** `ccheckers ARGS` in the background; with `hooks`, through the tests' harness (hooked-bin.mjs). */
export function start(args: string[], hooks?: Record<string, unknown>): Running {
  const argv = hooks ? [HOOKED_BIN, JSON.stringify(hooks), ...args] : [BIN, ...args];
  const proc = spawn(process.execPath, argv, { env: { ...process.env, NO_COLOR: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
  started.add(proc);
  let out = '';
  let err = '';
  proc.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => proc.on('close', (code, signal) => resolve({ code, signal })));
  return { proc, stdout: () => out, stderr: () => err, exited };
}

/** A worker for `store` (on `backend`, default auto) that hands a dead worker's job on after
 *  `stallSeconds` (2: the fault tests; a step that holds the event loop longer is run twice). */
export function startWorker(redis: TestRedis, store: string, hooks?: Record<string, unknown>, backend = 'auto', stallSeconds = 2): Running {
  return start(['worker', '--redis', redis.url, '--store', store, '--threads', '1', '--stall-seconds', String(stallSeconds), '--backend', backend], hooks);
}

/** Stops a worker the way a user does (SIGTERM: after its current job) and returns its job count. */
export async function stopWorker(w: Running): Promise<number> {
  w.proc.kill('SIGTERM');
  const { code } = await w.exited;
  if (code !== 0) throw new Error(`worker exit ${code}: ${w.stderr()}`);
  const m = /stopped after (\d+) job\(s\)/.exec(w.stderr());
  if (!m) throw new Error(`worker did not say how many jobs it ran: ${w.stderr()}`);
  return Number(m[1]);
}
