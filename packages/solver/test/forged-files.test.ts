/**
 * Files forged with valid checksums (a checksum proves a file is what was written, not that a
 * ccheckers wrote it): a database header or pass log, and a store manifest, whose fields are out
 * of range or of the wrong type, are refused with a message naming the field, not a TypeError.
 * And a store's folder is its own: no output goes into it, and what a solve there removes is its
 * own kind of file only.
 */
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { variant } from '@ccheckers/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DatabaseError,
  HEADER_BYTES,
  MANIFEST,
  type Manifest,
  ShardStore,
  availableBackends,
  checkDatabase,
  checkOutputPath,
  importDatabase,
  manifestText,
  openDatabase,
  readDatabase,
  solve,
} from '../src/index.js';

const dir = mkdtempSync(join(tmpdir(), 'ccheckers-forged-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const good = join(dir, 'good.ccdb');

beforeAll(async () => {
  const [backend] = await availableBackends();
  await solve({ variant: variant(7, 1), rules: 'clean', backend: backend!, threads: 1, out: good });
});

/** The good database with its header edited by `edit` (then resealed), or its pass log replaced
 *  by `log` (its length and checksum rewritten to match). */
function forged(name: string, forge: { edit?: (header: Buffer) => void; log?: string }): string {
  let bytes = readFileSync(good);
  const logBytes = bytes.readUInt32LE(100);
  if (forge.log !== undefined) {
    const log = Buffer.from(forge.log, 'utf8');
    bytes = Buffer.concat([bytes.subarray(0, bytes.length - logBytes), log]);
    bytes.writeUInt32LE(log.length, 100);
    bytes.writeUInt32LE(crc32(log), 104);
  }
  forge.edit?.(bytes);
  bytes.writeUInt32LE(crc32(bytes.subarray(0, 124)), 124);
  const path = join(dir, name);
  writeFileSync(path, bytes);
  return path;
}

/** Every reader of a database refuses `path` with a DatabaseError matching `message`. */
function refusedEverywhere(path: string, message: RegExp): void {
  expect(() => readDatabase(path)).toThrow(DatabaseError);
  expect(() => readDatabase(path)).toThrow(message);
  expect(() => openDatabase(path)).toThrow(message);
  expect(() => checkDatabase(path, { recount: true })).toThrow(message);
  expect(() => importDatabase(path, join(dir, `store-of-${path.split('/').at(-1)}`))).toThrow(message);
}

describe('a database forged with valid checksums', () => {
  it('is read as it was written when nothing is forged (the forger itself changes nothing)', () => {
    const same = forged('same.ccdb', { log: readFileSync(good).subarray(-readFileSync(good).readUInt32LE(100)).toString('utf8') });
    expect(readFileSync(same)).toEqual(readFileSync(good));
    expect(readDatabase(same).header.passLog.length).toBeGreaterThan(0);
  });

  it('with a start value outside 0-3 is refused, naming it', () => {
    for (const start of [4, 7, 255]) refusedEverywhere(forged(`start-${start}.ccdb`, { edit: (h) => h.writeUInt8(start, 21) }), new RegExp(`unknown start value ${start} in header`));
  });

  it('with seconds that are not a time is refused', () => {
    refusedEverywhere(forged('seconds-nan.ccdb', { edit: (h) => h.writeDoubleLE(Number.NaN, 88) }), /header says NaN seconds/);
    refusedEverywhere(forged('seconds-negative.ccdb', { edit: (h) => h.writeDoubleLE(-1, 88) }), /header says -1 seconds/);
  });

  it('with counts past 2^53, or positions other than its variant\'s, is refused', () => {
    refusedEverywhere(forged('wins-2-60.ccdb', { edit: (h) => h.writeBigUInt64LE(2n ** 60n, 56) }), /header says 1152921504606846976 P1 wins, past what is counted exactly \(2\^53\)/);
    // Positions and draws both 2 more: the counts add up, to a game 7x7/1 is not.
    const more = forged('positions-more.ccdb', {
      edit: (h) => {
        h.writeBigUInt64LE(h.readBigUInt64LE(48) + 2n, 48);
        h.writeBigUInt64LE(h.readBigUInt64LE(72) + 2n, 72);
      },
    });
    refusedEverywhere(more, /inconsistent counts: 4706 positions, where 7x7\/1 has 4704/);
  });

  it('with a pass log that is not JSON, or not a list of passes, is refused, naming the record and field', () => {
    const cases: Array<[string, RegExp]> = [
      ['not json', /corrupt pass log: not JSON/],
      ['{"a":1}', /corrupt pass log: not a list of passes/],
      ['[1]', /pass record 0 is not an object/],
      ['[{"pass":1,"proven":2,"newlyProven":2}]', /pass record 0 has no seconds/],
      ['[{"pass":1,"proven":"2","newlyProven":2,"seconds":0}]', /pass record 0: proven is "2"/],
      ['[{"pass":1,"proven":2,"newlyProven":2,"seconds":0},{"pass":2,"proven":2,"newlyProven":-1,"seconds":0}]', /pass record 1: newlyProven is -1/],
      ['[{"pass":1,"proven":2,"newlyProven":2,"seconds":0,"sparse":1}]', /pass record 0: sparse is 1/],
      ['[{"pass":1,"proven":2,"newlyProven":2,"seconds":0,"listed":"yes"}]', /pass record 0: listed is "yes"/],
      ['[{"pass":1,"proven":2,"newlyProven":2,"seconds":0,"sparse":true,"listed":true}]', /pass record 0 is both sparse and listed/],
    ];
    for (const [i, [log, message]] of cases.entries()) refusedEverywhere(forged(`log-${i}.ccdb`, { log }), message);
  });

  it('with a pass count other than its pass log\'s records is refused (an empty log, from before it, says nothing)', () => {
    expect(readDatabase(forged('log-empty.ccdb', { log: '[]' })).header.passLog).toEqual([]);
    for (const passes of [0, 4294967295]) refusedEverywhere(forged(`passes-${passes}.ccdb`, { edit: (h) => h.writeUInt32LE(passes, 24) }), new RegExp(`corrupt pass log: \\d+ record\\(s\\) for the header's ${passes} passes`));
  });
});

describe('a store manifest forged with a valid checksum', () => {
  const made = () => {
    const store = join(dir, `store-${Math.random().toString(16).slice(2)}`);
    importDatabase(good, store);
    return store;
  };
  /** The store's manifest edited by `edit` and signed again as the solver signs it. */
  const edited = (edit: (m: Record<string, unknown>) => void) => {
    const store = made();
    const m = JSON.parse(readFileSync(join(store, MANIFEST), 'utf8')) as Record<string, unknown>;
    delete m.crc32;
    edit(m);
    writeFileSync(join(store, MANIFEST), manifestText(m as unknown as Manifest));
    return store;
  };

  it('opens when nothing is forged (the forger signs as the solver does)', () => {
    expect(ShardStore.open(edited(() => {})).manifest.stage).toBe('complete');
  });

  it('with fields of the wrong type or out of range is refused, naming the field', () => {
    const cases: Array<[(m: Record<string, unknown>) => void, RegExp]> = [
      [(m) => (m.seconds = '1.5'), /corrupt manifest: seconds 1\.5/],
      [(m) => (m.seconds = -2), /corrupt manifest: seconds -2/],
      [(m) => (m.generation = 1.5), /corrupt manifest: generation 1\.5/],
      [(m) => (m.passLog = 'x'), /corrupt manifest: pass log: not a list of passes/],
      [(m) => ((m.passLog as Array<Record<string, unknown>>)[0]!.seconds = 'soon'), /corrupt manifest: pass log: pass record 0: seconds is "soon"/],
      [(m) => (m.bandCount = 1e300), /corrupt manifest: band count 1e\+300/],
      [(m) => (m.bandWorkers = 0), /corrupt manifest: band workers 0/],
      [(m) => (m.proven = -1), /corrupt manifest: proven -1/],
      [(m) => (m.passes = 'both'), /corrupt manifest: passes both/],
    ];
    for (const [edit, message] of cases) {
      const store = edited(edit);
      expect(() => ShardStore.open(store)).toThrow(DatabaseError);
      expect(() => ShardStore.open(store)).toThrow(message);
    }
  });
});

describe("a store's folder", () => {
  it('takes no output: a database or a new store in it is refused, even with --force', () => {
    const store = join(dir, 'folder-store');
    importDatabase(good, store);
    for (const force of [false, true]) {
      expect(() => checkOutputPath(join(store, 'band-00002.g9.12345678.bin'), force)).toThrow(/is in .*folder-store, a ccheckers store \(it holds manifest\.json\)/);
      expect(() => checkOutputPath(join(store, 'x.ccdb'), force)).toThrow(/a ccheckers store/);
    }
    expect(() => ShardStore.checkPath(join(store, 'msg-p1-b00002.12345678.msg'), false)).toThrow(/a ccheckers store/);
    expect(() => importDatabase(good, join(store, 'inner'))).toThrow(/a ccheckers store/);
    // Beside a store, or in a folder that merely sits inside one, outputs are as anywhere.
    expect(() => checkOutputPath(join(dir, 'beside.ccdb'), false)).not.toThrow();
    expect(readdirSync(store).sort()).toEqual(readdirSync(store).filter((f) => f === MANIFEST || f.startsWith('shard-')).sort());
  });

  it('loses no folder or link to a solve that clears leftovers: only regular files of its own names go', () => {
    const store = join(dir, 'leftover-store');
    importDatabase(good, store);
    mkdirSync(join(store, 'msg-p1-b00002.12345678.msg'));
    writeFileSync(join(store, 'msg-p1-b00002.12345678.msg', 'inside'), 'kept');
    writeFileSync(join(store, 'band-00002.g9.12345678.bin'), 'a leftover of a crash');
    writeFileSync(join(store, 'notes.txt'), 'not a name of the store');
    const removed = ShardStore.open(store).removeLeftovers();
    expect(removed).toEqual(['band-00002.g9.12345678.bin']);
    expect(readFileSync(join(store, 'msg-p1-b00002.12345678.msg', 'inside'), 'utf8')).toBe('kept');
    expect(readFileSync(join(store, 'notes.txt'), 'utf8')).toBe('not a name of the store');
  });
});
