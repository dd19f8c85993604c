import fc from 'fast-check';
import { heaviestFirst } from './heaviest-first';

describe('heaviestFirst', () => {
  const reference = (items: number[], weight: Float64Array) =>
    [...items].sort((a, b) => weight[b]! - weight[a]! || a - b);

  it('orders by weight descending, then index ascending, on the packed and the fallback path', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(fc.integer({ min: 0, max: 4_000_000 }), fc.double({ min: 0, max: 1e6, noNaN: true })),
          {
            maxLength: 300,
          },
        ),
        fc.boolean(),
        (weights, integral) => {
          const w = Float64Array.from(weights, (x) => (integral ? Math.floor(x) : x));
          const items = weights.map((_, i) => i).filter((i) => i % 3 !== 1);
          expect(heaviestFirst([...items], w)).toEqual(reference(items, w));
        },
      ),
      { seed: 6001, numRuns: 300 },
    );
  });

  it('falls back when packing would lose precision', () => {
    const w = Float64Array.from([2 ** 50, 1, 2 ** 50, 7]);
    expect(heaviestFirst([0, 1, 2, 3], w)).toEqual([0, 2, 3, 1]);
  });
});
