// `pnpm release:pack [DIR] [--no-build] [--reuse-prebuilds]`: builds everything (TypeScript, the explorer,
// the addon's prebuilds for linux-x64 and linux-arm64) and writes the four package tarballs to DIR
// (default release/). --reuse-prebuilds keeps a target's prebuild when it is newer than every C++
// source and binding.gyp (.ci/run builds both before the tests, so each is compiled once a run).
// They install with plain `npm install ./ccheckers-*.tgz` in an empty folder: the native one
// carries both prebuilds, its C++ sources and its build script, so other platforms compile it and
// a failed compile leaves the pure-TypeScript backend.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { newestSourceTime } from '../packages/native/scripts/addon-sources.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const out = resolve(process.argv.slice(2).find((a) => !a.startsWith('--')) ?? join(root, 'release'));
const PACKAGES = ['core', 'solver', 'native', 'cli'];

function step(what, command, args, cwd = root) {
  process.stderr.write(`release: ${what}\n`);
  const r = spawnSync(command, args, { cwd, stdio: ['ignore', 'inherit', 'inherit'], env: { ...process.env, TURBO_TELEMETRY_DISABLED: '1' } });
  if (r.status !== 0) {
    process.stderr.write(`release: ${what} failed (exit ${r.status ?? r.error?.message})\n`);
    process.exit(1);
  }
}

const versions = new Set(PACKAGES.map((p) => JSON.parse(readFileSync(join(root, 'packages', p, 'package.json'), 'utf8')).version));
if (versions.size !== 1) {
  process.stderr.write(`release: the packages must share one version, found ${[...versions].join(', ')}\n`);
  process.exit(1);
}
// --no-build: the checkout is built already (the packaging test, which must not rewrite dist/
// under the other tests' feet).
if (!process.argv.includes('--no-build')) step('build', 'pnpm', ['turbo', 'run', 'build', '--output-logs=errors-only']);
const native = join(root, 'packages', 'native');
/** A target's prebuild, if it is there and newer than its sources. */
function freshPrebuild(target) {
  const folder = join(native, 'prebuilds', target);
  if (!existsSync(folder)) return undefined;
  const file = readdirSync(folder).find((f) => f.endsWith('.node'));
  return file !== undefined && statSync(join(folder, file)).mtimeMs > newestSourceTime(join(root, 'native-src')) ? join(folder, file) : undefined;
}
const reuse = process.argv.includes('--reuse-prebuilds');
for (const [target, arch, what] of [['linux-x64', 'x64', 'prebuild linux-x64'], ['linux-arm64', 'arm64', 'prebuild linux-arm64 (cross-compiled)']]) {
  const kept = reuse ? freshPrebuild(target) : undefined;
  if (kept !== undefined) {
    process.stderr.write(`release: ${what}: kept ${kept}, newer than its sources\n`);
    continue;
  }
  rmSync(join(native, 'prebuilds', target), { recursive: true, force: true });
  step(what, 'node', ['scripts/prebuild.mjs', '--arch', arch], native);
}
for (const target of ['linux-x64', 'linux-arm64']) {
  const folder = join(native, 'prebuilds', target);
  if (!existsSync(folder) || !readdirSync(folder).some((f) => f.endsWith('.node'))) {
    process.stderr.write(`release: no ${target} prebuild in ${folder}\n`);
    process.exit(1);
  }
}
// Only this script's own tarballs are replaced: DIR may hold anything else (never rm -r DIR).
mkdirSync(out, { recursive: true });
for (const f of readdirSync(out)) if (/^ccheckers-(core|solver|native|cli)-.*\.tgz$/.test(f)) rmSync(join(out, f));
for (const p of PACKAGES) step(`pack @ccheckers/${p}`, 'pnpm', ['pack', '--pack-destination', out], join(root, 'packages', p));
process.stdout.write(`${readdirSync(out).filter((f) => f.startsWith('ccheckers-')).map((f) => join(out, f)).join('\n')}\n`);
