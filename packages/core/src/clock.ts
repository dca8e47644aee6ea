/** Monotonic clock in milliseconds, in Node and in browsers (both have `performance.now`). */
declare const performance: { now(): number };

export function nowMs(): number {
  return performance.now();
}
