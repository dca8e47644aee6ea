/**
 * One coordinator per store, across machines: the lease in Redis that a cluster solve's
 * coordinator (coordinator.ts) takes, renews while it runs and checks before every manifest write.
 */
import { randomBytes } from 'node:crypto';
import { CCheckersError } from '@ccheckers/core';
import type { Redis } from 'ioredis';
import { thisMachine } from '../machine.js';

/** Whether a lease token (machine:pid:random) names a process of this machine that no longer runs. */
export function deadHereAndNow(token: string): boolean {
  const at = token.lastIndexOf(':', token.lastIndexOf(':') - 1);
  const holderMachine = token.slice(0, at);
  const pid = token.slice(at + 1, token.lastIndexOf(':'));
  if (holderMachine !== thisMachine() || holderMachine.includes('?') || !/^\d+$/.test(pid)) return false;
  try {
    process.kill(Number(pid), 0);
    return false;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

/** Deletes KEYS[1] if it still holds ARGV[1] (a lease is let go only by, or for, its holder). */
const DELETE_IF_HOLDER = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0`;

/** How long a coordinator's lease on a store lasts without renewal (it renews every third of it). */
export const LEASE_MS = 10_000;

/**
 * One coordinator per store, across machines: a Redis key with this coordinator's token and an
 * expiry, renewed while it runs. A second coordinator waits one expiry for it (a coordinator that
 * died leaves its lease behind; one of this machine that is gone is seen at once) and is refused
 * if it is still renewed. The lease is checked
 * again before every manifest write; lost (another coordinator took over), the solve stops.
 */
export class CoordinatorLease {
  private readonly key: string;
  private timer: NodeJS.Timeout | undefined;
  private lost = false;

  /** `token` names the holder: this process of this machine unless given (tests play others, and
   *  shorten the lease so as not to wait for one to run out). */
  constructor(
    private readonly redis: Redis,
    storeId: string,
    private readonly token = `${thisMachine()}:${process.pid}:${randomBytes(4).toString('hex')}`,
    private readonly leaseMs = LEASE_MS,
  ) {
    this.key = `ccheckers:coordinator:${storeId}`;
  }

  async acquire(notice: (text: string) => void): Promise<void> {
    const until = performance.now() + this.leaseMs + 2000;
    let told = false;
    while ((await this.redis.set(this.key, this.token, 'PX', this.leaseMs, 'NX')) !== 'OK') {
      const holder = await this.redis.get(this.key);
      if (holder !== null && deadHereAndNow(holder)) {
        // Its coordinator was a process of this machine that is gone (kill -9): no need to wait.
        await this.redis.eval(DELETE_IF_HOLDER, 1, this.key, holder);
        continue;
      }
      if (holder !== null && (await this.redis.pttl(this.key)) === -1) {
        // No expiry: not a coordinator's lease (each is set with one, and renewed so), but a key
        // put there by hand or by another program, which would lock the store for good.
        notice(`${this.key} in Redis holds ${JSON.stringify(holder)} without an expiry, which no coordinator sets: taken over`);
        await this.redis.eval(DELETE_IF_HOLDER, 1, this.key, holder);
        continue;
      }
      if (performance.now() > until) {
        throw new CCheckersError('E_USAGE', `another coordinator (${holder ?? '?'}) is solving this store: its lease ${this.key} in Redis is still renewed`);
      }
      if (!told) notice(`the store has a coordinator (${holder ?? '?'}); waiting up to ${this.leaseMs / 1000} s for its lease to run out`);
      told = true;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    this.timer = setInterval(() => void this.renew(), this.leaseMs / 3);
  }

  /** Extends the lease if it is still this coordinator's (takes it again if it ran out while Redis
   *  was away); false when another coordinator holds it. */
  private async extend(): Promise<boolean> {
    const script = `local v = redis.call('get', KEYS[1])
if v == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end
if v == false then redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2]) return 1 end
return 0`;
    return (await this.redis.eval(script, 1, this.key, this.token, String(this.leaseMs))) !== 0;
  }

  private async renew(): Promise<void> {
    try {
      if (!(await this.extend())) this.lost = true;
    } catch {
      // An error reply: the next renewal, or check() before a commit, tries again
    }
  }

  /** Before a manifest write: still this coordinator's, confirmed by Redis now (an error is not a yes). */
  async check(): Promise<void> {
    if (!this.lost && !(await this.extend())) this.lost = true;
    if (this.lost) throw new CCheckersError('E_CLUSTER', `another coordinator took over this store (lease ${this.key} in Redis): this one stops without writing`);
  }

  async release(): Promise<void> {
    clearInterval(this.timer);
    if (this.lost || this.timer === undefined) return;
    await this.redis.eval(DELETE_IF_HOLDER, 1, this.key, this.token).catch(() => 0);
  }
}
