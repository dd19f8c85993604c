/**
 * Judging a new run of a chamber against its strategy and history: chart points, spec limits, run rules,
 * EWMA / CUSUM signals, actions and escalation (readings.ts: the run's input; chamber-history.ts: the
 * history it reads).
 */
import {
  chartedStatistic,
  cusumCarry,
  cusumInitial,
  cusumNext,
  ewmaHalfWidth,
  ewmaNext,
  isAttributeChart,
  pointLimits,
  type CusumParams,
  type CusumState,
  type FrozenLimits,
  type StatisticName,
  type WindowSpec,
} from '@defender/uchart';
import { recentAlarmsOf, type ChamberHistory, type ChartPoint, type RunRecord } from './chamber-history';
import type { AlarmContext, NewRun } from './readings';
import { checkRule, describeRule, ruleWindow, type ZonedPoint } from './rules';
import type { ActionType, DefenseStrategy } from './strategy';

/** A point of a chart as cited in a violation. */
export interface InvolvedPoint {
  readonly runId: string;
  readonly value: number;
}

/** A rule the newest point violated, with everything an operator needs to act on it. */
export interface Violation {
  /** Rule id: N1..N8, WE1..WE4, EWMA, CUSUM_UPPER, CUSUM_LOWER, SPEC_USL, SPEC_LSL. */
  readonly rule: string;
  readonly description: string;
  readonly runId: string;
  readonly indicator: {
    readonly key: string;
    readonly id: string;
    readonly svid: string;
    readonly statistic: StatisticName;
    readonly window: WindowSpec;
  };
  /** The judged value: the charted statistic (run rules), the EWMA, the CUSUM sum in sigma units, or the raw value (spec). */
  readonly value: number;
  readonly limits: {
    readonly version: number | null;
    readonly center?: number;
    readonly sigma?: number;
    readonly lcl?: number;
    readonly ucl?: number;
    /** CUSUM decision interval (sigma units). */
    readonly h?: number;
    readonly usl?: number;
    readonly lsl?: number;
  };
  /** The points forming the pattern, oldest first, the newest point last. */
  readonly points: readonly InvolvedPoint[];
  readonly action: ActionType;
  readonly context?: AlarmContext;
}

/** What to do about a run. */
export type Action =
  | { readonly type: 'ALARM'; readonly violations: readonly Violation[] }
  | { readonly type: 'HOLD_CHAMBER'; readonly reasons: readonly string[] };

/** A reading that produced no chart point, and why. */
export interface SkippedReading {
  readonly key: string;
  readonly reason: 'unknown-indicator' | 'no-value' | 'invalid-exposure' | 'limits-chart-mismatch';
  readonly detail: string;
}

/** The outcome of {@link evaluate}: what to store, what was violated and what to do. */
export interface Evaluation {
  readonly runId: string;
  /** Append this to the chamber history (it carries the chart state). */
  readonly record: RunRecord;
  /** Violations of the newest point only; empty when it is not flagged. */
  readonly violations: readonly Violation[];
  readonly actions: readonly Action[];
  readonly skipped: readonly SkippedReading[];
}

/** Up to `max` earlier points of `key` judged against limits `version`, oldest first, with their run ids. */
function priorPoints(
  runs: readonly RunRecord[],
  key: string,
  version: number,
  max: number,
): { runId: string; point: ChartPoint }[] {
  const out: { runId: string; point: ChartPoint }[] = [];
  for (let i = runs.length - 1; i >= 0 && out.length < max; i--) {
    const p = runs[i].points[key];
    if (!p) continue;
    if (p.limitsVersion !== version) break;
    out.push({ runId: runs[i].runId, point: p });
  }
  return out.reverse();
}

function cusumParams(limits: FrozenLimits): CusumParams | undefined {
  const c = limits.chart;
  if (c.type !== 'cusum') return undefined;
  return {
    target: limits.center,
    sigma: limits.sigma,
    k: c.k,
    h: c.h,
    headStart: c.headStart,
    resetOnSignal: c.resetOnSignal,
  };
}

/**
 * Evaluates a new run of a chamber against its strategy and history.
 *
 * For each reading: the point is charted against the indicator's frozen limits (if a baseline exists;
 * before that only spec limits apply), the chart's state (EWMA, CUSUM) is advanced from the previous
 * point under the same limits version, and the enabled rules are checked. A rule raises a violation only
 * when the newest point completes its pattern; earlier flagged points never alarm again. Run rules see
 * only points judged under the current limits version (a re-baseline starts a new chart).
 *
 * Actions: an ALARM carrying all violations when there is any; HOLD_CHAMBER when a violated indicator's
 * action is HOLD_CHAMBER, or when an escalation rule is met (this run alarmed and, with it, at least
 * `alarms` of the last `withinRuns` runs alarmed).
 *
 * Never throws for bad readings (unknown indicator, no value, invalid exposure, limits of another chart
 * type): they are returned in `skipped`.
 */
