import fc from 'fast-check';
import { computeBaseStatistics, computeShapeStatistics, MOVING_AVERAGE_SECONDS, type ShapeStatistics } from './statistics';
import type { SampleTiming } from './trace';

const regular = (frequencyHz: number): SampleTiming => ({ kind: 'regular', startSeconds: 0, frequencyHz });

/** Straight from the definitions: every window of `w` consecutive valid samples, every valid adjacent pair. */
function reference(values: ArrayLike<number>, w: number) {
  let sad = 0;
  let pairs = 0;
  for (let i = 0; i + 1 < values.length; i++) {
    if (Number.isFinite(values[i]) && Number.isFinite(values[i + 1])) {
      sad += Math.abs(values[i + 1] - values[i]);
      pairs++;
    }
  }
  let maMax = -Infinity;
  let maMin = Infinity;
  for (let j = 0; j + w <= values.length; j++) {
    let sum = 0;
    let ok = true;
    for (let i = j; i < j + w; i++) {
      if (!Number.isFinite(values[i])) ok = false;
      sum += values[i];
    }
    if (!ok) continue;
    maMax = Math.max(maMax, sum / w);
    maMin = Math.min(maMin, sum / w);
  }
  return {
    noise: pairs > 0 ? ((Math.sqrt(Math.PI) / 2) * sad) / pairs : NaN,
    maMax: maMax === -Infinity ? NaN : maMax,
    maMin: maMin === Infinity ? NaN : maMin,
  };
}

