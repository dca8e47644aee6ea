/**
 * Parallel passes for backends without their own threads (the TS backend): worker_threads over a
 * SharedArrayBuffer table. Each worker builds its own kernel once and then takes chunks of groups
 * from the main thread until the phase is done. Values only change from UNKNOWN by atomic OR, so
 * any interleaving reaches the same final table.
 */
import { Worker } from 'node:worker_threads';
import type { KernelStats, RuleMode } from '@ccheckers/core';

export type Phase = 'init' | 'pass' | 'sparse';

export interface ChunkRunner {
  run(phase: Phase, chunks: Array<[number, number]>, onChunk: (stats: KernelStats) => void): Promise<void>;
  close(): Promise<void>;
}

export interface WorkerData {
  board: number;
  pieces: number;
  rules: RuleMode;
  table: Uint8Array;
}

/** The worker script sits next to this module in dist/ (tests running from src/ use the built one). */
function workerUrl(): URL {
  const here = import.meta.url;
  return new URL(here.endsWith('.ts') ? '../dist/kernel-worker.js' : './kernel-worker.js', here);
}

export function createWorkerPool(threads: number, data: WorkerData): ChunkRunner {
  const workers = Array.from({ length: threads }, () => new Worker(workerUrl(), { workerData: data }));
  return {
    run(phase, chunks, onChunk) {
      return new Promise((resolve, reject) => {
        let next = 0;
        let busy = 0;
        let failed = false;
        const feed = (w: Worker) => {
          if (failed) return;
          if (next < chunks.length) {
            busy++;
            w.postMessage({ phase, range: chunks[next++] });
          } else if (busy === 0) {
            cleanup();
            resolve();
          }
        };
        const listeners = workers.map((w) => {
          const onMessage = (msg: { stats: KernelStats }) => {
            busy--;
            try {
              onChunk(msg.stats);
            } catch (e) {
              // e.g. the solve was interrupted: stop feeding, let close() end the workers
              failed = true;
              cleanup();
              reject(e);
              return;
            }
            feed(w);
          };
          const onError = (e: Error) => {
            failed = true;
            cleanup();
            reject(e);
          };
          w.on('message', onMessage);
          w.on('error', onError);
          return { w, onMessage, onError };
        });
        const cleanup = () => {
          for (const { w, onMessage, onError } of listeners) {
            w.off('message', onMessage);
            w.off('error', onError);
          }
        };
        if (chunks.length === 0) {
          cleanup();
          resolve();
          return;
        }
        for (const w of workers) feed(w);
      });
    },
    async close() {
      await Promise.all(workers.map((w) => w.terminate()));
    },
  };
}
