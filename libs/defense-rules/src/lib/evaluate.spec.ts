import {
  createTrace,
  ewmaHalfWidth,
  ewmaSeries,
  IndicatorCalculator,
  knownLimits,
  type FrozenLimits,
} from '@defender/uchart';
import { maybeEstablishBaseline, phaseOneSamples, requiredHistoryRuns, type ChamberHistory } from './chamber-history';
import { evaluate, type Evaluation } from './evaluate';
import { readingsFromTrace, type NewRun } from './readings';
import { WESTERN_ELECTRIC_STRATEGY_DOCUMENT } from './default-strategy';
import { parseStrategy, type DefenseStrategy } from './strategy';

const WESTERN_ELECTRIC = parseStrategy(WESTERN_ELECTRIC_STRATEGY_DOCUMENT);

const at = '2024-05-01T00:00:00.000Z';
const context = { toolId: 'ETCH01', chamberId: 'PM2', recipe: 'POLY_MAIN' };

function strategyWith(indicator: object, extra: object = {}): DefenseStrategy {
  return parseStrategy({
    schemaVersion: 1,
    name: 'test',
    indicators: [{ id: 'x', svid: 'x', statistic: 'mean', ...indicator }],
    ...extra,
  });
}

/** Feeds values as consecutive runs (run-1, run-2, ...), carrying the history like a defender would. */
function feed(
  strategy: DefenseStrategy,
  values: (number | { value: number; exposure: number })[],
  limits?: FrozenLimits,
  start: ChamberHistory = { runs: [], limits: {} },
) {
  let history: ChamberHistory = {
    runs: start.runs,
    limits: limits ? { ...start.limits, x: limits } : start.limits,
  };
  const evaluations: Evaluation[] = [];
  values.forEach((v, i) => {
    const run: NewRun = {
      runId: `run-${start.runs.length + i + 1}`,
      context,
      readings: [{ key: 'x', indicatorId: 'x', svid: 'x', ...(typeof v === 'number' ? { value: v } : v) }],
    };
    const e = evaluate(history, run, strategy);
    evaluations.push(e);
    history = { ...history, runs: [...history.runs, e.record] };
  });
  return { history, evaluations, rules: evaluations.map((e) => e.violations.map((v) => v.rule)) };
}

describe('evaluate: Shewhart rules', () => {
  const we = strategyWith({ rules: ['western-electric'] });
  const known = knownLimits(we.indicators[0].chart, 0, 1, { frozenAt: at });

  it('raises an alarm only when the newest point is flagged', () => {
    const { evaluations, rules } = feed(we, [0, 0, 3.5, 0], known);
    expect(rules).toEqual([[], [], ['WE1'], []]);
    expect(evaluations[2].actions.map((a) => a.type)).toEqual(['ALARM']);
    expect(evaluations[3].actions).toEqual([]);
    expect(evaluations[3].record.alarmed).toBe(false);
  });

  it('carries rule, indicator, value, limits, the points involved and the alarm context', () => {
    const { evaluations } = feed(we, [0, 2.5, 0.5, 2.6], known);
    expect(evaluations[3].violations).toEqual([
      {
        rule: 'WE2',
        description: '2 of 3 points in a row beyond 2 sigma on the same side',
        runId: 'run-4',
        indicator: { key: 'x', id: 'x', svid: 'x', statistic: 'mean', window: { kind: 'context' } },
        value: 2.6,
        limits: { version: 1, center: 0, sigma: 1, lcl: -3, ucl: 3 },
        points: [
          { runId: 'run-2', value: 2.5 },
          { runId: 'run-4', value: 2.6 },
        ],
        action: 'ALARM',
        context,
      },
    ]);
  });

  it('flags the run that completes 8 on one side (WE4), citing all eight runs', () => {
    const { evaluations, rules } = feed(we, [-0.1, 0.2, 0.3, 0.1, 0.5, 0.2, 0.4, 0.1, 0.3], known);
    expect(rules.map((r) => r.join())).toEqual(['', '', '', '', '', '', '', '', 'WE4']);
    expect(evaluations[8].violations[0].points.map((p) => p.runId)).toEqual([
      'run-2',
      'run-3',
      'run-4',
      'run-5',
      'run-6',
      'run-7',
      'run-8',
      'run-9',
    ]);
  });

  it('does not mix limits versions: a re-baseline starts a new chart', () => {
    const seven = feed(we, [0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1], known);
    // Control: under the same limits the 8th point above the centre completes WE4.
    expect(feed(we, [0.1], known, seven.history).rules).toEqual([['WE4']]);
    const v2 = knownLimits(we.indicators[0].chart, 0, 1, { frozenAt: at, version: 2 });
    expect(feed(we, [0.1], v2, seven.history).rules).toEqual([[]]);
  });

  it('checks one-sided spec limits on the raw value, even before a baseline', () => {
    const s = strategyWith({ spec: { usl: 10 } });
    const { evaluations, rules } = feed(s, [9, 10, 10.5, -1000]);
    expect(rules).toEqual([[], [], ['SPEC_USL'], []]);
    expect(evaluations[2].violations[0]).toMatchObject({
      value: 10.5,
      limits: { version: null, usl: 10 },
      points: [{ runId: 'run-3', value: 10.5 }],
    });
    expect(evaluations[0].record.points['x'].limitsVersion).toBeNull();
  });
});