describe('computeShapeStatistics', () => {
  const halfRootPi = Math.sqrt(Math.PI) / 2;

  it('computes noise and the moving-average extremes of a small trace (hand-computed)', () => {
    // 1 Hz: 5 samples per average, means 17/5 and 21/5. Differences 1, 2, 3, -4, 2: sum |d| 12 over 5.
    const s = computeShapeStatistics(Float64Array.of(1, 2, 4, 7, 3, 5), regular(1));
    expect(s.maSamples).toBe(5);
    expect(s.noise).toBeCloseTo(halfRootPi * 2.4, 14);
    expect(s.maMax).toBeCloseTo(4.2, 14);
    expect(s.maMin).toBeCloseTo(3.4, 14);
  });

  it('estimates the sd of Gaussian noise', () => {
    // Box-Muller on a seeded LCG (Numerical Recipes constants): Gaussian noise of sd 3 on a level of 100.
    let state = 12345;
    const u = Array.from({ length: 40_000 }, () => ((state = (Math.imul(state, 1664525) + 1013904223) >>> 0) + 0.5) / 2 ** 32);
    const z = Float64Array.from({ length: 20_000 }, (_, i) => 100 + 3 * Math.sqrt(-2 * Math.log(u[2 * i] as number)) * Math.cos(2 * Math.PI * (u[2 * i + 1] as number)));
    expect(computeShapeStatistics(z, regular(1)).noise).toBeCloseTo(3, 1);
  });

  it('sizes the moving average in seconds: round(5 s x rate), at least one sample', () => {
    expect(MOVING_AVERAGE_SECONDS).toBe(5);
    const v = new Float64Array(24);
    v[10] = 20;
    const at = (f: number) => computeShapeStatistics(v, regular(f));
    expect([at(1).maSamples, at(1).maMax, at(1).maMin]).toEqual([5, 4, 0]);
    expect([at(2).maSamples, at(2).maMax]).toEqual([10, 2]);
    expect([at(0.4).maSamples, at(0.4).maMax]).toEqual([2, 10]);
    expect([at(0.05).maSamples, at(0.05).maMax]).toEqual([1, 20]); // round(0.25) = 0: one sample, the plain max
    // 10 Hz: 50 samples, more than the window has.
    expect([at(10).maSamples, at(10).maMax, at(10).maMin]).toEqual([50, NaN, NaN]);
  });

  it('uses the mean rate of explicit times', () => {
    // 6 samples over 5 s: 1 sample per second, 5 per average.
    const s = computeShapeStatistics(Float64Array.of(5, 0, 0, 0, 0, 10), {
      kind: 'explicit',
      timesSeconds: Float64Array.of(0, 1, 2, 3, 4.5, 5),
    });
    expect([s.maSamples, s.maMax, s.maMin]).toEqual([5, 2, 1]);
    const still = computeShapeStatistics(Float64Array.of(4, 6), { kind: 'explicit', timesSeconds: Float64Array.of(7, 7) });
    expect([still.maSamples, still.maMax, still.maMin, still.noise]).toEqual([1, 6, 4, 2 * halfRootPi]);
  });

  it('lets no difference or average span a missing sample', () => {
    // 0.6 Hz: 3 samples per average. The only 3 consecutive valid samples: [4, 5, 6]; pairs (1,2), (4,5), (5,6).
    const s = computeShapeStatistics(Float64Array.of(1, 2, NaN, 4, 5, 6, Infinity, 10), regular(0.6));
    expect([s.maSamples, s.maMax, s.maMin]).toEqual([3, 5, 5]);
    expect(s.noise).toBeCloseTo(halfRootPi, 14);
    // Averages [4, 5, 6] and [5, 6, 10]; pairs (1,2), (4,5), (5,6), (6,10): sum |d| 7 over 4.
    const t = computeShapeStatistics(Float64Array.of(1, 2, NaN, 4, 5, 6, 10), regular(0.6));
    expect([t.maMax, t.maMin]).toEqual([7, 5]);
    expect(t.noise).toBeCloseTo(halfRootPi * 1.75, 14);
    const none = computeShapeStatistics(Float64Array.of(1, NaN, 2, NaN, 3), regular(0.6));
    expect([none.noise, none.maMax, none.maMin]).toEqual([NaN, NaN, NaN]);
  });

  it('honours a sub-range and fills a caller-supplied record', () => {
    const v = Float64Array.of(100, 1, 3, 2, -100);
    const out = computeShapeStatistics(Float64Array.of(9, 9, 9), regular(1));
    const s = computeShapeStatistics(v, regular(0.6), { start: 1, end: 4 }, out);
    expect(s).toBe(out);
    expect(s).toEqual<ShapeStatistics>({ noise: halfRootPi * 1.5, maSamples: 3, maMax: 2, maMin: 2 });
  });

  it('reads the noise without the profile: a ramp and a settling transient leave it where std is not', () => {
    // Alternating +-1 on a level, on a ramp, and after a decaying step: |differences| average 2.
    const n = 201;
    const noise = (i: number) => (i % 2 === 0 ? 1 : -1);
    const level = Float64Array.from({ length: n }, (_, i) => 50 + noise(i));
    const ramp = Float64Array.from({ length: n }, (_, i) => 50 + 0.05 * i + noise(i));
    const settle = Float64Array.from({ length: n }, (_, i) => 50 + 40 * Math.exp(-i / 10) + noise(i));
    const at = (v: Float64Array) => [computeShapeStatistics(v, regular(1)).noise, computeBaseStatistics(v, regular(1)).std];
    const [nLevel, sLevel] = at(level);
    expect(nLevel).toBeCloseTo(2 * halfRootPi, 12);
    expect(sLevel).toBeCloseTo(1, 2);
    const [nRamp, sRamp] = at(ramp);
    expect(nRamp).toBeCloseTo(nLevel, 10); // |2 + 0.05| and |-2 + 0.05| average 2
    expect(sRamp).toBeGreaterThan(2.5);
    const [nSettle, sSettle] = at(settle);
    expect(Math.abs(nSettle - nLevel) / nLevel).toBeLessThan(0.05);
    expect(sSettle).toBeGreaterThan(2.5);
  });

  it('moves the moving-average maximum by a pulse`s full height and averages the noise down', () => {
    const base = Float64Array.from({ length: 30 }, (_, i) => (i % 2 === 0 ? 0.5 : -0.5));
    const pulsed = base.map((x, i) => (i >= 10 && i < 15 ? x + 2 : x));
    const a = computeShapeStatistics(base, regular(1));
    const b = computeShapeStatistics(pulsed, regular(1));
    expect(a.maMax).toBeCloseTo(0.1, 12); // +-0.5 averaged over 5 samples
    expect(b.maMax - a.maMax).toBeCloseTo(2, 12);
  });
});

