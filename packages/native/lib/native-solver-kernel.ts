/**
 * The solver kernel of core's SolverKernel interface on an addon kernel (loader.ts), and the
 * message coding of band files in C++ (message_runs.hpp).
 */
import type { BandApplyResult, BandMap, BandPhase, BandResult, KernelStats, ListUnknownOptions, ListedUnknown, MessageRuns, PassOptions, RuleMode, SolverKernel, SparsePassOptions, TableLike, Variant } from '@ccheckers/core';
import { type AddonKernel, type NativeCodePath, kernelOf, loadedAddon } from './loader.js';

export class NativeSolverKernel implements SolverKernel {
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
  sparsePass(table: TableLike, groupFrom: number, groupTo: number, { threads = 1, descending = false, memo }: SparsePassOptions = {}): KernelStats {
    return this.k.solverSparsePass(table, groupFrom, groupTo, threads, descending, memo ? memo.token : 0, memo ? memo.bytes : 0); // a memo without bytes is refused, as in TS
  }
  releaseSparseMemo(): number {
    return this.k.solverReleaseSparseMemo();
  }
  listUnknown(table: TableLike, { threads = 1, budget }: ListUnknownOptions): ListedUnknown {
    return this.k.solverListUnknown(table, threads, budget);
  }
  listedPass(table: TableLike, unitFrom: number, unitTo: number, { threads = 1 }: PassOptions = {}): KernelStats {
    return this.k.solverListedPass(table, unitFrom, unitTo, threads);
  }
  releaseUnknownLists(): number {
    return this.k.solverReleaseUnknownLists();
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
export const nativeMessageRuns: MessageRuns = {
  encodeMessageRun: (messages, from, to, bytes, at) => loadedAddon().encodeMessageRun(messages, from, to, bytes, at),
  decodeMessageRuns: (bytes, from, out, at, state) => loadedAddon().decodeMessageRuns(bytes, from, out, at, state),
};
