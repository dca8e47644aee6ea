/**
 * Loading the addon (node-gyp-build: build/Release first, then prebuilds/) once, and what it
 * offers: its status (loaded, why not, whether BMI2 may be used), its constants, its kernels.
 * The types here are those of the addon's exports (src/addon.cc).
 *
 * Environment variables:
 *   CCHECKERS_FORCE_PORTABLE=1  treat BMI2 as absent: `native-bmi2` is unavailable, `auto` picks
 *                               `native-portable` (tests both kernels on one machine);
 *   CCHECKERS_DISABLE_NATIVE=1  behave as if the addon could not be loaded (the TS backend is used).
 */
import { existsSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BandApplyResult, BandMap, BandPhase, BandResult, KernelStats, ListedUnknown, MessageRuns, RuleMode, TableLike, Variant } from '@ccheckers/core';

export interface CpuInfo {
  x86: boolean;
  bmi2: boolean;
  fastBmi2: boolean;
  /** A popcount instruction: the portable kernel's rankP2 then uses it. */
  popcnt: boolean;
  vendor: string;
  family: number;
}

export interface AddonKernel {
  moves(words: Uint32Array): Uint8Array;
  legalMoves(words: Uint32Array): Uint8Array;
  hasWon(player: number, words: Uint32Array): boolean;
  isIllegal(words: Uint32Array): boolean;
  isTerminal(words: Uint32Array): boolean;
  rankP1(p1: Uint32Array): number;
  unrankP1(rank: number, out: Uint32Array): void;
  rankP2(p1: Uint32Array, p2: Uint32Array): number;
  unrankP2(p1: Uint32Array, rank: number, out: Uint32Array): void;
  nextP2(p1: Uint32Array, p2: Uint32Array, out: Uint32Array): boolean;
  mirror(set: Uint32Array, out: Uint32Array): void;
  rotate(set: Uint32Array, out: Uint32Array): void;
  canonical(words: Uint32Array, out: Uint32Array): void;
  describe(words: Uint32Array, count: number, out: Float64Array): void;
  bench(op: number, words: Uint32Array, iterations: number): { nanoseconds: number; checksum: number };
  solverInit(table: TableLike, from: number, to: number, threads: number): KernelStats;
  solverPass(table: TableLike, from: number, to: number, threads: number): KernelStats;
  solverSparsePass(table: TableLike, from: number, to: number, threads: number, descending: boolean, memoToken: number, memoBudget: number): KernelStats;
  solverListUnknown(table: TableLike, threads: number, budget: number): ListedUnknown;
  solverListedPass(table: TableLike, from: number, to: number, threads: number): KernelStats;
  solverReleaseUnknownLists(): number;
  solverReleaseSparseMemo(): number;
  solverDistanceInit(table: TableLike, distances: TableLike, from: number, to: number, threads: number): KernelStats;
  solverDistanceLayer(table: TableLike, distances: TableLike, depth: number, from: number, to: number, threads: number): KernelStats;
  solverBand(
    phase: BandPhase,
    table: Uint8Array,
    map: BandMap,
    input: Float64Array | undefined,
    from: number,
    to: number,
    threads: number,
    output: Float64Array | undefined,
    code: boolean,
  ): BandResult;
  solverBandApplyRuns(table: Uint8Array, map: BandMap, bytes: Uint8Array, from: number, state: Float64Array, threads: number): BandApplyResult;
  solverGroups(): number;
  solverPassUnits(): number;
}

/**
 * The C++ code paths: bmi2 (hardware pext/pdep), portable (neither; it uses the popcount
 * instruction where the CPU has one, decided in C++) and portable-baseline (the portable kernel
 * without popcount whatever this CPU has; for tests, so that both of its paths are checked).
 */
export type NativeCodePath = 'bmi2' | 'portable' | 'portable-baseline';

/** Constants of the C++ code that core has too (REVISIT_LAG, BENCH_SAMPLES, DESCRIBE_FIELDS). */
export interface NativeConstants {
  revisitLag: number;
  /** Numbers in a message decoder's state (core's MESSAGE_RUN_STATE). */
  messageRunState: number;
  benchSamples: number;
  describeFields: number;
  /** A distance table's bytes (core's NO_DISTANCE, LOST_WITHOUT_DISTANCE, lostCheckedMark of an
   *  even and an odd depth, MAX_DISTANCE): checkpoints of the distances carry the marks. */
  noDistance: number;
  lostWithoutDistance: number;
  lostCheckedMarks: number[];
  maxDistance: number;
  /** What the binding's exports take and offer (BINDING_INTERFACE); absent before the first. */
  bindingInterface?: number;
}

export interface Addon extends MessageRuns {
  Kernel: new (size: number, pieces: number, rules: number, start: number[], kernel: NativeCodePath) => AddonKernel;
  cpuInfo(): CpuInfo;
  constants: NativeConstants;
  allocateTable(bytes: number, viewBytes: number): { buffers: ArrayBuffer[]; address: number; hugePagesAdvised: boolean };
}

