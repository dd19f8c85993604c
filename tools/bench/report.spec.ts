import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { benchmarksDoc, writeBenchmarkSection } from './report';

const REPO = join(__dirname, '..', '..');

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
    const dir = mkdtempSync(join(tmpdir(), 'bench-doc-'));
    const saved = process.env['BENCH_DOC'];
    process.env['BENCH_DOC'] = join(dir, 'benchmarks.md');
    try {
      writeBenchmarkSection('a', 'A', 'npm run a', 'first');
      writeBenchmarkSection('b', 'B', 'npm run b', 'other');
      writeBenchmarkSection('a', 'A', 'npm run a', 'second');
      const doc = readFileSync(join(dir, 'benchmarks.md'), 'utf8');
      expect(doc).toMatch(/^# Benchmarks\n/);
      expect(doc).toContain('second');
      expect(doc).not.toContain('first');
      expect(doc.indexOf('<!-- bench:a -->')).toBeLessThan(doc.indexOf('<!-- bench:b -->'));
    } finally {
      if (saved === undefined) delete process.env['BENCH_DOC'];
      else process.env['BENCH_DOC'] = saved;
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
