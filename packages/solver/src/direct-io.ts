/**
 * Databases and checkpoints of gigabytes written and read past the page cache (O_DIRECT). On a
 * virtual machine, every fresh page-cache page a buffered write or read fills can cost a fault in
 * the host: 7x7/4's 3.96 GB table took 14.7 s to write buffered the first time and 2.7 s this way
 * on the AMD machine (docs/performance.md), and a solve writes it at each checkpoint and at the
 * end, and reads it back to resume.
 *
 * O_DIRECT wants the memory, the file position and the length aligned to the disk's blocks, so the
 * bytes go through a staging buffer the caller allocates aligned (the native addon's tables are
 * 2 MiB aligned), in whole blocks: a write from the file's start, the tail that fills no block
 * through the ordinary descriptor; a read of the blocks that hold the bytes asked for. Where the OS
 * or the filesystem has no O_DIRECT, or refuses a call with EINVAL (a staging buffer not aligned
 * after all), the rest goes the ordinary way: the same bytes either way. A staging buffer of zeros
 * is left a hole, as writeBody leaves zero chunks.
 */
import { closeSync, constants, ftruncateSync, openSync, readSync } from 'node:fs';
import { IO_CHUNK_BYTES, writeAllAt } from './atomic-file.js';

/** The alignment every O_DIRECT call keeps (a multiple of any disk's logical block). */
export const DIRECT_BLOCK_BYTES = 4096;
/** The staging buffer a solve allocates for its writes and reads. */
export const DIRECT_STAGING_BYTES = 2 ** 24;

/** A second descriptor of the file open as `fd`, past the page cache, for writes (or reads:
 *  `forReading`); undefined where the OS or filesystem has none. Opened through /proc, not by
 *  the file's name: a path replaced since is not what is written or read. */
export function openDirect(fd: number, forReading = false): number | undefined {
  const flag = (constants as Record<string, number | undefined>).O_DIRECT;
  if (!flag) return undefined;
  try {
    return openSync(`/proc/self/fd/${fd}`, (forReading ? constants.O_RDONLY | constants.O_NONBLOCK : constants.O_WRONLY) | flag);
  } catch {
    return undefined; // no O_DIRECT here (EINVAL), or no /proc: the ordinary way
  }
}

function checkStaging(staging: Uint8Array): void {
  if (staging.length === 0 || staging.length % DIRECT_BLOCK_BYTES !== 0) throw new RangeError(`a staging buffer of ${staging.length} bytes (a multiple of ${DIRECT_BLOCK_BYTES} wanted)`);
}

const refused = (e: unknown) => (e as NodeJS.ErrnoException).code === 'EINVAL';

/** The calls made on a descriptor past the page cache (tests make them fail as an OS refusing
 *  them would: which memory a kernel takes for O_DIRECT differs from disk to disk). */
export const directCalls = {
  write: (fd: number, data: Uint8Array, position: number) => writeAllAt(fd, data, position),
  read: (fd: number, into: Uint8Array, offset: number, length: number, position: number) => readSync(fd, into, offset, length, position),
};

/** Reads of a file past the page cache (see the top), for a reader that has it open already. */
export class DirectReader {
  private fd: number | undefined;
  /** Bytes that came past the page cache. */
  directBytes = 0;

  /** `fd`: the file, open for reading (openDirect opens it again). */
  constructor(
    fd: number,
    private readonly staging: Uint8Array,
  ) {
    checkStaging(staging);
    this.fd = openDirect(fd, true);
  }

  /** Fills `into` from `position` on; false where it cannot go past the page cache (nothing to
   *  rely on in `into`: read it the ordinary way, as everything after). */
  read(into: Uint8Array, position: number): boolean {
    if (this.fd === undefined) return false;
    try {
      for (let at = 0; at < into.length; ) {
        const from = position + at;
        const skip = from % DIRECT_BLOCK_BYTES; // the bytes before `from` in its block
        const blocks = Math.ceil((skip + into.length - at) / DIRECT_BLOCK_BYTES) * DIRECT_BLOCK_BYTES;
        const got = directCalls.read(this.fd, this.staging, 0, Math.min(this.staging.length, blocks), from - skip);
        const n = Math.min(got - skip, into.length - at); // the file may end in the last block
        if (n <= 0) throw new Error('unexpected end of file');
        into.set(this.staging.subarray(skip, skip + n), at);
        at += n;
      }
      this.directBytes += into.length;
      return true;
    } catch (e) {
      if (!refused(e)) throw e;
      this.close();
      return false;
    }
  }

  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }
}

