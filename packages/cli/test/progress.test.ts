/**
 * Progress on stderr when it is not a terminal (CI logs, pipes): one line per finished step, and
 * within a long step a line with the share done and the ETA at least every PLAIN_LINE_SECONDS.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { duration } from '../src/ui/format.js';
import { PLAIN_LINE_SECONDS, progressSink } from '../src/ui/progress.js';

function fakeStream() {
  const lines: string[] = [];
  return { lines, stream: { isTTY: false, write: (s: string) => lines.push(s) } as unknown as NodeJS.WriteStream };
}

afterEach(() => {
  vi.useRealTimers();
});

describe('progress without a terminal', () => {
  it('stays quiet within the interval, then prints the share, the rate detail and an ETA', () => {
    const quiet = fakeStream();
    const sink = progressSink(quiet.stream, false);
    sink.update('pass 1', 0.25, '12.0M states/s');
    sink.update('pass 1', 0.5, '12.0M states/s');
    expect(quiet.lines).toEqual([]); // within PLAIN_LINE_SECONDS of the step's start

    const every = fakeStream();
    const eager = progressSink(every.stream, false, 0);
    eager.update('pass 2', 0.5, '3.0M states/s');
    eager.update('pass 2', 1);
    eager.done('pass 2: +5 proven');
    expect(every.lines).toHaveLength(2); // the 100% update gives way to the step's own line
    expect(every.lines[0]).toMatch(/^pass 2: 50\.0% after [\d.]+ s, 3\.0M states\/s, ETA [\d.?]+( s)?\n$/);
    expect(every.lines[1]).toBe('pass 2: +5 proven\n');
  });

  it('by default a line once PLAIN_LINE_SECONDS (at most 30) have passed in a step, then again after as many', () => {
    vi.useFakeTimers({ toFake: ['performance'] });
    const f = fakeStream();
    const sink = progressSink(f.stream, false);
    sink.update('pass 1', 0.1);
    vi.advanceTimersByTime(PLAIN_LINE_SECONDS * 1000 - 1);
    sink.update('pass 1', 0.2);
    expect(f.lines).toEqual([]);
    vi.advanceTimersByTime(1);
    sink.update('pass 1', 0.3);
    expect(f.lines).toEqual([`pass 1: 30.0% after ${duration(PLAIN_LINE_SECONDS)}, ETA ${duration((PLAIN_LINE_SECONDS * 0.7) / 0.3)}\n`]);
    vi.advanceTimersByTime(PLAIN_LINE_SECONDS * 1000);
    sink.update('pass 1', 0.6);
    expect(f.lines).toHaveLength(2);
    expect(PLAIN_LINE_SECONDS).toBeLessThanOrEqual(30); // a 30-minute pass is not silent in a CI log
  });

  it('prints nothing at all when quiet', () => {
    const f = fakeStream();
    const sink = progressSink(f.stream, true, 0);
    sink.update('init', 0.5);
    sink.done('init done');
    expect(f.lines).toEqual([]);
  });
});
