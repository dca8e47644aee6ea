/**
 * `ccheckers check --db PATH --consistency [--sample N] [--threads N] [--memory SIZE]`: every
 * stored state (or a sample) classified again by the rules and judged against its children's
 * stored values (packages/solver/src/consistency.ts). Exit 0 when all agree, 1 on any mismatch.
 */
import { type ConsistencyReport, type MismatchReport, checkConsistency, formatBytes, parseSize } from '@ccheckers/solver';
import { UsageError, integer } from '../options.js';
import { duration, grouped } from '../ui/format.js';
import { progressSink, rate } from '../ui/progress.js';

export interface ConsistencyCommandOptions {
  db: string;
  sample?: string;
  threads?: string;
  memory?: string;
  json?: boolean;
  quiet?: boolean;
  recount?: boolean;
  fix?: boolean;
}

export async function consistencyCommand(o: ConsistencyCommandOptions): Promise<number> {
  if (o.recount || o.fix) throw new UsageError('--consistency is a check of its own: run --recount or --fix separately');
  const sample = o.sample === undefined ? undefined : integer('--sample', o.sample, 1, Number.MAX_SAFE_INTEGER);
  const threads = o.threads === undefined ? undefined : integer('--threads', o.threads, 1, 1024);
  const memory = o.memory === undefined ? undefined : parseSize(o.memory);
  const progress = progressSink(process.stderr, o.quiet || o.json);
  const started = performance.now();
  let states = 0;
  const report = await checkConsistency(o.db, {
    ...(sample !== undefined ? { sample } : {}),
    ...(threads !== undefined ? { threads } : {}),
    ...(memory !== undefined ? { memory } : {}),
    onProgress: (fraction, checked) => {
      states = checked;
      const seconds = (performance.now() - started) / 1000;
      progress.update('consistency', fraction, states > 0 ? rate(states / seconds, 'states') : undefined);
    },
  });
  progress.clear();
  process.stdout.write(o.json ? `${JSON.stringify(report)}\n` : `${consistencyText(report)}\n`);
  return report.mismatches === 0 ? 0 : 1;
}

const VALUE: Record<string, string> = { win: 'win', loss: 'loss', draw: 'draw', illegal: 'illegal', undetermined: 'undetermined', 'no value': 'no value' };

function valueText(v: { value: string; distance?: number }): string {
  return v.distance === undefined ? VALUE[v.value]! : `${VALUE[v.value]} in ${v.distance}`;
}

function mismatchText(m: MismatchReport): string[] {
  const lines = [
    `state ${grouped(m.index)}  ${m.position}`,
    `  problem   ${m.problem}`,
    `  stored    ${valueText(m.stored)}`,
    `  expected  ${valueText(m.expected)}: ${m.detail}`,
  ];
  if (m.child) lines.push(`  child     after ${m.child.move}: ${m.child.position} (state ${grouped(m.child.index)}, ${valueText(m.child)} for o)`);
  return lines;
}

export function consistencyText(r: ConsistencyReport): string {
  const c = r.counts;
  const what = r.sample ? `a sample of ${grouped(r.checked)} of ${grouped(r.states)} stored states (seed ${r.sample.seed})` : `all ${grouped(r.checked)} stored states`;
  const how = r.sample ? 'by random access' : `${r.threads} thread${r.threads === 1 ? '' : 's'}, ${r.blocks === 1 ? `held whole (${formatBytes(r.memoryBytes)})` : `${r.blocks} blocks of ${formatBytes(r.memoryBytes)}: the table read ${r.blocks} times`}`;
  const lines = [
    `consistency  ${r.path}`,
    `variant      ${r.board}x${r.board}/${r.pieces}, ${r.rules} rules, ${r.kind}${r.distances ? ' with distances' : ' without distances'}`,
    `checked      ${what}; ${how}; ${duration(r.seconds)}`,
    `classes      won ${grouped(c.win)}, lost ${grouped(c.loss)} (terminal ${grouped(c.terminal)}, every move illegal ${grouped(c.allMovesIllegal)}), drawn ${grouped(c.draw)}, illegal ${grouped(c.illegal)}`,
  ];
  if (r.mismatches === 0) {
    lines.push(
      `result       every state checked agrees with the rules and its children's values${
        r.distances ? ' and distances' + (r.sample ? '' : ': a full proof of the table') : ' (without distances: local consistency, not a proof)'
      }`,
    );
    return lines.join('\n');
  }
  lines.push(`result       ${grouped(r.mismatches)} MISMATCH${r.mismatches === 1 ? '' : 'ES'}${r.mismatches > r.first.length ? `; the first ${r.first.length} by index:` : ':'}`, '');
  for (const m of r.first) lines.push(...mismatchText(m));
  return lines.join('\n');
}
