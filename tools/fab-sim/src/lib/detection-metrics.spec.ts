import { detectionLine, detectionMetrics, nearestRank, type RunOutcome } from './detection-metrics';
import type { Excursion } from './excursions';

function excursion(id: string, chamber: string, startRun: number, endRun: number, size: number, kind = 'mean-shift'): Excursion {
  const [toolId = '', chamberId = ''] = chamber.split(':');
  return {
    id,
    chamber,
    toolId,
    chamberId,
    svid: 'P',
    kind: kind as Excursion['kind'],
    startRun,
    endRun,
    size,
    target: { svid: 'P', statistic: 'mean' },
    magnitude: 1,
    description: '',
  };
}

function runs(chamber: string, n: number, alarmedAt: readonly number[], heldAt: readonly number[] = [], judgedFrom = 0): RunOutcome[] {
  return Array.from({ length: n }, (_, i) => ({
    chamber,
    runIndex: i,
    judged: i >= judgedFrom,
    alarmed: alarmedAt.includes(i),
    held: heldAt.includes(i),
  }));
}

describe('detectionMetrics', () => {
  it('scores false alarms per chamber outside excursions and their recovery runs, holds on clean chambers only', () => {
    const xs = [excursion('x1', 'A:1', 40, 45, 2), excursion('x2', 'A:1', 70, 70, 1, 'spike')];
    const all = [
      // A:1: judged from run 20; alarms at 42 (x1, delay 2), 48 (recovery: not false), 60 (false), 71 (after x2: recovery)
      ...runs('A:1', 100, [42, 48, 60, 71], [60], 20),
      // B:1 clean: alarms at 30 and 90, a hold at 90
      ...runs('B:1', 100, [30, 90], [90], 20),
    ];
    const m = detectionMetrics(all, xs, { recoveryRuns: 5 });
    // A:1 in-control judged runs: 80 judged minus [40..50] (11) minus [70..75] (6) = 63
    expect(m.inControlRuns).toBe(63 + 80);
    expect(m.falseAlarmRuns).toBe(1 + 2);
    expect(m.perChamber.chambers).toBe(2);
    expect(m.perChamber.worst).toBeCloseTo(2 / 80);
    expect(m.perChamber.worstChamber).toBe('B:1');
    expect(m.perChamber.mean).toBeCloseTo((1 / 63 + 2 / 80) / 2);
    expect(m.cleanChambers).toBe(1);
    expect(m.cleanInControlRuns).toBe(80);
    expect(m.cleanHolds).toBe(1);
    expect(m.holdsPer1k).toBeCloseTo(12.5);
    expect(m.excursions.map((o) => [o.excursion.id, o.detected, o.delayRuns])).toEqual([
      ['x1', true, 2],
      ['x2', false, null],
    ]);
    expect(m.big).toEqual({ minSize: 2, injected: 1, detected: 1, rate: 1, delayMean: 2, delayP90: 2 });
    expect(m.all).toEqual({ injected: 2, detected: 1, rate: 0.5 });
    expect(m.cells).toEqual([
      { kind: 'mean-shift', size: 2, injected: 1, detected: 1, delayMean: 2, delayP90: 2 },
      { kind: 'spike', size: 1, injected: 1, detected: 0, delayMean: null, delayP90: null },
    ]);
  });

  it('ignores Phase I runs and counts an alarm only on an affected run as a detection', () => {
    const xs = [excursion('x', 'A:1', 30, 32, 3)];
    const m = detectionMetrics(runs('A:1', 50, [5, 33], [], 20), xs, { recoveryRuns: 0 });
    expect(m.excursions[0]?.detected).toBe(false);
    // judged 30 runs, minus the 3 affected = 27; the alarm at 33 is false, the one at 5 is Phase I
    expect(m.inControlRuns).toBe(27);
    expect(m.falseAlarmRuns).toBe(1);
  });

  it('formats the benchmark line', () => {
    const m = detectionMetrics(runs('A:1', 10, [], [], 0), [excursion('x', 'A:1', 2, 3, 2)]);
    expect(detectionLine('default', m)).toBe(
      'detection: preset default false-alarms 0.0% worst-chamber 0.0% holds-per-1k 0.0 detected 0.0% delay-p90 n/a runs',
    );
  });

  it('nearest-rank percentiles', () => {
    expect(nearestRank([], 90)).toBeNull();
    expect(nearestRank([5, 1, 3, 2, 4, 6, 7, 8, 9, 10], 90)).toBe(9);
    expect(nearestRank([0], 90)).toBe(0);
  });
});