describe('evaluate: actions and escalation', () => {
  const s = strategyWith(
    { rules: ['WE1'] },
    { escalation: [{ alarms: 2, withinRuns: 5, action: 'HOLD_CHAMBER' }] },
  );
  const known = knownLimits(s.indicators[0].chart, 0, 1, { frozenAt: at });

  it('holds the chamber on the 2nd alarm within the last 5 runs', () => {
    const { evaluations } = feed(s, [4, 0, 0, 0, 4], known);
    expect(evaluations[0].actions.map((a) => a.type)).toEqual(['ALARM']);
    expect(evaluations[4].actions).toEqual([
      { type: 'ALARM', violations: evaluations[4].violations },
      { type: 'HOLD_CHAMBER', reasons: ['escalation: 2 alarmed runs in the last 5 (threshold 2)'] },
    ]);
  });

  it('does not hold when the earlier alarm is outside the window, or the current run is clean', () => {
    const { evaluations } = feed(s, [4, 0, 0, 0, 0, 4, 0], known);
    expect(evaluations[5].actions.map((a) => a.type)).toEqual(['ALARM']);
    expect(evaluations[6].actions).toEqual([]);
  });

  it('holds at once when the violated indicator says HOLD_CHAMBER', () => {
    const hold = strategyWith({ rules: ['WE1'], action: 'HOLD_CHAMBER' }, { escalation: [] });
    const { evaluations } = feed(hold, [5], knownLimits(hold.indicators[0].chart, 0, 1, { frozenAt: at }));
    expect(evaluations[0].actions[1]).toEqual({
      type: 'HOLD_CHAMBER',
      reasons: ['violation with action HOLD_CHAMBER: x WE1'],
    });
    expect(evaluations[0].violations[0].action).toBe('HOLD_CHAMBER');
  });
});

