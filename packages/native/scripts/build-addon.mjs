// `install` script: builds the addon from source unless a matching prebuild exists (--force
// always builds; --update, the `build` script, recompiles what changed in native-src/ when the
// addon was configured here before). Without a working compiler the install still succeeds and the TS backend is
// used, unless CCHECKERS_REQUIRE_NATIVE=1 (CI) makes that an error.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { packageDir, toolchainEnv } from './toolchain-env.mjs';

const require = createRequire(import.meta.url);
const force = process.argv.includes('--force');

if (process.argv.includes('--update') && existsSync(join(packageDir, 'build', 'Makefile'))) {
  const gyp = spawnSync('node-gyp', ['build'], { cwd: packageDir, env: toolchainEnv(), stdio: 'inherit' });
  process.exit(gyp.status ?? 1);
}

if (!force) {
  try {
    const found = require('node-gyp-build').path(packageDir);
    console.log(`@ccheckers/native: using ${found}`);
    process.exit(0);
  } catch {
    // no build and no prebuild for this platform: compile below
  }
}

console.log('@ccheckers/native: compiling the addon (node-gyp rebuild)');
const gyp = spawnSync('node-gyp', ['rebuild'], { cwd: packageDir, env: toolchainEnv(), stdio: 'inherit', shell: process.platform === 'win32' });
if (gyp.status !== 0) {
  const message = `@ccheckers/native: the addon did not compile (exit ${gyp.status ?? gyp.error?.message}); the pure-TypeScript backend will be used.`;
  if (process.env.CCHECKERS_REQUIRE_NATIVE === '1') {
    console.error(`${message}\nCCHECKERS_REQUIRE_NATIVE=1: failing the install.`);
    process.exit(1);
  }
  console.warn(message);
}
