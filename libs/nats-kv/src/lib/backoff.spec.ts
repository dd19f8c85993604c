import fc from 'fast-check';
import { backoffDelayMs } from './backoff';

describe('backoffDelayMs', () => {
  it('stays within [0, min(max, base * 2^attempt))', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 100 }), fc.double({ min: 0, max: 0.999999, noNaN: true }), (attempt, r) => {
        const d = backoffDelayMs(attempt, { baseMs: 100, maxMs: 5000, random: () => r });
        return d >= 0 && d < Math.min(5000, 100 * 2 ** attempt) + 1e-9;
      }),
      { seed: 42 },
    );
  });

  it('grows with the attempt and caps', () => {
    const top = (attempt: number) => backoffDelayMs(attempt, { baseMs: 100, maxMs: 5000, random: () => 0.999 });
    expect([0, 1, 2, 3, 10].map(top)).toEqual([99, 199, 399, 799, 4995]);
  });
});
