/**
 * The coding of messages (core's bandMessage) in pieces: MessageEncoder codes a kernel call's
 * messages as runs into a fixed buffer, MessageDecoder decodes any split of the runs (core's
 * message-runs.ts has the coding, which each backend brings). The message packs that hold them:
 * message-pack-format.ts (their layout), message-pack-writer.ts, message-pack-reader.ts;
 * message-pack.ts has what the manifest records of them.
 */
import { MAX_NUMBER_BYTES, type MessageRuns, RUN_NEXT_BYTE, RUN_NEXT_OUT, atRunBoundary, newMessageRunState } from '@ccheckers/core';

/**
 * Codes messages into `bytes`: run(m) codes m (increasing integers below 2^53) as one run or
 * more, calling flush(bytes used) whenever the buffer cannot take the worst case of the next.
 */
export class MessageEncoder {
  private at = 0;

  constructor(
    private readonly runs: MessageRuns,
    private readonly bytes: Uint8Array,
    private readonly flush: (bytes: Uint8Array) => void,
  ) {
    if (bytes.length < 4 * MAX_NUMBER_BYTES) throw new RangeError('message encoder: a buffer of at least 32 bytes');
  }

  run(messages: Float64Array): void {
    // At most this many messages a run, so that a run's worst case fits an empty buffer.
    const perRun = Math.floor(this.bytes.length / MAX_NUMBER_BYTES) - 2;
    for (let from = 0; from < messages.length; from += perRun) {
      const to = Math.min(messages.length, from + perRun);
      if (this.at + (to - from + 2) * MAX_NUMBER_BYTES > this.bytes.length) this.flushNow();
      this.at = this.runs.encodeMessageRun(messages, from, to, this.bytes, this.at);
    }
  }

  /** Hands what is coded to flush(). */
  flushNow(): void {
    if (this.at > 0) this.flush(this.bytes.subarray(0, this.at));
    this.at = 0;
  }
}

/** Decodes message files piece by piece: decode() takes any split of the bytes (a number may span
 *  two pieces) and stops when `out` is full. */
export class MessageDecoder {
  private readonly state = newMessageRunState();

  constructor(private readonly runs: MessageRuns) {}

  /** Decodes bytes[from, bytes.length) into out[at, out.length): stops at the end of either.
   *  Returns [the next byte to decode, the next free place of out]. */
  decode(bytes: Uint8Array, from: number, out: Float64Array, at: number): [number, number] {
    this.runs.decodeMessageRuns(bytes, from, out, at, this.state);
    return [this.state[RUN_NEXT_BYTE]!, this.state[RUN_NEXT_OUT]!];
  }

  /** Between runs (the end of a whole file). */
  get atEnd(): boolean {
    return atRunBoundary(this.state);
  }
}
