/**
 * The packages as a new user gets them: `pnpm release:pack` writes the four tarballs (the native
 * one with linux-x64 and linux-arm64 prebuilds, its C++ sources and build script), plain `npm
 * install` of them in an empty folder outside the repository works and runs on the prebuild; with
 * the prebuilds removed and no compiler on PATH the install still succeeds and the CLI runs on the
 * TypeScript backend, saying why. Then the same checkout's CLI on a real arm64 Node under qemu
 * (scripts/arm64.sh). Needs the cross-compiler and qemu that `scripts/setup.sh --test-tools`
 * installs, and the npm registry for the packages' own dependencies.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const has = (tool: string) => spawnSync('sh', ['-c', `command -v ${tool}`]).status === 0;
const tools = has('aarch64-linux-gnu-g++') && has('qemu-aarch64-static') && has('npm');
const dir = mkdtempSync(join(tmpdir(), 'ccheckers-package-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }), 120_000); // three node_modules trees
const START_7x7_2 = `xx${'.'.repeat(45)}oo x`;

function sh(command: string, args: string[], cwd: string, env: Record<string, string | undefined> = {}) {
  const merged: Record<string, string> = {};
  // Never the NODE_PATH that pnpm's bin shims (the one vitest ran from) set to the workspace's
  // hoisted packages: CommonJS looks there too, and a user's shell has no such path.
  for (const [k, v] of Object.entries({ ...process.env, NO_COLOR: '1', NODE_PATH: undefined, ...env })) if (v !== undefined) merged[k] = v;
  return spawnSync(command, args, { cwd, encoding: 'utf8', env: merged, timeout: 900_000 });
}

/** Body CRC of a database, as `ccheckers check` reports it. */
function bodyCrc(bin: string[], db: string, cwd: string, env: Record<string, string | undefined> = {}): string {
  const r = sh(bin[0]!, [...bin.slice(1), 'check', '--db', db, '--json'], cwd, env);
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout).checksums.find((c: { part: string }) => c.part === 'body').actual;
}

