/**
 * The `ccheckers` program: commands, their options, and the exit-code contract
 * (0 success, 1 a negative result such as a verify mismatch, 2 usage error, bad input or fatal
 * error, 130 interrupted). Errors are one line on stderr; stdout carries results only.
 */
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { CCheckersError } from '@ccheckers/core';
import { Command, CommanderError, Option } from 'commander';
import { EXIT_ERROR, EXIT_OK } from './exit-codes.js';
import type { TestHooks } from './test-hooks.js';

export type { TestHooks } from './test-hooks.js';

/** One version for all four packages (scripts/release-pack.mjs checks they agree). */
const PACKAGE_VERSION = (createRequire(import.meta.url)('../package.json') as { version: string }).version;

const BACKEND_HELP = 'auto | native-bmi2 | native-portable | ts';

export async function main(argv: string[], hooks: TestHooks = {}): Promise<number> {
  let code = EXIT_OK;
  const done = (c: number) => {
    code = c;
  };
  const program = new Command('ccheckers')
    .description('Strong solver and bitboard engine for two-player Chinese Checkers on small boards')
    .version(PACKAGE_VERSION)
    .showSuggestionAfterError(true)
    .exitOverride()
    .configureOutput({ outputError: (text, write) => write(`ccheckers: ${text.replace(/^error: /, '').trimEnd()}\n`) });
  // The command whose action runs, for the advice on a full disk.
  let running: Command | undefined;
  program.hook('preAction', (_program, actionCommand) => {
    running = actionCommand;
    refuseEmptyValues(actionCommand);
  });

  const variantOptions = (c: Command) =>
    c.option('--board <m>', 'board size m (m x m cells)', '7').option('--pieces <k>', 'pieces per player', '2').option('--rules <mode>', 'clean | published (docs/rules.md section 4)', 'clean');

  // Each command's module is imported when the command runs: a run loads only what its command
  // needs (`--version` no solver, `query` no HTTP server or charts), which the tests' hundreds of
  // runs of the CLI feel.
  program
    .command('info')
    .description('CPU features, the backends that load here, and which one auto picks and why')
    .option('--json', 'one JSON object on stdout')
    .action(async (o) => done(await (await import('./commands/info.js')).infoCommand(o)));

  variantOptions(program.command('plan').description('before a solve: sizes, exact illegal and terminal counts (no table), and the memory, disk and time of each way of solving here'))
    .option('--memory <size>', 'what a store (or a cluster worker) may hold (default: the free memory)')
    .option('--workers <list>', 'cluster sizes to plan, comma-separated', '2,8')
    .option('--json', 'one JSON object on stdout')
    .action(async (o) => done(await (await import('./commands/plan.js')).planCommand(o)));

  variantOptions(program.command('solve').description('strongly solve a variant: every position won, lost, drawn or illegal'))
    .option('--backend <name>', BACKEND_HELP, 'auto')
    .option('--threads <n>', 'threads (default: all cores)')
    .option('--out <file>', 'write the database here (checkpoints go to FILE.ckpt)')
    .option('--memory <size>', 'in-memory: refuse to start when the solve needs more; with --store: the most it may hold (e.g. 1.5G)')
    .option('--store <dir>', 'keep the table in shard files in this folder (out of core, bounded by --memory; resumable)')
    .option('--shards <n>', 'shard count of a new --store (default: from the table size and --memory)')
    .option('--workers <n>', 'with --store: the workers a new store\'s rounds are made for (--redis: default 2; without, the steps run here one after the other, as a cluster of N of the same --schedule would)')
    .option('--schedule <kind>', 'with --store: how a new store\'s rounds are cut: shared (the default with --redis and 2 or more workers: the bands in order, the units of each band\'s pass-1 step shared by the W workers in slices, exchanging proofs as they go, the serial pass\'s proofs kept; from 3 workers the later passes W bands at a time), segments (the default without --redis: each worker a run of consecutive bands) or blocks (round r: bands rW..rW+W-1; there to measure); see docs/sharding.md')
    .option('--slice-units <n>', 'with shared steps: the units each worker visits between exchanges (default 1)')
    .option('--redis <url>', 'with --store: solve on a cluster, the work done by `ccheckers worker` processes that share the store (redis://[:password@]host:port)')
    .option('--resume', 'continue from FILE.ckpt of --out, or the solve in --store')
    .option('--checkpoint-minutes <n>', 'with --out: write FILE.ckpt every n minutes, after the init, inside or after a pass, between distance layers (default 10; fractions allowed; 0: at every step)')
    .option('--force', 'overwrite an existing --out or --html file')
    .option('--break-lock', "take the lock (FILE.lock, DIR/manifest.json.lock) of a solve on another machine that is gone")
    .option('--distances', "also store every position's distance to the end (1 byte per stored state), so that query and play choose moves that make progress in games of any size")
    .option('--json', 'one JSON object on stdout (with the pass log and the machine, for report --from)')
    .option('--html <file>', 'also write a self-contained HTML report of the solve (passes as charts)')
    .option('--quiet', 'no progress on stderr')
    .action(async (o) => done(await (await import('./commands/solve.js')).solveCommand(o, hooks)));

  program
    .command('worker')
    .description('run the jobs of cluster solves (solve --store DIR --redis URL) on this machine, until stopped')
    .requiredOption('--redis <url>', 'the Redis of the cluster: redis://[:password@]host:port[/db]')
    .requiredOption('--store <dir>', "the solve's store folder as this machine mounts it")
    .option('--backend <name>', BACKEND_HELP, 'auto')
    .option('--threads <n>', 'threads per job (default: all cores)')
    .option('--memory <size>', 'refuse jobs that need more (a job holds one band and its messages)')
    .option('--stall-seconds <n>', "seconds after which the job of a worker that died goes to another (BullMQ's lock)", '30')
    .option('--quiet', 'no log lines on stderr')
    .action(async (o) => done(await (await import('./commands/worker.js')).workerCommand(o, hooks)));

  variantOptions(program.command('verify').description('check that all backends give identical results (operations, then full solves)'))
    .option('--backends <list>', 'comma-separated backends (default: all that load here)')
    .option('--threads <n>', 'threads for the solves (default: all cores)')
    .option('--no-solve', 'check the operations only')
    .option('--json', 'one JSON object on stdout')
    .option('--quiet', 'no progress on stderr')
    .action(async (o) => done(await (await import('./commands/verify.js')).verifyCommand(o, hooks)));

  program
    .command('bench')
    .description("the bitboard paper's operations on each backend, ns per operation, beside the paper's figures")
    .option('--board <m>', 'board size', '7')
    .option('--pieces <k>', 'pieces per player', '3')
    .option('--backends <list>', 'comma-separated backends (default: all that load here)')
    .option('--ops <list>', 'winner, successors, rankP1, rankP2, unrankP1, unrankP2, incrementP2 (default: all)')
    .option('--min-time <ms>', 'minimum duration of one timed loop', '250')
    .option('--position <p>', 'position for winner and successors: start, midgame or a position string', 'start')
    .option('--json', 'one JSON object on stdout (with the machine, for report --from)')
    .option('--html <file>', 'also write a self-contained HTML report (ns per operation as charts, beside the paper)')
    .option('--force', 'replace an existing --html file')
    .option('--quiet', 'no progress on stderr')
    .action(async (o) => done(await (await import('./commands/bench.js')).benchCommand(o)));

  program
    .command('report')
    .description('one self-contained HTML page (SVG charts, no network) from saved bench --json and solve --json results')
    .requiredOption('--from <files...>', 'result files (one JSON object per line), of any runs and machines')
    .requiredOption('--html <file>', 'where to write the page')
    .option('--force', 'replace an existing --html file')
    .action(async (o) => done(await (await import('./commands/report.js')).reportCommand(o)));

  program
    .command('query')
    .description('value of a position in a solved database, each legal move, and the best move')
    .argument('<position>', 'cells in order (x, o, .) then the side to move, e.g. "xx.....(49 cells) x"')
    .requiredOption('--db <path>', 'database written by solve --out, or a --store folder')
    .option('--json', 'one JSON object on stdout')
    .action(async (position, o) => done(await (await import('./commands/query.js')).queryCommand(position, o)));

  program
    .command('check')
    .description('verify every checksum of a database (streaming the whole file); --recount the results from the body')
    .requiredOption('--db <path>', 'database written by solve --out, or a --store folder')
    .option('--recount', 'recompute the counts and the start value from the body and compare them with the header')
    .option('--fix', 'with a recount that disagrees (and every checksum right): rewrite the header atomically')
    .option('--consistency', "re-derive every stored state's value from the rules and its children's values (and distances), not the solver")
    .option('--sample <n>', 'with --consistency: check n states chosen by a fixed seed instead of all')
    .option('--threads <n>', 'with --consistency: worker threads (default: all cores)')
    .option('--memory <size>', 'with --consistency: the most the tables may take (default: 80% of free memory); less reads the table in blocks')
    .option('--json', 'one JSON object on stdout')
    .option('--quiet', 'no progress on stderr')
    .action(async (o) => done(await (await import('./commands/check.js')).checkCommand(o)));

  program
    .command('convert <from> <to>')
    .description('a store (folder) to one database file, or a complete database file to a new store')
    .option('--shards <n>', 'shard count of the new store')
    .option('--force', 'replace an existing database file at <to>')
    .action(async (from, to, o) => done(await (await import('./commands/convert.js')).convertCommand(from, to, o)));

  program
    .command('play')
    .description('play against perfect play (moves typed as from-to)')
    .requiredOption('--db <path>', 'database written by solve --out, or a --store folder')
    .addOption(new Option('--as <side>', 'your side: x (P1) or o (P2); the side to move moves first (x in the initial position)').default('x'))
    .option('--from <position>', 'start from this (legal) position instead of the initial one')
    .action(async (o) => done(await (await import('./commands/play.js')).playCommand(o)));

  program
    .command('show')
    .description('draw a position as the diamond')
    .argument('<position>', 'cells in order (x, o, .) then the side to move')
    .option('--numbers', 'print cell numbers beside the pieces')
    .option('--rules <mode>', "clean | published, for the status line (default: clean; with --db: the database's)")
    .option('--db <path>', 'also the value and the best move, from a database written by solve --out or a --store folder')
    .action(async (position, o) => done(await (await import('./commands/show.js')).showCommand(position, o)));

  program
    .command('serve')
    .description('the solved-position explorer in the browser: serves the page and answers position queries')
    .requiredOption('--db <path>', 'database written by solve --out, or a --store folder')
    .option('--port <port>', 'TCP port (0: any free port)', '8080')
    .option('--host <address>', 'address to listen on (loopback by default)', '127.0.0.1')
    .action(async (o) => done(await (await import('./commands/serve.js')).serveCommand(o)));

  try {
    await program.parseAsync(argv);
  } catch (e) {
    if (e instanceof CommanderError) {
      // Help and version exit 0; everything else commander reports (already printed on stderr)
      // is usage, and a script that asked for --json gets it on stdout too.
      if (e.exitCode === 0) return EXIT_OK;
      if (askedForJson(argv)) jsonError('E_USAGE', e.message.replace(/^error: /, ''));
      return EXIT_ERROR;
    }
    // A failure after the results went to stdout as JSON (report/write.ts, AfterResultsPrinted):
    // stdout keeps that one object.
    const after = (e as { afterResultsPrinted?: boolean; failure?: unknown } | null)?.afterResultsPrinted === true;
    const json = !after && running?.opts().json === true;
    const error = after ? (e as { failure: unknown }).failure : e;
    if (error instanceof CCheckersError) return failed(json, error.code, `${prefix(error)}${error.message}`);
    const full = diskFull(error, running);
    if (full) return failed(json, (error as NodeJS.ErrnoException).code!, full);
    const code = failed(json, 'E_FATAL', `fatal error: ${(error as Error).message ?? String(error)}`);
    if (process.env.CCHECKERS_DEBUG === '1') process.stderr.write(`${(error as Error).stack}\n`);
    return code;
  }
  return code;
}