describe('shape statistics: properties (fast-check, fixed seeds)', () => {
  const sample = fc.oneof(
    { weight: 9, arbitrary: fc.double({ min: -1e6, max: 1e6, noNaN: true, noDefaultInfinity: true }) },
    { weight: 1, arbitrary: fc.constantFrom(NaN, Infinity, -Infinity) },
  );
  const traces = fc.array(sample, { minLength: 0, maxLength: 200 });
  const rates = fc.constantFrom(0.2, 0.5, 1, 2, 5, 10);
  const scaleOf = (a: number[]) => a.filter(Number.isFinite).reduce((m, x) => Math.max(m, Math.abs(x)), 0);
  const same = (a: number, b: number, scale: number) =>
    (Number.isNaN(a) && Number.isNaN(b)) || Math.abs(a - b) <= 1e-9 * (1 + scale);

  it('equals the definitions computed window by window', () => {
    fc.assert(
      fc.property(traces, rates, (values, f) => {
        const s = computeShapeStatistics(Float64Array.from(values), regular(f));
        expect(s.maSamples).toBe(Math.max(1, Math.round(MOVING_AVERAGE_SECONDS * f)));
        const r = reference(values, s.maSamples);
        const sc = scaleOf(values);
        expect(same(s.noise, r.noise, sc)).toBe(true);
        expect(same(s.maMax, r.maMax, sc)).toBe(true);
        expect(same(s.maMin, r.maMin, sc)).toBe(true);
      }),
      { seed: 20261201, numRuns: 400 },
    );
  });

  it('min <= ma_min <= ma_max <= max, and time reversal changes nothing', () => {
    fc.assert(
      fc.property(traces, rates, (values, f) => {
        const x = Float64Array.from(values);
        const s = computeShapeStatistics(x, regular(f));
        const b = computeBaseStatistics(x, regular(f));
        const sc = scaleOf(values);
        if (!Number.isNaN(s.maMax)) {
          expect(s.maMin).toBeGreaterThanOrEqual(b.min - 1e-9 * (1 + sc));
          expect(s.maMax).toBeGreaterThanOrEqual(s.maMin - 1e-9 * (1 + sc));
          expect(s.maMax).toBeLessThanOrEqual(b.max + 1e-9 * (1 + sc));
        }
        const r = computeShapeStatistics(x.slice().reverse(), regular(f));
        expect(same(r.noise, s.noise, sc) && same(r.maMax, s.maMax, sc) && same(r.maMin, s.maMin, sc)).toBe(true);
      }),
      { seed: 777001, numRuns: 300 },
    );
  });

  it('x + c moves the moving-average extremes by c and leaves noise; k x scales them (extremes swap for k < 0)', () => {
    fc.assert(
      fc.property(
        traces,
        rates,
        fc.double({ min: -1e3, max: 1e3, noNaN: true }).filter((k) => Math.abs(k) > 1e-3),
        fc.double({ min: -1e6, max: 1e6, noNaN: true }),
        (values, f, k, c) => {
          const x = Float64Array.from(values);
          const s = computeShapeStatistics(x, regular(f));
          const shifted = computeShapeStatistics(x.map((v) => v + c), regular(f));
          const sc = scaleOf(values) + Math.abs(c);
          expect(same(shifted.maMax, s.maMax + c, sc) && same(shifted.maMin, s.maMin + c, sc)).toBe(true);
          expect(same(shifted.noise, s.noise, sc)).toBe(true);
          const scaled = computeShapeStatistics(x.map((v) => v * k), regular(f));
          const ks = scaleOf(values) * Math.abs(k);
          expect(same(scaled.noise, Math.abs(k) * s.noise, ks)).toBe(true);
          if (k > 0) expect(same(scaled.maMax, k * s.maMax, ks) && same(scaled.maMin, k * s.maMin, ks)).toBe(true);
          else expect(same(scaled.maMax, k * s.maMin, ks) && same(scaled.maMin, k * s.maMax, ks)).toBe(true);
        },
      ),
      { seed: 31337, numRuns: 300 },
    );
  });
});
