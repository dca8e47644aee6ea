// What bench/pass-slices.mjs and bench/sparse-slices.mjs share: the native kernels of several
// builds of the project, and rounds in which each runs the same work from the same table in turn
// (A, B, A, B, ...), so that the builds meet the same machine load.
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

/** Package `pkg`'s built entry point in the checkout at `root`. */
export const loadPackage = async (root, pkg) => import(pathToFileURL(resolve(root, `packages/${pkg}/dist/index.js`)).href);

/** The native-bmi2 backend of each checkout, with room for its times and stats. */
export async function nativeBuilds(roots) {
  const builds = [];
  for (const root of roots) {
    const { backend, reason } = (await loadPackage(root, 'native')).nativeBackend('native-bmi2');
    if (!backend) throw new Error(`${root}: ${reason}`);
    builds.push({ root, backend, seconds: [], stats: [] });
  }
  return builds;
}

/** Copies one allocated table's views into another's. */
export function copyTable(from, into) {
  for (let i = 0; i < from.views.length; i++) into.views[i].set(from.views[i]);
}

/**
 * `rounds` rounds of `run(build)` (its kernel stats) for each build in turn, `table` copied from
 * `saved` before each; prints each run and, at the end, each build's median and its ratio to the
 * first build's.
 */
export function runInTurn(builds, rounds, saved, table, run) {
  for (let r = 0; r < rounds; r++) {
    for (const b of builds) {
      copyTable(saved, table);
      const start = performance.now();
      const s = run(b);
      const seconds = (performance.now() - start) / 1000;
      b.seconds.push(seconds);
      b.stats.push(s);
      console.log(`round ${r + 1} ${b.root}: ${seconds.toFixed(2)} s, wins ${s.wins}, losses ${s.losses}`);
    }
  }
  const median = (xs) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
  const first = builds[0];
  for (const b of builds) {
    console.log(`${b.root}: median ${median(b.seconds).toFixed(2)} s (${b.seconds.map((s) => s.toFixed(2)).join(', ')}), ${(median(b.seconds) / median(first.seconds)).toFixed(3)}x of ${first.root}`);
  }
}
