// Builds prebuilds/<platform>-<arch>/*.node with prebuildify (N-API, stripped). `--arch arm64` on
// an x64 machine cross-compiles: the aarch64-linux-gnu toolchain (Debian's g++-aarch64-linux-gnu)
// and the headers of an arm64 Node of the same version (scripts/arm64-node.sh). Other arguments
// are passed on to prebuildify. `--from-build` (.ci/run, which has just compiled build/ in its
// setup): the linux-x64 prebuild is build/Release's addon, stripped as prebuildify strips it, when
// that addon is newer than every file it is compiled from (else prebuildify compiles it again):
// the same compiler, flags and sources, compiled once a run. `--selftest-objects` (.ci/run, with
// `--arch arm64`): the kernel's object files of the cross-compile are handed to the aarch64 C++
// self-test (native-src/test/run-selftest.sh --adopt-objects), which then compiles only its own
// file: the arm64 kernel is compiled once a run, and the self-test runs the code that ships.
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { newestSourceTime } from './addon-sources.mjs';
import { packageDir, toolchainEnv } from './toolchain-env.mjs';

// --arch=arm64 and --arch arm64 alike (prebuildify takes both).
const fromBuild = process.argv.includes('--from-build');
const selftestObjects = process.argv.includes('--selftest-objects');
const ownFlags = new Set(['--from-build', '--selftest-objects']);
const args = process.argv.slice(2).flatMap((a) => (a.startsWith('--arch=') ? ['--arch', a.slice(7)] : ownFlags.has(a) ? [] : [a]));
const arch = args.includes('--arch') ? args[args.indexOf('--arch') + 1] : process.arch;
const env = toolchainEnv();

if (arch === 'arm64' && process.arch !== 'arm64') {
  const triple = 'aarch64-linux-gnu';
  const found = spawnSync('sh', ['-c', `command -v ${triple}-g++`]);
  if (found.status !== 0) {
    console.error(`prebuild: ${triple}-g++ is missing (apt-get install g++-${triple})`);
    process.exit(1);
  }
  const node = spawnSync('bash', [join(packageDir, '..', '..', 'scripts', 'arm64-node.sh')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  if (node.status !== 0) process.exit(node.status ?? 1);
  Object.assign(env, {
    CC: `${triple}-gcc`,
    CXX: `${triple}-g++`,
    LINK: `${triple}-g++`,
    AR: `${triple}-ar`,
    PREBUILD_STRIP_BIN: `${triple}-strip`,
    npm_config_nodedir: node.stdout.trim(),
  });
}
const sources = existsSync(join(packageDir, 'native-src', 'include')) ? join(packageDir, 'native-src') : join(packageDir, '..', '..', 'native-src');
if (fromBuild && arch === process.arch && process.platform === 'linux') {
  const built = join(packageDir, 'build', 'Release', 'ccheckers_native.node');
  if (existsSync(built) && statSync(built).mtimeMs > newestSourceTime(sources)) {
    const folder = join(packageDir, 'prebuilds', `linux-${arch}`);
    const out = join(folder, '@ccheckers+native.node');
    rmSync(folder, { recursive: true, force: true });
    mkdirSync(folder, { recursive: true });
    copyFileSync(built, out);
    const strip = spawnSync('strip', ['--strip-all', out], { stdio: 'inherit' });
    if (strip.status !== 0) process.exit(strip.status ?? 1);
    console.log(`prebuild: ${out} is ${built}, stripped (newer than its sources)`);
    process.exit(0);
  }
  console.log(`prebuild: ${built} is missing or older than its sources: compiling`);
}
// prebuildify compiles in <cwd>/build: a scratch folder keeps the package's own build/ (which
// node-gyp-build loads first, whatever its architecture) as it was.
const scratch = join(packageDir, `.prebuild-${arch}`);
rmSync(scratch, { recursive: true, force: true });
mkdirSync(scratch);
for (const file of ['binding.gyp', 'package.json']) copyFileSync(join(packageDir, file), join(scratch, file)); // package.json: the prebuild's name
for (const [name, target] of [['src', join(packageDir, 'src')], ['native-src', sources], ['node_modules', join(packageDir, 'node_modules')]]) {
  symlinkSync(target, join(scratch, name));
}
// node-gyp by absolute path: through the scratch folder's linked node_modules/.bin its relative
// paths would miss.
env.PREBUILD_NODE_GYP = createRequire(join(packageDir, 'package.json')).resolve('node-gyp/bin/node-gyp.js');
const sourcesBefore = newestSourceTime(sources);
const run = spawnSync('prebuildify', ['--napi', '--strip', '--out', packageDir, ...args], { cwd: scratch, env, stdio: 'inherit' });
let status = run.status ?? 1;
const selftest = join(sources, 'test', 'run-selftest.sh');
if (status === 0 && selftestObjects && arch === 'arm64' && process.arch !== 'arm64' && existsSync(selftest)) {
  if (newestSourceTime(sources) !== sourcesBefore) {
    // The self-test keeps objects under the hash of the sources as they are now.
    console.log('prebuild: a source changed during the compile: its objects are not handed to the self-test');
  } else {
    // node-gyp's objects of the kernel's files: build/Release/obj.target/<target>/native-src/src.
    const objects = join(scratch, 'build', 'Release', 'obj.target', 'ccheckers_native', 'native-src', 'src');
    if (spawnSync('bash', [selftest, 'aarch64', '--adopt-objects', objects], { stdio: 'inherit' }).status !== 0) {
      console.error('prebuild: the arm64 prebuild is made, but its kernel objects were not handed to the self-test');
      status = 3;
    }
  }
}
rmSync(scratch, { recursive: true, force: true });
process.exit(status);
