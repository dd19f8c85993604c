import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { benchmarksDoc, headlineProblems, headlineRows, writeBenchmarkSection } from './report';

const REPO = join(__dirname, '..', '..');

/** Runs `write` with BENCH_DOC pointing at a file in a temporary directory (`doc`, or none yet); returns the file's text after. */
function withDoc(doc: string | undefined, write: () => void): string {
  const dir = mkdtempSync(join(tmpdir(), 'bench-doc-'));
  const saved = process.env['BENCH_DOC'];
  process.env['BENCH_DOC'] = join(dir, 'benchmarks.md');
  try {
    if (doc !== undefined) writeFileSync(join(dir, 'benchmarks.md'), doc);
    write();
    return readFileSync(join(dir, 'benchmarks.md'), 'utf8');
  } finally {
    if (saved === undefined) delete process.env['BENCH_DOC'];
    else process.env['BENCH_DOC'] = saved;
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('where benchmark sections are written', () => {
  it('under a test (Jest, or a process a test started): tmp/benchmarks.md, never the tracked docs/benchmarks.md', () => {
    expect(process.env['JEST_WORKER_ID']).toBeDefined();
    const { BENCH_DOC: _, ...env } = process.env;
    expect(relative(REPO, benchmarksDoc(env))).toBe(join('tmp', 'benchmarks.md'));
  });

  it('by `npm run bench` (no Jest): docs/benchmarks.md; BENCH_DOC chooses for both', () => {
    expect(relative(REPO, benchmarksDoc({}))).toBe(join('docs', 'benchmarks.md'));
    expect(relative(REPO, benchmarksDoc({ JEST_WORKER_ID: '1', BENCH_DOC: 'docs/benchmarks.md' }))).toBe(join('docs', 'benchmarks.md'));
    expect(benchmarksDoc({ BENCH_DOC: '/x/b.md' })).toBe('/x/b.md');
  });

  it('replaces its own section and leaves the others', () => {
    const doc = withDoc(undefined, () => {
      writeBenchmarkSection('a', 'A', 'npm run a', 'first');
      writeBenchmarkSection('b', 'B', 'npm run b', 'other');
      writeBenchmarkSection('a', 'A', 'npm run a', 'second');
    });
    expect(doc).toMatch(/^# Benchmarks\n/);
    expect(doc).toContain('second');
    expect(doc).not.toContain('first');
    expect(doc.indexOf('<!-- bench:a -->')).toBeLessThan(doc.indexOf('<!-- bench:b -->'));
  });
});

const DOC = [
  '# Benchmarks',
  '',
  '<!-- headline -->',
  '| Target | Today | Met | Command | Measured | Node | Section |',
  '| --- | --- | --- | --- | --- | --- | --- |',
  '| RSS: <= 300 MB | **peak RSS 315 MB** | **missed** | `npm run a` | 2026-01-02 | v20.1.0 | `a` |',
  '| Speed: >= 10x | **33.28x** | met | `npm run b` | 2026-01-02 | v20.1.0 | `b` |',
  '<!-- /headline -->',
  '',
  '<!-- bench:a -->\n## A\n\nReproduce: `npm run a`  \nMachine: 2 x CPU, 24 GiB, Node v20.1.0, 2026-01-02T03:04:05.000Z\n\npeak RSS 315 MB\n<!-- /bench:a -->',
  '',
  '<!-- bench:b -->\n## B\n\nReproduce: `npm run b`  \nMachine: 2 x CPU, 24 GiB, Node v20.1.0, 2026-01-02T03:04:05.000Z\n\n33.28x real time\n<!-- /bench:b -->',
  '',
].join('\n');

describe('the headline table', () => {
  it('agrees with its sections; a wrong figure, verdict, date or missing section is reported', () => {
    expect(headlineProblems(DOC)).toEqual([]);
    expect(headlineProblems(DOC.replace('**peak RSS 315 MB**', '**peak RSS 299 MB**'))).toEqual([
      'RSS: <= 300 MB (a): figure peak RSS 299 MB not in the section',
      'RSS: <= 300 MB (a): says **missed**, the target says met',
    ]);
    expect(headlineProblems(DOC.replace('| **33.28x** | met |', '| **33.28x** | **missed** |'))).toEqual([
      'Speed: >= 10x (b): says **missed**, the target says met',
    ]);
    expect(headlineProblems(DOC.replace('| 2026-01-02 | v20.1.0 | `b` |', '| 2026-01-03 | v20.1.0 | `b` |'))).toEqual([
      'Speed: >= 10x (b): measured 2026-01-03, Node v20.1.0; the section says 2026-01-02, v20.1.0',
    ]);
    expect(headlineProblems(DOC.replace('`a` |', '`c` |'))).toEqual(['RSS: <= 300 MB (c): no section c']);
  });

  it("a bench's run updates its rows' date and Node, and marks a row stale whose figure the section no longer holds", () => {
    const doc = withDoc(DOC, () => {
      writeBenchmarkSection('a', 'A', 'npm run a', 'peak RSS 280 MB');
      writeBenchmarkSection('b', 'B', 'npm run b', '33.28x real time');
    });
    const [a, b] = headlineRows(doc);
    const today = new Date().toISOString().slice(0, 10);
    expect(a).toMatchObject({ today: '**peak RSS 315 MB**', met: 'stale: re-read the section', measured: today, node: process.version });
    expect(b).toMatchObject({ today: '**33.28x**', met: 'met', measured: today, node: process.version });
    expect(headlineProblems(doc)).toContain('RSS: <= 300 MB (a): figure peak RSS 315 MB not in the section');
    expect(doc.indexOf('<!-- /headline -->')).toBeLessThan(doc.indexOf('<!-- bench:a -->'));
  });

  it('of docs/benchmarks.md agrees with its sections (a bench run that changed a figure: update its row)', () => {
    const doc = readFileSync(join(REPO, 'docs', 'benchmarks.md'), 'utf8');
    expect(headlineRows(doc).length).toBeGreaterThan(0);
    expect(headlineProblems(doc)).toEqual([]);
  });
});
