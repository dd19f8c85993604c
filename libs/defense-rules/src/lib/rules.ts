/**
 * Run rules for Shewhart-type charts (individuals, p, np, c, u).
 *
 * Semantics (Nelson 1984; Western Electric 1956), identical for every rule:
 * - A rule flags the point that completes the pattern, judged on that point and earlier ones only; a
 *   pattern needs its full window (2-of-3 needs three points).
 * - Comparisons are strict: "beyond k sigma" is (x - centre) > k sigma; a point on a limit or on the
 *   centre line is not beyond it and not on either side of the centre.
 * - Zone rules count one side of the centre at a time, and the completing point must itself be beyond
 *   the zone on that side.
 * - Zones use each point's own centre and sigma (attribute charts with a varying size have varying
 *   limits).
 */

/** A charted point as the rules see it (all in the charted statistic's unit). */
export interface ZonedPoint {
  readonly value: number;
  readonly center: number;
  readonly sigma: number;
  readonly lcl: number;
  readonly ucl: number;
}

/** A run rule with its counts. `id` names it in violations (e.g. "N5", "WE2"). */
export type RunRule =
  | { readonly id: string; readonly kind: 'beyond-limits' }
  | { readonly id: string; readonly kind: 'same-side'; readonly run: number }
  | { readonly id: string; readonly kind: 'trend'; readonly run: number }
  | { readonly id: string; readonly kind: 'alternating'; readonly run: number }
  | {
      readonly id: string;
      readonly kind: 'zone';
      readonly count: number;
      readonly of: number;
      readonly sigmas: number;
    }
  | { readonly id: string; readonly kind: 'stratification'; readonly run: number; readonly sigmas: number }
  | { readonly id: string; readonly kind: 'mixture'; readonly run: number; readonly sigmas: number };

/** The kinds of run rule. */
export type RunRuleKind = RunRule['kind'];

/** Nelson's eight rules with their published counts. */
export const NELSON_RULES = {
  N1: { id: 'N1', kind: 'beyond-limits' },
  N2: { id: 'N2', kind: 'same-side', run: 9 },
  N3: { id: 'N3', kind: 'trend', run: 6 },
  N4: { id: 'N4', kind: 'alternating', run: 14 },
  N5: { id: 'N5', kind: 'zone', count: 2, of: 3, sigmas: 2 },
  N6: { id: 'N6', kind: 'zone', count: 4, of: 5, sigmas: 1 },
  N7: { id: 'N7', kind: 'stratification', run: 15, sigmas: 1 },
  N8: { id: 'N8', kind: 'mixture', run: 8, sigmas: 1 },
} as const satisfies Record<string, RunRule>;

/** The Western Electric rules 1-4 (a preset of the same rule kinds; rule 4 is a run of 8). */
export const WESTERN_ELECTRIC_RULES = {
  WE1: { id: 'WE1', kind: 'beyond-limits' },
  WE2: { id: 'WE2', kind: 'zone', count: 2, of: 3, sigmas: 2 },
  WE3: { id: 'WE3', kind: 'zone', count: 4, of: 5, sigmas: 1 },
  WE4: { id: 'WE4', kind: 'same-side', run: 8 },
} as const satisfies Record<string, RunRule>;

/** Rule ids by name: N1..N8, WE1..WE4. */
export type RuleName = keyof typeof NELSON_RULES | keyof typeof WESTERN_ELECTRIC_RULES;

/** Every named rule. */
export const NAMED_RULES: Readonly<Record<RuleName, RunRule>> = {
  ...NELSON_RULES,
  ...WESTERN_ELECTRIC_RULES,
};

/** How many points (the newest included) a rule looks at. */
export function ruleWindow(rule: RunRule): number {
  switch (rule.kind) {
    case 'beyond-limits':
      return 1;
    case 'zone':
      return rule.of;
    default:
      return rule.run;
  }
}

