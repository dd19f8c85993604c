import { crc32 } from 'node:zlib';
import fc from 'fast-check';
import { CorruptRecordError, UnknownSchemaVersionError, type UChartPoint } from '@defender/contracts';
import { decodePointSet, encodePointSet } from './point-set-codec';
import { points } from '../../testing/fixtures';

const ctx = { chamber: { toolId: 'T1', chamberId: 'C1' }, sequence: 7, runId: 'run-7', table: 'chamber_log', column: 'body' };

const finite = fc.double({ noNaN: true, noDefaultInfinity: true });
const point: fc.Arbitrary<UChartPoint> = fc.record(
  {
    indicatorKey: fc.string({ minLength: 1, maxLength: 40, unit: 'grapheme' }),
    value: finite,
    flags: fc.nat({ max: 0xffffffff }),
    size: fc.double({ min: 0, noNaN: true, noDefaultInfinity: true }),
    limitsVersion: fc.integer({ min: 1, max: 0xffffffff }),
    chart: fc.dictionary(fc.string({ minLength: 1, maxLength: 10 }), finite, { maxKeys: 16 }),
  },
  { requiredKeys: ['indicatorKey', 'value', 'flags'] },
);

describe('point set codec', () => {
  it('round-trips any valid point set exactly (property)', () => {
    fc.assert(
      fc.property(fc.uniqueArray(point, { selector: (p) => p.indicatorKey, maxLength: 30 }), (ps) => {
        expect(decodePointSet(encodePointSet(ps), ctx)).toEqual(ps);
      }),
      { seed: 424242, numRuns: 300 },
    );
  });

  it('keeps -0 and the full double range', () => {
    const ps: UChartPoint[] = [
      { indicatorKey: 'a', value: -0, flags: 0 },
      { indicatorKey: 'b', value: Number.MAX_VALUE, flags: 1, size: Number.MIN_VALUE },
    ];
    const back = decodePointSet(encodePointSet(ps), ctx);
    expect(Object.is(back[0]?.value, -0)).toBe(true);
    expect(back).toEqual(ps);
  });

  it('detects truncation at every length, never returning fewer points', () => {
    const blob = encodePointSet(points(6));
    for (let len = 0; len < blob.length; len++) {
      let err: unknown;
      try {
        decodePointSet(blob.subarray(0, len), ctx);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(CorruptRecordError);
      expect((err as CorruptRecordError).kind).toBe('truncated');
      expect((err as CorruptRecordError).context).toEqual(ctx);
    }
  });

  it('detects a flipped bit (checksum), trailing bytes, a foreign blob and an unknown version', () => {
    const blob = encodePointSet(points(4));
    const flipped = Buffer.from(blob);
    flipped[blob.length - 3] = (flipped[blob.length - 3] as number) ^ 0x10;
    expect(() => decodePointSet(flipped, ctx)).toThrow(expect.objectContaining({ kind: 'checksum-mismatch' }));
    expect(() => decodePointSet(Buffer.concat([blob, Buffer.from([0])]), ctx)).toThrow(expect.objectContaining({ kind: 'malformed' }));
    const foreign = Buffer.from(blob);
    foreign[0] = 0x7b; // '{': somebody stored JSON here
    expect(() => decodePointSet(foreign, ctx)).toThrow(expect.objectContaining({ kind: 'malformed' }));
    const future = Buffer.from(blob);
    future[1] = 2;
    const err = (() => {
      try {
        decodePointSet(future, ctx);
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(err).toBeInstanceOf(UnknownSchemaVersionError);
    expect(err).toMatchObject({ found: 2, supported: [1], context: ctx });
  });

  it('rejects a stored non-finite value even with a valid checksum, naming the indicator', () => {
    const blob = Buffer.from(encodePointSet([{ indicatorKey: 'k', value: 1, flags: 0 }]));
    blob.writeDoubleLE(NaN, 16 + 2 + 1);
    blob.writeUInt32LE(crc32(blob.subarray(16)), 12);
    expect(() => decodePointSet(blob, ctx)).toThrow(expect.objectContaining({ kind: 'invalid-value', context: expect.objectContaining({ indicatorKey: 'k', column: 'value' }) }));
  });
});
