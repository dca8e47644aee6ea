/**
 * The claims of a shared step's slices (slice-claims.ts): every slice goes to one part, the first
 * to claim it; a part run again visits its earlier attempt's claims; a claim file that does not
 * read as one is another part's.
 */
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { seededRandom } from '@ccheckers/core';
import { afterAll, describe, expect, it } from 'vitest';
import { removeProofFiles } from '../src/store/proof-exchange.js';
import { type PartClaims, SliceClaims, StepClaims, claimFileName, claimOwnerFileName, parseClaimFileName } from '../src/store/slice-claims.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
const newDir = () => {
  const d = mkdtempSync(join(tmpdir(), 'ccheckers-claims-'));
  dirs.push(d);
  return d;
};
const step = { band: 3, generation: 7 };

/** Claims every slice with `parts` claimers taking turns at random (each making its next claim
 *  meanwhile); the slices each got. */
async function claimAll(dir: string, parts: number, slices: number, seed: number, claims: PartClaims[] = Array.from({ length: parts }, (_, part) => new SliceClaims(dir, step, part, `0000000${part}`, slices))): Promise<number[][]> {
  const got: number[][] = claims.map(() => []);
  const random = seededRandom(seed);
  const going = new Set(claims.keys());
  while (going.size > 0) {
    const part = [...going][Math.floor(random() * going.size)]!;
    const slice = await claims[part]!.next();
    if (slice === undefined) going.delete(part);
    else got[part]!.push(slice);
  }
  return got;
}

/** That `got` (each part's slices, from claimAll) shares out every slice once, each part's in
 *  order, and that each part's claims say what it won and whose the other slices are. */
function expectSharedOut(claims: PartClaims[], got: number[][], slices: number): void {
  for (const list of got) expect(list).toEqual([...list].sort((a, b) => a - b));
  expect(got.flat().sort((a, b) => a - b)).toEqual(Array.from({ length: slices }, (_, i) => i));
  const winner = (slice: number) => got.findIndex((list) => list.includes(slice));
  claims.forEach((c, part) => {
    expect(c.won).toBe(got[part]!.length);
    // Every other slice taken, in order, and by whom (a part waits for their proofs).
    const others = Array.from({ length: slices }, (_, slice) => slice).filter((slice) => !got[part]!.includes(slice));
    expect(c.othersSlices).toEqual(others.map((slice) => ({ slice, part: winner(slice), attempt: `0000000${winner(slice)}` })));
  });
}

