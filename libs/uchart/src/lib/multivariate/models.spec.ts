/**
 * Behaviour of the Hotelling and PCA models, checked against brute-force references built from the
 * (separately tested) dense linear algebra, plus property tests (fast-check, fixed seeds); the PCA
 * model's own cases are in pca.spec.ts, the fixtures in src/testing/model-fixtures.ts.
 */
import fc from 'fast-check';
import { chiSquareQuantile, normalQuantile } from '../distributions';
import { ChartConfigError, DegenerateBaselineError, InsufficientBaselineError } from '../errors';
import { MultivariateInputError, NotPositiveDefiniteError } from './errors';
import { fitHotelling, scoreHotelling, type HotellingModel } from './hotelling';
import { fitScaledChiSquare, fitTail, logNormalPredictionLimit, scaledChiSquareQuantile } from './limits';
import { columnMeans, covarianceMatrix, crossProduct } from './linalg';
import { fitPcaModel } from './pca';
import { scorePca } from './pca-score';
import { autoscale, expectRelative, factorData, isPlainJson, mahalanobis, namesOf, sample } from '../../testing/model-fixtures';

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
