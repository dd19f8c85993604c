import { c4 } from '../constants';
import { ChartConfigError, DegenerateBaselineError, InsufficientBaselineError } from '../errors';
import {
  DEFAULT_RANGE_CONSTANTS,
  MAX_TABULATED_D2_N,
  rangeConstants,
  tabulatedRangeMoments,
  type RangeConstantsSource,
} from './control-constants';
import type { ShewhartLimits } from './individuals';

/** Mean, range and sample standard deviation of one subgroup (rational subgroup of a variables chart). */
export interface SubgroupStatistics {
  /** Number of values (>= 1). */
  readonly size: number;
  readonly mean: number;
  /** max - min (0 for one value). */
  readonly range: number;
  /** Sample standard deviation (n - 1); NaN for one value. */
  readonly sd: number;
}

/**
 * Statistics of one subgroup in one pass (shifted sums, exact for values near the first one).
 *
 * @throws {@link ChartConfigError} for an empty subgroup or a non-finite value (drop missing values
 *   first: a subgroup's size is the number of values it really has, as qcc counts non-NA values).
 */
export function subgroupStatistics(values: ArrayLike<number>): SubgroupStatistics {
  const n = values.length;
  if (n === 0) throw new ChartConfigError('a subgroup needs at least one value');
  const k = values[0];
  let s1 = 0;
  let s2 = 0;
  let min = Infinity;
  let max = -Infinity;
  for (let i = 0; i < n; i++) {
    const x = values[i];
    if (!Number.isFinite(x)) throw new ChartConfigError(`subgroup value ${i} is not finite (${x})`);
    const d = x - k;
    s1 += d;
    s2 += d * d;
    if (x < min) min = x;
    if (x > max) max = x;
  }
  const sd = n > 1 ? Math.sqrt(Math.max(0, (s2 - (s1 * s1) / n) / (n - 1))) : NaN;
  return { size: n, mean: k + s1 / n, range: max - min, sd };
}

/**
 * Within-subgroup sigma estimators, as R qcc's `sd.xbar` (Montgomery; ASTM E2587):
 * - `UWAVE-R`: mean of R_i / d2(n_i) (unweighted average of per-subgroup estimates); R-bar / d2 for
 *   equal sizes. qcc's default for x-bar (all sizes <= 25) and R charts.
 * - `UWAVE-SD`: mean of s_i / c4(n_i); s-bar / c4 for equal sizes. qcc's default for S charts.
 * - `MVLUE-R`: R_i / d2(n_i) weighted by (d2 / d3)^2.
 * - `MVLUE-SD`: s_i / c4(n_i) weighted by c4^2 / (1 - c4^2).
 * - `RMSDF`: pooled sd sqrt(sum (n_i - 1) s_i^2 / sum (n_i - 1)) / c4(sum (n_i - 1) + 1). qcc's default for
 *   x-bar when any subgroup has more than 25 values.
 */
export type SubgroupSigmaMethod = 'UWAVE-R' | 'UWAVE-SD' | 'MVLUE-R' | 'MVLUE-SD' | 'RMSDF';

const SIGMA_METHODS: readonly SubgroupSigmaMethod[] = ['UWAVE-R', 'UWAVE-SD', 'MVLUE-R', 'MVLUE-SD', 'RMSDF'];

/**
 * Estimates the within-subgroup process sigma from subgroup statistics.
 *
 * @param constants source of d2 / d3 (default {@link DEFAULT_RANGE_CONSTANTS}: `tabulated`, as qcc).
 * @throws {@link ChartConfigError} for no subgroups, a subgroup of one value, an unknown method, or a
 *   subgroup size outside the constants' range (tabulated d2: n <= 25).
 */
