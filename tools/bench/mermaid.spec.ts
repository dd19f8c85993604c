import { timeline, xyChart } from './mermaid';

describe('xyChart', () => {
  it('writes a fenced xychart-beta block: categories, the y range with headroom, one row per series, a legend', () => {
    const out = xyChart({
      title: 'Runs per second by speed',
      categories: ['4x', '8x', '16x'],
      xTitle: 'speed',
      yTitle: 'runs/s',
      series: [
        { kind: 'bar', label: 'offered', values: [18.2, 36.5, 72.9] },
        { kind: 'line', label: 'processed', values: [17.8, 35, 72.8] },
      ],
    });
    expect(out.split('\n')).toEqual([
      '```mermaid',
      'xychart-beta',
      '    title "Runs per second by speed"',
      '    x-axis "speed" ["4x", "8x", "16x"]',
      '    y-axis "runs/s" 0 --> 80.19',
      '    bar [18.2, 36.5, 72.9]',
      '    line [17.8, 35, 72.8]',
      '```',
      '',
      '<sub>bars: offered; line 1: processed</sub>',
    ]);
  });

  it('draws nothing without categories or series, and refuses a series of the wrong length', () => {
    expect(xyChart({ title: 't', categories: [], yTitle: 'y', series: [{ kind: 'line', label: 'a', values: [] }] })).toBe('');
    expect(xyChart({ title: 't', categories: ['a'], yTitle: 'y', series: [] })).toBe('');
    expect(() => xyChart({ title: 't', categories: ['a', 'b'], yTitle: 'y', series: [{ kind: 'line', label: 'a', values: [1] }] })).toThrow(RangeError);
  });

  it('keeps quotes out of labels and non-finite values out of the data', () => {
    const out = xyChart({ title: 'say "hi"', categories: ['a"b'], yTitle: 'y', series: [{ kind: 'line', label: 'l', values: [Number.NaN] }] });
    expect(out).toContain('title "say  hi"');
    expect(out).toContain('["a b"]');
    expect(out).toContain('line [0]');
    expect(out).toContain('y-axis "y" 0 --> 1');
  });
});

describe('timeline', () => {
  it('orders events, opens a section when it changes and joins events at the same time', () => {
    const out = timeline('Crash: fault to recovery', [
      { t: 3.28, section: 'recovery', text: 'every orphaned chamber running again' },
      { t: 1.501, section: 'fault', text: 'sigkill pod-33 (defender-5)' },
      { t: 3.236, section: 'cluster', text: 'map v4 published (crash): 11 chambers moved' },
      { t: 3.2361, section: 'cluster', text: 'leader; answers' },
    ]);
    expect(out.split('\n')).toEqual([
      '```mermaid',
      'timeline',
      '    title Crash fault to recovery',
      '    section fault',
      '        1.50 s : sigkill pod-33 (defender-5)',
      '    section cluster',
      '        3.24 s : map v4 published (crash) 11 chambers moved : leader answers',
      '    section recovery',
      '        3.28 s : every orphaned chamber running again',
      '```',
    ]);
  });

  it('shows at most `limit` events and says how many were left out; nothing for no events', () => {
    const events = Array.from({ length: 5 }, (_, i) => ({ t: i, section: 's', text: `e${i}` }));
    const out = timeline('t', events, 3);
    expect(out).toContain('2.00 s : e2');
    expect(out).not.toContain('e3');
    expect(out).toContain('The first 3 of 5 events');
    expect(timeline('t', [])).toBe('');
  });
});
