import { chamberLoads, DEFAULT_COST_MODEL } from '@defender/assignment';
import type { Heartbeat } from '@defender/contracts';
import { LoadBook, MIN_CALIBRATION_RUNS } from './load-book';

function hb(id: string, report?: Heartbeat['loadReport']): Heartbeat {
  const t = new Date(0).toISOString();
  return { schema: 1, defenderId: id, state: 'STABLE', mapVersionSeen: 1, load: { chambers: 0, inflight: 0, processedTotal: 0 }, ...(report ? { loadReport: report } : {}), intervalSeconds: 2, startedAt: t, sentAt: t };
}

describe('LoadBook', () => {
  const chambers = [
    { key: 'a:1', weight: 100_000 },
    { key: 'b:1', weight: 100_000 },
  ];

  it('weights chambers by the rates defenders report, keeping a rate when its chamber moves', () => {
    const book = new LoadBook();
    book.observe([hb('defender-0', { fixedMsPerRun: 10, nsPerSample: 100, calibrationRuns: MIN_CALIBRATION_RUNS, cpuMsPerSecond: 250, rates: [['a:1', 30]] })]);
    book.observe([hb('defender-1', { fixedMsPerRun: 30, nsPerSample: 100, calibrationRuns: 3 * MIN_CALIBRATION_RUNS, cpuMsPerSecond: 50, rates: [['b:1', 3]] })]);
    expect(book.measuredChambers).toBe(2);
    // Only defender-1's fit is in the bucket now.
    expect(book.cost()).toEqual({ fixedMsPerRun: 30, nsPerSample: 100 });
    expect(book.loads(chambers)).toEqual(chamberLoads(chambers, new Map([['a:1', 30], ['b:1', 3]]), { fixedMsPerRun: 30, nsPerSample: 100 }));
    expect(book.cpuByDefender()).toEqual({ 'defender-1': 50 });
  });

  it('uses the prior until a defender has calibrated, and forgets chambers that are gone', () => {
    const book = new LoadBook();
    book.observe([hb('defender-0', { fixedMsPerRun: 1, nsPerSample: 1, calibrationRuns: MIN_CALIBRATION_RUNS - 1, cpuMsPerSecond: 0, rates: [['a:1', 30], ['gone:1', 5]] }), hb('defender-1')]);
    expect(book.cost()).toEqual(DEFAULT_COST_MODEL);
    book.loads(chambers.slice(0, 1));
    expect(book.measuredChambers).toBe(1);
  });
});
