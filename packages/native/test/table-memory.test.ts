/**
 * Tables in the addon's memory (src/table_memory.hpp, allocateTable): one mapping aligned to 2 MiB
 * with madvise(MADV_HUGEPAGE) where the OS has it, given as views of at most 4 GiB; and how much of
 * it has huge pages (/proc/self/smaps). Tables past 4 GiB: packages/solver/test/large-table.test.ts.
 */
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { allocateNativeTable, hugePageBytesAt, nativeStatus, probeTablePages, transparentHugePages } from '../lib/index.js';

const loaded = nativeStatus().loaded;

describe('hugePageBytesAt', () => {
  const smaps = [
    '7f0000000000-7f0000400000 rw-p 00000000 00:00 0 ',
    'Size:               4096 kB',
    'AnonHugePages:      2048 kB',
    '7f0000400000-7f0000600000 rw-p 00000000 00:00 0 ',
    'AnonHugePages:      2048 kB',
    '7f0000600000-7f0000800000 rw-p 00000000 00:00 0 ',
    'AnonHugePages:      2048 kB',
    '',
  ].join('\n');
  const at = 0x7f0000000000;

  it('adds the AnonHugePages of the mappings that overlap the table, at most its bytes', () => {
    expect(hugePageBytesAt(at, 4 * 2 ** 20, smaps)).toBe(2 * 2 ** 20); // the first mapping only
    expect(hugePageBytesAt(at, 6 * 2 ** 20, smaps)).toBe(4 * 2 ** 20); // first two: 2 + 2 MiB
    expect(hugePageBytesAt(at + 0x400000, 2 ** 20, smaps)).toBe(2 ** 20); // a mapping larger than the table
    expect(hugePageBytesAt(at + 0x800000, 2 ** 20, smaps)).toBe(0); // none
  });
});

describe.skipIf(!loaded)('allocateNativeTable', () => {
  it('gives zero bytes in views of the given size, adjacent, written and read anywhere', () => {
    const table = allocateNativeTable(5 * 2 ** 21 + 3, 2 ** 21);
    expect(table.views.map((v) => v.length)).toEqual([2 ** 21, 2 ** 21, 2 ** 21, 2 ** 21, 2 ** 21, 3]);
    expect(table.length).toBe(5 * 2 ** 21 + 3);
    expect(table.views.every((v) => v.every((b) => b === 0))).toBe(true);
    table.set(table.length - 1, 7);
    expect(table.views[5]![2]).toBe(7);
    expect(() => allocateNativeTable(2 ** 22, 1000)).toThrow(/multiple of 2 MiB/);
    expect(() => allocateNativeTable(0)).toThrow(RangeError);
  });

  it('says whether the table has huge pages; with THP in madvise or always mode on Linux, it has', () => {
    const pages = probeTablePages();
    expect(pages.allocator).toBe('addon');
    const mode = transparentHugePages();
    if (process.platform !== 'linux' || !existsSync('/proc/self/smaps')) {
      expect(pages.hugePageBytes).toBeUndefined();
      return;
    }
    expect(pages.hugePagesAdvised).toBe(true);
    // The kernel may be short of free huge pages: granted is up to it, the count is ours to read.
    expect(pages.hugePageBytes).toBeGreaterThanOrEqual(0);
    if (mode === 'never') expect(pages.hugePageBytes).toBe(0);
  });
});
