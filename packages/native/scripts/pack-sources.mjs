// prepack/postpack: the npm package carries the C++ engine so that a platform without a prebuild
// compiles it from source. `prepack` copies the repository's native-src/ (without its tests) into
// the package; `postpack` (--clean) removes the copy again.
import { cpSync, existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { packageDir } from './toolchain-env.mjs';

const copy = join(packageDir, 'native-src');
rmSync(copy, { recursive: true, force: true });
if (!process.argv.includes('--clean')) {
  const source = join(packageDir, '..', '..', 'native-src');
  if (!existsSync(join(source, 'include'))) throw new Error(`no C++ sources at ${source}`);
  for (const part of ['include', 'src']) cpSync(join(source, part), join(copy, part), { recursive: true });
}
