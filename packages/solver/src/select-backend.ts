/**
 * Backend choice at run time: `auto` takes native-bmi2, then native-portable, then ts, the first
 * that can run here; a forced name that cannot run is an error that says why.
 */
import { type Backend, type BackendName, CCheckersError, tsBackend } from '@ccheckers/core';

export type BackendRequest = 'auto' | BackendName;
export const BACKEND_REQUESTS: readonly BackendRequest[] = ['auto', 'native-bmi2', 'native-portable', 'ts'];

export interface BackendAvailability {
  name: BackendName;
  available: boolean;
  reason: string;
}

export interface BackendChoice {
  backend: Backend;
  reason: string;
}

type NativeModule = typeof import('@ccheckers/native');
let nativeModule: NativeModule | null | undefined;

/** The native package, or null when it is not installed or fails to import. */
export async function loadNativeModule(): Promise<NativeModule | null> {
  if (nativeModule === undefined) {
    try {
      nativeModule = await import('@ccheckers/native');
    } catch {
      nativeModule = null;
    }
  }
  return nativeModule;
}

export async function backendAvailability(): Promise<BackendAvailability[]> {
  const native = await loadNativeModule();
  const out: BackendAvailability[] = [];
  for (const name of ['native-bmi2', 'native-portable'] as const) {
    if (!native) out.push({ name, available: false, reason: '@ccheckers/native is not installed' });
    else {
      const r = native.nativeBackend(name);
      out.push({ name, available: r.backend !== undefined, reason: r.reason });
    }
  }
  out.push({ name: 'ts', available: true, reason: 'pure TypeScript, runs anywhere' });
  return out;
}

export async function selectBackend(request: BackendRequest): Promise<BackendChoice> {
  if (!BACKEND_REQUESTS.includes(request)) {
    throw new CCheckersError('E_USAGE', `unknown backend "${request}" (choose one of ${BACKEND_REQUESTS.join(', ')})`);
  }
  if (request === 'ts') return { backend: tsBackend, reason: 'requested' };
  const native = await loadNativeModule();
  const list = await backendAvailability();
  if (request !== 'auto') {
    const entry = list.find((b) => b.name === request)!;
    if (!entry.available || !native) throw new CCheckersError('E_BACKEND', `backend ${request} is not available: ${entry.reason}`);
    return { backend: native.nativeBackend(request).backend!, reason: 'requested' };
  }
  const bmi2 = list[0]!;
  const portable = list[1]!;
  if (bmi2.available && native) return { backend: native.nativeBmi2Backend, reason: bmi2.reason };
  if (portable.available && native) return { backend: native.nativePortableBackend, reason: `native-bmi2 unavailable: ${bmi2.reason}` };
  return { backend: tsBackend, reason: `native backends unavailable: ${portable.reason}` };
}

/** Every backend that can run here (for verify and bench). */
export async function availableBackends(): Promise<Backend[]> {
  const out: Backend[] = [];
  for (const entry of await backendAvailability()) {
    if (entry.available) out.push((await selectBackend(entry.name)).backend);
  }
  return out;
}