describe.skipIf(!tools)('packages installed from their tarballs', () => {
  const release = join(dir, 'release');
  const tarballs = () => readdirSync(release).filter((f) => f.endsWith('.tgz')).map((f) => join(release, f));
  // The packages' install scripts must not see the CI switch that makes a failed compile fatal.
  const userEnv = { CCHECKERS_REQUIRE_NATIVE: undefined, npm_config_nodedir: undefined, npm_config_update_notifier: 'false' };

  beforeAll(() => {
    mkdirSync(release);
    writeFileSync(join(release, 'notes.txt'), 'a file of the user\n'); // release-pack replaces only its tarballs
    // --reuse-prebuilds: .ci/run has compiled both prebuilds once for this run (else they are built).
    const r = sh(process.execPath, [join(root, 'scripts', 'release-pack.mjs'), release, '--no-build', '--reuse-prebuilds'], root);
    expect(r.status, r.stderr).toBe(0);
    expect(readFileSync(join(release, 'notes.txt'), 'utf8')).toBe('a file of the user\n');
  }, 900_000);

  it('the native tarball carries both prebuilds, the C++ sources and its build script; the CLI its web page', () => {
    const list = (name: string) => sh('tar', ['tzf', tarballs().find((t) => t.includes(name))!], dir).stdout.split('\n');
    const native = list('native');
    for (const f of [
      'package/prebuilds/linux-x64/@ccheckers+native.node',
      'package/prebuilds/linux-arm64/@ccheckers+native.node',
      'package/native-src/include/ccheckers/kernel/kernel.inl',
      'package/native-src/include/ccheckers/kernel/phases.inl',
      'package/native-src/src/kernel_bmi2.cpp',
      'package/scripts/build-addon.mjs',
      'package/binding.gyp',
    ]) {
      expect(native).toContain(f);
    }
    expect(list('cli')).toContain('package/dist/web/index.html');
  });

  it('npm install in an empty folder: info, a 7x7/2 solve, a query and serve run on the prebuild', () => {
    const app = join(dir, 'app');
    mkdirSync(app);
    const install = sh('npm', ['install', '--no-audit', '--no-fund', ...tarballs()], app, userEnv);
    expect(install.status, install.stderr).toBe(0);
    const bin = [join(app, 'node_modules', '.bin', 'ccheckers')];
    // The CLI brings the cluster's packages, and the solver finds them.
    const cluster = sh(process.execPath, ['--input-type=module', '-e', "const s = await import('@ccheckers/solver'); console.log(typeof (await s.loadBullmq()).Queue, typeof (await s.loadIoredis()).Redis);"], app);
    expect(cluster.stdout.trim(), cluster.stderr).toBe('function function');
    const info = JSON.parse(sh(bin[0]!, ['info', '--json'], app).stdout);
    expect(info.addon.path).toContain(join('node_modules', '@ccheckers', 'native', 'prebuilds', 'linux-x64'));
    const version = sh(bin[0]!, ['--version'], app);
    expect(version.stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
    const solve = sh(bin[0]!, ['solve', '--board', '7', '--pieces', '2', '--out', 'db.ccdb', '--json', '--quiet'], app);
    expect(solve.status, solve.stderr).toBe(0);
    expect(bodyCrc(bin, 'db.ccdb', app)).toBe('0x0b785a50'); // the repository's 7x7/2 table
    expect(sh(bin[0]!, ['query', '--db', 'db.ccdb', START_7x7_2], app).stdout).toMatch(/x \(P1\) to move wins in 33 plies/);
    const serve = sh(
      'bash',
      ['-c', `"${bin[0]}" serve --db db.ccdb --port 0 2> serve.log & pid=$!; for i in $(seq 100); do grep -q http serve.log && break; sleep 0.1; done; url=$(grep -o 'http://[^ ]*' serve.log); node -e "(async () => { for (const path of ['api/game', '']) { const r = await fetch(process.argv[1] + path); console.log(r.status, (await r.text()).slice(0, 40)); } })()" "$url"; kill $pid`],
      app,
    );
    // The API, and the page from dist/web (found from the bundle's chunk of serve).
    expect(serve.stdout).toMatch(/^200 \{"board":7,"pieces":2.*\n200 <!doctype html>/);
  });

  it('the solver without the CLI: no bullmq or ioredis installed, it loads, and a cluster says what to install', () => {
    // bullmq and ioredis are optional peers of @ccheckers/solver (the CLI depends on them). The
    // native tarball comes along because the solver names it as an optional dependency that the
    // registry does not hold.
    const app = join(dir, 'app-solver');
    mkdirSync(app);
    const mine = tarballs().filter((t) => !t.includes('cli'));
    const install = sh('npm', ['install', '--no-audit', '--no-fund', ...mine], app, userEnv);
    expect(install.status, install.stderr).toBe(0);
    expect(readdirSync(join(app, 'node_modules'))).not.toContain('bullmq');
    expect(readdirSync(join(app, 'node_modules'))).not.toContain('ioredis');
    const script = `import('@ccheckers/solver').then(async (s) => {
      console.log(typeof s.solve, typeof s.loadBullmq, typeof s.loadIoredis);
      for (const load of [s.loadBullmq, s.loadIoredis]) await load().then(() => console.log('loaded'), (e) => console.log(e.code, e.message));
    });`;
    const r = sh(process.execPath, ['--input-type=module', '-e', script], app);
    expect(r.status, r.stderr).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines[0]).toBe('function function function');
    expect(lines.slice(1)).toEqual([
      'E_USAGE the cluster needs the packages bullmq and ioredis: npm install bullmq@6.7.0 ioredis@6.0.0 (bullmq is not installed)',
      'E_USAGE the cluster needs the packages bullmq and ioredis: npm install bullmq@6.7.0 ioredis@6.0.0 (ioredis is not installed)',
    ]);
  });

  it('without prebuilds and without a compiler: the install succeeds and the CLI runs on TypeScript, saying why', () => {
    // The native tarball again, without its prebuilds.
    const unpacked = join(dir, 'unpacked');
    mkdirSync(unpacked);
    const nativeTgz = tarballs().find((t) => t.includes('native'))!;
    expect(sh('tar', ['xzf', nativeTgz, '-C', unpacked], dir).status).toBe(0);
    rmSync(join(unpacked, 'package', 'prebuilds'), { recursive: true });
    const bare = join(dir, 'ccheckers-native-bare.tgz');
    expect(sh('tar', ['czf', bare, '-C', unpacked, 'package'], dir).status).toBe(0);
    // A PATH with node, npm and a shell only: no g++, make or python3.
    const fakeBin = join(dir, 'bin');
    mkdirSync(fakeBin);
    symlinkSync(process.execPath, join(fakeBin, 'node'));
    for (const tool of ['npm', 'npx', 'sh', 'bash', 'env']) symlinkSync(sh('sh', ['-c', `command -v ${tool}`], dir).stdout.trim(), join(fakeBin, tool));
    const app = join(dir, 'app-bare');
    mkdirSync(app);
    const others = tarballs().filter((t) => !t.includes('native'));
    const install = sh(join(fakeBin, 'npm'), ['install', '--no-audit', '--no-fund', '--foreground-scripts', ...others, bare], app, { ...userEnv, PATH: fakeBin });
    expect(install.status, install.stderr).toBe(0);
    expect(`${install.stdout}${install.stderr}`).toMatch(/the addon did not compile .*the pure-TypeScript backend will be used/);
    const bin = join(app, 'node_modules', '.bin', 'ccheckers');
    const info = sh(bin, ['info', '--json'], app, { PATH: fakeBin });
    expect(info.status, info.stderr).toBe(0);
    expect(JSON.parse(info.stdout).auto.backend).toBe('ts');
    const solve = sh(bin, ['solve', '--board', '7', '--pieces', '1', '--json'], app, { PATH: fakeBin });
    expect(solve.status, solve.stderr).toBe(0);
    expect(JSON.parse(solve.stdout)).toMatchObject({ backend: 'ts', positions: 4_704 });
    expect(solve.stderr.match(/native backends unavailable: addon not built or not loadable/g)).toHaveLength(1);
  });
});

// Emulation runs JavaScript ~10x slower (verify 7x7/2 took 133 s here, 120 s were not enough in
// CI), and the first call cross-compiles the prebuild: these bounds only catch a hang.
const QEMU_TIMEOUT = 600_000;

describe.skipIf(!tools)('a real arm64 Node under qemu (scripts/arm64.sh)', { timeout: QEMU_TIMEOUT }, () => {
  const arm64 = (args: string[]) => sh('bash', [join(root, 'scripts', 'arm64.sh'), ...args], root);

  it('info picks native-portable from the arm64 prebuild, and says why', () => {
    const r = arm64(['info', '--json']);
    expect(r.status, r.stderr).toBe(0);
    const o = JSON.parse(r.stdout);
    expect(o.platform).toBe('linux-arm64');
    expect(o.addon.path).toContain(join('prebuilds', 'linux-arm64'));
    expect(o.auto).toEqual({ backend: 'native-portable', reason: 'native-bmi2 unavailable: not an x86-64 CPU' });
  });

  // verify on 7x7/1 (4,704 positions): the same comparison of every backend, position by position,
  // as on 7x7/2, which took 97 s under qemu; the larger table's exactness is the 4x4/6 solve below.
  it('verify 7x7/1: all backends agree there', () => {
    const r = arm64(['verify', '--board', '7', '--pieces', '1', '--json', '--quiet']);
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ identical: true, backends: ['native-portable', 'ts'] });
  });

  it('solve 4x4/6 gives the table CRC of x86-64', () => {
    const db = join(dir, 'arm64-4x4-6.ccdb');
    const bin = [process.execPath, join(root, 'packages', 'cli', 'dist', 'bin.js')];
    expect(arm64(['solve', '--board', '4', '--pieces', '6', '--out', db, '--quiet']).status).toBe(0);
    // x86-64's in-memory table (packages/solver/test/solve.test.ts checks it on every backend here).
    const x86 = JSON.parse(readFileSync(join(root, 'test-vectors', 'in-memory-tables.json'), 'utf8')).tables['4/6'].crc;
    expect(bodyCrc(bin, db, root)).toBe(x86);
  });
});
