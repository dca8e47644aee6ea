import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

// The explorer page, bundled with @ccheckers/core into dist/web (served by `ccheckers serve`).
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: './',
  logLevel: 'warn',
  build: { outDir: fileURLToPath(new URL('../dist/web', import.meta.url)), emptyOutDir: true, target: 'es2022' },
});