export function estimateSubgroupSigma(
  groups: readonly SubgroupStatistics[],
  method: SubgroupSigmaMethod,
  constants: RangeConstantsSource = DEFAULT_RANGE_CONSTANTS,
): number {
  if (!SIGMA_METHODS.includes(method))
    throw new ChartConfigError(`unknown subgroup sigma method "${method}"`);
  if (groups.length === 0) throw new ChartConfigError('sigma estimation needs at least one subgroup');
  groups.forEach((g, i) => {
    if (g.size < 2) throw new ChartConfigError(`subgroup ${i} has ${g.size} value; sizes must be >= 2`);
  });
  let num = 0;
  let den = 0;
  for (const g of groups) {
    switch (method) {
      case 'UWAVE-R':
        num += g.range / rangeConstants(g.size, constants).d2;
        den += 1;
        break;
      case 'UWAVE-SD':
        num += g.sd / c4(g.size);
        den += 1;
        break;
      case 'MVLUE-R': {
        const { d2, d3 } = rangeConstants(g.size, constants);
        const w = (d2 / d3) ** 2;
        num += (w * g.range) / d2;
        den += w;
        break;
      }
      case 'MVLUE-SD': {
        const c = c4(g.size);
        const w = (c * c) / (1 - c * c);
        num += (w * g.sd) / c;
        den += w;
        break;
      }
      case 'RMSDF':
        num += (g.size - 1) * g.sd * g.sd;
        den += g.size - 1;
        break;
    }
  }
  return method === 'RMSDF' ? Math.sqrt(num / den) / c4(den + 1) : num / den;
}

/** Subgroup charts: the subgroup mean, range or standard deviation. */
export type SubgroupChartType = 'xbar' | 'R' | 'S';

/** Options of {@link subgroupLimits}. */
export interface SubgroupChartOptions {
  /**
   * Default as qcc: x-bar `UWAVE-R` (`RMSDF` if any subgroup has more than 25 values), R `UWAVE-R`,
   * S `UWAVE-SD`.
   */
  readonly sigmaMethod?: SubgroupSigmaMethod;
  /** Limits at centre +/- nSigma standard errors (default 3). */
  readonly nSigma?: number;
  /** Source of d2 / d3 (default `tabulated`, as qcc). */
  readonly constants?: RangeConstantsSource;
  /** Minimum number of Phase I subgroups (default 2). */
  readonly minGroups?: number;
}

/**
 * Frozen limits of a subgroup chart. The limits of a subgroup depend on its size
 * ({@link subgroupPointLimits}); the centre is:
 * - `xbar`: the grand mean (sum n_i xbar_i / sum n_i) or the known mean;
 * - `R` / `S` from Phase I (`centerLine: 'weighted-mean'`): sum n_i R_i / sum n_i (or s_i), one centre
 *   for every size, as qcc; from known sigma (`'from-sigma'`): d2(n) sigma or c4(n) sigma per size.
 */
export interface SubgroupLimits {
  readonly chart: SubgroupChartType;
  readonly center: number;
  /** `weighted-mean`: estimated in Phase I; `known`: a given mean (x-bar); `from-sigma`: d2 / c4 x sigma. */
  readonly centerLine: 'weighted-mean' | 'known' | 'from-sigma';
  /** Within-subgroup process sigma (of one value), in the values' unit. */
  readonly sigma: number;
  readonly sigmaMethod: SubgroupSigmaMethod | 'known';
  readonly nSigma: number;
  readonly constants: RangeConstantsSource;
  /** Phase I subgroups and values (0 for known parameters). */
  readonly groups: number;
  readonly observations: number;
}

function defaultSigmaMethod(
  chart: SubgroupChartType,
  groups: readonly SubgroupStatistics[],
): SubgroupSigmaMethod {
  if (chart === 'S') return 'UWAVE-SD';
  if (chart === 'xbar' && groups.some((g) => g.size > MAX_TABULATED_D2_N)) return 'RMSDF';
  return 'UWAVE-R';
}

function checkNSigma(nSigma: number): void {
  if (!(nSigma > 0 && Number.isFinite(nSigma)))
    throw new ChartConfigError(`nSigma must be > 0, got ${nSigma}`);
}

