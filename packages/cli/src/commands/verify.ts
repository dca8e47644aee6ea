/**
 * `ccheckers verify`: do the backends agree? First every engine operation (core's describe batch:
 * win tests, legality, moves, ranks, symmetry, unranking) on every position of a small variant or
 * on a fixed random sample of a large one; then a full solve on each backend, table against table.
 * Exit 1 at the first difference, naming the position and both answers.
 */
import {
  type Backend,
  BitboardEngine,
  DESCRIBE_FIELDS,
  DESCRIBE_NAMES,
  type RuleMode,
  StateSpace,
  type Variant,
  WORDS,
  formatPosition,
  fromWords,
  readValue,
  seededRandom,
} from '@ccheckers/core';
import { type BackendRequest, type SolveResult, availableBackends, selectBackend, solve } from '@ccheckers/solver';
import { backendList, rulesOption, threadsOption, variantOption } from '../options.js';
import { duration, grouped } from '../ui/format.js';
import type { TestHooks } from '../test-hooks.js';
import { progressSink } from '../ui/progress.js';

/** Variants with at most this many positions are checked exhaustively, others on a sample. */
const EXHAUSTIVE_UP_TO = 3_000_000;
const SAMPLE = 200_000;
const BATCH = 8_192;
const VALUE_NAMES = ['unknown/draw', 'loss', 'win', 'illegal'];

export interface VerifyCommandOptions {
  board: string;
  pieces: string;
  backends?: string;
  rules: string;
  threads?: string;
  solve: boolean;
  json?: boolean;
  quiet?: boolean;
}

interface Difference {
  check: 'operation' | 'solve';
  position: string;
  what: string;
  answers: Record<string, number | string>;
}

export async function verifyCommand(o: VerifyCommandOptions, hooks: TestHooks = {}): Promise<number> {
  const v = variantOption(o.board, o.pieces);
  const rules = rulesOption(o.rules);
  const threads = threadsOption(o.threads);
  const requested: BackendRequest[] | undefined = o.backends !== undefined ? backendList(o.backends) : undefined;
  const backends = requested ? await Promise.all(requested.map(async (r) => (await selectBackend(r)).backend)) : await availableBackends();
  const progress = progressSink(process.stderr, o.quiet);
  progress.done(`verifying ${v.name} (${rules} rules) on ${backends.map((b) => b.name).join(', ')}`);

  const operations = checkOperations(v, rules, backends, progress, hooks.corruptBackend);
  let difference: Difference | undefined = operations.difference;
  const solves: Array<Omit<SolveResult, 'table' | 'passLog'>> = [];
  if (!difference && o.solve) {
    let reference: SolveResult | undefined;
    for (const backend of backends) {
      const r = await solve({
        variant: v,
        rules,
        backend,
        threads,
        keepTable: true,
        onProgress: (e) => e.phase === 'pass' && progress.update(`${backend.name} pass ${e.pass}`, e.fraction),
      });
      progress.done(`solve on ${backend.name}: ${r.passes} passes, ${duration(r.seconds)}, table CRC-32 ${hex(r.tableCrc32)}`);
      const { table, passLog, ...summary } = r;
      solves.push(summary);
      if (!reference) reference = r;
      else {
        difference = compareSolves(v, reference, r);
        if (difference) break;
      }
    }
  }
  progress.clear();

  const report = {
    board: v.size,
    pieces: v.pieces,
    rules,
    backends: backends.map((b) => b.name),
    operations: { mode: operations.mode, positions: operations.checked, fields: DESCRIBE_FIELDS },
    solves: solves.map((s) => ({ backend: s.backend, threads: s.threads, seconds: s.seconds, passes: s.passes, tableCrc32: s.tableCrc32, positions: s.positions, p1Wins: s.p1Wins, p2Wins: s.p2Wins, draws: s.draws, illegal: s.illegal, start: s.start })),
    identical: difference === undefined,
    ...(difference ? { difference } : {}),
  };
  if (o.json) process.stdout.write(`${JSON.stringify(report)}\n`);
  else if (difference) {
    const answers = Object.entries(difference.answers).map(([b, a]) => `  ${b.padEnd(16)} ${a}`);
    process.stdout.write(`DIFFERENCE (${difference.check}) in ${difference.what}\n  position         ${difference.position}\n${answers.join('\n')}\n`);
  } else {
    const opsLine = `${grouped(operations.checked)} positions (${operations.mode}), ${DESCRIBE_FIELDS} operations each: identical`;
    const solveLine = solves.length
      ? `solves: identical tables (CRC-32 ${hex(solves[0]!.tableCrc32)}), ${grouped(solves[0]!.positions)} positions, start ${solves[0]!.start}`
      : 'solves: skipped (--no-solve)';
    process.stdout.write(`${v.name} (${rules}): ${backends.map((b) => b.name).join(', ')} agree\n  ${opsLine}\n  ${solveLine}\n`);
  }
  return difference ? 1 : 0;
}

