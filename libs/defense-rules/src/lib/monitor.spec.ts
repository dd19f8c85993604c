import { normalDeviate, seededRandom } from '@defender/hashing';
import { createTrace, IndicatorCalculator, type StatisticName } from '@defender/uchart';
import { fitMonitorModel, MonitorBaselineError } from './monitor';
import { DEFAULT_MONITOR_STATISTICS, monitorKey, statisticParts, type MonitorConfig } from './monitor-config';
import { monitorLayout, monitorSpecs, monitorValues, type MonitorSpec } from './monitor-indicators';
import { scoreMonitorRun } from './monitor-score';
import { parseStrategy, validateStrategy } from './strategy';

/** Deterministic standard normal deviates (the workspace's seeded uniform source, Box-Muller). */
function normals(seed: number): () => number {
  const u = seededRandom(seed);
  return () => normalDeviate(u);
}

const config = (monitor: Record<string, unknown> = {}): MonitorConfig => {
  const s = parseStrategy({ schemaVersion: 1, name: 't', monitor });
  if (!s.monitor) throw new Error('no monitor');
  return s.monitor;
};

/** Phase I rows of p indicators driven by one common factor (a run offset) plus independent noise. */
function correlatedRows(n: number, p: number, seed: number): number[][] {
  const g = normals(seed);
  return Array.from({ length: n }, () => {
    const f = g();
    return Array.from({ length: p }, (_, j) => 100 + j + 2 * f + 0.5 * g());
  });
}

describe('monitor configuration', () => {
  it('applies defaults and rejects unknown keys, repeated statistics and out-of-range values', () => {
    const cfg = config();
    expect(cfg).toMatchObject({
      svids: '*',
      windows: 'steps',
      segments: 4,
      despike: true,
      baseline: { minRuns: 30, extendTo: 90 },
      univariate: true,
      adapt: { lambda: 0.05 },
      pca: { variance: 0.9, maxComponents: 4 },
      mewma: false,
      action: 'ALARM',
    });
    expect(cfg.statistics).toEqual([...DEFAULT_MONITOR_STATISTICS]);
    expect(cfg.statistics).toEqual(expect.arrayContaining(['noise', 'ma_max-mean', 'ma_min-mean']));
    const bad = validateStrategy({
      schemaVersion: 1,
      name: 't',
      monitor: { statistics: ['mean', 'mean'], baseline: { minRuns: 3 }, colour: 'red' },
    });
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(bad.issues.map((i) => i.path)).toEqual(expect.arrayContaining(['monitor']));
    const short = validateStrategy({ schemaVersion: 1, name: 't', monitor: { baseline: { minRuns: 40, extendTo: 30 } } });
    expect(short.ok).toBe(false);
    if (!short.ok) expect(short.issues[0]?.path).toBe('monitor.baseline.extendTo');
    const few = validateStrategy({ schemaVersion: 1, name: 't', monitor: { baseline: { minRuns: 3 } } });
    expect(few.ok).toBe(false);
    if (!few.ok) expect(few.issues[0]?.path).toBe('monitor.baseline.minRuns');
  });
});

