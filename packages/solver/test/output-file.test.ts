/**
 * The output lock and the leftovers of killed solves (solver/src/output-file.ts): a lock without a
 * live owner is taken over, a live one (this process included) refused, and the temporary files
 * of solves that are gone are removed when the lock is taken, never those of a live process.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { OutputPathError, lockOutput } from '../src/index.js';

const dir = mkdtempSync(join(tmpdir(), 'ccheckers-lock-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const DEAD = 2_147_483_000; // no such process

describe('lockOutput', () => {
  it('takes over a lock whose process is gone, or that names none, and holds it with its pid', () => {
    for (const [name, content] of [['dead.ccdb', `${DEAD}\n`], ['empty.ccdb', '']] as const) {
      const out = join(dir, name);
      writeFileSync(`${out}.lock`, content);
      const unlock = lockOutput(out);
      expect(readFileSync(`${out}.lock`, 'utf8')).toBe(`${process.pid}\n`);
      unlock();
      expect(existsSync(`${out}.lock`)).toBe(false);
    }
  });

  it('refuses a lock held by a live process, this one included', () => {
    const out = join(dir, 'held.ccdb');
    const unlock = lockOutput(out);
    expect(() => lockOutput(out)).toThrow(OutputPathError);
    expect(() => lockOutput(out)).toThrow(`this process is already writing ${out}`);
    unlock();
    writeFileSync(`${out}.lock`, `${process.ppid}\n`); // the parent: alive
    expect(() => lockOutput(out)).toThrow(`another solve (process ${process.ppid}) is writing ${out}`);
    expect(readFileSync(`${out}.lock`, 'utf8')).toBe(`${process.ppid}\n`);
  });

  it('removes the temporary files of solves that are gone, and keeps those of live ones', () => {
    const out = join(dir, 'leftovers.ccdb');
    const dead = [`${out}.tmp-${DEAD}`, `${out}.ckpt.tmp-${DEAD + 1}`];
    const live = [`${out}.tmp-${process.ppid}`, `${out}.ckpt.tmp-${process.pid}`, `${out}.tmp-notes`];
    for (const f of [...dead, ...live]) writeFileSync(f, 'x');
    lockOutput(out)();
    for (const f of dead) expect(existsSync(f)).toBe(false);
    for (const f of live) expect(existsSync(f)).toBe(true);
  });
});
