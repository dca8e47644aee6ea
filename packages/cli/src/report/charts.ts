/**
 * Charts as inline SVG, drawn on the server: d3-scale computes the scales and their ticks,
 * d3-shape the line paths; the page needs no script. Every data point is one element of class
 * "mark" (a bar or a dot) carrying its series and value, so a test can count them against the
 * input. Colours come from CSS classes (series-0..7), so the page's light, dark and print styles
 * apply to the charts too.
 */
import { scaleBand, scaleLinear, scaleLog } from 'd3-scale';
import { line } from 'd3-shape';

const WIDTH = 760;
const HEIGHT = 320;
const MARGIN = { top: 16, right: 16, bottom: 48, left: 72 };

export interface Series {
  name: string;
  /** One value per category; undefined where the series has none. */
  values: Array<number | undefined>;
}

/** A reference value drawn as a short dashed line across a category (e.g. the paper's figure). */
export interface Reference {
  category: string;
  label: string;
  value: number;
}

/**
 * Text for HTML and SVG content and for attribute values (always written in double quotes): the
 * five characters that could end a value or start markup become references.
 */
export function escape(text: string): string {
  return String(text).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');
}

/** A number for an attribute or SVG text: refused unless it is one (report inputs are checked
 *  in readReportInputs; this keeps anything else from ever reaching the page). */
function num(v: number): string {
  if (typeof v !== 'number') throw new TypeError(`a chart value is not a number: ${JSON.stringify(v)}`);
  return String(v);
}

function format(v: number): string {
  if (typeof v !== 'number') return num(v);
  if (v === 0) return '0';
  if (v < 0.1) return String(Number(v.toPrecision(1)));
  return v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2);
}

function frame(title: string, body: string, legend: string[]): string {
  const items = legend.map((name, i) => `<span class="key"><span class="swatch series-${num(i % 8)}"></span>${escape(name)}</span>`).join('');
  return `<figure class="chart"><figcaption>${escape(title)}</figcaption><div class="legend">${items}</div><svg viewBox="0 0 ${num(WIDTH)} ${num(HEIGHT)}" role="img" aria-label="${escape(title)}">${body}</svg></figure>`;
}

function yAxis(y: (v: number) => number, ticks: number[], label: string, tickText: (v: number) => string): string {
  const lines = ticks
    .map((t) => `<g class="tick"><line x1="${num(MARGIN.left)}" x2="${num(WIDTH - MARGIN.right)}" y1="${num(y(t))}" y2="${num(y(t))}"/><text x="${num(MARGIN.left - 6)}" y="${num(y(t))}" dy="0.32em" text-anchor="end">${escape(tickText(t))}</text></g>`)
    .join('');
  return `<g class="axis y">${lines}<text class="label" transform="translate(14 ${num((MARGIN.top + HEIGHT - MARGIN.bottom) / 2)}) rotate(-90)" text-anchor="middle">${escape(label)}</text></g>`;
}

/**
 * Bars grouped by category, one per series (e.g. ns per operation per backend), on a log scale
 * when the values span more than a factor of 20, with optional reference marks.
 */
