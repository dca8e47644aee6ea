/**
 * @ccheckers/solver: strong solving of Chinese Checkers variants on any backend, database files,
 * queries, and the run-time backend choice.
 */
export * from './atomic-file.js';
export * from './consistency.js';
export * from './crc.js';
export * from './database.js';
export * from './database-file.js';
export * from './direct-io.js';
export * from './distance-table.js';
export * from './machine.js';
export * from './memory.js';
export * from './output-file.js';
export * from './pass-log.js';
export * from './query.js';
export * from './select-backend.js';
export * from './solve.js';
export * from './sweeps.js';
export * from './state-index.js';
export * from './store/layout.js';
export * from './store/band-layout.js';
export * from './store/band-schedule.js';
export * from './store/band-solve.js';
export * from './store/band-step.js';
export * from './store/band-step-jobs.js';
export * from './store/kernel-calls.js';
export * from './store/manifest.js';
export * from './store/shard-store.js';
export * from './store/store-values.js';
export { openStoreFile, readAt, refuseIrregular, writeFileAtomically, writeFileAtomicallyAsync } from './store/store-files.js';
export * from './store/sharded-solve.js';
/** The solve of a sharded store in bounded memory: the band passes, in this process. */
export { solveBands as solveSharded } from './store/band-solve.js';
export * from './store/convert.js';
export * from './cluster/jobs.js';
export * from './cluster/run-job.js';
export * from './cluster/redis.js';
export * from './cluster/coordinator.js';
export * from './cluster/coordinator-lease.js';
export * from './cluster/worker.js';
export * from './plan/census.js';
export * from './plan/plan.js';
