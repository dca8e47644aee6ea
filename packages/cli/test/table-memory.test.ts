/**
 * What info and solve say of the tables' memory (issue 36): huge pages, and the one bound on an
 * in-memory solve left, the machine's memory.
 */
import { describe, expect, it } from 'vitest';
import { run } from './support/run-cli.js';

describe('table memory', () => {
  it('info --json probes whether native tables get huge pages', () => {
    const r = run(['info', '--json']);
    expect(r.status).toBe(0);
    const { tables, addon, auto } = JSON.parse(r.stdout) as { tables: { probeBytes: number | null; pages: { allocator: string; hugePagesAdvised: boolean; hugePageBytes?: number } }; addon: { loaded: boolean }; auto: { backend: string } };
    if (!addon.loaded || auto.backend === 'ts') {
      expect(tables.pages).toEqual({ allocator: 'v8', hugePagesAdvised: false });
      return;
    }
    expect(tables.pages.allocator).toBe('addon');
    expect(tables.probeBytes).toBe(4 * 2 ** 20);
    if (process.platform === 'linux') expect(tables.pages.hugePageBytes).toBeLessThanOrEqual(tables.probeBytes!);
    expect(run(['info']).stdout).toMatch(/^tables {5}the addon's memory, (huge pages: (yes|no)|madvise)/m);
  });

  it('solve --json says whose memory the table is in and its huge pages', () => {
    for (const backend of ['native-portable', 'ts']) {
      const r = run(['solve', '--board', '4', '--pieces', '3', '--backend', backend, '--threads', '1', '--json', '--quiet']);
      if (r.status !== 0 && backend !== 'ts' && /unavailable|not loaded/.test(r.stderr)) continue; // no addon here
      expect(r.status, r.stderr).toBe(0);
      const memory = (JSON.parse(r.stdout) as { tableMemory: { allocator: string; hugePagesAdvised: boolean } }).tableMemory;
      expect(memory.allocator).toBe(backend === 'ts' ? 'v8' : 'addon');
      if (backend === 'ts') expect(memory.hugePagesAdvised).toBe(false);
    }
  });

  it('an in-memory solve is bounded by the machine only: 6x6/6 is refused with the way that fits', () => {
    const r = run(['solve', '--board', '6', '--pieces', '6']);
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/6x6\/6 needs 134\.\d GiB, this machine has [\d.]+ [GMT]iB: use --store DIR --memory SIZE/);
    expect(r.stderr).not.toMatch(/4\.0 GiB/);
  });
});
