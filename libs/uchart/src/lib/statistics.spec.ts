import fc from 'fast-check';
import { computePercentiles, constantPercentiles, SelectionScratch } from './selection';
import { computeBaseStatistics, computeConstantShape, computeConstantStatistics, computeShapeStatistics, type BaseStatistics, type ShapeStatistics } from './statistics';
import type { SampleTiming } from './trace';

const regular = (frequencyHz: number, startSeconds = 0): SampleTiming => ({
  kind: 'regular',
  startSeconds,
  frequencyHz,
});

/** Two-pass reference over the valid samples (the textbook-accurate way, with an extra pass). */
function reference(values: ArrayLike<number>, times: ArrayLike<number>) {
  const xs: number[] = [];
  const ts: number[] = [];
  for (let i = 0; i < values.length; i++) {
    if (Number.isFinite(values[i])) {
      xs.push(values[i]);
      ts.push(times[i]);
    }
  }
  const n = xs.length;
  const mean = xs.reduce((a, b) => a + b, 0) / n;
  const tm = ts.reduce((a, b) => a + b, 0) / n;
  let ss = 0;
  let sxy = 0;
  let sxx = 0;
  let integral = 0;
  for (let i = 0; i < n; i++) {
    ss += (xs[i] - mean) ** 2;
    sxy += (ts[i] - tm) * (xs[i] - mean);
    sxx += (ts[i] - tm) ** 2;
    if (i > 0) integral += ((xs[i] + xs[i - 1]) / 2) * (ts[i] - ts[i - 1]);
  }
  return { n, mean, std: Math.sqrt(ss / (n - 1)), slope: sxy / sxx, integral };
}

/** Standard normal deviates from a seeded LCG + Box-Muller (deterministic fixture data). */
function normals(n: number, seed: number): Float64Array {
  let s = seed >>> 0;
  const u = () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return (s + 0.5) / 4294967296;
  };
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) out[i] = Math.sqrt(-2 * Math.log(u())) * Math.cos(2 * Math.PI * u());
  return out;
}

