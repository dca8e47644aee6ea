#!/usr/bin/env node
import { main } from './main.js';

// A stream that cannot be written must never kill a solve: EPIPE (`solve ... 2>&1 | head -1`)
// or a full disk under a redirection. On stderr the progress is dropped; on stdout the results
// are (whoever read them is gone), said on stderr unless the pipe was closed on purpose, and the
// command runs to its end, files written as usual, and exits with 2.
let stdoutFailed = false;
process.stdout.on('error', (e: NodeJS.ErrnoException) => {
  if (e.code === 'EPIPE') return;
  stdoutFailed = true;
  process.exitCode = 2;
  process.stderr.write(`ccheckers: cannot write to stdout (${e.code ?? e.message}): the output is lost; files the command writes are kept\n`);
});
process.stderr.on('error', () => {});

main(process.argv).then(
  (code) => {
    process.exitCode = stdoutFailed ? 2 : code;
  },
  (e: unknown) => {
    process.stderr.write(`ccheckers: fatal error: ${(e as Error)?.message ?? String(e)}\n`);
    process.exitCode = 2;
  },
);
