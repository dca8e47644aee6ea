/**
 * The proofs of a shared step's parts (store/proof-exchange.ts): files that hold exactly what a
 * copy proved since its last one, taken by the other parts as an OR, checked before use.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CHANGED_LINE_STATES, seededRandom } from '@ccheckers/core';
import { afterAll, describe, expect, it } from 'vitest';
import { DatabaseError } from '../src/index.js';
import { MAX_BAND_UNITS_BETWEEN_FILES, MAX_UNITS_BETWEEN_FILES, PROOF_HEADER_BYTES, PUBLISHES_PER_STEP, ProofExchange, conflicts, decodeProofs, encodeProofs, proofFileName, readProofFile } from '../src/store/proof-exchange.js';

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});
function newDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'ccheckers-proofs-'));
  dirs.push(dir);
  return dir;
}

const at = (t: Uint8Array, i: number) => (t[Math.floor(i / 4)]! >> ((i % 4) * 2)) & 3;
const set = (t: Uint8Array, i: number, v: number) => (t[Math.floor(i / 4)]! |= v << ((i % 4) * 2));
/** Sets a value in a part's copy and marks its line, as a kernel call does (BandMap.changedLines). */
function prove(exchange: ProofExchange, t: Uint8Array, i: number, v: number): void {
  set(t, i, v);
  const line = Math.floor(i / CHANGED_LINE_STATES);
  exchange.changedLines[Math.floor(line / 32)]! |= 1 << line % 32;
}
/** A band table of `states` states in a buffer of whole words (as BandStepper's), zero past it. */
const table = (states: number) => new Uint8Array(new ArrayBuffer(Math.ceil(states / 16) * 4), 0, Math.ceil(states / 4));
/** Parts 0 (the writer, files of at most `maxFileWords` words) and 1 (the reader) of a shared step
 *  of band 0 in a new folder, each with its copy (`a`, `b`) of a band of `states` states. */
function twoParts(states: number, maxFileWords?: number) {
  const dir = newDir();
  const [a, b, sa, sb] = [0, 1, 2, 3].map(() => table(states)) as [Uint8Array, Uint8Array, Uint8Array, Uint8Array];
  const writer = new ProofExchange(dir, { band: 0, generation: 1, part: 0, attempt: 'aaaaaaaa' }, 2, a, sa, maxFileWords);
  const reader = new ProofExchange(dir, { band: 0, generation: 1, part: 1, attempt: 'bbbbbbbb' }, 2, b, sb);
  return { dir, a, b, writer, reader };
}

