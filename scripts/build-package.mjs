#!/usr/bin/env node
// The `build` of the TypeScript packages (core, native, solver, cli): tsc checks the sources and
// writes the declarations into dist/, then rolldown bundles the sources from the given entries
// into one module each (plus shared chunks). A process that runs the CLI then loads a handful of
// files instead of about a hundred: resolving, opening and compiling each ESM module was most of
// a short command's CPU time.
//   node ../../scripts/build-package.mjs [--no-declarations] [--chunks DIR] ENTRY...
// Run in the package's folder. ENTRY is a source file (src/index.ts); its bundle is
// dist/<name>.js. What the package depends on (dependencies, optional and peer dependencies) and
// Node's own modules stay imports: a bundle holds the package's own code only, as tsc's output did.
// Shared chunks go to dist/ or dist/DIR (a chunk resolving files by import.meta.url finds them at
// the depth its module had in src/). dist/ is made anew, but for what other steps write there
// afterwards (the explorer page of the CLI, dist/web).
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { builtinModules, createRequire } from 'node:module';
import { basename } from 'node:path';
import { rolldown } from 'rolldown';

const args = process.argv.slice(2);
const declarations = !args.includes('--no-declarations');
const chunksAt = args.includes('--chunks') ? args[args.indexOf('--chunks') + 1] : undefined;
const entries = args.filter((a, i) => !a.startsWith('--') && args[i - 1] !== '--chunks');
if (entries.length === 0) {
  console.error('build-package: name at least one entry (src/index.ts)');
  process.exit(2);
}

const pkg = JSON.parse(readFileSync('package.json', 'utf8'));
const outside = [pkg.dependencies, pkg.optionalDependencies, pkg.peerDependencies].flatMap((deps) => Object.keys(deps ?? {}));
const builtins = new Set(builtinModules);
const external = (id) => id.startsWith('node:') || builtins.has(id) || outside.some((name) => id === name || id.startsWith(`${name}/`));

// dist/ anew (a file tsc or an older build wrote must not linger in the package), but for
// dist/web: the explorer page, which the CLI's build writes after this.
for (const name of existsSync('dist') ? readdirSync('dist') : []) if (name !== 'web') rmSync(`dist/${name}`, { recursive: true, force: true });

// Types first: a type error stops the build before anything is bundled.
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const checked = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json', declarations ? '--emitDeclarationOnly' : '--noEmit'], { stdio: 'inherit' });
if (checked.error) console.error(`build-package: could not run tsc: ${checked.error.message}`);
if (checked.status !== 0) process.exit(checked.status ?? 1);

const bundle = await rolldown({ input: Object.fromEntries(entries.map((e) => [basename(e).replace(/\.ts$/, ''), e])), platform: 'node', external, logLevel: 'warn' });
await bundle.write({
  dir: 'dist',
  format: 'esm',
  sourcemap: true,
  // A class or function keeps its name where two modules' names clash (errors name themselves by
  // new.target.name).
  keepNames: true,
  entryFileNames: '[name].js',
  chunkFileNames: chunksAt ? `${chunksAt}/[name]-[hash].js` : '[name]-[hash].js',
});
await bundle.close();
