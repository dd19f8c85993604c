import {
  establishBaseline,
  knownLimits,
  pointLimits,
  rebaseline,
  chartedStatistic,
  type BaselineSample,
  type ChartSpec,
} from './baseline';
import { ChartConfigError, DegenerateBaselineError, InsufficientBaselineError } from './errors';

const individuals: ChartSpec = { type: 'individuals', sigmaMethod: 'moving-range', nSigma: 3 };
const at = '2024-05-01T12:00:00.000Z';
const runs = (values: number[], prefix = 'r'): BaselineSample[] =>
  values.map((value, i) => ({ runId: `${prefix}${i + 1}`, value }));

// 24 in-control values alternating around 10 (MR-bar 0.2 -> sigma 0.2 / 1.128) and one gross outlier.
const inControl = Array.from({ length: 24 }, (_, i) => 10 + (i % 2 === 0 ? 0.1 : -0.1));

describe('establishBaseline', () => {
  it('freezes centre and moving-range sigma, with version 1 and the caller timestamp', () => {
    const lim = establishBaseline(runs(inControl), individuals, { frozenAt: at });
    expect(lim.version).toBe(1);
    expect(lim.center).toBeCloseTo(10, 12);
    expect(lim.sigma).toBeCloseTo(0.2 / 1.128, 12);
    expect(lim.mrBar).toBeCloseTo(0.2, 12);
    expect(lim.frozenAt).toBe(at);
    expect(lim.reason).toBe('initial');
    expect(lim.baselineRunIds).toHaveLength(24);
    expect(Object.isFrozen(lim) && Object.isFrozen(lim.chart) && Object.isFrozen(lim.baselineRunIds)).toBe(
      true,
    );
    expect(() => {
      (lim as { center: number }).center = 0;
    }).toThrow(TypeError);
  });

  it('requires the minimum number of runs (default 20)', () => {
    expect(() => establishBaseline(runs(inControl.slice(0, 19)), individuals, { frozenAt: at })).toThrow(
      InsufficientBaselineError,
    );
    expect(() => establishBaseline(runs(inControl.slice(0, 19)), individuals, { frozenAt: at })).toThrow(
      'baseline needs at least 20 runs, has 19 (before exclusion)',
    );
    expect(
      establishBaseline(runs(inControl.slice(0, 5)), individuals, { frozenAt: at, minRuns: 5 })
        .baselineRunIds,
    ).toHaveLength(5);
  });

  it('excludes out-of-control runs iteratively and re-estimates without them', () => {
    const values = [...inControl];
    values[7] = 25;
    const lim = establishBaseline(runs(values), individuals, { frozenAt: at });
    expect(lim.excludedRunIds).toEqual(['r8']);
    expect(lim.exclusionPasses).toBe(1);
    expect(lim.baselineRunIds).not.toContain('r8');
    const without = establishBaseline(runs(values), individuals, { frozenAt: at, exclusion: false });
    expect(without.excludedRunIds).toEqual([]);
    expect(without.sigma).toBeGreaterThan(lim.sigma * 5);
  });

  it('fails when exclusion leaves fewer than minRuns runs', () => {
    const values = [...inControl.slice(0, 20)];
    values[3] = 30;
    expect(() => establishBaseline(runs(values), individuals, { frozenAt: at })).toThrow(
      /has 19 \(after excluding 1 out-of-control runs\)/,
    );
  });

  it('refuses a baseline without variation (constant values: sigma 0)', () => {
    expect(() => establishBaseline(runs(Array(20).fill(7)), individuals, { frozenAt: at })).toThrow(
      DegenerateBaselineError,
    );
    expect(() => establishBaseline(runs(Array(20).fill(7)), individuals, { frozenAt: at })).toThrow(
      'baseline has no variation: moving-range sigma of 20 runs is 0 (centre 7)',
    );
  });

  it('rejects invalid chart parameters and sizes', () => {
    expect(() =>
      establishBaseline(
        runs(inControl),
        { type: 'ewma', lambda: 1.5, L: 3, sigmaMethod: 'moving-range' },
        { frozenAt: at },
      ),
    ).toThrow(ChartConfigError);
    expect(() =>
      establishBaseline(
        runs(inControl),
        { type: 'cusum', k: 0.5, h: 4, headStart: 4, resetOnSignal: false, sigmaMethod: 'moving-range' },
        { frozenAt: at },
      ),
    ).toThrow('CUSUM headStart must be in [0, h), got 4');
    expect(() => establishBaseline(runs(inControl), { type: 'p', nSigma: 3 }, { frozenAt: at })).toThrow(
      /size must be finite and > 0/,
    );
    expect(() =>
      establishBaseline(runs(inControl), individuals, { frozenAt: at, exclusion: { maxPasses: 0 } }),
    ).toThrow(ChartConfigError);
  });
});

describe('rebaseline and known limits', () => {
  it('re-baselines on demand with version + 1, leaving the previous limits untouched', () => {
    const v1 = establishBaseline(runs(inControl), individuals, { frozenAt: at });
    const shifted = inControl.map((x) => x + 5);
    const v2 = rebaseline(v1, runs(shifted, 'm'), {
      frozenAt: '2024-06-01T00:00:00.000Z',
      reason: 'maintenance',
    });
    expect(v2.version).toBe(2);
    expect(v2.reason).toBe('maintenance');
    expect(v2.center).toBeCloseTo(15, 12);
    expect(v1.center).toBeCloseTo(10, 12);
    const v3 = rebaseline(v2, runs(shifted, 'n'), {
      frozenAt: at,
      chart: { type: 'ewma', lambda: 0.2, L: 3, sigmaMethod: 'moving-range' },
    });
    expect([v3.version, v3.chart.type, v3.reason]).toEqual([3, 'ewma', 'manual']);
  });

  it('accepts known parameters (no baseline)', () => {
    const lim = knownLimits(individuals, 0, 1, { frozenAt: at });
    expect(pointLimits(lim)).toEqual({ center: 0, sigma: 1, nSigma: 3, lcl: -3, ucl: 3 });
    expect(lim.reason).toBe('known-parameters');
    expect(() => knownLimits(individuals, 0, 0, { frozenAt: at })).toThrow('sigma must be > 0, got 0');
    const u = knownLimits({ type: 'u', nSigma: 3 }, 2, NaN, { frozenAt: at });
    expect(pointLimits(u, 8)).toMatchObject({ center: 2, sigma: 0.5, lcl: 0.5, ucl: 3.5 });
    expect(chartedStatistic(u.chart, 6, 8)).toBe(0.75);
  });
});
