import type { LimitSetRecord, RunPointSet } from '@defender/contracts';
import { POINT_FLAGS } from '@defender/pipeline';
import { buildCharts, parseIndicatorKey } from './chamber-view';

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