/** The statistic a subgroup chart plots for one subgroup. */
export function subgroupStatistic(chart: SubgroupChartType, stats: SubgroupStatistics): number {
  return chart === 'xbar' ? stats.mean : chart === 'R' ? stats.range : stats.sd;
}

/**
 * Phase I limits of an x-bar, R or S chart from subgroups in order (sizes may differ), as R qcc's
 * `qcc(data, type = "xbar" | "R" | "S")`: centre = size-weighted mean of the subgroup statistics,
 * sigma per `sigmaMethod`; per-size limits from {@link subgroupPointLimits}. The result is frozen.
 *
 * @throws {@link InsufficientBaselineError} for fewer than `minGroups` subgroups.
 * @throws {@link DegenerateBaselineError} when the sigma estimate is 0.
 * @throws {@link ChartConfigError} for an empty subgroup, a subgroup of one value, a non-finite value,
 *   nSigma <= 0, or a size outside the constants' range.
 */
export function subgroupLimits(
  subgroups: ReadonlyArray<ArrayLike<number>>,
  chart: SubgroupChartType,
  options: SubgroupChartOptions = {},
): SubgroupLimits {
  const nSigma = options.nSigma ?? 3;
  checkNSigma(nSigma);
  const minGroups = options.minGroups ?? 2;
  if (subgroups.length < minGroups) {
    throw new InsufficientBaselineError(subgroups.length, minGroups, 'subgroups for a subgroup chart');
  }
  const groups = subgroups.map(subgroupStatistics);
  const constants = options.constants ?? DEFAULT_RANGE_CONSTANTS;
  const sigmaMethod = options.sigmaMethod ?? defaultSigmaMethod(chart, groups);
  const sigma = estimateSubgroupSigma(groups, sigmaMethod, constants);
  if (!(sigma > 0)) {
    throw new DegenerateBaselineError(`${sigmaMethod} sigma of ${groups.length} subgroups is ${sigma}`);
  }
  let weighted = 0;
  let observations = 0;
  for (const g of groups) {
    weighted += g.size * subgroupStatistic(chart, g);
    observations += g.size;
  }
  const limits: SubgroupLimits = {
    chart,
    center: weighted / observations,
    centerLine: 'weighted-mean',
    sigma,
    sigmaMethod,
    nSigma,
    constants,
    groups: groups.length,
    observations,
  };
  // Fail now, not at the first Phase II point, when a Phase I size has no constants.
  for (const g of groups) subgroupPointLimits(limits, g.size);
  return Object.freeze(limits);
}

/**
 * Limits from known (standard) parameters: `mean` (x-bar only) and the process `sigma`. R and S
 * centres follow the size (d2(n) sigma, c4(n) sigma), so R limits are D1 sigma / D2 sigma and S limits
 * B5 sigma / B6 sigma at nSigma = 3 (Montgomery, "standards given").
 *
 * @throws {@link ChartConfigError} for a missing or non-finite mean (x-bar), sigma <= 0 or nSigma <= 0.
 */
export function knownSubgroupLimits(
  chart: SubgroupChartType,
  params: { readonly mean?: number; readonly sigma: number },
  options: { readonly nSigma?: number; readonly constants?: RangeConstantsSource } = {},
): SubgroupLimits {
  const nSigma = options.nSigma ?? 3;
  checkNSigma(nSigma);
  if (!(params.sigma > 0 && Number.isFinite(params.sigma)))
    throw new ChartConfigError(`sigma must be > 0, got ${params.sigma}`);
  const mean = params.mean;
  if (chart === 'xbar' && !(mean !== undefined && Number.isFinite(mean)))
    throw new ChartConfigError(`an x-bar chart needs a finite known mean, got ${mean}`);
  return Object.freeze({
    chart,
    center: chart === 'xbar' ? (mean as number) : NaN,
    centerLine: chart === 'xbar' ? 'known' : 'from-sigma',
    sigma: params.sigma,
    sigmaMethod: 'known',
    nSigma,
    constants: options.constants ?? DEFAULT_RANGE_CONSTANTS,
    groups: 0,
    observations: 0,
  });
}

