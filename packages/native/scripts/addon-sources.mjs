// When the files the addon is compiled from last changed: an addon or prebuild newer than that was
// compiled from them as they are (prebuild.mjs --from-build, release-pack.mjs --reuse-prebuilds).
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { packageDir } from './toolchain-env.mjs';

/** The newest modification time of binding.gyp, the package's src/ and `nativeSrc` (the C++
 *  engine's folder), skipping dot files (not compiled: build-inputs.test.ts's probes). */
export function newestSourceTime(nativeSrc) {
  let newest = statSync(join(packageDir, 'binding.gyp')).mtimeMs;
  const walk = (folder) => {
    for (const entry of readdirSync(folder, { withFileTypes: true })) {
      if (entry.name.startsWith('.')) continue;
      const path = join(folder, entry.name);
      if (entry.isDirectory()) walk(path);
      else newest = Math.max(newest, statSync(path).mtimeMs);
    }
  };
  for (const folder of [nativeSrc, join(packageDir, 'src')]) walk(folder);
  return newest;
}