describe('evaluate: EWMA and CUSUM carry their state in the stored points', () => {
  it('EWMA: reproduces the NIST 6.3.2.4 series run by run, then signals a shift on exact limits', () => {
    const s = strategyWith({ chart: { type: 'ewma', lambda: 0.3, L: 3 } });
    const lim = knownLimits(s.indicators[0].chart, 50, 2.0539, { frozenAt: at });
    const data = [
      52.0, 47.0, 53.0, 49.3, 50.1, 47.0, 51.0, 50.1, 51.2, 50.5, 49.6, 47.6, 49.9, 51.3, 47.8, 51.2, 52.6,
      52.4, 53.6, 52.1,
    ];
    const { evaluations, rules, history } = feed(s, data, lim);
    const expected = ewmaSeries(data, { lambda: 0.3, L: 3, center: 50, sigma: 2.0539 });
    evaluations.forEach((e, i) => expect(e.record.points['x'].ewma).toBeCloseTo(expected.z[i], 12));
    expect(rules.flat()).toEqual([]);
    const shifted = feed(s, [53, 54], lim, history); // z: 52.29 (inside), 52.80 (> UCL 52.588)
    expect(shifted.rules).toEqual([[], ['EWMA']]);
    // The exact limit of the 22nd point since the limits were frozen.
    expect(shifted.evaluations[1].violations[0].limits.ucl).toBeCloseTo(
      50 + ewmaHalfWidth({ lambda: 0.3, L: 3, center: 50, sigma: 2.0539 }, 22),
      12,
    );
    expect(shifted.evaluations[1].record.points['x'].ewmaIndex).toBe(22);
  });

  it('CUSUM: signals NIST 6.3.2.3 groups 14-20 and cites the excursion since the sum left zero', () => {
    const s = strategyWith({ chart: { type: 'cusum', k: 0.5, h: 4.1959 / 0.635 } });
    const lim = knownLimits(s.indicators[0].chart, 325, 0.635, { frozenAt: at });
    const data = [
      324.925, 324.675, 324.725, 324.35, 325.35, 325.225, 324.125, 324.525, 325.225, 324.6, 324.625, 325.15,
      328.325, 327.25, 327.825, 328.5, 326.675, 327.775, 326.875, 328.35,
    ];
    const { evaluations, rules } = feed(s, data, lim);
    expect(rules.flatMap((r, i) => (r.length ? [`${i + 1}:${r.join()}`] : []))).toEqual(
      [14, 15, 16, 17, 18, 19, 20].map((g) => `${g}:CUSUM_UPPER`),
    );
    const first = evaluations[13].violations[0];
    expect(first.points.map((p) => p.runId)).toEqual(['run-13', 'run-14']);
    expect(first.value * 0.635).toBeCloseTo(4.94, 2); // NIST S_hi at group 14
    expect(first.limits.h).toBeCloseTo(6.6077, 4);
  });
});

describe('evaluate: attribute charts', () => {
  it('u chart: limits follow each run exposure; an invalid exposure is skipped, not thrown', () => {
    const s = strategyWith({ statistic: 'n_missing', chart: { type: 'u' }, rules: ['WE1'] });
    const lim = knownLimits(s.indicators[0].chart, 0.02, NaN, { frozenAt: at });
    // 5 missing of 100 samples: u = 0.05; UCL(100) = 0.02 + 3 sqrt(0.02 / 100) = 0.0624 -> in control.
    // 5 missing of 40 samples: u = 0.125; UCL(40) = 0.02 + 3 sqrt(0.02 / 40) = 0.0871 -> beyond.
    const { evaluations, rules } = feed(
      s,
      [
        { value: 5, exposure: 100 },
        { value: 5, exposure: 40 },
        { value: 5, exposure: 0 },
      ],
      lim,
    );
    expect(rules).toEqual([[], ['WE1'], []]);
    expect(evaluations[1].violations[0].limits.ucl).toBeCloseTo(0.02 + 3 * Math.sqrt(0.02 / 40), 12);
    expect(evaluations[1].violations[0].value).toBe(0.125);
    expect(evaluations[2].skipped).toEqual([
      { key: 'x', reason: 'invalid-exposure', detail: 'u chart needs a size > 0 (>= count), got 0' },
    ]);
  });
});

