import { ChartConfigError } from '../errors';
import { qcc } from './qcc';
import { DEFAULT_RULES, westernElectricViolations, type RulePoint } from './rules';

/** Points with centre 0, standard error 1 and limits -/+ 3. */
const points = (values: readonly number[]): RulePoint[] =>
  values.map((statistic) => ({ statistic, center: 0, sigma: 1, lcl: -3, ucl: 3 }));
const all = [1, 2, 3, 4] as const;

describe('Western Electric rules (as R qcc numbers and applies them)', () => {
  it('rule 1: strictly beyond a limit; a point on a limit is inside', () => {
    expect(westernElectricViolations(points([3, 3.01, -3.01, -3]), [1], 3)).toEqual([null, 1, 1, null]);
  });

  it('rule 2: two of three beyond 2 sigma on one side, the last of them among the two', () => {
    expect(westernElectricViolations(points([2.5, 0, 2.5]), all, 3)).toEqual([null, null, 2]);
    // Windows are whole (the first ends at the third point, as qcc's embed) and the window's last
    // point must itself be beyond: 0, 2.5, 2.5, 0 flags the third point only.
    expect(westernElectricViolations(points([2.5, 2.5]), all, 3)).toEqual([null, null]);
    expect(westernElectricViolations(points([0, 2.5, 2.5, 0]), all, 3)).toEqual([null, null, 2, null]);
    // Opposite sides do not add up; two on one side do, whatever lies between.
    expect(westernElectricViolations(points([-2.5, 0, 2.5]), all, 3)).toEqual([null, null, null]);
    expect(westernElectricViolations(points([2.5, -2.5, 2.5]), all, 3)).toEqual([null, null, 2]);
  });

  it('rule 3: four of five beyond 1 sigma on one side', () => {
    expect(westernElectricViolations(points([1.5, 1.5, 0, 1.5, 1.5]), all, 3)).toEqual([
      null,
      null,
      null,
      null,
      3,
    ]);
    expect(westernElectricViolations(points([-1.5, -1.5, -1.5, 0, -1.5]), all, 3)).toEqual([
      null,
      null,
      null,
      null,
      3,
    ]);
  });

  it('rule 4: the eighth point of a run on one side and every later one; a point on the centre breaks it', () => {
    const run = [0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0, 0.5];
    expect(westernElectricViolations(points(run), [4], 3)).toEqual([
      ...Array(7).fill(null),
      4,
      4,
      null,
      null,
    ]);
  });

  it('the lowest rule number wins where several apply; only the requested rules are reported', () => {
    const v = [0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 3.5];
    expect(westernElectricViolations(points(v), all, 3)[7]).toBe(1);
    expect(westernElectricViolations(points(v), [4], 3)[7]).toBe(4);
    expect(westernElectricViolations(points([2.5, 2.5]), DEFAULT_RULES, 3)).toEqual([null, null]);
    expect(() => westernElectricViolations(points([1]), [5 as never], 3)).toThrow(ChartConfigError);
  });

  it("zones scale with nSigma and with each point's own standard error", () => {
    // nSigma 2: the rule 2 zone is 4/3 sigma.
    expect(westernElectricViolations(points([0, 1.4, 1.4]), [2], 2)).toEqual([null, null, 2]);
    const wide = points([0, 2.5, 2.5]).map((p) => ({ ...p, sigma: 2, lcl: -6, ucl: 6 }));
    expect(westernElectricViolations(wide, [2], 3)).toEqual([null, null, null]);
  });

  it('qcc() reports beyond-limit points and runs separately, with the default rules 1 and 4', () => {
    // Ten individual values with a run of eight above the centre after two low values.
    const values = [0, 0, 10, 10.5, 10, 10.5, 10, 10.5, 10, 10.5];
    const chart = qcc(values, { type: 'xbar.one', center: 5, stdDev: 10 });
    expect(chart.rules).toEqual([1, 4]);
    expect(chart.violations.beyondLimits).toEqual([]);
    expect(chart.violations.violatingRuns).toEqual([9]);
    const withOutlier = qcc([...values, 50], { type: 'xbar.one', center: 5, stdDev: 10 });
    expect(withOutlier.violations.beyondLimits).toEqual([10]);
    expect(withOutlier.violations.violatingRuns).toEqual([9]);
  });
});
