/**
 * No import cycles in packages/*\/src: every relative import (static, `export ... from`, type-only
 * and dynamic `import('./x.js')`) and every `@ccheckers/<package>` import (taken as that package's
 * src/index.ts) is an edge; a depth-first search reports each cycle it closes. Type-only imports
 * count too: a cycle of types is still two files that cannot be read one before the other.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const PACKAGES = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const SPECIFIER = /(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+)['"]([^'"]+)['"]/gm;

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...sourceFiles(path));
    else if (/\.(ts|tsx|mts)$/.test(name) && !name.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

/** The sources of every package: packages/*\/src. */
function workspaceFiles(): string[] {
  return readdirSync(PACKAGES)
    .filter((p) => statSync(join(PACKAGES, p, 'src'), { throwIfNoEntry: false })?.isDirectory())
    .flatMap((p) => sourceFiles(join(PACKAGES, p, 'src')));
}

/** The file an import names, or undefined for a module outside the workspace's sources. */
function resolveImport(from: string, specifier: string, files: Set<string>): string | undefined {
  let base: string;
  if (specifier.startsWith('.')) base = resolve(dirname(from), specifier);
  else {
    const m = /^@ccheckers\/([^/]+)$/.exec(specifier);
    if (!m) return undefined;
    base = join(PACKAGES, m[1]!, 'src', 'index.js');
  }
  const stem = base.replace(/\.(m?js|tsx?)$/, '');
  for (const candidate of [`${stem}.ts`, `${stem}.tsx`, `${stem}.mts`, join(base, 'index.ts')]) {
    if (files.has(candidate)) return candidate;
  }
  return undefined;
}

/** Imports of each file, from its text (comments stripped so an example in prose is no edge). */
export function importGraph(files: readonly string[]): Map<string, string[]> {
  const known = new Set(files);
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const text = readFileSync(file, 'utf8').replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
    const edges = new Set<string>();
    for (const m of text.matchAll(SPECIFIER)) {
      const target = resolveImport(file, m[1]!, known);
      if (target !== undefined) edges.add(target);
    }
    graph.set(file, [...edges].sort());
  }
  return graph;
}

/** Every cycle a depth-first search closes (each as the files from the first to the last). */
export function findCycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const cycles: string[][] = [];
  const visit = (node: string): void => {
    state.set(node, 'open');
    stack.push(node);
    for (const next of graph.get(node) ?? []) {
      const s = state.get(next);
      if (s === 'open') cycles.push(stack.slice(stack.indexOf(next)));
      else if (s === undefined) visit(next);
    }
    stack.pop();
    state.set(node, 'done');
  };
  for (const node of [...graph.keys()].sort()) if (!state.has(node)) visit(node);
  return cycles;
}

describe('import cycles', () => {
  it('finds a cycle in a small graph, and none in a chain', () => {
    const cyclic = new Map([['a', ['b']], ['b', ['c']], ['c', ['a']], ['d', ['a']]]);
    expect(findCycles(cyclic)).toEqual([['a', 'b', 'c']]);
    expect(findCycles(new Map([['a', ['b']], ['b', ['c']], ['c', []]]))).toEqual([]);
  });

  it('sees relative, type-only, re-export, dynamic, side-effect and multi-line imports, not comments', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ccheckers-imports-'));
    try {
      mkdirSync(join(dir, 'g'));
      const names = ['b', 'c', 'd', 'e', 'f', 'g/index'];
      for (const n of names) writeFileSync(join(dir, `${n}.ts`), 'export const x = 1;\n');
      const a = join(dir, 'a.ts');
      writeFileSync(
        a,
        [
          "import type { X } from './b.js';",
          "export * from './c.js';",
          "const m = await import('./d.js');",
          "import './e.js';",
          "// import { z } from './f.js';",
          '/* import { w } from "./f.js"; */',
          'import {',
          '  y,',
          "} from './g/index.js';",
          "import { readFileSync } from 'node:fs';",
        ].join('\n'),
      );
      const graph = importGraph([a, ...names.map((n) => join(dir, `${n}.ts`))]);
      expect(graph.get(a)).toEqual(['b', 'c', 'd', 'e', 'g/index'].map((n) => join(dir, `${n}.ts`)).sort());
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("takes @ccheckers/<package> as that package's src/index.ts", () => {
    const all = importGraph(workspaceFiles());
    const solverIndex = join(PACKAGES, 'solver', 'src', 'index.ts');
    expect(all.get(join(PACKAGES, 'cli', 'src', 'bin.ts'))).toContain(join(PACKAGES, 'cli', 'src', 'main.ts'));
    expect([...all.values()].some((edges) => edges.includes(solverIndex))).toBe(true);
  });

  it('has none in packages/*/src', () => {
    const files = workspaceFiles();
    expect(files.length).toBeGreaterThan(50);
    const cycles = findCycles(importGraph(files)).map((c) => [...c, c[0]!].map((f) => relative(PACKAGES, f)).join(' -> '));
    expect(cycles).toEqual([]);
  });
});