describe('slice claims', () => {
  it('name a step and slice, or a part\'s own file, and parse back', () => {
    const id = { band: 12, generation: 3, slice: 4095 };
    expect(claimFileName(id)).toBe('claim-b00012.g3.s4095');
    expect(parseClaimFileName(claimFileName(id))).toEqual(id);
    expect(claimOwnerFileName({ band: 12, generation: 3 }, 7, '0123abcd')).toBe('claim-b00012.g3.w7.0123abcd');
    expect(parseClaimFileName('claim-b00012.g3.w7.0123abcd')).toEqual({ band: 12, generation: 3 });
    for (const name of ['claim-b12.g3.s1', 'claim-b00012.g3.s1.tmp', 'claim-b00012.g3.c1', 'claim-b00012.g3.w7.0123abcg', 'claim-b00012.g3.w12345.0123abcd']) expect(parseClaimFileName(name), name).toBeUndefined();
  });

  it.each([
    [1, 1],
    [2, 1],
    [2, 97],
    [3, 200],
    [8, 5],
  ])('give each of %i parts the slices it claims first, in order, every one of %i slices once', async (parts, slices) => {
    const dir = newDir();
    const claims = Array.from({ length: parts }, (_, part) => new SliceClaims(dir, step, part, `0000000${part}`, slices));
    const got = await claimAll(dir, parts, slices, parts * 1000 + slices, claims);
    expectSharedOut(claims, got, slices);
    // A claim a slice, each a link to its part's own file (made by the parts that claimed any).
    const names = readdirSync(dir);
    expect(names.filter((n) => parseClaimFileName(n)?.slice !== undefined)).toHaveLength(slices);
    for (let slice = 0; slice < slices; slice++) {
      const part = got.findIndex((list) => list.includes(slice));
      expect(readFileSync(join(dir, claimFileName({ ...step, slice })), 'utf8')).toBe(`${part} 0000000${part}\n`);
    }
  });

  it.each([
    [1, 1],
    [2, 97],
    [3, 200],
    [8, 5],
  ])('in memory (StepClaims, parts in one process): the same for %i parts and %i slices, and no file', async (parts, slices) => {
    const dir = newDir();
    const stepClaims = new StepClaims();
    const claims = Array.from({ length: parts }, (_, part) => stepClaims.part(part, `0000000${part}`, slices));
    const got = await claimAll(dir, parts, slices, parts * 1000 + slices, claims);
    expectSharedOut(claims, got, slices);
    expect(readdirSync(dir)).toEqual([]);
    expect(() => stepClaims.part(0, '0000000a', slices + 1)).toThrow(RangeError);
  });

  /** The slices `claims` gives, to the last. */
  async function all(claims: SliceClaims): Promise<number[]> {
    const seen: number[] = [];
    for (let s = await claims.next(); s !== undefined; s = await claims.next()) seen.push(s);
    return seen;
  }

  it('let a part that runs alone take every slice, and one that starts after it none', async () => {
    const dir = newDir();
    const first = new SliceClaims(dir, step, 1, '0000000a', 10);
    expect(await all(first)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    const late = new SliceClaims(dir, step, 0, '0000000b', 10);
    expect(await late.next()).toBeUndefined();
    expect([first.won, late.won]).toEqual([10, 0]);
  });

  /** Claim files as parts' attempts left them: [slice, part, attempt]. */
  function claimsLeft(dir: string, claims: Array<[number, number, string]>): void {
    for (const [slice, part, attempt] of claims) writeFileSync(join(dir, claimFileName({ ...step, slice })), `${part} ${attempt}\n`);
  }

  it('give a part run again its earlier attempts\' claims of a slice each, not another part\'s', async () => {
    const dir = newDir();
    // Part 0's attempts aaaaaaaa and dddddddd claimed 0 and 2, then 5; part 1 claimed 1 and 3.
    claimsLeft(dir, [[0, 0, 'aaaaaaaa'], [1, 1, 'bbbbbbbb'], [2, 0, 'aaaaaaaa'], [3, 1, 'bbbbbbbb'], [5, 0, 'dddddddd']]);
    const again = new SliceClaims(dir, step, 0, 'cccccccc', 12);
    expect(await all(again)).toEqual([0, 2, 4, 5, 6, 7, 8, 9, 10, 11]);
    expect([again.won, again.inherited]).toEqual([10, 3]);
    expect(again.othersSlices).toEqual([{ slice: 1, part: 1, attempt: 'bbbbbbbb' }, { slice: 3, part: 1, attempt: 'bbbbbbbb' }]);
    // Part 1 run again now: its own two, nothing else is left.
    const other = new SliceClaims(dir, step, 1, 'eeeeeeee', 12);
    expect(await all(other)).toEqual([1, 3]);
  });

  it('take a claim file that does not read as one for another part\'s: forged text, a folder, a link', async () => {
    const dir = newDir();
    const path = (slice: number) => join(dir, claimFileName({ ...step, slice }));
    writeFileSync(path(0), '0 cccccccc'); // no newline
    writeFileSync(path(1), '0 cccccccc\nmore'); // more than a claim
    mkdirSync(path(2));
    symlinkSync(join(dir, 'elsewhere'), path(3));
    writeFileSync(join(dir, 'target'), '0 cccccccc\n');
    symlinkSync(join(dir, 'target'), path(4)); // a link to a claim of part 0: not followed
    writeFileSync(path(5), '00000 cccccccc\n'); // a part past the most workers
    writeFileSync(path(6), '0 cccccccc\n'); // part 0's earlier attempt: this one is part 0's
    writeFileSync(join(dir, claimOwnerFileName(step, 0, 'cccccccc')), '0 cccccccc\n'); // its own file: not a claim
    const claims = new SliceClaims(dir, step, 0, 'dddddddd', 8);
    expect(await all(claims)).toEqual([6, 7]);
    // None of those names another part: the sweep waits for no proofs of theirs.
    expect(claims.othersSlices).toEqual([]);
  });

  it('go with the step\'s proof files when it runs again from none, and only that step\'s', async () => {
    const dir = newDir();
    await claimAll(dir, 2, 4, 1);
    const other = new SliceClaims(dir, { band: 3, generation: 8 }, 0, 'eeeeeeee', 1);
    await all(other);
    removeProofFiles(dir, step.band, step.generation);
    expect(readdirSync(dir).sort()).toEqual([claimFileName({ band: 3, generation: 8, slice: 0 }), claimOwnerFileName({ band: 3, generation: 8 }, 0, 'eeeeeeee')]);
  });
});
