import { ChartConfigError, DegenerateBaselineError } from '../errors';
import { controlConstants } from './control-constants';
import { individualsLimits } from './individuals';
import {
  evaluateMovingRanges,
  knownMovingRangeLimits,
  movingRangeLimits,
  movingRanges,
} from './moving-range';

describe('moving ranges', () => {
  it('span 2: |x_i - x_{i-1}|, optionally continuing from a previous value', () => {
    expect(Array.from(movingRanges([3, 5, 4, 4]))).toEqual([2, 1, 0]);
    expect(Array.from(movingRanges([3, 5], 7))).toEqual([4, 2]);
    expect(movingRanges([1])).toHaveLength(0);
    expect(() => movingRanges([1, Infinity])).toThrow('value 1 is not finite (Infinity)');
    expect(() => movingRanges([1], NaN)).toThrow(ChartConfigError);
  });
});

describe('moving-range chart', () => {
  const values = [49.6, 47.6, 49.9, 51.3, 47.8, 51.2, 52.6, 52.4, 53.6, 52.1];

  it('centre MR-bar, UCL D4 MR-bar, LCL 0; pairs with the individuals chart (sigma = MR-bar / d2)', () => {
    const mr = movingRangeLimits(values);
    const ind = individualsLimits(values);
    expect(mr.center).toBeCloseTo(ind.mrBar!, 14);
    expect(mr.lcl).toBe(0);
    // Tabulated constants (qcc): D4 = 1 + 3 x 0.8525033 / 1.128; exact: 1 + 3 d3(2) / d2(2).
    expect(mr.ucl).toBeCloseTo(mr.mrBar * (1 + (3 * 0.8525033) / 1.128), 12);
    const exact = movingRangeLimits(values, { constants: 'exact' });
    expect(exact.ucl).toBeCloseTo(exact.mrBar * controlConstants(2, 'exact').D4, 12);
    expect(Object.isFrozen(mr)).toBe(true);
  });

  it('known sigma: centre d2 sigma, UCL D2 sigma, LCL D1 sigma = 0', () => {
    const k = controlConstants(2, 'exact');
    const lim = knownMovingRangeLimits(2, { constants: 'exact' });
    expect(lim.center).toBeCloseTo(k.d2 * 2, 12);
    expect(lim.ucl).toBeCloseTo(k.D2 * 2, 12);
    expect(lim.lcl).toBe(0);
    expect(() => knownMovingRangeLimits(-1)).toThrow('sigma must be > 0, got -1');
  });

  it('Phase II: new ranges against frozen limits, the first one from the last baseline value', () => {
    const lim = movingRangeLimits(values);
    const points = evaluateMovingRanges(lim, [52.0, 52.0 + lim.ucl + 0.1, 52.0], values[values.length - 1]);
    expect(points.map((p) => p.index)).toEqual([0, 1, 2]);
    expect(points[0].movingRange).toBeCloseTo(0.1, 12);
    expect(points.map((p) => p.signal)).toEqual([null, 'above', 'above']);
    expect(evaluateMovingRanges(lim, [1, 2]).map((p) => p.index)).toEqual([1]);
  });

  it('validation', () => {
    expect(() => movingRangeLimits([1])).toThrow('a moving-range chart needs at least 2 values, got 1');
    expect(() => movingRangeLimits([2, 2, 2])).toThrow(DegenerateBaselineError);
    expect(() => movingRangeLimits([1, 2], { nSigma: -3 })).toThrow('nSigma must be > 0, got -3');
  });
});
