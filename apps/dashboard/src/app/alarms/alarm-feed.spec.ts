import { loadPageRender, rowsOf } from '../../testing/page';
import { feedItemOf } from './alarm-feed.service';

/** A run-level alarm of the chamber monitor as a defender publishes it (the pipeline's `monitorAlarm` plus the run). */
const runAlarm = {
  ruleId: 'RUN',
  indicatorKey: 'R1|m:model',
  action: 'ALARM',
  value: 52.5,
  ucl: 18.25,
  recipe: 'R1',
  svid: 'Flow',
  statistic: 'mean',
  step: 'Main',
  message: 'T2+LIMIT on ETCH01:PM2 run r9 (recipe R1): 3 violations: ...',
  details: {
    kind: 'run',
    toolId: 'ETCH01',
    chamberId: 'PM2',
    runId: 'r9',
    sequence: 9,
    recipe: 'R1',
    modelVersion: 1,
    rules: ['T2', 'LIMIT'],
    t2: 52.5,
    spe: 3.1,
    violations: [
      {
        rule: 'T2',
        indicatorKey: 'R1|m:model',
        value: 52.5,
        limit: 18.25,
        contributions: [
          { indicatorKey: 'R1|m/Flow@Main:mean', share: 0.62, svid: 'Flow', window: 'Main', statistic: 'mean' },
          { indicatorKey: 'R1|m/Pressure@Main:p95', share: 0.21, svid: 'Pressure', window: 'Main', statistic: 'p95' },
          { indicatorKey: 'R1|m/Flow@Ramp:slope', share: 0.09, svid: 'Flow', window: 'Ramp', statistic: 'slope' },
          { indicatorKey: 'R1|m/RF@Main:std', share: 0.04, svid: 'RF', window: 'Main', statistic: 'std' },
        ],
      },
      { rule: 'LIMIT', indicatorKey: 'R1|m/Flow@Main:mean', svid: 'Flow', window: 'Main', statistic: 'mean', value: 231, lcl: 170, ucl: 228, center: 199 },
      { rule: 'LIMIT', indicatorKey: 'R1|m/Flow@Main:max', svid: 'Flow', window: 'Main', statistic: 'max', value: 240, lcl: 175, ucl: 236, center: 205 },
    ],
  },
  toolId: 'ETCH01',
  chamberId: 'PM2',
  runId: 'r9',
  sequence: 9,
  epoch: 1,
  ownerId: 'defender-0',
};

