import fc from 'fast-check';
import { c4 } from '../constants';
import { ChartConfigError, DegenerateBaselineError, InsufficientBaselineError } from '../errors';
import { controlConstants } from './control-constants';
import {
  estimateSubgroupSigma,
  evaluateSubgroups,
  knownSubgroupLimits,
  subgroupLimits,
  subgroupPointLimits,
  subgroupStatistics,
  type SubgroupChartType,
} from './subgroup';

/** Deterministic pseudo-normal fixture (LCG + Box-Muller), `groups` subgroups of `size`. */
function fixture(groups: number, size: number | ((i: number) => number), seed: number): number[][] {
  let s = seed >>> 0;
  const u = () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return (s + 0.5) / 2 ** 32;
  };
  const z = () => Math.sqrt(-2 * Math.log(u())) * Math.cos(2 * Math.PI * u());
  return Array.from({ length: groups }, (_, i) =>
    Array.from({ length: typeof size === 'number' ? size : size(i) }, () => 10 + 0.5 * z()),
  );
}

describe('subgroup statistics', () => {
  it('mean, range and sd (n - 1) in one pass, exact far from zero', () => {
    const s = subgroupStatistics([1e9 + 1, 1e9 + 2, 1e9 + 4]);
    expect(s.size).toBe(3);
    expect(s.mean).toBeCloseTo(1e9 + 7 / 3, 6);
    expect(s.range).toBe(3);
    expect(s.sd).toBeCloseTo(Math.sqrt(7 / 3), 12);
    expect(subgroupStatistics([5]).sd).toBeNaN();
    expect(() => subgroupStatistics([])).toThrow('a subgroup needs at least one value');
    expect(() => subgroupStatistics([1, NaN])).toThrow('subgroup value 1 is not finite (NaN)');
  });
});

describe('equal subgroup sizes reduce to the table factors', () => {
  const groups = fixture(25, 5, 7);
  const stats = groups.map(subgroupStatistics);
  const rBar = stats.reduce((a, g) => a + g.range, 0) / stats.length;
  const sBar = stats.reduce((a, g) => a + g.sd, 0) / stats.length;
  const grand = stats.reduce((a, g) => a + g.mean, 0) / stats.length;

  it.each(['tabulated', 'exact'] as const)(
    'x-bar / R: x-bar-bar +/- A2 R-bar, D3 R-bar / D4 R-bar (%s constants)',
    (constants) => {
      const k = controlConstants(5, constants);
      const xb = subgroupPointLimits(subgroupLimits(groups, 'xbar', { constants }), 5);
      expect(xb.center).toBeCloseTo(grand, 12);
      expect(xb.ucl).toBeCloseTo(grand + k.A2 * rBar, 12);
      expect(xb.lcl).toBeCloseTo(grand - k.A2 * rBar, 12);
      const r = subgroupPointLimits(subgroupLimits(groups, 'R', { constants }), 5);
      expect(r.center).toBeCloseTo(rBar, 14);
      expect(r.ucl).toBeCloseTo(k.D4 * rBar, 14);
      expect(r.lcl).toBe(0); // D3 = 0 for n = 5
    },
  );

  it('x-bar / S: x-bar-bar +/- A3 s-bar, B3 s-bar / B4 s-bar', () => {
    const k = controlConstants(5);
    const xb = subgroupPointLimits(subgroupLimits(groups, 'xbar', { sigmaMethod: 'UWAVE-SD' }), 5);
    expect(xb.ucl).toBeCloseTo(grand + k.A3 * sBar, 12);
    const s = subgroupPointLimits(subgroupLimits(groups, 'S'), 5);
    expect(s.center).toBeCloseTo(sBar, 14);
    expect(s.ucl).toBeCloseTo(k.B4 * sBar, 14);
    expect(s.lcl).toBe(0);
    const big = fixture(20, 10, 3);
    const k10 = controlConstants(10);
    const s10 = subgroupPointLimits(subgroupLimits(big, 'S'), 10);
    expect(s10.lcl).toBeCloseTo(k10.B3 * s10.center, 14);
  });

  it('the weighted estimators equal the unweighted ones; RMSDF is the pooled sd over c4', () => {
    expect(estimateSubgroupSigma(stats, 'MVLUE-R')).toBeCloseTo(estimateSubgroupSigma(stats, 'UWAVE-R'), 14);
    expect(estimateSubgroupSigma(stats, 'MVLUE-SD')).toBeCloseTo(
      estimateSubgroupSigma(stats, 'UWAVE-SD'),
      14,
    );
    const pooled = Math.sqrt(stats.reduce((a, g) => a + g.sd * g.sd, 0) / stats.length);
    expect(estimateSubgroupSigma(stats, 'RMSDF')).toBeCloseTo(pooled / c4(101), 14);
  });
});

