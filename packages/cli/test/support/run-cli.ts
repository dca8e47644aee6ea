/** Runs the real `ccheckers` binary (dist/bin.js, built by `pnpm build`) as a subprocess. */
import { type SpawnSyncReturns, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const BIN = fileURLToPath(new URL('../../dist/bin.js', import.meta.url));

export function run(args: string[], env: Record<string, string> = {}, input?: string): SpawnSyncReturns<string> {
  return spawnSync(process.execPath, [BIN, ...args], {
    encoding: 'utf8',
    env: { ...process.env, NO_COLOR: '1', ...env },
    ...(input !== undefined ? { input } : {}),
    timeout: 300_000,
  });
}

export const HOOKED_BIN = fileURLToPath(new URL('./hooked-bin.mjs', import.meta.url));

/** The program with TestHooks set by the harness (see hooked-bin.mjs). */
export function runHooked(hooks: Record<string, unknown>, args: string[]): SpawnSyncReturns<string> {
  return spawnSync(process.execPath, [HOOKED_BIN, JSON.stringify(hooks), ...args], {
    encoding: 'utf8',
    env: { ...process.env, NO_COLOR: '1' },
    timeout: 300_000,
  });
}
