/**
 * Fixtures of the multivariate model specs (models.spec.ts, pca.spec.ts): a seeded latent factor model
 * and brute-force references built from the (separately tested) dense linear algebra.
 */
import fc from 'fast-check';
import { cholesky, choleskySolve, columnMeans, covarianceMatrix, symmetricEigen } from '../lib/multivariate/linalg';

// Fixture data: a latent factor model driven by fast-check's seeded generator (no local RNG).

const U = 2 ** 30;
export const uniforms = (n: number): fc.Arbitrary<number[]> =>
  fc
    .array(fc.noBias(fc.integer({ min: 1, max: U })), { minLength: n, maxLength: n })
    .map((ks) => ks.map((k) => (k - 0.5) / U));

/** Standard normal deviates by Box-Muller from pairs of uniforms. */
export function normals(us: readonly number[]): number[] {
  const out: number[] = [];
  for (let i = 0; i + 1 < us.length; i += 2) {
    const r = Math.sqrt(-2 * Math.log(us[i]));
    out.push(r * Math.cos(2 * Math.PI * us[i + 1]), r * Math.sin(2 * Math.PI * us[i + 1]));
  }
  return out;
}

/**
 * m runs x p variables: x_ij = 100 (j + 1) + (1 + j mod 3) (sum_q L_qj f_iq + 0.5 e_ij), with `factors`
 * latent factors, so the variables are correlated, offset and differently scaled.
 */
export function factorData(m: number, p: number, factors: number): fc.Arbitrary<number[][]> {
  const count = m * factors + factors * p + m * p;
  return uniforms(2 * count).map((us) => {
    const z = normals(us);
    let at = 0;
    const f = Array.from({ length: m }, () => Array.from({ length: factors }, () => z[at++]));
    const l = Array.from({ length: factors }, () => Array.from({ length: p }, () => z[at++]));
    return Array.from({ length: m }, (_, i) =>
      Array.from({ length: p }, (_, j) => {
        let s = 0.5 * z[at++];
        for (let q = 0; q < factors; q++) s += l[q][j] * f[i][q];
        return 100 * (j + 1) + (1 + (j % 3)) * s;
      }),
    );
  });
}

export function sample<T>(arb: fc.Arbitrary<T>, seed: number): T {
  return fc.sample(arb, { seed, numRuns: 1 })[0];
}

export const namesOf = (p: number): string[] => Array.from({ length: p }, (_, j) => `svid${j + 1}`);

export function expectRelative(actual: number, expected: number, tol: number): void {
  const err = Math.abs(actual - expected) / Math.max(Math.abs(expected), 1e-300);
  if (!(err <= tol)) throw new Error(`expected ${expected}, got ${actual} (relative error ${err})`);
  expect(err).toBeLessThanOrEqual(tol);
}

// ---------------------------------------------------------------------------------------------
// Brute-force references.

/** (x - mean)' S^-1 (x - mean) from an explicit covariance matrix. */
export function mahalanobis(s: Float64Array, p: number, d: number[]): number {
  const y = choleskySolve(cholesky(s, p), p, d);
  return d.reduce((acc, v, j) => acc + v * y[j], 0);
}

/** Autoscaled copy of rows with the mean and sd (m - 1) of `rows` itself. */
export function autoscale(rows: number[][]): { z: number[][]; mean: Float64Array; sd: number[] } {
  const m = rows.length;
  const p = rows[0].length;
  const flat = Float64Array.from(rows.flat());
  const mean = columnMeans(flat, m, p);
  const cov = covarianceMatrix(flat, m, p);
  const sd = Array.from({ length: p }, (_, j) => Math.sqrt(cov[j * p + j]));
  return { z: rows.map((r) => r.map((v, j) => (v - mean[j]) / sd[j])), mean, sd };
}

/** PCA of the covariance of `zRows` (p x p route), top k: T² and SPE of a centred vector. */
export function densePca(zRows: number[][], k: number) {
  const m = zRows.length;
  const p = zRows[0].length;
  const flat = Float64Array.from(zRows.flat());
  const mean = columnMeans(flat, m, p);
  const eig = symmetricEigen(covarianceMatrix(flat, m, p), p);
  const stats = (x: number[]) => {
    const c = x.map((v, j) => v - mean[j]);
    let t2 = 0;
    const fit = new Array<number>(p).fill(0);
    for (let a = 0; a < k; a++) {
      let t = 0;
      for (let j = 0; j < p; j++) t += eig.vectors[a * p + j] * c[j];
      t2 += (t * t) / eig.values[a];
      for (let j = 0; j < p; j++) fit[j] += t * eig.vectors[a * p + j];
    }
    const spe = c.reduce((acc, v, j) => acc + (v - fit[j]) ** 2, 0);
    return { t2, spe };
  };
  return { eig, stats };
}

export function isPlainJson(value: unknown): boolean {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return true;
  if (typeof value === 'number') return Number.isFinite(value);
  if (Array.isArray(value)) return value.every(isPlainJson);
  if (typeof value === 'object') {
    return (
      Object.getPrototypeOf(value) === Object.prototype && Object.values(value as object).every(isPlainJson)
    );
  }
  return false;
}