/** An empty path (`--db ""`, `convert a.ccdb ""`) or argument is a mistake: a path resolved
 *  from it would be the current folder. (Other options' own checks say what they take.) */
function refuseEmptyValues(c: Command): void {
  const empty = (value: unknown) => value === '' || (Array.isArray(value) && value.includes(''));
  for (const option of c.options) {
    if (/<(path|file|dir|files)(\.\.\.)?>/.test(option.flags) && empty(c.getOptionValue(option.attributeName()))) {
      throw new CCheckersError('E_USAGE', `${option.long} needs a value, not an empty string`);
    }
  }
  c.registeredArguments.forEach((argument, i) => {
    if (empty(c.processedArgs[i])) throw new CCheckersError('E_USAGE', `<${argument.name()}> is empty`);
  });
}

/** Whether the command line asks for --json (before any `--`): commander may have failed before
 *  it parsed the command's options. */
function askedForJson(argv: string[]): boolean {
  const args = argv.slice(2);
  const end = args.indexOf('--');
  return (end < 0 ? args : args.slice(0, end)).includes('--json');
}

function jsonError(code: string, message: string): void {
  process.stdout.write(`${JSON.stringify({ error: { code, message, exitCode: EXIT_ERROR } })}\n`);
}

/**
 * Says why the command failed on stderr and, where it was asked for --json, as one JSON object on
 * stdout too ({"error": {"code", "message", "exitCode"}}), so that a script reading stdout gets an
 * answer either way. Returns the exit code.
 */
