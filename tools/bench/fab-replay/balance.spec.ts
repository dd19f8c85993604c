import { cpuBalance, judgeOverload } from './balance';

describe('cpuBalance', () => {
  it('measures the largest deviation of a defender from the defenders\' mean, ignoring other processes', () => {
    const b = cpuBalance(
      [
        { name: 'defender pod-0', cpuPct: 31 },
        { name: 'defender pod-1', cpuPct: 99 },
        { name: 'nats-server', cpuPct: 400 },
      ],
      0.1,
    );
    expect(b.meanPct).toBe(65);
    expect(b.maxDeviation).toBeCloseTo(34 / 65, 10);
    expect(b.furthest).toBe('defender pod-1');
    expect(b.within).toBe(false);
  });

  it('is within a ±10 % band at 95 / 105 and outside it at 88 / 112', () => {
    expect(cpuBalance([{ name: 'defender a', cpuPct: 95 }, { name: 'defender b', cpuPct: 105 }], 0.1).within).toBe(true);
    expect(cpuBalance([{ name: 'defender a', cpuPct: 88 }, { name: 'defender b', cpuPct: 112 }], 0.1).within).toBe(false);
  });

  it('judges nothing when no defender used CPU or none was measured', () => {
    expect(cpuBalance([], 0.1).within).toBe(false);
    expect(cpuBalance([{ name: 'defender a', cpuPct: 0 }], 0.1)).toMatchObject({ within: false, furthest: undefined });
    expect(cpuBalance([{ name: 'defender a', cpuPct: NaN }], 0.1).within).toBe(false);
  });
});

describe('judgeOverload', () => {
  const ok = { processedRate: 104, sustainedProcessedRate: 102, mapChanges: 0, peakRssMb: 280, rssTargetMb: 300, deadLettered: 0, lost: 0 };

  it('is graceful when throughput holds at capacity with no map, memory within target, nothing lost', () => {
    expect(judgeOverload(ok)).toEqual({ graceful: true, reasons: [] });
  });

  it('names every way the seeds\' collapse shows (throughput fell, defenders judged dead, RSS over target)', () => {
    const v = judgeOverload({ ...ok, processedRate: 67, mapChanges: 5, peakRssMb: 324 });
    expect(v.graceful).toBe(false);
    expect(v.reasons).toEqual(['processed 67.0 runs/s < the sustained 102.0', '5 maps published', 'defender RSS 324 MB > 300 MB']);
  });

  it('counts lost and dead-lettered runs as a failure', () => {
    expect(judgeOverload({ ...ok, lost: 1, deadLettered: 2 }).reasons).toEqual(['2 runs dead-lettered', '1 runs lost']);
  });
});
