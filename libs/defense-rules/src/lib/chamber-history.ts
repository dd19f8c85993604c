/**
 * A chamber's history as `evaluate` reads it (stored chart points per run, frozen limits per key):
 * how many runs it needs, when a shorter one is not enough, and the Phase I bookkeeping on it.
 */
import { establishBaseline, type FrozenLimits, type LimitsReason } from '@defender/uchart';
import type { Reading } from './readings';
import { ruleWindow } from './rules';
import type { DefenseStrategy, IndicatorConfig } from './strategy';

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
  /**
   * Whether each of the chamber's judged runs before this one raised an alarm, oldest first, as the
   * chamber remembers them (at least as many as the escalation rules count, or all there have been):
   * what the escalation rules count. Absent: the `alarmed` flags of `runs`.
   */
  readonly recentAlarms?: readonly boolean[];
}

/**
 * The alarm flags the escalation rules of `strategy` count for `history`: its remembered ones, else
 * those of its newest runs that the rules reach (no run further back is decoded).
 */
export function recentAlarmsOf(history: ChamberHistory, strategy: DefenseStrategy): readonly boolean[] {
  if (history.recentAlarms) return history.recentAlarms;
  const window = escalationHistoryRuns(strategy);
  return window === 0 ? [] : history.runs.slice(-window).map((r) => r.alarmed);
}

/** Judged runs before the current one that the escalation rules of `strategy` count (0: none). */
export function escalationHistoryRuns(strategy: DefenseStrategy): number {
  let n = 0;
  for (const e of strategy.escalation) n = Math.max(n, e.withinRuns - 1);
  return n;
}

/**
 * How many recent runs the charts of `strategy` read in a chamber's steady state (the longest
 * run-rule window; 0 without rules): {@link steadyHistoryRuns} without the escalation rules, for a
 * chamber that remembers its runs' alarms ({@link ChamberHistory.recentAlarms}).
 */
export function steadyChartRuns(strategy: DefenseStrategy): number {
  let n = 0;
  for (const ind of strategy.indicators) for (const r of ind.rules) n = Math.max(n, ruleWindow(r));
  return n;
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
  // Escalation counts the remembered alarms when the chamber remembers them (they cover its rules).
  const escalation = escalationHistoryRuns(strategy);
  if (history.recentAlarms === undefined && history.runs.length < escalation) return `escalation reads ${escalation} earlier runs, ${history.runs.length} read`;
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
