import type { Excursion } from './excursions';
import { alarmSvids, scoreDetection, type ObservedAlarm } from './score';

const x = (id: string, chamber: string, kind: Excursion['kind'], startRun: number, endRun: number, svid = 'P', svid2?: string): Excursion => {
  const [toolId, chamberId] = chamber.split(':') as [string, string];
  return { id, chamber, toolId, chamberId, svid, ...(svid2 ? { svid2 } : {}), kind, startRun, endRun, size: 2, target: { svid, statistic: 'mean' }, magnitude: 1, description: '' };
};
const alarm = (chamber: string, run: number, svid = 'P', ruleId = 'WE1'): ObservedAlarm => {
  const [toolId, chamberId] = chamber.split(':') as [string, string];
  return { toolId, chamberId, runId: `s-r${String(run + 1).padStart(4, '0')}`, ruleId, indicatorKey: `R|mean/${svid}`, svid, statistic: 'mean' };
};
const runOf = (_t: string, _c: string, runId: string) => (runId.startsWith('s-r') ? Number(runId.slice(3)) - 1 : undefined);

describe('scoreDetection', () => {
  const excursions = [x('x1', 'A:1', 'mean-shift', 25, 30), x('x2', 'B:1', 'drift', 30, 39), x('x3', 'C:1', 'spike', 40, 40)];
  const published = new Map([
    ['A:1', 50],
    ['B:1', 50],
    ['C:1', 50],
    ['D:1', 50],
  ]);

  it('detects by the first alarm on the SVID inside the window (plus grace), counts the delay in runs, and the rest as false alarms', () => {
    const s = scoreDetection({
      excursions,
      alarms: [
        alarm('A:1', 26), // x1, delay 1
        alarm('A:1', 25, 'Q'), // other SVID: false
        alarm('B:1', 36), // x2, delay 6
        alarm('B:1', 34), // x2, delay 4 (earlier)
        alarm('C:1', 44), // after spike + grace 3: false
        alarm('D:1', 22),
        alarm('D:1', 22, 'P', 'WE2'), // same run: one false run, two false alarms
        { ...alarm('D:1', 30), runId: 'other-session-r0031' }, // not ours
      ],
      runOf,
      publishedRuns: published,
      phaseOneRuns: 20,
      graceRuns: 3,
    });
    expect(s.injected).toBe(3);
    expect(s.detected).toBe(2);
    expect(s.excursions.map((e) => [e.excursion.id, e.detected, e.delayRuns])).toEqual([
      ['x1', true, 1],
      ['x2', true, 4],
      ['x3', false, null],
    ]);
    expect(s.byKind['mean-shift']).toEqual({ injected: 1, detected: 1, meanDelay: 1, maxDelay: 1 });
    expect(s.byKind.spike).toEqual({ injected: 1, detected: 0, meanDelay: null, maxDelay: null });
    expect(s.alarms).toBe(7);
    expect(s.falseAlarms).toBe(4);
    expect(s.falseAlarmRuns).toBe(3);
    // 4 chambers x 30 monitored runs, minus the windows with grace: A 9, B 13, C 4.
    expect(s.inControlRuns).toBe(120 - 9 - 13 - 4);
    expect(s.falseAlarmRunRate).toBeCloseTo(3 / 94, 9);
  });

  it('counts an alarm on either sensor of a correlated pair as its detection', () => {
    const pair = x('x9', 'E:1', 'correlated-pair', 30, 35, 'P', 'Q');
    const s = scoreDetection({
      excursions: [pair],
      alarms: [alarm('E:1', 31, 'Q'), alarm('E:1', 32, 'R')],
      runOf,
      publishedRuns: new Map([['E:1', 50]]),
      phaseOneRuns: 20,
      graceRuns: 3,
    });
    expect(s.excursions.map((e) => [e.detected, e.delayRuns])).toEqual([[true, 1]]);
    expect(s.falseAlarms).toBe(1);
  });

  it('counts a run-level alarm for every SVID its violations and their contributors name', () => {
    const ex = x('x9', 'E:1', 'mean-shift', 30, 33, 'Q');
    const run = (run: number, details: unknown): ObservedAlarm => ({ ...alarm('E:1', run, 'P', 'RUN'), details });
    const s = scoreDetection({
      excursions: [ex],
      alarms: [
        run(31, { violations: [{ rule: 'T2', contributions: [{ svid: 'P' }, { svid: 'Q' }] }] }),
        run(40, { violations: [{ rule: 'LIMIT', svid: 'Q' }] }),
      ],
      runOf,
      publishedRuns: new Map([['E:1', 50]]),
      phaseOneRuns: 20,
      graceRuns: 3,
    });
    expect(s.excursions.map((e) => [e.detected, e.delayRuns])).toEqual([[true, 1]]);
    expect(s.falseAlarms).toBe(1);
    expect(alarmSvids({ ...alarm('E:1', 1, 'P', 'RUN'), details: { violations: [{ svid: 'R', contributions: [{ svid: 'S' }, {}] }, 'junk'] } })).toEqual(new Set(['P', 'R', 'S']));
  });
});
