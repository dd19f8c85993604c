import { stepCharts } from './charts';

const step = (speed: number, sustained: boolean, rss: number) => ({
  speed,
  offeredRate: speed * 4.5,
  processedRate: sustained ? speed * 4.5 : speed * 3,
  lagP50: 12,
  lagP99: sustained ? 80 : 2400,
  verdict: { sustained },
  procs: [
    { name: 'defender pod-0', peakRssMb: rss },
    { name: 'defender pod-1', peakRssMb: rss + 10 },
    { name: 'nats-server', peakRssMb: 100 },
  ],
});

describe('stepCharts', () => {
  it('charts throughput, lag and each defender\'s peak RSS per step, marking steps not sustained', () => {
    const out = stepCharts([step(4, true, 250), step(8, false, 280)], ['defender pod-0', 'defender pod-1']).join('\n');
    expect(out.match(/```mermaid\nxychart-beta/g)).toHaveLength(3);
    expect(out).toContain('x-axis "step: speed" ["1: 4x", "2: 8x (not sustained)"]');
    expect(out).toContain('bar [18, 36]');
    expect(out).toContain('line [18, 24]');
    expect(out).toContain('line [80, 2400]');
    expect(out).toContain('line [250, 280]');
    expect(out).toContain('line [260, 290]');
    expect(out).toContain('line 2: defender pod-1');
    expect(out).not.toContain('nats-server');
  });

  it('draws nothing without steps', () => {
    expect(stepCharts([], ['defender pod-0'])).toEqual([]);
  });
});