/**
 * Limits for one subgroup of `size` values, in the charted statistic's unit (`sigma` of the result is
 * the standard error of the statistic), as qcc's `limits.xbar` / `limits.R` / `limits.S`:
 * - x-bar: centre +/- k sigma / sqrt(n);
 * - R: centre +/- k d3(n) sigma, LCL clamped at 0 (D3 R-bar / D4 R-bar for equal sizes and k = 3);
 * - S: centre +/- k sigma sqrt(1 - c4(n)^2), LCL clamped at 0 (B3 s-bar / B4 s-bar likewise).
 *
 * @throws {@link ChartConfigError} for a size < 2 (R, S), < 1 (x-bar), or outside the constants' range.
 */
export function subgroupPointLimits(
  limits: Pick<SubgroupLimits, 'chart' | 'center' | 'centerLine' | 'sigma' | 'nSigma' | 'constants'>,
  size: number,
): ShewhartLimits {
  const { chart, sigma, nSigma } = limits;
  if (!(Number.isInteger(size) && size >= (chart === 'xbar' ? 1 : 2)))
    throw new ChartConfigError(
      `${chart} chart subgroup size must be an integer >= ${chart === 'xbar' ? 1 : 2}, got ${size}`,
    );
  let center = limits.center;
  let se: number;
  if (chart === 'xbar') {
    se = sigma / Math.sqrt(size);
  } else if (chart === 'R') {
    const fromSigma = limits.centerLine === 'from-sigma';
    // A Phase I centre needs only d3, which qcc tabulates up to n = 50 (d2 only up to 25).
    const { d2, d3 } =
      fromSigma || limits.constants === 'exact'
        ? rangeConstants(size, limits.constants)
        : tabulatedRangeMoments(size);
    if (fromSigma) center = d2 * sigma;
    se = d3 * sigma;
  } else {
    const c = c4(size);
    if (limits.centerLine === 'from-sigma') center = c * sigma;
    se = sigma * Math.sqrt(1 - c * c);
  }
  const lcl = center - nSigma * se;
  return {
    center,
    sigma: se,
    nSigma,
    lcl: chart === 'xbar' ? lcl : Math.max(0, lcl),
    ucl: center + nSigma * se,
  };
}

/** One subgroup judged against frozen limits. */
export interface SubgroupPoint {
  /** Position in the evaluated sequence (0-based). */
  readonly index: number;
  readonly size: number;
  /** Subgroup mean, range or sd. */
  readonly statistic: number;
  readonly center: number;
  readonly lcl: number;
  readonly ucl: number;
  /** Strictly above the UCL or strictly below the LCL; null inside or on a limit. */
  readonly signal: 'above' | 'below' | null;
}

/**
 * Judges subgroups against frozen limits: Phase II (new subgroups, limits unchanged) or a Phase I
 * review of the baseline subgroups themselves.
 *
 * @throws {@link ChartConfigError} for an empty subgroup, a non-finite value or a size the chart has no
 *   limits for.
 */
export function evaluateSubgroups(
  limits: SubgroupLimits,
  subgroups: ReadonlyArray<ArrayLike<number>>,
): SubgroupPoint[] {
  return subgroups.map((values, index) => {
    const stats = subgroupStatistics(values);
    const lim = subgroupPointLimits(limits, stats.size);
    const statistic = subgroupStatistic(limits.chart, stats);
    return {
      index,
      size: stats.size,
      statistic,
      center: lim.center,
      lcl: lim.lcl,
      ucl: lim.ucl,
      signal: statistic > lim.ucl ? 'above' : statistic < lim.lcl ? 'below' : null,
    };
  });
}
