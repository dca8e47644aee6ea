/**
 * A part of a shared step waits for another that has fallen far behind (others-progress.ts):
 * until that part's files hold the slice, and never two parts for each other.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { OthersProgress, WAIT_AFTER_UNITS } from '../src/store/others-progress.js';
import { ProofExchange } from '../src/store/proof-exchange.js';
import { StepClaims } from '../src/store/slice-claims.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
const table = (states: number) => new Uint8Array(new ArrayBuffer(Math.ceil(states / 16) * 4), 0, Math.ceil(states / 4));

describe('others progress', () => {
  it('a part about to wait publishes its own slices first: the part it waits for does not wait for it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ccheckers-others-'));
    dirs.push(dir);
    // 3 parts, slices of a unit: A visits slice 0 and B slice 1, too little to publish; C visits
    // 2 to 45 and publishes them. A then waits before slice 46 for B's slice 1, and B takes 47.
    const step = new StepClaims();
    const [a, b, c] = ['aaaaaaaa', 'bbbbbbbb', 'cccccccc'].map((attempt, part) => ({
      claims: step.part(part, attempt, 100),
      exchange: new ProofExchange(dir, { band: 0, generation: 1, part, attempt }, 3, table(4096), table(4096)),
    }));
    expect(await a!.claims.next()).toBe(0);
    a!.exchange.publishSoon(1, 1, 1);
    expect(await b!.claims.next()).toBe(1);
    b!.exchange.publishSoon(1, 1, 2);
    for (let slice = 2; slice < 46; slice++) {
      expect(await c!.claims.next()).toBe(slice);
      c!.exchange.publishSoon(1, 1, slice + 1);
    }
    c!.exchange.publish();
    expect([a!.exchange.files, b!.exchange.files]).toEqual([0, 0]);
    expect(await a!.claims.next()).toBe(46);
    expect(await b!.claims.next()).toBe(47);
    expect(46 - 1).toBeGreaterThan(WAIT_AFTER_UNITS + 1); // A is far past B's slice 1, B near A's 46
    const waitingA = new OthersProgress(a!.claims, a!.exchange, 1, 3).waitBefore(46, {});
    // B finds A's slice 0 in A's files (A published before it waited) and C's 2 to 45 in C's.
    expect(await new OthersProgress(b!.claims, b!.exchange, 1, 3).waitBefore(47, {})).toBe(0);
    expect(b!.exchange.publishedThrough(0)).toBe(46);
    // B visits 47 and publishes: A goes on, with B's file.
    b!.exchange.publish(48);
    expect(await waitingA).toBeGreaterThan(0);
    expect(a!.exchange.publishedThrough(1)).toBe(48);
    expect([...a!.exchange.took].sort()).toEqual(['bbbbbbbb', 'cccccccc']);
  });
});
