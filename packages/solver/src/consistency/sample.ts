/**
 * check --consistency --sample N: N stored states chosen by a fixed seed, each judged against its
 * children read by random access (consistency.ts).
 */
import { StateSpace, WORDS, seededRandom } from '@ccheckers/core';
import { Problem, readChildren, stateWords } from './judge.js';
import { GroupChecker } from './group-checker.js';
import type { TableSource } from './table-source.js';

/** `size` distinct stored-state indices below `states`, from `seed`, ascending. */
export function sampleIndices(states: number, size: number, seed: number): number[] {
  const random = seededRandom(seed);
  const chosen = new Set<number>();
  const n = Math.min(size, states);
  while (chosen.size < n) {
    // Two draws: indices past 2^32 (7x7/4 has 1.6e10 states) are reachable too.
    const x = (Math.floor(random() * 2 ** 21) * 2 ** 32 + Math.floor(random() * 2 ** 32)) / 2 ** 53;
    chosen.add(Math.floor(x * states));
  }
  return [...chosen].sort((p, q) => p - q);
}

export function checkSample(
  source: TableSource,
  space: StateSpace,
  indices: number[],
  limit: number,
  onProgress?: (fraction: number, checked: number) => void,
) {
  const checker = new GroupChecker(space, source.header.rules, limit);
  const judge = checker.judge;
  const reader = source.randomAccess();
  const a = new Uint32Array(WORDS);
  const b = new Uint32Array(WORDS);
  try {
    indices.forEach((index, i) => {
      stateWords(space, judge.engine, index, a, b);
      judge.prepare(b);
      const kind = judge.derive(a, b);
      readChildren(judge, reader);
      const v = reader.value(index);
      if (judge.judge(v, reader.distance(index), reader.hasDistances) !== Problem.OK) checker.mismatches.add(index);
      checker.tally(v, kind);
      if ((i & 1023) === 1023) onProgress?.((i + 1) / indices.length, i + 1);
    });
  } finally {
    reader.close();
  }
  onProgress?.(1, indices.length);
  return { counts: checker.counts, checked: checker.checked, mismatches: checker.mismatches, threads: 1, blocks: 0, memoryBytes: 0 };
}
