import fc from 'fast-check';
import { NotPositiveDefiniteError } from './errors';
import {
  cholesky,
  choleskyInverse,
  choleskyLogDeterminant,
  choleskySolve,
  columnMeans,
  covarianceMatrix,
  crossProduct,
  gramMatrix,
  symmetricEigen,
} from './linalg';

function matmul(a: Float64Array, b: Float64Array, n: number): Float64Array {
  const c = new Float64Array(n * n);
  for (let i = 0; i < n; i++)
    for (let k = 0; k < n; k++) for (let j = 0; j < n; j++) c[i * n + j] += a[i * n + k] * b[k * n + j];
  return c;
}

function maxAbs(a: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]));
  return m;
}

/** Random symmetric n x n matrices with entries in [-10, 10]. */
const symmetric = fc.integer({ min: 1, max: 12 }).chain((n) =>
  fc
    .array(fc.double({ min: -10, max: 10, noNaN: true }), { minLength: n * n, maxLength: n * n })
    .map((xs) => {
      const a = Float64Array.from(xs);
      for (let i = 0; i < n; i++) for (let j = 0; j < i; j++) a[j * n + i] = a[i * n + j];
      return { n, a };
    }),
);

describe('covariance', () => {
  it('column means and the two-pass sample covariance of a small matrix (hand-computed)', () => {
    // Columns (1, 2, 3) and (2, 4, 9): means 2 and 5, var 1 and 13, cov 3.5.
    const x = Float64Array.of(1, 2, 2, 4, 3, 9);
    expect(Array.from(columnMeans(x, 3, 2))).toEqual([2, 5]);
    expect(Array.from(covarianceMatrix(x, 3, 2))).toEqual([1, 3.5, 3.5, 13]);
  });

  it('keeps full precision with a large offset (1e9 + small deviations)', () => {
    const x = Float64Array.of(1e9 + 1, 1e9 + 2, 1e9 + 3);
    expect(covarianceMatrix(x, 3, 1)[0]).toBe(1);
  });

  it('cross product and Gram matrix agree with their definitions', () => {
    const a = Float64Array.of(1, 2, 3, 4, 5, 6); // 2 x 3
    expect(Array.from(crossProduct(a, 2, 3))).toEqual([17, 22, 27, 22, 29, 36, 27, 36, 45]);
    expect(Array.from(gramMatrix(a, 2, 3))).toEqual([14, 32, 32, 77]);
  });
});

describe('Cholesky', () => {
  // A = L L' with L = [[2, 0, 0], [1, 3, 0], [-1, 2, 4]].
  const a = Float64Array.of(4, 2, -2, 2, 10, 5, -2, 5, 21);

  it('factors a known SPD matrix, solves, inverts and gives the determinant', () => {
    const l = cholesky(a, 3);
    expect(Array.from(l)).toEqual([2, 0, 0, 1, 3, 0, -1, 2, 4]);
    // A x = b with x = (1, -2, 3).
    const x = choleskySolve(l, 3, [4 * 1 + 2 * -2 + -2 * 3, 2 + 10 * -2 + 5 * 3, -2 + 5 * -2 + 21 * 3]);
    [1, -2, 3].forEach((v, i) => expect(x[i]).toBeCloseTo(v, 13));
    const id = matmul(a, choleskyInverse(l, 3), 3);
    id.forEach((v, i) => expect(v).toBeCloseTo(i % 4 === 0 ? 1 : 0, 13));
    expect(Math.exp(choleskyLogDeterminant(l, 3))).toBeCloseTo(576, 9); // (2 * 3 * 4)^2
  });

  it('rejects an indefinite matrix and a singular one with a named error that says which pivot', () => {
    expect(() => cholesky(Float64Array.of(1, 2, 2, 1), 2)).toThrow(NotPositiveDefiniteError);
    expect(() => cholesky(Float64Array.of(1, 2, 2, 1), 2)).toThrow(/pivot 1/);
    // Rank 1: [[1, 1], [1, 1]].
    expect(() => cholesky(Float64Array.of(1, 1, 1, 1), 2)).toThrow(/not positive definite/);
  });
});

describe('symmetricEigen', () => {
  it('2 x 2 closed form: [[2, 1], [1, 2]] has eigenvalues 3 and 1', () => {
    const e = symmetricEigen(Float64Array.of(2, 1, 1, 2), 2);
    expect(e.values[0]).toBeCloseTo(3, 14);
    expect(e.values[1]).toBeCloseTo(1, 14);
    expect(Math.abs(e.vectors[0])).toBeCloseTo(Math.SQRT1_2, 14);
    expect(e.vectors[0]).toBeCloseTo(e.vectors[1], 14);
  });

  it('sorts a diagonal matrix descending and handles repeated eigenvalues and 1 x 1', () => {
    const e = symmetricEigen(Float64Array.of(1, 0, 0, 0, 5, 0, 0, 0, 5), 3);
    expect(Array.from(e.values)).toEqual([5, 5, 1]);
    expect(Array.from(symmetricEigen(Float64Array.of(-7), 1).values)).toEqual([-7]);
  });

  it('signs are deterministic: the largest component of each eigenvector is positive', () => {
    const e = symmetricEigen(Float64Array.of(4, -2, 0, -2, 4, -2, 0, -2, 4), 3);
    for (let r = 0; r < 3; r++) {
      const row = Array.from(e.vectors.subarray(r * 3, r * 3 + 3));
      const big = row.reduce((b, x) => (Math.abs(x) > Math.abs(b) ? x : b), 0);
      expect(big).toBeGreaterThan(0);
    }
  });

  it("property: V diag(values) V' reconstructs A, V is orthonormal, values descending (fast-check)", () => {
    fc.assert(
      fc.property(symmetric, ({ n, a }) => {
        const { values, vectors } = symmetricEigen(a, n);
        const scale = Math.max(1, maxAbs(a));
        const recon = new Float64Array(n * n);
        for (let r = 0; r < n; r++) {
          for (let i = 0; i < n; i++) {
            for (let j = 0; j < n; j++)
              recon[i * n + j] += values[r] * vectors[r * n + i] * vectors[r * n + j];
          }
        }
        for (let i = 0; i < n * n; i++) expect(Math.abs(recon[i] - a[i])).toBeLessThan(1e-12 * n * scale);
        for (let r = 0; r < n; r++) {
          for (let s = 0; s < n; s++) {
            let dot = 0;
            for (let i = 0; i < n; i++) dot += vectors[r * n + i] * vectors[s * n + i];
            expect(Math.abs(dot - (r === s ? 1 : 0))).toBeLessThan(1e-13 * n);
          }
        }
        for (let r = 1; r < n; r++) expect(values[r]).toBeLessThanOrEqual(values[r - 1]);
      }),
      { seed: 20240611, numRuns: 300 },
    );
  });

  it('property: trace and Frobenius norm are preserved (fast-check)', () => {
    fc.assert(
      fc.property(symmetric, ({ n, a }) => {
        const { values } = symmetricEigen(a, n);
        let tr = 0;
        let fro = 0;
        for (let i = 0; i < n; i++) tr += a[i * n + i];
        for (let i = 0; i < n * n; i++) fro += a[i] * a[i];
        const sum = values.reduce((s, v) => s + v, 0);
        const sq = values.reduce((s, v) => s + v * v, 0);
        expect(Math.abs(sum - tr)).toBeLessThan(1e-11 * Math.max(1, Math.sqrt(fro)) * n);
        expect(Math.abs(sq - fro)).toBeLessThan(1e-11 * Math.max(1, fro) * n);
      }),
      { seed: 7, numRuns: 200 },
    );
  });
});
