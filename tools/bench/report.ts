import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';

const REPO = join(__dirname, '..', '..');

/**
 * The file {@link writeBenchmarkSection} writes: `BENCH_DOC` when set (the opt-in, e.g.
 * `BENCH_DOC=docs/benchmarks.md` from a test); else, under Jest (`JEST_WORKER_ID`, which the
 * processes a test starts inherit), tmp/benchmarks.md, so tests never rewrite a tracked file; else
 * docs/benchmarks.md, as `npm run bench` does.
 */
export function benchmarksDoc(env: NodeJS.ProcessEnv = process.env): string {
  const chosen = env['BENCH_DOC'];
  if (chosen) return resolve(REPO, chosen);
  return join(REPO, env['JEST_WORKER_ID'] !== undefined ? 'tmp' : 'docs', 'benchmarks.md');
}
const HEADER =
  '# Benchmarks\n\nWritten by the benchmark scripts (`npm run bench`, or `npm run bench:<name>`); do not edit by hand.\n' +
  'Each section names the command that reproduces it.\n';

/** One line describing the machine a result was measured on. */
export function machineLine(): string {
  const cpu = cpus()[0]?.model ?? 'unknown CPU';
  return `${cpus().length} x ${cpu}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}, ${new Date().toISOString()}`;
}

/**
 * Replaces (or appends) the section `name` of docs/benchmarks.md ({@link benchmarksDoc}: tmp/ under
 * a test), delimited by HTML comments, leaving the other benchmarks' sections untouched, and brings its
 * rows of the headline table up to date ({@link updateHeadline}).
 */
export function writeBenchmarkSection(name: string, title: string, command: string, body: string): void {
  const start = `<!-- bench:${name} -->`;
  const end = `<!-- /bench:${name} -->`;
  const section = `${start}\n## ${title}\n\nReproduce: \`${command}\`  \nMachine: ${machineLine()}\n\n${body.trim()}\n${end}`;
  const doc = benchmarksDoc();
  const current = existsSync(doc) ? readFileSync(doc, 'utf8') : HEADER;
  const re = new RegExp(`${start}[\\s\\S]*?${end}`);
  const written = re.test(current) ? current.replace(re, () => section) : `${current.trimEnd()}\n\n${section}\n`;
  const next = updateHeadline(written, name);
  mkdirSync(dirname(doc), { recursive: true });
  writeFileSync(doc, next.endsWith('\n') ? next : next + '\n');
}

const HEADLINE = /<!-- headline -->\n([\s\S]*?)<!-- \/headline -->/;

/** A row of the headline table (between `<!-- headline -->` and `<!-- /headline -->`). */
export interface HeadlineRow {
  target: string;
  /** The figure as the section writes it, in bold (`**315 MB**`), then context. */
  today: string;
  met: string;
  command: string;
  measured: string;
  node: string;
  /** The section's name in backticks, as in its `<!-- bench:name -->` marker. */
  section: string;
}
const COLUMNS: (keyof HeadlineRow)[] = ['target', 'today', 'met', 'command', 'measured', 'node', 'section'];

/** The headline table's rows (none when the document has no headline). */
export function headlineRows(doc: string): HeadlineRow[] {
  const lines = (HEADLINE.exec(doc)?.[1] ?? '').split('\n').filter((l) => l.startsWith('|')).slice(2);
  return lines.map((l) => {
    const cells = l.slice(1, -1).split('|').map((c) => c.trim());
    return Object.fromEntries(COLUMNS.map((k, i) => [k, cells[i] ?? ''])) as unknown as HeadlineRow;
  });
}

/** The text of section `name` (markers included), or undefined. */
export function sectionText(doc: string, name: string): string | undefined {
  const start = doc.indexOf(`<!-- bench:${name} -->`);
  const end = doc.indexOf(`<!-- /bench:${name} -->`);
  return start < 0 || end < start ? undefined : doc.slice(start, end);
}

/** The bold figure of a headline cell, and its number (the first not part of a word such as `p99`). */
function figureOf(today: string): { text: string; value: number } | undefined {
  const text = /\*\*([^*]+)\*\*/.exec(today)?.[1];
  const value = text === undefined ? undefined : /(?<![\w.])(\d[\d,]*(?:\.\d+)?)/.exec(text)?.[1];
  return text === undefined || value === undefined ? undefined : { text, value: Number(value.replace(/,/g, '')) };
}

