import { effectsFor, EXCURSION_SHAPES, parseKinds, planExcursions, type Excursion } from './excursions';
import { generateFab } from './fab';

describe('planExcursions', () => {
  const fab = generateFab({ tools: 20, seed: 2 });

  it('puts one excursion on each of N distinct chambers, after Phase I, inside the runs, kinds in turn', () => {
    const xs = planExcursions(fab, { count: 8, afterRun: 25, runsPerChamber: 50, seed: 2 });
    expect(xs).toHaveLength(8);
    expect(new Set(xs.map((x) => x.chamber)).size).toBe(8);
    expect(xs.map((x) => x.kind)).toEqual(['mean-shift', 'drift', 'spike', 'variance-burst', 'mean-shift', 'drift', 'spike', 'variance-burst']);
    for (const x of xs) {
      expect(x.startRun).toBeGreaterThanOrEqual(25);
      expect(x.endRun).toBeLessThan(50);
      expect(x.endRun - x.startRun + 1).toBe(EXCURSION_SHAPES[x.kind].runs);
      const ch = fab.chambers.find((c) => c.key === x.chamber)!;
      expect(ch.sensors.map((s) => s.name)).toContain(x.svid);
    }
  });

  it('plans fewer when the runs leave no room, and only the kinds asked for', () => {
    expect(planExcursions(fab, { count: 4, afterRun: 25, runsPerChamber: 30, seed: 1 }).map((x) => x.kind)).toEqual(['spike', 'variance-burst', 'spike', 'variance-burst']);
    expect(planExcursions(fab, { count: 4, afterRun: 25, runsPerChamber: 25, seed: 1 })).toEqual([]);
    expect(planExcursions(fab, { count: 3, kinds: ['spike'], afterRun: 20, runsPerChamber: 40, seed: 1 }).every((x) => x.kind === 'spike')).toBe(true);
  });
});

describe('effectsFor', () => {
  const x = (kind: Excursion['kind'], magnitude: number): Excursion => ({ id: kind, chamber: 'T:C', toolId: 'T', chamberId: 'C', svid: 'P', kind, startRun: 10, endRun: 13, magnitude, description: '' });

  it.each([
    ['mean-shift', 3, 9, undefined],
    ['mean-shift', 3, 10, { offsetSigmas: 3, noiseFactor: 1 }],
    ['mean-shift', 3, 14, undefined],
    ['drift', 0.5, 10, { offsetSigmas: 0.5, noiseFactor: 1 }],
    ['drift', 0.5, 13, { offsetSigmas: 2, noiseFactor: 1 }],
    ['spike', 7, 12, { offsetSigmas: 7, noiseFactor: 1 }],
    ['variance-burst', 3, 11, { offsetSigmas: 0, noiseFactor: 3 }],
  ] as const)('%s x%d on run %d', (kind, m, run, want) => {
    expect(effectsFor([x(kind, m)], run).get('P')).toEqual(want);
  });

  it('parses kinds', () => {
    expect(parseKinds('drift, spike')).toEqual(['drift', 'spike']);
    expect(() => parseKinds('drift,melt')).toThrow(/unknown excursion kind "melt"/);
  });
});
