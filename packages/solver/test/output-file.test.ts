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
import { thisMachine } from '../src/machine.js';

const dir = mkdtempSync(join(tmpdir(), 'ccheckers-lock-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const DEAD = 2_147_483_000; // no such process
/** What a lock of this process holds: its pid, then its machine. */
const MINE = () => `${process.pid}\n${thisMachine()}\n`;

describe('lockOutput', () => {
  it('takes over a lock whose process is gone, or that names none, and holds it with its pid and machine', () => {
    for (const [name, content] of [['dead.ccdb', `${DEAD}\n`], ['empty.ccdb', '']] as const) {
      const out = join(dir, name);
      writeFileSync(`${out}.lock`, content);
      const unlock = lockOutput(out);
      expect(readFileSync(`${out}.lock`, 'utf8')).toBe(MINE());
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
      expect(readFileSync(`${out}.lock`, 'utf8')).toBe(MINE());
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

describe('lockOutput across machines (a store shared over NFS)', () => {
  const OTHER = 'other-host:0a1b2c3d:pid4026531836';

  it('holds a lock of another machine, even with a pid that is dead or this one here, and names the host', () => {
    for (const [name, pid] of [['other-live.ccdb', process.pid], ['other-dead.ccdb', DEAD]] as const) {
      const out = join(dir, name);
      writeFileSync(`${out}.lock`, `${pid}\n${OTHER}\n`);
      expect(() => lockOutput(out)).toThrow(OutputPathError);
      expect(() => lockOutput(out)).toThrow(
        `a solve on host other-host (process ${pid}) is writing ${out}; wait for it, or if that solve is really gone, --break-lock takes the lock`,
      );
      expect(readFileSync(`${out}.lock`, 'utf8')).toBe(`${pid}\n${OTHER}\n`);
    }
  });

  it('holds a lock of this host name from another boot or pid namespace', () => {
    const out = join(dir, 'other-boot.ccdb');
    const [host] = thisMachine().split(':');
    writeFileSync(`${out}.lock`, `${DEAD}\n${host}:00000000:pid1\n`);
    expect(() => lockOutput(out)).toThrow(`a solve on host ${host} (another boot or pid namespace of this host; process ${DEAD}) is writing ${out}`);
  });

  it('takes the lock of another machine with breakLock, and lets go only of its own lock', () => {
    const out = join(dir, 'broken.ccdb');
    writeFileSync(`${out}.lock`, `${process.pid}\n${OTHER}\n`);
    const unlock = lockOutput(out, { breakLock: true });
    expect(readFileSync(`${out}.lock`, 'utf8')).toBe(MINE());
    expect(() => lockOutput(out, { breakLock: true })).toThrow(`this process is already writing ${out}`);
    // The other machine breaks it back (same pid there): this solve's release leaves that lock.
    writeFileSync(`${out}.lock`, `${process.pid}\n${OTHER}\n`);
    unlock();
    expect(readFileSync(`${out}.lock`, 'utf8')).toBe(`${process.pid}\n${OTHER}\n`);
  });

  it('takes over a lock of this machine whose process is gone, and refuses a live one even with breakLock', () => {
    const out = join(dir, 'same-machine.ccdb');
    writeFileSync(`${out}.lock`, `${DEAD}\n${thisMachine()}\n`);
    const unlock = lockOutput(out);
    expect(readFileSync(`${out}.lock`, 'utf8')).toBe(MINE());
    unlock();
    expect(existsSync(`${out}.lock`)).toBe(false);
    writeFileSync(`${out}.lock`, `${process.ppid}\n${thisMachine()}\n`); // the parent: alive
    expect(() => lockOutput(out, { breakLock: true })).toThrow(`another solve (process ${process.ppid}) is writing ${out}`);
  });

  it('treats an old lock (a pid alone) as one of this machine, as before', () => {
    const out = join(dir, 'old.ccdb');
    writeFileSync(`${out}.lock`, `${process.ppid}\n`);
    expect(() => lockOutput(out)).toThrow(`another solve (process ${process.ppid}) is writing ${out}`);
    writeFileSync(`${out}.lock`, `${DEAD}\n`);
    const unlock = lockOutput(out);
    expect(readFileSync(`${out}.lock`, 'utf8')).toBe(MINE());
    unlock();
    expect(existsSync(`${out}.lock`)).toBe(false);
  });
});