/** What the row's target (its first bound, `<= 300 MB`) says of `value`: 'met' or 'missed'; undefined without a bound. */
function verdict(target: string, value: number): 'met' | 'missed' | undefined {
  const m = /(?<!-)(<=|>=|<|>)\s*(\d[\d,]*(?:\.\d+)?)/.exec(target); // not an arrow: `30 -> 31`
  if (!m) return undefined;
  const bound = Number((m[2] ?? '').replace(/,/g, ''));
  const ok = m[1] === '<=' ? value <= bound : m[1] === '>=' ? value >= bound : m[1] === '<' ? value < bound : value > bound;
  return ok ? 'met' : 'missed';
}

/**
 * The headline after section `name` was written: its rows' date and Node taken from the section's
 * Machine line; a row whose figure the new section no longer contains says so in its Met cell (a person
 * re-reads the section and updates the row; {@link headlineProblems} reports it until then).
 */
export function updateHeadline(doc: string, name: string): string {
  const block = HEADLINE.exec(doc);
  const section = sectionText(doc, name);
  if (!block || section === undefined) return doc;
  const machine = /^Machine: .*Node (v[\d.]+), (\d{4}-\d{2}-\d{2})T/m.exec(section);
  const body = (block[1] ?? '')
    .split('\n')
    .map((line) => {
      const cells = line.split('|');
      if (cells.length !== COLUMNS.length + 2 || cells[7]?.trim() !== `\`${name}\``) return line;
      const figure = figureOf(cells[2] ?? '');
      if (!figure || !section.includes(figure.text)) cells[3] = ' stale: re-read the section ';
      if (machine) [cells[5], cells[6]] = [` ${machine[2]} `, ` ${machine[1]} `];
      return cells.join('|');
    })
    .join('\n');
  return doc.replace(HEADLINE, () => `<!-- headline -->\n${body}<!-- /headline -->`);
}

/**
 * Where the headline table and the sections disagree, one line each: a row whose section is missing,
 * whose bold figure the section does not contain, whose date or Node is not the section's Machine line,
 * or whose met / missed is not what its target's bound says of the figure.
 */
export function headlineProblems(doc: string): string[] {
  const problems: string[] = [];
  for (const row of headlineRows(doc)) {
    const name = /^`([^`]+)`$/.exec(row.section)?.[1] ?? row.section;
    const what = `${row.target} (${name})`;
    const section = sectionText(doc, name);
    if (section === undefined) {
      problems.push(`${what}: no section ${name}`);
      continue;
    }
    const figure = figureOf(row.today);
    if (!figure || !section.includes(figure.text)) problems.push(`${what}: figure ${figure?.text ?? '(none in bold)'} not in the section`);
    const machine = /^Machine: .*Node (v[\d.]+), (\d{4}-\d{2}-\d{2})T/m.exec(section);
    const measured = machine?.[2] ?? 'not recorded';
    const node = machine?.[1] ?? 'not recorded';
    if (row.measured !== measured || row.node !== node) problems.push(`${what}: measured ${row.measured}, Node ${row.node}; the section says ${measured}, ${node}`);
    const command = /`([^`]+)`/.exec(row.command)?.[1];
    if (!command || !section.includes(command)) problems.push(`${what}: command ${row.command} is not the section's`);
    const expected = figure && verdict(row.target, figure.value);
    const said = row.met.replace(/\*/g, '').toLowerCase();
    if (expected ? said !== expected : said !== 'met' && said !== 'missed') problems.push(`${what}: says ${row.met}, the target says ${expected ?? 'met or missed'}`);
  }
  return problems;
}

/** Markdown table from a header row and rows. */
export function table(header: string[], rows: (string | number)[][]): string {
  const line = (cells: (string | number)[]) => `| ${cells.join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n');
}

/** Percentile (nearest-rank) of a sample, `p` in 0..100. */
export function percentile(sample: number[], p: number): number {
  if (sample.length === 0) return NaN;
  const sorted = [...sample].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? NaN;
}

export { timeline, xyChart, type TimelineEvent, type XyChart, type XySeries } from './mermaid';
