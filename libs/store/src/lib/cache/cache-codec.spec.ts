import fc from 'fast-check';
import type { UChartPoint } from '@defender/contracts';
import { decodeCachedPoints, encodeCachedPoints, StringTable } from './cache-codec';

const point = fc.record(
  {
    indicatorKey: fc.string({ minLength: 1, maxLength: 40 }),
    value: fc.double({ noNaN: true, noDefaultInfinity: true }),
    flags: fc.integer({ min: 0, max: 0xffffffff }),
    size: fc.double({ min: 0, max: 1e9, noNaN: true }),
    limitsVersion: fc.integer({ min: 1, max: 0xffffffff }),
    chart: fc.dictionary(fc.string({ minLength: 1, maxLength: 12 }), fc.double({ noNaN: true, noDefaultInfinity: true }), { maxKeys: 16 }),
  },
  { requiredKeys: ['indicatorKey', 'value', 'flags'] },
) as fc.Arbitrary<UChartPoint>;

describe('history cache codec', () => {
  it('round-trips every field, optional ones only when present', () => {
    fc.assert(
      fc.property(fc.array(fc.array(point, { maxLength: 30 }), { minLength: 1, maxLength: 5 }), (runs) => {
        const table = new StringTable();
        const bodies = runs.map((points) => encodeCachedPoints(points, table));
        runs.forEach((points, i) => expect(decodeCachedPoints(bodies[i]!, table)).toEqual(points));
      }),
      { seed: 20261126, numRuns: 300 },
    );
  });

  it('stores each key once per chamber and hands out the same string objects', () => {
    const table = new StringTable();
    const points: UChartPoint[] = [
      { indicatorKey: 'R1|mean/svid-1', value: 1.5, flags: 0, chart: { ewma: 1.2 } },
      { indicatorKey: 'R1|std/svid-1', value: 0.25, flags: 3, limitsVersion: 2 },
    ];
    const a = encodeCachedPoints(points, table);
    const b = encodeCachedPoints(points, table);
    expect(table.size).toBe(3);
    const [x, y] = [decodeCachedPoints(a, table), decodeCachedPoints(b, table)];
    expect(x[0]!.indicatorKey).toBe(y[0]!.indicatorKey);
    expect(x).toEqual(points);
    // 4 bytes of count; 15 per point; the chart entry 1 + 10; the limits version 4
    expect(a.length).toBe(4 + 15 + 11 + 15 + 4);
  });

  it('finds keys without keeping a lookup index: hints for runs in the usual order, an index for one encode otherwise', () => {
    const keys = Array.from({ length: 300 }, (_, i) => `R1|${i % 2 ? 'std' : 'mean'}/svid-${i >> 1}`);
    const run = (order: readonly string[], chartAt = -1): UChartPoint[] =>
      order.map((k, i) => ({ indicatorKey: k, value: i, flags: 0, ...(i === chartAt ? { chart: { ewma: 1, ewmaIndex: 2 } } : {}) }));
    const table = new StringTable();
    const runs = [run(keys, 40), run(keys, 40), run([...keys].reverse()), run(keys.slice(100)), run(keys, 7)];
    const bodies = runs.map((r) => encodeCachedPoints(r, table));
    runs.forEach((r, i) => expect(decodeCachedPoints(bodies[i]!, table)).toEqual(r));
    expect(table.size).toBe(302);
    // Nothing but the strings is kept between encodes.
    expect(Object.values(table).filter((v) => v instanceof Map)).toEqual([]);
    // Copies of the key strings (as a store read returns them) are found as well.
    const copies = run(keys.map((k) => (' ' + k).slice(1)));
    expect(decodeCachedPoints(encodeCachedPoints(copies, table), table)).toEqual(copies);
    expect(table.size).toBe(302);
  });

  it('refuses a body that does not end where its points do', () => {
    const table = new StringTable();
    const body = encodeCachedPoints([{ indicatorKey: 'k', value: 1, flags: 0 }], table);
    expect(() => decodeCachedPoints(Buffer.concat([body, Buffer.alloc(3)]), table)).toThrow(/3 bytes after 1 points/);
    expect(() => table.at(7)).toThrow(/no entry 7/);
  });
});
