/**
 * `ccheckers plan` through the real binary: the counts and sizes it prints (the census itself is
 * checked against solves and the engine in packages/solver/test/plan.test.ts), both output forms,
 * and exit code 2 with a message for bad arguments.
 */
import { variant } from '@ccheckers/core';
import { plan } from '@ccheckers/solver';
import { describe, expect, it } from 'vitest';
import { planText } from '../src/commands/plan.js';
import { run } from './support/run-cli.js';

function planJson(args: string[]) {
  const r = run(['plan', ...args, '--json']);
  expect(r.status, r.stderr).toBe(0);
  const lines = r.stdout.trim().split('\n');
  expect(lines).toHaveLength(1);
  return JSON.parse(lines[0]!);
}

describe('plan', () => {
  it('7x7/4 --json: the known illegal count, the sizes of the 2026-11-24 solve, and five ways', () => {
    const o = planJson(['--board', '7', '--pieces', '4']);
    expect(o).toMatchObject({
      board: 7,
      pieces: 4,
      rules: 'clean',
      positions: 63_136_929_240,
      illegal: 20_561_310, // docs/performance.md: the solve's count
      illegalDef2: 20_561_310,
      illegalDef3Only: 0,
      storedStates: 15_835_337_595, // README: the solve's stored states and table bytes
      tableBytes: 3_958_834_399,
      distanceBytes: 15_835_337_595,
      databaseBytes: 128 + 3_958_834_399,
    });
    expect(o.illegalP1ToMove + o.illegalP2ToMove).toBe(o.illegal);
    expect(o.terminalP1ToMove + o.terminalP2ToMove).toBe(o.terminal);
    expect(o.ways.map((w: { way: string; workers?: number }) => w.workers ?? w.way)).toEqual(['memory', 'store', 2, 8, 'distances']);
    expect(o.ways[0]).toMatchObject({ command: 'ccheckers solve --board 7 --pieces 4 --out FILE', diskBytes: 2 * (128 + 3_958_834_399) });
    // the in-memory estimate is the measured 7x7/4 solve (1,073.8 s) it is scaled from
    expect(o.ways[0].seconds).toBeCloseTo(1073.8, 0);
    // --distances: the 14.7 GiB distance table beside the values, in the checkpoint and the
    // database too, and the layers of 7x7/4's whole distances (165.6 min over three runs) after the solve
    expect(o.ways[4]).toMatchObject({
      command: 'ccheckers solve --board 7 --pieces 4 --distances --out FILE',
      memoryBytes: o.ways[0].memoryBytes + 15_835_337_595,
      diskBytes: 2 * (128 + 3_958_834_399 + 15_835_337_595),
    });
    expect(o.ways[4].seconds).toBeCloseTo(1073.8 + 165.6 * 60, 0);
    expect(o.distanceSecondsPerState).toBeCloseTo((165.6 * 60) / 15_835_337_595, 15);
    expect(o.machine).toMatchObject({ threads: expect.any(Number), freeMemory: expect.any(Number), freeDisk: expect.any(Number) });
  });

  it('prints the counts as a table, positions and stored states apart', () => {
    const r = run(['plan', '--board', '7', '--pieces', '2']);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatch(/^7x7\/2, clean rules\n/);
    expect(r.stdout).toMatch(/positions \(both sides to move, illegal included\)\n {2}positions +2,542,512\n {2}illegal +10,810 \(5,405 with P1 to move, 5,405 with P2 to move\)/);
    expect(r.stdout).toMatch(/ {2}terminal +10,800 /);
    expect(r.stdout).toMatch(/stored states \(the solver's table[^\n]*\n {2}stored states +1,271,256 \(1,176 groups x 1,081\)\n {2}illegal +5,405\n {2}terminal +5,400\n/);
    expect(r.stdout).toMatch(/\nin memory +\S+ \S+ +\S+ \S+ +\S+ s +yes/);
    expect(r.stdout).toMatch(/\ncluster of 8 /);
  });

  it('says how the time is estimated, and that a busy machine solves slower than that', () => {
    const machine = { threads: 2, freeMemory: 2 ** 34, totalMemory: 2 ** 34, freeDisk: 2 ** 40, diskPath: '/x' };
    const idle = plan({ variant: variant(5, 6), rules: 'clean', machine: { ...machine, loadAverage: 0.4 } });
    const text = planText(idle);
    expect(text).not.toMatch(/busy now/);
    const perState = `${(idle.inMemorySecondsPerState * 1e9).toFixed(1)} ns per stored state with 6 pieces`;
    expect(text).toContain(`in memory\n${idle.inMemoryFixedSeconds.toFixed(2)} s plus ${perState}`);
    // The in-memory estimate in minutes, as the table prints it.
    expect(text).toContain(` ${Math.round(idle.ways[0]!.seconds / 60)} min `);
    const busy = planText(plan({ variant: variant(5, 6), rules: 'clean', machine: { ...machine, loadAverage: 14.7 } }));
    expect(busy).toContain('busy now: load average 14.7 on 2 hardware threads; the times below are for an idle machine');
    const json = planJson(['--board', '4', '--pieces', '6']);
    expect(json.inMemoryFixedSeconds + json.storedStates * json.inMemorySecondsPerState).toBeCloseTo(json.ways[0].seconds, 1);
  });

  it('7x7/6 in both rule modes; 9x9/6 beyond the solver, counts as strings past 2^53', () => {
    const clean = planJson(['--board', '7', '--pieces', '6']);
    const published = planJson(['--board', '7', '--pieces', '6', '--rules', 'published']);
    expect(clean.positions).toBe(170_503_381_976_928);
    // Pinned from this census (the first count of 7x7/6's illegal positions); the clean and
    // published counts differ by the blocks the exception makes legal.
    expect([clean.illegal, published.illegal]).toEqual([31_103_083_334, 27_834_437_030]);
    expect(clean.illegal - published.illegal).toBe(published.exempted);
    expect(clean.ways[0]).toMatchObject({ way: 'memory', fits: false });
    expect(clean.ways[0].why).toMatch(/needs more memory than is free/); // the only bound: no 4 GiB table limit
    const big = planJson(['--board', '9', '--pieces', '6']);
    expect(big.positions).toBe('130698543701325600');
    expect(big.beyondSolver).toMatch(/exact up to 2\^53/);
    expect(big.ways).toEqual([]);
  });

  it('--memory and --workers set the store and cluster plans', () => {
    const o = planJson(['--board', '7', '--pieces', '3', '--memory', '1M', '--workers', '3']);
    expect(o.ways.map((w: { way: string }) => w.way)).toEqual(['memory', 'store', 'cluster', 'distances']);
    expect(o.ways[1]).toMatchObject({ fits: false, budget: 2 ** 20 });
    expect(o.ways[1].why).toMatch(/--memory 1\.0 MiB is too small for 7x7\/3/);
    expect(o.ways[2]).toMatchObject({ workers: 3, fits: false });
  });

  it.each([
    [['--board', '8'], /board 8 is not supported/],
    [['--board', '4', '--pieces', '5'], /4x4 with 5 pieces is not a supported variant/],
    [['--rules', 'strict'], /--rules must be one of clean, published, got "strict"/],
    [['--workers', '0'], /--workers takes worker counts from 1 to 4096/],
    [['--workers', '2,x'], /--workers takes worker counts/],
    [['--memory', '12Q'], /--memory: invalid size "12Q"/],
    [['--memory', '0'], /--memory must be more than 0 bytes/],
    [['--frob'], /unknown option '--frob'/],
  ])('%j: exit 2 and a message', (args, message) => {
    const r = run(['plan', ...args]);
    expect(r.status).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(message);
  });
});