/** A one-line description of a rule with its counts. */
export function describeRule(rule: RunRule): string {
  switch (rule.kind) {
    case 'beyond-limits':
      return 'one point beyond the control limits';
    case 'same-side':
      return `${rule.run} points in a row on the same side of the centre line`;
    case 'trend':
      return `${rule.run} points in a row steadily increasing or decreasing`;
    case 'alternating':
      return `${rule.run} points in a row alternating up and down`;
    case 'zone':
      return `${rule.count} of ${rule.of} points in a row beyond ${rule.sigmas} sigma on the same side`;
    case 'stratification':
      return `${rule.run} points in a row within ${rule.sigmas} sigma of the centre line`;
    case 'mixture':
      return `${rule.run} points in a row beyond ${rule.sigmas} sigma, on both sides`;
  }
}

const above = (p: ZonedPoint, k: number) => p.value - p.center > k * p.sigma;
const below = (p: ZonedPoint, k: number) => p.center - p.value > k * p.sigma;

function range(from: number, to: number): number[] {
  const out: number[] = [];
  for (let i = from; i <= to; i++) out.push(i);
  return out;
}

/**
 * Whether the newest point (`points[points.length - 1]`) completes the rule's pattern.
 *
 * @param points the chart's points under one set of limits, oldest first; only the last
 *   {@link ruleWindow} points are read.
 * @returns indices into `points` of the points forming the pattern (the newest last), or `null`.
 */
export function checkRule(rule: RunRule, points: readonly ZonedPoint[]): number[] | null {
  const last = points.length - 1;
  if (last < 0) return null;
  const cur = points[last];
  const w = ruleWindow(rule);
  if (points.length < w) return null;
  const first = last - w + 1;
  switch (rule.kind) {
    case 'beyond-limits':
      return cur.value > cur.ucl || cur.value < cur.lcl ? [last] : null;
    case 'same-side': {
      let up = true;
      let down = true;
      for (let i = first; i <= last && (up || down); i++) {
        const d = points[i].value - points[i].center;
        up &&= d > 0;
        down &&= d < 0;
      }
      return up || down ? range(first, last) : null;
    }
    case 'trend': {
      let up = true;
      let down = true;
      for (let i = first + 1; i <= last && (up || down); i++) {
        const d = points[i].value - points[i - 1].value;
        up &&= d > 0;
        down &&= d < 0;
      }
      return up || down ? range(first, last) : null;
    }
    case 'alternating': {
      for (let i = first + 1; i < last; i++) {
        const d1 = points[i].value - points[i - 1].value;
        const d2 = points[i + 1].value - points[i].value;
        if (!(d1 * d2 < 0)) return null;
      }
      return range(first, last);
    }
    case 'zone': {
      for (const side of [above, below]) {
        if (!side(cur, rule.sigmas)) continue;
        const hits: number[] = [];
        for (let i = first; i <= last; i++) if (side(points[i], rule.sigmas)) hits.push(i);
        if (hits.length >= rule.count) return hits;
      }
      return null;
    }
    case 'stratification': {
      for (let i = first; i <= last; i++) {
        const p = points[i];
        if (!(Math.abs(p.value - p.center) < rule.sigmas * p.sigma)) return null;
      }
      return range(first, last);
    }
    case 'mixture': {
      let anyAbove = false;
      let anyBelow = false;
      for (let i = first; i <= last; i++) {
        const a = above(points[i], rule.sigmas);
        const b = below(points[i], rule.sigmas);
        if (!a && !b) return null;
        anyAbove ||= a;
        anyBelow ||= b;
      }
      return anyAbove && anyBelow ? range(first, last) : null;
    }
  }
}

/** For each point of a series, whether the rule flags it (i.e. {@link checkRule} on the prefix ending there). */
export function flagSeries(rule: RunRule, points: readonly ZonedPoint[]): boolean[] {
  return points.map(
    (_, i) => checkRule(rule, points.slice(Math.max(0, i + 1 - ruleWindow(rule)), i + 1)) !== null,
  );
}
