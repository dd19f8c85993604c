import { seededRandom } from '@defender/hashing';
import { IndicatorCalculator, STATISTICS, windowValue, type IndicatorSpec, type WindowRequest } from './indicators';
import { medianFilter3 } from './median-filter';
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

  it('computes the shape statistics per window, and no point where a window is too short for them', () => {
    const specs: IndicatorSpec[] = [
      { svid: 'pressure', window: { kind: 'step', step: 'a' }, statistic: 'noise' },
      { svid: 'pressure', window: { kind: 'step', step: 'a' }, statistic: 'ma_max' },
      { svid: 'pressure', window: { kind: 'step', step: 'b' }, statistic: 'ma_min' },
      { svid: 'pressure', window: { kind: 'step', step: 'b', trimStartSeconds: 3 }, statistic: 'ma_min' },
      { svid: 'once', window: { kind: 'context' }, statistic: 'noise' },
    ];
    // Step a: 1..5, differences of 1 -> sqrt(pi) / 2; one average of 5 samples at 1 Hz: 3.
    // Step b: 6..10, average 8; trimmed to 9, 10 it has no 5 samples.
    expect(calc.compute(trace, specs).map((o) => (o.kind === 'point' ? o.value : o.reason))).toEqual([
      Math.sqrt(Math.PI) / 2,
      3,
      8,
      'insufficient-samples',
      'insufficient-samples',
    ]);
  });

  it('resolves equal segments of a trace without step markers', () => {
    const out = calc.compute(trace, [
      { svid: 'pressure', window: { kind: 'segment', index: 0, of: 3 }, statistic: 'mean' },
      { svid: 'pressure', window: { kind: 'segment', index: 2, of: 3 }, statistic: 'n' },
    ]);
    // 10 samples in 3 parts: [0, 3), [3, 6), [6, 10)
    expect(out.map((o) => (o.kind === 'point' ? o.value : o.reason))).toEqual([2, 4]);
    expect(() => calc.compute(trace, [{ svid: 'pressure', window: { kind: 'segment', index: 3, of: 3 }, statistic: 'n' }])).toThrow(
      'segment 3 of 3',
    );
  });
});

describe('medianFilter3', () => {
  it('removes a single-sample glitch and keeps anything two samples wide', () => {
    const glitch = Float64Array.of(1, 1, 9, 1, 1);
    expect([...medianFilter3(glitch, new Float64Array(5))]).toEqual([1, 1, 1, 1, 1]);
    const pulse = Float64Array.of(1, 9, 9, 1, 1);
    expect([...medianFilter3(pulse, new Float64Array(5))]).toEqual([5, 9, 9, 1, 1]);
  });

  it('leaves NaN out of each median', () => {
    expect([...medianFilter3(Float64Array.of(NaN, 2, NaN, 4), new Float64Array(4))]).toEqual([2, 2, 3, 4]);
    expect([...medianFilter3(Float64Array.of(NaN, NaN, NaN), new Float64Array(3))].every(Number.isNaN)).toBe(true);
  });

  it('filters a part [from, to) exactly as that part of the whole (random arrays with NaN)', () => {
    const u = seededRandom(7);
    for (let t = 0; t < 200; t++) {
      const n = 1 + Math.floor(u() * 12);
      const values = Float64Array.from({ length: n }, () => (u() < 0.2 ? NaN : Math.round(u() * 9)));
      const whole = medianFilter3(values, new Float64Array(n));
      const from = Math.floor(u() * (n + 1));
      const to = from + Math.floor(u() * (n + 1 - from));
      const part = medianFilter3(values, new Float64Array(n).fill(-1), from, to);
      for (let i = 0; i < n; i++) expect({ t, i, v: part[i] }).toEqual({ t, i, v: i >= from && i < to ? whole[i] : -1 });
    }
  });

  it('filters only the windows asked for, in any order, with the statistics of the whole filtered SVID', () => {
    const u = seededRandom(11);
    const calc = new IndicatorCalculator();
    for (let t = 0; t < 40; t++) {
      const n = 12 + Math.floor(u() * 40);
      const steps = [0, 0.25, 0.5, 0.75].map((f, i) => ({ name: `s${i}`, startIndex: Math.floor(f * n) }));
      // Noise with NaN and spikes, and some steps constant (a setpoint), spikes beside them included.
      const level = steps.map(() => (u() < 0.5 ? Math.round(u() * 8) - 4 : undefined));
      const p = Float64Array.from({ length: n }, (_, i) => {
        const s = steps.findLastIndex((st) => st.startIndex <= i);
        const c = level[s];
        // A level of 0 sometimes mixes in -0 (equal, yet not the same sample).
        return c !== undefined ? (c === 0 && u() < 0.2 ? -0 : c) : u() < 0.1 ? NaN : u() < 0.1 ? 100 : Math.round(u() * 8);
      });
      const trace = createTrace({ runId: `r${t}`, timing: { kind: 'regular', startSeconds: 0, frequencyHz: 1 }, svids: { p }, steps });
      const filtered = createTrace({ runId: `f${t}`, timing: { kind: 'regular', startSeconds: 0, frequencyHz: 1 }, svids: { p: medianFilter3(p, new Float64Array(n)) }, steps });
      // A random subset of the steps in random order, and sometimes the whole run between them.
      const windows: WindowRequest['window'][] = steps.filter(() => u() < 0.6).map((s) => ({ kind: 'step', step: s.name }));
      windows.sort(() => u() - 0.5);
      if (u() < 0.3) windows.splice(Math.floor(u() * (windows.length + 1)), 0, { kind: 'context' });
      const got = calc.computeWindows(trace, windows.map((window) => ({ svid: 'p', window, filter: 'median3', percentiles: true, shape: true })));
      const want = new IndicatorCalculator().computeWindows(filtered, windows.map((window) => ({ svid: 'p', window, percentiles: true, shape: true })));
      expect({ t, got }).toEqual({ t, got: want });
    }
  });

  it('gives glitch-free statistics through the calculator when a spec asks for it', () => {
    const t = createTrace({
      runId: 'g',
      timing: { kind: 'regular', startSeconds: 0, frequencyHz: 1 },
      svids: { p: Float64Array.of(5, 5, 5, 50, 5, 5, 5, 5) },
      steps: [],
    });
    const [raw, filtered] = new IndicatorCalculator().compute(t, [
      { svid: 'p', window: { kind: 'context' }, statistic: 'max' },
      { svid: 'p', window: { kind: 'context' }, statistic: 'max', filter: 'median3' },
    ]);
    expect(raw?.kind === 'point' && raw.value).toBe(50);
    expect(filtered?.kind === 'point' && filtered.value).toBe(5);
  });
});

