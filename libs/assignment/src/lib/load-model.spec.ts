import fc from 'fast-check';
import {
  balanceOf,
  chamberLoadMsPerHour,
  chamberLoads,
  computeAssignment,
  CostCalibrator,
  DEFAULT_COST_MODEL,
  DEFAULT_PRIOR_RUNS_PER_HOUR,
  InvalidAssignmentInputError,
  RateMeter,
} from '../index';
import { seededRandom } from '@defender/hashing';
import { defenders, fab } from '../test/fab';

describe('load model', () => {
  it('a chamber costs run rate x (fixed + per sample x samples)', () => {
    expect(chamberLoadMsPerHour(10, 1_000_000, { fixedMsPerRun: 40, nsPerSample: 80 })).toBeCloseTo(10 * (40 + 80), 9);
  });

  it('measured rates weigh chambers; the median measured rate is the prior of the others', () => {
    const samples = [
      { key: 'a:1', weight: 120_000 },
      { key: 'b:1', weight: 120_000 },
      { key: 'c:1', weight: 120_000 },
      { key: 'd:1', weight: 120_000 },
    ];
    const loads = chamberLoads(samples, new Map([['a:1', 30], ['b:1', 3], ['c:1', 10]]));
    const byKey = Object.fromEntries(loads.map((c) => [c.key, c.weight]));
    const perRun = chamberLoadMsPerHour(1, 120_000, DEFAULT_COST_MODEL) * 1000;
    expect(byKey['a:1']).toBe(Math.round(30 * perRun));
    expect(byKey['b:1']).toBe(Math.round(3 * perRun));
    expect(byKey['d:1']).toBe(Math.round(10 * perRun)); // median of 30, 3, 10
    const none = chamberLoads(samples, new Map());
    expect(none[0]!.weight).toBe(Math.round(DEFAULT_PRIOR_RUNS_PER_HOUR * perRun));
  });

  it('a chamber with few samples but many runs outweighs a big one that rarely runs', () => {
    const loads = chamberLoads(
      [
        { key: 'small:1', weight: 30_000 },
        { key: 'big:1', weight: 3_600_000 },
      ],
      new Map([['small:1', 60], ['big:1', 2]]),
    );
    expect(loads[0]!.weight).toBeGreaterThan(loads[1]!.weight);
  });

  it('rejects a bad cost model or prior, listing every problem', () => {
    let error: unknown;
    try {
      chamberLoads([], new Map(), { fixedMsPerRun: -1, nsPerSample: Number.NaN }, 0);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(InvalidAssignmentInputError);
    expect((error as InvalidAssignmentInputError).problems).toHaveLength(3);
  });
});

describe('RateMeter', () => {
  it('is the inverse of the mean interval, fading once a run is overdue', () => {
    const m = new RateMeter(0.5);
    expect(m.runsPerHour(0)).toBeUndefined();
    m.run(0);
    expect(m.runsPerHour(0)).toBeUndefined();
    m.run(60_000);
    expect(m.runsPerHour(60_000)).toBeCloseTo(60, 9);
    m.run(180_000); // interval 120 s: mean 90 s
    expect(m.runsPerHour(180_000)).toBeCloseTo(40, 9);
    expect(m.runsPerHour(180_000 + 360_000)).toBeCloseTo(10, 9); // 6 min without a run
    m.run(100_000); // out of order: ignored
    expect(m.count).toBe(3);
  });

  it('converges to the true rate under jittered intervals (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 120 }), fc.integer(), (perHour, seed) => {
        const rnd = seededRandom(seed);
        const m = new RateMeter(0.1);
        const mean = 3_600_000 / perHour;
        let t = 0;
        for (let k = 0; k < 400; k++) {
          t += mean * (0.8 + 0.4 * rnd());
          m.run(t);
        }
        const r = m.runsPerHour(t)!;
        expect(Math.abs(r / perHour - 1)).toBeLessThan(0.1);
      }),
      { seed: 8101, numRuns: 100 },
    );
  });
});

describe('CostCalibrator', () => {
  it('recovers fixed and per-sample cost from mixed intervals', () => {
    const truth = { fixedMsPerRun: 12, nsPerSample: 150 };
    const c = new CostCalibrator();
    const rnd = seededRandom(7);
    for (let k = 0; k < 200; k++) {
      const runs = 1 + Math.floor(rnd() * 10);
      const samples = runs * (30_000 + rnd() * 3_000_000);
      c.add(runs * truth.fixedMsPerRun + (samples * truth.nsPerSample) / 1e6, runs, samples);
    }
    const m = c.model();
    expect(m.fixedMsPerRun).toBeCloseTo(12, 6);
    expect(m.nsPerSample).toBeCloseTo(150, 6);
  });

  it('takes the idle CPU measured between runs off the intervals with runs', () => {
    const c = new CostCalibrator();
    const rnd = seededRandom(8);
    for (let k = 0; k < 300; k++) {
      // Idle process: 20 ms of CPU per second (timers, heartbeats); every third 2 s interval has no run.
      const runs = k % 3 === 0 ? 0 : 1 + Math.floor(rnd() * 5);
      const samples = runs * (30_000 + rnd() * 3_000_000);
      c.add(2 * 20 + runs * 12 + (samples * 150) / 1e6, runs, samples, 2);
    }
    expect(c.idleCpuMsPerSecond).toBeCloseTo(20, 9);
    expect(c.model().fixedMsPerRun).toBeCloseTo(12, 6);
    expect(c.model().nsPerSample).toBeCloseTo(150, 6);
  });

  it('scales the prior when runs of one size cannot tell the parts apart', () => {
    const prior = { fixedMsPerRun: 40, nsPerSample: 80 };
    const c = new CostCalibrator(prior);
    expect(c.model()).toEqual(prior);
    // Every run 100,000 samples and 2x the prior's cost.
    for (let k = 0; k < 20; k++) c.add(2 * 3 * (40 + 8), 3, 300_000);
    const m = c.model();
    expect(m.fixedMsPerRun).toBeCloseTo(80, 6);
    expect(m.nsPerSample).toBeCloseTo(160, 6);
    c.add(Number.NaN, 1, 1);
    c.add(5, 0, 0);
    expect(c.runs).toBe(60);
  });
});

describe('balanceOf', () => {
  it('reports load against the targets the engine balances to', () => {
    const chambers = fab(400, 3);
    const r = computeAssignment(null, chambers, defenders(4));
    const b = balanceOf(r.assignments, chambers, defenders(4));
    expect(b.maxRatio).toBeCloseTo(r.stats.maxLoadRatio, 9);
    expect(b.minRatio).toBeCloseTo(r.stats.minLoadRatio, 9);
    expect(Object.values(b.load).reduce((a, x) => a + x, 0)).toBe(r.stats.totalWeight);
  });
});