describe('computeBaseStatistics', () => {
  it('computes every base statistic of a small regular trace (hand-computed)', () => {
    const s = computeBaseStatistics(Float64Array.of(1, 2, 4, 7), regular(2, 10));
    expect(s).toEqual<BaseStatistics>({
      n: 4,
      nMissing: 0,
      mean: 3.5,
      std: Math.sqrt(7),
      min: 1,
      max: 7,
      range: 6,
      first: 1,
      last: 7,
      slopePerSecond: 4, // 2 per sample at 2 Hz
      integral: 5, // 0.5 s x (1.5 + 3 + 5.5)
      durationSeconds: 1.5,
    });
  });

  it('excludes NaN and Inf, counts them, and bridges a gap in the integral', () => {
    const s = computeBaseStatistics(Float64Array.of(NaN, 1, NaN, -Infinity, 4, Infinity), regular(1));
    expect(s.n).toBe(2);
    expect(s.nMissing).toBe(4);
    expect(s.mean).toBe(2.5);
    expect(s.first).toBe(1);
    expect(s.last).toBe(4);
    expect(s.slopePerSecond).toBeCloseTo(1, 12); // (4 - 1) / 3 s
    expect(s.integral).toBeCloseTo(7.5, 12); // (1 + 4) / 2 x 3 s
    expect(s.durationSeconds).toBe(5); // the window's span, missing samples included
  });

  it('returns NaN statistics (and the counts) when no sample is valid', () => {
    const s = computeBaseStatistics(Float64Array.of(NaN, NaN, Infinity), regular(10));
    expect(s.n).toBe(0);
    expect(s.nMissing).toBe(3);
    for (const k of [
      'mean',
      'std',
      'min',
      'max',
      'range',
      'first',
      'last',
      'slopePerSecond',
      'integral',
    ] as const) {
      expect(s[k]).toBeNaN();
    }
    expect(s.durationSeconds).toBeCloseTo(0.2, 12);
  });

  it('leaves std and slope undefined for a single valid sample, integral 0', () => {
    const s = computeBaseStatistics(Float64Array.of(NaN, 3, NaN), regular(1));
    expect(s.n).toBe(1);
    expect(s.std).toBeNaN();
    expect(s.slopePerSecond).toBeNaN();
    expect(s.integral).toBe(0);
    expect(s.mean).toBe(3);
  });

  it('honours a sub-range and treats an empty range as no samples', () => {
    const v = Float64Array.of(100, 1, 2, 3, 100);
    const s = computeBaseStatistics(v, regular(1), { start: 1, end: 4 });
    expect([s.n, s.mean, s.min, s.max]).toEqual([3, 2, 1, 3]);
    const e = computeBaseStatistics(v, regular(1), { start: 3, end: 3 });
    expect(e.n).toBe(0);
    expect(e.durationSeconds).toBeNaN();
  });

  it('gives the right std at offset 1e6 with sd 1e-3, where the naive sum of squares fails', () => {
    const z = normals(100_000, 7);
    const v = new Float64Array(z.length);
    for (let i = 0; i < z.length; i++) v[i] = 1e6 + 1e-3 * z[i];
    const times = Array.from({ length: v.length }, (_, i) => i / 10);
    const ref = reference(v, times);
    const s = computeBaseStatistics(v, regular(10));
    expect(Math.abs(s.std - ref.std) / ref.std).toBeLessThan(1e-9);
    expect(Math.abs(s.mean - ref.mean)).toBeLessThan(1e-12 * 1e6);
    expect(s.std).toBeGreaterThan(0.98e-3);
    expect(s.std).toBeLessThan(1.02e-3);
    // The naive formula on the same data is wrong by orders of magnitude: the test has teeth.
    let sum = 0;
    let sumSq = 0;
    for (const x of v) {
      sum += x;
      sumSq += x * x;
    }
    const naive = Math.sqrt(Math.max(0, (sumSq - (sum * sum) / v.length) / (v.length - 1)));
    expect(Math.abs(naive - ref.std) / ref.std).toBeGreaterThan(1e-2);
  });

  it('matches a two-pass reference on a trace with a trend, noise and gaps (regular and explicit times)', () => {
    const z = normals(5000, 11);
    const v = new Float64Array(z.length);
    for (let i = 0; i < v.length; i++)
      v[i] = i % 97 === 5 || (i > 2000 && i < 2010) ? NaN : 250 + 0.01 * i + z[i];
    const f = 10;
    const times = Float64Array.from({ length: v.length }, (_, i) => 100 + i / f);
    const ref = reference(v, times);
    for (const timing of [regular(f, 100), { kind: 'explicit', timesSeconds: times } as SampleTiming]) {
      const s = computeBaseStatistics(v, timing);
      expect(s.n).toBe(ref.n);
      expect(s.nMissing).toBe(v.length - ref.n);
      expect(s.mean).toBeCloseTo(ref.mean, 10);
      expect(s.std).toBeCloseTo(ref.std, 10);
      expect(s.slopePerSecond).toBeCloseTo(ref.slope, 10);
      expect(Math.abs(s.integral - ref.integral) / Math.abs(ref.integral)).toBeLessThan(1e-12);
    }
  });

  it('handles irregular explicit times (hand-computed trapezoid and slope)', () => {
    const s = computeBaseStatistics(Float64Array.of(0, 2, 2, 8), {
      kind: 'explicit',
      timesSeconds: Float64Array.of(0, 1, 3, 4),
    });
    expect(s.integral).toBeCloseTo(1 + 4 + 5, 12);
    // Least squares: t mean 2, x mean 3; sxy = (-2)(-3) + (-1)(-1) + (1)(-1) + (2)(5) = 16; sxx = 10.
    expect(s.slopePerSecond).toBeCloseTo(1.6, 12);
    expect(s.durationSeconds).toBe(4);
  });

  it('reads Float32Array samples in place', () => {
    const s = computeBaseStatistics(Float32Array.of(1.5, 2.5, NaN, 3.5), regular(1));
    expect([s.n, s.nMissing, s.mean, s.min, s.max]).toEqual([3, 1, 2.5, 1.5, 3.5]);
  });

  it('fills a caller-supplied record instead of allocating', () => {
    const out = computeBaseStatistics(Float64Array.of(1), regular(1));
    const again = computeBaseStatistics(Float64Array.of(5, 6), regular(1), undefined, out);
    expect(again).toBe(out);
    expect(out.mean).toBe(5.5);
  });
});

