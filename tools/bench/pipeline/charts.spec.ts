import { latencyChart } from './charts';

describe('latencyChart', () => {
  it('draws each sample over p50, p90, p99 and max, and the target as a flat line', () => {
    const ms = Array.from({ length: 100 }, (_, i) => i + 1);
    const out = latencyChart('SQLite, typical runs', [{ label: 'stored', ms }, { label: 'empty', ms: [] }], { label: 'target', ms: 100 });
    expect(out).toContain('x-axis "percentile" ["p50", "p90", "p99", "max"]');
    expect(out).toContain('line [50, 90, 99, 100]');
    expect(out).toContain('line [100, 100, 100, 100]');
    expect(out).toContain('line 1: stored; line 2: target');
    expect(out).not.toContain('empty');
  });

  it('is empty when no sample has values', () => {
    expect(latencyChart('t', [{ label: 'a', ms: [] }])).toBe('');
  });
});
