/**
 * The C++ and TS kernels read side by side: every file of native-src/include/ccheckers/kernel/
 * has a TS counterpart of the same name (snake_case .inl, kebab-case .ts; message_runs.hpp too),
 * and within each pair the classes, functions, methods and members listed below are declared on
 * both sides. Renaming one side without the other fails here, as does a kernel file added
 * without its pair.
 *
 * The check reads the source text: a name counts where it is declared (class, struct, alias,
 * function or method with a body, data member or field), not where it is only called.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const KERNEL = 'native-src/include/ccheckers/kernel';
const SOLVER_SPACE = 'packages/core/src/solver-space';

interface Pair {
  cpp: string;
  ts: string;
  /** Declared in both files. */
  names: readonly string[];
}

const PAIRS: readonly Pair[] = [
  {
    cpp: `${KERNEL}/engine.inl`,
    ts: 'packages/core/src/engine/engine.ts',
    names: [
      'BitboardEngine',
      'p1Placements',
      'p2Placements',
      'mirrorMap',
      'singleJumps',
      'generate',
      'hasWon',
      'blockIllegal',
      'isIllegal',
      'isTerminal',
      'legalMoves',
      'rankP1',
      'unrankP1',
      'rankP2',
      'unrankP2',
      'mirror',
      'rotate',
      'canonical',
    ],
  },
  {
    cpp: `${KERNEL}/state_space.inl`,
    ts: `${SOLVER_SPACE}/state-space.ts`,
    names: ['StateSpace', 'rankOf', 'groupOfRank', 'mirrored', 'passOrder', 'proofOrder', 'FreePlacements', 'first', 'next'],
  },
  {
    cpp: `${KERNEL}/table_parts.inl`,
    ts: `${SOLVER_SPACE}/table-parts.ts`,
    names: ['TableParts', 'seeksLoss', 'load', 'prove'],
  },
  {
    cpp: `${KERNEL}/sparse_memo.inl`,
    ts: `${SOLVER_SPACE}/sparse-memo.ts`,
    names: ['SparseMemo', 'bind', 'complete', 'entries', 'endGroup', 'used', 'release'],
  },
  {
    cpp: `${KERNEL}/unknown_lists.inl`,
    ts: `${SOLVER_SPACE}/unknown-lists.ts`,
    names: ['UnknownLists', 'of', 'groupsOf', 'bytes', 'list', 'release', 'forEachUnknown'],
  },
  {
    cpp: `${KERNEL}/band_table.inl`,
    ts: `${SOLVER_SPACE}/band-table.ts`,
    names: [
      'messageOf',
      'messageIndex',
      'messageValue',
      'BandTable',
      'seeksLoss',
      'groupOf',
      'holdsGroup',
      'contains',
      'localOf',
      'localByte',
      'laterUnitsBand',
      'later',
      'leavesWinToUnits',
      'loadLocal',
      'load',
      'proveLocal',
      'prove',
    ],
  },
  {
    cpp: `${KERNEL}/outbox.inl`,
    ts: `${SOLVER_SPACE}/outbox.ts`,
    names: ['Outbox', 'byBand', 'sendValue', 'sendRequest', 'sortMessages', 'collectOutboxes'],
  },
  {
    cpp: `${KERNEL}/state_graph.inl`,
    ts: `${SOLVER_SPACE}/state-graph.ts`,
    names: ['ParentList', 'StateGraph', 'childGroup', 'childIndexOf', 'parentsOf', 'parentGroup', 'parentStamp'],
  },
  {
    cpp: `${KERNEL}/pass_worker.inl`,
    ts: `${SOLVER_SPACE}/pass-worker.ts`,
    names: ['PassWorker', 'stats', 'moves', 'init', 'pass', 'decide', 'waitForRevisit', 'endUnit', 'endSweep', 'revisit', 'waiting', 'unitsDone'],
  },
  {
    cpp: `${KERNEL}/distances.inl`,
    ts: `${SOLVER_SPACE}/distances.ts`,
    names: ['DistanceWorker', 'stats', 'moves', 'distanceInit', 'hasLegalChild', 'pushDistance', 'pushDistanceTo', 'setLostDistance', 'childrenWithin'],
  },
  {
    cpp: `${KERNEL}/phases.inl`,
    ts: `${SOLVER_SPACE}/phases.ts`,
    names: [
      'initGroup',
      'passUnit',
      'listedUnit',
      'sparseGroup',
      'visitRequests',
      'requestsOfSlot',
      'applyValues',
      'distanceInitGroup',
      'distanceLayerGroup',
    ],
  },
  {
    cpp: `${KERNEL}/kernel.inl`,
    ts: `${SOLVER_SPACE}/kernel.ts`,
    names: ['checkUnits'],
  },
  {
    cpp: `${KERNEL}/bench.inl`,
    ts: 'packages/core/src/backend/bench.ts',
    names: ['runBench'],
  },
  {
    cpp: 'native-src/include/ccheckers/message_runs.hpp',
    ts: `${SOLVER_SPACE}/message-runs.ts`,
    names: ['writeNumber', 'encodeMessageRun', 'decodeMessageRuns'],
  },
];

