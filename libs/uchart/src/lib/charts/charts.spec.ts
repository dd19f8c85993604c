import { ChartConfigError } from '../errors';
import { attributeLimits, attributeRate, attributeStatistic } from './attribute';
import { cusumCarry, cusumInitial, cusumNext, cusumSeries } from './cusum';
import { ewmaAsymptoticLimits, ewmaHalfWidth, ewmaSeries } from './ewma';
import { estimateSigma, individualsLimits } from './individuals';
import { c4 } from '../constants';

describe('individuals', () => {
  it('needs two finite values and a positive nSigma', () => {
    expect(() => individualsLimits([1])).toThrow('sigma estimation needs at least 2 values, got 1');
    expect(() => individualsLimits([1, NaN])).toThrow(ChartConfigError);
    expect(() => individualsLimits([1, 2], { nSigma: 0 })).toThrow('nSigma must be > 0, got 0');
  });

  it('c4 matches its closed form for small n', () => {
    expect(c4(2)).toBeCloseTo(Math.sqrt(2 / Math.PI), 14);
    expect(c4(3)).toBeCloseTo(Math.sqrt(Math.PI) / 2, 14);
    expect(c4(1)).toBeNaN();
    const x = [1, 2, 4, 8];
    expect(estimateSigma(x, 'sample-sd-unbiased').sigma).toBeCloseTo(
      estimateSigma(x, 'sample-sd').sigma / c4(4),
      14,
    );
  });
});

describe('EWMA', () => {
  const p = { lambda: 0.2, L: 3, center: 0, sigma: 1 };

  it('exact limits start at L sigma lambda and widen to the asymptote', () => {
    expect(ewmaHalfWidth(p, 1)).toBeCloseTo(3 * 0.2, 14);
    const asym = ewmaAsymptoticLimits(p);
    let prev = 0;
    for (let i = 1; i <= 60; i++) {
      const hw = ewmaHalfWidth(p, i);
      expect(hw).toBeGreaterThan(prev);
      expect(hw).toBeLessThan(asym.ucl);
      prev = hw;
    }
    expect(asym.ucl - ewmaHalfWidth(p, 60)).toBeLessThan(1e-9);
  });

  it('lambda = 1 is a Shewhart chart; signals are strict', () => {
    const s = ewmaSeries([3, 3.0000001, -2], { ...p, lambda: 1 });
    expect(Array.from(s.z)).toEqual([3, 3.0000001, -2]);
    expect(s.signals).toEqual([1]);
  });

  it('rejects parameters out of their domain', () => {
    expect(() => ewmaSeries([1], { ...p, lambda: 0 })).toThrow('EWMA lambda must be in (0, 1], got 0');
    expect(() => ewmaSeries([1], { ...p, sigma: -1 })).toThrow(ChartConfigError);
    expect(() => ewmaSeries([NaN], p)).toThrow('value 0 is not finite (NaN)');
  });
});

describe('CUSUM', () => {
  const p = { target: 10, sigma: 2, k: 0.5, h: 4 };

  it('a head start (FIR) makes an early shift signal sooner', () => {
    const shifted = [13, 13, 13, 13, 13];
    const plain = cusumSeries(shifted, p);
    const fir = cusumSeries(shifted, { ...p, headStart: 2 });
    expect(fir.upper[0]).toBeCloseTo(2 + 1.5 - 0.5, 14);
    expect(plain.signalsUpper[0]).toBe(4);
    expect(fir.signalsUpper[0]).toBe(2);
    expect(cusumInitial({ ...p, headStart: 2 })).toEqual({ upper: 2, lower: 2, upperRun: 0, lowerRun: 0 });
  });

  it('counts the run since the sum left zero and can reset after a signal', () => {
    let s = cusumInitial(p);
    const steps = [14, 14, 14, 14].map((x) => {
      const step = cusumNext(s, x, { ...p, resetOnSignal: true });
      s = cusumCarry(step, { ...p, resetOnSignal: true });
      return step;
    });
    expect(steps.map((st) => st.upperRun)).toEqual([1, 2, 3, 1]);
    expect(steps.map((st) => st.signalUpper)).toEqual([false, false, true, false]);
  });

  it('rejects parameters out of their domain', () => {
    expect(() => cusumSeries([1], { ...p, h: 0 })).toThrow('CUSUM h must be > 0, got 0');
    expect(() => cusumSeries([1], { ...p, headStart: -1 })).toThrow(ChartConfigError);
  });
});

describe('attribute charts', () => {
  it('u chart limits vary with exposure (variable n)', () => {
    // u-bar = 153 / 107.5 (qcc dyedcloth counts and rolls of 50 m2): limits per roll size.
    const counts = [14, 12, 20, 11, 7, 10, 21, 16, 19, 23];
    const sizes = [10, 8, 13, 10, 9.5, 10, 12, 10.5, 12, 12.5];
    const ubar = attributeRate(
      'u',
      counts.map((count, i) => ({ count, size: sizes[i] })),
    );
    expect(ubar).toBeCloseTo(153 / 107.5, 14);
    for (const n of sizes) {
      const l = attributeLimits('u', ubar, n);
      expect(l.ucl).toBeCloseTo(ubar + 3 * Math.sqrt(ubar / n), 14);
      expect(l.lcl).toBeCloseTo(Math.max(0, ubar - 3 * Math.sqrt(ubar / n)), 14);
    }
    expect(attributeLimits('u', ubar, 8).ucl).toBeGreaterThan(attributeLimits('u', ubar, 13).ucl);
  });

  it('validates counts, sizes and rates', () => {
    expect(() => attributeStatistic('p', { count: 6, size: 5 })).toThrow(
      'p chart sample 0: count 6 exceeds size 5',
    );
    expect(() => attributeStatistic('u', { count: 1 })).toThrow(/size must be finite and > 0/);
    expect(() => attributeRate('c', [])).toThrow('c chart needs at least one sample');
    expect(() => attributeLimits('p', 1.2, 10)).toThrow('p chart rate out of range: 1.2');
    expect(attributeStatistic('c', { count: 4 })).toBe(4);
    expect(attributeLimits('np', 0.5, 4)).toMatchObject({ center: 2, lcl: 0, ucl: 4 });
  });
});
