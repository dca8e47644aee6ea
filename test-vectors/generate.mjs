// Generates test-vectors/vectors.json once from the TS core (itself checked against the
// array-based reference): for every board and piece count of docs/rules.md, the start position and
// a few fixed-seed random positions, with the expected result of every engine operation.
// Every backend's tests read this one file. Run: node test-vectors/generate.mjs (after pnpm build).
import { writeFileSync } from 'node:fs';
import { DESCRIBE_FIELDS, DESCRIBE_NAMES, TsEngine, seededRandom as rng, formatPosition, startPosition, supportedVariants, variant, bitboardFromBigInt } from '../packages/core/dist/index.js';


const vectors = [];
for (const { size, pieces } of supportedVariants()) {
  const v = variant(size, pieces);
  const random = rng(size * 1000 + pieces);
  for (const rules of pieces === 6 ? ['clean', 'published'] : ['clean']) {
    const e = new TsEngine(v, rules);
    const positions = [startPosition(v)];
    while (positions.length < 8) {
      const cells = Array.from({ length: v.cells }, (_, i) => i);
      for (let i = 0; i < 2 * pieces; i++) {
        const j = i + Math.floor(random() * (v.cells - i));
        [cells[i], cells[j]] = [cells[j], cells[i]];
      }
      let p1 = 0n, p2 = 0n;
      for (let i = 0; i < pieces; i++) p1 |= 1n << BigInt(cells[i]);
      for (let i = pieces; i < 2 * pieces; i++) p2 |= 1n << BigInt(cells[i]);
      positions.push({ p1, p2, toMove: random() < 0.5 ? 0 : 1 });
    }
    for (const p of positions) {
      const words = new Uint32Array(7);
      words.set(bitboardFromBigInt(p.p1), 0);
      words.set(bitboardFromBigInt(p.p2), 3);
      words[6] = p.toMove;
      const out = new Float64Array(DESCRIBE_FIELDS);
      e.describe(words, 1, out);
      vectors.push({
        board: size,
        pieces,
        rules,
        position: formatPosition(v, p),
        expected: Object.fromEntries(DESCRIBE_NAMES.map((n, i) => [n, out[i]])),
        legalMoves: e.legalMoves(p).map((m) => `${m.from}-${m.to}`),
      });
    }
  }
}
writeFileSync(new URL('./vectors.json', import.meta.url), JSON.stringify({ generatedBy: 'test-vectors/generate.mjs', vectors }, null, 1) + '\n');
console.log(`${vectors.length} vectors`);