describe('unequal subgroup sizes', () => {
  const groups = fixture(30, (i) => 2 + (i % 5), 11);

  it('limits narrow with the size; the R / S centre is the size-weighted mean, one for all sizes', () => {
    const xb = subgroupLimits(groups, 'xbar');
    const w2 = subgroupPointLimits(xb, 2);
    const w6 = subgroupPointLimits(xb, 6);
    expect(w6.ucl - w6.lcl).toBeCloseTo((w2.ucl - w2.lcl) * Math.sqrt(2 / 6), 12);
    const r = subgroupLimits(groups, 'R');
    const stats = groups.map(subgroupStatistics);
    const weighted = stats.reduce((a, g) => a + g.size * g.range, 0) / stats.reduce((a, g) => a + g.size, 0);
    expect(r.center).toBeCloseTo(weighted, 14);
    expect(subgroupPointLimits(r, 2).center).toBe(subgroupPointLimits(r, 6).center);
    expect(r.observations).toBe(stats.reduce((a, g) => a + g.size, 0));
  });

  it('sizes above 25: x-bar defaults to RMSDF; R needs exact constants', () => {
    const large = fixture(4, 30, 5);
    expect(subgroupLimits(large, 'xbar').sigmaMethod).toBe('RMSDF');
    expect(() => subgroupLimits(large, 'R')).toThrow(
      'tabulated d2 needs an integer subgroup size in [2, 25], got 30',
    );
    const exact = subgroupLimits(large, 'R', { constants: 'exact' });
    expect(subgroupPointLimits(exact, 30).ucl).toBeGreaterThan(exact.center);
  });
});

describe('known parameters (standards given)', () => {
  it('R: d2 sigma, D1 sigma / D2 sigma; S: c4 sigma, B5 sigma / B6 sigma; x-bar: mu +/- 3 sigma / sqrt(n)', () => {
    const k = controlConstants(8, 'tabulated');
    const r = subgroupPointLimits(knownSubgroupLimits('R', { sigma: 2 }), 8);
    expect(r.center).toBeCloseTo(k.d2 * 2, 14);
    expect(r.lcl).toBeCloseTo(k.D1 * 2, 14);
    expect(r.ucl).toBeCloseTo(k.D2 * 2, 14);
    const s = subgroupPointLimits(knownSubgroupLimits('S', { sigma: 2 }), 8);
    expect(s.center).toBeCloseTo(k.c4 * 2, 14);
    expect(s.lcl).toBeCloseTo(k.B5 * 2, 14);
    expect(s.ucl).toBeCloseTo(k.B6 * 2, 14);
    const x = subgroupPointLimits(knownSubgroupLimits('xbar', { mean: 10, sigma: 2 }), 4);
    expect([x.lcl, x.center, x.ucl]).toEqual([7, 10, 13]);
    expect(() => knownSubgroupLimits('xbar', { sigma: 1 })).toThrow(
      'an x-bar chart needs a finite known mean',
    );
    expect(() => knownSubgroupLimits('R', { sigma: 0 })).toThrow('sigma must be > 0, got 0');
  });
});

