/**
 * `ccheckers convert FROM TO`: a sharded store (a folder) to a single database file, or a
 * complete database file to a new store, streamed in the memory of one shard.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, readdirSync, realpathSync, renameSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ShardStore, checkOutputPath, exportStore, importDatabase, isStore, openForReading, readHeader } from '@ccheckers/solver';
import { UsageError } from '../options.js';

export interface ConvertCommandOptions {
  shards?: string;
  force?: boolean;
}

export function convertCommand(from: string, to: string, o: ConvertCommandOptions): number {
  const source = resolve(from);
  const target = resolve(to);
  // Checked first, before the checks of each direction: their messages (--store, --force) would
  // be about another mistake than this one.
  if (source === target || (existsSync(source) && existsSync(target) && realpathSync(source) === realpathSync(target))) {
    throw new UsageError(`the source and the target are the same path (${source}): convert writes a new file or store beside it`);
  }
  if (isStore(source)) {
    if (o.shards !== undefined) throw new UsageError('--shards applies when the target is a store');
    checkOutputPath(target, o.force === true);
    exportStore(source, target, { force: o.force === true });
    process.stderr.write(`wrote ${target} from the store ${source}\n`);
    return 0;
  }
  const shards = o.shards === undefined ? undefined : Number(o.shards);
  if (shards !== undefined && (!/^\d+$/.test(o.shards!.trim()) || shards < 1)) throw new UsageError(`--shards must be a positive integer (got "${o.shards}")`);
  if (o.force) throw new UsageError('--force replaces database files only; a store is made in an absent or empty folder');
  ShardStore.checkPath(target, false, 'target');
  const options = shards === undefined ? {} : { shards };
  let store: ShardStore;
  if (existsSync(target)) {
    // A folder the user made (empty, or with a killed solve's leftovers; perhaps a mount point):
    // the store is made in it, as a rename could not replace it; what it made goes if it fails.
    const before = new Set(readdirSync(target));
    try {
      store = importDatabase(source, target, options);
    } catch (e) {
      for (const f of readdirSync(target)) if (!before.has(f)) rmSync(join(target, f), { recursive: true, force: true });
      throw e;
    }
  } else {
    // Made beside the target, under a name no other process takes, and renamed onto it once
    // complete: a convert killed halfway leaves no half store at the target.
    const building = `${target}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
    try {
      store = importDatabase(source, building, options);
      renameSync(building, target);
    } catch (e) {
      rmSync(building, { recursive: true, force: true });
      throw e;
    }
  }
  process.stderr.write(`made the store ${target} (${store.layout.shards.length} shard(s)) from ${source}\n`);
  // The header alone (importDatabase has checked the file): reopening it as a database would
  // read and checksum a small one whole again.
  const fd = openForReading(source);
  const { distanceBytes } = (() => {
    try {
      return readHeader(source, fd).header;
    } finally {
      closeSync(fd);
    }
  })();
  if (distanceBytes > 0) process.stderr.write(`${source}'s distance table (${distanceBytes} bytes) was left out: a store keeps the values alone\n`);
  return 0;
}
