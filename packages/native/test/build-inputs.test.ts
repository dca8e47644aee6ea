/**
 * turbo's build cache key covers every source of a package (lib/ of this one, web/ of the CLI,
 * native-src/ of the repository), so an edit there can never replay a stale dist/ or addon from the
 * cache; and the addon is among the outputs, so a cache hit restores it. Checked with turbo's dry
 * run: a new file in lib/ (or web/) changes the task's hash.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../../', import.meta.url));

function hashes(): Record<string, string> {
  const r = spawnSync('pnpm', ['turbo', 'run', 'build', '--dry=json'], { cwd: root, encoding: 'utf8', env: { ...process.env, TURBO_TELEMETRY_DISABLED: '1' } });
  expect(r.status, r.stderr).toBe(0);
  const tasks = JSON.parse(r.stdout.slice(r.stdout.indexOf('{'))).tasks as Array<{ taskId: string; hash: string }>;
  return Object.fromEntries(tasks.map((t) => [t.taskId, t.hash]));
}

describe('turbo build inputs and outputs', () => {
  it('declares the addon as an output', () => {
    const turbo = JSON.parse(readFileSync(join(root, 'turbo.json'), 'utf8'));
    expect(turbo.tasks.build.outputs).toEqual(expect.arrayContaining(['dist/**', 'build/Release/*.node']));
  });

  it.each([
    ['@ccheckers/native#build', 'packages/native/lib'],
    ['@ccheckers/cli#build', 'packages/cli/web'],
    ['@ccheckers/native#build', 'native-src/include'],
  ])('%s: a new file in %s changes the cache key', (task, folder) => {
    const before = hashes()[task];
    const probe = join(root, folder, `.turbo-input-probe-${process.pid}.txt`);
    writeFileSync(probe, 'probe\n');
    try {
      expect(hashes()[task]).not.toBe(before);
    } finally {
      rmSync(probe, { force: true });
    }
    expect(hashes()[task]).toBe(before);
  });
});
