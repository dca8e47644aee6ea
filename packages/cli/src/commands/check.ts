/**
 * `ccheckers check`: verifies every checksum of a database by streaming it (any size, constant
 * memory), optionally recounts the results from the body, and with --fix rewrites a header whose
 * counts are wrong (databases written before the 64-bit fix of 7x7/4 carried such counts).
 */
import { type CheckReport, type DistanceRecount, type StoreCheckReport, checkDatabase, checkStore, hex, isStore, rewriteCounts } from '@ccheckers/solver';
import { UsageError } from '../options.js';
import { consistencyCommand } from './check-consistency.js';
import { grouped, table } from '../ui/format.js';
import { progressSink } from '../ui/progress.js';

export interface CheckCommandOptions {
  db: string;
  recount?: boolean;
  fix?: boolean;
  json?: boolean;
  quiet?: boolean;
  /** --consistency (check-consistency.ts), with --sample N, --threads N, --memory SIZE. */
  consistency?: boolean;
  sample?: string;
  threads?: string;
  memory?: string;
}

const START = ['draw', 'p2-win', 'p1-win', 'illegal'];
const FIELD_NAMES: Record<string, string> = { positions: 'positions', p1Wins: 'P1 wins', p2Wins: 'P2 wins', draws: 'draws', illegal: 'illegal', startValue: 'start' };
const COUNT_FIELDS = ['positions', 'p1Wins', 'p2Wins', 'draws', 'illegal'] as const;
/** A stored state's 2-bit value, named. */
const VALUE_NAMES = ['draw', 'loss', 'win', 'illegal'];

/** 0: every checksum matches (and the counts, when recounted, or they were fixed); 1: something
 *  does not, or a store's manifest has none. */
export function checkCommand(o: CheckCommandOptions): number | Promise<number> {
  if (o.consistency) return consistencyCommand(o);
  if (o.sample !== undefined || o.threads !== undefined || o.memory !== undefined) throw new UsageError('--sample, --threads and --memory go with --consistency');
  const recount = o.recount === true || o.fix === true;
  const progress = progressSink(process.stderr, o.quiet || o.json);
  if (isStore(o.db)) {
    // --fix: the manifest's results rewritten from the recount, where every shard is sound.
    const report = checkStore(o.db, { recount, fix: o.fix === true, onProgress: (f) => progress.update('check', f) });
    progress.clear();
    process.stdout.write(o.json ? `${JSON.stringify(storeJson(report))}\n` : `${storeText(report)}\n`);
    // A manifest without its own checksum (an earlier version's, or one edited to look like it)
    // records the shards' checksums and the results unprotected: not a pass until --fix records one.
    const ok =
      report.shards.every((c) => c.ok) &&
      (report.fixed === true || ((report.table?.ok ?? true) && (report.recount?.manifestAgrees ?? true) && report.manifestChecksum === 'ok'));
    return ok ? 0 : 1;
  }
  const report = checkDatabase(o.db, { recount, onProgress: (f) => progress.update('check', f) });
  progress.clear();
  const checksumsOk = report.checksums.every((c) => c.ok);
  // A distance that does not fit its value: the table itself is wrong, which no header can mend.
  const distancesOk = (report.recount?.distances?.wrong ?? 0) === 0;
  let fixed = false;
  if (o.fix && report.recount && !report.recount.headerAgrees) {
    if (!checksumsOk) {
      process.stderr.write(`ccheckers: not fixing ${o.db}: a checksum does not match, so the body itself cannot be trusted\n`);
    } else if (!distancesOk) {
      process.stderr.write(`ccheckers: not fixing ${o.db}: its distance table is wrong (see below), so the header cannot be made to agree with it\n`);
    } else {
      rewriteCounts(o.db, report.recount.counts, report.recount.startValue, report.recount.maxDistance);
      fixed = true;
    }
  }
  const countsOk = !report.recount || report.recount.headerAgrees || fixed;
  if (o.json) {
    process.stdout.write(`${JSON.stringify(jsonReport(report, fixed))}\n`);
  } else {
    process.stdout.write(`${textReport(report, fixed)}\n`);
  }
  return checksumsOk && countsOk && distancesOk ? 0 : 1;
}

/** A recount's distance findings, in words. */
function distanceFindings(d: DistanceRecount): string {
  if (d.wrong === 0) return 'distances every one fits its state\'s value';
  const f = d.first!;
  return `distances WRONG: ${grouped(d.wrong)} state(s) whose distance does not fit their value or the header's farthest distance (the first: stored state ${f.index}, ${VALUE_NAMES[f.value]} with the distance ${f.distance}); the file was damaged or forged (check --consistency tells more), so solve the variant again`;
}

function jsonReport(r: CheckReport, fixed: boolean) {
  const h = r.header;
  return {
    path: r.path,
    board: h.board,
    pieces: h.pieces,
    rules: h.rules,
    stage: h.stage,
    checksums: r.checksums.map((c) => ({ ...c, expected: hex(c.expected), actual: hex(c.actual) })),
    ...(r.recount
      ? {
          recount: {
            ...r.recount.counts,
            start: START[r.recount.startValue],
            ...(r.recount.maxDistance !== undefined ? { maxDistance: r.recount.maxDistance } : {}),
            ...(r.recount.distances ? { wrongDistances: r.recount.distances.wrong, ...(r.recount.distances.first ? { firstWrongDistance: { ...r.recount.distances.first, value: VALUE_NAMES[r.recount.distances.first.value] } } : {}) } : {}),
            headerAgrees: r.recount.headerAgrees,
            header: { ...Object.fromEntries(COUNT_FIELDS.map((f) => [f, h[f]])), start: START[h.startValue], ...(r.recount.maxDistance !== undefined ? { maxDistance: h.maxDistance } : {}) },
            fixed,
          },
        }
      : {}),
  };
}

