/**
 * Progress on stderr when it is not a terminal (CI logs, pipes): one line per finished step, and
 * within a long step a line with the share done and the ETA at least every PLAIN_LINE_SECONDS.
 */
import { describe, expect, it } from 'vitest';
import { PLAIN_LINE_SECONDS, progressSink } from '../src/ui/progress.js';

function fakeStream() {
  const lines: string[] = [];
  return { lines, stream: { isTTY: false, write: (s: string) => lines.push(s) } as unknown as NodeJS.WriteStream };
}

describe('progress without a terminal', () => {
  it('stays quiet within the interval, then prints the share, the rate detail and an ETA', () => {
    const quiet = fakeStream();
    const sink = progressSink(quiet.stream, false);
    sink.update('pass 1', 0.25, '12.0M states/s');
    sink.update('pass 1', 0.5, '12.0M states/s');
    expect(quiet.lines).toEqual([]); // within PLAIN_LINE_SECONDS of the step's start
    expect(PLAIN_LINE_SECONDS).toBeLessThanOrEqual(30);

    const every = fakeStream();
    const eager = progressSink(every.stream, false, 0);
    eager.update('pass 2', 0.5, '3.0M states/s');
    eager.update('pass 2', 1);
    eager.done('pass 2: +5 proven');
    expect(every.lines).toHaveLength(2); // the 100% update gives way to the step's own line
    expect(every.lines[0]).toMatch(/^pass 2: 50\.0% after [\d.]+ s, 3\.0M states\/s, ETA [\d.?]+( s)?\n$/);
    expect(every.lines[1]).toBe('pass 2: +5 proven\n');
  });

  it('prints nothing at all when quiet', () => {
    const f = fakeStream();
    const sink = progressSink(f.stream, true, 0);
    sink.update('init', 0.5);
    sink.done('init done');
    expect(f.lines).toEqual([]);
  });
});
