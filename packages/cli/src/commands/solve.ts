/** `ccheckers solve`: strongly solve a variant, with progress on stderr and the counts on stdout. */
import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join, resolve } from 'node:path';
import { StateSpace } from '@ccheckers/core';
import {
  type ClusterSolveResult,
  ClusterSolveInterrupted,
  type ProgressEvent,
  type ShardedSolveResult,
  ShardStore,
  ShardedSolveInterrupted,
  type SolveResult,
  SolveInterrupted,
  distanceLayers,
  checkMemory,
  checkSolveOutput,
  checkTableLimits,
  describeStorePlan,
  MAX_WORKERS,
  SCHEDULE_KINDS,
  type ScheduleKind,
  exportStore,
  newStoreSchedule,
  requiredBytes,
  selectBackend,
  parseRedisUrl,
  solve,
  solveOnCluster,
  solveSharded,
} from '@ccheckers/solver';
import { backendOption, cappedThreads, memoryOption, rulesOption, UsageError, variantOption } from '../options.js';
import { duration, grouped } from '../ui/format.js';
import { EXIT_INTERRUPTED } from '../exit-codes.js';
import type { TestHooks } from '../test-hooks.js';
import { progressSink, rate } from '../ui/progress.js';
import { machineDetails } from '../report/machine.js';
import { tablePagesText } from './info.js';
import { type ReportPathRules, checkReportPath, pageAfterJson, writeReport } from '../report/write.js';

export interface SolveCommandOptions {
  board: string;
  pieces: string;
  backend: string;
  threads?: string;
  rules: string;
  out?: string;
  memory?: string;
  store?: string;
  shards?: string;
  workers?: string;
  schedule?: string;
  sliceUnits?: string;
  redis?: string;
  resume?: boolean;
  checkpointMinutes?: string;
  force?: boolean;
  breakLock?: boolean;
  distances?: boolean;
  json?: boolean;
  html?: string;
  quiet?: boolean;
}

function positiveInteger(text: string, flag: string): number {
  const n = Number(text);
  if (!/^\d+$/.test(text.trim()) || !Number.isSafeInteger(n) || n < 1) throw new UsageError(`${flag} must be a positive integer (got "${text}")`);
  return n;
}

/** A number of minutes, 0 or more, fractions allowed (0.05 is 3 s; 0: at every step). */
function minutesOption(text: string, flag: string): number {
  const n = Number(text);
  if (!/^\s*(\d+\.?\d*|\.\d+)\s*$/.test(text) || !Number.isFinite(n) || n < 0) {
    throw new UsageError(`${flag} must be a number of minutes, e.g. 10 or 0.5 (0: at every step; got "${text}")`);
  }
  return n;
}

/** How long a cluster solve's coordinator may take to stop after Ctrl-C. */
const CLUSTER_STOP_MS = 5000;

