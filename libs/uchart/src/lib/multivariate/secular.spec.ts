import fc from 'fast-check';
import { symmetricEigen } from './linalg';
import { largestFirst, rankOneDowndate } from './secular';

/** Dense reference: eigenvalues of D - sigma w w' and the squared projections of w on the eigenvectors. */
function dense(
  d: readonly number[],
  w: readonly number[],
  sigma: number,
): { values: number[]; projections: number[] } {
  const n = d.length;
  const a = new Float64Array(n * n);
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < n; j++) a[i * n + j] = (i === j ? d[i] : 0) - sigma * w[i] * w[j];
  }
  const e = symmetricEigen(a, n);
  const projections: number[] = [];
  for (let r = 0; r < n; r++) {
    let s = 0;
    for (let i = 0; i < n; i++) s += e.vectors[r * n + i] * w[i];
    projections.push(s * s);
  }
  return { values: Array.from(e.values), projections };
}

/** Sums of projections over groups of (numerically) equal eigenvalues: eigenvectors within a group are not unique. */
function grouped(values: readonly number[], projections: readonly number[], tol: number): number[][] {
  const out: number[][] = [];
  values.forEach((v, i) => {
    const last = out[out.length - 1];
    if (last && Math.abs(last[0] - v) <= tol) last[1] += projections[i];
    else out.push([v, projections[i]]);
  });
  return out;
}

const problem = fc.integer({ min: 1, max: 25 }).chain((n) =>
  fc.record({
    d: fc
      .array(fc.oneof(fc.double({ min: 0.001, max: 100, noNaN: true }), fc.constantFrom(1, 2, 5)), {
        minLength: n,
        maxLength: n,
      })
      .map((xs) => [...xs].sort((a, b) => b - a)),
    w: fc.array(fc.oneof(fc.double({ min: -3, max: 3, noNaN: true }), fc.constant(0)), {
      minLength: n,
      maxLength: n,
    }),
    sigma: fc.double({ min: 0.01, max: 2, noNaN: true }),
  }),
);

describe('rankOneDowndate', () => {
  it("2 x 2 by hand: diag(3, 1) - w w' with w = (1, 1) has eigenvalues 1 +/- sqrt(2); projections sum to |w|^2", () => {
    // [[2, -1], [-1, 0]]: eigenvalues 1 + sqrt 2 and 1 - sqrt 2.
    const s = rankOneDowndate([3, 1], [1, 1], 1);
    expect(s.values[0]).toBeCloseTo(1 + Math.SQRT2, 14);
    expect(s.values[1]).toBeCloseTo(1 - Math.SQRT2, 14);
    expect(s.projections[0] + s.projections[1]).toBeCloseTo(2, 14);
  });

  it('deflation: w_j = 0 leaves d_j with projection 0; equal d_j merge', () => {
    const s = rankOneDowndate([5, 4, 4, 1], [0, 1, 1, 0], 0.5);
    // The (4, 4) block: w = (1, 1) -> eigenvalue 4 - 0.5 * 2 = 3 along (1, 1), 4 orthogonal to it.
    [5, 4, 3, 1].forEach((v, i) => expect(s.values[i]).toBeCloseTo(v, 14));
    [0, 0, 2, 0].forEach((v, i) => expect(s.projections[i]).toBeCloseTo(v, 13));
  });

  it("property: agrees with a dense eigen-decomposition of D - sigma w w' (fast-check)", () => {
    fc.assert(
      fc.property(problem, ({ d, w, sigma }) => {
        const got = rankOneDowndate(d, w, sigma);
        const ref = dense(d, w, sigma);
        const scale = d[0] + sigma * w.reduce((s, x) => s + x * x, 0);
        const tol = 1e-11 * Math.max(1, scale);
        got.values.forEach((v, i) => expect(Math.abs(v - ref.values[i])).toBeLessThan(tol));
        const w2 = w.reduce((s, x) => s + x * x, 0);
        const a = grouped(Array.from(got.values), Array.from(got.projections), 1e-7 * Math.max(1, scale));
        const b = grouped(ref.values, ref.projections, 1e-7 * Math.max(1, scale));
        expect(a.length).toBe(b.length);
        a.forEach(([, p], i) => expect(Math.abs(p - b[i][1])).toBeLessThan(1e-8 * Math.max(1, w2)));
        expect(Math.abs(got.projections.reduce((s, x) => s + x, 0) - w2)).toBeLessThan(
          1e-11 * Math.max(1, w2),
        );
      }),
      { seed: 424242, numRuns: 400 },
    );
  });

  it('property: the `largest` largest eigenvalues alone are the first of the whole spectrum, projections and all (fast-check)', () => {
    fc.assert(
      fc.property(problem, fc.integer({ min: 1, max: 8 }), ({ d, w, sigma }, largest) => {
        const all = rankOneDowndate(d, w, sigma);
        const top = rankOneDowndate(d, w, sigma, largest);
        const n = Math.min(largest, d.length);
        expect(top.values.length).toBe(n);
        expect(Array.from(top.values)).toEqual(Array.from(all.values.subarray(0, n)));
        expect(Array.from(top.projections)).toEqual(Array.from(all.projections.subarray(0, n)));
      }),
      { seed: 515151, numRuns: 400 },
    );
  });
});

describe('largestFirst', () => {
  it('is the head of the sort by value descending, equal values in index order', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.constantFrom(0, -0, 1, 2, 2, 3), fc.double({ min: -10, max: 10, noNaN: true })), { maxLength: 40 }), fc.integer({ min: 0, max: 45 }), (values, count) => {
        const sorted = values
          .map((_, i) => i)
          .sort((x, y) => (values[y] as number) - (values[x] as number) || x - y)
          .slice(0, count);
        expect(largestFirst(values, count)).toEqual(sorted);
      }),
      { seed: 17, numRuns: 500 },
    );
  });
});
