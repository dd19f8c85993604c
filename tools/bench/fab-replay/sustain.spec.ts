import { DEFAULT_THRESHOLDS, judgeStep, median, nextSpeed, slope, type StepObservation } from './sustain';

const flat = (n: number, runs: number) => Array.from({ length: n }, (_, t) => ({ t, runs }));

function step(over: Partial<StepObservation> = {}): StepObservation {
  return {
    windowSeconds: 60,
    scheduledRuns: 600,
    publishedRuns: 600,
    backlog: flat(60, 3),
    lags: Array.from({ length: 600 }, (_, i) => ({ t: i / 10, lagMs: 150 })),
    drainSeconds: 0.4,
    deadLettered: 0,
    lost: 0,
    ...over,
  };
}

describe('slope and median', () => {
  it('fits a line', () => {
    expect(slope([{ x: 0, y: 1 }, { x: 1, y: 3 }, { x: 2, y: 5 }])).toBeCloseTo(2);
    expect(slope([{ x: 1, y: 4 }])).toBe(0);
    expect(slope([{ x: 1, y: 4 }, { x: 1, y: 9 }])).toBe(0);
  });
  it('takes the middle', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 2, 3])).toBe(2.5);
    expect(median([])).toBeNaN();
  });
});

describe('judgeStep', () => {
  it('accepts a bounded backlog and a flat lag', () => {
    const v = judgeStep(step());
    expect(v).toMatchObject({ sustained: true, reasons: [], offeredRate: 10 });
    expect(v.backlogSlope).toBeCloseTo(0);
  });

  it('accepts a noisy but bounded backlog', () => {
    const backlog = Array.from({ length: 60 }, (_, t) => ({ t, runs: t % 7 === 0 ? 25 : 2 }));
    expect(judgeStep(step({ backlog })).sustained).toBe(true);
  });

  it('rejects a growing backlog', () => {
    const backlog = Array.from({ length: 60 }, (_, t) => ({ t, runs: 2 * t }));
    const v = judgeStep(step({ backlog }));
    expect(v.sustained).toBe(false);
    expect(v.reasons.join()).toMatch(/backlog grew 2\.00 runs\/s/);
  });

  it('rejects a growing lag', () => {
    const lags = Array.from({ length: 600 }, (_, i) => ({ t: i / 10, lagMs: 100 + i * 20 }));
    const v = judgeStep(step({ lags }));
    expect(v.sustained).toBe(false);
    expect(v.reasons.join()).toMatch(/lag grew/);
  });

  it('rejects a publisher that could not keep up, losses, dead letters and a slow drain', () => {
    expect(judgeStep(step({ publishedRuns: 400 })).reasons.join()).toMatch(/only 400 of 600/);
    expect(judgeStep(step({ lost: 1 })).reasons).toEqual(['1 runs not committed']);
    expect(judgeStep(step({ deadLettered: 2 })).reasons).toEqual(['2 runs dead-lettered']);
    expect(judgeStep(step({ drainSeconds: 30 })).reasons.join()).toMatch(/30\.0 s to drain \(limit 12 s\)/);
    expect(judgeStep(step({ drainSeconds: Infinity })).reasons).toEqual(['the backlog did not drain']);
  });

  it('takes a trend of a few runs for noise', () => {
    // 0.15 runs/s over 60 s is 9 runs: under the 10-run floor, though 15 % of the offered 1 run/s.
    const backlog = Array.from({ length: 60 }, (_, t) => ({ t, runs: 0.15 * t }));
    expect(judgeStep(step({ publishedRuns: 60, scheduledRuns: 60, backlog })).sustained).toBe(true);
    expect(DEFAULT_THRESHOLDS.minBacklogGrowthRuns).toBe(10);
    // At 10 runs/s offered: 2 % is 0.2 runs/s (12 runs over the window, above the 10-run floor): 0.8 runs/s is a trend.
    const growing = Array.from({ length: 60 }, (_, t) => ({ t, runs: 0.8 * t }));
    expect(judgeStep(step({ backlog: growing })).reasons.join()).toMatch(/backlog grew 0\.80 runs\/s \(limit 0\.20\)/);
  });
});

describe('nextSpeed', () => {
  const o = { start: 2, max: 40, growth: 2, refine: 2, min: 0.25 };
  const run = (judge: (s: number) => boolean) => {
    const tried: { speed: number; sustained: boolean }[] = [];
    for (let s = nextSpeed(tried, o); s !== undefined; s = nextSpeed(tried, o)) {
      tried.push({ speed: s, sustained: judge(s) });
      if (tried.length > 20) throw new Error('no end');
    }
    return tried.map((t) => `${t.speed}${t.sustained ? '+' : '-'}`);
  };

  it('grows until a failure, then bisects twice', () => {
    expect(run((s) => s <= 6)).toEqual(['2+', '4+', '8-', '5.66+', '6.73-']);
  });
  it('stops at the maximum when everything passes', () => {
    expect(run(() => true)).toEqual(['2+', '4+', '8+', '16+', '32+', '40+']);
  });
  it('halves when the start fails, then bisects', () => {
    expect(run((s) => s <= 0.7)).toEqual(['2-', '1-', '0.5+', '0.71-', '0.6+']);
  });
  it('gives up below the minimum', () => {
    expect(run(() => false)).toEqual(['2-', '1-', '0.5-', '0.25-']);
  });
});
