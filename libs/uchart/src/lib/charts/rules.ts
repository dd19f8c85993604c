import { ChartConfigError } from '../errors';

/**
 * Western Electric rules as R qcc numbers them (`qcc(..., rules = 1:4)`, R/rules.R):
 * 1. one point beyond the control limits;
 * 2. two of three consecutive points beyond the 2-sigma zone limit on the same side;
 * 3. four of five consecutive points beyond the 1-sigma zone limit on the same side;
 * 4. eight consecutive points strictly on one side of the centre line.
 */
export type WesternElectricRule = 1 | 2 | 3 | 4;

/** qcc's default rule set: beyond limits and runs of eight (`rules = c(1, 4)`). */
export const DEFAULT_RULES: readonly WesternElectricRule[] = Object.freeze([1, 4]);

/** One charted point with its own limits (limits may vary with the subgroup size). */
export interface RulePoint {
  readonly statistic: number;
  readonly center: number;
  /** Standard error of the statistic at this point (the chart's sigma unit). */
  readonly sigma: number;
  readonly lcl: number;
  readonly ucl: number;
}

/**
 * The rule each point violates, null where none does. A point that violates several rules reports the
 * lowest-numbered one (qcc applies rules 4, 3, 2, 1 in turn, each overwriting the last).
 *
 * Rules 2 and 3 compare every point of the window with the zone limit of the window's last point
 * (centre +/- k nSigma sigma, k = 2/3 and 1/3), which must itself lie beyond it, as qcc's `embed`
 * comparison does; rule 4 flags the eighth point of a run and every later one, as qcc's
 * `qccRulesViolatingRun`. Limits and zones are strict: a point on a limit does not violate it.
 *
 * @throws {@link ChartConfigError} for a rule outside 1..4.
 */
export function westernElectricViolations(
  points: readonly RulePoint[],
  rules: readonly WesternElectricRule[],
  nSigma: number,
): (WesternElectricRule | null)[] {
  for (const r of rules) {
    if (r !== 1 && r !== 2 && r !== 3 && r !== 4)
      throw new ChartConfigError(`Western Electric rules are 1..4, got ${String(r)}`);
  }
  const out = new Array<WesternElectricRule | null>(points.length).fill(null);
  const mark = (rule: WesternElectricRule, hits: readonly number[]) => {
    for (const i of hits) out[i] = rule;
  };
  if (rules.includes(4)) mark(4, sameSideRuns(points, 8));
  if (rules.includes(3)) mark(3, zoneRuns(points, 4, 5, nSigma / 3));
  if (rules.includes(2)) mark(2, zoneRuns(points, 2, 3, (2 * nSigma) / 3));
  if (rules.includes(1)) {
    mark(
      1,
      points.flatMap((p, i) => (p.statistic > p.ucl || p.statistic < p.lcl ? [i] : [])),
    );
  }
  return out;
}

function zoneRuns(points: readonly RulePoint[], count: number, length: number, k: number): number[] {
  const hits: number[] = [];
  for (let i = length - 1; i < points.length; i++) {
    const last = points[i];
    const upper = last.center + k * last.sigma;
    const lower = last.center - k * last.sigma;
    let above = 0;
    let below = 0;
    for (let j = i - length + 1; j <= i; j++) {
      if (points[j].statistic > upper) above++;
      if (points[j].statistic < lower) below++;
    }
    if ((above >= count && last.statistic > upper) || (below >= count && last.statistic < lower))
      hits.push(i);
  }
  return hits;
}

function sameSideRuns(points: readonly RulePoint[], length: number): number[] {
  const hits: number[] = [];
  let side = 0;
  let run = 0;
  for (let i = 0; i < points.length; i++) {
    const d = points[i].statistic - points[i].center;
    const s = d > 0 ? 1 : d < 0 ? -1 : 0;
    run = s !== 0 && s === side ? run + 1 : s !== 0 ? 1 : 0;
    side = s;
    if (run >= length) hits.push(i);
  }
  return hits;
}
