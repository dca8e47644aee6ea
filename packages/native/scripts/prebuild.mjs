// Builds prebuilds/<platform>-<arch>/*.node with prebuildify (N-API, stripped). Extra arguments
// are passed on, e.g. `--arch arm64` with CC/CXX set to a cross compiler.
import { spawnSync } from 'node:child_process';
import { packageDir, toolchainEnv } from './toolchain-env.mjs';

const args = ['--napi', '--strip', ...process.argv.slice(2)];
const run = spawnSync('prebuildify', args, { cwd: packageDir, env: toolchainEnv(), stdio: 'inherit' });
process.exit(run.status ?? 1);
