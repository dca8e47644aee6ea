/**
 * @ccheckers/native: the C++ engine as two backends of core's Backend interface, `native-bmi2`
 * (hardware pext/pdep) and `native-portable` (no BMI2), chosen at run time.
 *
 * Environment variables:
 *   CCHECKERS_FORCE_PORTABLE=1  treat BMI2 as absent: `native-bmi2` is unavailable, `auto` picks
 *                               `native-portable` (tests both kernels on one machine);
 *   CCHECKERS_DISABLE_NATIVE=1  behave as if the addon could not be loaded (the TS backend is used).
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  type Backend,
  type BandApplyResult,
  type BandMap,
  type BandPhase,
  type BandResult,
  type BackendName,
  type BenchOp,
  BENCH_OPS,
  type BenchRun,
  checkPlacementRank,
  type Engine,
  type KernelStats,
  type MessageRuns,
  type Move,
  type PassOptions,
  type Position,
  type RuleMode,
  type Side,
  type SolverKernel,
  type SparsePassOptions,
  MAX_VIEW_BYTES,
  TableBytes,
  type TableLike,
  type TablePages,
  type Variant,
  WORDS,
  binomial,
  bitboardFromBigInt,
  bitboardToBigInt,
} from '@ccheckers/core';

export interface CpuInfo {
  x86: boolean;
  bmi2: boolean;
  fastBmi2: boolean;
  /** A popcount instruction: the portable kernel's rankP2 then uses it. */
  popcnt: boolean;
  vendor: string;
  family: number;
}

interface AddonKernel {
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
  solverSparsePass(table: TableLike, from: number, to: number, threads: number, descending: boolean): KernelStats;
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
}

