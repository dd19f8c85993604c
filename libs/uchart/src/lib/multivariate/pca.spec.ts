/**
 * Behaviour of the PCA model, checked against brute-force references built from the (separately
 * tested) dense linear algebra (fixtures in src/testing/model-fixtures.ts).
 */
import { MultivariateInputError } from './errors';
import { fitScaledChiSquare, jacksonMudholkarLimit, scaledChiSquareQuantile } from './limits';
import { fitPcaModel, type PcaModel } from './pca';
import { scorePca } from './pca-score';
import { autoscale, densePca, expectRelative, factorData, isPlainJson, namesOf, normals, sample, uniforms } from '../../testing/model-fixtures';

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
