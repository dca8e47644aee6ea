/** `ccheckers info`: the CPU, which backends load here, and which one `auto` picks and why. */
import { availableParallelism } from 'node:os';
import type { TablePages } from '@ccheckers/core';
import { backendAvailability, formatBytes, loadNativeModule, selectBackend } from '@ccheckers/solver';
import { table } from '../ui/format.js';

export async function infoCommand(o: { json?: boolean }): Promise<number> {
  const native = await loadNativeModule();
  const status = native?.nativeStatus();
  const backends = await backendAvailability();
  const auto = await selectBackend('auto');
  const cpu = status?.cpu;
  const info = {
    node: process.version,
    platform: `${process.platform}-${process.arch}`,
    threads: availableParallelism(),
    cpu: cpu ?? null,
    addon: status ? { loaded: status.loaded, path: status.path ?? null, error: status.error ?? null } : { loaded: false, path: null, error: '@ccheckers/native is not installed' },
    backends,
    auto: { backend: auto.backend.name, reason: auto.reason },
    tables: await tableMemory(auto.backend.name),
  };
  if (o.json) {
    process.stdout.write(`${JSON.stringify(info)}\n`);
    return 0;
  }
  const cpuText = cpu
    ? `${cpu.vendor || 'unknown vendor'}${cpu.x86 ? `, x86-64 family 0x${cpu.family.toString(16)}` : ''}, BMI2: ${cpu.bmi2 ? (cpu.fastBmi2 ? 'yes (fast)' : 'yes (microcoded, slow)') : 'no'}`
    : 'unknown (the native addon did not load)';
  const lines = [
    `node       ${info.node} on ${info.platform}, ${info.threads} hardware threads`,
    `cpu        ${cpuText}`,
    `addon      ${info.addon.loaded ? info.addon.path : `not loaded: ${info.addon.error}`}`,
    '',
    table(
      ['backend', 'available', 'why'],
      backends.map((b) => [b.name, b.available ? 'yes' : 'no', b.reason]),
    ),
    '',
    `auto picks ${auto.backend.name}: ${auto.reason}`,
    `tables     ${tablesText(info.tables)}`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  return 0;
}

/** Whether the tables of an in-memory solve with `backend` get huge pages here: the native
 *  backends' are probed (a small table allocated and touched as a solve's is); the ts backend's
 *  are V8's SharedArrayBuffers, given huge pages only where the OS gives them to all memory. */
async function tableMemory(backend: string): Promise<{ transparentHugePages: string | null; probeBytes: number | null; pages: TablePages }> {
  const native = await loadNativeModule();
  const thp = native?.transparentHugePages() ?? null;
  if (!native || !native.nativeStatus().loaded || backend === 'ts') {
    return { transparentHugePages: thp, probeBytes: null, pages: { allocator: 'v8', hugePagesAdvised: false } };
  }
  return { transparentHugePages: thp, probeBytes: native.PROBE_TABLE_BYTES, pages: native.probeTablePages() };
}

function tablesText(t: Awaited<ReturnType<typeof tableMemory>>): string {
  const mode = t.transparentHugePages ? `transparent huge pages: ${t.transparentHugePages}` : 'no transparent huge pages here';
  if (t.pages.allocator === 'v8') return `V8's SharedArrayBuffers, huge pages only where the OS gives them to all memory (${mode})`;
  const got = t.pages.hugePageBytes;
  const huge =
    got === undefined
      ? `madvise(MADV_HUGEPAGE) ${t.pages.hugePagesAdvised ? 'accepted' : 'not available'}, unknown whether granted`
      : got > 0
        ? `huge pages: yes, a ${formatBytes(t.probeBytes!)} test table got ${formatBytes(got)} of them`
        : `huge pages: no, a ${formatBytes(t.probeBytes!)} test table got none${t.pages.hugePagesAdvised ? '' : ' (madvise(MADV_HUGEPAGE) refused)'}`;
  return `the addon's memory, ${huge} (${mode})`;
}

/** A solve's table memory in words: huge pages, how many of the table's bytes. */
export function tablePagesText(p: TablePages, tableBytes: number): string {
  if (p.allocator === 'v8') return "V8's SharedArrayBuffer (no huge pages asked for)";
  if (p.hugePageBytes === undefined) return `the addon's, madvise(MADV_HUGEPAGE) ${p.hugePagesAdvised ? 'accepted' : 'not available'}`;
  return `the addon's, huge pages: ${p.hugePageBytes > 0 ? `${formatBytes(p.hugePageBytes)} of ${formatBytes(tableBytes)}` : `none${p.hugePagesAdvised ? '' : ' (madvise(MADV_HUGEPAGE) refused)'}`}`;
}
