#!/usr/bin/env node
import { main } from './main.js';

// A closed pipe must never kill a solve (`solve ... 2>&1 | head -1`): EPIPE on stderr drops the
// progress, on stdout the results (whoever read them is gone); the command runs to its end and
// exits with its own code. Any other stream error is fatal as before.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code !== 'EPIPE') throw e;
  });
}

main(process.argv).then(
  (code) => {
    process.exitCode = code;
  },
  (e: unknown) => {
    process.stderr.write(`ccheckers: fatal error: ${(e as Error)?.message ?? String(e)}\n`);
    process.exitCode = 2;
  },
);
