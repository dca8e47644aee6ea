/**
 * Solver tables in the addon's memory (src/table_memory.hpp), and what the OS backs them with
 * (transparent huge pages, from /proc and /sys).
 */
import { readFileSync } from 'node:fs';
import { MAX_VIEW_BYTES, TableBytes, type TablePages } from '@ccheckers/core';
import { loadedAddon } from './loader.js';

/**
 * A table of `bytes` zero bytes in the addon's memory (src/table_memory.hpp, allocateTable): one
 * mapping of aligned anonymous memory, madvise(MADV_HUGEPAGE) where the OS has it, as external
 * ArrayBuffers of `viewBytes` (a multiple of 2 MiB; tests make it small), each unmapped when
 * collected. Its pageInfo says whether the kernel backs it with huge pages now.
 */
export function allocateNativeTable(bytes: number, viewBytes = MAX_VIEW_BYTES): TableBytes {
  const { buffers, address, hugePagesAdvised } = loadedAddon().allocateTable(bytes, viewBytes);
  return new TableBytes(buffers.map((b) => new Uint8Array(b)), (): TablePages => {
    const huge = hugePageBytesAt(address, bytes);
    return { allocator: 'addon', hugePagesAdvised, ...(huge !== undefined ? { hugePageBytes: huge } : {}) };
  });
}

/**
 * Bytes of [address, address + bytes) backed by transparent huge pages: the AnonHugePages of the
 * mappings of /proc/self/smaps that overlap it (at most `bytes`: a mapping may extend past the
 * table). Undefined where there is no such file (not Linux).
 */
export function hugePageBytesAt(address: number, bytes: number, smaps?: string): number | undefined {
  let text = smaps;
  if (text === undefined) {
    try {
      text = readFileSync('/proc/self/smaps', 'latin1');
    } catch {
      return undefined;
    }
  }
  let inside = false;
  let total = 0;
  for (const line of text.split('\n')) {
    const range = /^([0-9a-f]+)-([0-9a-f]+) /.exec(line);
    if (range) {
      const from = Number.parseInt(range[1]!, 16);
      const to = Number.parseInt(range[2]!, 16);
      inside = from < address + bytes && to > address;
      continue;
    }
    const huge = inside ? /^AnonHugePages:\s+(\d+) kB/.exec(line) : null;
    if (huge) total += Number(huge[1]) * 1024;
  }
  return Math.min(total, bytes);
}

/** The transparent huge page mode of the OS (`always`, `madvise`, `never`), where it says. */
export function transparentHugePages(): string | undefined {
  try {
    return /\[(\w+)\]/.exec(readFileSync('/sys/kernel/mm/transparent_hugepage/enabled', 'latin1'))?.[1];
  } catch {
    return undefined;
  }
}

/** Bytes of the table probeTablePages allocates: two huge pages' worth. */
export const PROBE_TABLE_BYTES = 4 * 2 ** 20;

/** What a table allocated here gets: a small one allocated as a solve's is and touched. */
export function probeTablePages(): TablePages {
  const probe = allocateNativeTable(PROBE_TABLE_BYTES);
  probe.fill(1);
  return probe.pageInfo;
}
