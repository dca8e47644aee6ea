/**
 * The jobs of a cluster solve (coordinator.ts puts them on a BullMQ queue, worker.ts runs them),
 * their payloads, the checks every payload passes before a worker touches a file, and the names
 * of the files they write. A payload names no path: a worker works in its own --store folder and
 * builds every file name there from checked integers.
 *
 * A pass over a store of S shards is two rounds of jobs on the same base generation G (the
 * shard files the manifest names):
 *   - tile (i, j), i <= j: the kernel on shard i alone (i = j) or on the pair, both ways (see
 *     runTile); each shard the tile changed is written to pass-P.gG/tile-i-j.s.bin;
 *   - merge s: shard s OR every tile output for s (values only go from unknown to proven, and a
 *     proof is the same wherever it was made, so the union of sound tables is sound and the
 *     order does not matter), written as the shard's generation G + 1.
 * Init is one job per shard (generation 0, nothing to read). A job run twice (a worker killed,
 * a Redis restart) writes the same or another sound table; its outputs are whole files renamed
 * into place, and merges write under a new name each time, so a late writer never replaces a
 * file the manifest already names.
 */
import { CCheckersError, type RuleMode } from '@ccheckers/core';
import type { Manifest } from '../store/shard-store.js';

export type ClusterJob = InitJob | TileJob | MergeJob;

interface JobBase {
  /** The store's id (manifest.json): a job of another store is refused. */
  store: string;
  board: number;
  pieces: number;
  rules: RuleMode;
  /** 0 for init; the pass the job belongs to. */
  pass: number;
  /** The manifest generation the job reads (0 for init: nothing yet). */
  generation: number;
}

export interface InitJob extends JobBase {
  kind: 'init';
  shard: number;
}

export interface TileJob extends JobBase {
  kind: 'tile';
  shards: [number, number];
  sparse: boolean;
  down: boolean;
}

export interface MergeJob extends JobBase {
  kind: 'merge';
  shard: number;
  /** The tiles that reported changing the shard: their outputs are the merge's inputs, and a
   *  missing one is an error, never a merge of less. */
  inputs: Array<[number, number]>;
}

export interface InitResult {
  kind: 'init';
  file: string;
  crc32: number;
  /** States decided by the init of this shard. */
  proven: number;
}

export interface TileResult {
  kind: 'tile';
  /** Shards the tile changed (each written to the pass folder). */
  changed: number[];
  /** What the kernel proved (a state may be proven by two tiles: merges count exactly). */
  proved: number;
  moveless: number;
}

export interface MergeResult {
  kind: 'merge';
  file: string;
  crc32: number;
  /** States unknown in the base shard and proven in the merged one. */
  newlyProven: number;
  /** Tile outputs merged. */
  inputs: number;
}

/** What every job reports besides its kind's result. */
export interface JobReport {
  backend: string;
  threads: number;
  seconds: number;
  bytesRead: number;
  bytesWritten: number;
}

export type JobResult = (InitResult | TileResult | MergeResult) & JobReport;

/** A payload that no worker may run: refused with this reason, never retried. */
export class JobRefused extends CCheckersError {
  constructor(message: string) {
    super('E_JOB', message);
  }
}

/** A job this worker cannot run now (the store is at another generation than the job, an input
 *  is not visible yet, too little memory here): failed with this reason and retried by BullMQ,
 *  perhaps on another worker. */
export class JobDeferred extends CCheckersError {
  constructor(message: string) {
    super('E_JOB_DEFERRED', message);
  }
}

const FIELDS: Record<ClusterJob['kind'], string[]> = {
  init: ['kind', 'store', 'board', 'pieces', 'rules', 'pass', 'generation', 'shard'],
  tile: ['kind', 'store', 'board', 'pieces', 'rules', 'pass', 'generation', 'shards', 'sparse', 'down'],
  merge: ['kind', 'store', 'board', 'pieces', 'rules', 'pass', 'generation', 'shard', 'inputs'],
};

/**
 * The job in `data`, checked against the store's manifest: a known kind with exactly its fields,
 * this store's id, variant and rules, and shard numbers of this store. Anything else is a
 * JobRefused naming the problem.
 */
