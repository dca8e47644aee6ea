// `pnpm release:pack [DIR] [--no-build]`: builds everything (TypeScript, the explorer, the addon's prebuilds
// for linux-x64 and linux-arm64) and writes the four package tarballs to DIR (default release/).
// They install with plain `npm install ./ccheckers-*.tgz` in an empty folder: the native one
// carries both prebuilds, its C++ sources and its build script, so other platforms compile it and
// a failed compile leaves the pure-TypeScript backend.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

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
rmSync(join(native, 'prebuilds'), { recursive: true, force: true });
step('prebuild linux-x64', 'node', ['scripts/prebuild.mjs', '--arch', 'x64'], native);
step('prebuild linux-arm64 (cross-compiled)', 'node', ['scripts/prebuild.mjs', '--arch', 'arm64'], native);
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