function textReport(r: CheckReport, fixed: boolean): string {
  const h = r.header;
  const lines = [`database  ${r.path}`, `variant   ${h.board}x${h.board}/${h.pieces}, ${h.rules} rules, ${h.stage}`, ''];
  lines.push(
    table(
      ['part', 'bytes', 'checksum', 'recorded', 'result'],
      r.checksums.map((c) => [c.part, grouped(c.bytes), hex(c.actual), hex(c.expected), c.ok ? 'ok' : 'MISMATCH']),
    ),
  );
  if (r.recount) {
    const rc = r.recount;
    lines.push('');
    if (h.stage !== 'complete') {
      // A checkpoint's header records no counts: show what its table holds so far.
      const rows = COUNT_FIELDS.map((f) => [f, grouped(rc.counts[f])]);
      lines.push(table(['count', 'in the table so far'], rows), '', `counts    not recorded in a file at stage ${h.stage} (an unfinished solve)`);
      return lines.join('\n');
    }
    const rows = COUNT_FIELDS.map((f) => [f, grouped(h[f]), grouped(rc.counts[f]), h[f] === rc.counts[f] ? 'ok' : 'WRONG']);
    rows.push(['start', START[h.startValue]!, START[rc.startValue]!, h.startValue === rc.startValue ? 'ok' : 'WRONG']);
    if (rc.maxDistance !== undefined) rows.push(['farthest (plies)', String(h.maxDistance), String(rc.maxDistance), h.maxDistance === rc.maxDistance ? 'ok' : 'WRONG']);
    lines.push(table(['count', 'header', 'recounted', 'result'], rows));
    lines.push('');
    if (rc.headerAgrees) lines.push('counts    the header agrees with the body');
    else if (fixed) lines.push('counts    the header was wrong and has been rewritten with the recounted values');
    else if (rc.distances && rc.distances.wrong > 0) lines.push('counts    the header disagrees with the body');
    else lines.push('counts    the header disagrees with the body: run again with --fix to rewrite it');
    if (rc.distances) lines.push(distanceFindings(rc.distances));
  }
  return lines.join('\n');
}

function storeJson(r: StoreCheckReport) {
  return {
    path: r.path,
    stage: r.stage,
    manifest: { checksum: r.manifestChecksum },
    shards: r.shards.map((c) => ({ ...c, expected: hex(c.expected), actual: hex(c.actual) })),
    ...(r.table ? { table: { ...r.table, expected: hex(r.table.expected), actual: hex(r.table.actual) } } : {}),
    ...(r.recount ? { recount: { ...r.recount.counts, start: START[r.recount.startValue], manifestAgrees: r.recount.manifestAgrees, manifestDiffers: r.recount.manifestDiffers.map((d) => (d.field === 'startValue' ? { ...d, field: 'start', manifest: START[d.manifest], recounted: START[d.recounted] } : d)) } } : {}),
    ...(r.recountSkipped ? { recountSkipped: r.recountSkipped } : {}),
    ...(r.fixed !== undefined ? { fixed: r.fixed } : {}),
    ...(r.fixSkipped ? { fixSkipped: r.fixSkipped } : {}),
  };
}

function storeText(r: StoreCheckReport): string {
  const checksum =
    r.manifestChecksum === 'ok' || r.fixed
      ? 'checksum ok'
      : 'NO CHECKSUM (written by an earlier ccheckers, or edited): what it records is not covered by one; check --fix records one where the shards are sound';
  const lines = [`store     ${r.path}`, `stage     ${r.stage}`, `manifest  ${checksum}`, ''];
  lines.push(
    table(
      [r.shards.some((c) => c.kind !== 'shard') ? 'part' : 'shard', 'file', 'bytes', 'checksum', 'recorded', 'result'],
      // A band solve under way has band files (numbered as their bands) and message files.
      r.shards.map((c) => [c.kind === 'messages' ? 'messages' : c.kind === 'band' ? `band ${c.shard}` : String(c.shard), c.file || '-', grouped(c.bytes), hex(c.actual), hex(c.expected), c.ok ? 'ok' : (c.problem ?? 'MISMATCH')]),
    ),
  );
  if (r.table) lines.push('', `table     CRC-32 ${hex(r.table.actual)}, manifest ${hex(r.table.expected)}: ${r.table.ok ? 'ok' : 'MISMATCH'}`);
  if (r.recount) {
    const c = r.recount.counts;
    lines.push(
      `counts    positions ${grouped(c.positions)}, P1 wins ${grouped(c.p1Wins)}, P2 wins ${grouped(c.p2Wins)}, draws ${grouped(c.draws)}, illegal ${grouped(c.illegal)}, start ${START[r.recount.startValue]}`,
      `          ${
        r.recount.manifestAgrees
          ? 'the manifest agrees with the shards'
          : `the manifest DISAGREES with the shards: it records ${r.recount.manifestDiffers.map((d) => `${FIELD_NAMES[d.field]} ${d.field === 'startValue' ? START[d.manifest] : grouped(d.manifest)}`).join(', ')}`
      }`,
    );
  }
  if (r.recountSkipped) lines.push(`counts    not recounted: ${r.recountSkipped}`);
  if (r.fixed) lines.push(`fixed     the manifest's results were rewritten from the shards${r.manifestChecksum === 'none' ? ', its checksum recorded' : ''}`);
  if (r.fixSkipped) lines.push(`fix       not made: ${r.fixSkipped}`);
  return lines.join('\n');
}
