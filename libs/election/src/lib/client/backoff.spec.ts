import { jitteredBackoff, seededRandom } from './backoff';

describe('jitteredBackoff', () => {
  it('grows exponentially within [d/2, d], caps at maxMs, and resets', () => {
    const b = jitteredBackoff({ initialMs: 100, maxMs: 1_000, random: seededRandom(1) });
    const caps = [100, 200, 400, 800, 1_000, 1_000];
    for (const d of caps) {
      const v = b.next();
      expect(v).toBeGreaterThanOrEqual(d / 2);
      expect(v).toBeLessThanOrEqual(d);
    }
    b.reset();
    expect(b.next()).toBeLessThanOrEqual(100);
  });

  it('spreads clients apart', () => {
    const r = seededRandom(7);
    const firsts = Array.from({ length: 20 }, () =>
      jitteredBackoff({ initialMs: 1_000, maxMs: 1_000, random: r }).next(),
    );
    expect(new Set(firsts.map(Math.round)).size).toBeGreaterThan(15);
  });

  it('rejects nonsense bounds', () => {
    expect(() => jitteredBackoff({ initialMs: 0, maxMs: 10 })).toThrow(RangeError);
    expect(() => jitteredBackoff({ initialMs: 10, maxMs: 5 })).toThrow(RangeError);
  });
});

describe('seededRandom', () => {
  it('is reproducible and uniform enough', () => {
    const a = seededRandom(42);
    const b = seededRandom(42);
    const xs = Array.from({ length: 1_000 }, () => a());
    expect(xs).toEqual(Array.from({ length: 1_000 }, () => b()));
    expect(xs.every((x) => x >= 0 && x < 1)).toBe(true);
    const mean = xs.reduce((s, x) => s + x, 0) / xs.length;
    expect(mean).toBeGreaterThan(0.45);
    expect(mean).toBeLessThan(0.55);
  });
});
