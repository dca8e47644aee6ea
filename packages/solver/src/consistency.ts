/**
 * `ccheckers check --consistency`: every stored state's class derived again from the rules and its
 * children's stored values, with the engine (move generator, Def. 1-3), not the solver's passes.
 *
 *   - illegal and terminal states are classified by the rules and compared;
 *   - a WIN needs a legal child that is a LOSS for its side to move; a LOSS needs every legal child
 *     to be a WIN (or no legal child at all: every move leads to an illegal position, RULES.md
 *     section 5); a DRAW needs no LOSS child and some DRAW child; a legal non-terminal state
 *     without any move has no value and is reported;
 *   - with distances (solve --distances): a WIN at d has its nearest LOSS child at d - 1, a LOSS
 *     at d its farthest WIN child at d - 1 (0 for terminal and all-moves-illegal losses), draws
 *     and illegal states none. Distances strictly decrease along the witnesses, so with them the
 *     check is a full proof of the table; without them it proves local consistency only (a ring
 *     of wins and losses that should be draws passes it).
 *
 * Children are found by the move generator, their legality by the rules, their stored index by
 * the ranking of state-space.ts computed here (colour swap for P2 to move, mirror into the group,
 * colex rank among the free cells), apart from the solver's state graph. The children of stored
 * state (a, b) all lie in the group of rot(b), so the full check goes child group by child group:
 * for group h and each P2 placement b whose children lie there, every parent (rep(g), b) of the
 * held groups g is checked against h's values, decoded once. Parents are read one per group, children from one small group: cache-friendly.
 * Within a memory budget the table is held whole, or in blocks of parent groups while the child
 * groups are streamed past each block (a nested-loop join; the table is read once per block).
 * Work is shared between worker threads by child group; the first mismatches reported are the
 * ones of lowest index, whatever the thread count.
 *
 * This file runs the check; its parts are in consistency/: judge.ts (one state), group-checker.ts
 * (a child group, on any thread), table-source.ts (what is read), plan.ts (the memory plan),
 * sample.ts (--sample) and explain.ts (a mismatch in words).
 */
import { availableParallelism, freemem } from 'node:os';
import { Worker } from 'node:worker_threads';
import { CCheckersError, type RuleMode, StateSpace, variant } from '@ccheckers/core';
import { StateJudge } from './consistency/judge.js';
import { type ConsistencyCounts, type ConsistencyStep, type ConsistencyWorkerData, type ConsistencyWorkerResult, GroupChecker, MismatchList, addCounts, emptyConsistencyCounts } from './consistency/group-checker.js';
import { type TableSource, openSource } from './consistency/table-source.js';
import { checkSample, sampleIndices } from './consistency/sample.js';
import { overheadBytes, planConsistency } from './consistency/plan.js';
import { type MismatchReport, explain } from './consistency/explain.js';

export { type MismatchReport, explain } from './consistency/explain.js';
export {
  type ConsistencyCounts,
  type ConsistencyStep,
  type ConsistencyWorkerData,
  type ConsistencyWorkerResult,
  GroupChecker,
  MismatchList,
  type StepTables,
  emptyConsistencyCounts,
  groupRepresentatives,
} from './consistency/group-checker.js';
export { Kind, PROBLEM_NAMES, Problem, StateJudge } from './consistency/judge.js';
export { type ConsistencyPlan, planConsistency } from './consistency/plan.js';
export { sampleIndices } from './consistency/sample.js';

export interface ConsistencyOptions {
  /** Check this many stored states chosen by `seed` instead of all. */
  sample?: number;
  seed?: number;
  /** Worker threads for the full check (default: all cores). */
  threads?: number;
  /** Memory budget in bytes for the tables the full check holds (default: 80% of free memory). */
  memory?: number;
  /** Mismatches reported in detail (the lowest indices). */
  limit?: number;
  onProgress?: (fraction: number, checked: number) => void;
}

