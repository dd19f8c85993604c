import type { AlarmRecord, LimitSetRecord, RunPointSet } from '@defender/contracts';
import { MONITOR_PART_CHART_TYPE, POINT_FLAGS } from '@defender/pipeline';
import { buildCharts, buildMonitors, parseIndicatorKey } from './chamber-view';
import { indicatorLabel, parseMonitorKey } from './monitor-keys';

const chamber = { toolId: 'ETCH01', chamberId: 'PM1' };
const run = (seq: number, points: RunPointSet['points']): RunPointSet => ({ ...chamber, sequence: seq, runId: `r${seq}`, epoch: 1, committedAt: new Date(Date.UTC(2026, 0, 1, 0, seq)), recipe: 'R', points });
const limits: LimitSetRecord = {
  ...chamber,
  indicatorKey: 'R|mean/P',
  version: 1,
  chartType: 'individuals',
  center: 10,
  sigma: 1,
  lcl: 7,
  ucl: 13,
  params: {},
  baseline: { reason: 'initial', runIds: ['r1', 'r2'], excludedRunIds: [] },
  createdAt: new Date(Date.UTC(2026, 0, 1)),
};

describe('buildCharts', () => {
  it('one chart per indicator with limits, violations and their rules; constant setpoint charts hidden', () => {
    const runs = [
      run(1, [{ indicatorKey: 'R|mean/P', value: 10, flags: 0 }, { indicatorKey: 'R|mean/SP_001', value: 5, flags: 0 }]),
      run(2, [{ indicatorKey: 'R|mean/P', value: 11, flags: POINT_FLAGS.NEW_LIMITS, limitsVersion: 1 }, { indicatorKey: 'R|mean/SP_001', value: 5, flags: 0 }]),
      run(3, [
        { indicatorKey: 'R|mean/P', value: 14, flags: POINT_FLAGS.VIOLATION | POINT_FLAGS.WE1 | POINT_FLAGS.RUN_ALARMED, limitsVersion: 1 },
        { indicatorKey: 'R|mean/SP_001', value: 5, flags: POINT_FLAGS.RUN_ALARMED },
        { indicatorKey: 'R|std/P', value: 2, flags: POINT_FLAGS.RUN_ALARMED },
      ]),
    ];
    const { charts, hiddenConstant } = buildCharts(runs, [limits]);
    expect(hiddenConstant).toBe(1);
    expect(charts.map((c) => [c.indicatorKey, c.limits?.ucl ?? null, c.violations])).toEqual([
      ['R|mean/P', 13, 1],
      ['R|std/P', null, 0],
    ]);
    const p = charts[0]!.points;
    expect(p.map((x) => [x.sequence, x.limitsVersion, x.violation, x.rules, x.newLimits, x.runAlarmed])).toEqual([
      [1, null, false, [], false, false],
      [2, 1, false, [], true, false],
      [3, 1, true, ['WE1'], false, true],
    ]);
    expect(charts[0]).toMatchObject({ recipe: 'R', indicator: 'mean', svid: 'P', limits: { baselineRuns: 2, center: 10 } });
    expect(buildCharts(runs, [limits], { includeConstant: true }).charts).toHaveLength(3);
  });

  it('parses indicator keys', () => {
    expect(parseIndicatorKey('ETCH-OX-A|mean/ChamberPressure')).toEqual({ recipe: 'ETCH-OX-A', indicator: 'mean', svid: 'ChamberPressure' });
    expect(parseIndicatorKey('R|spec-temp')).toEqual({ recipe: 'R', indicator: 'spec-temp', svid: null });
  });
});

