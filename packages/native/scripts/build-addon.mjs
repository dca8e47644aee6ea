// `install` script: builds the addon from source unless a matching prebuild exists (--force
// always builds). Without a working compiler the install still succeeds and the TS backend is
// used, unless CCHECKERS_REQUIRE_NATIVE=1 (CI) makes that an error.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { packageDir, toolchainEnv } from './toolchain-env.mjs';

const require = createRequire(import.meta.url);
const force = process.argv.includes('--force');

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
