import {
  chartedStatistic,
  cusumCarry,
  cusumInitial,
  cusumNext,
  establishBaseline,
  ewmaHalfWidth,
  ewmaNext,
  isAttributeChart,
  pointLimits,
  type CusumParams,
  type CusumState,
  type FrozenLimits,
  type IndicatorCalculator,
  type IndicatorSpec,
  type LimitsReason,
  type StatisticName,
  type Trace,
  type WindowSpec,
} from '@defender/uchart';
import { checkRule, describeRule, ruleWindow, type ZonedPoint } from './rules';
import type { ActionType, DefenseStrategy, IndicatorConfig } from './strategy';

/** Who / what a run belongs to, copied into every violation. */
export interface AlarmContext {
  readonly toolId?: string;
  readonly chamberId?: string;
  readonly recipe?: string;
}

/**
 * One indicator value of a new run. `value` is the indicator value (a count for attribute charts),
 * `exposure` the point's size for p / np / u charts. A `missing` reading records why there is no value.
 */
export interface Reading {
  /** History key: the indicator id, or `<id>/<svid>` for an indicator over every SVID (`svid: "*"`). */
  readonly key: string;
  readonly indicatorId: string;
  readonly svid: string;
  readonly value?: number;
  readonly exposure?: number;
  readonly missing?: { readonly reason: string; readonly detail: string };
}

/** A run to evaluate: its id, context and readings. */
export interface NewRun {
  readonly runId: string;
  readonly context?: AlarmContext;
  readonly readings: readonly Reading[];
}

/** The stored U-chart point of one indicator for one run (chart state included, so the next run needs no replay). */
export interface ChartPoint {
  /** The indicator value (count for attribute charts). */
  readonly value: number;
  /** The charted statistic: the value, or count / size for p and u charts. */
  readonly statistic: number;
  readonly exposure?: number;
  /** Version of the limits the point was judged against; null before the first baseline (Phase I). */
  readonly limitsVersion: number | null;
  readonly ewma?: number;
  /** 1-based index of the point since the limits were frozen (drives the exact EWMA limits). */
  readonly ewmaIndex?: number;
  /** CUSUM sums (sigma units) and run lengths after this point, and whether it signalled. */
  readonly cusum?: {
    readonly upper: number;
    readonly lower: number;
    readonly upperRun: number;
    readonly lowerRun: number;
    readonly signal: boolean;
  };
}

/** One evaluated run as stored in the chamber history. */
export interface RunRecord {
  readonly runId: string;
  readonly points: Readonly<Record<string, ChartPoint>>;
  /** Whether the run raised an alarm (drives escalation). */
  readonly alarmed: boolean;
}

/**
 * What `evaluate` needs to know about a chamber: its recent runs (oldest first; at least
 * {@link requiredHistoryRuns} of them, more are ignored) and the current frozen limits per history key.
 */
export interface ChamberHistory {
  readonly runs: readonly RunRecord[];
  readonly limits: Readonly<Record<string, FrozenLimits>>;
}

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

/** The history key of an indicator for one SVID. */
export function indicatorKey(config: IndicatorConfig, svid: string): string {
  return config.svid === '*' ? `${config.id}/${svid}` : config.id;
}

/** How many recent runs {@link evaluate} and {@link phaseOneSamples} read at most (excluding CUSUM excursions, which need their run). */
export function requiredHistoryRuns(strategy: DefenseStrategy): number {
  let n = 1;
  for (const ind of strategy.indicators) {
    for (const r of ind.rules) n = Math.max(n, ruleWindow(r));
    n = Math.max(n, ind.baseline.minRuns);
  }
  for (const e of strategy.escalation) n = Math.max(n, e.withinRuns);
  if (strategy.monitor) {
    const b = strategy.monitor.baseline;
    n = Math.max(n, b.minRuns, b.extendTo === false ? 0 : b.extendTo);
  }
  return n;
}

/**
 * How many recent runs {@link evaluate} reads in a chamber's steady state, when every indicator has
 * limits: the longest run-rule window and escalation window (at least 1). Phase I, a CUSUM
 * excursion and a recipe whose runs are spread among other recipes' read further back:
 * {@link historyShortfall} says when a history this deep is not enough.
 */
export function steadyHistoryRuns(strategy: DefenseStrategy): number {
  let n = 1;
  for (const ind of strategy.indicators) for (const r of ind.rules) n = Math.max(n, ruleWindow(r));
  for (const e of strategy.escalation) n = Math.max(n, e.withinRuns);
  return n;
}

/**
 * Why `history` — the newest runs of a chamber whose older runs were not read — may be too short for
 * {@link evaluate} to judge `readings` as it would with {@link requiredHistoryRuns} runs; undefined
 * when it is enough. It is not when an indicator has no limits (Phase I reads back to the chart's
 * start), when fewer earlier points of an indicator at its limits' version are in it than its chart
 * reads (its run rules' window, the EWMA's or CUSUM's previous point, a CUSUM excursion's points), or
 * when fewer runs are in it than the escalation rules count. An earlier point of another version ends
 * a chart, so finding one is enough.
 */