describe('monitorSpecs', () => {
  const svids = { P: Float64Array.from({ length: 12 }, (_, i) => i), Q: new Float64Array(12) };
  it('covers every SVID x step x statistic, despiked by default', () => {
    const trace = createTrace({
      runId: 'r',
      timing: { kind: 'regular', startSeconds: 0, frequencyHz: 1 },
      svids,
      steps: [
        { name: 'A', startIndex: 0 },
        { name: 'B', startIndex: 6 },
      ],
    });
    const specs = monitorSpecs(trace, config({ statistics: ['mean', 'max'] }));
    expect(specs.map((s) => s.key)).toEqual([
      monitorKey('P', 'A', 'mean'),
      monitorKey('P', 'A', 'max'),
      monitorKey('P', 'B', 'mean'),
      monitorKey('P', 'B', 'max'),
      monitorKey('Q', 'A', 'mean'),
      monitorKey('Q', 'A', 'max'),
      monitorKey('Q', 'B', 'mean'),
      monitorKey('Q', 'B', 'max'),
    ]);
    expect(specs.every((s) => s.filter === 'median3')).toBe(true);
    expect(monitorSpecs(trace, config({ statistics: ['mean'], despike: false }))[0]?.filter).toBeUndefined();
  });

  it('uses equal time segments when the trace has no step markers', () => {
    const trace = createTrace({ runId: 'r', timing: { kind: 'regular', startSeconds: 0, frequencyHz: 1 }, svids, steps: [] });
    const specs = monitorSpecs(trace, config({ statistics: ['mean'], segments: 3, svids: ['P'] }));
    expect(specs.map((s) => [s.windowName, s.window])).toEqual([
      ['seg1of3', { kind: 'segment', index: 0, of: 3 }],
      ['seg2of3', { kind: 'segment', index: 1, of: 3 }],
      ['seg3of3', { kind: 'segment', index: 2, of: 3 }],
    ]);
  });
});

describe('monitorValues', () => {
  it('equals each statistic computed on its own, derived ones as the difference of their parts', () => {
    const u = seededRandom(7);
    const trace = createTrace({
      runId: 'r',
      timing: { kind: 'regular', startSeconds: 0, frequencyHz: 2 },
      svids: {
        P: Float64Array.from({ length: 80 }, (_, i) => (i === 13 ? NaN : 10 + normalDeviate(u) + (i > 40 ? 3 : 0))),
        Q: Float64Array.from({ length: 80 }, () => 4),
        R: Float64Array.from({ length: 80 }, () => NaN),
      },
      steps: [
        { name: 'A', startIndex: 0 },
        { name: 'B', startIndex: 30 },
      ],
    });
    const statistics = ['mean', 'noise', 'ma_max-mean', 'p95-p05', 'mean-run_mean', 'slope', 'range'];
    const cfg = config({ statistics });
    const specs = monitorSpecs(trace, cfg);
    const values = monitorValues(trace, specs, new IndicatorCalculator());
    const one = (svid: string, window: MonitorSpec['window'], statistic: StatisticName) => {
      const [o] = new IndicatorCalculator().compute(trace, [{ svid, window, statistic, filter: 'median3' }]);
      return o?.kind === 'point' ? o.value : undefined;
    };
    const diff = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined ? undefined : a - b);
    expect(specs).toHaveLength(3 * 2 * statistics.length);
    specs.forEach((spec, i) => {
      const parts = statisticParts(spec.statistic) as readonly StatisticName[];
      const expected =
        parts.length === 1
          ? one(spec.svid, spec.window, parts[0] as StatisticName)
          : diff(one(spec.svid, spec.window, parts[0] as StatisticName), one(spec.svid, spec.statistic.includes('-run_') ? { kind: 'context' } : spec.window, parts[1] as StatisticName));
      expect([spec.key, values[i]]).toEqual([spec.key, expected]);
    });
    expect(values.filter((v) => v !== undefined).length).toBeGreaterThan(20);
  });

  it('lays out the SVIDs and windows monitorSpecs crosses with the statistics', () => {
    const trace = createTrace({
      runId: 'r',
      timing: { kind: 'regular', startSeconds: 0, frequencyHz: 1 },
      svids: { P: new Float64Array(10), Q: new Float64Array(10) },
      steps: [{ name: 'A', startIndex: 0 }],
    });
    const cfg = config({ statistics: ['mean', 'max'], svids: ['Q'] });
    const layout = monitorLayout(trace, cfg);
    expect(layout).toEqual({ svids: ['Q'], windows: [{ name: 'A', window: { kind: 'step', step: 'A' } }] });
    expect(monitorSpecs(trace, cfg).map((s) => s.key)).toEqual([monitorKey('Q', 'A', 'mean'), monitorKey('Q', 'A', 'max')]);
  });
});