/** Every operation on every position (or the sample), each backend against the first. */
function checkOperations(
  v: Variant,
  rules: RuleMode,
  backends: Backend[],
  progress: ReturnType<typeof progressSink>,
  corruptBackend?: string,
): { mode: 'all' | 'sample'; checked: number; difference: Difference | undefined } {
  const engine = new BitboardEngine(v, rules);
  const total = Number(engine.positions);
  const exhaustive = total <= EXHAUSTIVE_UP_TO;
  const count = exhaustive ? total : SAMPLE;
  const engines = backends.map((b) => (b.name === corruptBackend ? corrupted(b.engine(v, rules)) : b.engine(v, rules)));
  const words = new Uint32Array(7 * BATCH);
  const outs = backends.map(() => new Float64Array(DESCRIBE_FIELDS * BATCH));
  const random = seededRandom(v.size * 1009 + v.pieces);
  const p1 = new Uint32Array(WORDS);
  const p2 = new Uint32Array(WORDS);
  for (let done = 0; done < count; ) {
    const n = Math.min(BATCH, count - done);
    for (let i = 0; i < n; i++) {
      // Position number `done + i` in rank order (exhaustive), else a random one.
      const r = exhaustive ? done + i : Math.floor(random() * total);
      const toMove = r % 2;
      const rest = Math.floor(r / 2);
      engine.unrankP1(Math.floor(rest / engine.p2Placements), p1);
      engine.unrankP2(p1, rest % engine.p2Placements, p2);
      words.set(p1, 7 * i);
      words.set(p2, 7 * i + 3);
      words[7 * i + 6] = toMove;
    }
    engines.forEach((e, b) => e.describe(words, n, outs[b]!));
    for (let b = 1; b < backends.length; b++) {
      for (let j = 0; j < n * DESCRIBE_FIELDS; j++) {
        if (outs[b]![j] !== outs[0]![j]) {
          const i = Math.floor(j / DESCRIBE_FIELDS);
          const field = j % DESCRIBE_FIELDS;
          const w = words.subarray(7 * i, 7 * i + 7);
          const position = formatPosition(v, fromWords({ p1: w.subarray(0, 3), p2: w.subarray(3, 6), toMove: w[6] as 0 | 1 }));
          return {
            mode: exhaustive ? 'all' : 'sample',
            checked: done + i,
            difference: {
              check: 'operation',
              position,
              what: `operation ${DESCRIBE_NAMES[field]}`,
              answers: { [backends[0]!.name]: outs[0]![j]!, [backends[b]!.name]: outs[b]![j]! },
            },
          };
        }
      }
    }
    done += n;
    progress.update('operations', done / count, `${grouped(done)} positions`);
  }
  progress.done(`operations: ${grouped(count)} positions (${exhaustive ? 'all' : 'fixed random sample'}), ${DESCRIBE_FIELDS} results each, ${backends.length} backends agree`);
  return { mode: exhaustive ? 'all' : 'sample', checked: count, difference: undefined };
}

/** The first stored state whose value differs, as a position with both values. */
function compareSolves(v: Variant, a: SolveResult, b: SolveResult): Difference | undefined {
  if (a.tableCrc32 === b.tableCrc32 && a.p1Wins === b.p1Wins && a.draws === b.draws && a.illegal === b.illegal) return undefined;
  const space = new StateSpace(v);
  const engine = new BitboardEngine(v);
  for (let index = 0; index < space.states; index++) {
    const x = readValue(a.table!, index);
    const y = readValue(b.table!, index);
    if (x === y) continue;
    const p1 = new Uint32Array(WORDS);
    const p2 = new Uint32Array(WORDS);
    engine.unrankP1(space.rankOf[Math.floor(index / space.p2Placements)]!, p1);
    engine.unrankP2(p1, index % space.p2Placements, p2);
    return {
      check: 'solve',
      position: formatPosition(v, fromWords({ p1, p2, toMove: 0 })),
      what: `solved value (stored state ${index})`,
      answers: { [a.backend]: VALUE_NAMES[x]!, [b.backend]: VALUE_NAMES[y]! },
    };
  }
  return {
    check: 'solve',
    position: '-',
    what: 'counts',
    answers: { [a.backend]: `${a.p1Wins} P1 wins, ${a.draws} draws`, [b.backend]: `${b.p1Wins} P1 wins, ${b.draws} draws` },
  };
}

/**
 * For the tests (TestHooks.corruptBackend): the engine answers one operation wrongly (legal-move
 * count of the 1000th position of each batch), so that verify must find it.
 */
function corrupted<E extends { describe(words: Uint32Array, count: number, out: Float64Array): void }>(engine: E): E {
  const describe = engine.describe.bind(engine);
  return Object.assign(Object.create(engine) as E, {
    describe(words: Uint32Array, count: number, out: Float64Array) {
      describe(words, count, out);
      if (count > 1000) out[1000 * DESCRIBE_FIELDS + 3]! += 1;
    },
  });
}


function hex(n: number): string {
  return n.toString(16).padStart(8, '0');
}
