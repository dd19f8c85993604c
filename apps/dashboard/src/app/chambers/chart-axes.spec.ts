import fc from 'fast-check';
import { elementsOf, loadPageRender } from '../../testing/page';

const render = loadPageRender();

/** The value of each labelled tick of a chart's markup, in order. */
const ticksOf = (svg: string): number[] => elementsOf(svg).filter((e) => e.attrs['data-tick'] !== undefined).map((e) => Number(e.attrs['data-tick']));

/** Issue 52, item 1: y-axes with round ticks, not only 0 and the maximum. */
describe('chart axes (assets/render.js)', () => {
  it.each([
    [0, 1, [0, 0.2, 0.4, 0.6, 0.8, 1]],
    [97.3, 103.1, [98, 100, 102]],
    [0, 34.5, [0, 10, 20, 30]],
    [-0.0042, 0.0031, [-0.004, -0.002, 0, 0.002]],
    [1e6, 4.2e6, [1e6, 2e6, 3e6, 4e6]],
  ])('ticks from %p to %p are %p', (lo, hi, ticks) => {
    expect(render.yTicks(lo, hi)).toEqual(ticks);
  });

  it('no ticks for an empty or unreadable range', () => {
    expect(render.yTicks(1, 1)).toEqual([]);
    expect(render.yTicks(2, 1)).toEqual([]);
    expect(render.yTicks(Number.NaN, 1)).toEqual([]);
  });

  // Ranges at least a millionth of their magnitude wide: a chart's labels show 4 digits, and its range
  // is padded by 8 % of the values' spread (1 % of their level when they are flat).
  it('every range gets 2 to 11 ticks, inside it, equally spaced by 1, 2 or 5 x 10^k (property)', () => {
    fc.assert(
      fc.property(fc.double({ min: -1e9, max: 1e9, noNaN: true }), fc.double({ min: 1e-6, max: 1e9, noNaN: true }), (lo, width) => {
        const hi = lo + width;
        fc.pre(hi > lo && width >= Math.max(Math.abs(lo), Math.abs(hi)) * 1e-6);
        const t = render.yTicks(lo, hi);
        expect(t.length).toBeGreaterThanOrEqual(2);
        expect(t.length).toBeLessThanOrEqual(11);
        const step = (t[1] ?? 0) - (t[0] ?? 0);
        const mantissa = step / Math.pow(10, Math.floor(Math.log10(step) + 1e-9));
        expect([1, 2, 5, 10].some((m) => Math.abs(mantissa - m) < 1e-6 * m)).toBe(true);
        for (const v of t) {
          expect(v).toBeGreaterThanOrEqual(lo - Math.abs(step) * 1e-6);
          expect(v).toBeLessThanOrEqual(hi + Math.abs(step) * 1e-6);
        }
      }),
      { seed: 52, numRuns: 500 },
    );
  });

  it("an indicator's chart labels round ticks across its values and limits", () => {
    const points = [10.2, 10.6, 9.9, 10.4].map((value, i) => ({ runId: `r${i}`, sequence: i + 1, value, limitsVersion: 1, violation: false, rules: [] }));
    const svg = render.chartSvg({ indicatorKey: 'pressure', points, limits: { center: 10.3, ucl: 11, lcl: 9.6, sigma: 0.23, chartType: 'individuals' } });
    // Values and limits span 9.6-11, drawn from 9.49 to 11.11 (8 % padding): ticks 0.5 apart.
    expect(ticksOf(svg)).toEqual([9.5, 10, 10.5, 11]);
  });

  it("a monitor chart's axis starts at 0 and reaches its limit", () => {
    const points = [3.1, 5.7, 2.2].map((t2, i) => ({ runId: `r${i}`, sequence: i + 1, t2, spe: null, mewma: null, limitsVersion: 1, newLimits: false, rules: [], runAlarmed: false, runHold: false }));
    const ticks = ticksOf(render.monitorSvg({ recipe: 'R1', points, limits: { t2: 12.5, spe: null, mewma: null } }, 'T2'));
    expect(ticks[0]).toBe(0);
    expect(ticks.at(-1)).toBeGreaterThanOrEqual(10);
  });
});
