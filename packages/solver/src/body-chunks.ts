/**
 * A database body as the pieces that hold data, and the one walk over them that its writers share
 * (database.ts: positioned writes, or in order past the page cache through direct-io.ts), taking
 * its CRC-32 as they go.
 */
import { IO_CHUNK_BYTES } from './atomic-file.js';
import { crc32Of, crc32Zeros } from './crc.js';
import { isZero } from './direct-io.js';

/**
 * A table body of any size, as the pieces that hold data (ascending, not overlapping), the bytes
 * between them zero: a table in memory is one piece; a body over 4 GiB, which no typed array
 * holds, is several. Gaps are written as holes (a sparse file) and checksummed without bytes.
 */
export interface BodyPieces {
  readonly length: number;
  /** In offset order, not overlapping. */
  readonly pieces: ReadonlyArray<{ offset: number; bytes: Uint8Array }>;
}

/**
 * The body in order, in chunks of at most IO_CHUNK_BYTES: visit(chunk, offset, length) for those
 * holding data, visit(undefined, offset, length) for gaps and chunks of zeros. Returns its CRC-32
 * (bodyCrc's), that of zeros in O(log length).
 */
export function eachBodyChunk(body: BodyPieces, visit: (chunk: Uint8Array | undefined, offset: number, length: number) => void): number {
  let crc = 0;
  let at = 0; // where the walk is
  const zerosTo = (to: number) => {
    if (to <= at) return;
    crc = crc32Zeros(crc, to - at);
    visit(undefined, at, to - at);
    at = to;
  };
  for (const { offset, bytes } of body.pieces) {
    zerosTo(offset);
    for (let from = 0; from < bytes.length; from += IO_CHUNK_BYTES) {
      const chunk = bytes.subarray(from, Math.min(bytes.length, from + IO_CHUNK_BYTES));
      if (isZero(chunk)) {
        zerosTo(at + chunk.length);
        continue;
      }
      crc = crc32Of(chunk, crc);
      visit(chunk, at, chunk.length);
      at += chunk.length;
    }
  }
  zerosTo(body.length);
  return crc;
}