describe('properties (fast-check, fixed seeds)', () => {
  // Magnitudes below 1e-100 are flushed to 0: their squares would underflow to subnormals, a
  // floating-point artefact rather than a property of the algorithm (no sensor reports 1e-165).
  const sample = fc.oneof(
    {
      weight: 9,
      arbitrary: fc
        .double({ min: -1e6, max: 1e6, noNaN: true, noDefaultInfinity: true })
        .map((x) => (Math.abs(x) < 1e-100 ? 0 : x)),
    },
    { weight: 1, arbitrary: fc.constantFrom(NaN, Infinity, -Infinity) },
  );
  const traces = fc
    .array(sample, { minLength: 2, maxLength: 300 })
    .filter((a) => a.filter(Number.isFinite).length >= 2);
  const scratch = new SelectionScratch();

  function all(values: Float64Array) {
    const s = computeBaseStatistics(values, regular(4, 3));
    const p = computePercentiles(values, { start: 0, end: values.length }, scratch);
    if (!p) throw new Error('test traces have valid samples');
    return { ...s, ...p };
  }

  const close = (a: number, b: number, scale: number) => Math.abs(a - b) <= 1e-12 * (1 + scale);
  const scaleOf = (a: number[]) => a.filter(Number.isFinite).reduce((m, x) => Math.max(m, Math.abs(x)), 0);

  it('order-free statistics are invariant to the order of the samples', () => {
    fc.assert(
      fc.property(traces, fc.infiniteStream(fc.nat()), (values, keys) => {
        const it = keys[Symbol.iterator]();
        const perm = values
          .map((v) => ({ v, k: it.next().value as number }))
          .sort((a, b) => a.k - b.k)
          .map((e) => e.v);
        const a = all(Float64Array.from(values));
        const b = all(Float64Array.from(perm));
        const sc = scaleOf(values);
        expect([a.n, a.nMissing, a.min, a.max, a.range, a.median, a.p05, a.p95]).toEqual([
          b.n,
          b.nMissing,
          b.min,
          b.max,
          b.range,
          b.median,
          b.p05,
          b.p95,
        ]);
        expect(close(a.mean, b.mean, sc)).toBe(true);
        expect(close(a.std, b.std, sc)).toBe(true);
      }),
      { seed: 20240611, numRuns: 300 },
    );
  });

  it('shift equivariance: x + c moves location statistics by c, leaves spread and slope unchanged', () => {
    fc.assert(
      fc.property(traces, fc.double({ min: -1e6, max: 1e6, noNaN: true }), (values, c) => {
        const x = Float64Array.from(values);
        const y = x.map((v) => v + c);
        const a = all(x);
        const b = all(y);
        const sc = scaleOf(values) + Math.abs(c);
        for (const k of ['mean', 'min', 'max', 'first', 'last', 'median', 'p05', 'p95'] as const) {
          expect(close(b[k], a[k] + c, sc)).toBe(true);
        }
        expect(close(b.std, a.std, sc)).toBe(true);
        expect(close(b.range, a.range, sc)).toBe(true);
        // slope per second is over 4 Hz samples; integral gains c x (time from first to last valid).
        expect(close(b.slopePerSecond, a.slopePerSecond, sc * 4)).toBe(true);
        const first = values.findIndex(Number.isFinite);
        const last = values.length - 1 - [...values].reverse().findIndex(Number.isFinite);
        expect(close(b.integral, a.integral + (c * (last - first)) / 4, sc * values.length)).toBe(true);
      }),
      { seed: 424242, numRuns: 300 },
    );
  });

  it('scale equivariance: a x scales every statistic by a (|a| for spread; min/max and p05/p95 swap for a < 0)', () => {
    fc.assert(
      fc.property(
        traces,
        fc.double({ min: -1e3, max: 1e3, noNaN: true }).filter((a) => Math.abs(a) > 1e-3),
        (values, k) => {
          const x = Float64Array.from(values);
          const a = all(x);
          const b = all(x.map((v) => v * k));
          const sc = scaleOf(values) * Math.abs(k) * 1e-3 + 1e-300;
          const rel = (u: number, v: number) => Math.abs(u - v) <= 1e-9 * (Math.abs(v) + sc);
          expect(rel(b.mean, k * a.mean)).toBe(true);
          expect(rel(b.std, Math.abs(k) * a.std)).toBe(true);
          expect(rel(b.range, Math.abs(k) * a.range)).toBe(true);
          expect(rel(b.median, k * a.median)).toBe(true);
          expect(rel(b.slopePerSecond, k * a.slopePerSecond)).toBe(true);
          expect(rel(b.integral, k * a.integral)).toBe(true);
          if (k > 0) {
            expect([b.min, b.max]).toEqual([k * a.min, k * a.max]);
            expect(rel(b.p05, k * a.p05) && rel(b.p95, k * a.p95)).toBe(true);
          } else {
            expect([b.min, b.max]).toEqual([k * a.max, k * a.min]);
            expect(rel(b.p05, k * a.p95) && rel(b.p95, k * a.p05)).toBe(true);
          }
        },
      ),
      { seed: 1234567, numRuns: 300 },
    );
  });
});

