/**
 * The one atomic-file module (solver/src/atomic-file.ts): a file appears whole or not at all, a
 * write that throws leaves nothing behind, 'new' never replaces what is there, a refused complete
 * file is kept under its temporary name, and writes of any size go in calls of bounded size.
 */
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { AtomicTargetExists, IO_CHUNK_BYTES, writeAllAt, writeFileAtomic, writeFileAtomicAsync } from '../src/atomic-file.js';

const root = mkdtempSync(join(tmpdir(), 'ccheckers-atomic-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let folders = 0;
/** A fresh folder per test, so that "nothing else is there" can be asserted. */
const folder = () => mkdtempSync(join(root, `${folders++}-`));
const bytes = (n: number, seed = 1) => Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed) & 0xff);

describe('writeFileAtomic', () => {
  it('writes bytes, pieces and positioned writes with holes; no temporary file stays', () => {
    const dir = folder();
    writeFileAtomic(join(dir, 'a'), bytes(100));
    writeFileAtomic(join(dir, 'b'), [bytes(3, 7), bytes(5, 9)]);
    writeFileAtomic(join(dir, 'c'), (f) => {
      f.truncate(20);
      f.write(bytes(4, 3), 10);
    });
    expect(readdirSync(dir).sort()).toEqual(['a', 'b', 'c']);
    expect(new Uint8Array(readFileSync(join(dir, 'a')))).toEqual(bytes(100));
    expect(new Uint8Array(readFileSync(join(dir, 'b')))).toEqual(Uint8Array.from([...bytes(3, 7), ...bytes(5, 9)]));
    const c = new Uint8Array(readFileSync(join(dir, 'c')));
    expect(c).toEqual(Uint8Array.from([...new Uint8Array(10), ...bytes(4, 3), ...new Uint8Array(6)]));
  });

  it('a write that throws leaves the old file as it was and no temporary file', () => {
    const dir = folder();
    const path = join(dir, 'db');
    writeFileSync(path, 'old');
    expect(() =>
      writeFileAtomic(path, (f) => {
        f.write(bytes(1000), 0);
        throw new Error('disk on fire');
      }),
    ).toThrow('disk on fire');
    expect(readdirSync(dir)).toEqual(['db']);
    expect(readFileSync(path, 'utf8')).toBe('old');
    // And where there was no file, there is none.
    expect(() =>
      writeFileAtomic(join(dir, 'new'), () => {
        throw new Error('no');
      }, { placement: 'new' }),
    ).toThrow('no');
    expect(readdirSync(dir)).toEqual(['db']);
  });

  it("replaces by default; 'new' refuses an existing target and keeps the new file aside", () => {
    const dir = folder();
    const path = join(dir, 'out');
    writeFileSync(path, 'first');
    writeFileAtomic(path, Buffer.from('second'));
    expect(readFileSync(path, 'utf8')).toBe('second');

    let error: unknown;
    try {
      writeFileAtomic(path, Buffer.from('third'), { placement: 'new', tag: 'T' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(AtomicTargetExists);
    expect((error as AtomicTargetExists).code).toBe('EEXIST');
    expect((error as Error).message).toContain(`${path}.tmp-T`);
    expect(readFileSync(path, 'utf8')).toBe('second');
    expect(readFileSync(`${path}.tmp-T`, 'utf8')).toBe('third');

    writeFileAtomic(join(dir, 'fresh'), Buffer.from('x'), { placement: 'new' });
    expect(readFileSync(join(dir, 'fresh'), 'utf8')).toBe('x');
    expect(readdirSync(dir).sort()).toEqual(['fresh', 'out', 'out.tmp-T']);
  });

  it('a check that refuses keeps the complete file under its temporary name, the path untouched', () => {
    const dir = folder();
    const path = join(dir, 'page.html');
    const seen: string[] = [];
    expect(() =>
      writeFileAtomic(path, Buffer.from('<p>'), {
        check: (tmp) => {
          seen.push(tmp);
          throw new Error(`refused; kept in ${tmp}`);
        },
      }),
    ).toThrow(/refused; kept in .*page\.html\.tmp-/);
    expect(seen).toHaveLength(1);
    expect(readFileSync(seen[0]!, 'utf8')).toBe('<p>');
    expect(readdirSync(dir)).toHaveLength(1);
  });

  it('a given tag replaces a leftover of the same name', () => {
    const dir = folder();
    writeFileSync(join(dir, 'f.tmp-42'), 'leftover of a killed run');
    writeFileAtomic(join(dir, 'f'), Buffer.from('new'), { tag: '42' });
    expect(readdirSync(dir)).toEqual(['f']);
    expect(readFileSync(join(dir, 'f'), 'utf8')).toBe('new');
  });

  it('copyOf starts from a copy of a file, which the writes change', () => {
    const dir = folder();
    const path = join(dir, 'db');
    writeFileSync(path, 'HEADER-and-a-body');
    writeFileAtomic(path, (f) => f.write(Buffer.from('header'), 0), { copyOf: path });
    expect(readFileSync(path, 'utf8')).toBe('header-and-a-body');
    expect(readdirSync(dir)).toEqual(['db']);
  });

  it('large writes go in calls of at most the chunk size, short writes resumed', () => {
    const calls: Array<{ offset: number; length: number; position: number }> = [];
    const sink = new Uint8Array(1000);
    // A writer that writes at most 5 bytes of what it is asked, as a kernel may.
    const shortWriter = ((_fd: number, data: Uint8Array, offset: number, length: number, position: number) => {
      calls.push({ offset, length, position });
      const n = Math.min(length, 5);
      sink.set(data.subarray(offset, offset + n), position);
      return n;
    }) as unknown as typeof writeSync;
    const data = bytes(23);
    writeAllAt(-1, data, 100, 7, shortWriter);
    expect(sink.subarray(100, 123)).toEqual(data);
    expect(Math.max(...calls.map((c) => c.length))).toBe(7);
    expect(calls.map((c) => c.position)).toEqual([100, 105, 110, 115, 120]);
    expect(calls.every((c) => c.position - 100 === c.offset)).toBe(true);
    expect(IO_CHUNK_BYTES).toBeLessThanOrEqual(2 ** 31);

    // And through a whole atomic write, with a real file.
    const dir = folder();
    const big = bytes(1001);
    writeFileAtomic(join(dir, 'big'), (f) => f.write(big, 3), { maxChunkBytes: 10 });
    expect(new Uint8Array(readFileSync(join(dir, 'big')))).toEqual(Uint8Array.from([0, 0, 0, ...big]));
  });
});

describe('writeFileAtomicAsync', () => {
  it('writes pieces in small chunks; an error leaves nothing; new refuses a target', async () => {
    const dir = folder();
    await writeFileAtomicAsync(join(dir, 'a'), [bytes(50, 2), bytes(13, 4)], { maxChunkBytes: 8, syncFolder: false });
    expect(new Uint8Array(readFileSync(join(dir, 'a')))).toEqual(Uint8Array.from([...bytes(50, 2), ...bytes(13, 4)]));

    // The second piece throws when it is written.
    const broken = [bytes(10), Object.defineProperty(bytes(10), 'length', { get: () => { throw new Error('bad piece'); } })];
    await expect(writeFileAtomicAsync(join(dir, 'b'), broken)).rejects.toThrow('bad piece');
    expect(readdirSync(dir)).toEqual(['a']);

    await expect(writeFileAtomicAsync(join(dir, 'a'), bytes(3), { placement: 'new', tag: 'x' })).rejects.toBeInstanceOf(AtomicTargetExists);
    expect(new Uint8Array(readFileSync(join(dir, 'a')))).toHaveLength(63);
    expect(readdirSync(dir).sort()).toEqual(['a', 'a.tmp-x']);
  });
});
