import fc from 'fast-check';
import { ChartConfigError } from '../errors';
import { processCapability } from './capability';
import { estimateSigma } from './individuals';

const values = [9.8, 10.1, 10.0, 9.9, 10.2, 10.05, 9.95, 10.0, 10.1, 9.9];

describe('process capability', () => {
  it('a centred process: Cp = Cpl = Cpu = Cpk, Cpm = Cp at the target; P indices use the overall sd', () => {
    const c = processCapability(values, { lsl: 9.4, usl: 10.6 }, { sigmaWithin: 0.1, center: 10 });
    expect(c.cp!.value).toBeCloseTo(2, 14);
    expect(c.cpl!.value).toBeCloseTo(2, 14);
    expect(c.cpu!.value).toBeCloseTo(2, 14);
    expect(c.cpk.value).toBeCloseTo(2, 14);
    expect(c.cpm!.value).toBeCloseTo(2, 14);
    expect(c.target).toBe(10);
    expect(c.pp!.value).toBeCloseTo(1.2 / (6 * c.sigmaOverall), 14);
    for (const idx of [c.cp!, c.cpk, c.cpm!, c.pp!, c.ppk]) {
      expect(idx.lower).toBeLessThan(idx.value);
      expect(idx.upper).toBeGreaterThan(idx.value);
    }
  });

  it('Cpk is the nearer spec limit; a wider confidence level widens every interval', () => {
    const c95 = processCapability(values, { lsl: 9.5, usl: 10.8 }, { sigmaWithin: 0.12 });
    expect(c95.cpk.value).toBe(Math.min(c95.cpl!.value, c95.cpu!.value));
    expect(c95.cpk.value).toBe(c95.cpl!.value);
    const c99 = processCapability(
      values,
      { lsl: 9.5, usl: 10.8 },
      { sigmaWithin: 0.12, confidenceLevel: 0.99 },
    );
    expect(c99.cp!.lower).toBeLessThan(c95.cp!.lower);
    expect(c99.cpk.upper).toBeGreaterThan(c95.cpk.upper);
  });

  it('one spec limit: one-sided indices only, no Cp / Cpm / target', () => {
    const upper = processCapability(values, { usl: 10.6 }, { sigmaWithin: 0.1 });
    expect(upper.cp).toBeUndefined();
    expect(upper.cpl).toBeUndefined();
    expect(upper.cpm).toBeUndefined();
    expect(upper.target).toBeUndefined();
    expect(upper.cpk.value).toBe(upper.cpu!.value);
    expect(upper.ppk.value).toBe(upper.ppu!.value);
    expect(upper.expectedBelowLsl).toBeUndefined();
    expect(upper.observedAboveUsl).toBe(0);
    const lower = processCapability(values, { lsl: 9.85 }, { sigmaWithin: 0.1 });
    expect(lower.cpk.value).toBe(lower.cpl!.value);
    expect(lower.observedBelowLsl).toBeCloseTo(0.1, 14); // 9.8 only (9.85 is the limit, not beyond)
  });

  it('within sigma from an individuals chart (MR-bar / 1.128)', () => {
    const est = estimateSigma(values, 'moving-range');
    const c = processCapability(values, { lsl: 9.4, usl: 10.6 }, { sigmaWithin: est.sigma });
    expect(c.cp!.value).toBeCloseTo(1.2 / (6 * (est.mrBar! / 1.128)), 12);
  });

  it('validation', () => {
    const o = { sigmaWithin: 0.1 };
    expect(() => processCapability([1], { usl: 2 }, o)).toThrow('capability needs at least 2 values, got 1');
    expect(() => processCapability(values, {}, o)).toThrow('capability needs a finite LSL or USL');
    expect(() => processCapability(values, { lsl: NaN }, o)).toThrow(ChartConfigError);
    expect(() => processCapability(values, { lsl: 11, usl: 10 }, o)).toThrow(
      'LSL must be below USL, got 11 >= 10',
    );
    expect(() => processCapability(values, { usl: 11 }, { sigmaWithin: 0 })).toThrow(
      'sigmaWithin must be > 0, got 0',
    );
    expect(() => processCapability([3, 3, 3], { usl: 11 }, o)).toThrow('overall sd 0');
    expect(() => processCapability(values, { usl: 11 }, { ...o, confidenceLevel: 1 })).toThrow(
      'confidenceLevel must be in (0, 1), got 1',
    );
    expect(() => processCapability([1, NaN], { usl: 11 }, o)).toThrow('value 1 is not finite (NaN)');
  });

  it('indices are invariant when data, spec limits and sigma are shifted and scaled together (fast-check)', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.integer({ min: -1000, max: 1000 }).map((x) => x / 100),
          { minLength: 3, maxLength: 30 },
        ),
        fc.double({ min: 0.1, max: 10, noNaN: true }),
        fc.double({ min: -100, max: 100, noNaN: true }),
        (xs, a, b) => {
          if (new Set(xs).size < 2) return;
          const spec = { lsl: -15, usl: 12, target: -1 };
          const base = processCapability(xs, spec, { sigmaWithin: 2 });
          const t = (x: number) => a * x + b;
          const moved = processCapability(
            xs.map(t),
            { lsl: t(spec.lsl), usl: t(spec.usl), target: t(spec.target) },
            { sigmaWithin: 2 * a },
          );
          for (const k of ['cp', 'cpk', 'cpm', 'pp', 'ppk', 'ppm'] as const) {
            expect(moved[k]!.value).toBeCloseTo(base[k]!.value, 6);
            expect(moved[k]!.lower).toBeCloseTo(base[k]!.lower, 6);
          }
        },
      ),
      { seed: 20240613, numRuns: 100 },
    );
  });
});
