/**
 * @ccheckers/native: the C++ engine as two backends of core's Backend interface, `native-bmi2`
 * (hardware pext/pdep) and `native-portable` (no BMI2), chosen at run time. The addon is loaded
 * by loader.ts (its environment variables are described there); native-engine.ts,
 * native-solver-kernel.ts and table-memory.ts wrap what it offers.
 */
import type { Backend, BackendName } from '@ccheckers/core';
import { nativeStatus } from './loader.js';
import { NativeEngine } from './native-engine.js';
import { NativeSolverKernel, nativeMessageRuns } from './native-solver-kernel.js';
import { allocateNativeTable } from './table-memory.js';

export { type CpuInfo, type NativeCodePath, type NativeConstants, type NativeStatus, nativeConstants, nativeStatus } from './loader.js';
export { NativeEngine } from './native-engine.js';
export { PROBE_TABLE_BYTES, allocateNativeTable, hugePageBytesAt, probeTablePages, transparentHugePages } from './table-memory.js';

function makeBackend(name: BackendName, which: 'bmi2' | 'portable'): Backend {
  return {
    name,
    kernelThreads: true,
    engine: (v, rules) => new NativeEngine(v, rules, which),
    solverKernel: (v, rules) => new NativeSolverKernel(v, rules, which),
    messageRuns: nativeMessageRuns,
    allocateTable: allocateNativeTable,
  };
}

export const nativeBmi2Backend: Backend = makeBackend('native-bmi2', 'bmi2');
export const nativePortableBackend: Backend = makeBackend('native-portable', 'portable');

/** The native backend `name` if it can run here, else the reason it cannot. */
export function nativeBackend(name: 'native-bmi2' | 'native-portable'): { backend?: Backend; reason: string } {
  const s = nativeStatus();
  if (!s.loaded) return { reason: s.error ?? 'addon not loaded' };
  if (name === 'native-bmi2') return s.bmi2Usable ? { backend: nativeBmi2Backend, reason: s.bmi2Reason } : { reason: s.bmi2Reason };
  return { backend: nativePortableBackend, reason: 'addon loaded' };
}