describe('feedItemOf', () => {
  const at = new Date(Date.UTC(2026, 0, 1));
  it('reads alarms and holds from their subjects and payloads', () => {
    expect(feedItemOf('defense.alarms.ETCH01.PM2', 7, at, JSON.stringify({ runId: 'r1', sequence: 40, ruleId: 'WE2', svid: 'P', statistic: 'mean', value: 3.5, lcl: 1, ucl: 3, center: 2, action: 'ALARM', message: 'm' }))).toEqual({
      kind: 'alarm',
      seq: 7,
      at: at.toISOString(),
      chamber: 'ETCH01:PM2',
      toolId: 'ETCH01',
      chamberId: 'PM2',
      runId: 'r1',
      sequence: 40,
      recipe: null,
      ruleId: 'WE2',
      indicatorKey: null,
      svid: 'P',
      statistic: 'mean',
      value: 3.5,
      lcl: 1,
      ucl: 3,
      center: 2,
      action: 'ALARM',
      message: 'm',
    });
    expect(feedItemOf('defense.holds.T.C', 8, at, JSON.stringify({ runId: 'r2', reason: 'escalation' }))).toMatchObject({ kind: 'hold', action: 'HOLD_CHAMBER', message: 'escalation' });
  });

  it('skips what it cannot read', () => {
    expect(feedItemOf('defense.alarms.T.C', 1, at, 'not json')).toBeNull();
    expect(feedItemOf('dc.T.C.completed', 1, at, '{}')).toBeNull();
  });

  it('reads a run-level alarm of the chamber monitor: its rules, T² and SPE, every violation, the top contributors', () => {
    const item = feedItemOf('defense.alarms.ETCH01.PM2', 9, at, JSON.stringify(runAlarm));
    expect(item).toMatchObject({ kind: 'alarm', ruleId: 'RUN', runId: 'r9', sequence: 9, indicatorKey: 'R1|m:model', svid: 'Flow', statistic: 'mean', value: 52.5, ucl: 18.25 });
    expect(item?.run).toEqual({
      modelVersion: 1,
      rules: ['T2', 'LIMIT'],
      t2: 52.5,
      t2Limit: 18.25,
      spe: 3.1,
      speLimit: null,
      violations: [
        expect.objectContaining({ rule: 'T2', label: 'model', value: 52.5, limit: 18.25, contributions: expect.arrayContaining([{ indicatorKey: 'R1|m/Flow@Main:mean', label: 'Flow mean in Main', meaning: 'Flow in step Main: its mean level', share: 0.62 }]) }),
        expect.objectContaining({ rule: 'LIMIT', label: 'Flow mean in Main', value: 231, lcl: 170, ucl: 228, contributions: [] }),
        expect.objectContaining({ rule: 'LIMIT', label: 'Flow max in Main' }),
      ],
      top: [
        { indicatorKey: 'R1|m/Flow@Main:mean', label: 'Flow mean in Main', meaning: 'Flow in step Main: its mean level', share: 0.62, rule: 'T2' },
        { indicatorKey: 'R1|m/Pressure@Main:p95', label: 'Pressure p95 in Main', meaning: 'Pressure in step Main: its 95th percentile (a robust high)', share: 0.21, rule: 'T2' },
        { indicatorKey: 'R1|m/Flow@Ramp:slope', label: 'Flow slope in Ramp', meaning: 'Flow in step Ramp: its slope (per second)', share: 0.09, rule: 'T2' },
      ],
    });
    // Without the monitor's details (an older producer) it is an ordinary alarm line.
    expect(feedItemOf('defense.alarms.ETCH01.PM2', 10, at, JSON.stringify({ ...runAlarm, details: undefined }))).not.toHaveProperty('run');
  });
});

describe('alarm feed lines (assets/render.js)', () => {
  const render = loadPageRender();
  const at = new Date(Date.UTC(2026, 0, 1, 8, 30, 5));

  it('a run-level alarm is one line: the rules that fired, the run, its top contributors, T² and SPE', () => {
    const item = feedItemOf('defense.alarms.ETCH01.PM2', 9, at, JSON.stringify(runAlarm));
    expect(rowsOf(render.alarmRow(item))).toEqual([
      ['08:30:05', 'ETCH01:PM2', 'r9', 'RUN T²+LIMIT', 'Flow mean in Main 62% · Pressure p95 in Main 21% · Flow slope in Ramp 9.0% (+2 violations)', 'T² 52.5 SPE 3.1', 'T² ≤ 18.25', 'ALARM'],
    ]);
    expect(render.miniRow(item)).toContain('T²+LIMIT: Flow mean in Main 62% · Pressure p95 in Main 21% · Flow slope in Ramp 9.0%');
  });

  it('legacy alarms and holds keep their line: rule, SVID and statistic, value, limits', () => {
    const legacy = feedItemOf('defense.alarms.ETCH01.PM2', 7, at, JSON.stringify({ runId: 'r1', sequence: 40, ruleId: 'WE2', svid: 'P', statistic: 'mean', value: 3.5, lcl: 1, ucl: 3, center: 2, action: 'ALARM', message: 'm' }));
    const hold = feedItemOf('defense.holds.ETCH01.PM2', 8, at, JSON.stringify({ runId: 'r2', reason: 'escalation: 2 alarms in 5 runs' }));
    expect(rowsOf(render.alarmRow(legacy) + render.alarmRow(hold))).toEqual([
      ['08:30:05', 'ETCH01:PM2', 'r1', 'WE2', 'P · mean', '3.5', '1 … 3', 'ALARM'],
      ['08:30:05', 'ETCH01:PM2', 'r2', 'HOLD', 'escalation: 2 alarms in 5 runs', '', '', 'HOLD_CHAMBER'],
    ]);
  });
});