export function historyShortfall(
  history: ChamberHistory,
  readings: readonly Reading[],
  strategy: DefenseStrategy,
): string | undefined {
  let escalation = 1;
  for (const e of strategy.escalation) escalation = Math.max(escalation, e.withinRuns);
  if (history.runs.length < escalation - 1) return `escalation reads ${escalation - 1} earlier runs, ${history.runs.length} read`;
  const configs = new Map(strategy.indicators.map((c) => [c.id, c]));
  for (const reading of readings) {
    const cfg = configs.get(reading.indicatorId);
    if (!cfg || reading.value === undefined) continue;
    const limits = history.limits[reading.key];
    if (!limits) return `${reading.key} has no limits (Phase I reads back to its first point)`;
    const chart = limits.chart;
    let need = chart.type === 'ewma' || chart.type === 'cusum' ? 1 : Math.max(0, ...cfg.rules.map(ruleWindow)) - 1;
    let found = 0;
    for (let i = history.runs.length - 1; i >= 0 && found < need; i--) {
      const p = history.runs[i].points[reading.key];
      if (!p) continue;
      if (p.limitsVersion !== limits.version) {
        found = need;
        break;
      }
      // The CUSUM's excursion so far is cited when it signals: its points are needed too.
      if (found === 0 && chart.type === 'cusum' && p.cusum) need = Math.max(need, p.cusum.upperRun, p.cusum.lowerRun);
      found++;
    }
    if (found < need) return `${reading.key}: ${found} of the ${need} earlier points its chart reads`;
  }
  return undefined;
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
    reasons.push(...escalationReasons(history.runs, strategy.escalation));
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
 * the `withinRuns - 1` before it (`runs` oldest first) reach `alarms`. One reason per rule met.
 */
export function escalationReasons(runs: readonly RunRecord[], escalation: DefenseStrategy['escalation']): string[] {
  const reasons: string[] = [];
  for (const e of escalation) {
    let count = 1;
    for (let i = runs.length - 1, seen = 1; i >= 0 && seen < e.withinRuns; i--, seen++) if (runs[i].alarmed) count++;
    if (count >= e.alarms)
      reasons.push(`escalation: ${count} alarmed runs in the last ${e.withinRuns} (threshold ${e.alarms})`);
  }
  return reasons;
}

/**
 * The readings of a strategy's indicators for one run's trace (a `*` SVID expands to every SVID of the
 * trace). Indicators with no point (unknown SVID / step, empty window, all samples NaN, ...) become
 * `missing` readings. For p / np / u charts the exposure is the window's sample count (valid + missing)
 * or its duration in seconds, per the indicator's `exposure`.
 */
export function readingsFromTrace(
  trace: Trace,
  strategy: DefenseStrategy,
  calculator: IndicatorCalculator,
): Reading[] {
  const specs: IndicatorSpec[] = [];
  const meta: { cfg: IndicatorConfig; svid: string }[] = [];
  for (const cfg of strategy.indicators) {
    const svids = cfg.svid === '*' ? [...trace.svids.keys()] : [cfg.svid];
    for (const svid of svids) {
      specs.push({ svid, window: cfg.window, statistic: cfg.statistic });
      meta.push({ cfg, svid });
      if (cfg.exposure === 'window-seconds' && isAttributeChart(cfg.chart)) {
        specs.push({ svid, window: cfg.window, statistic: 'duration' });
        meta.push({ cfg, svid: '\u0000duration' });
      }
    }
  }
  const outcomes = calculator.compute(trace, specs);
  const readings: Reading[] = [];
  for (let i = 0; i < specs.length; i++) {
    const { cfg, svid } = meta[i];
    if (svid === '\u0000duration') continue;
    const o = outcomes[i];
    const key = indicatorKey(cfg, svid);
    if (o.kind === 'no-point') {
      readings.push({ key, indicatorId: cfg.id, svid, missing: { reason: o.reason, detail: o.detail } });
      continue;
    }
    let exposure: number | undefined;
    if (cfg.chart.type === 'p' || cfg.chart.type === 'np' || cfg.chart.type === 'u') {
      if (cfg.exposure === 'window-seconds') {
        const d = outcomes[i + 1];
        exposure = d.kind === 'point' ? d.value : undefined;
      } else {
        exposure = o.n + o.nMissing;
      }
    }
    readings.push({
      key,
      indicatorId: cfg.id,
      svid,
      value: o.value,
      ...(exposure !== undefined ? { exposure } : {}),
    });
  }
  return readings;
}

/**
 * The Phase I points of `key` collected since its last frozen limits (points with no limits version),
 * oldest first, as baseline samples.
 */
export function phaseOneSamples(
  history: ChamberHistory,
  key: string,
): { runId: string; value: number; size?: number }[] {
  const out: { runId: string; value: number; size?: number }[] = [];
  for (let i = history.runs.length - 1; i >= 0; i--) {
    const p = history.runs[i].points[key];
    if (!p) continue;
    if (p.limitsVersion !== null) break;
    out.push({
      runId: history.runs[i].runId,
      value: p.value,
      ...(p.exposure !== undefined ? { size: p.exposure } : {}),
    });
  }
  return out.reverse();
}

/**
 * Freezes limits for `key` once enough Phase I points exist and it has none: every point collected
 * since the last limits (at least `minRuns`) is the baseline. Returns the new limits (for the caller to
 * store in the history's `limits`), or `undefined` when it is too early or limits already exist.
 *
 * @throws `InsufficientBaselineError` (from `@defender/uchart`) when out-of-control exclusion leaves
 *   fewer than `minRuns` points, `DegenerateBaselineError` when the points have no variation; the
 *   caller keeps collecting (spec limits still apply meanwhile).
 */
export function maybeEstablishBaseline(
  history: ChamberHistory,
  key: string,
  config: IndicatorConfig,
  options: { readonly frozenAt: string; readonly version?: number; readonly reason?: LimitsReason },
): FrozenLimits | undefined {
  if (history.limits[key]) return undefined;
  const samples = phaseOneSamples(history, key);
  if (samples.length < config.baseline.minRuns) return undefined;
  return establishBaseline(samples, config.chart, {
    minRuns: config.baseline.minRuns,
    exclusion: config.baseline.exclusion,
    frozenAt: options.frozenAt,
    ...(options.version !== undefined ? { version: options.version } : {}),
    ...(options.reason ? { reason: options.reason } : {}),
  });
}