export async function solveCommand(o: SolveCommandOptions, hooks: TestHooks = {}): Promise<number> {
  const v = variantOption(o.board, o.pieces);
  const rules = rulesOption(o.rules);
  const request = backendOption(o.backend);
  const threads = cappedThreads(o.threads);
  const memoryLimit = memoryOption(o.memory);
  const out = o.out === undefined ? undefined : resolve(o.out);
  const store = o.store === undefined ? undefined : resolve(o.store);
  if (o.shards !== undefined && !store) throw new UsageError('--shards needs --store DIR');
  if (o.workers !== undefined && !store) throw new UsageError('--workers needs --store DIR');
  if (o.schedule !== undefined && !store) throw new UsageError('--schedule needs --store DIR');
  if (o.schedule !== undefined && !SCHEDULE_KINDS.includes(o.schedule as ScheduleKind)) throw new UsageError(`--schedule must be one of ${SCHEDULE_KINDS.join(', ')} (got ${JSON.stringify(o.schedule)})`);
  const schedule = o.schedule as ScheduleKind | undefined;
  const sliceUnits = o.sliceUnits === undefined ? undefined : positiveInteger(o.sliceUnits, '--slice-units');
  if (o.redis !== undefined && !store) throw new UsageError('--redis needs --store DIR (the folder every worker mounts)');
  if (o.redis !== undefined) parseRedisUrl(o.redis);
  if (o.redis !== undefined && o.backend !== 'auto') throw new UsageError('--backend is chosen by each worker (ccheckers worker --backend) in a cluster solve');
  if (store && o.distances) throw new UsageError('--distances is for in-memory solves; a --store keeps the 2-bit table only');
  const shards = o.shards === undefined ? undefined : positiveInteger(o.shards, '--shards');
  const workers = o.workers === undefined ? undefined : positiveInteger(o.workers, '--workers');
  if (workers !== undefined && workers > MAX_WORKERS) throw new UsageError(`--workers must be at most ${MAX_WORKERS} (got ${workers})`);
  // Shared steps: asked for, or a cluster's new store of 2 or more workers.
  const shared = newStoreSchedule({ workers, schedule, cluster: o.redis !== undefined }) === 'shared';
  if (sliceUnits !== undefined && !shared) throw new UsageError('--slice-units needs shared steps: --schedule shared (a cluster of 2 or more workers has them unless --schedule says otherwise)');
  const checkpointMinutes = o.checkpointMinutes === undefined ? undefined : minutesOption(o.checkpointMinutes, '--checkpoint-minutes');
  if (checkpointMinutes !== undefined && (!out || store)) {
    throw new UsageError('--checkpoint-minutes is for in-memory solves with --out FILE (their checkpoints are FILE.ckpt; a --store saves after every step)');
  }
  if (o.resume && !out && !store) throw new UsageError('--resume needs --out FILE (the checkpoint is FILE.ckpt) or --store DIR');
  if (o.breakLock && !out && !store) throw new UsageError('--break-lock needs --out FILE or --store DIR (the lock is FILE.lock or DIR/manifest.json.lock)');
  // Refuse now rather than after hours of work: never replace anything but a regular file (and
  // that only with --force), always be able to write; solve() checks again and holds a lock.
  if (out) checkSolveOutput(out, store ? { force: o.force === true } : o);
  if (store) ShardStore.checkPath(store, o.resume === true);
  // The page never takes the database, its checkpoint or lock, nor goes into the store.
  const pageRules: ReportPathRules = {
    force: o.force === true,
    keep: out ? [{ path: out, what: 'the --out file' }, { path: `${out}.ckpt`, what: "the --out file's checkpoint" }, { path: `${out}.lock`, what: "the --out file's lock" }] : [],
    stores: store ? [store] : [],
  };
  if (o.html !== undefined) checkReportPath(o.html, pageRules); // not after hours of solving
  const { backend, reason } = o.redis === undefined ? await selectBackend(request) : { backend: undefined, reason: '' };
  // Before any output or allocation: refuse a solve that cannot fit (solve() checks again).
  const space = new StateSpace(v);
  if (!store && backend) {
    checkTableLimits(space, o.distances);
    checkMemory(requiredBytes(space, backend.kernelThreads ? 1 : threads.count, o.distances), memoryLimit);
  }
  const progress = progressSink(process.stderr, o.quiet);
  if (threads.cappedFrom !== undefined) {
    progress.done(`using ${threads.count} thread(s), not ${threads.cappedFrom}: this machine has ${availableParallelism()} hardware thread(s), and more only wait`);
  }
  if (o.resume && out && !store && !existsSync(`${out}.ckpt`)) progress.done(`no checkpoint at ${out}.ckpt: starting from the beginning`);
  if (o.resume && store && !existsSync(`${store}/manifest.json`)) progress.done(`no store at ${store}: starting from the beginning`);
  // What --shards gave is said for a new store (a resumed one keeps its own cut).
  const newShards = store && o.resume && existsSync(`${store}/manifest.json`) ? undefined : shards;
  progress.done(
    backend
      ? `solving ${v.name} (${rules} rules) with ${backend.name} on ${Math.min(threads.count, space.groups)} thread(s): ${reason}`
      : `solving ${v.name} (${rules} rules) on a cluster: the jobs go to the workers through ${parseRedisUrl(o.redis!).shown}`,
  );

  const controller = new AbortController();
  const onSigint = () => {
    if (controller.signal.aborted) process.exit(EXIT_INTERRUPTED); // second Ctrl-C: now
    if (o.redis === undefined) {
      progress.done('interrupted: stopping after the current chunk (Ctrl-C again to quit at once)');
    } else {
      progress.done('interrupted: stopping (Ctrl-C again to quit at once)');
      // A coordinator waiting on a Redis that does not answer would wait for it: its store is
      // safe to leave at any moment (every write is atomic), so it goes after a few seconds.
      setTimeout(() => {
        // The store is made once Redis has answered: it may not be there yet.
        const kept = store !== undefined && existsSync(join(store, 'manifest.json')) ? `${store} is kept as of its last save (solve --resume continues)` : `no store was made in ${store}`;
        progress.done(`not stopped after ${CLUSTER_STOP_MS / 1000} s (does Redis at ${parseRedisUrl(o.redis!).shown} answer?): quitting; ${kept}`);
        process.exit(EXIT_INTERRUPTED);
      }, CLUSTER_STOP_MS).unref();
    }
    controller.abort();
  };
  // SIGTERM (a service manager, `timeout`, a batch system ending the job) stops the solve as
  // Ctrl-C does: saved, not lost since the last checkpoint.
  process.on('SIGINT', onSigint);
  process.on('SIGTERM', onSigint);
  const initStarted = performance.now();
  let passNumber = 0;
  let passStarted = initStarted;
  let distanceStarted: number | undefined;
  let result: SolveResult | ShardedSolveResult | ClusterSolveResult;
  const onProgress = (e: ProgressEvent) => {
        const share = `${((100 * e.proven) / e.storedStates).toFixed(1)}% decided`;
        if (e.phase === 'resumed') {
          // A checkpoint taken inside a pass: the part of the next pass done.
          const inPass = e.fraction > 0 ? ` and ${Math.floor(1000 * e.fraction) / 10}% of pass ${e.pass + 1}` : '';
          // One of the distances: the passes are done, and the layers up to distanceLayer.
          const layers = e.distanceLayer !== undefined ? ` and ${distanceLayers(e.distanceLayer)} (${(100 * (e.distanced ?? 0)).toFixed(1)}% of the won and lost states placed)` : '';
          progress.done(`resumed from ${store ?? `${out}.ckpt`} after ${e.pass === 0 && inPass ? 'the init' : `pass ${e.pass}`}${inPass}${layers} (${share})`);
        } else if (e.phase === 'init') {
          progress.update('init', e.fraction, share);
        } else if (e.phase === 'init-done') {
          progress.done(`init: illegal, terminal and won-in-one states, ${share}, ${duration((performance.now() - initStarted) / 1000)}`);
        } else if (e.phase === 'pass') {
          if (e.pass !== passNumber) {
            passNumber = e.pass;
            passStarted = performance.now();
          }
          const scanned = (e.fraction * e.storedStates) / Math.max(1e-3, (performance.now() - passStarted) / 1000);
          progress.update(`pass ${e.pass}`, e.fraction, `${share}, ${rate(scanned, 'states')}`);
        } else if (e.phase === 'pass-done' && e.record) {
          const r = e.record;
          progress.done(
            `pass ${r.pass}: +${grouped(r.newlyProven)} proven (${share}) in ${duration(r.seconds)}${r.sparse ? ', unknown states only' : r.listed ? ', unknown states only, by unit' : ''}`,
          );
        } else if (e.phase === 'distances') {
          if (distanceStarted === undefined) distanceStarted = performance.now();
          progress.update(`distances, layer ${e.pass}`, e.fraction, `${(100 * (e.distanced ?? 0)).toFixed(1)}% of the won and lost states placed`);
        } else if (e.phase === 'distances-done') {
          progress.done(`distances: ${e.pass} layers in ${duration((performance.now() - (distanceStarted ?? performance.now())) / 1000)}`);
        }
  };
  try {
    if (store && o.redis !== undefined) {
      result = await solveOnCluster({
        variant: v,
        rules,
        store,
        redis: o.redis,
        ...(o.resume ? { resume: true } : {}),
        ...(shards !== undefined ? { shards } : {}),
        ...(workers !== undefined ? { workers } : {}),
        ...(schedule !== undefined ? { schedule } : {}),
        ...(sliceUnits !== undefined ? { sliceUnits } : {}),
        ...(memoryLimit !== undefined ? { memoryLimit } : {}),
        ...(o.breakLock ? { breakLock: true } : {}),
        signal: controller.signal,
        onPlan: (plan, queue) => progress.done(`store ${store}: ${describeStorePlan(plan, newShards).replace('one held at a time', 'one held by each worker')}, queue ${queue}`),
        onProgress,
        onNotice: (text) => progress.done(text),
        ...(hooks.onClusterCommit ? { onCommit: hooks.onClusterCommit } : {}),
        ...(hooks.beforeClusterCommit ? { beforeCommit: hooks.beforeClusterCommit } : {}),
      });
      if (out) {
        progress.done(`writing ${out} from the store`);
        exportStore(store, out, { force: o.force === true });
      }
    } else if (store) {
      result = await solveSharded({
        variant: v,
        rules,
        backend: backend!,
        threads: threads.count,
        store,
        ...(o.resume ? { resume: true } : {}),
        ...(shards !== undefined ? { shards } : {}),
        ...(memoryLimit !== undefined ? { memoryLimit } : {}),
        ...(workers !== undefined ? { workers } : {}),
        ...(schedule !== undefined ? { schedule } : {}),
        ...(sliceUnits !== undefined ? { sliceUnits } : {}),
        ...(o.breakLock ? { breakLock: true } : {}),
        signal: controller.signal,
        onPlan: (plan) => progress.done(`store ${store}: ${describeStorePlan(plan, newShards)}`),
        onProgress,
        ...(hooks.onStoreSave ? { onSave: hooks.onStoreSave } : {}),
      });
      if (out) {
        progress.done(`writing ${out} from the store`);
        exportStore(store, out, { force: o.force === true });
      }
    } else {
      result = await solve({
        variant: v,
        rules,
        backend: backend!,
        threads: threads.count,
        ...(out ? { out } : {}),
        ...(o.resume ? { resume: true } : {}),
        ...(checkpointMinutes !== undefined ? { checkpointMinutes } : {}),
        ...(o.force ? { force: true } : {}),
        ...(o.breakLock ? { breakLock: true } : {}),
        ...(memoryLimit !== undefined ? { memoryLimit } : {}),
        ...(o.distances ? { distances: true } : {}),
        signal: controller.signal,
        onProgress,
        ...(hooks.onCheckpoint ? { onCheckpoint: hooks.onCheckpoint } : {}),
      });
    }
  } catch (e) {
    if (e instanceof SolveInterrupted || e instanceof ShardedSolveInterrupted || e instanceof ClusterSolveInterrupted) {
      progress.done(`ccheckers: ${e.message}`);
      return EXIT_INTERRUPTED;
    }
    throw e;
  } finally {
    process.off('SIGINT', onSigint);
    process.off('SIGTERM', onSigint);
    progress.clear();
  }

  const summary = {
    board: result.board,
    pieces: result.pieces,
    rules: result.rules,
    backend: result.backend,
    threads: result.threads,
    positions: result.positions,
    p1Wins: result.p1Wins,
    p2Wins: result.p2Wins,
    draws: result.draws,
    illegal: result.illegal,
    start: result.start,
    passes: result.passes,
    seconds: Number(result.seconds.toFixed(3)),
    ...(result.distances
      ? {
          distances: {
            maxPlies: result.distances.maxPlies,
            seconds: Number(result.distances.seconds.toFixed(3)),
            crc32: result.distances.crc32,
            ...(result.distances.resumedFromLayer !== undefined ? { resumedFromLayer: result.distances.resumedFromLayer } : {}),
          },
        }
      : {}),
    storedStates: result.storedStates,
    tableCrc32: result.tableCrc32,
    ...('tablePages' in result && result.tablePages ? { tableMemory: result.tablePages } : {}),
    ...('queue' in result
      ? {
          store: { path: result.store, passes: 'bands', shards: result.shards, workers: result.workers, schedule: result.schedule, bytesRead: result.bytesRead, bytesWritten: result.bytesWritten },
          cluster: { queue: result.queue, jobs: result.jobs, redisCommands: result.redisCommands },
        }
      : 'store' in result
        ? {
            store: {
              path: result.store,
              passes: result.storePasses,
              shards: result.shards,
              workers: result.workers,
              schedule: result.schedule,
              bytesRead: result.bytesRead,
              bytesWritten: result.bytesWritten,
            },
          }
        : {}),
    passLog: result.passLog.map((r) => ({ ...r, seconds: Number(r.seconds.toFixed(3)) })),
    machine: await machineDetails(),
  };
  // The results first: a page refused at the last moment (see writeReport) loses none of them.
  const page = async () => {
    if (o.html !== undefined) await writeReport(o.html, [{ kind: 'solve', data: summary, source: 'this run' }], pageRules);
  };
  if (o.json) {
    process.stdout.write(`${JSON.stringify(summary)}\n`);
    await pageAfterJson(page);
    return 0;
  }
  const startText = { 'p1-win': 'P1 wins', 'p2-win': 'P2 wins', draw: 'draw' }[result.start];
  const counts: Array<[string, number]> = [
    ['positions', result.positions],
    ['P1 wins', result.p1Wins],
    ['P2 wins', result.p2Wins],
    ['draws', result.draws],
    ['illegal', result.illegal],
  ];
  const width = Math.max(...counts.map(([, n]) => grouped(n).length));
  const lines = [
    `${v.name}, ${rules} rules`,
    ...counts.map(([label, n]) => `${label.padEnd(10)} ${grouped(n).padStart(width)}`),
    `${'start'.padEnd(10)} ${startText}`,
    `${'passes'.padEnd(10)} ${result.passes}`,
    `${'seconds'.padEnd(10)} ${result.seconds.toFixed(2)}`,
    // A cluster's coordinator counts the threads of the jobs it ran: none where the store was
    // solved already (solve --resume of a finished store).
    `${'backend'.padEnd(10)} ${'queue' in result && result.jobs === 0 ? `${result.backend}: no job run, the store was solved already` : `${result.backend}, ${result.threads} thread(s)`}`,
    `${'table'.padEnd(10)} ${grouped(result.storedStates)} stored states in ${grouped(result.tableBytes)} bytes, CRC-32 ${result.tableCrc32.toString(16).padStart(8, '0')}`,
    ...('tablePages' in result && result.tablePages ? [`${'memory'.padEnd(10)} ${tablePagesText(result.tablePages, result.tableBytes)}`] : []),
    ...(result.distances
      ? [
          `${'distances'.padEnd(10)} up to ${result.distances.maxPlies} plies, ${result.distances.seconds.toFixed(2)} s${result.distances.resumedFromLayer !== undefined ? ` from layer ${result.distances.resumedFromLayer} on` : ''}, CRC-32 ${result.distances.crc32.toString(16).padStart(8, '0')}`,
        ]
      : []),
    ...('queue' in result
      ? [
          `${'store'.padEnd(10)} ${result.store}: ${result.shards} band(s), rounds of ${result.workers} (${result.schedule}); workers read ${grouped(result.bytesRead)} bytes, wrote ${grouped(result.bytesWritten)}`,
          `${'cluster'.padEnd(10)} ${grouped(result.jobs)} jobs on queue ${result.queue}, ${grouped(result.redisCommands)} Redis commands from the coordinator`,
        ]
      : 'store' in result
        ? [
            `${'store'.padEnd(10)} ${result.store}: ${result.shards} band(s), one held at a time${result.workers > 1 ? `, rounds of ${result.workers} (${result.schedule})` : ''}; ` +
              `read ${grouped(result.bytesRead)} bytes, wrote ${grouped(result.bytesWritten)}`,
          ]
        : []),
    ...(out ? [`${'database'.padEnd(10)} ${out}`] : []),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  await page();
  return 0;
}