export interface NativeStatus {
  /** The addon loaded. */
  loaded: boolean;
  /** Why not, when it did not. */
  error?: string;
  /** Path of the loaded binary. */
  path?: string;
  cpu?: CpuInfo;
  /** Whether `native-bmi2` may be used, and why not. */
  bmi2Usable: boolean;
  bmi2Reason: string;
}

/** The binding interface these sources expect (addon.cc kBindingInterface). */
export const BINDING_INTERFACE = 3;

/** Why `addon` cannot serve these sources (built from older or newer ones), or undefined. */
export function bindingMismatch(loaded: Pick<Addon, 'constants'>, path: string): string | undefined {
  const found = loaded.constants?.bindingInterface;
  if (found === BINDING_INTERFACE) return undefined;
  return `${path} was built from other sources (binding interface ${found ?? 1}, these need ${BINDING_INTERFACE}): rebuild the addon (scripts/setup.sh in a checkout, npm rebuild @ccheckers/native where installed)`;
}

const packageDir = join(dirname(fileURLToPath(import.meta.url)), '..');
let addon: Addon | undefined;
let status: NativeStatus | undefined;

/** Loads the addon once (node-gyp-build: build/Release first, then prebuilds/). */
export function nativeStatus(): NativeStatus {
  if (status) return status;
  if (process.env.CCHECKERS_DISABLE_NATIVE === '1') {
    status = { loaded: false, error: 'disabled by CCHECKERS_DISABLE_NATIVE=1', bmi2Usable: false, bmi2Reason: 'addon not loaded' };
    return status;
  }
  try {
    const require = createRequire(import.meta.url);
    const load = require('node-gyp-build') as ((dir: string) => Addon) & { path(dir: string): string };
    let path = load.path(packageDir);
    let stale = false; // the first binary loaded, but was built from other sources
    try {
      addon = require(path) as Addon;
      const mismatch = bindingMismatch(addon, path);
      stale = mismatch !== undefined;
      if (mismatch) throw new Error(mismatch);
    } catch (e) {
      // node-gyp-build prefers build/Release whatever its architecture: a checkout built on x64
      // and run by an arm64 Node (scripts/arm64.sh) has the right binary in prebuilds/ only.
      const prebuilt = prebuildFor(process.platform, process.arch);
      if (!prebuilt || prebuilt === path) throw e;
      try {
        addon = require(prebuilt) as Addon;
      } catch (prebuiltError) {
        throw stale ? e : prebuiltError; // a stale build's reason is the one to act on
      }
      if (bindingMismatch(addon, prebuilt)) throw e;
      path = prebuilt;
    }
    const cpu = addon.cpuInfo();
    const forced = process.env.CCHECKERS_FORCE_PORTABLE === '1';
    const bmi2Usable = cpu.fastBmi2 && !forced;
    const bmi2Reason = forced
      ? 'forced to portable by CCHECKERS_FORCE_PORTABLE=1'
      : !cpu.x86
        ? 'not an x86-64 CPU'
        : !cpu.bmi2
          ? 'CPU has no BMI2'
          : !cpu.fastBmi2
            ? `CPU has only microcoded BMI2 (${cpu.vendor} family 0x${cpu.family.toString(16)})`
            : 'CPU has fast BMI2';
    status = { loaded: true, path, cpu, bmi2Usable, bmi2Reason };
  } catch (e) {
    const message = (e as Error).message.split('\n')[0] ?? String(e);
    status = { loaded: false, error: `addon not built or not loadable: ${message}`, bmi2Usable: false, bmi2Reason: 'addon not loaded' };
  }
  return status;
}

/** The N-API prebuild of prebuildify for this platform and architecture, if the package has one. */
function prebuildFor(platform: string, arch: string): string | undefined {
  const folder = join(packageDir, 'prebuilds', `${platform}-${arch}`);
  if (!existsSync(folder)) return undefined;
  const file = readdirSync(folder).find((f) => f.endsWith('.node') && !/\.abi\d+\./.test(f)); // N-API: no ABI tag
  return file ? join(folder, file) : undefined;
}

/** The C++ side's constants, where the addon loaded. */
export function nativeConstants(): NativeConstants | undefined {
  return nativeStatus().loaded ? addon!.constants : undefined;
}

/** The addon, loaded (an Error where it cannot load). */
export function loadedAddon(): Addon {
  const s = nativeStatus();
  if (!s.loaded || !addon) throw new Error(`native backend unavailable: ${s.error}`);
  return addon;
}

export function kernelOf(v: Variant, rules: RuleMode, which: NativeCodePath): AddonKernel {
  const loaded = loadedAddon();
  const s = nativeStatus();
  if (which === 'bmi2' && !s.bmi2Usable) throw new Error(`native-bmi2 unavailable: ${s.bmi2Reason}`);
  return new loaded.Kernel(v.size, v.pieces, rules === 'published' ? 1 : 0, [...v.p1Start], which);
}
