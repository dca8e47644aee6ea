#!/usr/bin/env node
// Cluster solves on this machine against the in-memory solve of the same variant, in the same run:
// a private Redis (scripts/redis.sh, 127.0.0.1), W `ccheckers worker` processes, the coordinator
// (`ccheckers solve --store --redis`); per run the wall time (ratio), passes, jobs, and per pass the
// shard bytes the workers read and wrote and the Redis commands the coordinator sent. The table
// CRC-32 must equal the in-memory one. A benchmark, not a test: run it on a quiet machine.
//   node bench/cluster-solve.mjs [board] [pieces] [shards] [workers, comma-separated] [threads per worker]
//   node bench/cluster-solve.mjs 7 3 4 1,2,4 1
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const [board = '7', pieces = '3', shards = '4', workerList = '1,2,4', threads = '1'] = process.argv.slice(2);
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

function solveJson(args) {
  const r = spawnSync(process.execPath, [bin, 'solve', '--board', board, '--pieces', pieces, '--json', '--quiet', ...args], { encoding: 'utf8', maxBuffer: 1 << 26 });
  if (r.status !== 0) throw new Error(`solve ${args.join(' ')}: exit ${r.status}\n${r.stderr}`);
  return JSON.parse(r.stdout);
}

if (spawnSync('bash', [redisSh, 'start', join(dir, 'redis'), String(port)], { stdio: 'inherit' }).status !== 0) process.exit(2);
try {
  const memory = solveJson(['--threads', threads]);
  console.log(`${board}x${board}/${pieces}: in memory ${memory.seconds.toFixed(2)} s, ${memory.passes} passes, ${memory.backend}, ${threads} thread(s), CRC-32 ${memory.tableCrc32.toString(16).padStart(8, '0')}`);
  console.log('workers  shards  seconds  ratio  passes   jobs  read/pass   written/pass  Redis cmds/pass  table CRC-32');
  for (const w of workerList.split(',').map(Number)) {
    const store = join(dir, `store-${w}`);
    const workers = Array.from({ length: w }, () =>
      spawn(process.execPath, [bin, 'worker', '--redis', url, '--store', store, '--threads', threads, '--quiet'], { stdio: 'ignore' }),
    );
    const r = solveJson(['--store', store, '--shards', shards, '--redis', url]);
    for (const p of workers) p.kill('SIGTERM');
    await Promise.all(workers.map((p) => new Promise((resolve) => p.on('close', resolve))));
    const mean = (f) => r.passLog.reduce((sum, p) => sum + (p[f] ?? 0), 0) / r.passLog.length;
    console.log(
      `${String(w).padStart(7)} ${shards.padStart(7)} ${r.seconds.toFixed(2).padStart(8)} ${(r.seconds / memory.seconds).toFixed(2).padStart(5)}x ${String(r.passes).padStart(7)} ${String(r.cluster.jobs).padStart(6)}  ${mib(mean('bytesRead')).padStart(10)}  ${mib(mean('bytesWritten')).padStart(12)}  ${mean('redisCommands').toFixed(0).padStart(15)}  ${r.tableCrc32.toString(16).padStart(8, '0')}`,
    );
    if (r.tableCrc32 !== memory.tableCrc32) {
      console.error('the tables differ');
      process.exitCode = 1;
    }
  }
} finally {
  spawnSync('bash', [redisSh, 'stop', join(dir, 'redis'), String(port)]);
  rmSync(dir, { recursive: true, force: true });
}
