/**
 * A PCA prepared once (`preparePcaBasis`) answers as `fitPcaModel` does: the components a rule
 * retains, and the whole model, bit for bit.
 */
import { seededRandom } from '@defender/hashing';
import { ChartConfigError, DegenerateBaselineError, InsufficientBaselineError } from '../errors';
import { fitPcaBasis, fitPcaModel, pcaComponentCount, preparePcaBasis, type ComponentRule } from './pca';

/** m runs x p variables from a few latent factors, some variables constant, some exact copies. */
function runs(u: () => number, m: number, p: number, factors: number): number[][] {
  const load = Array.from({ length: factors }, () => Array.from({ length: p }, () => u() - 0.5));
  return Array.from({ length: m }, () => {
    const f = Array.from({ length: factors }, () => u() - 0.5);
    return Array.from({ length: p }, (_, j) => {
      if (j % 7 === 6) return 5;
      let s = 0.2 * (u() - 0.5);
      for (let q = 0; q < factors; q++) s += (load[q] as number[])[j % 5 === 4 ? j - 1 : j]! * (f[q] as number);
      return 10 * (j + 1) + s;
    });
  });
}

describe('preparePcaBasis', () => {
  const rules: ComponentRule[] = [
    { rule: 'cumulative-variance', fraction: 0.9 },
    { rule: 'cumulative-variance', fraction: 0.5 },
    { rule: 'cumulative-variance', fraction: 1 },
    { rule: 'kaiser' },
    { rule: 'fixed', count: 3 },
    { rule: 'fixed', count: 200 },
  ];

  it('counts the components fitPcaModel retains and fits its model bit for bit (more runs than variables, and fewer)', () => {
    const u = seededRandom(21);
    for (let t = 0; t < 12; t++) {
      const m = 10 + Math.floor(u() * 40);
      const p = 3 + Math.floor(u() * 50);
      const rows = runs(u, m, p, 1 + Math.floor(u() * 6));
      const names = Array.from({ length: p }, (_, j) => `v${j}`);
      const basis = preparePcaBasis(rows, names);
      for (const components of rules) {
        for (const limits of ['theory', 'loo'] as const) {
          const want = fitPcaModel(rows, names, { components, limits, alpha: 0.001 });
          expect({ t, components, k: pcaComponentCount(basis, components) }).toEqual({ t, components, k: want.components });
          expect(fitPcaBasis(basis, { components, limits, alpha: 0.001 })).toEqual(want);
        }
      }
    }
  });

  it('refuses what fitPcaModel refuses', () => {
    const u = seededRandom(5);
    const rows = runs(u, 8, 6, 2);
    const names = Array.from({ length: 6 }, (_, j) => `v${j}`);
    const basis = preparePcaBasis(rows, names);
    expect(() => fitPcaBasis(basis, { limits: 'loo' })).toThrow(InsufficientBaselineError);
    expect(() => pcaComponentCount(basis, { rule: 'fixed', count: 0 })).toThrow(ChartConfigError);
    const flat = rows.map((r) => r.map((_, j) => (j === 0 ? (r[0] as number) : 1)));
    const one = preparePcaBasis(flat, names);
    expect(() => pcaComponentCount(one, { rule: 'kaiser' })).toThrow(DegenerateBaselineError);
    expect(() => preparePcaBasis(rows.map((r) => r.map(() => 3)), names)).toThrow(DegenerateBaselineError);
  });
});