describe('computeConstantStatistics, constantPercentiles, computeConstantShape', () => {
  /** A window of `n` samples equal to `k` at `start`, other values around it, sampled at `frequencyHz`. */
  const constantWindows = fc
    .record({
      k: fc.oneof(fc.constantFrom(0, -0, 1, -3.5, 1e6 + 0.25, -1e-9, 2 ** 40), fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e12, max: 1e12 })),
      n: fc.integer({ min: 2, max: 400 }),
      start: fc.integer({ min: 0, max: 3 }),
      frequencyHz: fc.constantFrom(0.2, 0.5, 1, 2, 3, 10, 50, 1000),
    })
    .map(({ k, n, start, frequencyHz }) => {
      const values = new Float64Array(start + n + 2).map((_, i) => i * 0.37);
      values.fill(k, start, start + n);
      return { k, n, values, range: { start, end: start + n }, timing: regular(frequencyHz) };
    });
  const same = <T extends object>(got: T, want: T): void => {
    for (const name of Object.keys(want) as (keyof T)[]) expect({ name, same: Object.is(got[name], want[name]) }).toEqual({ name, same: true });
  };

  it('give a constant window what the general functions give it, bit for bit', () => {
    const scratch = new SelectionScratch();
    fc.assert(
      fc.property(constantWindows, ({ k, n, values, range, timing }) => {
        same<BaseStatistics>(computeConstantStatistics(values, timing, range), computeBaseStatistics(values, timing, range));
        const pct = computePercentiles(values, range, scratch);
        expect(pct).toBeDefined();
        if (pct) same(constantPercentiles(k, n), pct);
        same<ShapeStatistics>(computeConstantShape(values, timing, range), computeShapeStatistics(values, timing, range));
      }),
      { numRuns: 1000 },
    );
  });
});
