/**
 * The output lock and the leftovers of killed solves (solver/src/output-file.ts): a lock without a
 * live owner is taken over, a live one (this process included) refused, and the temporary files
 * of solves that are gone are removed when the lock is taken, never those of a live process.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
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

  it.runIf(process.platform === 'linux')('takes over a lock whose process has ended but is not yet reaped (a zombie)', async () => {
    // A forked child that exits at once, whose parent never waits for it (a shell may reap it).
    const script = 'import os, sys, time\npid = os.fork()\nif pid == 0: os._exit(0)\nprint(pid, flush=True)\ntime.sleep(5)';
    const shell = spawn('python3', ['-c', script], { stdio: ['ignore', 'pipe', 'ignore'] });
    try {
      const zombie = Number((await once(shell.stdout, 'data'))[0].toString().trim());
      const state = () => {
        const stat = readFileSync(`/proc/${zombie}/stat`, 'utf8');
        return stat[stat.lastIndexOf(')') + 2];
      };
      for (let i = 0; i < 200 && state() !== 'Z'; i++) await new Promise((r) => setTimeout(r, 10));
      expect(state()).toBe('Z');
      const out = join(dir, 'zombie.ccdb');
      writeFileSync(`${out}.lock`, `${zombie}\n`);
      const unlock = lockOutput(out);
      expect(readFileSync(`${out}.lock`, 'utf8')).toBe(`${process.pid}\n`);
      unlock();
    } finally {
      shell.kill('SIGKILL');
    }
  });

  it('says why it cannot take the lock where it cannot write its file', () => {
    const folder = join(dir, 'absent');
    const out = join(folder, 'x.ccdb');
    expect(() => lockOutput(out)).toThrow(OutputPathError);
    expect(() => lockOutput(out)).toThrow(`cannot take the lock ${out}.lock: the folder ${folder} does not exist or takes no new files`);
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
