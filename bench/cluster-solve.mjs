#!/usr/bin/env node
// Cluster solves on this machine against the single-process band solve (same bands, all cores)
// and the in-memory solve of the same variant, in the same run: a private Redis (scripts/redis.sh,
// 127.0.0.1), W `ccheckers worker` processes of T threads, the coordinator (`ccheckers solve
// --store --redis --workers W`); per run the wall time (ratio to the single-process band solve),
// passes, pass-1 share, jobs, and per pass the bytes the workers read and wrote and the Redis
// commands the coordinator sent. The table CRC-32 must equal the in-memory one. A benchmark, not a
// test: run it on a quiet machine. With JOB_LOG=FILE, each worker's line for each job goes to FILE
// with the seconds since the cluster solve started, and pass 1's shared steps are summed up: the
// parts' worker-seconds, how far apart a step's parts ended, the slices each part visited, the
// seconds they waited for each other's proofs, and the finishes. WORKER_CPUS=0,1 pins worker i to the i-th CPU of the list.
//   node bench/cluster-solve.mjs [board] [pieces] [bands] [workers, comma-separated] [threads per worker] [--memory of each] [schedules, comma-separated]
//   node bench/cluster-solve.mjs 7 3 16 2 1 '' segments,shared
import { spawn, spawnSync } from 'node:child_process';
import { appendFileSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const [board = '7', pieces = '3', shards = '16', workerList = '2', threads = '1', memory = '', scheduleList = 'shared'] = process.argv.slice(2);
const budget = memory ? ['--memory', memory] : [];
const root = fileURLToPath(new URL('..', import.meta.url));
const bin = join(root, 'packages/cli/dist/bin.js');
const redisSh = join(root, 'scripts/redis.sh');
const dir = mkdtempSync(join(tmpdir(), 'ccheckers-bench-cluster-'));
const port = await new Promise((resolve) => {
  const s = createServer().listen(0, '127.0.0.1', () => {
    const p = s.address().port;
    s.close(() => resolve(p));
  });
});
const url = `redis://127.0.0.1:${port}`;
const mib = (b) => `${(b / 2 ** 20).toFixed(1)} MiB`;

/** `ccheckers solve ... --json` as a child process, not spawnSync: the workers' lines are timed
 *  as they come meanwhile. */
function solveJson(args) {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [bin, 'solve', '--board', board, '--pieces', pieces, '--json', '--quiet', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    p.stdout.on('data', (d) => (out += d));
    p.stderr.on('data', (d) => (err += d));
    p.on('close', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`solve ${args.join(' ')}: exit ${code}\n${err}`))));
  });
}

/** Pass 1's shared steps from the timed job lines: the parts' seconds, how far apart a step's
 *  parts ended (each line is timed as it came, when its job ended), the finishes' seconds. */
