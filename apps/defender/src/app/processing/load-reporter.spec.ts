import { MAX_RATES_PER_HEARTBEAT, parseHeartbeat } from '@defender/contracts';
import { DEFAULT_COST_MODEL } from '@defender/assignment';
import { LoadReporter } from './load-reporter';

describe('LoadReporter', () => {
  it('measures run rates per chamber and fits its CPU cost per run and per sample', () => {
    let now = 0;
    let cpu = 0;
    const r = new LoadReporter(() => now, () => cpu);
    const first = r.report();
    expect(first).toMatchObject({ ...DEFAULT_COST_MODEL, calibrationRuns: 0, rates: [] });
    // 50 heartbeat intervals of 2 s; runs of two sizes; CPU = 10 ms/run + 100 ns/sample.
    for (let k = 0; k < 50; k++) {
      const sizes = k % 2 === 0 ? [100_000, 2_000_000] : [100_000, 100_000, 100_000];
      for (const s of sizes) {
        r.evaluated(s);
        cpu += 10 + (s * 100) / 1e6;
      }
      r.applied('fast:1');
      if (k % 10 === 0) r.applied('slow:1');
      now += 2_000;
      r.report();
    }
    const rep = r.report();
    expect(rep.fixedMsPerRun).toBeCloseTo(10, 6);
    expect(rep.nsPerSample).toBeCloseTo(100, 6);
    expect(rep.calibrationRuns).toBe(125);
    const rates = Object.fromEntries(rep.rates);
    expect(rates['fast:1']).toBeCloseTo(1800, 6); // one run every 2 s
    expect(rates['slow:1']).toBeCloseTo(180, 6); // one every 20 s
  });

  it('reports at most a page of rates per heartbeat, every owned chamber in turn, and forgets released ones', () => {
    let now = 0;
    const r = new LoadReporter(() => now, () => 0);
    const n = MAX_RATES_PER_HEARTBEAT * 2 + 10;
    for (const t of [0, 1_000]) {
      now = t;
      for (let i = 0; i < n; i++) r.applied(`tool${i}:ch1`);
    }
    const seen = new Set<string>();
    for (let k = 0; k < 3; k++) {
      const rep = r.report();
      expect(rep.rates.length).toBeLessThanOrEqual(MAX_RATES_PER_HEARTBEAT);
      for (const [key] of rep.rates) seen.add(key);
      // The value fits the heartbeat schema.
      const t = new Date(0).toISOString();
      expect(parseHeartbeat(JSON.stringify({ schema: 1, defenderId: 'defender-0', state: 'STABLE', mapVersionSeen: 1, load: { chambers: n, inflight: 0, processedTotal: 0 }, loadReport: rep, intervalSeconds: 2, startedAt: t, sentAt: t })).loadReport).toEqual(rep);
    }
    expect(seen.size).toBe(n);
    r.release([...seen].slice(0, n - 1));
    expect(r.report().rates.map(([k]) => k)).toEqual([[...seen][n - 1]]);
  });
});
