import { seededRandom } from '@defender/hashing';
import { jitteredBackoff } from './backoff';

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