describe('the chamber monitor in the chamber view', () => {
  const F = POINT_FLAGS;
  const model = (version: number, pca: boolean): LimitSetRecord => ({
    ...chamber,
    indicatorKey: 'R|m:model',
    version,
    chartType: 'monitor',
    center: 0,
    sigma: null,
    lcl: null,
    ucl: pca ? 14.2 : null,
    params: {
      model: {
        kind: 'monitor',
        variables: ['R|m/P@Main:mean', 'R|m/F@Main:mean'],
        notCharted: [{ key: 'R|m/SP@Main:min', reason: 'constant', value: 500 }, { key: 'R|m/SP@Main:max', reason: 'constant', value: 500 }, { key: 'R|m/X@Main:std', reason: 'numerical-noise' }],
        pca: pca ? { components: 2, explainedVariance: 0.83, limits: { t2: 14.2, spe: 6.5 } } : null,
        mewma: null,
      },
    },
    baseline: { reason: 'initial', runIds: ['r1', 'r2'], excludedRunIds: [] },
    createdAt: new Date(Date.UTC(2026, 0, 1, 0, 2)),
  });
  const runs = [
    run(1, [{ indicatorKey: 'R|m/P@Main:mean', value: 40, flags: 0 }, { indicatorKey: 'R|m/F@Main:mean', value: 200, flags: 0 }, { indicatorKey: 'R|m:model', value: 0, flags: 0 }]),
    run(2, [
      { indicatorKey: 'R|m/P@Main:mean', value: 40.1, flags: F.NEW_LIMITS, limitsVersion: 1 },
      { indicatorKey: 'R|m/F@Main:mean', value: 201, flags: F.NEW_LIMITS, limitsVersion: 1 },
      { indicatorKey: 'R|m:model', value: 1.5, flags: F.NEW_LIMITS, limitsVersion: 1, chart: { spe: 0.8 } },
    ]),
    run(3, [
      { indicatorKey: 'R|m/P@Main:mean', value: 40, flags: F.RUN_ALARMED, limitsVersion: 1 },
      { indicatorKey: 'R|m/F@Main:mean', value: 250, flags: F.RUN_ALARMED | F.VIOLATION | F.LIMIT, limitsVersion: 1 },
      { indicatorKey: 'R|m:model', value: 30, flags: F.RUN_ALARMED | F.VIOLATION | F.T2 | F.SPE, limitsVersion: 1, chart: { spe: 9 } },
      { indicatorKey: 'R|mean/P', value: 40, flags: F.RUN_ALARMED },
    ]),
    // Only a constant indicator changed: no stored point carries the rule, the run's alarm does.
    run(4, [
      { indicatorKey: 'R|m/P@Main:mean', value: 40, flags: F.RUN_ALARMED | F.RUN_HOLD, limitsVersion: 1 },
      { indicatorKey: 'R|m/F@Main:mean', value: 200, flags: F.RUN_ALARMED | F.RUN_HOLD, limitsVersion: 1 },
      { indicatorKey: 'R|m:model', value: 1.1, flags: F.RUN_ALARMED | F.RUN_HOLD, limitsVersion: 1, chart: { spe: 0.5 } },
    ]),
  ];
  const constantAlarm: AlarmRecord = {
    ...chamber,
    sequence: 4,
    runId: 'r4',
    epoch: 1,
    raisedAt: new Date(Date.UTC(2026, 0, 1, 0, 4)),
    ruleId: 'RUN',
    indicatorKey: 'R|m:model',
    action: 'ALARM',
    value: 1.1,
    message: 'CONSTANT on ETCH01:PM1 run r4',
    details: { kind: 'run', rules: ['CONSTANT'], t2: 1.1, spe: 0.5, modelVersion: 1, violations: [{ rule: 'CONSTANT', indicatorKey: 'R|m/SP@Main:max', value: 510, center: 500 }] },
  };

  it('one monitor per recipe: T² and SPE per run from the model point, the limits from the model, the rules and the alarmed runs', () => {
    const [m, ...more] = buildMonitors(runs, [model(1, true)], [constantAlarm]);
    expect(more).toEqual([]);
    expect(m).toMatchObject({
      recipe: 'R',
      modelKey: 'R|m:model',
      limits: { version: 1, t2: 14.2, spe: 6.5, mewma: null, components: 2, explainedVariance: 0.83, charted: 2, notCharted: { constant: 2, 'numerical-noise': 1 }, baselineRuns: 2 },
      rebaseline: null,
      alarmedRuns: 2,
    });
    expect(m!.points.map((p) => [p.sequence, p.t2, p.spe, p.rules, p.newLimits, p.runAlarmed, p.runHold])).toEqual([
      [1, null, null, [], false, false, false],
      [2, 1.5, 0.8, [], true, false, false],
      [3, 30, 9, ['T2', 'SPE', 'LIMIT'], false, true, false],
      [4, 1.1, 0.5, ['CONSTANT'], false, true, true],
    ]);
  });

  it("shows each recipe's monitor state: its phase, model version and run count, also for a recipe without runs in the window", () => {
    const ref = { toolId: 'ETCH01', chamberId: 'PM1' };
    const at = new Date(Date.UTC(2026, 0, 1, 0, 4));
    const [r, q] = buildMonitors(runs, [model(1, true)], [], [
      { ...ref, recipe: 'R', sequence: 4, runId: 'r4', committedAt: at, state: { phase: 'judging', modelVersion: 1, judgedRuns: 3, extensionCheckAt: null, mewma: null, levelOffsets: { P: 0.1, F: -2 } } },
      { ...ref, recipe: 'Q', sequence: 2, runId: 'r2', committedAt: at, state: { phase: 'collecting', modelVersion: 1, runs: 7 } },
    ]);
    expect(r).toMatchObject({ recipe: 'R', state: { phase: 'judging', modelVersion: 1, runs: 3, adaptedSvids: 2, sequence: 4, runId: 'r4', committedAt: at.toISOString() } });
    expect(q).toMatchObject({ recipe: 'Q', limits: null, points: [], state: { phase: 'collecting', modelVersion: 1, runs: 7, adaptedSvids: 0 } });
    expect(buildMonitors(runs, [model(1, true)])[0]?.state).toBeNull();
  });

  it("reads a model stored in parts from its head's summary, and draws no chart for its parts", () => {
    const head: LimitSetRecord = {
      ...model(1, true),
      params: { parts: 2, digest: '0123456789abcdef', summary: { charted: 4400, notCharted: { constant: 3 }, t2: 14.2, spe: 6.5, components: 4, explainedVariance: 0.4, mewma: null } },
    };
    const part = (i: number): LimitSetRecord => ({ ...model(1, true), indicatorKey: `R|m:model/part${i}`, chartType: MONITOR_PART_CHART_TYPE, ucl: null, params: { text: '{' } });
    const [m] = buildMonitors(runs, [part(1), part(2), head], [constantAlarm]);
    expect(m?.limits).toMatchObject({ version: 1, t2: 14.2, spe: 6.5, mewma: null, components: 4, explainedVariance: 0.4, charted: 4400, notCharted: { constant: 3 } });
    expect(buildCharts(runs, [part(1), part(2), head], { includeMonitored: true }).charts.map((c) => c.indicatorKey)).not.toContain('R|m:model/part1');
  });

  it('a model without a PCA part has no T² / SPE; a pending re-baseline keeps the older model on the charts', () => {
    const noPca = runs.map((r) => ({ ...r, points: r.points.map((p) => (p.indicatorKey === 'R|m:model' && p.limitsVersion ? { ...p, value: 0, chart: {} } : p)) }));
    const [m] = buildMonitors(noPca, [model(1, false)]);
    expect(m!.limits).toMatchObject({ t2: null, spe: null });
    expect(m!.points.every((p) => p.t2 === null && p.spe === null)).toBe(true);
    const pending: LimitSetRecord = { ...model(2, false), chartType: 'pending-baseline', params: { reason: 'wet clean', requestedBy: 'alice', excludeRunIds: [] }, createdAt: new Date(Date.UTC(2026, 0, 2)) };
    const [r] = buildMonitors(runs, [pending, model(1, true)]);
    expect(r).toMatchObject({ limits: { version: 1, t2: 14.2 }, rebaseline: { version: 2, reason: 'wet clean', requestedAt: '2026-01-02T00:00:00.000Z' } });
    expect(buildMonitors([run(1, [{ indicatorKey: 'R|mean/P', value: 1, flags: 0 }])], [limits])).toEqual([]);
  });

  it("leaves the model out of the U-charts, and the monitor's indicators too unless one has a violation", () => {
    const { charts, hiddenMonitored } = buildCharts(runs, [model(1, true)]);
    expect(charts.map((c) => [c.indicatorKey, c.points.filter((p) => p.violation).map((p) => [p.runId, p.rules]), c.monitor])).toEqual([
      ['R|m/F@Main:mean', [['r3', ['LIMIT']]], { recipe: 'R', svid: 'F', window: 'Main', statistic: 'mean' }],
      ['R|mean/P', [], null],
    ]);
    expect(hiddenMonitored).toBe(1);
    expect(buildCharts(runs, [model(1, true)], { includeMonitored: true }).charts.map((c) => c.indicatorKey)).toEqual(['R|m/F@Main:mean', 'R|mean/P', 'R|m/P@Main:mean']);
    // A cap keeps the indicators violated last.
    const later = [...runs, run(5, [{ indicatorKey: 'R|m/P@Main:mean', value: 50, flags: F.RUN_ALARMED | F.VIOLATION | F.LIMIT, limitsVersion: 1 }, { indicatorKey: 'R|m:model', value: 2, flags: F.RUN_ALARMED, limitsVersion: 1, chart: { spe: 1 } }])];
    const capped = buildCharts(later, [model(1, true)], { maxMonitored: 1 });
    expect([capped.charts.map((c) => c.indicatorKey), capped.hiddenMonitored]).toEqual([['R|mean/P', 'R|m/P@Main:mean'], 1]);
  });

  it('parses monitor keys and labels them as a person reads them', () => {
    expect(parseMonitorKey('ETCH-OX|m/Chamber Pressure@Main Etch:p95')).toEqual({ recipe: 'ETCH-OX', svid: 'Chamber Pressure', window: 'Main Etch', statistic: 'p95' });
    expect(parseMonitorKey('R|m:model')).toBeNull();
    expect(parseMonitorKey('R|mean/P')).toBeNull();
    expect(indicatorLabel('R|m/P@seg2of4:slope')).toBe('P slope in seg2of4');
    expect(indicatorLabel('R|m/P@Main:ma_max-mean')).toBe('P ma_max-mean in Main');
    expect(parseMonitorKey('R|m/Flow@Ramp:mean-run_mean')).toEqual({ recipe: 'R', svid: 'Flow', window: 'Ramp', statistic: 'mean-run_mean' });
    expect(indicatorLabel('R|m:model')).toBe('model');
    expect(indicatorLabel('R|mean/P')).toBe('mean/P');
  });
});
