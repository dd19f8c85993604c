import { MAX_RATES_PER_HEARTBEAT, parseHeartbeat } from './heartbeat';
import { InvalidMessageError } from './parse';

const base = {
  schema: 1,
  defenderId: 'defender-1',
  state: 'STABLE',
  mapVersionSeen: 3,
  load: { chambers: 2, inflight: 0, processedTotal: 10 },
  intervalSeconds: 2,
  startedAt: '2026-01-01T00:00:00.000Z',
  sentAt: '2026-01-01T00:00:02.000Z',
};
const report = (n: number) => ({
  fixedMsPerRun: 38.2,
  nsPerSample: 81.6,
  calibrationRuns: 120,
  cpuMsPerSecond: 350,
  rates: Array.from({ length: n }, (_, i) => [`tool${i}:chamber1`, 3.3]),
});

describe('heartbeat load report', () => {
  it('carries the cost fit, the CPU and a bounded page of chamber run rates', () => {
    const hb = parseHeartbeat(JSON.stringify({ ...base, loadReport: report(MAX_RATES_PER_HEARTBEAT) }));
    expect(hb.loadReport?.rates).toHaveLength(MAX_RATES_PER_HEARTBEAT);
    expect(new TextEncoder().encode(JSON.stringify(hb)).length).toBeLessThan(4096);
    expect(parseHeartbeat(JSON.stringify(base)).loadReport).toBeUndefined();
  });

  it('refuses more rates than the bound, a bad key or a rate that is not positive', () => {
    expect(() => parseHeartbeat(JSON.stringify({ ...base, loadReport: report(MAX_RATES_PER_HEARTBEAT + 1) }))).toThrow(InvalidMessageError);
    expect(() => parseHeartbeat(JSON.stringify({ ...base, loadReport: { ...report(0), rates: [['no-colon', 1]] } }))).toThrow(InvalidMessageError);
    expect(() => parseHeartbeat(JSON.stringify({ ...base, loadReport: { ...report(0), rates: [['a:b', 0]] } }))).toThrow(InvalidMessageError);
    expect(() => parseHeartbeat(JSON.stringify({ ...base, loadReport: { ...report(0), nsPerSample: -1 } }))).toThrow(InvalidMessageError);
  });
});
