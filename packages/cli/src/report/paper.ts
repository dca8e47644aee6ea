/**
 * The figures of Sturtevant's bitboard paper (Tables 1 and 2), which bench prints and the report
 * charts beside this machine's: ns per operation for 49 cells, bitboard with BMI2 and without.
 */
import type { BenchOp } from '@ccheckers/core';

/** The paper's figures (ns per operation) for 49 cells: bitboard with BMI2, and without. */
export const PAPER: Record<number, Partial<Record<BenchOp, { bmi2: number; nonBmi2: number }>>> = {
  3: { winner: { bmi2: 2.127, nonBmi2: 2.123 }, successors: { bmi2: 25.555, nonBmi2: 345.085 }, rankP1: { bmi2: 3.095, nonBmi2: 3.097 }, rankP2: { bmi2: 3.508, nonBmi2: 77.082 } },
  6: { winner: { bmi2: 2.125, nonBmi2: 2.132 }, successors: { bmi2: 76.144, nonBmi2: 760.751 }, rankP1: { bmi2: 5.171, nonBmi2: 5.868 }, rankP2: { bmi2: 6.174, nonBmi2: 74.781 } },
};
