import fc from 'fast-check';
import { computePercentiles, floydRivestSelect, SelectionScratch } from './selection';

/** Type-7 quantile by full sort: the reference the selection must equal exactly. */
function sortedQuantile(sorted: number[], p: number): number {
  const h = (sorted.length - 1) * p;
  const lo = Math.floor(h);
  return lo + 1 < sorted.length ? sorted[lo] + (h - lo) * (sorted[lo + 1] - sorted[lo]) : sorted[lo];
}

describe('floydRivestSelect', () => {
  it('places the k-th smallest at k with smaller values before and larger after (large arrays use sampling)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: -50, max: 50 }), { minLength: 1, maxLength: 3000 }),
        fc.nat(),
        (values, kSeed) => {
          const a = Float64Array.from(values);
          const k = kSeed % a.length;
          floydRivestSelect(a, k, 0, a.length - 1);
          const sorted = [...values].sort((x, y) => x - y);
          expect(a[k]).toBe(sorted[k]);
          for (let i = 0; i < k; i++) expect(a[i]).toBeLessThanOrEqual(a[k]);
          for (let i = k + 1; i < a.length; i++) expect(a[i]).toBeGreaterThanOrEqual(a[k]);
          expect([...a].sort((x, y) => x - y)).toEqual(sorted);
        },
      ),
      { seed: 99, numRuns: 150 },
    );
  });
});

describe('computePercentiles', () => {
  const scratch = new SelectionScratch();

  it('equals the sort-based type-7 median, p05 and p95 exactly, ignoring NaN / Inf', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(
            fc.double({ min: -1e9, max: 1e9, noNaN: true }),
            fc.constant(NaN),
            fc.integer({ min: -3, max: 3 }),
          ),
          {
            minLength: 1,
            maxLength: 2500,
          },
        ),
        (values) => {
          const valid = values.filter(Number.isFinite).sort((x, y) => x - y);
          const p = computePercentiles(Float64Array.from(values), { start: 0, end: values.length }, scratch);
          if (valid.length === 0) {
            expect(p).toBeUndefined();
            return;
          }
          expect(p).toEqual({
            median: sortedQuantile(valid, 0.5),
            p05: sortedQuantile(valid, 0.05),
            p95: sortedQuantile(valid, 0.95),
          });
        },
      ),
      { seed: 31337, numRuns: 300 },
    );
  });

  it('handles the textbook small cases', () => {
    const pct = (xs: number[]) =>
      computePercentiles(Float64Array.from(xs), { start: 0, end: xs.length }, scratch);
    expect(pct([7])).toEqual({ median: 7, p05: 7, p95: 7 });
    expect(pct([1, 3])).toEqual({ median: 2, p05: 1.1, p95: 2.9 });
    expect(pct([5, 1, 4, 2, 3])).toEqual({ median: 3, p05: 1.2, p95: 4.8 });
  });

  it('never modifies the input and reuses its scratch buffer', () => {
    const s = new SelectionScratch();
    const input = Float64Array.from({ length: 1000 }, (_, i) => (i * 7919) % 1000);
    const copy = input.slice();
    computePercentiles(input, { start: 0, end: input.length }, s);
    expect(input).toEqual(copy);
    const cap = s.capacity;
    computePercentiles(input, { start: 100, end: 600 }, s);
    expect(s.capacity).toBe(cap);
  });
});