describe('derived statistics', () => {
  it('accepts a statistic or the difference of two, and nothing else', () => {
    expect(statisticParts('max')).toEqual(['max']);
    expect(statisticParts('p95-p05')).toEqual(['p95', 'p05']);
    expect(statisticParts('max-max')).toBeUndefined();
    expect(statisticParts('max-foo')).toBeUndefined();
    expect(statisticParts('-mean')).toBeUndefined();
    expect(statisticParts('mean-run_mean')).toEqual(['mean', 'mean']);
    expect(statisticParts('p95-run_median')).toEqual(['p95', 'median']);
    expect(statisticParts('mean-run_banana')).toBeUndefined();
    expect(statisticParts('run_mean-mean')).toBeUndefined();
    expect(validateStrategy({ schemaVersion: 1, name: 't', monitor: { statistics: ['mean', 'max-mean'] } }).ok).toBe(true);
    const bad = validateStrategy({ schemaVersion: 1, name: 't', monitor: { statistics: ['mean', 'max-banana'] } });
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(bad.issues[0]?.path).toBe('monitor.statistics.1');
  });

  it('computes the shape statistics and their distance from the level', () => {
    // 12 samples at 1 Hz: a 5 s plateau of 6 on a level of 1; averages of 5 samples peak at 6, bottom at 1.
    const trace = createTrace({
      runId: 'r',
      timing: { kind: 'regular', startSeconds: 0, frequencyHz: 1 },
      svids: { P: Float64Array.of(1, 1, 1, 1, 1, 6, 6, 6, 6, 6, 1, 1) },
      steps: [{ name: 'A', startIndex: 0 }],
    });
    expect(validateStrategy({ schemaVersion: 1, name: 't', monitor: { statistics: ['noise', 'ma_max-mean', 'ma_min'] } }).ok).toBe(true);
    const specs = monitorSpecs(trace, config({ statistics: ['noise', 'ma_max-mean', 'ma_min-mean'], despike: false }));
    const values = monitorValues(trace, specs, new IndicatorCalculator());
    const mean = 37 / 12;
    expect(values[0]).toBeCloseTo(((Math.sqrt(Math.PI) / 2) * 10) / 11, 12); // two steps of 5 in 11 differences
    expect(values[1]).toBeCloseTo(6 - mean, 12);
    expect(values[2]).toBeCloseTo(1 - mean, 12);
  });

  it('computes each part once and the difference per window', () => {
    const trace = createTrace({
      runId: 'r',
      timing: { kind: 'regular', startSeconds: 0, frequencyHz: 1 },
      svids: { P: Float64Array.of(1, 2, 3, 10, 20, 30) },
      steps: [
        { name: 'A', startIndex: 0 },
        { name: 'B', startIndex: 3 },
      ],
    });
    const specs = monitorSpecs(trace, config({ statistics: ['mean', 'max-mean', 'p95-p05'], despike: false }));
    const values = monitorValues(trace, specs, new IndicatorCalculator());
    expect(Object.fromEntries(specs.map((s, i) => [s.key, values[i]]))).toEqual({
      'm/P@A:mean': 2,
      'm/P@A:max-mean': 1,
      'm/P@A:p95-p05': expect.closeTo(1.8, 10),
      'm/P@B:mean': 20,
      'm/P@B:max-mean': 10,
      'm/P@B:p95-p05': expect.closeTo(18, 10),
    });
  });

  it("a-run_b: the window's statistic minus the whole run's, which a level offset of the run leaves unchanged", () => {
    const make = (offset: number) =>
      createTrace({
        runId: 'r',
        timing: { kind: 'regular', startSeconds: 0, frequencyHz: 1 },
        svids: { P: Float64Array.from([1, 2, 3, 10, 20, 30], (v) => v + offset) },
        steps: [
          { name: 'A', startIndex: 0 },
          { name: 'B', startIndex: 3 },
        ],
      });
    expect(validateStrategy({ schemaVersion: 1, name: 't', monitor: { statistics: ['mean', 'mean-run_mean'] } }).ok).toBe(true);
    const trace = make(0);
    const specs = monitorSpecs(trace, config({ statistics: ['mean', 'mean-run_mean'], despike: false }));
    const values = (t: ReturnType<typeof make>) => Object.fromEntries(specs.map((s, i) => [s.key, monitorValues(t, specs, new IndicatorCalculator())[i]]));
    expect(values(trace)).toEqual({ 'm/P@A:mean': 2, 'm/P@A:mean-run_mean': 2 - 11, 'm/P@B:mean': 20, 'm/P@B:mean-run_mean': 20 - 11 });
    const shifted = values(make(1000));
    expect(shifted['m/P@A:mean-run_mean']).toBeCloseTo(-9, 9);
    expect(shifted['m/P@B:mean-run_mean']).toBeCloseTo(9, 9);
  });
});