describe('proof exchange', () => {
  /** Files a part has published after visiting each of `slices` slices of `states` states in
   *  `units` units (a proof in each, so that each publication is a file), in a band of `bytes`; its
   *  slices `apart` units of the band apart (the others' between them). */
  function filesAfterSlices(parts: number, bytes: number, slices: number, states: number, units: number, apart = units): number[] {
    const dir = newDir();
    const copy = table(4 * bytes);
    const exchange = new ProofExchange(dir, { band: 0, generation: 1, part: 0, attempt: '00000000' }, parts, copy, table(4 * bytes));
    const files: number[] = [];
    for (let slice = 1; slice <= slices; slice++) {
      prove(exchange, copy, slice, 1);
      exchange.publishSoon(states, units, slice * apart);
      files.push(exchange.files);
    }
    expect(readdirSync(dir)).toHaveLength(exchange.files);
    return files;
  }

  it('publishes after each 1/PUBLISHES_PER_STEP of a part\'s share of the band, for any number of parts', () => {
    const bytes = 40_000; // 160,000 states, in slices of a state and no whole unit
    for (const parts of [1, 2, 8]) {
      const between = (4 * bytes) / parts / PUBLISHES_PER_STEP;
      const files = filesAfterSlices(parts, bytes, (4 * bytes) / parts, 1, 0);
      files.forEach((n, i) => expect(n, `${parts} parts, ${i + 1} states`).toBe(Math.floor((i + 1) / between)));
      expect(files.at(-1)).toBe(PUBLISHES_PER_STEP);
    }
  });

  it('publishes every MAX_UNITS_BETWEEN_FILES units when that comes first, in a band of any size', () => {
    // Units of 1,000 states in a band of 400,000 bytes: 1/40 of a part's share of 2 is 20 units,
    // the units' bound 16.
    expect(filesAfterSlices(2, 400_000, 64, 1000, 1)).toEqual(Array.from({ length: 64 }, (_, i) => Math.floor((i + 1) / MAX_UNITS_BETWEEN_FILES)));
    // Units of 100 states (a band of 4,000 units, where a scan of the whole copy once waited for
    // 40 units): still a file every 16.
    expect(filesAfterSlices(2, 400_000, 120, 100, 1)).toEqual(Array.from({ length: 120 }, (_, i) => Math.floor((i + 1) / MAX_UNITS_BETWEEN_FILES)));
    // Units of 10,000 states: 1/40 of the share (20,000 states) comes first, every 2 units.
    expect(filesAfterSlices(2, 400_000, 40, 10_000, 1)).toEqual(Array.from({ length: 40 }, (_, i) => Math.floor((i + 1) / 2)));
  });

  it('publishes every MAX_BAND_UNITS_BETWEEN_FILES units of the band when its slices are further apart (a part slower than the others)', () => {
    // Slices of a unit, 4 units of the band apart: a file every 8 slices, not 16.
    expect(MAX_BAND_UNITS_BETWEEN_FILES).toBe(2 * MAX_UNITS_BETWEEN_FILES);
    expect(filesAfterSlices(2, 400_000, 64, 100, 1, 4)).toEqual(Array.from({ length: 64 }, (_, i) => Math.floor((i + 1) / 8)));
    // At the pace of the others (2 units apart for 2 parts), the units' bound as before.
    expect(filesAfterSlices(2, 400_000, 64, 100, 1, 2)).toEqual(Array.from({ length: 64 }, (_, i) => Math.floor((i + 1) / MAX_UNITS_BETWEEN_FILES)));
  });

  it('says in each file how far its part has got, a file of no proofs too; a part named by its claim is read without a listing', () => {
    const states = 4 * CHANGED_LINE_STATES;
    const { dir, a, b, writer, reader } = twoParts(states);
    reader.takeOthers(); // the folder listed at the first take: nothing yet (the next listing at the 2nd)
    reader.takeOthers();
    reader.takeOthers(); // the 3rd: not listed
    prove(writer, a, 9, 1);
    writer.publishSoon(100, 1, 7);
    writer.publish();
    expect(writer.files).toBe(1);
    reader.takeOthers(); // the 4th: listed, found
    expect(reader.publishedThrough(0)).toBe(7);
    expect(at(b, 9)).toBe(1);
    // No proof since, but further on: a file of no words, which says so.
    writer.publish(12);
    expect(writer.files).toBe(2);
    writer.publish(12); // neither: no file
    expect(writer.files).toBe(2);
    reader.takeOthers();
    expect(reader.publishedThrough(0)).toBe(12);
    expect(reader.publishedThrough(1)).toBe(0); // its own part, never published to itself
    // A part's attempt not listed yet: named (by the claim it made), its files are taken at the
    // next take, whatever the listing's schedule.
    const late = new ProofExchange(dir, { band: 0, generation: 1, part: 0, attempt: 'cccccccc' }, 2, table(states), table(states));
    late.publish(30);
    for (let i = 0; i < 3; i++) reader.takeOthers(); // the 8th take lists the folder; these are the 5th to 7th
    expect(reader.publishedThrough(0)).toBe(12);
    reader.expect(0, 'cccccccc');
    reader.expect(5, 'dddddddd'); // no part 5 of 2, and its own part: ignored
    reader.expect(1, 'eeeeeeee');
    reader.expect(0, '../x');
    reader.takeOthers();
    expect(reader.publishedThrough(0)).toBe(30);
    expect([...reader.took].sort()).toEqual(['aaaaaaaa', 'cccccccc']);
  });

  it('publishes the words of the lines marked, and only those', () => {
    const states = 4 * CHANGED_LINE_STATES;
    const { dir, a, b, writer, reader } = twoParts(states);
    prove(writer, a, 1, 2); // line 0
    prove(writer, a, 2 * CHANGED_LINE_STATES + 17, 1); // line 2
    prove(writer, a, 3 * CHANGED_LINE_STATES - 1, 3); // line 2's last state
    set(a, CHANGED_LINE_STATES + 5, 1); // line 1, not marked: not a kernel's proof
    writer.publish();
    expect(writer.changedLines.every((w) => w === 0)).toBe(true);
    reader.takeOthers();
    for (let i = 0; i < states; i++) expect(at(b, i), `state ${i}`).toBe(i === CHANGED_LINE_STATES + 5 ? 0 : at(a, i));
    writer.publish(); // nothing marked since: no file
    expect(writer.files).toBe(1);
    // The change not marked is a proof no file holds: the step's end says so.
    expect(() => writer.checkPublished()).toThrow(/band 0, part 0: the copy holds proofs no file published/);
    reader.checkPublished(); // the others' proofs are in its copy and its synced copy alike
  });

  it('gives each part every part\'s proofs, the byte past the last whole word too, and publishes only its own', () => {
    const dir = newDir();
    const random = seededRandom(11);
    const states = 4 * 4096 + 3; // a byte past the last whole word
    const value = (i: number) => 1 + (i % 3);
    const common = table(states);
    for (let i = 0; i < states; i += 7) set(common, i, value(i));
    const parts = 3;
    const copies = Array.from({ length: parts }, () => table(states));
    const synced = Array.from({ length: parts }, () => table(states));
    for (let w = 0; w < parts; w++) {
      copies[w]!.set(common);
      synced[w]!.set(common);
    }
    const exchanges = copies.map((copy, part) => new ProofExchange(dir, { band: 2, generation: 9, part, attempt: `0000000${part}` }, parts, copy, synced[part]!));
    const proven = new Set<number>();
    for (let round = 0; round < 4; round++) {
      for (let w = 0; w < parts; w++) {
        for (let k = 0; k < 300; k++) {
          const i = Math.floor(random() * states);
          prove(exchanges[w]!, copies[w]!, i, value(i)); // some states proven by two parts, with the same value
          proven.add(i);
        }
        if (round === 3 && w === 2) {
          prove(exchanges[w]!, copies[w]!, states - 1, value(states - 1));
          proven.add(states - 1);
        }
        exchanges[w]!.publish();
        exchanges[w]!.takeOthers();
      }
    }
    for (const e of exchanges) e.takeOthers();
    for (let w = 0; w < parts; w++) {
      for (let i = 0; i < states; i++) expect(at(copies[w]!, i), `part ${w}, state ${i}`).toBe(i % 7 === 0 || proven.has(i) ? value(i) : 0);
      expect(exchanges[w]!.files).toBe(4);
      // The attempts it took from: the step stands only if they are all committed.
      expect([...exchanges[w]!.took].sort()).toEqual(['00000000', '00000001', '00000002'].filter((a) => a !== `0000000${w}`));
    }
    // What is shared is what changed: no file holds a word of the common table alone.
    const words = new Uint32Array(common.buffer);
    for (const name of readdirSync(dir)) {
      const id = { band: 2, generation: 9, part: Number(/\.w(\d)\./.exec(name)![1]), attempt: /\.([0-9a-f]{8})\./.exec(name)![1]!, seq: Number(/\.(\d+)\.bin$/.exec(name)![1]) };
      const { indices, words: proven } = readProofFile(dir, id, words.length);
      for (let k = 0; k < indices.length; k++) expect(proven[k]).not.toBe(words[indices[k]!]);
    }
  });

  it('looks for a part not seen yet at its 1st, 2nd, 4th, 8th ... take, not at every one (a claim file a slice is in the folder too)', () => {
    const dir = newDir();
    const states = 4096;
    const [a, b] = [table(states), table(states)];
    const [ea, eb] = [0, 1].map((part) => new ProofExchange(dir, { band: 1, generation: 2, part, attempt: `0000000${part}` }, 2, [a, b][part]!, table(states)));
    const tookAt: number[] = [];
    for (let take = 1; take <= 20; take++) {
      ea!.takeOthers();
      if (take === 5) {
        prove(eb!, b, 77, 2);
        eb!.publish();
      }
      if (at(a, 77) !== 0 && tookAt.length === 0) tookAt.push(take);
    }
    // Published after the 5th take: listed again at the 8th, then followed by name.
    expect(tookAt).toEqual([8]);
    prove(eb!, b, 78, 1);
    eb!.publish();
    ea!.takeOthers();
    expect(at(a, 78)).toBe(1);
  });

  it('sees a value changed in a word: the conflict a forged or corrupt file would make', () => {
    expect(conflicts(0, 0b01_10_11)).toBe(false);
    expect(conflicts(0b01_00_11, 0b01_10_11)).toBe(false); // the same values, and one new
    expect(conflicts(0b01, 0b10)).toBe(true);
    expect(conflicts(0b11 << 30, 0b01 << 30)).toBe(true); // the top state, as unsigned words are
    expect(conflicts(0b01 << 30, 0b01 << 28)).toBe(false);
  });

  it('refuses a file of another band, part or number, a bad CRC, words out of order or past the band, a changed value', () => {
    const dir = newDir();
    const id = { band: 1, generation: 3, part: 0, attempt: 'abcdef01', seq: 0 };
    const good = encodeProofs(id, Uint32Array.of(1, 5), Uint32Array.of(0b01, 0b10), 2, 77);
    expect(decodeProofs('f', good, id, 6)).toEqual({ indices: Uint32Array.of(1, 5), words: Uint32Array.of(0b01, 0b10), through: 77 });
    // The first version's files (a header of 32 bytes) are not this one's.
    const first = good.slice();
    first.set(Buffer.from('CCPROOF1'));
    expect(() => decodeProofs('f', first, id, 6)).toThrow(/no proof file header/);
    expect(() => decodeProofs('f', good, { ...id, part: 1 }, 6)).toThrow(/its header names band 1, generation 3, part 0/);
    expect(() => decodeProofs('f', good, { ...id, seq: 1 }, 6)).toThrow(DatabaseError);
    expect(() => decodeProofs('f', good, id, 5)).toThrow(/past the band's 5 words/);
    expect(() => decodeProofs('f', encodeProofs(id, Uint32Array.of(5, 1), Uint32Array.of(1, 1), 2), id, 6)).toThrow(/out of order/);
    const flipped = good.slice();
    flipped[PROOF_HEADER_BYTES + 9]! ^= 4;
    expect(() => decodeProofs('f', flipped, id, 6)).toThrow(/CRC-32 mismatch/);
    expect(() => decodeProofs('f', good.subarray(0, good.length - 1), id, 6)).toThrow(/bytes for 2 words/);
    // A file on disk with a value the band holds otherwise.
    writeFileSync(join(dir, proofFileName(id)), good);
    const copy = table(6 * 16);
    const synced = table(6 * 16);
    new Uint32Array(copy.buffer)[5] = 0b01;
    const other = new ProofExchange(dir, { ...id, part: 1 }, 2, copy, synced);
    expect(() => other.takeOthers()).toThrow(/changes a value the band holds \(word 5\)/);
    expect(readFileSync(join(dir, proofFileName(id)))).toEqual(Buffer.from(good));
  });

  it('cuts a publication into files of at most the cap, and the others take them all', () => {
    const states = 16 * 64;
    const { dir, a, b, writer, reader } = twoParts(states, 10);
    for (let i = 0; i < states; i += 16) prove(writer, a, i + 5, 2); // a state in each of 64 words
    writer.publish(50);
    expect(writer.files).toBe(7); // 64 words in files of 10
    // Only the last file says the part has got to unit 50: the others do not hold all its proofs.
    const through = Array.from({ length: 7 }, (_, seq) => readProofFile(dir, { band: 0, generation: 1, part: 0, attempt: 'aaaaaaaa', seq }, states / 16).through);
    expect(through).toEqual([0, 0, 0, 0, 0, 0, 50]);
    reader.takeOthers();
    expect(b).toEqual(a);
    expect(reader.publishedThrough(0)).toBe(50);
  });

  it('skips a file of another part that does not read (a crash left it short), which the finish refuses', () => {
    const { dir, a, b, writer, reader } = twoParts(16 * 8);
    prove(writer, a, 3, 1);
    writer.publish();
    prove(writer, a, 40, 1);
    writer.publish();
    const first = join(dir, proofFileName({ band: 0, generation: 1, part: 0, attempt: 'aaaaaaaa', seq: 0 }));
    writeFileSync(first, readFileSync(first).subarray(0, PROOF_HEADER_BYTES + 3));
    reader.takeOthers();
    expect(b.every((x) => x === 0)).toBe(true); // the attempt is not taken past its short file
    expect(() => readProofFile(dir, { band: 0, generation: 1, part: 0, attempt: 'aaaaaaaa', seq: 0 }, 8)).toThrow(/bytes for 1 words/);
  });
});