export function groupedBars(options: { title: string; categories: string[]; series: Series[]; yLabel: string; references?: Reference[] }): string {
  const { title, categories, series, yLabel, references = [] } = options;
  const values = [...series.flatMap((s) => s.values), ...references.map((r) => r.value)].filter((v): v is number => v !== undefined && v > 0);
  const max = values.length > 0 ? Math.max(...values) : 1;
  const min = values.length > 0 ? Math.min(...values) : max;
  const log = max / min > 20;
  const y = log
    ? scaleLog().domain([min / 1.5, max * 1.5]).range([HEIGHT - MARGIN.bottom, MARGIN.top]).nice()
    : scaleLinear().domain([0, max * 1.1]).range([HEIGHT - MARGIN.bottom, MARGIN.top]).nice();
  const x = scaleBand().domain(categories).range([MARGIN.left, WIDTH - MARGIN.right]).paddingInner(0.2).paddingOuter(0.1);
  const inner = scaleBand().domain(series.map((_, i) => String(i))).range([0, x.bandwidth()]).padding(0.08);
  const base = y(y.domain()[0]!);
  const ticks = log ? y.ticks(6).filter((t) => [1, 2, 5].includes(Number(t.toExponential(0)[0]))) : y.ticks(6);
  const bars = series
    .map((s, i) =>
      s.values
        .map((v, c) => {
          if (v === undefined) return '';
          const top = y(Math.max(v, y.domain()[0]!));
          return `<rect class="mark series-${num(i % 8)}" data-series="${escape(s.name)}" data-category="${escape(categories[c]!)}" data-value="${num(v)}" x="${num(x(categories[c]!)! + inner(String(i))!)}" y="${num(top)}" width="${num(inner.bandwidth())}" height="${num(Math.max(0, base - top))}"><title>${escape(`${s.name}, ${categories[c]}: ${format(v)}`)}</title></rect>`;
        })
        .join(''),
    )
    .join('');
  const refs = references
    .map((r, i) => {
      const at = x(r.category);
      if (at === undefined) return '';
      return `<line class="reference ref-${num(i % 2)}" x1="${num(at - 2)}" x2="${num(at + x.bandwidth() + 2)}" y1="${num(y(r.value))}" y2="${num(y(r.value))}"><title>${escape(`${r.label}: ${format(r.value)}`)}</title></line>`;
    })
    .join('');
  const labels = categories.map((c) => `<text x="${num(x(c)! + x.bandwidth() / 2)}" y="${num(HEIGHT - MARGIN.bottom + 18)}" text-anchor="middle">${escape(c)}</text>`).join('');
  const body = `${yAxis(y, ticks, yLabel + (log ? ' (log scale)' : ''), (t) => format(t))}<g class="axis x">${labels}</g><g class="marks">${bars}</g><g class="references">${refs}</g>`;
  return frame(title, body, series.map((s) => s.name));
}

/** Lines over a numbered x axis (e.g. share decided after each pass), one dot per point. */
export function linesChart(options: {
  title: string;
  series: Array<{ name: string; points: Array<[number, number]> }>;
  xLabel: string;
  yLabel: string;
  yMin?: number;
  yMax?: number;
}): string {
  const { title, series, xLabel, yLabel } = options;
  const xs = series.flatMap((s) => s.points.map((p) => p[0]));
  const ys = series.flatMap((s) => s.points.map((p) => p[1]));
  const x = scaleLinear().domain([Math.min(...xs, 1), Math.max(...xs, 2)]).range([MARGIN.left, WIDTH - MARGIN.right]);
  const y = scaleLinear().domain([options.yMin ?? Math.min(0, ...ys), options.yMax ?? Math.max(...ys, 1)]).range([HEIGHT - MARGIN.bottom, MARGIN.top]).nice();
  const path = line<[number, number]>().x((p) => x(p[0])).y((p) => y(p[1]));
  const marks = series
    .map(
      (s, i) =>
        `<path class="line series-${num(i % 8)}" d="${escape(path(s.points) ?? '')}"/>` +
        s.points
          .map((p) => `<circle class="mark series-${num(i % 8)}" data-series="${escape(s.name)}" data-x="${num(p[0])}" data-value="${num(p[1])}" cx="${num(x(p[0]))}" cy="${num(y(p[1]))}" r="3.5"><title>${escape(`${s.name}, ${xLabel} ${num(p[0])}: ${format(p[1])}`)}</title></circle>`)
          .join(''),
    )
    .join('');
  const xTicks = x
    .ticks(Math.min(12, Math.max(...xs, 2)))
    .filter((t) => Number.isInteger(t))
    .map((t) => `<text x="${num(x(t))}" y="${num(HEIGHT - MARGIN.bottom + 18)}" text-anchor="middle">${num(t)}</text>`)
    .join('');
  const body = `${yAxis(y, y.ticks(6), yLabel, format)}<g class="axis x">${xTicks}<text class="label" x="${num((MARGIN.left + WIDTH - MARGIN.right) / 2)}" y="${num(HEIGHT - 8)}" text-anchor="middle">${escape(xLabel)}</text></g><g class="marks">${marks}</g>`;
  return frame(title, body, series.map((s) => s.name));
}
