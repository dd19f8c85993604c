import fc from 'fast-check';
import { InvalidRecordError } from './errors';
import type { SampleArray, TraceRecord } from './records';
import { aggregateObservations, computeWeight, observeTrace } from './weights';

describe('computeWeight', () => {
  it.each([
    // the seeds' chamber classes
    [50, 1, 600, 30_000],
    [100, 1, 1200, 120_000],
    [200, 10, 1800, 3_600_000],
    [3, 2.5, 10, 75],
  ])('%d SVIDs x %d Hz x %d s = %d', (svids, hz, s, w) => {
    expect(computeWeight(svids, hz, s)).toBe(w);
  });

  it.each([
    [0, 1, 1],
    [1, -1, 1],
    [1, 1, NaN],
    [1, Infinity, 1],
  ])('rejects non-positive or non-finite factors (%d, %d, %d)', (a, b, c) => {
    expect(() => computeWeight(a, b, c)).toThrow(InvalidRecordError);
  });
});

describe('aggregateObservations', () => {
  it('takes the median of each factor, so one aborted run does not move the weight', () => {
    const normal = { svidCount: 100, collectionFreqHz: 1, contextDurationSeconds: 1200 };
    const aborted = { svidCount: 100, collectionFreqHz: 1, contextDurationSeconds: 35 };
    const agg = aggregateObservations([normal, normal, aborted, normal, normal]);
    expect(agg).toEqual({ svidCount: 100, collectionFreqHz: 1, contextDurationSeconds: 1200, weight: 120_000, observedRuns: 5 });
  });

  it('averages the two middle values of an even count and rounds duration to whole seconds', () => {
    const agg = aggregateObservations([
      { svidCount: 10, collectionFreqHz: 2, contextDurationSeconds: 100.2 },
      { svidCount: 11, collectionFreqHz: 4, contextDurationSeconds: 100.6 },
    ]);
    expect(agg.svidCount).toBe(11); // 10.5 rounds half up
    expect(agg.collectionFreqHz).toBe(3);
    expect(agg.contextDurationSeconds).toBe(100);
    expect(agg.weight).toBe(11 * 3 * 100);
  });

  it('rejects an empty list', () => {
    expect(() => aggregateObservations([])).toThrow(InvalidRecordError);
  });

  it('stays within the range of the observed weights when all runs agree on the SVID count (property)', () => {
    const obs = fc.record({
      svidCount: fc.constant(20),
      collectionFreqHz: fc.constantFrom(1, 2, 5, 10),
      contextDurationSeconds: fc.integer({ min: 1, max: 3600 }),
    });
    fc.assert(
      fc.property(fc.array(obs, { minLength: 1, maxLength: 30 }), (list) => {
        const agg = aggregateObservations(list);
        const weights = list.map((o) => o.svidCount * o.collectionFreqHz * o.contextDurationSeconds);
        // median of each factor separately: bounded by the extreme factors
        const minF = Math.min(...list.map((o) => o.collectionFreqHz));
        const maxF = Math.max(...list.map((o) => o.collectionFreqHz));
        const minD = Math.min(...list.map((o) => o.contextDurationSeconds));
        const maxD = Math.max(...list.map((o) => o.contextDurationSeconds));
        expect(agg.weight).toBeGreaterThanOrEqual(Math.floor(20 * minF * minD));
        expect(agg.weight).toBeLessThanOrEqual(Math.ceil(20 * maxF * maxD));
        expect(agg.observedRuns).toBe(weights.length);
      }),
      { seed: 7, numRuns: 200 },
    );
  });
});

describe('observeTrace', () => {
  const base = { toolId: 'T1', chamberId: 'C1', runId: 'r1', steps: [] };
  it('regular timing: frequency as given, duration = samples / frequency', () => {
    const trace: TraceRecord = {
      ...base,
      timing: { kind: 'regular', startSeconds: 0, frequencyHz: 10 },
      svids: new Map<string, SampleArray>([
        ['a', new Float64Array(18_000)],
        ['b', new Float32Array(18_000)],
      ]),
    };
    const obs = observeTrace(trace, new Date(0));
    expect(obs).toMatchObject({ svidCount: 2, collectionFreqHz: 10, contextDurationSeconds: 1800, runId: 'r1' });
    expect(computeWeight(obs.svidCount, obs.collectionFreqHz, obs.contextDurationSeconds)).toBe(36_000);
  });

  it('explicit times: (n - 1) intervals over the span, so frequency x duration = samples', () => {
    const times = Float64Array.from({ length: 5 }, (_, i) => 100 + i * 0.5);
    const trace: TraceRecord = { ...base, timing: { kind: 'explicit', timesSeconds: times }, svids: new Map([['a', new Float64Array(5)]]) };
    const obs = observeTrace(trace, new Date(0));
    expect(obs.collectionFreqHz).toBe(2);
    expect(obs.collectionFreqHz * obs.contextDurationSeconds).toBeCloseTo(5, 12);
  });
});
