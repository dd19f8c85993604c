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
 * a test), delimited by HTML comments, leaving the other benchmarks' sections untouched.
 */
export function writeBenchmarkSection(name: string, title: string, command: string, body: string): void {
  const start = `<!-- bench:${name} -->`;
  const end = `<!-- /bench:${name} -->`;
  const section = `${start}\n## ${title}\n\nReproduce: \`${command}\`  \nMachine: ${machineLine()}\n\n${body.trim()}\n${end}`;
  const doc = benchmarksDoc();
  const current = existsSync(doc) ? readFileSync(doc, 'utf8') : HEADER;
  const re = new RegExp(`${start}[\\s\\S]*?${end}`);
  const next = re.test(current) ? current.replace(re, section) : `${current.trimEnd()}\n\n${section}\n`;
  mkdirSync(dirname(doc), { recursive: true });
  writeFileSync(doc, next.endsWith('\n') ? next : next + '\n');
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