/** TS files of solver-space/ without a C++ file in kernel/, and why. */
const TS_ONLY: Record<string, string> = {
  'table-bytes.ts': 'views of a table past 4 GiB; the addon holds one pointer',
  'value-table.ts': 'byte addressing of the 2-bit table; C++ inlines it in table_parts.inl',
};

const escape = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Lines that are not code: comments, so that a name in prose declares nothing. */
function code(source: string): string {
  return source.replace(/\/\*[\s\S]*?\*\//g, ' ').replace(/\/\/.*$/gm, '');
}

function cppDeclares(source: string, name: string): boolean {
  const n = escape(name);
  const notStatement = '(?![ \\t])(?!(?:return|else|case|throw|delete|new|goto)\\b)';
  return [
    // class, struct, enum, alias
    new RegExp(`\\b(?:class|struct|enum(?:\\s+class)?|using)\\s+${n}\\b`),
    // function, method or constructor with its body: [type] name(params) [qualifiers] [: inits] {
    new RegExp(
      `^[ \\t]*${notStatement}(?:[\\w:<>,*&\\[\\] ]*[\\w>*&][ \\t*&]+)?${n}\\s*\\([^;{}]*\\)\\s*(?:const\\s*)?(?:override\\s*)?(?:noexcept\\s*)?(?:&&\\s*)?(?::[^;{]*)?\\{`,
      'm',
    ),
    // data member or variable: type [other declarators,] name [array] [= init | {init}] ; or ,
    new RegExp(
      `^[ \\t]*${notStatement}(?:(?:static|constexpr|const|inline|mutable)\\s+)*[\\w:]+(?:<[^;()]*>)?[ \\t*&]+(?:\\w+(?:\\[[^\\]]*\\])*(?:\\{[^}]*\\})?\\s*,\\s*)*${n}(?:\\[[^\\]]*\\])*\\s*(?:\\{[^;]*\\}|=[^;]*)?\\s*[;,]`,
      'm',
    ),
  ].some((re) => re.test(code(source)));
}

function tsDeclares(source: string, name: string): boolean {
  const n = escape(name);
  const modifiers = '(?![ \\t])(?:(?:export|public|private|protected|static|readonly|declare|override|async|get|set)\\s+)*';
  return [
    // class, interface, type, enum, function (not a local constant or variable)
    new RegExp(`\\b(?:class|interface|type|enum|function)\\s+${n}\\b`),
    // method, getter or constructor parameter property: name(params)[: type] {
    new RegExp(`^[ \\t]*${modifiers}${n}\\s*(?:<[^>]*>)?\\([^;]*?\\)\\s*(?::[^;{=]+)?\\{`, 'm'),
    // field: name[?!]: type or name = value
    new RegExp(`^[ \\t]*${modifiers}${n}[?!]?\\s*(?::|=(?!=|>))`, 'm'),
  ].some((re) => re.test(code(source)));
}

const read = (path: string): string => readFileSync(join(ROOT, path), 'utf8');

describe('the C++ and TS kernels pair up', () => {
  it('every kernel/ file has a TS file of the same name, and every solver-space/ file a C++ one (or a reason)', () => {
    const listedCpp = PAIRS.filter((p) => p.cpp.startsWith(KERNEL)).map((p) => basename(p.cpp));
    expect(readdirSync(join(ROOT, KERNEL)).sort()).toEqual([...listedCpp].sort());
    for (const p of PAIRS) expect(basename(p.ts, '.ts')).toBe(basename(p.cpp).replace(/\.(inl|hpp)$/, '').replace(/_/g, '-'));
    const listedTs = new Set(PAIRS.filter((p) => p.ts.startsWith(SOLVER_SPACE)).map((p) => basename(p.ts)));
    const unpaired = readdirSync(join(ROOT, SOLVER_SPACE)).filter((f) => !listedTs.has(f) && !(f in TS_ONLY));
    expect(unpaired).toEqual([]);
  });

  for (const p of PAIRS) {
    it(`${basename(p.cpp)} <-> ${basename(p.ts)}: ${p.names.length} names declared in both`, () => {
      const cpp = read(p.cpp);
      const ts = read(p.ts);
      expect(p.names.filter((name) => !cppDeclares(cpp, name)), `missing from ${p.cpp}`).toEqual([]);
      expect(p.names.filter((name) => !tsDeclares(ts, name)), `missing from ${p.ts}`).toEqual([]);
    });
  }

  it('the check sees declarations, not calls or comments', () => {
    expect(cppDeclares('int x = 0;\nvoid f() {\n  g(1);\n}\n// void h() {}\n', 'g')).toBe(false);
    expect(cppDeclares('void f() {\n  return g(1, [&](int) {\n', 'g')).toBe(false);
    expect(cppDeclares('template <class B>\nB g(B x) const {\n', 'g')).toBe(true);
    expect(cppDeclares('struct S {\n  uint64_t a, b;\n};\n', 'b')).toBe(true);
    expect(tsDeclares('class C {\n  f(): void {\n    g(1);\n  }\n}\n', 'g')).toBe(false);
    expect(tsDeclares('/** g(x) { */\n', 'g')).toBe(false);
    expect(tsDeclares('class C {\n  private g(x: number): number {\n', 'g')).toBe(true);
    expect(tsDeclares('class C {\n  readonly g: number;\n', 'g')).toBe(true);
  });
});
