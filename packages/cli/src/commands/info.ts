/** `ccheckers info`: the CPU, which backends load here, and which one `auto` picks and why. */
import { availableParallelism } from 'node:os';
import { backendAvailability, loadNativeModule, selectBackend } from '@ccheckers/solver';
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
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  return 0;
}
