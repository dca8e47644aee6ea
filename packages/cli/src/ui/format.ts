/** Plain-text output helpers: grouped numbers, durations, aligned tables. */

export function grouped(n: number | bigint): string {
  // Not toLocaleString: its first call sets up ICU, 30 ms of a run of the CLI that takes 300.
  const whole = typeof n === 'bigint' ? n : Math.round(n);
  if (typeof whole === 'number' && !Number.isSafeInteger(whole)) return whole.toLocaleString('en-US');
  const text = whole.toString();
  const sign = text.startsWith('-') ? '-' : '';
  const digits = text.slice(sign.length);
  let out = digits.slice(0, digits.length % 3 || 3);
  for (let i = out.length; i < digits.length; i += 3) out += `,${digits.slice(i, i + 3)}`;
  return sign + out;
}

export function duration(seconds: number): string {
  if (!Number.isFinite(seconds)) return '?';
  if (seconds < 10) return `${seconds.toFixed(2)} s`;
  const s = Math.round(seconds);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const rest = s % 60;
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${String(rest).padStart(2, '0')}` : `${m}:${String(rest).padStart(2, '0')}`;
}

/** Rows of cells as an aligned table; numeric-looking cells are right-aligned. */
export function table(header: string[], rows: string[][]): string {
  const all = [header, ...rows];
  const widths = header.map((_, c) => Math.max(...all.map((r) => (r[c] ?? '').length)));
  const numeric = (s: string) => s === '-' || /^[-+]?[\d,.]+( ?[a-zA-Zµ%/x]*)?$/.test(s);
  const line = (r: string[]) =>
    r
      .map((cell, c) => (numeric(cell) && c > 0 ? cell.padStart(widths[c]!) : cell.padEnd(widths[c]!)))
      .join('  ')
      .trimEnd();
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}
