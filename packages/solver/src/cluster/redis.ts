/**
 * Connections to the Redis behind a cluster solve's BullMQ queues: from a URL
 * (redis://[:password@]host:port[/db], rediss:// for TLS), retried for as long as Redis is away
 * (a restart mid-solve is waited out, not an error), and counted, so that the coordinator can
 * report the commands it sent per pass.
 */
import { createRequire } from 'node:module';
import { CCheckersError } from '@ccheckers/core';
import type { Redis } from 'ioredis';

/**
 * bullmq and ioredis are optional peer dependencies of @ccheckers/solver (the ccheckers CLI
 * depends on them): a program that never runs a cluster does not install them. They are loaded
 * only through these two functions, when a cluster is used; elsewhere in the solver they appear
 * in `import type` only. A missing package is an E_USAGE error that says what to install.
 *
 * Both are CommonJS packages: `require` loads them in 0.3 CPU-seconds, `import()` in 0.65 (each
 * module of the graph parsed again for its named exports), and every worker and coordinator
 * loads them once.
 */
const requireHere = createRequire(import.meta.url);
export const CLUSTER_PACKAGES_MISSING = 'the cluster needs the packages bullmq and ioredis: npm install bullmq@6.7.0 ioredis@6.0.0';

function missingPackage(e: unknown): CCheckersError | undefined {
  const code = (e as { code?: unknown } | null)?.code;
  if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') return undefined;
  // A package the loaded one needs (ioredis, bullmq's peer, or one of their dependencies) is as
  // missing as the package itself: the same install repairs it.
  const what = /Cannot find (?:package|module) '([^']+)'/.exec((e as Error).message)?.[1];
  return new CCheckersError('E_USAGE', `${CLUSTER_PACKAGES_MISSING}${what === undefined ? '' : ` (${what} is not installed)`}`);
}

/** The bullmq module, loaded on first use; an E_USAGE error when it is not installed. */
export async function loadBullmq(): Promise<typeof import('bullmq')> {
  try {
    return requireHere('bullmq') as typeof import('bullmq');
  } catch (e) {
    throw missingPackage(e) ?? e;
  }
}

/** The ioredis module, loaded on first use; an E_USAGE error when it is not installed. (Its
 *  `default` is left out: the named exports are what the solver uses.) */
export async function loadIoredis(): Promise<Omit<typeof import('ioredis'), 'default'>> {
  try {
    return requireHere('ioredis') as Omit<typeof import('ioredis'), 'default'>;
  } catch (e) {
    throw missingPackage(e) ?? e;
  }
}

/** The queue of a store's jobs: one per store, named by the store's id. */
export function queueName(storeId: string): string {
  return `ccheckers-${storeId}`;
}

/** The URL checked, for messages with the password masked. */
export function parseRedisUrl(text: string): { url: string; shown: string } {
  let u: URL;
  try {
    u = new URL(text);
  } catch {
    throw new CCheckersError('E_USAGE', `--redis must be a URL such as redis://127.0.0.1:6379 (got "${text}")`);
  }
  if (u.protocol !== 'redis:' && u.protocol !== 'rediss:') throw new CCheckersError('E_USAGE', `--redis must start with redis:// or rediss:// (got "${u.protocol}")`);
  if (u.hostname === '') throw new CCheckersError('E_USAGE', `--redis names no host (got "${text}")`);
  // ioredis would send SELECT NaN and fail at the first command.
  if (!/^(\/(\d{1,9})?)?$/.test(u.pathname)) throw new CCheckersError('E_USAGE', `--redis: the database after the host must be a number, as in redis://127.0.0.1:6379/0 (got "${u.pathname}")`);
  const shown = new URL(u.href);
  if (shown.password !== '') shown.password = '***';
  return { url: u.href, shown: shown.href.replace(/\/$/, '') };
}

export interface CountedRedis {
  redis: Redis;
  /** Commands sent so far (a pipeline counts each of its commands). */
  commands(): number;
}

/** What Redis says when it refuses the credentials (wrong password or user, or none given to a
 *  Redis that wants one): no retry helps, so the command ends at once, saying what to change. */
const CREDENTIALS_REFUSED = /^(WRONGPASS|NOAUTH)\b|invalid (username-)?password/i;

/** What Redis says when it refuses the database the URL names (redis://host/99 where it has 16,
 *  or any but 0 on a Redis Cluster): ioredis reports it as an error and goes on in database 0. */
const DATABASE_REFUSED = /DB index is out of range|invalid DB index|SELECT is not allowed/i;
/** ioredis's parser meeting bytes that are no Redis reply. */
const NOT_REDIS = /Unknown RESP type|Protocol error/i;

/**
 * A connection as BullMQ wants it for workers and for a coordinator that must outlast a Redis
 * restart: commands wait (maxRetriesPerRequest null) while it reconnects, every 100 ms to 2 s.
 * `onError` hears connection errors once per outage (ioredis repeats them on every retry).
 * ioredis (and BullMQ, in the coordinator and worker) are loaded only when a cluster is used, by
 * loadIoredis and loadBullmq: loading BullMQ costs ~0.1 s that no other command should pay, and a
 * program that never runs a cluster need not install them.
 *
 * Resolves once Redis has answered (a Redis that is away is waited for, with `onError` told), or
 * when `signal` aborts first; a Redis that refuses the credentials in the URL, asks for no password
 * where the URL gives one (the password was meant to keep others out), or refuses the database it
 * names (SELECT refused), is an E_USAGE error before anything else is done (a worker would otherwise log BullMQ's refusal many times a second,
 * and a coordinator would have made its store first).
 */
