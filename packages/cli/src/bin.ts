#!/usr/bin/env node
import { main } from './main.js';

main(process.argv).then(
  (code) => {
    process.exitCode = code;
  },
  (e: unknown) => {
    process.stderr.write(`ccheckers: fatal error: ${(e as Error)?.message ?? String(e)}\n`);
    process.exitCode = 2;
  },
);
