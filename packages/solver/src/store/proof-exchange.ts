/**
 * The proofs of a shared step's workers, exchanged while they run (band-step.ts, runSlice). In
 * pass 1 of a store with schedule 'shared', the W workers of a cluster (or the W slices of a local
 * solve) each hold a copy of the same band and visit the slices of its units they claim first
 * (slice-claims.ts). After its slices a worker publishes what its copy proved since it last did (a
 * proof file of changed 32-bit words, and how far its slices have got) and ORs in the proof files
 * the others have published since: no barrier and no Redis round trip. A proof that comes late is
 * still sound; it only makes a chain of proofs wait, and a part waits (a little) only for another
 * that has fallen far behind (others-progress.ts). The step's finish (runFinish) ORs the
 * committed attempts' files into the band file.
 *
 * Sound because a state's value only goes from UNKNOWN (0) to a value, set by an OR of its bits
 * (BandTable.proveLocal), and a state proven in two copies has the same value in both: every
 * worker's copy is the band as committed plus exact proofs, whatever it has taken from whom and
 * when. A word that would change a value already there is refused (a corrupt or forged file).
 *
 * A worker's file holds its own proofs since its last one: the words where its copy differs from
 * `synced`, the copy as last published with the others' proofs ORed in (whole words: a word may
 * carry another part's proof along). The finish reads the committed attempts' files, all of
 * them. A file of another attempt that does not read (a crash left it short) is skipped: taking
 * the others' proofs is optional.
 *
 * A part must take proofs only of attempts that are committed, though: a proof of an attempt that is
 * not (a part killed and run again, its files left) comes without its messages to other bands,
 * which were in that attempt's pack. 7x7/2 in 3 bands, a coordinator killed after a shared step
 * and its packs lost, parts run again beside the old proof files: a wrong table (CRC-32 48195a81,
 * not 0b785a50), right without the old files. So each part reports the attempts it took from
 * (`took`), and a shared step whose parts took from any attempt not committed is run again from
 * no proof files (cluster/coordinator.ts, and a local solve's store/shared-step.ts).
 *
 * A file: a header of PROOF_HEADER_BYTES (magic, band, generation, part, sequence number, word
 * count, CRC-32 of the rest, and the band unit below which the part's slices are all visited and
 * in its files so far), then the word indices (uint32, ascending) and the words (uint32).
 */
import { existsSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { CHANGED_LINE_STATES, changedLineWords } from '@ccheckers/core';
import { writeFileAtomic } from '../atomic-file.js';
import { crc32Of } from '../crc.js';
import { DatabaseError } from '../database.js';
import { isAttemptToken } from './manifest.js';
import { parseClaimFileName } from './slice-claims.js';
import { refuseIrregular } from './store-files.js';

export const PROOF_FILE = /^proof-b(\d{5,})\.g(\d+)\.w(\d+)\.([0-9a-f]{8})\.(\d+)\.bin$/;
const MAGIC = 'CCPROOF2';
export const PROOF_HEADER_BYTES = 36;
/**
 * When a part publishes, after a slice. The kernel marks the lines of its copy where it proves a
 * state (BandMap.changedLines: 64 bytes, 256 states a line), so a file costs the lines its proofs
 * touch, not the whole copy: a part publishes once it has visited 1/PUBLISHES_PER_STEP of its share
 * of the band's states (1/W of them: at least 40 files a step whatever W), or
 * MAX_UNITS_BETWEEN_FILES units if that comes first. A state left unknown waits REVISIT_LAG (64)
 * units of its part for a revisit, and the proofs it waits for must have reached it by then, parts
 * drifting apart on a loaded machine included. Counted in states and units, not timed, so that a
 * solve's exchanges are the same on any machine.
 *
 * 7x7/3 in 16 bands on 2 workers (a band of 2.2 MiB, 7,700 states a unit: bench/cluster-solve.mjs,
 * seconds publishing summed over pass 1's parts of about 35-42 worker-seconds), when a file was
 * still a scan of the whole copy: a file every 2.9 units, 6.6-7.8 s, the cluster 1.40-1.55x the
 * single process in 5 runs; every 14 units (1/40 of a part's share), 2.0-2.4 s, 1.13-1.33x in 5
 * runs, 5-6 passes (9 once, a build running beside it); every 28 units (1/20), 8 passes. In 4
 * bands without the units' bound (a file every 57 units) the cluster test proved 17.9% in pass 1
 * beside the other tests (95.0-95.5% on a quiet machine), 99.0% with it (98.4% at 32). The scans
 * then kept a part from publishing before it had visited a state per 100 bytes of its copy: a 7x7/4
 * band of 10 (377.7 MiB, 74,738 states a unit) published every 53 units, a 6x6/6 band of 4 GiB
 * would have every 145, past REVISIT_LAG; with the marks both publish every 16.
 */
export const PUBLISHES_PER_STEP = 40;
export const MAX_UNITS_BETWEEN_FILES = 16;
/**
 * A part also publishes once its slices have got MAX_BAND_UNITS_BETWEEN_FILES units of the band
 * further (its own and the others' between them), so that one that runs slower than the others,
 * and so visits few of the units it passes, still has published all but its last few units of
 * the band: the others wait for that (others-progress.ts, WAIT_AFTER_UNITS).
 */
export const MAX_BAND_UNITS_BETWEEN_FILES = 32;
/** The most words a file holds (512 MiB of file; a band of 4 GiB may change 2^30 words). */
export const MAX_FILE_WORDS = 2 ** 26;
/** Seconds between listings of the store's folder for attempts not seen yet (takeOthers). */
const RELIST_SECONDS = 5;
/** The 32-bit words of a line of the changed-lines bitmap (CHANGED_LINE_STATES states). */
const LINE_WORDS = CHANGED_LINE_STATES / 16;

/** Which file: the shared step's band and generation, the worker's part, its attempt, and the
 *  file's number in its attempt (0, 1, ...). */
export interface ProofFileId {
  band: number;
  generation: number;
  part: number;
  attempt: string;
  seq: number;
}

export function proofFileName(id: ProofFileId): string {
  return `proof-b${String(id.band).padStart(5, '0')}.g${id.generation}.w${id.part}.${id.attempt}.${id.seq}.bin`;
}

export function parseProofFileName(name: string): ProofFileId | undefined {
  const m = PROOF_FILE.exec(name);
  return m ? { band: Number(m[1]), generation: Number(m[2]), part: Number(m[3]), attempt: m[4]!, seq: Number(m[5]) } : undefined;
}

/** A proof file's bytes: `count` word indices and words, and `through`: the band unit below which
 *  the part's slices are all visited and in its files up to this one. */
export function encodeProofs(id: ProofFileId, indices: Uint32Array, words: Uint32Array, count: number, through = 0): Uint8Array {
  const bytes = new Uint8Array(PROOF_HEADER_BYTES + count * 8);
  const body = bytes.subarray(PROOF_HEADER_BYTES);
  body.set(new Uint8Array(indices.buffer, indices.byteOffset, count * 4));
  body.set(new Uint8Array(words.buffer, words.byteOffset, count * 4), count * 4);
  const view = new DataView(bytes.buffer);
  for (let i = 0; i < MAGIC.length; i++) bytes[i] = MAGIC.charCodeAt(i);
  [id.band, id.generation, id.part, id.seq, count, crc32Of(body), through].forEach((x, i) => view.setUint32(8 + 4 * i, x, true));
  return bytes;
}

/** The indices and words of a proof file, checked: its header is `id`'s, its CRC-32 its body's,
 *  its indices ascending and within a band of `tableWords` words. A DatabaseError otherwise. */
export function decodeProofs(path: string, bytes: Uint8Array, id: ProofFileId, tableWords: number): { indices: Uint32Array; words: Uint32Array; through: number } {
  const bad = (what: string) => new DatabaseError(path, `not a proof file of band ${id.band}'s shared step (${what})`);
  if (bytes.length < PROOF_HEADER_BYTES) throw bad('too short');
  for (let i = 0; i < MAGIC.length; i++) if (bytes[i] !== MAGIC.charCodeAt(i)) throw bad('no proof file header');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
  const [band, generation, part, seq, count, crc, through] = [0, 1, 2, 3, 4, 5, 6].map((i) => view.getUint32(8 + 4 * i, true)) as [number, number, number, number, number, number, number];
  if (band !== id.band || generation !== id.generation || part !== id.part || seq !== id.seq) throw bad(`its header names band ${band}, generation ${generation}, part ${part}, file ${seq}`);
  if (bytes.length !== PROOF_HEADER_BYTES + count * 8) throw bad(`${bytes.length} bytes for ${count} words`);
  const body = new Uint8Array(bytes.subarray(PROOF_HEADER_BYTES)); // a copy of its own: a Buffer's bytes sit anywhere in a pool
  if (crc32Of(body) !== crc) throw bad('CRC-32 mismatch');
  const indices = new Uint32Array(body.buffer, 0, count);
  const words = new Uint32Array(body.buffer, count * 4, count);
  for (let i = 0; i < count; i++) {
    if (indices[i]! >= tableWords || (i > 0 && indices[i]! <= indices[i - 1]!)) throw bad(`word ${indices[i]} out of order or past the band's ${tableWords} words`);
  }
  // `through` only tells the others how long to wait (a false one costs pass-1 proofs, no value).
  return { indices, words, through };
}

/** Whether OR-ing `word` into `held` would change a 2-bit value already there (0 is unknown). */
export function conflicts(held: number, word: number): boolean {
  const both = (held | (held >>> 1)) & (word | (word >>> 1)) & 0x55555555;
  return ((held ^ word) & (both | (both << 1))) !== 0;
}

/** ORs the words into `table` (and `also`, where given), refusing a change of a value (a
 *  DatabaseError naming `path`). */
export function orProofs(path: string, table: Uint32Array, indices: Uint32Array, words: Uint32Array, also?: Uint32Array): void {
  for (let i = 0; i < indices.length; i++) {
    const at = indices[i]!;
    if (conflicts(table[at]!, words[i]!)) throw new DatabaseError(path, `a proof file that changes a value the band holds (word ${at})`);
    table[at]! |= words[i]!;
    if (also) also[at]! |= words[i]!;
  }
}

/** Reads and checks a proof file of the store (a regular file, its header `id`'s). */
export function readProofFile(dir: string, id: ProofFileId, tableWords: number): { path: string; indices: Uint32Array; words: Uint32Array; through: number } {
  const path = join(dir, proofFileName(id));
  refuseIrregular(path, 'a proof file');
  let bytes: Uint8Array;
  try {
    bytes = readFileSync(path);
  } catch (e) {
    throw new DatabaseError(path, `a shared step's proof file cannot be read (${(e as Error).message}); solve --resume runs the step again`);
  }
  return { path, ...decodeProofs(path, bytes, id, tableWords) };
}

/** The 32-bit words of a band table (its bytes padded with zeros to a whole word: the buffer
 *  behind it is). */
export function tableWords(table: Uint8Array): Uint32Array {
  const words = Math.ceil(table.length / 4);
  if (table.byteOffset % 4 !== 0 || table.buffer.byteLength < table.byteOffset + words * 4) throw new RangeError('tableWords: a table not aligned to whole words');
  return new Uint32Array(table.buffer, table.byteOffset, words);
}

/** One worker's side of a shared step's exchange. */
export class ProofExchange {
  /** Files this worker published (its attempt's files are numbered 0 .. files - 1). */
  files = 0;
  bytesWritten = 0;
  bytesRead = 0;
  /** The attempts whose proofs this one took. */
  readonly took = new Set<string>();
  /** The next file of each other part's attempt seen (by part and attempt). */
  private readonly next = new Map<string, ProofFileId>();
  private listed = Number.NEGATIVE_INFINITY;
  /** Calls of takeOthers so far, and the call that lists the folder next while a part is missing. */
  private calls = 0;
  private nextListing = 1;
  /** Attempts with a file that did not read: not taken any further. */
  private readonly skipped = new Set<string>();
  private readonly copy: Uint32Array;
  private readonly synced: Uint32Array;
  /** The lines of the copy changed since the last file: every kernel call on the copy marks them
   *  (the map of the step's band calls carries it, BandMap.changedLines). */
  readonly changedLines: Uint32Array;
  private indices = new Uint32Array(1024);
  private words = new Uint32Array(1024);
  /** States and units visited since the last file. */
  private visited = 0;
  private visitedUnits = 0;
  /** The band unit below which this part's slices are all visited (publishSoon), and as its last
   *  file said. */
  private through = 0;
  private throughPublished = 0;
  /** By other part: the unit below which its slices are all in the files taken (the most any
   *  attempt of it said). */
  private readonly othersThrough = new Map<number, number>();

  /**
   * `copy`: this worker's copy of the band (its table); `synced`: the copy as last published
   * (where the step starts, a copy of what the worker's first file is to hold changes from). Every
   * change to the copy from then on is a kernel call's, with changedLines in its band map, or
   * another part's proofs (takeOthers, which ORs them into `synced` too).
   */
  constructor(
    private readonly dir: string,
    private readonly id: Omit<ProofFileId, 'seq'>,
    private readonly parts: number,
    copy: Uint8Array,
    synced: Uint8Array,
    private readonly maxFileWords = MAX_FILE_WORDS,
  ) {
    this.copy = tableWords(copy);
    this.synced = tableWords(synced);
    if (this.synced.length !== this.copy.length) throw new RangeError('ProofExchange: copy and synced copy of unequal length');
    this.changedLines = new Uint32Array(changedLineWords(copy.length));
  }

  /** After a slice that visited `states` states in `units` units, its slices all visited below
   *  unit `through` of the band: publish when due (see PUBLISHES_PER_STEP and
   *  MAX_BAND_UNITS_BETWEEN_FILES; the band's states are 4 a byte of the copy, a part's share 1/W). */
  publishSoon(states: number, units: number, through: number): void {
    this.visited += states;
    this.visitedUnits += units;
    this.through = Math.max(this.through, through);
    if (
      this.visitedUnits >= MAX_UNITS_BETWEEN_FILES ||
      this.through - this.throughPublished >= MAX_BAND_UNITS_BETWEEN_FILES ||
      this.visited * PUBLISHES_PER_STEP * this.parts >= 4 * this.copy.byteLength
    ) {
      this.publish();
    }
  }

  /** Writes this copy's proofs since the last file, in files of at most MAX_FILE_WORDS words
   *  (`through`, given, is where this part's slices have got; no proof and no progress: no file). */
  publish(through = this.through): void {
    this.through = Math.max(this.through, through);
    const count = this.changedWords();
    if (count > 0 || this.through > this.throughPublished) {
      let from = 0;
      do {
        const n = Math.min(this.maxFileWords, count - from);
        // Only the last file of several holds all the proofs below `through`.
        const last = from + n === count;
        const bytes = encodeProofs({ ...this.id, seq: this.files }, this.indices.subarray(from), this.words.subarray(from), n, last ? this.through : this.throughPublished);
        // Not flushed: a file lost in a crash fails the finish, and the step runs again.
        writeFileAtomic(join(this.dir, proofFileName({ ...this.id, seq: this.files })), bytes, { syncFolder: false, flush: false, tag: this.id.attempt });
        this.files++;
        this.bytesWritten += bytes.length;
        from += n;
      } while (from < count);
      this.throughPublished = this.through;
    }
    this.visited = 0;
    this.visitedUnits = 0;
  }

  /** Takes the files of `part`'s attempt `attempt` from now on (its claim of a slice named it:
   *  slice-claims.ts), without waiting for a listing of the folder to show it. */
  expect(part: number, attempt: string): void {
    if (part === this.id.part || part >= this.parts || !isAttemptToken(attempt)) return;
    const key = `${part}.${attempt}`;
    if (!this.next.has(key) && !this.skipped.has(key)) this.next.set(key, { ...this.id, part, attempt, seq: 0 });
  }

  /** The band unit below which `part`'s slices are all in the files this part has taken. */
  publishedThrough(part: number): number {
    return this.othersThrough.get(part) ?? 0;
  }

  /**
   * After the last file: the copy must be what was published. A change the kernel did not mark
   * would be a proof never published (silently: a later pass proves it again), so it is an
   * error here; one comparison of the copy a step.
   */
  checkPublished(): void {
    const { copy, synced } = this;
    if (Buffer.compare(new Uint8Array(copy.buffer, copy.byteOffset, copy.byteLength), new Uint8Array(synced.buffer, synced.byteOffset, synced.byteLength)) !== 0) {
      throw new Error(`band ${this.id.band}, part ${this.id.part}: the copy holds proofs no file published (a kernel call that did not mark its lines)`);
    }
  }

  /**
   * ORs in the files of the other parts not taken yet. An attempt's files come in order, so each
   * attempt seen is followed by its next number; the folder is listed (for attempts not seen yet:
   * a part that starts late, or runs again) every RELIST_SECONDS, and while a part has none at
   * the 1st, 2nd, 4th, 8th ... call (a step of 7x7/3 writes a file per part and unit: listing the
   * folder at every slice made the parts 5 times slower than the serial step; the folder holds a
   * claim file per slice too, slice-claims.ts, so a part that runs alone and listed it at every
   * slice would take time in the square of the slices), and when `listNow` says so (a part
   * waiting for another: others-progress.ts).
   */
  takeOthers(listNow = false): void {
    const now = performance.now();
    const missing = new Set([...this.next.values()].map((id) => id.part)).size < this.parts - 1;
    this.calls++;
    if (listNow || (missing && this.calls >= this.nextListing) || now - this.listed > RELIST_SECONDS * 1000) {
      this.listed = now;
      if (missing) this.nextListing = 2 * this.calls;
      for (const name of readdirSync(this.dir)) {
        const id = parseProofFileName(name);
        if (!id || id.band !== this.id.band || id.generation !== this.id.generation || id.part === this.id.part) continue;
        const key = `${id.part}.${id.attempt}`;
        if (!this.next.has(key) && !this.skipped.has(key)) this.next.set(key, { ...id, seq: 0 });
      }
    }
    for (const [key, id] of this.next) {
      while (existsSync(join(this.dir, proofFileName(id)))) {
        let file: ReturnType<typeof readProofFile>;
        try {
          file = readProofFile(this.dir, id, this.copy.length);
        } catch (e) {
          if (!(e instanceof DatabaseError)) throw e;
          this.next.delete(key);
          this.skipped.add(key);
          break;
        }
        const { path, indices, words, through } = file;
        orProofs(path, this.copy, indices, words, this.synced);
        this.othersThrough.set(id.part, Math.max(this.publishedThrough(id.part), through));
        this.took.add(id.attempt);
        this.bytesRead += PROOF_HEADER_BYTES + indices.length * 8;
        id.seq++;
      }
    }
  }

  /** The words where the copy differs from `synced`, into indices/words (ascending); `synced`
   *  follows, and the marks are cleared. Only the marked lines are compared. */
  private changedWords(): number {
    const { copy, synced, changedLines } = this;
    let count = 0;
    for (let at = 0; at < changedLines.length; at++) {
      let marks = changedLines[at]!;
      if (marks === 0) continue;
      changedLines[at] = 0;
      while (marks !== 0) {
        const lowest = marks & -marks;
        marks ^= lowest;
        const from = (at * 32 + 31 - Math.clz32(lowest)) * LINE_WORDS;
        const to = Math.min(copy.length, from + LINE_WORDS);
        for (let i = from; i < to; i++) {
          const word = copy[i]!;
          if (word === synced[i]) continue;
          if (count === this.indices.length) this.grow();
          this.indices[count] = i;
          this.words[count++] = word;
          synced[i] = word;
        }
      }
    }
    return count;
  }

  private grow(): void {
    const indices = new Uint32Array(this.indices.length * 2);
    const words = new Uint32Array(this.words.length * 2);
    indices.set(this.indices);
    words.set(this.words);
    this.indices = indices;
    this.words = words;
  }
}

/** Whether the parts of a shared step took proofs only from one another's attempts (`took`), as
 *  the step may commit them: else they run again, from no proof files (see the top of the file). */
export function partsTookOnlyFromEachOther(parts: ReadonlyArray<{ attempt: string; took: readonly string[] }>): boolean {
  const attempts = new Set(parts.map((p) => p.attempt));
  return parts.every((p) => p.took.every((t) => attempts.has(t)));
}

/** Removes every proof file of band `band`'s shared step at `generation` (all parts and
 *  attempts), and its claims of slices (slice-claims.ts): the step runs again from none. */
export function removeProofFiles(dir: string, band: number, generation: number): void {
  for (const name of readdirSync(dir)) {
    const id = parseProofFileName(name) ?? parseClaimFileName(name);
    if (id && id.band === band && id.generation === generation) rmSync(join(dir, name), { force: true });
  }
}
