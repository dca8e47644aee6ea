/**
 * The run-time choice of kernel on CPUs this machine does not have, under emulation:
 *  - x86-64 without BMI2 (qemu -cpu Nehalem): the same addon binary loads, `auto` picks
 *    native-portable, a forced native-bmi2 is refused with a reason (never SIGILL);
 *  - arm64: the C++ engine cross-compiled and its self-test run under qemu.
 * Plus the C++ self-test natively, built once, with AddressSanitizer and UBSan (the same checks as
 * an unsanitized build, which the addon's tests run optimized against the TypeScript kernel). The
 * tools come from .ci/run (apt-get); without them the emulated checks are skipped and say so.
 * run-selftest.sh keeps each binary by the hash of its compiler, flags and sources: .ci/run builds
 * both in its setup (the arm64 one from the arm64 prebuild's kernel objects), and a test run alone
 * (or after a source changed) builds them first.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const cli = `${root}packages/cli/dist/bin.js`;
const has = (tool: string) => spawnSync('sh', ['-c', `command -v ${tool}`]).status === 0;
const selftest = `${root}native-src/test/run-selftest.sh`;

function nehalem(args: string[]) {
  return spawnSync('qemu-x86_64-static', ['-cpu', 'Nehalem', process.execPath, cli, ...args], { encoding: 'utf8', timeout: 300_000 });
}

describe('C++ self-test', () => {
  it.skipIf(!has('g++'))('native sanitizer build (address, undefined): both kernels where the CPU allows and 7x7/2 solves, 0 failures, no report', () => {
    const r = spawnSync('bash', [selftest, 'sanitize'], { encoding: 'utf8', timeout: 600_000 });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^sanitizers: address, undefined$/m);
    expect(r.stdout).toMatch(/7x7\/2 portable threads=2: positions 2542512/);
    const cpu = /^cpu: x86=\d bmi2=(\d)/m.exec(r.stdout);
    expect(cpu, r.stdout).not.toBeNull();
    if (cpu![1] === '1') expect(r.stdout).toMatch(/7x7\/2 bmi2 threads=2: positions 2542512/);
    expect(r.stdout).toMatch(/\d+ kernel checks run, 0 failures/);
    expect(r.stderr).not.toMatch(/runtime error|AddressSanitizer|LeakSanitizer/);
  }, 600_000);

  it.skipIf(!has('aarch64-linux-gnu-g++') || !has('qemu-aarch64-static'))('arm64 cross-build under qemu: portable kernel, 0 failures', () => {
    const r = spawnSync('bash', [selftest, 'aarch64'], { encoding: 'utf8', timeout: 600_000 });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/binary: ELF 64-bit LSB .*ARM aarch64/);
    expect(r.stdout).toMatch(/\d+ kernel checks run, 0 failures/);
    // .ci/run's arm64 prebuild handed over its kernel objects: the kernel is compiled once a run,
    // and the self-test checks the code that ships.
    if (process.env.CCHECKERS_SELFTEST_ARM64_OBJECTS) expect(r.stdout).toMatch(/kernel objects of the arm64 prebuild/);
  }, 600_000);
});

// The bounds in this file only catch a hang (compiles, runs under emulation and sanitizers; spawnSync
// holds the event loop, so vitest can only time a test out once it has returned).
describe.skipIf(!has('qemu-x86_64-static'))('x86-64 without BMI2 (qemu -cpu Nehalem)', { timeout: 300_000 }, () => {
  it('the addon loads, auto picks native-portable and the solve is exact', () => {
    const info = nehalem(['info', '--json']);
    expect(info.status, info.stderr).toBe(0);
    const o = JSON.parse(info.stdout);
    expect(o.cpu).toMatchObject({ x86: true, bmi2: false });
    expect(o.auto).toEqual({ backend: 'native-portable', reason: 'native-bmi2 unavailable: CPU has no BMI2' });
    const solve = nehalem(['solve', '--board', '7', '--pieces', '1', '--json', '--quiet']);
    expect(solve.status, solve.stderr).toBe(0);
    expect(JSON.parse(solve.stdout)).toMatchObject({ backend: 'native-portable', positions: 4_704, p1Wins: 2_304, illegal: 96, start: 'p1-win' });
  });

  it('a forced native-bmi2 is refused with the reason, exit 2', () => {
    const r = nehalem(['solve', '--pieces', '1', '--backend', 'native-bmi2']);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/backend native-bmi2 is not available: CPU has no BMI2/);
  });
});