describe('evaluate: bad readings never throw', () => {
  it('skips unknown indicators, missing values and limits of another chart type', () => {
    const s = strategyWith({});
    const ewmaLimits = knownLimits({ type: 'ewma', lambda: 0.2, L: 3, sigmaMethod: 'moving-range' }, 0, 1, {
      frozenAt: at,
    });
    const e = evaluate(
      { runs: [], limits: { x: ewmaLimits } },
      {
        runId: 'r1',
        readings: [
          { key: 'nope', indicatorId: 'nope', svid: 'x', value: 1 },
          {
            key: 'x',
            indicatorId: 'x',
            svid: 'x',
            missing: { reason: 'no-valid-samples', detail: 'all 10 samples are NaN/Inf' },
          },
          { key: 'x', indicatorId: 'x', svid: 'x', value: 1 },
        ],
      },
      s,
    );
    expect(e.skipped.map((k) => k.reason)).toEqual([
      'unknown-indicator',
      'no-value',
      'limits-chart-mismatch',
    ]);
    expect(e.skipped[1].detail).toBe('no-valid-samples: all 10 samples are NaN/Inf');
    expect(e.record.points).toEqual({});
    expect(e.actions).toEqual([]);
  });
});

describe('baseline lifecycle and trace readings', () => {
  it('collects Phase I points, freezes limits at minRuns, then judges later runs against them', () => {
    const s = strategyWith({ baseline: { minRuns: 20 } });
    const cfg = s.indicators[0];
    const phase1 = Array.from({ length: 20 }, (_, i) => 10 + (i % 2 ? 0.1 : -0.1));
    let { history } = feed(s, phase1.slice(0, 19));
    expect(maybeEstablishBaseline(history, 'x', cfg, { frozenAt: at })).toBeUndefined();
    history = feed(s, phase1.slice(19), undefined, history).history;
    expect(phaseOneSamples(history, 'x')).toHaveLength(20);
    const limits = maybeEstablishBaseline(history, 'x', cfg, { frozenAt: at });
    expect(limits).toMatchObject({ version: 1, center: 10, frozenAt: at });
    expect(limits?.sigma).toBeCloseTo(0.2 / 1.128, 12);
    const next = feed(s, [11], limits, history);
    expect(next.rules).toEqual([['WE1']]);
    expect(maybeEstablishBaseline(next.history, 'x', cfg, { frozenAt: at })).toBeUndefined();
  });

  it('turns a trace into readings: wildcard SVIDs, missing readings, exposure for p charts', () => {
    const trace = createTrace({
      runId: 'r',
      timing: { kind: 'regular', startSeconds: 0, frequencyHz: 2 },
      svids: { a: Float64Array.of(1, 2, NaN, 4), b: Float64Array.of(NaN, NaN, NaN, NaN) },
    });
    const calc = new IndicatorCalculator();
    expect(readingsFromTrace(trace, WESTERN_ELECTRIC, calc)).toEqual([
      { key: 'mean/a', indicatorId: 'mean', svid: 'a', value: expect.closeTo(7 / 3, 12) },
      {
        key: 'mean/b',
        indicatorId: 'mean',
        svid: 'b',
        missing: { reason: 'no-valid-samples', detail: 'all 4 samples are NaN/Inf' },
      },
      { key: 'std/a', indicatorId: 'std', svid: 'a', value: expect.closeTo(Math.sqrt(7 / 3), 12) },
      {
        key: 'std/b',
        indicatorId: 'std',
        svid: 'b',
        missing: { reason: 'no-valid-samples', detail: 'all 4 samples are NaN/Inf' },
      },
    ]);
    const p = strategyWith({ svid: 'a', statistic: 'n_missing', chart: { type: 'p' } });
    expect(readingsFromTrace(trace, p, calc)).toEqual([
      { key: 'x', indicatorId: 'x', svid: 'a', value: 1, exposure: 4 },
    ]);
    const u = strategyWith({
      svid: 'a',
      statistic: 'n_missing',
      chart: { type: 'u' },
      exposure: 'window-seconds',
    });
    expect(readingsFromTrace(trace, u, calc)).toEqual([
      { key: 'x', indicatorId: 'x', svid: 'a', value: 1, exposure: 1.5 },
    ]);
  });

  it('says how much history it needs', () => {
    expect(requiredHistoryRuns(WESTERN_ELECTRIC)).toBe(20);
    expect(requiredHistoryRuns(strategyWith({ rules: ['nelson'], baseline: { minRuns: 5 } }))).toBe(15);
  });
});