export function parseJob(data: unknown, manifest: Manifest): ClusterJob {
  if (data === null || typeof data !== 'object' || Array.isArray(data)) throw new JobRefused('the payload is not an object');
  const d = data as Record<string, unknown>;
  const kind = d.kind;
  if (kind !== 'init' && kind !== 'tile' && kind !== 'merge') throw new JobRefused(`unknown job kind ${JSON.stringify(kind)}`);
  const extra = Object.keys(d).filter((k) => !FIELDS[kind].includes(k));
  if (extra.length > 0) throw new JobRefused(`unexpected field(s) ${extra.join(', ')} in a ${kind} job`);
  if (d.store !== manifest.id) throw new JobRefused(`the job is for store ${JSON.stringify(d.store)}, this worker's store is ${manifest.id}`);
  if (d.board !== manifest.board || d.pieces !== manifest.pieces || d.rules !== manifest.rules) {
    throw new JobRefused(
      `the job is for ${String(d.board)}x${String(d.board)}/${String(d.pieces)} (${String(d.rules)}), the store holds ${manifest.board}x${manifest.board}/${manifest.pieces} (${manifest.rules})`,
    );
  }
  const count = (name: string, value: unknown) => {
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) throw new JobRefused(`${name} must be a whole number >= 0 (got ${JSON.stringify(value)})`);
    return value;
  };
  const shard = (name: string, value: unknown) => {
    const s = count(name, value);
    if (s >= manifest.shards.length) throw new JobRefused(`${name} ${s} is not a shard of this store (it has ${manifest.shards.length})`);
    return s;
  };
  const flag = (name: string, value: unknown) => {
    if (typeof value !== 'boolean') throw new JobRefused(`${name} must be true or false`);
    return value;
  };
  const base = { store: manifest.id!, board: manifest.board, pieces: manifest.pieces, rules: manifest.rules, pass: count('pass', d.pass), generation: count('generation', d.generation) };
  if (kind === 'tile') {
    if (!Array.isArray(d.shards) || d.shards.length !== 2) throw new JobRefused('shards must be a pair [i, j]');
    const i = shard('shards[0]', d.shards[0]);
    const j = shard('shards[1]', d.shards[1]);
    if (i > j) throw new JobRefused(`tile [${i}, ${j}]: the first shard must not come after the second`);
    return { kind, ...base, shards: [i, j], sparse: flag('sparse', d.sparse), down: flag('down', d.down) };
  }
  const s = shard('shard', d.shard);
  if (kind === 'init') return { kind, ...base, shard: s };
  if (!Array.isArray(d.inputs) || d.inputs.length === 0 || d.inputs.length > manifest.shards.length) {
    throw new JobRefused(`inputs must be a list of 1 to ${manifest.shards.length} tiles`);
  }
  const inputs = d.inputs.map((pair: unknown, at): [number, number] => {
    if (!Array.isArray(pair) || pair.length !== 2) throw new JobRefused(`inputs[${at}] must be a pair [i, j]`);
    const i = shard(`inputs[${at}][0]`, pair[0]);
    const j = shard(`inputs[${at}][1]`, pair[1]);
    if (i > j || (i !== s && j !== s)) throw new JobRefused(`inputs[${at}] [${i}, ${j}] is not a tile of shard ${s}`);
    return [i, j];
  });
  return { kind, ...base, shard: s, inputs };
}

/** What names a job: its store, pass, generation and work. */
export type JobKey = Pick<JobBase, 'store' | 'pass' | 'generation'> & ({ kind: 'tile'; shards: [number, number] } | { kind: 'init' | 'merge'; shard: number });

/** The job's id on the queue: one per store, pass, generation and work, so that adding it again
 *  (a coordinator resumed) finds the job there instead of running it twice. */
export function jobId(job: JobKey): string {
  const at = `${job.store}-p${job.pass}-g${job.generation}`;
  return job.kind === 'tile' ? `${at}-tile-${job.shards[0]}-${job.shards[1]}` : `${at}-${job.kind}-${job.shard}`;
}

/** The folder of a pass's tile outputs, inside the store. */
export function passFolder(pass: number, generation: number): string {
  return `pass-${pass}.g${generation}`;
}

export const PASS_FOLDER = /^pass-\d+\.g\d+$/;

export const TILE_OUTPUT_CRC_BYTES = 4;

/** The CRC-32 that ends a tile output. */
export function tileOutputCrc(crc: number): Uint8Array {
  const bytes = new Uint8Array(TILE_OUTPUT_CRC_BYTES);
  new DataView(bytes.buffer).setUint32(0, crc, true);
  return bytes;
}

/** A tile's output for one of its shards, relative to the pass folder: the shard's bytes and then
 *  their CRC-32 (TILE_OUTPUT_CRC_BYTES, little-endian), which the merge checks: every table a
 *  solve reads is checked, and a run of the tile again writes a file with its own CRC. */
export function tileOutput(tile: [number, number], shard: number): string {
  return `tile-${tile[0]}-${tile[1]}.${shard}.bin`;
}


/** A shard file written by a worker: generation and a token of the attempt that wrote it. */
export function workerShardFile(shard: number, generation: number, attempt: string): string {
  return `shard-${String(shard).padStart(5, '0')}.g${generation}.${attempt}.bin`;
}