describe('fitMonitorModel and scoreMonitorRun', () => {
  const cfg = config({ baseline: { minRuns: 30 } });
  const budget = { alarmArl: 370 };

  it('refuses a short Phase I', () => {
    expect(() => fitMonitorModel(correlatedRows(10, 4, 1), ['a', 'b', 'c', 'd'], [], cfg, budget)).toThrow(MonitorBaselineError);
  });

  it('does not chart constant or numerically flat indicators, and flags a constant that changes', () => {
    const rows = correlatedRows(30, 6, 2).map((r) => [...r, 5, 1000 + 1e-9 * Math.random()]);
    const keys = ['a', 'b', 'c', 'd', 'e', 'f', 'setpoint', 'flat'];
    const model = fitMonitorModel(rows, keys, rows.map((_, i) => `r${i}`), cfg, budget);
    expect(model.variables).toEqual(['a', 'b', 'c', 'd', 'e', 'f']);
    expect(model.notCharted).toEqual([
      { key: 'setpoint', reason: 'constant', value: 5 },
      { key: 'flat', reason: 'numerical-noise' },
    ]);
    // The budget is split over the enabled charts: univariate, T² and SPE (MEWMA off by default).
    expect(model.alpha.mewma).toBe(0);
    expect(model.alpha.t2 + model.alpha.spe + model.alpha.univariate + model.alpha.mewma).toBeCloseTo(1 / 370, 12);
    const withMewma = fitMonitorModel(rows, keys, rows.map((_, i) => `r${i}`), config({ mewma: { lambda: 0.2 } }), budget);
    expect(withMewma.alpha.mewma).toBeCloseTo(1 / 370 / 4, 12);
    expect(withMewma.mewma?.scoreScale).toHaveLength(withMewma.pca?.components ?? -1);
    const inControl = new Map(keys.map((k, j) => [k, rows[0]?.[j] as number]));
    expect(scoreMonitorRun(model, inControl, 'm', null).violations.filter((v) => v.rule === 'CONSTANT')).toEqual([]);
    const changed = new Map(inControl).set('setpoint', 6);
    expect(scoreMonitorRun(model, changed, 'm', null).violations).toContainEqual({ rule: 'CONSTANT', key: 'setpoint', value: 6, center: 5 });
  });

  it('sees a fault that breaks the correlation although each indicator stays inside its own limits', () => {
    const keys = ['a', 'b', 'c', 'd', 'e', 'f'];
    const rows = correlatedRows(40, 6, 3);
    const model = fitMonitorModel(rows, keys, rows.map((_, i) => `r${i}`), cfg, budget);
    // a up and b down by 1.5 marginal sds each (sd ~2.06): within the raw limits, far off the common factor.
    const x = new Map(keys.map((k, j) => [k, 100 + j]));
    x.set('a', 100 + 3.1).set('b', 101 - 3.1);
    const s = scoreMonitorRun(model, x, 'm', null);
    expect(s.violations.some((v) => v.rule === 'LIMIT')).toBe(false);
    const spe = s.violations.find((v) => v.rule === 'SPE' || v.rule === 'RESIDUAL');
    expect(spe).toBeDefined();
    const speV = s.violations.find((v) => v.rule === 'SPE');
    if (speV) expect(speV.contributions?.slice(0, 2).map((c) => c.key).sort()).toEqual(['a', 'b']);
  });

  it('keeps the chamber-wide false-alarm rate near its budget on in-control data (estimated Phase I)', () => {
    const g = normals(7);
    const keys = Array.from({ length: 20 }, (_, j) => `x${j}`);
    let alarms = 0;
    let runs = 0;
    for (let rep = 0; rep < 20; rep++) {
      const rows = Array.from({ length: 30 }, () => keys.map(() => g()));
      const model = fitMonitorModel(rows, keys, rows.map((_, i) => `r${i}`), config({ mewma: { lambda: 0.2 } }), { alarmArl: 100 });
      let state: readonly number[] | null = null;
      for (let t = 0; t < 500; t++) {
        const s = scoreMonitorRun(model, new Map(keys.map((k) => [k, g()])), 'm', state);
        state = s.mewmaState;
        runs++;
        if (s.violations.length > 0) alarms++;
      }
    }
    // Budget 1 %; the limits are conservative by construction (the larger of theory and leave-one-out).
    expect(alarms / runs).toBeLessThan(0.02);
    expect(alarms).toBeGreaterThan(0);
  });
});