export interface ConsistencyReport {
  path: string;
  kind: 'database' | 'store';
  board: number;
  pieces: number;
  rules: RuleMode;
  /** Whether distances were stored and checked (then a pass is a full proof). */
  distances: boolean;
  /** Stored states in the table, and how many were checked (all, or the sample). */
  states: number;
  checked: number;
  sample?: { size: number; seed: number };
  threads: number;
  /** How the tables were held: blocks of parent groups, reads of the table. */
  blocks: number;
  memoryBytes: number;
  counts: ConsistencyCounts;
  mismatches: number;
  first: MismatchReport[];
  seconds: number;
}

/** The fixed seed of --sample. */
export const DEFAULT_SAMPLE_SEED = 20_260_101;

/** Checks the database file or store at `path` (see the module comment). */
export async function checkConsistency(path: string, options: ConsistencyOptions = {}): Promise<ConsistencyReport> {
  const started = performance.now();
  const source = openSource(path);
  try {
    const h = source.header;
    const space = new StateSpace(variant(h.board, h.pieces));
    const limit = options.limit ?? 10;
    const sampleSize = options.sample;
    if (sampleSize !== undefined && (!Number.isSafeInteger(sampleSize) || sampleSize < 1)) {
      throw new CCheckersError('E_USAGE', `--sample must be a positive integer (got ${sampleSize})`);
    }
    const base = {
      path,
      kind: source.kind,
      board: h.board,
      pieces: h.pieces,
      rules: h.rules,
      distances: source.hasDistances,
      states: space.states,
    };
    let found: { counts: ConsistencyCounts; checked: number; mismatches: MismatchList; threads: number; blocks: number; memoryBytes: number };
    let sample: ConsistencyReport['sample'];
    if (sampleSize !== undefined && sampleSize < space.states) {
      const seed = options.seed ?? DEFAULT_SAMPLE_SEED;
      sample = { size: sampleSize, seed };
      found = checkSample(source, space, sampleIndices(space.states, sampleSize, seed), limit, options.onProgress);
    } else {
      found = await checkAll(source, space, options, limit);
    }
    const reader = source.randomAccess();
    let first: MismatchReport[];
    try {
      first = found.mismatches.first.map((index) => explain(new StateJudge(space, h.rules), reader, index));
    } finally {
      reader.close();
    }
    return {
      ...base,
      checked: found.checked,
      ...(sample ? { sample } : {}),
      threads: found.threads,
      blocks: found.blocks,
      memoryBytes: found.memoryBytes,
      counts: found.counts,
      mismatches: found.mismatches.total,
      first,
      seconds: (performance.now() - started) / 1000,
    };
  } finally {
    source.close();
  }
}

/** The worker script sits next to this module in dist/ (tests running from src/ use the built one). */
function workerUrl(): URL {
  const here = import.meta.url;
  return new URL(here.endsWith('.ts') ? '../dist/consistency-worker.js' : './consistency-worker.js', here);
}

function sharedBytes(bytes: number): Uint8Array {
  return new Uint8Array(new SharedArrayBuffer(Math.max(1, bytes)));
}

