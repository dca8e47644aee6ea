/**
 * @ccheckers/core: the Chinese Checkers bitboard engine in pure TypeScript (no dependencies,
 * runs in Node and in browsers), and the contracts every backend implements.
 */
export * from './errors.js';
export * from './random.js';
export * from './bits/bit32.js';
export * from './bits/bitboard.js';
export * from './geometry/board.js';
export * from './geometry/variant.js';
export * from './ranking/binomial.js';
export * from './ranking/combination.js';
export * from './engine/tables.js';
export * from './engine/jump-magic.js';
export * from './engine/engine.js';
export * from './position/position.js';
export * from './position/text-format.js';
export * from './backend/backend.js';
export * from './backend/ts-backend.js';
export * from './backend/bench.js';
export * from './backend/describe.js';
export * from './solver-space/state-space.js';
export * from './solver-space/value-table.js';
export * from './solver-space/table-bytes.js';
export * from './solver-space/kernel.js';
export * from './solver-space/message-runs.js';
export { unknownListsBytes } from './solver-space/unknown-lists.js';
