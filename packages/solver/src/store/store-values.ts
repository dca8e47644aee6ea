/**
 * A complete sharded store (shard-store.ts) read by random access, a page at a time: the
 * StoredValues of queries, show, play and serve.
 */
import { closeSync, fstatSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { NO_DISTANCE, readValue, stateByte, valueInByte } from '@ccheckers/core';
import { type DatabaseHeader, DatabaseError } from '../database.js';
import { type StoredValues, VERIFY_ON_OPEN_BYTES } from '../database-file.js';
import { type Shard, shardOfGroup } from './layout.js';
import { MANIFEST } from './manifest.js';
import type { ShardStore } from './shard-store.js';
import { openStoreFile, refuseIrregular } from './store-files.js';

const PAGE_BYTES = 4096;
const CACHED_PAGES = 256;

/**
 * A complete store read by random access (StoredValues for queries, show, play, serve): the
 * manifest is checked on open; each question reads the 4 KiB page of the shard that holds it
 * (a few stay cached). `ccheckers check --db DIR` verifies the shards' checksums. A table of up to
 * VERIFY_ON_OPEN_BYTES is read whole on open, every shard checked, as a small database file is.
 */
export class StoreValues implements StoredValues {
  readonly header: DatabaseHeader;
  readonly hasDistances = false;
  private readonly fds = new Map<number, number>();
  private readonly pages = new Map<number, Uint8Array>();
  /** The table, where it was read whole on open (not named `table`: SolvedGame takes an object
   *  with a table for a database in memory). */
  private readonly whole: Uint8Array | undefined;

  /** `wholeUpTo`: read the table whole on open up to this size (tests read small ones by page). */
  constructor(
    readonly store: ShardStore,
    { wholeUpTo = VERIFY_ON_OPEN_BYTES }: { wholeUpTo?: number } = {},
  ) {
    if (store.manifest.stage !== 'complete') {
      throw new DatabaseError(join(store.dir, MANIFEST), `holds an unfinished solve (${store.manifest.stage}, ${store.manifest.passLog.length} passes): finish it with solve --resume`);
    }
    this.header = store.header();
    if (store.manifest.tableBytes <= wholeUpTo) {
      const table = new Uint8Array(store.manifest.tableBytes);
      for (const shard of store.layout.shards) store.loadShard(shard.index, table.subarray(shard.firstByte));
      this.whole = table;
    }
  }

  /** Whether answers come from disk (a large store), not from memory. */
  get readsFromDisk(): boolean {
    return this.whole === undefined;
  }

  heldTable(): Uint8Array | undefined {
    return this.whole;
  }

  value(index: number): number {
    if (this.whole) return readValue(this.whole, index);
    const { store } = this;
    const shard = shardOfGroup(store.layout, Math.floor(index / store.space.p2Placements));
    const local = stateByte(index) - shard.firstByte;
    const pageKey = shard.index * 2 ** 32 + Math.floor(local / PAGE_BYTES); // a shard is under 2^44 bytes
    let page = this.pages.get(pageKey);
    if (page) {
      this.pages.delete(pageKey);
    } else {
      page = this.readPage(shard, Math.floor(local / PAGE_BYTES));
      if (this.pages.size >= CACHED_PAGES) this.pages.delete(this.pages.keys().next().value!);
    }
    this.pages.set(pageKey, page);
    return valueInByte(page[local % PAGE_BYTES]!, index);
  }

  distance(): number {
    return NO_DISTANCE; // stores keep no distance tables
  }

  close(): void {
    for (const fd of this.fds.values()) closeSync(fd);
    this.fds.clear();
  }

  private readPage(shard: Shard, page: number): Uint8Array {
    const path = this.store.shardPath(shard.index);
    let fd = this.fds.get(shard.index);
    if (fd === undefined) {
      refuseIrregular(path, `shard ${shard.index}`);
      try {
        fd = openStoreFile(path, `shard ${shard.index}`);
      } catch (e) {
        if (e instanceof DatabaseError) throw e;
        throw new DatabaseError(path, `shard ${shard.index} is missing or unreadable (${(e as NodeJS.ErrnoException).code ?? String(e)})`);
      }
      const size = fstatSync(fd).size;
      if (size !== shard.bytes) {
        closeSync(fd);
        throw new DatabaseError(path, `shard ${shard.index} has ${size} bytes, the manifest records ${shard.bytes}`);
      }
      this.fds.set(shard.index, fd);
    }
    const bytes = new Uint8Array(PAGE_BYTES);
    const want = Math.min(PAGE_BYTES, shard.bytes - page * PAGE_BYTES);
    if (want <= 0 || readSync(fd, bytes, 0, want, page * PAGE_BYTES) !== want) {
      throw new DatabaseError(path, 'the shard is shorter than when it was opened (changed while in use?)');
    }
    return bytes;
  }
}