/** Sequential writes of a file from its start, whole blocks past the page cache (see the top). */
export class DirectAppender {
  private filled = 0; // bytes waiting in staging
  private position = 0; // the file position of staging[0]
  private written = 0; // where the last bytes written end (holes after it need the file extended)
  private directFd: number | undefined;
  /** Bytes that went past the page cache. */
  directBytes = 0;

  /** `fd`: the file, open for writing (openDirect opens it again). */
  constructor(
    private readonly fd: number,
    private readonly staging: Uint8Array,
  ) {
    checkStaging(staging);
    this.directFd = openDirect(fd);
  }

  /** Appends all of `bytes`. */
  append(bytes: Uint8Array): void {
    for (let at = 0; at < bytes.length; ) {
      const n = Math.min(this.staging.length - this.filled, bytes.length - at);
      this.staging.set(bytes.subarray(at, at + n), this.filled);
      this.filled += n;
      at += n;
      if (this.filled === this.staging.length) this.flush();
    }
  }

  /** Appends `length` zero bytes; whole staging buffers of them are holes, never filled. */
  appendZeros(length: number): void {
    let left = length;
    if (this.filled > 0) {
      const n = Math.min(this.staging.length - this.filled, left);
      this.staging.fill(0, this.filled, this.filled + n);
      this.filled += n;
      left -= n;
      if (this.filled === this.staging.length) this.flush();
    }
    if (left === 0) return;
    // The staging buffer is empty here: whole buffers of zeros are skipped, the rest staged.
    const whole = left - (left % this.staging.length);
    this.position += whole;
    left -= whole;
    this.staging.fill(0, 0, left);
    this.filled = left;
  }

  /** Writes what is left and closes the second descriptor; returns the file's length. */
  finish(): number {
    const blocks = this.filled - (this.filled % DIRECT_BLOCK_BYTES);
    const tail = this.staging.subarray(blocks, this.filled);
    const end = this.position + this.filled;
    this.writeOut(this.staging.subarray(0, blocks));
    if (tail.length > 0 && !isZero(tail)) {
      writeAllAt(this.fd, tail, this.position);
      this.written = end;
    }
    this.position = end;
    this.filled = 0;
    if (this.written < end) ftruncateSync(this.fd, end); // it ends in a hole
    this.close();
    return end;
  }

  /** Closes the second descriptor (also after an error). */
  close(): void {
    if (this.directFd !== undefined) closeSync(this.directFd);
    this.directFd = undefined;
  }

  /** The full staging buffer, written. */
  private flush(): void {
    this.writeOut(this.staging);
    this.filled = 0;
  }

  /** Writes `blocks` (the start of staging: whole blocks) at `position`, and moves past them. */
  private writeOut(blocks: Uint8Array): void {
    if (blocks.length > 0 && !isZero(blocks)) {
      if (this.directFd !== undefined) {
        try {
          directCalls.write(this.directFd, blocks, this.position);
          this.directBytes += blocks.length;
        } catch (e) {
          if (!refused(e)) throw e;
          this.close(); // the rest goes the ordinary way
          writeAllAt(this.fd, blocks, this.position);
        }
      } else {
        writeAllAt(this.fd, blocks, this.position);
      }
      this.written = this.position + blocks.length;
    }
    this.position += blocks.length;
  }
}

let zeros: Uint8Array | undefined;
/** Whether every byte of `bytes` is 0 (a chunk left a hole): a memcmp, which stops at the first
 *  other byte. */
export function isZero(bytes: Uint8Array): boolean {
  if (!zeros || zeros.length < bytes.length) zeros = new Uint8Array(Math.max(bytes.length, IO_CHUNK_BYTES));
  return Buffer.compare(bytes, zeros.subarray(0, bytes.length)) === 0;
}
