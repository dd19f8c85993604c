import fc from 'fast-check';
import { backoffDelayMs, exponentialBackoff, InvalidBackoffError } from '../index';

const OPTS = { baseMs: 100, maxMs: 5_000 };

/**
 * A fixed cycle of uniform draws (k/20, shuffled). The lib has no dependencies, not even on
 * @defender/hashing's seededRandom in its tests, so every lib and app may depend on it.
 */
function cycle(): () => number {
  const draws = Array.from({ length: 20 }, (_, i) => ((i * 7 + 3) % 20) / 20);
  let i = 0;
  return () => draws[i++ % draws.length] as number;
}

describe('backoffDelayMs (equal jitter)', () => {
  it('stays within [d/2, d) with d = min(max, base * 2^attempt)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2_000 }), fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), (attempt, r) => {
        const d = Math.min(5_000, 100 * 2 ** attempt);
        const v = backoffDelayMs(attempt, { ...OPTS, random: () => r });
        expect(v).toBeGreaterThanOrEqual(d / 2);
        expect(v).toBeLessThan(d);
      }),
      { seed: 2402 },
    );
  });

  it('grows with the attempt, then caps', () => {
    const low = (a: number) => backoffDelayMs(a, { ...OPTS, random: () => 0 });
    const high = (a: number) => backoffDelayMs(a, { ...OPTS, random: () => 0.999 });
    expect([0, 1, 2, 3, 6, 10, 1_000].map(low)).toEqual([50, 100, 200, 400, 2_500, 2_500, 2_500]);
    expect([0, 1, 2, 3, 10].map(high)).toEqual([99.95, 199.9, 399.8, 799.6, 4_997.5]);
  });

  it('never retries at once: the first delay is at least half the base', () => {
    expect(backoffDelayMs(0, { baseMs: 200, maxMs: 5_000, random: () => 0 })).toBe(100);
  });

  it('rejects unusable bounds and a negative attempt', () => {
    const random = () => 0.5;
    for (const bad of [
      { baseMs: 0, maxMs: 10 },
      { baseMs: -1, maxMs: 10 },
      { baseMs: 10, maxMs: 5 },
      { baseMs: 10, maxMs: Infinity },
      { baseMs: NaN, maxMs: 10 },
    ]) {
      expect(() => backoffDelayMs(0, { ...bad, random })).toThrow(InvalidBackoffError);
      expect(() => exponentialBackoff({ ...bad, random })).toThrow(RangeError);
    }
    expect(() => backoffDelayMs(-1, { ...OPTS, random })).toThrow(/attempt must be >= 0/);
    expect(new InvalidBackoffError('x').name).toBe('InvalidBackoffError');
  });
});

describe('exponentialBackoff', () => {
  it('counts attempts, caps, and starts again after reset', () => {
    const b = exponentialBackoff({ baseMs: 100, maxMs: 1_000, random: cycle() });
    for (const d of [100, 200, 400, 800, 1_000, 1_000]) {
      const v = b.next();
      expect(v).toBeGreaterThanOrEqual(d / 2);
      expect(v).toBeLessThan(d);
    }
    b.reset();
    expect(b.next()).toBeLessThan(100);
  });

  it('spreads clients that start together', () => {
    const r = cycle();
    const firsts = Array.from({ length: 20 }, () => exponentialBackoff({ baseMs: 1_000, maxMs: 1_000, random: r }).next());
    expect(new Set(firsts.map(Math.round)).size).toBe(20);
    expect(Math.min(...firsts)).toBeGreaterThanOrEqual(500);
  });
});
