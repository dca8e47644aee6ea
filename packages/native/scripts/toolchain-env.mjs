// Environment for node-gyp and prebuildify: Node's own headers (no download: the machine may be
// offline) and the package's node_modules/.bin on PATH (prebuildify spawns node-gyp by name).
import { existsSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const packageDir = dirname(dirname(fileURLToPath(import.meta.url)));

export function toolchainEnv() {
  const env = { ...process.env };
  const prefix = dirname(dirname(process.execPath));
  if (!env.npm_config_nodedir && existsSync(join(prefix, 'include', 'node', 'node_api.h'))) env.npm_config_nodedir = prefix;
  env.PATH = [join(packageDir, 'node_modules', '.bin'), join(packageDir, '..', '..', 'node_modules', '.bin'), env.PATH].join(delimiter);
  return env;
}