describe('IndicatorCalculator.computeWindows', () => {
  it('gives every statistic of a window the value compute gives it as a point (random traces)', () => {
    const u = seededRandom(20261127);
    const calc = new IndicatorCalculator();
    for (let t = 0; t < 25; t++) {
      const n = 5 + Math.floor(u() * 60);
      const svid = (k: number) => Float64Array.from({ length: n }, () => (u() < 0.1 * k ? NaN : Math.round(u() * 8)));
      const trace = createTrace({
        runId: `r${t}`,
        timing: { kind: 'regular', startSeconds: 0, frequencyHz: 1 + Math.floor(u() * 3) },
        svids: { A: svid(0), B: svid(1), C: svid(5) },
        steps: [
          { name: 's1', startIndex: 0 },
          { name: 's2', startIndex: Math.floor(n / 2) },
        ],
      });
      const windows: WindowRequest['window'][] = [{ kind: 'context' }, { kind: 'step', step: 's2' }, { kind: 'step', step: 'nope' }, { kind: 'segment', index: 1, of: 3 }];
      const requests: WindowRequest[] = [];
      for (const sv of ['A', 'B', 'C', 'missing'])
        for (const window of windows) for (const filter of [undefined, 'median3' as const]) requests.push({ svid: sv, window, ...(filter ? { filter } : {}), percentiles: true, shape: true });
      const results = calc.computeWindows(trace, requests);
      expect(results).toHaveLength(requests.length);
      requests.forEach((r, i) => {
        const specs: IndicatorSpec[] = STATISTICS.map((statistic) => ({ svid: r.svid, window: r.window, statistic, ...(r.filter ? { filter: r.filter } : {}) }));
        calc.compute(trace, specs).forEach((o, j) => {
          const v = windowValue(results[i], STATISTICS[j]);
          if (o.kind === 'point') expect(v).toBe(o.value);
          else expect(v).toBeUndefined();
        });
      });
    }
  });

  it('leaves the optional statistics out unless asked for', () => {
    const trace = createTrace({ runId: 'r', timing: { kind: 'regular', startSeconds: 0, frequencyHz: 1 }, svids: { A: Float64Array.of(1, 5, 2, 8, 3) }, steps: [] });
    const [plain] = new IndicatorCalculator().computeWindows(trace, [{ svid: 'A', window: { kind: 'context' }, percentiles: false, shape: false }]);
    expect(windowValue(plain, 'mean')).toBe(3.8);
    expect(windowValue(plain, 'median')).toBeUndefined();
    expect(windowValue(plain, 'noise')).toBeUndefined();
  });
});
