// Mermaid charts for the reports the scripts write (docs/benchmarks.md, docs/chaos): they render on the
// usual code hosts and diff as text. Only what the reports need: an x/y chart of bars and lines over
// named categories, and a timeline of events grouped in sections.

/** One series of an x/y chart: a value per category (NaN or a non-finite value: left out as 0). */
export interface XySeries {
  readonly kind: 'bar' | 'line';
  /** What the series is, for the legend line under the chart (Mermaid's x/y chart has no legend). */
  readonly label: string;
  readonly values: readonly number[];
}

export interface XyChart {
  readonly title: string;
  /** Category labels of the x axis, in order. */
  readonly categories: readonly string[];
  readonly xTitle?: string;
  readonly yTitle: string;
  readonly series: readonly XySeries[];
  /** Lower end of the y axis (default 0). */
  readonly yMin?: number;
}

/** A double-quoted Mermaid string: no double quotes, no line breaks inside. */
function quoted(s: string): string {
  return `"${s.replace(/["\n\r]/g, ' ').trim()}"`;
}

/** A number as Mermaid reads it: finite, at most 4 significant digits after the point. */
function num(v: number): string {
  if (!Number.isFinite(v)) return '0';
  return String(Number(v.toPrecision(Math.max(4, Math.ceil(Math.log10(Math.abs(v) + 1))))));
}

/**
 * A Mermaid `xychart-beta` block (fenced) with a legend line under it naming each series, or '' when
 * there is nothing to draw (no category or no series).
 *
 * @throws RangeError when a series does not have one value per category
 */
export function xyChart(c: XyChart): string {
  if (c.categories.length === 0 || c.series.length === 0) return '';
  for (const s of c.series) {
    if (s.values.length !== c.categories.length) {
      throw new RangeError(`series "${s.label}" has ${s.values.length} values for ${c.categories.length} categories`);
    }
  }
  const finite = c.series.flatMap((s) => s.values.filter(Number.isFinite));
  const top = Math.max(0, ...finite);
  const yMin = c.yMin ?? Math.min(0, ...finite);
  // Headroom above the highest value, so a line does not run along the frame.
  const yMax = top > yMin ? top + (top - yMin) * 0.1 : yMin + 1;
  const lines = [
    '```mermaid',
    'xychart-beta',
    `    title ${quoted(c.title)}`,
    `    x-axis${c.xTitle ? ` ${quoted(c.xTitle)}` : ''} [${c.categories.map(quoted).join(', ')}]`,
    `    y-axis ${quoted(c.yTitle)} ${num(yMin)} --> ${num(yMax)}`,
    ...c.series.map((s) => `    ${s.kind} [${s.values.map(num).join(', ')}]`),
    '```',
  ];
  const legend = c.series.map((s, i) => `${s.kind === 'bar' ? 'bars' : `line ${c.series.slice(0, i + 1).filter((x) => x.kind === 'line').length}`}: ${s.label}`);
  return [...lines, '', `<sub>${legend.join('; ')}</sub>`].join('\n');
}

/** One event of a timeline. */
export interface TimelineEvent {
  /** Seconds from the start. */
  readonly t: number;
  readonly section: string;
  readonly text: string;
}

/** Text a Mermaid timeline entry can hold: `:` separates entries, `#` and `;` end statements. */
function entryText(s: string): string {
  return s.replace(/[:;#\n\r]/g, ' ').replace(/\s+/g, ' ').trim();
}

/**
 * A Mermaid `timeline` block (fenced): the events in time order, a new section header whenever the
 * section changes, events at the same time (to the millisecond) on one entry; at most `limit` events
 * (a note says how many were left out), or '' when there are none.
 */
export function timeline(title: string, events: readonly TimelineEvent[], limit = 60): string {
  if (events.length === 0) return '';
  const sorted = [...events].sort((a, b) => a.t - b.t).slice(0, limit);
  const lines = ['```mermaid', 'timeline', `    title ${entryText(title)}`];
  let section: string | undefined;
  let entry: { t: string; texts: string[] } | undefined;
  const flush = () => {
    if (entry) lines.push(`        ${entry.t} s : ${entry.texts.join(' : ')}`);
    entry = undefined;
  };
  for (const e of sorted) {
    const t = e.t.toFixed(2);
    if (e.section !== section) {
      flush();
      section = e.section;
      lines.push(`    section ${entryText(section)}`);
    }
    if (entry && entry.t === t) entry.texts.push(entryText(e.text));
    else {
      flush();
      entry = { t, texts: [entryText(e.text)] };
    }
  }
  flush();
  lines.push('```');
  if (events.length > sorted.length) lines.push('', `<sub>The first ${sorted.length} of ${events.length} events; the table below has all.</sub>`);
  return lines.join('\n');
}
