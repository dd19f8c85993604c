import {
  attributeLimits,
  attributeRate,
  attributeStatistic,
  type AttributeChartType,
} from './charts/attribute';
import { validateCusumParams } from './charts/cusum';
import { validateEwmaParams } from './charts/ewma';
import { estimateSigma, shewhartLimits, type ShewhartLimits, type SigmaMethod } from './charts/individuals';
import { ChartConfigError, DegenerateBaselineError, InsufficientBaselineError } from './errors';

/** Chart type and parameters of one indicator's U-chart. */
export type ChartSpec =
  | { readonly type: 'individuals'; readonly sigmaMethod: SigmaMethod; readonly nSigma: number }
  | { readonly type: 'ewma'; readonly lambda: number; readonly L: number; readonly sigmaMethod: SigmaMethod }
  | {
      readonly type: 'cusum';
      readonly k: number;
      readonly h: number;
      readonly headStart: number;
      readonly resetOnSignal: boolean;
      readonly sigmaMethod: SigmaMethod;
    }
  | { readonly type: AttributeChartType; readonly nSigma: number };

/** True for the attribute charts (p, np, c, u). */
export function isAttributeChart(
  chart: ChartSpec,
): chart is Extract<ChartSpec, { type: AttributeChartType }> {
  return chart.type === 'p' || chart.type === 'np' || chart.type === 'c' || chart.type === 'u';
}

/** One Phase I run: the indicator value (a count for attribute charts) and, for p / np / u, its size. */
export interface BaselineSample {
  readonly runId: string;
  readonly value: number;
  readonly size?: number;
}

/** Why limits were (re)computed. */
export type LimitsReason = 'initial' | 'maintenance' | 'recipe-change' | 'manual' | 'known-parameters';

/**
 * Frozen control limits of one indicator: computed once from a Phase I baseline (or given as known
 * parameters), never updated in place, replaced only by a re-baseline with a higher `version`.
 * The object and its arrays are frozen.
 */
export interface FrozenLimits {
  /** 1 for the first baseline, +1 on every re-baseline. */
  readonly version: number;
  readonly chart: ChartSpec;
  /** Variables charts: the in-control mean (EWMA / CUSUM target). Attribute charts: p-bar, c-bar or u-bar. */
  readonly center: number;
  /** Variables charts: the in-control sigma of one value. Attribute charts: NaN (it depends on the size). */
  readonly sigma: number;
  /** Mean moving range of the baseline (moving-range sigma only). */
  readonly mrBar?: number;
  /** Runs the limits were computed from, in order. */
  readonly baselineRunIds: readonly string[];
  /** Runs excluded as out of control during Phase I. */
  readonly excludedRunIds: readonly string[];
  /** Exclusion passes that removed at least one run. */
  readonly exclusionPasses: number;
  readonly reason: LimitsReason;
  /** Caller-supplied timestamp (ISO 8601); the library reads no clock. */
  readonly frozenAt: string;
}

/** Options of {@link establishBaseline}. */
export interface BaselineOptions {
  /** Minimum usable runs, before and after exclusion (default 20). */
  readonly minRuns?: number;
  /**
   * Iterative exclusion of out-of-control runs: each pass drops the runs strictly outside the
   * Shewhart limits of the current estimate (individuals: the chart's nSigma; EWMA / CUSUM baselines:
   * 3-sigma individuals limits; attribute charts: each run's own limits) and re-estimates. At most
   * `maxPasses` passes; `false` disables it. Default: `{ maxPasses: 10 }`.
   */
  readonly exclusion?: { readonly maxPasses: number } | false;
  readonly reason?: LimitsReason;
  /** Timestamp to record (ISO 8601). */
  readonly frozenAt: string;
  /** Version to assign (default 1). */
  readonly version?: number;
}

/** The limits a single point is judged against, in the charted statistic's unit. */
export type PointLimits = ShewhartLimits;

/**
 * The statistic a chart plots for one run: the value itself for variables charts (EWMA / CUSUM smooth
 * it further), count / size for p and u, the count for np and c.
 *
 * @throws {@link ChartConfigError} for a missing or invalid size on p / np / u charts.
 */
export function chartedStatistic(chart: ChartSpec, value: number, size?: number): number {
  return isAttributeChart(chart) ? attributeStatistic(chart.type, { count: value, size }) : value;
}

/**
 * Shewhart limits of one point: centre +/- nSigma sigma for individuals (nSigma 3 for the Phase I
 * screen of EWMA / CUSUM baselines), the size-dependent limits for attribute charts.
 *
 * @throws {@link ChartConfigError} for a missing size on p / np / u charts.
 */
export function pointLimits(
  limits: Pick<FrozenLimits, 'chart' | 'center' | 'sigma'>,
  size?: number,
): PointLimits {
  const chart = limits.chart;
  if (isAttributeChart(chart)) return attributeLimits(chart.type, limits.center, size, chart.nSigma);
  return shewhartLimits(limits.center, limits.sigma, chart.type === 'individuals' ? chart.nSigma : 3);
}

function validateChart(chart: ChartSpec): void {
  switch (chart.type) {
    case 'ewma':
      validateEwmaParams({ lambda: chart.lambda, L: chart.L, center: 0, sigma: 1 });
      return;
    case 'cusum':
      validateCusumParams({ target: 0, sigma: 1, k: chart.k, h: chart.h, headStart: chart.headStart });
      return;
    default:
      if (!(chart.nSigma > 0 && Number.isFinite(chart.nSigma))) {
        throw new ChartConfigError(`nSigma must be > 0, got ${chart.nSigma}`);
      }
  }
}

