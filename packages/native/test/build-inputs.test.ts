/**
 * turbo's build cache key covers every source of a package (lib/ of this one, web/ of the CLI,
 * native-src/ of the repository), so an edit there can never replay a stale dist/ or addon from the
 * cache; and the addon is among the outputs, so a cache hit restores it. Checked with turbo's dry
 * run: a new file in lib/ (or web/) changes the task's hash, and the root script that bundles the
 * TypeScript packages is among every build's inputs.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../../', import.meta.url));

interface DryTask {
  taskId: string;
  hash: string;
  inputs: Record<string, string>;
}

/** turbo's dry run of the build: each task's cache key and the files it hashes (about 1.5 s). */
function dryRun(): Map<string, DryTask> {
  const r = spawnSync('pnpm', ['turbo', 'run', 'build', '--dry=json'], { cwd: root, encoding: 'utf8', env: { ...process.env, TURBO_TELEMETRY_DISABLED: '1' } });
  expect(r.status, r.stderr).toBe(0);
  const tasks = JSON.parse(r.stdout.slice(r.stdout.indexOf('{'))).tasks as DryTask[];
  return new Map(tasks.map((t) => [t.taskId, t]));
}

const PACKAGES = ['core', 'native', 'solver', 'cli'];

describe('turbo build inputs and outputs', () => {
  // One dry run before the probes, one per probe and one after them all.
  let before: Map<string, DryTask>;
  beforeAll(() => {
    before = dryRun();
  });

  it('declares the addon as an output', () => {
    const turbo = JSON.parse(readFileSync(join(root, 'turbo.json'), 'utf8'));
    expect(turbo.tasks.build.outputs).toEqual(expect.arrayContaining(['dist/**', 'build/Release/*.node']));
  });

  it('hashes the bundling script into every TypeScript package\'s build', () => {
    for (const name of PACKAGES) expect(Object.keys(before.get(`@ccheckers/${name}#build`)?.inputs ?? {}), name).toContain('../../scripts/build-package.mjs');
  });

  it.each([
    ['@ccheckers/native#build', 'packages/native/lib'],
    ['@ccheckers/cli#build', 'packages/cli/web'],
    ['@ccheckers/native#build', 'native-src/include'],
  ])('%s: a new file in %s changes the cache key', (task, folder) => {
    const probe = join(root, folder, `.turbo-input-probe-${process.pid}.txt`);
    writeFileSync(probe, 'probe\n');
    try {
      expect(dryRun().get(task)?.hash).not.toBe(before.get(task)?.hash);
    } finally {
      rmSync(probe, { force: true });
    }
  });

  it('the cache keys are back once the probes are gone', () => {
    const after = dryRun();
    for (const name of PACKAGES) expect(after.get(`@ccheckers/${name}#build`)?.hash, name).toBe(before.get(`@ccheckers/${name}#build`)?.hash);
  });
});
