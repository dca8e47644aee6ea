/**
 * Progress of long jobs on stderr: on a terminal, one bar redrawn in place with percentage, rate
 * and ETA; elsewhere (pipes, CI logs) one plain line per finished step, and a line with the same
 * figures at least every PLAIN_LINE_SECONDS within a long step (a 30-minute pass is not silent).
 * stdout stays clean.
 */
import { duration, grouped } from './format.js';

export interface ProgressSink {
  /** The current step (e.g. "pass 3") is `fraction` done; `amount` units of work so far. */
  update(step: string, fraction: number, detail?: string): void;
  /** The step is finished: a permanent line. */
  done(line: string): void;
  /** Clears the bar (before printing results or errors). */
  clear(): void;
}

export const PLAIN_LINE_SECONDS = 30;

export function progressSink(stream: NodeJS.WriteStream = process.stderr, quiet = false, plainLineSeconds = PLAIN_LINE_SECONDS): ProgressSink {
  if (quiet) return { update() {}, done() {}, clear() {} };
  const tty = stream.isTTY === true && process.env.CI !== 'true';
  let stepStarted = performance.now();
  let currentStep = '';
  let drawn = false;
  let lastDraw = 0;
  let lastLine = performance.now();
  const clear = () => {
    if (drawn) stream.write('\r\x1b[2K');
    drawn = false;
  };
  return {
    update(step, fraction, detail) {
      const now = performance.now();
      if (step !== currentStep) {
        currentStep = step;
        stepStarted = now;
        lastLine = now;
      }
      const elapsed = (now - stepStarted) / 1000;
      const eta = fraction > 0.01 ? (elapsed * (1 - fraction)) / fraction : Number.NaN;
      if (!tty) {
        if (now - lastLine < plainLineSeconds * 1000 || fraction >= 1) return;
        lastLine = now;
        stream.write(`${step}: ${(fraction * 100).toFixed(1)}% after ${duration(elapsed)}${detail ? `, ${detail}` : ''}, ETA ${duration(eta)}\n`);
        return;
      }
      if (now - lastDraw < 100 && fraction < 1) return;
      lastDraw = now;
      const width = 24;
      const filled = Math.round(Math.min(1, fraction) * width);
      const bar = `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}]`;
      const text = `${step.padEnd(8)} ${bar} ${(fraction * 100).toFixed(1).padStart(5)}%  ${detail ?? ''}  ETA ${duration(eta)}`;
      stream.write(`\r\x1b[2K${text.slice(0, (stream.columns || 100) - 1)}`);
      drawn = true;
    },
    done(line) {
      clear();
      stream.write(`${line}\n`);
    },
    clear,
  };
}

/** "12.3M/s"-style rate. */
export function rate(perSecond: number, unit: string): string {
  if (!Number.isFinite(perSecond) || perSecond <= 0) return `- ${unit}/s`;
  if (perSecond >= 1e6) return `${(perSecond / 1e6).toFixed(1)}M ${unit}/s`;
  if (perSecond >= 1e3) return `${(perSecond / 1e3).toFixed(1)}k ${unit}/s`;
  return `${grouped(perSecond)} ${unit}/s`;
}