function estimate(
  chart: ChartSpec,
  samples: readonly BaselineSample[],
): { center: number; sigma: number; mrBar?: number } {
  if (isAttributeChart(chart)) {
    return {
      center: attributeRate(
        chart.type,
        samples.map((s) => ({ count: s.value, size: s.size })),
      ),
      sigma: NaN,
    };
  }
  const est = estimateSigma(
    samples.map((s) => s.value),
    chart.sigmaMethod,
  );
  if (!(est.sigma > 0)) {
    throw new DegenerateBaselineError(
      `${chart.sigmaMethod} sigma of ${samples.length} runs is ${est.sigma} (centre ${est.center})`,
    );
  }
  return est.mrBar !== undefined ? { center: est.center, sigma: est.sigma, mrBar: est.mrBar } : est;
}

function deepFreeze(l: FrozenLimits): FrozenLimits {
  Object.freeze(l.chart);
  Object.freeze(l.baselineRunIds);
  Object.freeze(l.excludedRunIds);
  return Object.freeze(l);
}

/**
 * Phase I: estimates the limits of `chart` from baseline runs (in run order), optionally excluding
 * out-of-control runs iteratively, and freezes them. A moving range spans the runs that remain
 * after exclusion, in order.
 *
 * @throws {@link InsufficientBaselineError} when fewer than `minRuns` runs are given or remain.
 * @throws {@link DegenerateBaselineError} when a variables chart's sigma estimate is 0 (constant values).
 * @throws {@link ChartConfigError} for invalid chart parameters, a non-finite value or an invalid size.
 */
export function establishBaseline(
  samples: readonly BaselineSample[],
  chart: ChartSpec,
  options: BaselineOptions,
): FrozenLimits {
  validateChart(chart);
  const minRuns = options.minRuns ?? 20;
  if (!(Number.isInteger(minRuns) && minRuns >= 2))
    throw new ChartConfigError(`minRuns must be an integer >= 2, got ${minRuns}`);
  const exclusion = options.exclusion ?? { maxPasses: 10 };
  if (exclusion && !(Number.isInteger(exclusion.maxPasses) && exclusion.maxPasses >= 1)) {
    throw new ChartConfigError(`exclusion.maxPasses must be an integer >= 1, got ${exclusion.maxPasses}`);
  }
  if (samples.length < minRuns)
    throw new InsufficientBaselineError(samples.length, minRuns, 'before exclusion');

  let included = samples.slice();
  const excluded: string[] = [];
  let est = estimate(chart, included);
  let passes = 0;
  while (exclusion && passes < exclusion.maxPasses) {
    const current = est;
    const keep: BaselineSample[] = [];
    for (const s of included) {
      const lim = pointLimits({ chart, center: current.center, sigma: current.sigma }, s.size);
      const stat = chartedStatistic(chart, s.value, s.size);
      if (stat > lim.ucl || stat < lim.lcl) excluded.push(s.runId);
      else keep.push(s);
    }
    if (keep.length === included.length) break;
    passes++;
    if (keep.length < minRuns) {
      throw new InsufficientBaselineError(
        keep.length,
        minRuns,
        `after excluding ${excluded.length} out-of-control runs`,
      );
    }
    included = keep;
    est = estimate(chart, included);
  }
  return deepFreeze({
    version: options.version ?? 1,
    chart: { ...chart },
    center: est.center,
    sigma: est.sigma,
    ...(est.mrBar !== undefined ? { mrBar: est.mrBar } : {}),
    baselineRunIds: included.map((s) => s.runId),
    excludedRunIds: excluded,
    exclusionPasses: passes,
    reason: options.reason ?? 'initial',
    frozenAt: options.frozenAt,
  });
}

/**
 * Re-baseline on demand (maintenance, recipe change): new limits from new runs with version
 * `previous.version + 1`; `chart` defaults to the previous chart. `previous` is not modified.
 *
 * @throws as {@link establishBaseline}.
 */
export function rebaseline(
  previous: FrozenLimits,
  samples: readonly BaselineSample[],
  options: Omit<BaselineOptions, 'version'> & { readonly chart?: ChartSpec },
): FrozenLimits {
  return establishBaseline(samples, options.chart ?? previous.chart, {
    ...options,
    reason: options.reason ?? 'manual',
    version: previous.version + 1,
  });
}

/**
 * Limits from known (standard) parameters instead of a baseline: `center` is the mean (variables) or
 * the rate (attributes), `sigma` the process sigma (ignored, NaN, for attributes).
 *
 * @throws {@link ChartConfigError} for invalid chart parameters, a non-finite centre or a sigma <= 0.
 */
export function knownLimits(
  chart: ChartSpec,
  center: number,
  sigma: number,
  meta: { readonly frozenAt: string; readonly version?: number },
): FrozenLimits {
  validateChart(chart);
  if (!Number.isFinite(center)) throw new ChartConfigError(`center must be finite, got ${center}`);
  const attr = isAttributeChart(chart);
  if (!attr && !(sigma > 0 && Number.isFinite(sigma)))
    throw new ChartConfigError(`sigma must be > 0, got ${sigma}`);
  return deepFreeze({
    version: meta.version ?? 1,
    chart: { ...chart },
    center,
    sigma: attr ? NaN : sigma,
    baselineRunIds: [],
    excludedRunIds: [],
    exclusionPasses: 0,
    reason: 'known-parameters',
    frozenAt: meta.frozenAt,
  });
}
