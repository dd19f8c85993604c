/**
 * Behaviour of the Hotelling and PCA models, checked against brute-force references built from the
 * (separately tested) dense linear algebra, plus property tests (fast-check, fixed seeds).
 */
import fc from 'fast-check';
import { chiSquareQuantile, normalQuantile } from '../distributions';
import { ChartConfigError, DegenerateBaselineError, InsufficientBaselineError } from '../errors';
import { MultivariateInputError, NotPositiveDefiniteError } from './errors';
import { fitHotelling, scoreHotelling, type HotellingModel } from './hotelling';
import { fitScaledChiSquare, fitTail, jacksonMudholkarLimit, logNormalPredictionLimit, scaledChiSquareQuantile } from './limits';
import {
  cholesky,
  choleskySolve,
  columnMeans,
  covarianceMatrix,
  crossProduct,
  symmetricEigen,
} from './linalg';
import { fitPcaModel, type PcaModel } from './pca';
import { scorePca } from './pca-score';

// ---------------------------------------------------------------------------------------------
// Fixture data: a latent factor model driven by fast-check's seeded generator (no local RNG).

const U = 2 ** 30;
const uniforms = (n: number): fc.Arbitrary<number[]> =>
  fc
    .array(fc.noBias(fc.integer({ min: 1, max: U })), { minLength: n, maxLength: n })
    .map((ks) => ks.map((k) => (k - 0.5) / U));

