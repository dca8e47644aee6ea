/**
 * Binomial coefficients C(n, k) for n <= 96 and k <= 12, as doubles. Every value the variants use
 * (at most C(81, 10) ~ 1.9e12) is below 2^53, so they are exact.
 */
export const BINOMIAL_MAX_N = 96;
export const BINOMIAL_MAX_K = 12;
const STRIDE = BINOMIAL_MAX_K + 1;

const table = new Float64Array((BINOMIAL_MAX_N + 1) * STRIDE);
for (let n = 0; n <= BINOMIAL_MAX_N; n++) {
  table[n * STRIDE] = 1;
  for (let k = 1; k <= BINOMIAL_MAX_K; k++) {
    table[n * STRIDE + k] = n === 0 ? 0 : table[(n - 1) * STRIDE + k - 1]! + table[(n - 1) * STRIDE + k]!;
  }
}

/** C(n, k); 0 when k > n. */
export function binomial(n: number, k: number): number {
  return table[n * STRIDE + k]!;
}

/** The flat table, row n at n * BINOMIAL_STRIDE, for hot loops. */
export const BINOMIAL_TABLE: Float64Array = table;
export const BINOMIAL_STRIDE = STRIDE;