export function evaluate(history: ChamberHistory, newRun: NewRun, strategy: DefenseStrategy): Evaluation {
  const configs = new Map(strategy.indicators.map((c) => [c.id, c]));
  const points: Record<string, ChartPoint> = {};
  const violations: Violation[] = [];
  const skipped: SkippedReading[] = [];

  for (const reading of newRun.readings) {
    const cfg = configs.get(reading.indicatorId);
    if (!cfg) {
      skipped.push({
        key: reading.key,
        reason: 'unknown-indicator',
        detail: `strategy "${strategy.name}" has no indicator "${reading.indicatorId}"`,
      });
      continue;
    }
    const value = reading.value;
    if (reading.missing || value === undefined || !Number.isFinite(value)) {
      skipped.push({
        key: reading.key,
        reason: 'no-value',
        detail: reading.missing ? `${reading.missing.reason}: ${reading.missing.detail}` : `value ${value}`,
      });
      continue;
    }
    const limits = history.limits[reading.key];
    if (limits && limits.chart.type !== cfg.chart.type) {
      skipped.push({
        key: reading.key,
        reason: 'limits-chart-mismatch',
        detail: `limits v${limits.version} are for a ${limits.chart.type} chart, the strategy charts ${cfg.chart.type}; re-baseline`,
      });
      continue;
    }
    const needsSize = cfg.chart.type === 'p' || cfg.chart.type === 'np' || cfg.chart.type === 'u';
    const exposure = reading.exposure;
    if (
      needsSize &&
      !(
        exposure !== undefined &&
        exposure > 0 &&
        Number.isFinite(exposure) &&
        (cfg.chart.type === 'u' || value <= exposure)
      )
    ) {
      skipped.push({
        key: reading.key,
        reason: 'invalid-exposure',
        detail: `${cfg.chart.type} chart needs a size > 0 (>= count), got ${exposure}`,
      });
      continue;
    }
    if (isAttributeChart(cfg.chart) && value < 0) {
      skipped.push({ key: reading.key, reason: 'no-value', detail: `a count cannot be negative (${value})` });
      continue;
    }

    const statistic = chartedStatistic(cfg.chart, value, exposure);
    const indicator = {
      key: reading.key,
      id: cfg.id,
      svid: reading.svid,
      statistic: cfg.statistic,
      window: cfg.window,
    };
    const base = {
      runId: newRun.runId,
      indicator,
      action: cfg.action,
      ...(newRun.context ? { context: newRun.context } : {}),
    };
    const here: InvolvedPoint = { runId: newRun.runId, value: statistic };
    let point: ChartPoint = {
      value,
      statistic,
      ...(exposure !== undefined ? { exposure } : {}),
      limitsVersion: limits?.version ?? null,
    };

    if (cfg.spec?.usl !== undefined && value > cfg.spec.usl) {
      violations.push({
        ...base,
        rule: 'SPEC_USL',
        description: `value above the upper spec limit ${cfg.spec.usl}`,
        value,
        limits: { version: limits?.version ?? null, usl: cfg.spec.usl },
        points: [{ runId: newRun.runId, value }],
      });
    }
    if (cfg.spec?.lsl !== undefined && value < cfg.spec.lsl) {
      violations.push({
        ...base,
        rule: 'SPEC_LSL',
        description: `value below the lower spec limit ${cfg.spec.lsl}`,
        value,
        limits: { version: limits?.version ?? null, lsl: cfg.spec.lsl },
        points: [{ runId: newRun.runId, value }],
      });
    }

    if (limits) {
      const chart = limits.chart;
      if (chart.type === 'ewma') {
        const [prev] = priorPoints(history.runs, reading.key, limits.version, 1);
        const i = (prev?.point.ewmaIndex ?? 0) + 1;
        const z = ewmaNext(prev?.point.ewma ?? limits.center, statistic, chart.lambda);
        const hw = ewmaHalfWidth(
          { lambda: chart.lambda, L: chart.L, center: limits.center, sigma: limits.sigma },
          i,
        );
        point = { ...point, ewma: z, ewmaIndex: i };
        if (z > limits.center + hw || z < limits.center - hw) {
          violations.push({
            ...base,
            rule: 'EWMA',
            description: `EWMA (lambda ${chart.lambda}) beyond its ${chart.L}-sigma limits`,
            value: z,
            limits: {
              version: limits.version,
              center: limits.center,
              sigma: limits.sigma,
              lcl: limits.center - hw,
              ucl: limits.center + hw,
            },
            points: [here],
          });
        }
      } else if (chart.type === 'cusum') {
        const p = cusumParams(limits) as CusumParams;
        const [prev] = priorPoints(history.runs, reading.key, limits.version, 1);
        const pc = prev?.point.cusum;
        const state: CusumState = pc
          ? cusumCarry({ ...pc, signalUpper: pc.signal, signalLower: pc.signal }, p)
          : cusumInitial(p);
        const step = cusumNext(state, statistic, p);
        point = {
          ...point,
          cusum: {
            upper: step.upper,
            lower: step.lower,
            upperRun: step.upperRun,
            lowerRun: step.lowerRun,
            signal: step.signalUpper || step.signalLower,
          },
        };
        for (const [side, signal, sum, run] of [
          ['UPPER', step.signalUpper, step.upper, step.upperRun],
          ['LOWER', step.signalLower, step.lower, step.lowerRun],
        ] as const) {
          if (!signal) continue;
          const excursion = priorPoints(history.runs, reading.key, limits.version, Math.max(0, run - 1));
          violations.push({
            ...base,
            rule: `CUSUM_${side}`,
            description: `${side === 'UPPER' ? 'upper' : 'lower'} CUSUM (k ${chart.k}) beyond the decision interval h = ${chart.h}`,
            value: sum,
            limits: { version: limits.version, center: limits.center, sigma: limits.sigma, h: chart.h },
            points: [...excursion.map((e) => ({ runId: e.runId, value: e.point.statistic })), here],
          });
        }
      } else if (cfg.rules.length > 0) {
        const lookback = Math.max(...cfg.rules.map(ruleWindow)) - 1;
        const prior = priorPoints(history.runs, reading.key, limits.version, lookback);
        const zoned: ZonedPoint[] = prior.map((e) => ({
          value: e.point.statistic,
          ...pointLimits(limits, e.point.exposure),
        }));
        const own = pointLimits(limits, exposure);
        zoned.push({ value: statistic, ...own });
        const runIds = [...prior.map((e) => e.runId), newRun.runId];
        for (const rule of cfg.rules) {
          const involved = checkRule(rule, zoned);
          if (!involved) continue;
          violations.push({
            ...base,
            rule: rule.id,
            description: describeRule(rule),
            value: statistic,
            limits: {
              version: limits.version,
              center: own.center,
              sigma: own.sigma,
              lcl: own.lcl,
              ucl: own.ucl,
            },
            points: involved.map((k) => ({ runId: runIds[k], value: zoned[k].value })),
          });
        }
      }
    }
    points[reading.key] = point;
  }

  const alarmed = violations.length > 0;
  const actions: Action[] = [];
  if (alarmed) {
    actions.push({ type: 'ALARM', violations });
    const reasons: string[] = [];
    const holding = [
      ...new Set(
        violations.filter((v) => v.action === 'HOLD_CHAMBER').map((v) => `${v.indicator.key} ${v.rule}`),
      ),
    ];
    if (holding.length > 0) reasons.push(`violation with action HOLD_CHAMBER: ${holding.join(', ')}`);
    reasons.push(...escalationReasons(recentAlarmsOf(history, strategy), strategy.escalation));
    if (reasons.length > 0) actions.push({ type: 'HOLD_CHAMBER', reasons });
  }
  return {
    runId: newRun.runId,
    record: { runId: newRun.runId, points, alarmed },
    violations,
    actions,
    skipped,
  };
}

/**
 * The escalation rules met by a run that alarmed: for each rule, this run and the alarmed runs among
 * the `withinRuns - 1` before it (`recentAlarms`: the alarm flags of the chamber's judged runs before
 * it, oldest first) reach `alarms`. One reason per rule met.
 */
export function escalationReasons(recentAlarms: readonly boolean[], escalation: DefenseStrategy['escalation']): string[] {
  const reasons: string[] = [];
  for (const e of escalation) {
    let count = 1;
    for (let i = recentAlarms.length - 1, seen = 1; i >= 0 && seen < e.withinRuns; i--, seen++) if (recentAlarms[i]) count++;
    if (count >= e.alarms)
      reasons.push(`escalation: ${count} alarmed runs in the last ${e.withinRuns} (threshold ${e.alarms})`);
  }
  return reasons;
}