/** Standard normal deviates by Box-Muller from pairs of uniforms. */
function normals(us: readonly number[]): number[] {
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
function factorData(m: number, p: number, factors: number): fc.Arbitrary<number[][]> {
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

function sample<T>(arb: fc.Arbitrary<T>, seed: number): T {
  return fc.sample(arb, { seed, numRuns: 1 })[0];
}

const namesOf = (p: number): string[] => Array.from({ length: p }, (_, j) => `svid${j + 1}`);

function expectRelative(actual: number, expected: number, tol: number): void {
  const err = Math.abs(actual - expected) / Math.max(Math.abs(expected), 1e-300);
  if (!(err <= tol)) throw new Error(`expected ${expected}, got ${actual} (relative error ${err})`);
  expect(err).toBeLessThanOrEqual(tol);
}

// ---------------------------------------------------------------------------------------------
// Brute-force references.

/** (x - mean)' S^-1 (x - mean) from an explicit covariance matrix. */
function mahalanobis(s: Float64Array, p: number, d: number[]): number {
  const y = choleskySolve(cholesky(s, p), p, d);
  return d.reduce((acc, v, j) => acc + v * y[j], 0);
}

/** Autoscaled copy of rows with the mean and sd (m - 1) of `rows` itself. */
function autoscale(rows: number[][]): { z: number[][]; mean: Float64Array; sd: number[] } {
  const m = rows.length;
  const p = rows[0].length;
  const flat = Float64Array.from(rows.flat());
  const mean = columnMeans(flat, m, p);
  const cov = covarianceMatrix(flat, m, p);
  const sd = Array.from({ length: p }, (_, j) => Math.sqrt(cov[j * p + j]));
  return { z: rows.map((r) => r.map((v, j) => (v - mean[j]) / sd[j])), mean, sd };
}

/** PCA of the covariance of `zRows` (p x p route), top k: T² and SPE of a centred vector. */
function densePca(zRows: number[][], k: number) {
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

function isPlainJson(value: unknown): boolean {
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

// ---------------------------------------------------------------------------------------------

describe('input validation and dropped variables', () => {
  const rows = sample(factorData(20, 4, 2), 1);

  it('reports every bad row and value at once, with a named error', () => {
    const bad = rows.map((r) => [...r]);
    bad[2] = bad[2].slice(0, 3);
    bad[5][1] = NaN;
    bad[7][3] = Infinity;
    try {
      fitHotelling(bad, namesOf(4));
      throw new Error('expected a throw');
    } catch (e) {
      expect(e).toBeInstanceOf(MultivariateInputError);
      expect((e as MultivariateInputError).issues).toHaveLength(3);
    }
    expect(() => fitPcaModel(rows, ['a', 'b', 'a', 'c'])).toThrow(/duplicate "a"/);
  });

  it('rejects bad options with ChartConfigError', () => {
    expect(() => fitHotelling(rows, namesOf(4), { alpha: 0 })).toThrow(ChartConfigError);
    expect(() => fitHotelling(rows, namesOf(4), { covariance: 'ledoit-wolf', limits: 'theory' })).toThrow(
      ChartConfigError,
    );
    expect(() =>
      fitPcaModel(rows, namesOf(4), { components: { rule: 'cumulative-variance', fraction: 1.5 } }),
    ).toThrow(ChartConfigError);
    expect(() => fitPcaModel(rows, namesOf(4), { components: { rule: 'fixed', count: 0 } })).toThrow(
      ChartConfigError,
    );
  });

  it('drops constant and negligible-variation variables with the reason and flags a changed setpoint', () => {
    const withConst = rows.map((r, i) => [...r, 42, 1e6 + (i % 2) * 1e-6]);
    const names = [...namesOf(4), 'setpoint', 'pressure'];
    const model = fitPcaModel(withConst, names);
    expect(model.dropped.map((d) => [d.name, d.reason])).toEqual([
      ['setpoint', 'constant'],
      ['pressure', 'negligible-variation'],
    ]);
    expect(model.kept).toEqual([0, 1, 2, 3]);
    const score = scorePca(model, [...rows[0], 43, 1e6]);
    expect(score.droppedOutOfRange).toEqual(['setpoint']);
    expect(score.contributions.spe.map((c) => c.name).sort()).toEqual(namesOf(4));
  });

  it('refuses a baseline without variation, or too short for the method', () => {
    const flat = rows.map(() => [1, 2]);
    expect(() => fitPcaModel(flat, ['a', 'b'])).toThrow(DegenerateBaselineError);
    expect(() => fitHotelling(rows.slice(0, 5), namesOf(4))).toThrow(InsufficientBaselineError);
    expect(() => fitPcaModel(rows.slice(0, 9), namesOf(4), { limits: 'loo' })).toThrow(
      InsufficientBaselineError,
    );
  });
});

describe('Hotelling T²', () => {
  const m = 30;
  const p = 6;
  const rows = sample(factorData(m, p, 2), 2);
  const model = fitHotelling(rows, namesOf(p), { limits: 'loo' });

  it("Phase I T² equals (x_i - xbar)' S^-1 (x_i - xbar) on the raw data, and sums to (m - 1) p", () => {
    const flat = Float64Array.from(rows.flat());
    const mean = columnMeans(flat, m, p);
    const s = covarianceMatrix(flat, m, p);
    rows.forEach((r, i) =>
      expectRelative(
        model.phaseOne.t2[i],
        mahalanobis(
          s,
          p,
          r.map((v, j) => v - mean[j]),
        ),
        1e-10,
      ),
    );
    expectRelative(
      model.phaseOne.t2.reduce((a, b) => a + b, 0),
      (m - 1) * p,
      1e-12,
    );
    rows.forEach((r, i) => expectRelative(scoreHotelling(model, r).t2, model.phaseOne.t2[i], 1e-10));
  });

  it('leave-one-out T² equals a refit without the run and the Sherman-Morrison closed form', () => {
    rows.forEach((r, i) => {
      const rest = rows.filter((_, j) => j !== i);
      const flat = Float64Array.from(rest.flat());
      const mean = columnMeans(flat, m - 1, p);
      const refit = mahalanobis(
        covarianceMatrix(flat, m - 1, p),
        p,
        r.map((v, j) => v - mean[j]),
      );
      expectRelative(model.phaseOne.looT2![i], refit, 1e-9);
      const d = model.phaseOne.t2[i];
      const closed = (m / (m - 1)) ** 2 * ((m - 2) / (m - 1)) * (d / (1 - (m * d) / (m - 1) ** 2));
      expectRelative(model.phaseOne.looT2![i], closed, 1e-9);
    });
    expect(model.limit).toBeCloseTo(
      scaledChiSquareQuantile(fitScaledChiSquare(model.phaseOne.looT2!), 0.0027),
      10,
    );
    expect(model.limitMethod).toBe('loo');
  });

  it('collinear indicators: a clear NotPositiveDefiniteError for the sample covariance, shrinkage works', () => {
    const collinear = rows.map((r) => [...r, r[0] + 2 * r[1]]);
    expect(() => fitHotelling(collinear, namesOf(p + 1))).toThrow(NotPositiveDefiniteError);
    expect(() => fitHotelling(collinear, namesOf(p + 1))).toThrow(/rank 6.*ledoit-wolf/);
    const lw = fitHotelling(collinear, namesOf(p + 1), { covariance: 'ledoit-wolf' });
    expect(lw.shrinkage).toBeGreaterThan(0);
    expect(lw.shrinkage).toBeLessThan(1);
  });

  describe('Ledoit-Wolf shrinkage, p > m', () => {
    const mm = 14;
    const pp = 25;
    const wide = sample(factorData(mm, pp, 3), 3);
    const lw = fitHotelling(wide, namesOf(pp), { covariance: 'ledoit-wolf' });
    const { z } = autoscale(wide);
    // Brute force on p x p matrices: y = z sqrt(m / (m - 1)), S = Y'Y / m (the correlation matrix).
    const y = z.map((r) => r.map((v) => v * Math.sqrt(mm / (mm - 1))));
    const s = crossProduct(Float64Array.from(y.flat()), mm, pp).map((v) => v / mm);
    let d2 = 0;
    for (let i = 0; i < pp; i++) for (let j = 0; j < pp; j++) d2 += (s[i * pp + j] - (i === j ? 1 : 0)) ** 2;
    d2 /= pp;
    let bbar2 = 0;
    for (const yk of y)
      for (let i = 0; i < pp; i++) for (let j = 0; j < pp; j++) bbar2 += (yk[i] * yk[j] - s[i * pp + j]) ** 2;
    bbar2 /= mm * mm * pp;
    const delta = Math.min(bbar2, d2) / d2;
    const shrunk = s.map((v, idx) => (1 - delta) * v + (idx % (pp + 1) === 0 ? delta : 0));

    it('reports the analytic intensity min(bbar^2, d^2) / d^2 of Ledoit & Wolf (2004)', () => {
      expectRelative(lw.shrinkage, delta, 1e-10);
    });

    it("Phase I T² = z' (delta I + (1 - delta) R)^-1 z, and leave-one-out matches a refit with delta and scaling fixed", () => {
      z.forEach((zi, i) => expectRelative(lw.phaseOne.t2[i], mahalanobis(shrunk, pp, zi), 1e-9));
      z.forEach((zi, i) => {
        const rest = z.filter((_, j) => j !== i);
        const flat = Float64Array.from(rest.flat());
        const mean = columnMeans(flat, mm - 1, pp);
        const c = covarianceMatrix(flat, mm - 1, pp).map(
          (v, idx) => (1 - delta) * v + (idx % (pp + 1) === 0 ? delta : 0),
        );
        expectRelative(
          lw.phaseOne.looT2![i],
          mahalanobis(
            c,
            pp,
            zi.map((v, j) => v - mean[j]),
          ),
          1e-8,
        );
      });
      // A new run far off the Phase I span is charted through the identity part of the target.
      const off = wide[0].map((v, j) => v + (j % 2 ? 5 : -5) * lw.sd[j]);
      const zOff = off.map((v, j) => (v - lw.mean[j]) / lw.sd[j]);
      expectRelative(scoreHotelling(lw, off).t2, mahalanobis(shrunk, pp, zOff), 1e-9);
    });
  });

  it('missing values: T² equals the T² of the observed sub-vector (same S), never more than the complete value', () => {
    const x = rows[3].map((v, j) => v + (j === 1 ? 4 : 0) * model.sd[j]);
    const complete = scoreHotelling(model, x);
    const withMissing = [...x];
    withMissing[2] = NaN;
    withMissing[4] = NaN;
    const res = scoreHotelling(model, withMissing);
    expect(res.missing).toEqual(['svid3', 'svid5']);
    const obs = [0, 1, 3, 5];
    const flat = Float64Array.from(rows.flat());
    const s = covarianceMatrix(flat, m, p);
    const mean = columnMeans(flat, m, p);
    const sub = new Float64Array(obs.length * obs.length);
    obs.forEach((a, i) => obs.forEach((b, j) => (sub[i * obs.length + j] = s[a * p + b])));
    expectRelative(
      res.t2,
      mahalanobis(
        sub,
        obs.length,
        obs.map((j) => x[j] - mean[j]),
      ),
      1e-9,
    );
    expect(res.t2).toBeLessThanOrEqual(complete.t2 * (1 + 1e-12));
  });

  it('is plain JSON: a stored and re-read model scores identically', () => {
    expect(isPlainJson(model)).toBe(true);
    const stored = JSON.parse(JSON.stringify(model)) as HotellingModel;
    expect(stored).toEqual(model);
    const x = rows[7].map((v, j) => v + (j % 2 ? 1 : -2) * model.sd[j]);
    expect(scoreHotelling(stored, x)).toEqual(scoreHotelling(model, x));
  });
});

describe('PCA model', () => {
  const m = 30;
  const p = 10;
  const rows = sample(factorData(m, p, 3), 4);
  const model = fitPcaModel(rows, namesOf(p), { limits: 'loo' });

  it('component rules: cumulative variance, Kaiser, fixed, and the caps m - 2 and rank - 1', () => {
    const l = model.eigenvalues;
    const cum = (k: number) => l.slice(0, k).reduce((a, b) => a + b, 0) / p;
    const k90 = model.components;
    expect(cum(k90)).toBeGreaterThanOrEqual(0.9);
    expect(cum(k90 - 1)).toBeLessThan(0.9);
    const kaiser = fitPcaModel(rows, namesOf(p), { components: { rule: 'kaiser' } });
    expect(kaiser.components).toBe(l.filter((v) => v > 1).length);
    expect(fitPcaModel(rows, namesOf(p), { components: { rule: 'fixed', count: 5 } }).components).toBe(5);
    const short = fitPcaModel(rows.slice(0, 5), namesOf(p), { components: { rule: 'fixed', count: 8 } });
    expect([short.components, short.componentsRequested]).toEqual([3, 8]);
    const narrow = fitPcaModel(
      rows.map((r) => r.slice(0, 3)),
      namesOf(3),
      { components: { rule: 'fixed', count: 3 } },
    );
    expect([narrow.components, narrow.componentsRequested]).toEqual([2, 3]);
    expect(model.explainedVariance).toBeCloseTo(cum(k90), 12);
  });

  it('Phase I T² and SPE equal a dense p x p PCA; sum of T² is (m - 1) k', () => {
    const { z } = autoscale(rows);
    const ref = densePca(z, model.components);
    z.forEach((zi, i) => {
      const { t2, spe } = ref.stats(zi);
      expectRelative(model.phaseOne.t2[i], t2, 1e-9);
      expectRelative(model.phaseOne.spe[i], spe, 1e-8);
      const s = scorePca(model, rows[i]);
      expectRelative(s.t2, t2, 1e-9);
      expectRelative(s.spe, spe, 1e-8);
    });
    expectRelative(
      model.phaseOne.t2.reduce((a, b) => a + b, 0),
      (m - 1) * model.components,
      1e-12,
    );
  });

  it('leave-one-out statistics equal a refit on the other m - 1 runs (Phase I autoscaling kept), p < m and p > m', () => {
    for (const [rowsX, pX, mdl] of [
      [rows, p, model],
      ...(() => {
        const wide = sample(factorData(12, 30, 2), 5);
        return [
          [
            wide,
            30,
            fitPcaModel(wide, namesOf(30), { limits: 'loo', components: { rule: 'fixed', count: 3 } }),
          ],
        ];
      })(),
    ] as [number[][], number, PcaModel][]) {
      const { z } = autoscale(rowsX);
      z.forEach((zi, i) => {
        const ref = densePca(
          z.filter((_, j) => j !== i),
          mdl.components,
        ).stats(zi);
        expectRelative(mdl.phaseOne.looT2![i], ref.t2, 1e-8);
        expectRelative(mdl.phaseOne.looSpe![i], ref.spe, 1e-8);
      });
      expect(pX).toBe(mdl.kept.length);
      expect(mdl.limits.t2).toBeCloseTo(
        scaledChiSquareQuantile(fitScaledChiSquare(mdl.phaseOne.looT2!), mdl.alpha),
        10,
      );
      expect(mdl.limits.spe).toBeCloseTo(
        scaledChiSquareQuantile(fitScaledChiSquare(mdl.phaseOne.looSpe!), mdl.alpha),
        10,
      );
      expect(mdl.limits.speMethod).toBe('loo');
    }
  });

  it('leave-one-out limits stay within 10% of a full refit that also re-estimates the autoscaling per fold', () => {
    // The fast leave-one-out keeps the Phase I mean / sd for standardising (see fitPcaModel); this
    // bounds what that costs against refitting everything on m - 1 runs.
    const small = sample(factorData(20, 10, 3), 9);
    const fast = fitPcaModel(small, namesOf(10), { limits: 'loo' });
    const k = fast.components;
    const t2: number[] = [];
    const spe: number[] = [];
    small.forEach((r, i) => {
      const fold = fitPcaModel(
        small.filter((_, j) => j !== i),
        namesOf(10),
        { components: { rule: 'fixed', count: k } },
      );
      const s = scorePca(fold, r);
      t2.push(s.t2);
      spe.push(s.spe);
    });
    const refitT2 = scaledChiSquareQuantile(fitScaledChiSquare(t2), fast.alpha);
    const refitSpe = scaledChiSquareQuantile(fitScaledChiSquare(spe), fast.alpha);
    expect(Math.abs(fast.limits.t2 / refitT2 - 1)).toBeLessThan(0.1);
    expect(Math.abs(fast.limits.spe / refitSpe - 1)).toBeLessThan(0.1);
  });

  it('p > m goes through the Gram matrix and agrees with the dense p x p route', () => {
    const wide = sample(factorData(15, 40, 3), 6);
    const mdl = fitPcaModel(wide, namesOf(40), { components: { rule: 'fixed', count: 3 } });
    const { z } = autoscale(wide);
    const ref = densePca(z, 3);
    expect(mdl.eigenvalues).toHaveLength(14); // rank m - 1
    mdl.eigenvalues.forEach((v, a) => expectRelative(v, ref.eig.values[a], 1e-10));
    z.forEach((zi, i) => {
      expectRelative(mdl.phaseOne.t2[i], ref.stats(zi).t2, 1e-9);
      expectRelative(mdl.phaseOne.spe[i], ref.stats(zi).spe, 1e-8);
    });
  });

  it('contributions: named, largest first, non-negative, summing to T² and SPE; SPE ones are e_j^2', () => {
    const x = rows[0].map((v, j) => v + (j === 4 ? 6 : 0) * model.sd[j]);
    const s = scorePca(model, x);
    const sum = (cs: readonly { value: number }[]) => cs.reduce((a, c) => a + c.value, 0);
    expectRelative(sum(s.contributions.t2), s.t2, 1e-12);
    expectRelative(sum(s.contributions.spe), s.spe, 1e-12);
    for (const list of [s.contributions.t2, s.contributions.spe]) {
      list.forEach((c, i) => {
        expect(c.value).toBeGreaterThanOrEqual(0);
        if (i > 0) expect(c.value).toBeLessThanOrEqual(list[i - 1].value);
      });
    }
    // A 6-sigma shift of one variable breaks the correlation structure: SPE flags it, and it tops
    // the SPE contributions.
    expect(s.speExceeded).toBe(true);
    expect(s.contributions.spe[0].name).toBe('svid5');
    // The same values unsorted, in the order of the kept variables, for callers that need no ranking.
    for (const k of ['t2', 'spe'] as const) {
      const byName = new Map(s.contributions[k].map((c) => [c.name, c.value]));
      expect(s.contributionValues[k]).toHaveLength(model.kept.length);
      s.contributionValues[k].forEach((v, c) => expect(byName.get(model.names[model.kept[c]])).toBe(v));
    }
    // Sorted once: reading the lists again gives the same arrays.
    expect(s.contributions.t2).toBe(s.contributions.t2);
  });

  it('a missing indicator alone never raises an alarm (mean imputation would)', () => {
    // Two strongly correlated variables both at +3 sd: in control for the model.
    const pair = sample(uniforms(2 * 40 * 3), 7);
    const g = normals(pair);
    const corr = Array.from({ length: 40 }, (_, i) => {
      const f = g[3 * i];
      return [f + 0.05 * g[3 * i + 1], f + 0.05 * g[3 * i + 2], g[(3 * i + 40) % g.length]];
    });
    const mdl = fitPcaModel(corr, ['a', 'b', 'c'], { components: { rule: 'fixed', count: 2 } });
    const x = [mdl.mean[0] + 3 * mdl.sd[0], mdl.mean[1] + 3 * mdl.sd[1], mdl.mean[2]];
    expect(scorePca(mdl, x).speExceeded).toBe(false);
    const missing = scorePca(mdl, [x[0], NaN, x[2]]);
    expect(missing.missing).toEqual(['b']);
    expect(missing.speExceeded).toBe(false);
    expect(missing.t2Exceeded).toBe(false);
    expect(missing.contributions.spe.find((c) => c.name === 'b')?.value).toBeCloseTo(0, 12);
    // The naive alternative (b at its Phase I mean) breaks the correlation and alarms.
    expect(scorePca(mdl, [x[0], mdl.mean[1], x[2]]).speExceeded).toBe(true);
  });

  it('Jackson-Mudholkar undefined (h0 <= 0, common when p >> m) falls back to Box, and says so', () => {
    // One strong factor (retained), a second one as large as the noise: the residual spectrum has
    // one moderate eigenvalue and 17 small ones of about the same total, so theta1 theta3 / theta2^2
    // is near 2 and h0 = 1 - (2/3) theta1 theta3 / theta2^2 < 0.
    const us = normals(sample(uniforms(20 * 62), 8));
    const rowsW = Array.from({ length: 20 }, (_, i) => {
      const a = us[i * 62];
      const b = us[i * 62 + 1];
      return Array.from({ length: 60 }, (_, j) => 3 * a + (j % 2 ? 1 : -1) * b + us[i * 62 + 2 + j] + j);
    });
    const mdl = fitPcaModel(rowsW, namesOf(60), { components: { rule: 'fixed', count: 1 } });
    expect(Number.isNaN(jacksonMudholkarLimit(mdl.eigenvalues.slice(1), mdl.alpha))).toBe(true);
    expect(mdl.limits.speMethod).toBe('box');
    expect(mdl.limits.theory.speJacksonMudholkar).toBeNull();
    expect(mdl.limits.spe).toBe(mdl.limits.theory.speBox);
  });

  it('is plain JSON: a stored and re-read model scores identically', () => {
    expect(isPlainJson(model)).toBe(true);
    const stored = JSON.parse(JSON.stringify(model)) as PcaModel;
    expect(stored).toEqual(model);
    const x = [...rows[9]];
    x[3] = NaN;
    expect(scorePca(stored, x)).toEqual(scorePca(model, x));
  });

  it('rejects an observation of the wrong length', () => {
    expect(() => scorePca(model, rows[0].slice(1))).toThrow(MultivariateInputError);
  });
});

describe('properties (fast-check, fixed seeds)', () => {
  const dims = fc.record({ m: fc.integer({ min: 12, max: 25 }), p: fc.integer({ min: 2, max: 8 }) });
  const dataset = dims.chain(({ m, p }) =>
    fc.record({
      rows: factorData(m, p, 2),
      scales: fc.array(
        fc.oneof(
          fc.double({ min: 0.01, max: 100, noNaN: true }),
          fc.double({ min: -100, max: -0.01, noNaN: true }),
        ),
        {
          minLength: p,
          maxLength: p,
        },
      ),
      shifts: fc.array(fc.double({ min: -1e4, max: 1e4, noNaN: true }), { minLength: p, maxLength: p }),
      mix: fc.double({ min: -3, max: 3, noNaN: true }),
    }),
  );

  it('T² is invariant under affine rescaling of the variables (Hotelling: any invertible map; PCA: per variable)', () => {
    fc.assert(
      fc.property(dataset, ({ rows, scales, shifts, mix }) => {
        const p = rows[0].length;
        const names = namesOf(p);
        // Per-variable affine map, plus (for Hotelling) adding a multiple of variable 0 to variable 1.
        const diag = (r: number[]) => r.map((v, j) => scales[j] * v + shifts[j]);
        const general = (r: number[]) => diag(r).map((v, j, d) => (j === 1 ? v + mix * d[0] : v));
        const h0 = fitHotelling(rows, names);
        const h1 = fitHotelling(rows.map(general), names);
        h0.phaseOne.t2.forEach((t, i) => expectRelative(h1.phaseOne.t2[i], t, 1e-7));
        const q0 = fitPcaModel(rows, names, { limits: 'loo' });
        const q1 = fitPcaModel(rows.map(diag), names, { limits: 'loo' });
        expect(q1.components).toBe(q0.components);
        q0.phaseOne.t2.forEach((t, i) => expectRelative(q1.phaseOne.t2[i], t, 1e-7));
        q0.phaseOne.spe.forEach((s, i) =>
          expect(Math.abs(q1.phaseOne.spe[i] - s)).toBeLessThan(1e-7 * Math.max(1, s)),
        );
        expectRelative(q1.limits.t2, q0.limits.t2, 1e-6);
        // A new run, mapped the same way, scores the same.
        const x = rows[0].map((v, j) => v + 0.7 * (j + 1));
        expectRelative(scorePca(q1, diag(x)).t2, scorePca(q0, x).t2, 1e-7);
        expectRelative(scoreHotelling(h1, general(x)).t2, scoreHotelling(h0, x).t2, 1e-7);
      }),
      { seed: 31337, numRuns: 60 },
    );
  });

  const scored = dataset.chain((d) =>
    fc.record({
      d: fc.constant(d),
      x: fc.array(fc.double({ min: -6, max: 6, noNaN: true }), {
        minLength: d.rows[0].length,
        maxLength: d.rows[0].length,
      }),
      missing: fc.array(fc.boolean(), { minLength: d.rows[0].length, maxLength: d.rows[0].length }),
    }),
  );

  it('contributions sum to the statistic, and a missing value never raises T² or SPE', () => {
    fc.assert(
      fc.property(scored, ({ d, x, missing }) => {
        const p = d.rows[0].length;
        const names = namesOf(p);
        const pca = fitPcaModel(d.rows, names);
        const hot = fitHotelling(d.rows, names);
        const obs = x.map((v, j) => pca.mean[j] + v * pca.sd[j]);
        const holes = obs.map((v, j) => (missing[j] ? NaN : v));
        const sum = (cs: readonly { value: number }[]) => cs.reduce((a, c) => a + c.value, 0);
        for (const input of [obs, holes]) {
          const s = scorePca(pca, input);
          expect(Math.abs(sum(s.contributions.t2) - s.t2)).toBeLessThanOrEqual(1e-10 * Math.max(1, s.t2));
          expect(Math.abs(sum(s.contributions.spe) - s.spe)).toBeLessThanOrEqual(1e-10 * Math.max(1, s.spe));
          const h = scoreHotelling(hot, input);
          expect(Math.abs(sum(h.contributions) - h.t2)).toBeLessThanOrEqual(1e-10 * Math.max(1, h.t2));
        }
        const full = scorePca(pca, obs);
        const part = scorePca(pca, holes);
        expect(part.t2).toBeLessThanOrEqual(full.t2 * (1 + 1e-9) + 1e-9);
        expect(part.spe).toBeLessThanOrEqual(full.spe * (1 + 1e-9) + 1e-9);
        expect(scoreHotelling(hot, holes).t2).toBeLessThanOrEqual(
          scoreHotelling(hot, obs).t2 * (1 + 1e-9) + 1e-9,
        );
        expect(part.missing).toEqual(names.filter((_, j) => missing[j]));
      }),
      { seed: 2718, numRuns: 100 },
    );
  });
});

describe('lognormal prediction limit', () => {
  it('is the normal prediction limit of the logarithms (t(0.95; 4) = 2.132 from the t table)', () => {
    // ln(values) = 0..4: mean 2, s = sqrt(2.5); limit = exp(2 + 2.132 x 1.5811 x sqrt(1.2)).
    const values = [0, 1, 2, 3, 4].map(Math.exp);
    expect(logNormalPredictionLimit(values, 0.05)).toBeCloseTo(Math.exp(2 + 2.1318 * Math.sqrt(2.5) * Math.sqrt(1.2)), 1);
    expect(logNormalPredictionLimit(values, 0.5)).toBeCloseTo(Math.exp(2), 10);
    expect(logNormalPredictionLimit(values, 0.95)).toBeCloseTo(Math.exp(2 - 2.1318 * Math.sqrt(2.5) * Math.sqrt(1.2)), 2);
  });

  it('grows as alpha shrinks and refuses values it cannot take the logarithm of', () => {
    const values = [1.2, 0.8, 2.5, 1.1, 0.4, 3.3, 0.9];
    expect(logNormalPredictionLimit(values, 1e-4)).toBeGreaterThan(logNormalPredictionLimit(values, 1e-2));
    expect(() => logNormalPredictionLimit([1, 0, 2], 0.01)).toThrow(DegenerateBaselineError);
    expect(() => logNormalPredictionLimit([1, 2], 0.01)).toThrow(DegenerateBaselineError);
    expect(() => logNormalPredictionLimit([1, 2, 3], 0)).toThrow(ChartConfigError);
  });
});

describe('tail model chosen by likelihood', () => {
  // Deterministic samples by inverse CDF at evenly spaced probabilities (no RNG): chi2(6) and a lognormal.
  const probs = Array.from({ length: 60 }, (_, i) => (i + 0.5) / 60);
  const chiSquare6 = probs.map((p) => 2 * chiSquareQuantile(p, 6));
  const logNormal = probs.map((p) => Math.exp(1 + 1.2 * normalQuantile(p)));

  it('keeps the chi-square for chi-square-like values and its limit is the moment fit\'s quantile', () => {
    const fit = fitTail(chiSquare6, 1e-3);
    expect(fit.model).toBe('scaled-chi-square');
    expect(fit.limit).toBeCloseTo(scaledChiSquareQuantile(fitScaledChiSquare(chiSquare6), 1e-3), 10);
  });

  it('takes the lognormal when a few large values make the tail heavy, with its prediction limit', () => {
    const fit = fitTail(logNormal, 1e-3);
    expect(fit.model).toBe('lognormal');
    expect(fit.logLikelihood.logNormal).toBeGreaterThan(fit.logLikelihood.scaledChiSquare);
    expect(fit.limit).toBeCloseTo(logNormalPredictionLimit(logNormal, 1e-3), 10);
    expect(fit.limit).toBeGreaterThan(scaledChiSquareQuantile(fitScaledChiSquare(logNormal), 1e-3));
  });

  it('refuses what it cannot fit', () => {
    expect(() => fitTail([1, 2], 0.01)).toThrow(DegenerateBaselineError);
    expect(() => fitTail([1, -2, 3], 0.01)).toThrow(DegenerateBaselineError);
  });
});
