import fc from 'fast-check';
import { normalDeviate, seededRandom } from '@defender/hashing';
import { fewLevelStep, indicatorStep, learnLattice, sortedFinite, toleranceGcd } from './lattice';

/** Deterministic standard normal deviates (seeded). */
function normals(seed: number): () => number {
  const u = seededRandom(seed);
  return () => normalDeviate(u);
}

describe('toleranceGcd', () => {
  it('finds the common step of multiples despite float error', () => {
    expect(toleranceGcd(0.3, 0.1, 1e-12)).toBeCloseTo(0.1, 12);
    expect(toleranceGcd(2.5, 1.0, 1e-12)).toBeCloseTo(0.5, 12);
    expect(toleranceGcd(0, 0, 1e-12)).toBe(0);
  });
});

describe('learnLattice', () => {
  it('learns the step of any integer-multiple sensor (property: step, origin on the lattice, levels)', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10),
        fc.integer({ min: -1000, max: 1000 }),
        fc.array(fc.integer({ min: 0, max: 8 }), { minLength: 30, maxLength: 120 }),
        (step, base, counts) => {
          // Every level at least twice (a lattice sensor's values repeat) and two levels one step apart.
          const ks = [...counts, ...counts, 0, 0, 1, 1];
          const lattice = learnLattice(ks.map((k) => (base + k) * step));
          expect(lattice).toBeDefined();
          expect(lattice?.step).toBeCloseTo(step, 9);
          expect(lattice?.levels).toBe(new Set(ks).size);
          expect(Math.abs((lattice?.origin as number) - (base + Math.min(...ks)) * step)).toBeLessThan(1e-9 * Math.max(1, Math.abs(base * step)));
        },
      ),
      { seed: 49, numRuns: 200 },
    );
  });

  it('reads a gauge in whole counts 99-102, a 0/1 sensor and a 0-4 state, interpolated percentiles among them', () => {
    const g = normals(1);
    const gauge = Array.from({ length: 120 }, () => Math.round(100.4 + 0.6 * g()));
    // About one value in ten is a percentile interpolated between two levels.
    gauge.push(...Array.from({ length: 12 }, (_, i) => 100 + (i % 5) * 0.05));
    expect(learnLattice(gauge)).toMatchObject({ step: 1 });
    const binary = Array.from({ length: 100 }, (_, i) => (i % 7 === 0 ? 1 : 0));
    expect(learnLattice(binary)).toEqual({ step: 1, origin: 0, levels: 2 });
    const state = Array.from({ length: 100 }, (_, i) => i % 5);
    expect(learnLattice(state)).toEqual({ step: 1, origin: 0, levels: 5 });
  });

  it('gives a continuous sensor no lattice, nor a constant, nor a sensor continuous in most windows', () => {
    const g = normals(2);
    expect(learnLattice(Array.from({ length: 200 }, () => 50 + g()))).toBeUndefined();
    expect(learnLattice(new Array(50).fill(7.25))).toBeUndefined();
    // Mixed: setpoint levels 100 and 150 in a quarter of the values, continuous readings elsewhere.
    const mixed = [...Array.from({ length: 25 }, (_, i) => (i % 2 ? 100 : 150)), ...Array.from({ length: 75 }, () => 120 + 5 * g())];
    expect(learnLattice(mixed)).toBeUndefined();
  });

  it('takes no lattice from the number format (float32 values)', () => {
    const g = normals(3);
    // Repeated values one float32 spacing (1e-7 relative) apart: a lattice of the format, not a gauge.
    const f32 = Array.from({ length: 200 }, () => Math.fround(9.4 + 1e-6 * Math.round(g() * 3)));
    expect(learnLattice(f32)).toBeUndefined();
  });
});

describe('indicatorStep and fewLevelStep', () => {
  it('finds what one reading moves a window mean by, and none on continuous values', () => {
    // Means of 50 readings on a 0.5 lattice: multiples of 0.01.
    const g = normals(4);
    const means = Array.from({ length: 30 }, () => (Math.round(200 + 10 * g()) * 0.5) / 50);
    expect(indicatorStep(means)).toBeCloseTo(0.01, 9);
    const continuous = Array.from({ length: 30 }, () => 3 + g());
    expect(indicatorStep(continuous) ?? 0).toBeLessThan(1e-6);
  });

  it('takes the smallest departure from the usual value of a few-level indicator', () => {
    // A window that sits on level 4 and now and then has a reading or two off it (n about 500).
    const values = [4, 4, 4, 3.998, 4, 4, 3.996, 4, 4, 4, 3.994, 4];
    expect(fewLevelStep(values)).toBeCloseTo(0.002, 9);
    expect(fewLevelStep([1, 2, 3, 4, 5, 6, 7])).toBeUndefined();
    expect(fewLevelStep([5, 5, 5])).toBeUndefined();
  });
});

describe('sortedFinite', () => {
  it('orders the finite values as a stable sort by a - b does, bit for bit (0 and -0 alone or together, NaN, ±Infinity)', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.constantFrom(0, -0, 1, -1, 2.5, NaN, Infinity, -Infinity), fc.double({ min: -5, max: 5 })), { maxLength: 40 }), (values) => {
        const want = values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
        const got = Array.from(sortedFinite(values));
        expect(got.length === want.length && got.every((v, i) => Object.is(v, want[i]))).toBe(true);
      }),
      { seed: 23, numRuns: 500 },
    );
  });
});