describe('Phase II against frozen limits', () => {
  const phase1 = fixture(25, 5, 21);
  const limits = subgroupLimits(phase1, 'xbar');

  it('limits are frozen and do not move; a shifted subgroup signals above, a limit value does not', () => {
    expect(Object.isFrozen(limits)).toBe(true);
    const pl = subgroupPointLimits(limits, 5);
    const shifted = [pl.ucl + 0.01, pl.ucl + 0.02, pl.ucl + 0.03, pl.ucl, pl.ucl + 0.04];
    const onLimit = Array(5).fill(pl.lcl);
    const low = Array(3).fill(pl.lcl - 1);
    const points = evaluateSubgroups(limits, [shifted, onLimit, low, phase1[0]]);
    expect(points.map((p) => p.signal)).toEqual(['above', null, 'below', null]);
    expect(points[2].size).toBe(3);
    expect(points[2].lcl).toBeLessThan(pl.lcl); // its own, wider, limits
    expect(subgroupPointLimits(limits, 5)).toEqual(pl);
  });

  it('R and S points use the chart statistic; a subgroup of one value has no R / S limits', () => {
    const r = subgroupLimits(phase1, 'R');
    const [p] = evaluateSubgroups(r, [[0, 100, 50]]);
    expect(p.statistic).toBe(100);
    expect(p.signal).toBe('above');
    expect(() => evaluateSubgroups(r, [[1]])).toThrow('R chart subgroup size must be an integer >= 2, got 1');
    expect(evaluateSubgroups(limits, [[10]])[0].size).toBe(1);
  });
});

describe('validation', () => {
  it('refuses too few subgroups, single values, constant data and bad parameters', () => {
    expect(() => subgroupLimits([[1, 2]], 'xbar')).toThrow(InsufficientBaselineError);
    expect(() => subgroupLimits([[1, 2], [3]], 'xbar')).toThrow('subgroup 1 has 1 value; sizes must be >= 2');
    expect(() =>
      subgroupLimits(
        [
          [1, 1],
          [2, 2],
        ],
        'R',
      ),
    ).toThrow(DegenerateBaselineError);
    expect(() =>
      subgroupLimits(
        [
          [1, 2],
          [3, 4],
        ],
        'S',
        { nSigma: 0 },
      ),
    ).toThrow('nSigma must be > 0, got 0');
    expect(() => estimateSubgroupSigma([], 'UWAVE-R')).toThrow(ChartConfigError);
    expect(() => estimateSubgroupSigma([subgroupStatistics([1, 2])], 'bogus' as unknown as 'RMSDF')).toThrow(
      'unknown subgroup sigma method "bogus"',
    );
    expect(subgroupLimits([[1, 2]], 'xbar', { minGroups: 1 }).groups).toBe(1);
  });
});

describe('properties (fast-check, fixed seed)', () => {
  const charts: SubgroupChartType[] = ['xbar', 'R', 'S'];
  const data = fc.array(
    fc.array(
      fc.integer({ min: -10_000, max: 10_000 }).map((x) => x / 100),
      { minLength: 2, maxLength: 8 },
    ),
    {
      minLength: 2,
      maxLength: 12,
    },
  );

  it('x-bar limits are shift / scale equivariant; R and S scale and ignore shifts; subgroup order is irrelevant', () => {
    fc.assert(
      fc.property(
        data,
        fc.double({ min: 0.5, max: 4, noNaN: true }),
        fc.double({ min: -50, max: 50, noNaN: true }),
        (groups, a, b) => {
          for (const chart of charts) {
            let base;
            try {
              base = subgroupLimits(groups, chart);
            } catch (e) {
              if (e instanceof DegenerateBaselineError) return; // constant subgroups: no limits
              throw e;
            }
            const moved = subgroupLimits(
              groups.map((g) => g.map((x) => a * x + b)),
              chart,
            );
            const reversed = subgroupLimits([...groups].reverse(), chart);
            const tol = 1e-9 * (1 + Math.abs(base.center) + base.sigma);
            expect(Math.abs(moved.sigma - a * base.sigma)).toBeLessThan(tol * a);
            const expectedCenter = chart === 'xbar' ? a * base.center + b : a * base.center;
            expect(Math.abs(moved.center - expectedCenter)).toBeLessThan(tol * (a + Math.abs(b)));
            expect(Math.abs(reversed.center - base.center)).toBeLessThan(tol);
            expect(Math.abs(reversed.sigma - base.sigma)).toBeLessThan(tol);
          }
        },
      ),
      { seed: 20240612, numRuns: 200 },
    );
  });
});
