/**
 * The layout of the message packs of the band passes (band-solve.ts), shared by their writer
 * (message-pack-writer.ts) and reader (message-pack-reader.ts); message-pack.ts has what the
 * manifest records, messages.ts the coding of the runs. A pack holds the messages (core's
 * bandMessage) one step sends to the other bands, in one file per step, written while the step
 * runs, flushed before the manifest names it, and read back section by section, in chunks, by
 * each target band's next step.
 *
 * A pack is, in this order:
 *  - the sections' bytes: runs of messages (sorted, without repeats; core's message-runs.ts has
 *    the coding, which each backend brings), each the messages of one kernel call to one band,
 *    written as the calls make them, so one section's runs lie in extents among the others';
 *  - the extents (offset, bytes) of every section, in order of target band, values then requests;
 *  - the directory, one entry per target band, ascending: target, then for values and for
 *    requests the first extent, extents, messages and CRC-32 of the section's bytes (its extents
 *    in order; all 0 but the first extent for a kind it has not), then the CRC-32 of those 9;
 *  - a trailer: magic, directory entries, extents (uint32 each), messages (float64), the
 *    directory's CRC-32 and the trailer's own (of its first 28 bytes).
 * All numbers are little-endian float64, but the trailer's uint32s. A step reads the trailer and
 * the one entry of its band, found without the others: the k-th entry is that of the pack's k-th
 * target, which the manifest's bitset gives (a pack of 4,095 targets read whole by each of them
 * made a pass read O(S^2) directory bytes per band). Each entry checks on its own, the trailer
 * checks against the manifest (messages, directory CRC-32, entries = targets), and each section's
 * CRC-32 covers its bytes; check (messageFileProblem) reads and checks the whole directory.
 */

export type MessageKind = 'values' | 'requests';

/** The trailer: magic (8 bytes), directory entries, extents (uint32 each), messages (float64),
 *  directory CRC-32, the trailer's CRC-32 of its bytes before (uint32 each). */
export const PACK_MAGIC = 'CCMSGPK2';
/** The packs before (a directory entry per target and kind, each read whole by every target). */
export const EARLIER_PACK_MAGIC = 'CCMSGPK1';
export const TRAILER_BYTES = 32;
/** Float64 fields of a directory entry (target; first extent, extents, messages, CRC-32 of values
 *  then of requests; the entry's CRC-32) and of an extent (offset, bytes). */
export const ENTRY_FIELDS = 10;
export const EXTENT_FIELDS = 2;
export const ENTRY_BYTES = 8 * ENTRY_FIELDS;
/** The bytes of an entry its CRC-32 covers (all fields but the last). */
export const ENTRY_CHECKED_BYTES = ENTRY_BYTES - 8;
export const EXTENT_BYTES = 8 * EXTENT_FIELDS;
export const KINDS: readonly MessageKind[] = ['values', 'requests'];

export const KIND_CODE: Record<MessageKind, number> = { values: 0, requests: 1 };
