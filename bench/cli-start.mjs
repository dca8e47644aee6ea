#!/usr/bin/env node
// The CLI's start: mean CPU (user + system) and wall seconds of short commands, each run N times,
// for one or more checkouts' builds taking turns (an A/B in one sitting). Short commands are
// mostly Node's start and module loading; the test suite spawns the CLI about 470 times. The CPU
// of each child is read from /proc/self/stat once it has been waited for (its cutime and cstime;
// Linux only). A benchmark, not a test: run it on a quiet machine.
//   node bench/cli-start.mjs [runs] [checkout ...]        (default: 10 runs, this checkout)
//   node bench/cli-start.mjs 10 . /tmp/older-checkout
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('..', import.meta.url));
const runs = Number(process.argv[2] ?? 10);
const roots = (process.argv.length > 3 ? process.argv.slice(3) : [here]).map((r) => resolve(r));
const bins = roots.map((r) => join(r, 'packages', 'cli', 'dist', 'bin.js'));
for (const bin of bins) if (!existsSync(bin)) throw new Error(`${bin} is missing: build that checkout first`);
const TICKS = 100; // USER_HZ: /proc's clock ticks a second on Linux

/** CPU seconds of this process's waited-for children so far. */
function childCpu() {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // from field 3 (state) on
  return (Number(fields[13]) + Number(fields[14])) / TICKS; // cutime, cstime
}

const dir = mkdtempSync(join(tmpdir(), 'ccheckers-cli-start-'));
try {
  const db = join(dir, '7x7-2.ccdb');
  const made = spawnSync(process.execPath, [bins[0], 'solve', '--board', '7', '--pieces', '2', '--out', db, '--quiet']);
  if (made.status !== 0) throw new Error(`solve 7x7/2 failed: ${made.stderr}`);
  const start = `xx${'.'.repeat(45)}oo x`;
  const commands = [
    ['--version', ['--version']],
    ['info', ['info']],
    ['usage error', ['solve', '--board', '9']],
    ['check 7x7/2', ['check', '--db', db]],
    ['query 7x7/2', ['query', '--db', db, start]],
    ['solve 4x4/3', ['solve', '--board', '4', '--pieces', '3', '--quiet']],
  ];
  console.log(`${runs} runs of each command, the builds taking turns; mean CPU-s (user + system) / wall s`);
  console.log(['command'.padEnd(14), ...roots.map((r) => r.slice(-28).padStart(28))].join(' '));
  for (const [name, args] of commands) {
    const cpu = roots.map(() => 0);
    const wall = roots.map(() => 0);
    for (let i = 0; i < runs; i++) {
      bins.forEach((bin, b) => {
        const before = childCpu();
        const t = performance.now();
        spawnSync(process.execPath, [bin, ...args], { stdio: 'ignore' });
        wall[b] += (performance.now() - t) / 1000;
        cpu[b] += childCpu() - before;
      });
    }
    console.log([name.padEnd(14), ...roots.map((_, b) => `${(cpu[b] / runs).toFixed(3)} / ${(wall[b] / runs).toFixed(3)}`.padStart(28))].join(' '));
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
