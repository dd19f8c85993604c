import { IndicatorCalculator, type IndicatorSpec } from './indicators';
import { createTrace } from './trace';

describe('IndicatorCalculator', () => {
  const trace = createTrace({
    runId: 'run-7',
    timing: { kind: 'regular', startSeconds: 0, frequencyHz: 1 },
    svids: {
      pressure: Float64Array.of(1, 2, 3, 4, 5, 6, 7, 8, 9, 10),
      dead: Float64Array.of(NaN, NaN, NaN, NaN, NaN, NaN, NaN, NaN, NaN, NaN),
      once: Float64Array.of(NaN, NaN, NaN, NaN, NaN, 5, NaN, NaN, NaN, NaN),
    },
    steps: [
      { name: 'a', startIndex: 0 },
      { name: 'b', startIndex: 5 },
    ],
  });
  const calc = new IndicatorCalculator();

  it('computes each requested statistic per window', () => {
    const specs: IndicatorSpec[] = [
      { svid: 'pressure', window: { kind: 'context' }, statistic: 'mean' },
      { svid: 'pressure', window: { kind: 'step', step: 'b' }, statistic: 'max' },
      {
        svid: 'pressure',
        window: { kind: 'step', step: 'b', trimStartSeconds: 1, trimEndSeconds: 1 },
        statistic: 'n',
      },
      { svid: 'pressure', window: { kind: 'context' }, statistic: 'median' },
      { svid: 'pressure', window: { kind: 'context' }, statistic: 'p95' },
      { svid: 'pressure', window: { kind: 'step', step: 'a' }, statistic: 'slope' },
      { svid: 'pressure', window: { kind: 'step', step: 'a' }, statistic: 'duration' },
      { svid: 'pressure', window: { kind: 'step', step: 'a' }, statistic: 'integral' },
    ];
    const expected = [5.5, 10, 3, 5.5, 9.55, 1, 4, 12];
    calc.compute(trace, specs).forEach((o, i) => {
      expect(o.kind).toBe('point');
      if (o.kind === 'point') expect(o.value).toBeCloseTo(expected[i], 12);
    });
  });

  it('yields no point, with a reason, for an unknown SVID or step, an empty window, no valid sample, or too few', () => {
    const specs: IndicatorSpec[] = [
      { svid: 'flow', window: { kind: 'context' }, statistic: 'mean' },
      { svid: 'pressure', window: { kind: 'step', step: 'zz' }, statistic: 'mean' },
      {
        svid: 'pressure',
        window: { kind: 'step', step: 'a', trimStartSeconds: 3, trimEndSeconds: 3 },
        statistic: 'mean',
      },
      { svid: 'dead', window: { kind: 'context' }, statistic: 'n_missing' },
      { svid: 'once', window: { kind: 'context' }, statistic: 'std' },
      { svid: 'once', window: { kind: 'context' }, statistic: 'mean' },
    ];
    const out = calc.compute(trace, specs);
    expect(out.map((o) => (o.kind === 'point' ? o.value : o.reason))).toEqual([
      'unknown-svid',
      'unknown-step',
      'empty-window',
      'no-valid-samples',
      'insufficient-samples',
      5,
    ]);
    expect(out[3]).toMatchObject({ n: 0, nMissing: 10, detail: 'all 10 samples are NaN/Inf' });
    expect(out[4]).toMatchObject({ n: 1, nMissing: 9 });
  });
});
