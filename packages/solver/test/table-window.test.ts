/**
 * Table windows (core's TableWindow), on every backend: init of a part equals the same bytes of
 * the whole table's init; passes over two parts reach the in-memory fixpoint byte for byte; parts
 * that do not start on a byte, overlap or lack bytes are refused.
 */
import { StateSpace, type TableWindow, variant } from '@ccheckers/core';
import { describe, expect, it } from 'vitest';
import { availableBackends, shardLayout } from '../src/index.js';

const backends = await availableBackends();
const v = variant(7, 2);
const space = new StateSpace(v);

describe.each(backends.map((b) => [b.name, b] as const))('table windows on %s', (_name, backend) => {
  const kernel = backend.solverKernel(v, 'clean');
  const whole = new Uint8Array(space.tableBytes);
  kernel.init(whole, 0, space.groups);
  const initial = whole.slice();
  for (let changed = 1; changed > 0; ) {
    const s = kernel.pass(whole, 0, kernel.passUnits);
    changed = s.wins + s.losses;
  }

  it('init of a shard writes the bytes the whole init writes there', () => {
    for (const shard of shardLayout(space, 5).shards) {
      const part = new Uint8Array(shard.bytes);
      kernel.init(part, shard.firstGroup, shard.firstGroup + shard.groups, 1, shard.firstGroup);
      expect(part).toEqual(initial.subarray(shard.firstByte, shard.firstByte + shard.bytes));
    }
  });

  it('passes over pairs of parts reach the whole table fixpoint', () => {
    const table = initial.slice();
    const parts = shardLayout(space, 3).shards.map((s) => ({ ...s, bytes: table.subarray(s.firstByte, s.firstByte + s.bytes) }));
    for (let changed = 1; changed > 0; ) {
      changed = 0;
      for (const x of parts) {
        const own: TableWindow = { firstGroup: x.firstGroup, groups: x.groups };
        const s = kernel.pass(x.bytes, 0, kernel.passUnits, { window: own });
        changed += s.wins + s.losses;
        for (const y of parts.filter((p) => p.index > x.index)) {
          const pair: TableWindow = { ...own, other: y.bytes, otherFirstGroup: y.firstGroup, otherGroups: y.groups, crossOnly: true };
          const t = kernel.pass(x.bytes, 0, kernel.passUnits, { window: pair });
          changed += t.wins + t.losses;
        }
      }
    }
    expect(table).toEqual(whole);
  });

  it('refuses parts off a byte boundary, overlapping, or short of bytes', () => {
    const per = space.p2Placements; // 7x7/2: odd, so group 1 starts inside a byte
    expect(per % 2).toBe(1);
    const table = new Uint8Array(space.tableBytes);
    expect(() => kernel.pass(table, 0, 1, { window: { firstGroup: 1, groups: 4 } })).toThrow(/does not start on a byte/);
    expect(() => kernel.pass(table, 0, 1, { window: { firstGroup: 0, groups: 8, other: table, otherFirstGroup: 4, otherGroups: 4 } })).toThrow(/overlap/);
    expect(() => kernel.pass(new Uint8Array(10), 0, 1, { window: { firstGroup: 0, groups: 8 } })).toThrow(/bytes/);
  });
});