/** While the first connection gets no answer, it is said again this often (a mistyped port would
 *  look like a hang after one line). */
export const REDIS_REMIND_MS = 30_000;

export async function connectRedis(
  url: { url: string; shown: string },
  onError: (message: string) => void = () => {},
  signal?: AbortSignal,
  remindMs = REDIS_REMIND_MS,
): Promise<CountedRedis> {
  const { Redis } = await loadIoredis();
  let down = false;
  const redis = new Redis(url.url, {
    maxRetriesPerRequest: null,
    retryStrategy: (times) => Math.min(2000, 100 * times),
    lazyConnect: false,
  });
  let starting = true;
  let lastError = '';
  // What answers there is no Redis (an HTTP server on that port): said once, not retried forever.
  let notRedis: string | undefined;
  let answered: ((refusal: string | undefined) => void) | undefined;
  redis.on('error', (e: Error) => {
    if (starting && (CREDENTIALS_REFUSED.test(e.message) || DATABASE_REFUSED.test(e.message))) return; // the first answer says it
    if (starting && NOT_REDIS.test(e.message)) {
      notRedis = e.message;
      answered?.(undefined);
      return;
    }
    lastError = e.message || String(e);
    if (!down) onError(lastError);
    down = true;
  });
  redis.on('ready', () => {
    down = false;
  });
  // The first answer, or a refusal of the credentials or of the database (asked for again here:
  // ioredis's own SELECT on connecting only emits an error); other refusals (too many clients, a
  // protected mode) are said and retried like an outage.
  const db = Number(/^\/(\d+)$/.exec(new URL(url.url).pathname)?.[1] ?? 0);
  // ioredis queues the first command until it connects: the errors come as events (above), and
  // while none is answered the wait is said again every remindMs.
  const since = performance.now();
  const reminder = setInterval(() => {
    if (down) onError(`still no answer after ${Math.round((performance.now() - since) / 1000)} s (${lastError}): is a Redis running there, on that port? (Ctrl-C stops)`);
  }, remindMs);
  reminder.unref();
  const refused = await new Promise<string | undefined>((resolve) => {
    answered = resolve;
    if (signal?.aborted) return resolve(undefined);
    signal?.addEventListener('abort', () => resolve(undefined), { once: true });
    const ask = () =>
      (db === 0 ? redis.ping() : redis.select(db)).then(
        () => resolve(undefined),
        (e: Error) => {
          const message = e.message ?? String(e);
          if (CREDENTIALS_REFUSED.test(message) || DATABASE_REFUSED.test(message)) return resolve(message);
          if (signal?.aborted || redis.status === 'end') return resolve(undefined);
          lastError = message;
          if (!down) onError(message);
          down = true;
          setTimeout(ask, 1000).unref();
        },
      );
    ask();
  });
  starting = false;
  clearInterval(reminder);
  if (notRedis !== undefined) {
    redis.disconnect();
    // (ioredis's parser asks for a bug report: not this one.)
    const said = notRedis.replace(/\.? *Please report this\.?/i, '').slice(0, 80);
    throw new CCheckersError('E_USAGE', `${url.shown} does not answer as a Redis server (${said}): name a Redis in --redis (redis://host:port, or rediss:// for one that speaks TLS)`);
  }
  if (refused !== undefined && DATABASE_REFUSED.test(refused)) {
    redis.disconnect();
    throw new CCheckersError(
      'E_USAGE',
      `Redis at ${url.shown} has no database ${db} (${refused.slice(0, 80)}): name one of its databases in --redis, as in redis://host:port/0 (0 to 15 unless its "databases" setting says otherwise)`,
    );
  }
  if (refused === undefined && new URL(url.url).password !== '' && !signal?.aborted && (await needsNoPassword(redis))) {
    redis.disconnect();
    throw new CCheckersError(
      'E_USAGE',
      `Redis at ${url.shown} asks for no password, yet --redis gives one: anyone who reaches that port may use the cluster's queue. Set the password on that Redis (requirepass), or leave it out of --redis if an open Redis is meant`,
    );
  }
  if (refused !== undefined) {
    redis.disconnect();
    const advice = /^NOAUTH/i.test(refused)
      ? 'it wants a password: give it in --redis, as in redis://:PASSWORD@host:port'
      : 'check the user and password in --redis (redis://[USER]:PASSWORD@host:port)';
    throw new CCheckersError('E_USAGE', `Redis at ${url.shown} refused the connection's credentials (${refused.split(/[.,]/)[0]!.slice(0, 80)}): ${advice}`);
  }
  return { redis, commands: countCommands(redis) };
}

/** What Redis answers to AUTH when it asks for no password (Redis 6 and later, then earlier ones):
 *  ioredis only warns of it on the console, and goes on. */
const NO_PASSWORD_SET = /without any password configured|no password is set/i;

/** The connection's Redis asks for no password (its own AUTH, sent again: the answer ioredis got
 *  to it on connecting is only a console warning). */
async function needsNoPassword(redis: Redis): Promise<boolean> {
  const { username, password } = redis.options;
  try {
    await (username ? redis.call('AUTH', username, password ?? '') : redis.call('AUTH', password ?? ''));
    return false;
  } catch (e) {
    return NO_PASSWORD_SET.test((e as Error).message ?? String(e));
  }
}

/** Counts the commands `redis` sends from now on (a pipeline counts each of its commands). */
export function countCommands(redis: Redis): () => number {
  let sent = 0;
  const send = redis.sendCommand.bind(redis);
  redis.sendCommand = ((...args: Parameters<Redis['sendCommand']>) => {
    sent++;
    return send(...args);
  }) as Redis['sendCommand'];
  return () => sent;
}