async function checkAll(source: TableSource, space: StateSpace, options: ConsistencyOptions, limit: number) {
  const distances = source.hasDistances;
  const threads = options.threads ?? availableParallelism();
  if (!Number.isSafeInteger(threads) || threads < 1) throw new CCheckersError('E_USAGE', `--threads must be a positive integer (got ${threads})`);
  const budget = options.memory ?? Math.floor(0.8 * freemem());
  const plan = planConsistency(space, source.unitGroupsFor(budget, overheadBytes(space, threads)), distances, threads, budget);
  const { unitGroups, units, blockUnits } = plan;
  const blockGroups = Math.min(space.groups, blockUnits * unitGroups);
  const alloc = threads > 1 ? sharedBytes : (n: number) => new Uint8Array(Math.max(1, n));
  const blockValues = alloc(Math.ceil((blockGroups * space.p2Placements) / 4));
  const blockDistances = distances ? alloc(blockGroups * space.p2Placements) : undefined;
  const chunkValues = plan.blocks > 1 ? alloc(Math.ceil((unitGroups * space.p2Placements) / 4)) : undefined;
  const chunkDistances = plan.blocks > 1 && distances ? alloc(unitGroups * space.p2Placements) : undefined;

  const counter = new Int32Array(new SharedArrayBuffer(8));
  const totalWork = plan.blocks * space.groups;
  const mismatches = new MismatchList(limit);
  const counts = emptyConsistencyCounts();
  let checked = 0;
  let workers: Worker[] = [];
  let inline: GroupChecker | undefined;
  if (threads > 1) {
    const data: ConsistencyWorkerData = { board: space.variant.size, pieces: space.pieces, rules: source.header.rules, limit, counter };
    workers = Array.from({ length: threads }, () => new Worker(workerUrl(), { workerData: data }));
  } else {
    inline = new GroupChecker(space, source.header.rules, limit);
  }
  const progress = () => {
    const fraction = Math.min(1, Atomics.load(counter, 1) / totalWork);
    options.onProgress?.(fraction, Math.round(fraction * space.states)); // states, as if in one block
  };
  try {
    for (let u0 = 0; u0 < units; u0 += blockUnits) {
      const first = u0 * unitGroups;
      const groups = Math.min(space.groups, (u0 + blockUnits) * unitGroups) - first;
      source.read(first, groups, blockValues, blockDistances);
      const block = { blockValues, blockDistances, blockFirst: first, blockGroups: groups };
      for (let u = 0; u < units; u++) {
        const chunkFirst = u * unitGroups;
        const chunkGroups = Math.min(space.groups, chunkFirst + unitGroups) - chunkFirst;
        const held = chunkFirst >= first && chunkFirst < first + groups;
        if (!held) source.read(chunkFirst, chunkGroups, chunkValues!, chunkDistances);
        const step: ConsistencyStep = {
          ...block,
          chunkValues: held ? blockValues : chunkValues!,
          chunkDistances: held ? blockDistances : chunkDistances,
          chunkFirst: held ? first : chunkFirst,
          childFrom: chunkFirst,
          childTo: chunkFirst + chunkGroups,
        };
        if (inline) {
          for (let h = step.childFrom; h < step.childTo; h++) {
            inline.checkChildGroup(h, step);
            Atomics.add(counter, 1, 1);
            if ((h & 15) === 15) progress();
          }
        } else {
          Atomics.store(counter, 0, step.childFrom);
          const timer = setInterval(progress, 250);
          try {
            const results = await Promise.all(workers.map((w) => runWorker(w, step)));
            for (const r of results) {
              addCounts(counts, r.counts);
              checked += r.checked;
              mismatches.merge(r.total, r.first);
            }
          } finally {
            clearInterval(timer);
          }
          progress();
        }
      }
    }
  } finally {
    await Promise.all(workers.map((w) => w.terminate()));
  }
  source.finish();
  if (inline) {
    addCounts(counts, inline.counts);
    checked = inline.checked;
    mismatches.merge(inline.mismatches.total, inline.mismatches.first);
  }
  if (checked !== space.states) throw new Error(`consistency: checked ${checked} stored states of ${space.states}`);
  const memoryBytes = plan.blockBytes + plan.chunkBytes;
  return { counts, checked, mismatches, threads, blocks: plan.blocks, memoryBytes };
}

function runWorker(worker: Worker, step: ConsistencyStep): Promise<ConsistencyWorkerResult> {
  return new Promise((resolve, reject) => {
    const onMessage = (r: ConsistencyWorkerResult) => {
      worker.off('error', onError);
      resolve(r);
    };
    const onError = (e: Error) => {
      worker.off('message', onMessage);
      reject(e);
    };
    worker.once('message', onMessage);
    worker.once('error', onError);
    worker.postMessage(step);
  });
}