function sharedStepSummary(lines) {
  const parts = new Map();
  const slices = [];
  let finishes = 0;
  let waited = 0;
  for (const line of lines) {
    const m = /^([\d.]+) .* job \S+-p1-r\d+-g\d+-b(\d+)-(s\d+|f): .* in ([\d.]+) s$/.exec(line);
    if (!m) continue;
    if (m[3] === 'f') finishes += Number(m[4]);
    else {
      parts.set(m[2], [...(parts.get(m[2]) ?? []), { ended: Number(m[1]), seconds: Number(m[4]) }]);
      const part = Number(m[3].slice(1));
      slices[part] = (slices[part] ?? 0) + Number(/, (\d+) slice\(s\) of units visited/.exec(line)?.[1] ?? 0);
      waited += Number(/\(([\d.]+) s waiting for other parts' proofs\)/.exec(line)?.[1] ?? 0);
    }
  }
  let work = 0;
  let apart = 0;
  for (const ps of parts.values()) {
    work += ps.reduce((sum, p) => sum + p.seconds, 0);
    apart += Math.max(...ps.map((p) => p.ended)) - Math.min(...ps.map((p) => p.ended));
  }
  return `pass 1's shared steps: parts ${work.toFixed(1)} worker-s, a step's parts ending ${apart.toFixed(1)} s apart in all, slices visited by part ${slices.join(' / ')}, waiting for the others' proofs ${waited.toFixed(2)} worker-s, finishes ${finishes.toFixed(2)} s`;
}

if (spawnSync('bash', [redisSh, 'start', join(dir, 'redis'), String(port)], { stdio: 'inherit' }).status !== 0) process.exit(2);
try {
  const inMemory = await solveJson([]);
  const share = (r) => `${((100 * r.passLog[0].proven) / r.storedStates).toFixed(1)}%`;
  console.log(`${board}x${board}/${pieces}: in memory ${inMemory.seconds.toFixed(2)} s, ${inMemory.passes} passes, ${share(inMemory)} in pass 1, ${inMemory.backend}, ${inMemory.threads} thread(s), CRC-32 ${inMemory.tableCrc32.toString(16).padStart(8, '0')}`);
  const local = await solveJson(['--store', join(dir, 'local'), '--shards', shards, ...budget]);
  console.log(`single process: ${local.store.shards} bands, ${local.seconds.toFixed(2)} s, ${local.passes} passes, ${share(local)} in pass 1, ${local.threads} thread(s), CRC-32 ${local.tableCrc32.toString(16).padStart(8, '0')}; seconds per pass: ${local.passLog.map((p) => p.seconds.toFixed(1)).join(', ')}`);
  const memory = local;
  console.log('schedule  workers  bands  seconds  ratio  passes  pass 1   jobs  read/pass   written/pass  Redis cmds/pass  table CRC-32');
  for (const schedule of scheduleList.split(',')) for (const w of workerList.split(',').map(Number)) {
    const store = join(dir, `store-${schedule}-${w}`);
    const jobLog = process.env.JOB_LOG;
    // WORKER_CPUS=0,1: worker i runs on CPU i of the list only (taskset), to give the workers
    // machines of unequal speed (another process busy on one of the CPUs).
    const cpus = process.env.WORKER_CPUS?.split(',');
    const workers = Array.from({ length: w }, (_, i) => {
      const args = [bin, 'worker', '--redis', url, '--store', store, '--threads', threads, ...(jobLog ? [] : ['--quiet'])];
      const [command, ...rest] = cpus ? ['taskset', '-c', cpus[i % cpus.length], process.execPath, ...args] : [process.execPath, ...args];
      return spawn(command, rest, { stdio: ['ignore', 'ignore', jobLog ? 'pipe' : 'ignore'] });
    });
    const started = performance.now();
    const lines = [];
    if (jobLog) {
      appendFileSync(jobLog, `${schedule}, ${w} workers\n`);
      workers.forEach((p, i) => {
        let rest = '';
        p.stderr.on('data', (d) => {
          const got = (rest + d).split('\n');
          rest = got.pop();
          for (const line of got) {
            lines.push(`${((performance.now() - started) / 1000).toFixed(2)} worker ${i}: ${line}`);
            appendFileSync(jobLog, `${lines.at(-1)}\n`); // as they come: a run stopped keeps its lines
          }
        });
      });
    }
    const r = await solveJson(['--store', store, '--shards', shards, '--workers', String(w), '--schedule', schedule, '--redis', url, ...budget]);
    for (const p of workers) p.kill('SIGTERM');
    await Promise.all(workers.map((p) => new Promise((resolve) => p.on('close', resolve))));
    const mean = (f) => r.passLog.reduce((sum, p) => sum + (p[f] ?? 0), 0) / r.passLog.length;
    console.log(
      `${schedule.padEnd(9)} ${String(w).padStart(7)} ${String(r.store.shards).padStart(6)} ${r.seconds.toFixed(2).padStart(8)} ${(r.seconds / memory.seconds).toFixed(2).padStart(5)}x ${String(r.passes).padStart(7)} ${share(r).padStart(7)} ${String(r.cluster.jobs).padStart(6)}  ${mib(mean('bytesRead')).padStart(10)}  ${mib(mean('bytesWritten')).padStart(12)}  ${mean('redisCommands').toFixed(0).padStart(15)}  ${r.tableCrc32.toString(16).padStart(8, '0')}`,
    );
    console.log(`          seconds per pass: ${r.passLog.map((p) => p.seconds.toFixed(1)).join(', ')}`);
    if (jobLog) {
      console.log(`          ${schedule === 'shared' ? `${sharedStepSummary(lines)} ` : ''}(job lines: ${jobLog})`);
    }
    if (r.tableCrc32 !== inMemory.tableCrc32 || local.tableCrc32 !== inMemory.tableCrc32) {
      console.error('the tables differ');
      process.exitCode = 1;
    }
  }
} finally {
  spawnSync('bash', [redisSh, 'stop', join(dir, 'redis'), String(port)]);
  rmSync(dir, { recursive: true, force: true });
}
