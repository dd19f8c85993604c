import type { DetectionMetrics } from './detection-metrics';
import { targetLines, targetVerdicts } from './report';

/** Detection metrics with the figures of docs/local-fab.md's example summary, overridable. */
function metrics(over: { perChamber?: Partial<DetectionMetrics['perChamber']>; big?: Partial<DetectionMetrics['big']>; holdsPer1k?: number; cleanInControlRuns?: number } = {}): DetectionMetrics {
  return {
    inControlRuns: 2034,
    falseAlarmRuns: 18,
    falseAlarmRate: 18 / 2034,
    perChamber: { chambers: 42, mean: 0.009, worst: 0.06, worstChamber: 'ETCH04:PM2', ...over.perChamber },
    cleanChambers: 34,
    cleanInControlRuns: over.cleanInControlRuns ?? 1700,
    cleanHolds: 0,
    holdsPer1k: over.holdsPer1k ?? 0,
    excursions: [],
    cells: [],
    big: { minSize: 2, injected: 5, detected: 3, rate: 0.6, delayMean: 0, delayP90: 0, ...over.big },
    all: { injected: 8, detected: 5, rate: 5 / 8 },
  };
}

/** Issue 52, item 5: the simulator's summary says which targets the run met. */
describe('the summary says which targets were met', () => {
  it('one line per target with the figure, the target and met / MISSED, and a count first', () => {
    expect(targetLines(metrics())).toEqual([
      '  targets           3 of 5 met',
      '    false alarms    0.9% of in-control runs (mean per chamber) <= 1 %: met',
      '    worst chamber   6.0% (ETCH04:PM2) <= 2 %: MISSED',
      '    holds           0.00 per 1,000 runs on chambers without an excursion <= 0.1: met',
      '    caught          3 of 5 excursions of 2 sd or more (60.0%) >= 95 %: MISSED',
      '    delay p90       0 runs <= 3: met',
    ]);
  });

  it('at the limits a target is met; without the runs to measure it, it is "not measured", not met', () => {
    expect(targetVerdicts(metrics({ perChamber: { mean: 0.01, worst: 0.02 }, holdsPer1k: 0.1, big: { detected: 19, injected: 20, rate: 0.95, delayP90: 3 } })).map((v) => v.met)).toEqual([true, true, true, true, true]);
    expect(targetVerdicts(metrics({ big: { detected: 0, injected: 0, rate: 0, delayP90: null } })).map((v) => [v.target, v.met])).toEqual([
      ['false alarms', true],
      ['worst chamber', false],
      ['holds', true],
      ['caught', null],
      ['delay p90', null],
    ]);
    expect(targetLines(metrics({ big: { detected: 0, injected: 0, rate: 0, delayP90: null } }))[0]).toBe('  targets           2 of 3 met (2 not measured in this run)');
    expect(targetLines(metrics({ big: { detected: 0, injected: 0, rate: 0, delayP90: null } }))[4]).toBe('    caught          0 of 0 excursions of 2 sd or more >= 95 %: not measured');
  });
});