function failed(json: boolean, code: string, message: string): number {
  process.stderr.write(`ccheckers: ${message}\n`);
  if (json) jsonError(code, message);
  return EXIT_ERROR;
}

/** What to do when a write found the disk full, for the command that ran: every file is written
 *  whole before anything names it, so the saves before stand (a solve's --resume continues from
 *  the last), convert replaces nothing, and check --fix leaves the file as it was. */
function diskFull(e: unknown, command: Command | undefined): string | undefined {
  const error = e as NodeJS.ErrnoException;
  if (error?.code !== 'ENOSPC' && error?.code !== 'EDQUOT') return undefined;
  const where = error.path ? ` writing ${error.path}` : '';
  const head = `no space left on the disk${where} (${error.code})`;
  switch (command?.name()) {
    case 'solve':
      return `${head}: what was saved before is intact; free some space and run the command again (a solve continues from its last save with --resume)`;
    case 'convert': {
      // A store is made beside the target and removed when it fails: nothing is left to clear.
      const from = resolve(command.args[0]!);
      return `${head}: convert stopped; ${from} is as it was, and nothing was replaced. Free some space and run the command again`;
    }
    case 'check':
      if (command.opts().fix) return `${head}: check --fix stopped; ${command.opts().db} was not changed. Free some space and run the command again`;
  }
  return `${head}: what was saved before is intact; free some space and run the command again`;
}

function prefix(e: CCheckersError): string {
  return e.code === 'E_POSITION' ? 'malformed position: ' : '';
}