interface Addon extends MessageRuns {
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
    try {
      addon = require(path) as Addon;
    } catch (e) {
      // node-gyp-build prefers build/Release whatever its architecture: a checkout built on x64
      // and run by an arm64 Node (scripts/arm64.sh) has the right binary in prebuilds/ only.
      const prebuilt = prebuildFor(process.platform, process.arch);
      if (!prebuilt || prebuilt === path) throw e;
      path = prebuilt;
      addon = require(path) as Addon;
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
function loadedAddon(): Addon {
  const s = nativeStatus();
  if (!s.loaded || !addon) throw new Error(`native backend unavailable: ${s.error}`);
  return addon;
}

function kernelOf(v: Variant, rules: RuleMode, which: NativeCodePath): AddonKernel {
  const loaded = loadedAddon();
  const s = nativeStatus();
  if (which === 'bmi2' && !s.bmi2Usable) throw new Error(`native-bmi2 unavailable: ${s.bmi2Reason}`);
  return new loaded.Kernel(v.size, v.pieces, rules === 'published' ? 1 : 0, [...v.p1Start], which);
}

function positionWords(p: Position, out = new Uint32Array(7)): Uint32Array {
  out.set(bitboardFromBigInt(p.p1), 0);
  out.set(bitboardFromBigInt(p.p2), 3);
  out[6] = p.toMove;
  return out;
}

function movesOf(bytes: Uint8Array): Move[] {
  const out: Move[] = [];
  for (let i = 0; i < bytes.length; i += 2) out.push({ from: bytes[i]!, to: bytes[i + 1]! });
  return out.sort((a, b) => a.from - b.from || a.to - b.to);
}

export class NativeEngine implements Engine {
  private readonly k: AddonKernel;
  private readonly words = new Uint32Array(7);
  private readonly p1Placements: number;
  private readonly p2Placements: number;

  constructor(
    readonly variant: Variant,
    readonly rules: RuleMode,
    readonly kernel: NativeCodePath,
  ) {
    this.k = kernelOf(variant, rules, kernel);
    this.p1Placements = binomial(variant.cells, variant.pieces);
    this.p2Placements = binomial(variant.cells - variant.pieces, variant.pieces);
  }

  moves(p: Position): Move[] {
    return movesOf(this.k.moves(positionWords(p, this.words)));
  }
  legalMoves(p: Position): Move[] {
    return movesOf(this.k.legalMoves(positionWords(p, this.words)));
  }
  hasWon(player: Side, p: Position): boolean {
    return this.k.hasWon(player, positionWords(p, this.words));
  }
  isIllegal(p: Position): boolean {
    return this.k.isIllegal(positionWords(p, this.words));
  }
  isTerminal(p: Position): boolean {
    return this.k.isTerminal(positionWords(p, this.words));
  }
  rankP1(p1: bigint): number {
    return this.k.rankP1(bitboardFromBigInt(p1));
  }
  unrankP1(rank: number): bigint {
    checkPlacementRank(rank, this.p1Placements, 'P1');
    const out = new Uint32Array(WORDS);
    this.k.unrankP1(rank, out);
    return bitboardToBigInt(out);
  }
  rankP2(p1: bigint, p2: bigint): number {
    return this.k.rankP2(bitboardFromBigInt(p1), bitboardFromBigInt(p2));
  }
  unrankP2(p1: bigint, rank: number): bigint {
    checkPlacementRank(rank, this.p2Placements, 'P2');
    const out = new Uint32Array(WORDS);
    this.k.unrankP2(bitboardFromBigInt(p1), rank, out);
    return bitboardToBigInt(out);
  }
  nextP2(p1: bigint, p2: bigint): bigint | null {
    const out = new Uint32Array(WORDS);
    return this.k.nextP2(bitboardFromBigInt(p1), bitboardFromBigInt(p2), out) ? bitboardToBigInt(out) : null;
  }
  rank(p: Position): bigint {
    const r1 = BigInt(this.rankP1(p.p1));
    const r2 = BigInt(this.rankP2(p.p1, p.p2));
    return (r1 * BigInt(this.p2Placements) + r2) * 2n + BigInt(p.toMove);
  }
  unrank(rank: bigint): Position {
    const total = BigInt(this.p1Placements) * BigInt(this.p2Placements) * 2n;
    if (rank < 0n || rank >= total) throw new RangeError(`rank ${rank} is outside 0 .. ${total - 1n}`);
    const toMove = Number(rank & 1n) as Side;
    const rest = rank >> 1n;
    const p1 = this.unrankP1(Number(rest / BigInt(this.p2Placements)));
    return { p1, p2: this.unrankP2(p1, Number(rest % BigInt(this.p2Placements))), toMove };
  }
  mirror(p: Position): Position {
    return { p1: this.mapSet(p.p1, 'mirror'), p2: this.mapSet(p.p2, 'mirror'), toMove: p.toMove };
  }
  swapColours(p: Position): Position {
    return { p1: this.mapSet(p.p2, 'rotate'), p2: this.mapSet(p.p1, 'rotate'), toMove: p.toMove === 0 ? 1 : 0 };
  }
  canonical(p: Position): Position {
    const out = new Uint32Array(7);
    this.k.canonical(positionWords(p, this.words), out);
    return { p1: bitboardToBigInt(out.subarray(0, 3)), p2: bitboardToBigInt(out.subarray(3, 6)), toMove: 0 };
  }
  bench(op: BenchOp, p: Position, iterations: number): BenchRun {
    const r = this.k.bench(BENCH_OPS.indexOf(op), positionWords(p), iterations);
    return { nanoseconds: r.nanoseconds, iterations, checksum: r.checksum };
  }
  describe(words: Uint32Array, count: number, out: Float64Array): void {
    this.k.describe(words, count, out);
  }

  private mapSet(set: bigint, how: 'mirror' | 'rotate'): bigint {
    const out = new Uint32Array(WORDS);
    this.k[how](bitboardFromBigInt(set), out);
    return bitboardToBigInt(out);
  }
}

class NativeSolverKernel implements SolverKernel {
  private readonly k: AddonKernel;
  readonly passUnits: number;
  constructor(v: Variant, rules: RuleMode, which: NativeCodePath) {
    this.k = kernelOf(v, rules, which);
    this.passUnits = this.k.solverPassUnits();
  }
  init(table: TableLike, groupFrom: number, groupTo: number, threads = 1): KernelStats {
    return this.k.solverInit(table, groupFrom, groupTo, threads);
  }
  pass(table: TableLike, unitFrom: number, unitTo: number, { threads = 1 }: PassOptions = {}): KernelStats {
    return this.k.solverPass(table, unitFrom, unitTo, threads);
  }
  sparsePass(table: TableLike, groupFrom: number, groupTo: number, { threads = 1, descending = false }: SparsePassOptions = {}): KernelStats {
    return this.k.solverSparsePass(table, groupFrom, groupTo, threads, descending);
  }
  distanceInit(table: TableLike, distances: TableLike, groupFrom: number, groupTo: number, threads = 1): KernelStats {
    return this.k.solverDistanceInit(table, distances, groupFrom, groupTo, threads);
  }
  distanceLayer(table: TableLike, distances: TableLike, depth: number, groupFrom: number, groupTo: number, threads = 1): KernelStats {
    return this.k.solverDistanceLayer(table, distances, depth, groupFrom, groupTo, threads);
  }
  band(phase: BandPhase, table: Uint8Array, map: BandMap, input: Float64Array | undefined, from: number, to: number, threads = 1, output?: Float64Array, code = false): BandResult {
    return this.k.solverBand(phase, table, map, input, from, to, threads, output, code);
  }
  bandApplyRuns(table: Uint8Array, map: BandMap, bytes: Uint8Array, from: number, state: Float64Array, threads = 1): BandApplyResult {
    return this.k.solverBandApplyRuns(table, map, bytes, from, state, threads);
  }
}

/** The message coding in C++ (message_runs.hpp), the same on both kernels. */
const nativeMessageRuns: MessageRuns = {
  encodeMessageRun: (messages, from, to, bytes, at) => loadedAddon().encodeMessageRun(messages, from, to, bytes, at),
  decodeMessageRuns: (bytes, from, out, at, state) => loadedAddon().decodeMessageRuns(bytes, from, out, at, state),
};

/**
 * A table of `bytes` zero bytes in the addon's memory (addon.cc, AllocateTable): one mapping of
 * aligned anonymous memory, madvise(MADV_HUGEPAGE) where the OS has it, as external ArrayBuffers
 * of `viewBytes` (a multiple of 2 MiB; tests make it small), each unmapped when collected. Its
 * pageInfo says whether the kernel backs it with huge pages now.
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
