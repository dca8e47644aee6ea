/** `ccheckers verify` as a subprocess: agreement of all backends, and the mismatch path. */
import { describe, expect, it } from 'vitest';
import { run, runHooked } from './support/run-cli.js';

describe('verify', () => {
  it.each([1, 2])('7x7 with %i piece(s): all available backends agree', (pieces) => {
    const r = run(['verify', '--board', '7', '--pieces', String(pieces), '--json']);
    expect(r.status, r.stderr).toBe(0);
    const o = JSON.parse(r.stdout);
    expect(o.identical).toBe(true);
    expect(o.operations.mode).toBe('all');
    expect(o.backends).toContain('ts');
    expect(new Set(o.solves.map((s: { tableCrc32: number }) => s.tableCrc32)).size).toBe(1);
    expect(o.solves).toHaveLength(o.backends.length);
  });

  it.each([
    ['', /--backends needs at least one backend name/],
    ['ts,ts', /--backends names ts twice/],
    ['ts, native-bmi2,ts', /--backends names ts twice/],
  ])('refuses --backends "%s" (exit 2): not all backends, nor one compared with itself', (list, message) => {
    const r = run(['verify', '--board', '7', '--pieces', '1', '--backends', list]);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.stdout).toBe('');
  });

  // Two backends at least to differ: where only ts loads the test is skipped, and says so.
  const available = JSON.parse(run(['info', '--json']).stdout).backends.filter((b: { available: boolean }) => b.available);
  const names: string[] = available.map((b: { name: string }) => b.name);
  it.skipIf(names.length < 2)('exits 1 and names the position and both answers when a backend differs (test hook)', () => {
    const corrupt = names.at(-1)!;
    const r = runHooked({ corruptBackend: corrupt }, ['verify', '--board', '7', '--pieces', '1', '--backends', names.join(',')]);
    expect(r.status).toBe(1);
    expect(r.stdout).toMatch(/^DIFFERENCE \(operation\) in operation legalMoves\n  position\s+[xo.]{49} [xo]\n/);
    expect(r.stdout).toContain(`  ${names[0]!.padEnd(16)} `);
    expect(r.stdout).toContain(`  ${corrupt.padEnd(16)} `);
  });
});

