/**
 * What the consistency check reads (consistency.ts): a complete database file or a complete store,
 * in runs of whole groups (a database's body and distance checksums taken on the way), or by
 * random access for samples and explanations.
 */
import { closeSync, statSync } from 'node:fs';
import { StateSpace, variant } from '@ccheckers/core';
import { crc32Of } from '../crc.js';
import { DatabaseError, type DatabaseHeader, HEADER_BYTES, checkPartCrc, openForReading, readAll, readHeader } from '../database.js';
import { type StoredValues, openDatabase } from '../database-file.js';
import { ShardStore } from '../store/shard-store.js';
import { StoreValues } from '../store/store-values.js';

/** A table read in runs of groups (a multiple of 4 each, so that each starts on a byte). */
export interface TableSource {
  readonly header: DatabaseHeader;
  readonly kind: 'database' | 'store';
  readonly hasDistances: boolean;
  /** Groups per unit of reading (a store's shard; for a database file, see unitGroupsFor). */
  unitGroupsFor(budget: number, overhead: number): number;
  /** Reads groups [first, first + groups) into `values` (and `distances`), `first` a multiple of
   *  unitGroups, `groups` whole units (or up to the end). */
  read(first: number, groups: number, values: Uint8Array, distances?: Uint8Array): void;
  /** Random access to the same values (sample mode, explanations). */
  randomAccess(): StoredValues & { close(): void };
  /** After the blocks were read once each, in order, covering the table: checks what a whole
   *  read can check (a database file's body and distance checksums). */
  finish(): void;
  close(): void;
}

class DatabaseSource implements TableSource {
  readonly kind = 'database';
  readonly header: DatabaseHeader;
  readonly hasDistances: boolean;
  private readonly fd: number;
  private readonly per: number;
  private bodyCrc = 0;
  private distanceCrc = 0;
  private readEnd = 0;

  constructor(
    readonly path: string,
    space: StateSpace,
  ) {
    this.fd = openForReading(path);
    try {
      this.header = readHeader(path, this.fd).header;
    } catch (e) {
      closeSync(this.fd);
      throw e;
    }
    this.hasDistances = this.header.distanceBytes > 0;
    this.per = space.p2Placements;
  }

  /** Units of 16 MiB, or an eighth of the budget where that is less: a block holds several. */
  unitGroupsFor(budget: number, overhead: number): number {
    const perGroup = this.per * (this.hasDistances ? 1.25 : 0.25);
    return Math.max(4, 4 * Math.floor(Math.min(2 ** 24, (budget - overhead) / 8) / perGroup / 4));
  }

  read(first: number, groups: number, values: Uint8Array, distances?: Uint8Array): void {
    const per = this.per;
    const firstByte = (first * per) / 4;
    const bytes = Math.ceil(((first + groups) * per) / 4) - firstByte;
    const v = values.subarray(0, bytes);
    readAll(this.fd, v, HEADER_BYTES + firstByte);
    const sequential = firstByte === this.readEnd;
    if (sequential) {
      this.bodyCrc = crc32Of(v, this.bodyCrc);
      this.readEnd = firstByte + bytes;
    }
    if (distances) {
      const d = distances.subarray(0, groups * per);
      readAll(this.fd, d, HEADER_BYTES + this.header.bodyBytes + first * per);
      if (sequential) this.distanceCrc = crc32Of(d, this.distanceCrc);
    }
  }

  finish(): void {
    if (this.readEnd !== this.header.bodyBytes) return;
    checkPartCrc(this.path, 'body', this.bodyCrc, this.header.bodyCrc32);
    if (this.hasDistances) checkPartCrc(this.path, 'distance table', this.distanceCrc, this.header.distanceCrc32);
  }

  randomAccess() {
    return openDatabase(this.path);
  }

  close(): void {
    closeSync(this.fd);
  }
}

class StoreSource implements TableSource {
  readonly kind = 'store';
  readonly header: DatabaseHeader;
  readonly hasDistances = false;

  constructor(private readonly store: ShardStore) {
    if (store.manifest.stage !== 'complete') {
      throw new DatabaseError(store.dir, `holds an unfinished solve (${store.manifest.stage}): only a complete store can be checked for consistency`);
    }
    this.header = store.header();
  }

  unitGroupsFor(): number {
    return this.store.layout.groupsPerShard;
  }

  read(first: number, groups: number, values: Uint8Array): void {
    const { layout } = this.store;
    const base = layout.shards[first / layout.groupsPerShard]!.firstByte;
    for (const shard of layout.shards) {
      if (shard.firstGroup < first || shard.firstGroup >= first + groups) continue;
      this.store.loadShard(shard.index, values.subarray(shard.firstByte - base)); // checks its CRC-32
    }
  }

  finish(): void {}

  randomAccess() {
    return new StoreValues(this.store);
  }

  close(): void {}
}

export function openSource(path: string): TableSource {
  let isDir = false;
  try {
    isDir = statSync(path).isDirectory();
  } catch {}
  if (isDir) {
    const store = ShardStore.open(path);
    return new StoreSource(store);
  }
  const fd = openForReading(path);
  let header: DatabaseHeader;
  try {
    header = readHeader(path, fd).header;
  } finally {
    closeSync(fd);
  }
  if (header.stage !== 'complete') {
    throw new DatabaseError(path, `is a ${header.stage} of an unfinished solve: its unknown states are not yet draws, so only a complete database can be checked for consistency`);
  }
  return new DatabaseSource(path, new StateSpace(variant(header.board, header.pieces)));
}