describe('lattice sensors (issue 49, item 4)', () => {
  // Phase I of 30 runs: six continuous indicators sharing a run factor, a pressure gauge in whole
  // counts (its p05 / p95 on the lattice: one run in ten a count off), and a 0/1 reflected power that
  // sits at 0 and now and then has a couple of readings at 1 (its mean in a window of 100 readings).
  const n = 30;
  const continuous = ['m/A@s:mean', 'm/B@s:mean', 'm/C@s:mean', 'm/D@s:mean', 'm/E@s:mean', 'm/F@s:mean'];
  const lattice = ['m/G@s:p05', 'm/G@s:p95', 'm/R@s:mean', 'm/R@s:p95'];
  const keys = [...continuous, ...lattice];
  const g = normals(49);
  const rows = Array.from({ length: n }, (_, i) => {
    const f = g();
    return [
      ...continuous.map((_, j) => 10 * (j + 1) + f + 0.3 * g()),
      i % 10 === 3 ? 98 : 99,
      i % 10 === 7 ? 102 : 101,
      i % 6 === 1 ? 0.02 : 0,
      i % 9 === 4 ? 1 : 0,
    ];
  });
  const centreRow = [...continuous.map((_, j) => 10 * (j + 1)), 99, 101, 0, 0];
  const score = (model: ReturnType<typeof fitMonitorModel>, row: readonly number[]) =>
    scoreMonitorRun(model, new Map(keys.map((k, j) => [k, row[j] as number])), 'm:model', null);
  const withLattice = fitMonitorModel(rows, keys, rows.map((_, i) => `r${i}`), config(), { alarmArl: 370 });

  it('learns the gauge and the 0/1 sensor as lattices and charts their indicators as attributes', () => {
    expect(withLattice.lattices).toEqual({
      G: { step: 1, origin: 98, levels: 4, source: 'learnt' },
      R: { step: 1, origin: 0, levels: 2, source: 'learnt' },
    });
    expect(withLattice.attributes).toEqual(lattice);
    expect(withLattice.pca?.names).toEqual(continuous);
    // One count is at most one sd of an order statistic.
    expect(withLattice.scale[withLattice.variables.indexOf('m/G@s:p95')]).toBeGreaterThanOrEqual(1);
  });

  it('raises nothing on one count of a lattice sensor, which the same model without the lattice alarms on', () => {
    // One count beyond anything Phase I showed: the gauge's p05 at 97, its p95 at 103, one more
    // pair of readings at 1 W in the 0/1 sensor's window.
    const oneCount = [
      [...centreRow.slice(0, 6), 97, 101, 0, 0],
      [...centreRow.slice(0, 6), 99, 103, 0, 0],
      [...centreRow.slice(0, 6), 99, 101, 0.04, 1],
    ];
    for (const row of oneCount) expect(score(withLattice, row).violations).toEqual([]);
    // The lattice ignored (keys whose SVID the model cannot read, every indicator charted by its
    // Phase I sd, in the PCA, as before issue 49 item 4): one count of the gauge's p05 is 6 of its
    // sds, and the zero-inflated indicators widen every univariate limit (the family width is
    // calibrated on Phase I's largest leave-one-out deviations), blinding the continuous ones.
    const blindKeys = keys.map((k) => k.replace(/^m\/([GR])@/, 'x/$1@'));
    const blind = fitMonitorModel(rows, blindKeys, rows.map((_, i) => `r${i}`), config(), { alarmArl: 370 });
    expect(blind.lattices).toBeUndefined();
    const z = (model: typeof blind, key: string, v: number) => {
      const j = model.variables.indexOf(key);
      return Math.abs(v - (model.center[j] as number)) / (model.scale[j] as number);
    };
    expect(z(blind, 'x/G@s:p05', 97)).toBeGreaterThan(6);
    expect(z(withLattice, 'm/G@s:p05', 97)).toBeLessThanOrEqual(2);
    expect(blind.univariateWidth).toBeGreaterThan(1.5 * withLattice.univariateWidth);
  });

  it('still alarms on a real shift of a lattice sensor and of the continuous ones', () => {
    const gaugeShift = [...centreRow.slice(0, 6), 106, 108, 0, 0];
    expect(score(withLattice, gaugeShift).violations.map((v) => v.key)).toEqual(expect.arrayContaining(['m/G@s:p05', 'm/G@s:p95']));
    const reflected = [...centreRow.slice(0, 6), 99, 101, 0.4, 1];
    expect(score(withLattice, reflected).violations.map((v) => v.key)).toContain('m/R@s:mean');
    const level = [...centreRow.slice(0, 6).map((v, j) => (j === 2 ? v + 4 : v)), 99, 101, 0, 0];
    expect(score(withLattice, level).violations.length).toBeGreaterThan(0);
  });

  it('takes a declared resolution over the learnt one, and rejects one that is not a positive finite number', () => {
    const declared = fitMonitorModel(rows, keys, rows.map((_, i) => `r${i}`), config({ resolution: { G: 0.5 } }), { alarmArl: 370 });
    expect(declared.lattices?.['G']).toMatchObject({ step: 0.5, source: 'declared' });
    for (const bad of [0, -1, 'one', null]) {
      const r = validateStrategy({ schemaVersion: 1, name: 't', monitor: { resolution: { G: bad } } });
      expect(r.ok).toBe(false);
      if (!r.ok) expect(r.issues[0]?.path).toBe('monitor.resolution.G');
    }
    const zero = validateStrategy({ schemaVersion: 1, name: 't', monitor: { resolution: { G: 0 } } });
    if (!zero.ok) expect(zero.issues[0]?.message).toMatch(/positive finite number/);
  });

  it('lets a constant indicator of a lattice sensor move one count, not two', () => {
    const constRows = rows.map((r) => [...r, 100]);
    const k = [...keys, 'm/G@t:p95'];
    const model = fitMonitorModel(constRows, k, rows.map((_, i) => `r${i}`), config(), { alarmArl: 370 });
    expect(model.notCharted).toContainEqual({ key: 'm/G@t:p95', reason: 'constant', value: 100, tolerance: 1 });
    const at = (v: number) => scoreMonitorRun(model, new Map(k.map((key, j) => [key, j < 10 ? (centreRow[j] as number) : v])), 'm:model', null).violations;
    expect(at(101)).toEqual([]);
    expect(at(102).map((v) => v.rule)).toEqual(['CONSTANT']);
  });
});
