/**
 * What a solve, a query or the explorer does with what a user has on disk and at the terminal:
 * nothing but a regular file is ever replaced, nothing appears-then-vanishes, a closed pipe kills
 * nothing, and every refusal names the path and the problem (exit 2) with the file untouched.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readDatabase } from '@ccheckers/solver';
import { BIN, run, runHooked } from './support/run-cli.js';

const dir = mkdtempSync(join(tmpdir(), 'ccheckers-safety-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const isRoot = process.getuid?.() === 0;
const START_7x7_1 = `x${'.'.repeat(47)}o x`;

function mkfifo(path: string): void {
  const r = spawnSync('mkfifo', [path]);
  expect(r.status, String(r.stderr)).toBe(0);
}

/** No temporary, checkpoint or lock file of a solve left beside `path`. */
function noLeftovers(path: string): void {
  const base = path.split('/').pop()!;
  const folder = path.slice(0, path.length - base.length);
  expect(readdirSync(folder).filter((f) => f.startsWith(`${base}.`))).toEqual([]);
}

describe('--out names only a regular file or a new one', () => {
  it('refuses a named pipe and a symlink to a character device, even with --force, and leaves them as they are', () => {
    const fifo = join(dir, 'pipe');
    mkfifo(fifo);
    const r = run(['solve', '--board', '7', '--pieces', '1', '--out', fifo, '--force']);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(`${fifo} is a named pipe, not a regular file`);
    expect(lstatSync(fifo).isFIFO()).toBe(true);
    noLeftovers(fifo);

    // A character device of our own under the temporary folder (never a real system device): the
    // null device's numbers, made with mknod, which needs root; else a symlink to a FIFO.
    const device = join(dir, 'null-device');
    const made = isRoot && spawnSync('mknod', [device, 'c', '1', '3']).status === 0;
    const link = join(dir, 'link-to-device');
    symlinkSync(made ? device : fifo, link);
    const s = run(['solve', '--board', '7', '--pieces', '1', '--out', link, '--force']);
    expect(s.status).toBe(2);
    expect(s.stderr).toContain(`${link} is a symbolic link, not a regular file`);
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    if (made) expect(lstatSync(device).isCharacterDevice()).toBe(true);
  });

  it('refuses a named pipe or a folder at FILE.ckpt, even with --force or --resume, and leaves it', () => {
    const out = join(dir, 'with-odd-checkpoint.ccdb');
    mkfifo(`${out}.ckpt`);
    for (const extra of [['--force'], ['--resume'], []]) {
      const r = run(['solve', '--board', '7', '--pieces', '1', '--out', out, ...extra]);
      expect(r.status).toBe(2);
      expect(r.stderr).toContain(`${out}.ckpt is a named pipe, not a checkpoint`);
      expect(lstatSync(`${out}.ckpt`).isFIFO()).toBe(true);
      expect(existsSync(out)).toBe(false);
    }
    const other = join(dir, 'with-folder-checkpoint.ccdb');
    mkdirSync(`${other}.ckpt`);
    const r = run(['solve', '--board', '7', '--pieces', '1', '--out', other, '--force']);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(`${other}.ckpt is a directory, not a checkpoint`);
    expect(lstatSync(`${other}.ckpt`).isDirectory()).toBe(true);
  });

  it('refuses a directory before solving, leaving no DIR.ckpt or DIR.tmp-PID', () => {
    const folder = join(dir, 'a-folder');
    mkdirSync(folder);
    const r = run(['solve', '--board', '7', '--pieces', '1', '--out', folder, '--force']);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(`${folder} is a directory, not a regular file`);
    expect(r.stderr).not.toMatch(/EISDIR/);
    noLeftovers(folder);
  });

  it('names the problem for a path under a regular file, under /proc, too long, or empty', () => {
    const file = join(dir, 'plain-file');
    writeFileSync(file, 'x');
    const under = run(['solve', '--board', '7', '--pieces', '1', '--out', join(file, 'db.ccdb')]);
    expect(under.status).toBe(2);
    expect(under.stderr).toContain(`${file} is not a folder`);
    const proc = run(['solve', '--board', '7', '--pieces', '1', '--out', '/proc/ccheckers-test.ccdb']);
    expect(proc.status).toBe(2);
    expect(proc.stderr).toMatch(/\/proc\/ccheckers-test\.ccdb: (the folder \/proc does not exist or takes no new files|cannot create files in \/proc)/);
    const long = run(['solve', '--board', '7', '--pieces', '1', '--out', join(dir, `${'n'.repeat(250)}.ccdb`)]);
    expect(long.status).toBe(2);
    expect(long.stderr).toMatch(/the file name is too long \(255 bytes; the solve also writes it with \.ckpt\.tmp-PID appended/);
    const empty = run(['solve', '--board', '7', '--pieces', '1', '--out', '']);
    expect(empty.status).toBe(2);
    expect(empty.stderr).toMatch(/--out needs a value, not an empty string/);
    // Every option and argument: an empty path would resolve to the current folder.
    const made = join(dir, 'empty-paths.ccdb');
    expect(run(['solve', '--board', '7', '--pieces', '1', '--out', made, '--quiet']).status).toBe(0);
    for (const [args, message] of [
      [['convert', made, ''], '<to> is empty'],
      [['convert', '', made], '<from> is empty'],
      [['query', '--db', '', `x${'.'.repeat(47)}o x`], '--db needs a value, not an empty string'],
      [['check', '--db', ''], '--db needs a value, not an empty string'],
      [['report', '--from', made, '', '--html', join(dir, 'empty.html')], '--from needs a value, not an empty string'],
      [['solve', '--board', '7', '--pieces', '1', '--store', ''], '--store needs a value, not an empty string'],
    ] as const) {
      const r = spawnSync(process.execPath, [BIN, ...args], { cwd: dir, encoding: 'utf8', env: { ...process.env, NO_COLOR: '1' }, timeout: 60_000 });
      expect(r.status, args.join(' ')).toBe(2);
      expect(r.stderr, args.join(' ')).toContain(message);
    }
    expect(readdirSync(dir).filter((f) => f === 'manifest.json')).toEqual([]); // no store made in the current folder
  });
});

describe('the output during and after the solve', () => {
  it('a file that appears at --out during the solve is kept; the database goes to its temporary name, and says where', () => {
    const out = join(dir, 'appears.ccdb');
    const r = runHooked({ createAtOutAfterPass: 1 }, ['solve', '--board', '7', '--pieces', '2', '--out', out, '--threads', '1', '--quiet', '--checkpoint-minutes', '0']);
    expect(r.status).toBe(2);
    expect(readFileSync(out, 'utf8')).toBe('a file of the user\n');
    const kept = /the database is kept in (\S+)$/m.exec(r.stderr)?.[1];
    expect(r.stderr).toContain(`${out} appeared during the solve (use --force to overwrite it)`);
    expect(kept).toBeDefined();
    expect(readDatabase(kept!).header).toMatchObject({ stage: 'complete', positions: 2_542_512 });
  });

  it('a second solve to the same --out is refused while the first holds it', () => {
    const out = join(dir, 'locked.ccdb');
    writeFileSync(`${out}.lock`, `${process.pid}\n`); // this test process stands for a running solve
    const r = run(['solve', '--board', '7', '--pieces', '1', '--out', out]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(`another solve (process ${process.pid}) is writing ${out}`);
    expect(existsSync(out)).toBe(false);
    // A lock left by a process that is gone (a solve killed with -9) is taken over.
    writeFileSync(`${out}.lock`, '2147483646\n');
    const again = run(['solve', '--board', '7', '--pieces', '1', '--out', out, '--quiet']);
    expect(again.status, again.stderr).toBe(0);
    noLeftovers(out);
  });

  it('a lock of another machine holds until --break-lock takes it', () => {
    const out = join(dir, 'other-host.ccdb');
    const lock = `${process.pid}\nother-host:0a1b2c3d:pid4026531836\n`; // a solve on another machine
    writeFileSync(`${out}.lock`, lock);
    const r = run(['solve', '--board', '7', '--pieces', '1', '--out', out]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(`a solve on host other-host (process ${process.pid}) is writing ${out}; wait for it, or if that solve is really gone, --break-lock takes the lock`);
    expect(readFileSync(`${out}.lock`, 'utf8')).toBe(lock);
    expect(existsSync(out)).toBe(false);
    const again = run(['solve', '--board', '7', '--pieces', '1', '--out', out, '--break-lock', '--quiet']);
    expect(again.status, again.stderr).toBe(0);
    expect(readDatabase(out).header).toMatchObject({ stage: 'complete' });
    noLeftovers(out);
    const alone = run(['solve', '--board', '7', '--pieces', '1', '--break-lock']);
    expect(alone.status).toBe(2);
    expect(alone.stderr).toContain('--break-lock needs --out FILE or --store DIR');
  });

  it.skipIf(process.platform === 'win32')('a lock that is a FIFO, a directory or a symbolic link is refused by name (exit 2) and left, never read', () => {
    // Opened for reading, a FIFO waits for a writer forever: the lock is lstat'ed first. Each run
    // is stopped after 20 s, far more than a refusal takes.
    const bounded = (args: string[]) => {
      const r = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', env: { ...process.env, NO_COLOR: '1' }, timeout: 20_000 });
      expect(r.signal, `${args.join(' ')} hung`).toBe(null);
      return r;
    };
    const target = join(dir, 'lock-target-pipe');
    mkfifo(target);
    for (const [kind, said] of [['fifo', 'a named pipe'], ['folder', 'a directory'], ['link', 'a symbolic link']] as const) {
      const out = join(dir, `lock-${kind}.ccdb`);
      const lock = `${out}.lock`;
      if (kind === 'fifo') mkfifo(lock);
      else if (kind === 'folder') mkdirSync(lock);
      else symlinkSync(target, lock); // to a FIFO: following it would hang as well
      for (const more of [[], ['--resume'], ['--force']]) {
        const r = bounded(['solve', '--board', '7', '--pieces', '1', '--out', out, '--quiet', ...more]);
        expect(r.status, `${kind} ${more.join(' ')}`).toBe(2);
        expect(r.stderr).toContain(`${lock} is ${said}, not a regular file, so not a lock a solve made: remove it`);
      }
      const left = lstatSync(lock);
      expect(kind === 'fifo' ? left.isFIFO() : kind === 'folder' ? left.isDirectory() : left.isSymbolicLink()).toBe(true);
      expect(existsSync(out)).toBe(false);
      expect(readdirSync(dir).filter((f) => f.startsWith(`lock-${kind}.ccdb.`))).toEqual(['lock-' + kind + '.ccdb.lock']);
    }
  });

  it('a checkpoint is never discarded without --resume or --force, nor a user file called X.ckpt', () => {
    const out = join(dir, 'ckpt.ccdb');
    writeFileSync(`${out}.ckpt`, 'notes of the user\n');
    const r = run(['solve', '--board', '7', '--pieces', '1', '--out', out]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(`${out}.ckpt holds an unfinished solve: use --resume to continue it, or --force to start over`);
    expect(readFileSync(`${out}.ckpt`, 'utf8')).toBe('notes of the user\n');
  });

  it('a closed stderr and stdout (solve ... 2>&1 | head -1) neither kill the solve nor lose the database', () => {
    const out = join(dir, 'piped.ccdb');
    const r = spawnSync('bash', ['-c', `"${process.execPath}" "${BIN}" solve --board 7 --pieces 2 --threads 1 --out "${out}" 2>&1 | head -1; echo "exit \${PIPESTATUS[0]}"`], {
      encoding: 'utf8',
      env: { ...process.env, CI: 'true' },
    });
    expect(r.stdout).toMatch(/^solving 7x7\/2 .*\nexit 0\n$/);
    expect(readDatabase(out).header.positions).toBe(2_542_512);
  });

  it('--threads beyond the hardware threads is capped, and says so', () => {
    const r = run(['solve', '--board', '7', '--pieces', '1', '--threads', '1000', '--json']);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toContain(`using ${availableParallelism()} thread(s), not 1000`);
    expect(JSON.parse(r.stdout).threads).toBeLessThanOrEqual(availableParallelism());
  });
});

describe('databases and the explorer', () => {
  const db = join(dir, '7x7-1.ccdb');
  beforeAll(() => {
    expect(run(['solve', '--board', '7', '--pieces', '1', '--out', db, '--quiet']).status).toBe(0);
  });

  it('--db a directory or a named pipe: a message naming it, no hang', () => {
    const r = run(['query', '--db', dir, START_7x7_1]);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(`${dir}: is a directory, not a database file`);
    const fifo = join(dir, 'db-pipe');
    mkfifo(fifo);
    const f = run(['query', '--db', fifo, START_7x7_1]);
    expect(f.status).toBe(2);
    expect(f.stderr).toContain(`${fifo}: is not a regular file`);
  });

  it('serve: a malformed percent-escape is a 400, a bad --host a message', async () => {
    const child = (await import('node:child_process')).spawn(process.execPath, [BIN, 'serve', '--db', db, '--port', '0']);
    try {
      const port = await new Promise<number>((resolve, reject) => {
        let err = '';
        child.stderr.on('data', (d: Buffer) => {
          err += d;
          const m = /http:\/\/127\.0\.0\.1:(\d+)\//.exec(err);
          if (m) resolve(Number(m[1]));
        });
        child.once('exit', () => reject(new Error(err)));
      });
      const status = await new Promise<number>((resolve, reject) => {
        request({ host: '127.0.0.1', port, path: '/%E0%A4%A' }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        })
          .on('error', reject)
          .end();
      });
      expect(status).toBe(400);
    } finally {
      child.kill('SIGTERM');
    }
    const bad = run(['serve', '--db', db, '--host', 'no-such-host.invalid', '--port', '0']);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/cannot listen on --host no-such-host\.invalid port 0 \((ENOTFOUND|EAI_AGAIN): no such address\)/);
  });

  it('play exits 130 on Ctrl-C at a terminal', () => {
    // A real pseudo-terminal (Python's pty), Ctrl-C typed at the prompt.
    const script = `
import os, pty, sys, time, select
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
out = b''
deadline = time.time() + 60
while b'your move>' not in out and time.time() < deadline:
    r, _, _ = select.select([fd], [], [], 1)
    if r:
        try: out += os.read(fd, 4096)
        except OSError: break
os.write(fd, b'\\x03')
while time.time() < deadline:
    r, _, _ = select.select([fd], [], [], 1)
    if r:
        try:
            if not os.read(fd, 4096): break
        except OSError: break
_, status = os.waitpid(pid, 0)
print(os.waitstatus_to_exitcode(status))
`;
    const r = spawnSync('python3', ['-c', script, process.execPath, BIN, 'play', '--db', db], { encoding: 'utf8', timeout: 90_000 });
    expect(r.stdout.trim(), r.stderr).toBe('130');
  });
});

describe('the shipped code', () => {
  it('reads no test-only environment switch: faults are injected by the harness (TestHooks)', () => {
    const root = join(BIN, '..', '..', '..');
    const out = spawnSync('git', ['grep', '-n', '-E', 'CCHECKERS_TEST|process\\.env\\.[A-Z_]*TEST', '--', 'packages/*/src', 'packages/*/lib'], { cwd: root, encoding: 'utf8' });
    expect(out.status).toBe(1); // git grep: nothing found
    expect(out.stdout).toBe('');
  });
});
