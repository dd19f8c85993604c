import type { LimitSetRecord, RunPointSet } from '@defender/contracts';
import { describeFlags, POINT_FLAGS } from '@defender/pipeline';

/** One plotted point of a U-chart. */
export interface ChartPoint {
  readonly sequence: number;
  readonly runId: string;
  readonly committedAt: string;
  readonly value: number;
  /** Version of the limits it was judged against (absent in Phase I). */
  readonly limitsVersion: number | null;
  /** A rule fired on this point. */
  readonly violation: boolean;
  /** The rules that fired (`WE1`, `N5`, `SPEC_USL`, ...). */
  readonly rules: readonly string[];
  /** The limits were frozen with this run (end of Phase I). */
  readonly newLimits: boolean;
  /** The run alarmed / put the chamber on hold (any of its indicators). */
  readonly runAlarmed: boolean;
  readonly runHold: boolean;
}

export interface ChartLimits {
  readonly version: number;
  readonly chartType: string;
  readonly center: number;
  readonly sigma: number | null;
  readonly lcl: number | null;
  readonly ucl: number | null;
  readonly createdAt: string;
  readonly baselineRuns: number;
  readonly excludedRuns: number;
  readonly reason: string;
}

/** The U-chart of one indicator: its points over the chamber's last runs and its current limits. */
export interface ChartView {
  readonly indicatorKey: string;
  readonly recipe: string;
  /** Indicator id of the strategy (`mean`, `std`, ...). */
  readonly indicator: string;
  readonly svid: string | null;
  readonly limits: ChartLimits | null;
  readonly points: readonly ChartPoint[];
  readonly violations: number;
  /** All values equal (a setpoint or state SVID: no variation, no limits). */
  readonly constant: boolean;
}

/** `<recipe>|<id>[/<svid>]` -> parts (the run evaluator's store key). */
export function parseIndicatorKey(key: string): { recipe: string; indicator: string; svid: string | null } {
  const bar = key.indexOf('|');
  const recipe = bar >= 0 ? key.slice(0, bar) : '';
  const rest = bar >= 0 ? key.slice(bar + 1) : key;
  const slash = rest.indexOf('/');
  return slash >= 0 ? { recipe, indicator: rest.slice(0, slash), svid: rest.slice(slash + 1) } : { recipe, indicator: rest, svid: null };
}

const RULE_NAMES = new Set<string>(Object.keys(POINT_FLAGS).filter((n) => /^(N\d|WE\d|EWMA|CUSUM_|SPEC_|OTHER_RULE)/.test(n)));

function limitsOf(l: LimitSetRecord): ChartLimits {
  return {
    version: l.version,
    chartType: l.chartType,
    center: l.center,
    sigma: l.sigma,
    lcl: l.lcl,
    ucl: l.ucl,
    createdAt: l.createdAt.toISOString(),
    baselineRuns: l.baseline.runIds.length,
    excludedRuns: l.baseline.excludedRunIds.length,
    reason: l.baseline.reason,
  };
}

/**
 * U-charts of a chamber from its committed runs (oldest first) and current limit sets: one chart per
 * indicator key. Charts with limits or violations come first (by SVID, then indicator); constant
 * charts (setpoints: no variation, never limited) are dropped unless `includeConstant`.
 */
export function buildCharts(runs: readonly RunPointSet[], limits: readonly LimitSetRecord[], opts: { includeConstant?: boolean } = {}): { charts: ChartView[]; hiddenConstant: number } {
  const byKey = new Map<string, ChartPoint[]>();
  for (const run of runs) {
    const runFlags = run.points.reduce((acc, p) => acc | p.flags, 0);
    for (const p of run.points) {
      const rules = describeFlags(p.flags).filter((n) => RULE_NAMES.has(n));
      const pt: ChartPoint = {
        sequence: run.sequence,
        runId: run.runId,
        committedAt: run.committedAt.toISOString(),
        value: p.value,
        limitsVersion: p.limitsVersion ?? null,
        violation: (p.flags & POINT_FLAGS.VIOLATION) !== 0,
        rules,
        newLimits: (p.flags & POINT_FLAGS.NEW_LIMITS) !== 0,
        runAlarmed: (runFlags & POINT_FLAGS.RUN_ALARMED) !== 0,
        runHold: (runFlags & POINT_FLAGS.RUN_HOLD) !== 0,
      };
      const list = byKey.get(p.indicatorKey);
      if (list) list.push(pt);
      else byKey.set(p.indicatorKey, [pt]);
    }
  }
  const limitByKey = new Map(limits.map((l) => [l.indicatorKey, l]));
  for (const key of limitByKey.keys()) if (!byKey.has(key)) byKey.set(key, []);
  const charts: ChartView[] = [];
  let hidden = 0;
  for (const [key, points] of byKey) {
    const l = limitByKey.get(key);
    const first = points[0];
    const constant = first !== undefined && points.length > 1 && points.every((p) => p.value === first.value);
    const violations = points.filter((p) => p.violation).length;
    if (constant && !l && violations === 0 && !opts.includeConstant) {
      hidden++;
      continue;
    }
    const parts = parseIndicatorKey(key);
    charts.push({ indicatorKey: key, ...parts, limits: l ? limitsOf(l) : null, points, violations, constant });
  }
  charts.sort((a, b) => Number(b.limits !== null) - Number(a.limits !== null) || (a.svid ?? '').localeCompare(b.svid ?? '') || a.indicator.localeCompare(b.indicator) || a.recipe.localeCompare(b.recipe));
  return { charts, hiddenConstant: hidden };
}
