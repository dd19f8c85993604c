/**
 * One call per univariate chart, as R qcc's `qcc(data, type = ...)`: statistics, centre, per-point
 * limits, Western Electric violations and, for the x-bar and individuals charts with spec limits,
 * capability. Built on the chart functions of this folder; no formula is repeated here.
 */
import { ChartConfigError } from '../errors';
import { normalQuantile } from '../distributions';
import {
  attributeLimits,
  attributeRate,
  attributeStatistic,
  type AttributeChartType,
  type AttributeSample,
} from './attribute';
import { processCapability, type ProcessCapability, type SpecLimits } from './capability';
import { DEFAULT_RANGE_CONSTANTS, rangeConstants, type RangeConstantsSource } from './control-constants';
import { estimateSigma, shewhartLimits, type ShewhartLimits } from './individuals';
import { knownMovingRangeLimits, movingRangeLimits, movingRanges } from './moving-range';
import { DEFAULT_RULES, westernElectricViolations, type WesternElectricRule } from './rules';
import {
  subgroupLimits,
  subgroupPointLimits,
  subgroupStatistic,
  subgroupStatistics,
  type SubgroupLimits,
  type SubgroupSigmaMethod,
} from './subgroup';

/**
 * Chart types: qcc's `xbar`, `R`, `S` (subgroups), `xbar.one` (individual values), `p`, `np`, `c`,
 * `u` (counts), plus `MR`, the moving-range chart that accompanies `xbar.one`.
 */
export type QccChartType = 'xbar' | 'R' | 'S' | 'xbar.one' | 'MR' | AttributeChartType;

/** Sigma estimators: the subgroup ones (x-bar, R, S), and `MR` / `SD` for `xbar.one` as qcc names them. */
export type QccSigmaMethod = SubgroupSigmaMethod | 'MR' | 'SD';

/**
 * Data of a chart: subgroups (one array of values each) for `xbar`, `R`, `S`; one value per point for
 * `xbar.one` and `MR`; one count per sample for `p`, `np`, `c`, `u`.
 */
export type QccData = ReadonlyArray<ArrayLike<number>> | ArrayLike<number>;

export interface QccOptions {
  readonly type: QccChartType;
  /** Sample sizes of `p`, `np`, `u` (required), one for all or one per sample; ignored by `c`. */
  readonly sizes?: number | ArrayLike<number>;
  /** Phase II data judged against the Phase I limits (qcc's `newdata`). */
  readonly newdata?: QccData;
  /** Sizes of the `newdata` samples (default: `sizes` when that is one number). */
  readonly newSizes?: number | ArrayLike<number>;
  /** Known centre (qcc's `center`): the mean (x-bar, xbar.one), R-bar, s-bar, MR-bar, or the rate p, c, u (also for np). */
  readonly center?: number;
  /** Known process sigma (qcc's numeric `std.dev`) for the variables charts. */
  readonly stdDev?: number;
  /** Sigma estimator (qcc's `std.dev` method); defaults as qcc. */
  readonly sigmaMethod?: QccSigmaMethod;
  /** Limits at centre +/- nSigma standard errors (default 3). */
  readonly nSigma?: number;
  /** Two-sided confidence level instead of nSigma (x-bar and xbar.one: nSigma = z(1 - (1 - level) / 2)). */
  readonly confidenceLevel?: number;
  /** Western Electric rules to report (default [1, 4], as qcc). */
  readonly rules?: readonly WesternElectricRule[];
  /** Source of d2 / d3 (default `tabulated`, the lib-wide default: see README). */
  readonly constants?: RangeConstantsSource;
  /** Spec limits: adds `capability` (x-bar and xbar.one only, as qcc's `processCapability`). */
  readonly spec?: SpecLimits;
  /** Confidence level of the capability intervals (default 0.95). */
  readonly capabilityConfidenceLevel?: number;
}

/** One charted point with its limits and the rule it violates. */
export interface QccPoint {
  /** 0-based, Phase I points first, then the `newdata` points. */
  readonly index: number;
  readonly phase: 'I' | 'II';
  /** Subgroup size, sample size (p, np, u), 1 (xbar.one, c) or 2 (MR: the values a range spans). */
  readonly size: number;
  readonly statistic: number;
  readonly center: number;
  /** Standard error of the statistic at this point. */
  readonly sigma: number;
  readonly lcl: number;
  readonly ucl: number;
  readonly violation: WesternElectricRule | null;
}

/** A chart as qcc returns it (its `qcc` object), every point judged. */
export interface QccChart {
  readonly type: QccChartType;
  /** Phase I statistics (group means, ranges, sds, values, moving ranges, proportions, counts, rates). */
  readonly statistics: readonly number[];
  readonly newStatistics: readonly number[];
  /** Centre of the Phase I statistics; null where it varies with the size (np with unequal sizes). */
  readonly center: number | null;
  /**
   * Process sigma (variables charts); for attribute charts qcc's `std.dev`: sqrt(p (1 - p) / n),
   * sqrt(n p (1 - p)), sqrt(c-bar), sqrt(u-bar); null where it varies with the size.
   */
  readonly stdDev: number | null;
  readonly sigmaMethod: QccSigmaMethod | 'known' | null;
  readonly nSigma: number;
  readonly confidenceLevel: number | null;
  readonly constants: RangeConstantsSource;
  readonly rules: readonly WesternElectricRule[];
  readonly points: readonly QccPoint[];
  /** Indices (into `points`) beyond the limits (rule 1) and violating runs (rules 2-4), as qcc's summary counts them. */
  readonly violations: {
    readonly beyondLimits: readonly number[];
    readonly violatingRuns: readonly number[];
  };
  readonly capability?: ProcessCapability;
}

interface Judged {
  readonly statistic: number;
  readonly size: number;
  readonly limits: ShewhartLimits;
}

interface Context {
  readonly options: QccOptions;
  readonly nSigma: number;
  readonly constants: RangeConstantsSource;
}

interface Built {
  readonly phaseOne: readonly Judged[];
  readonly phaseTwo: readonly Judged[];
  readonly center: number | null;
  readonly stdDev: number | null;
  readonly sigmaMethod: QccSigmaMethod | 'known' | null;
  /** Values and within sigma for capability (x-bar, xbar.one). */
  readonly capability?: { readonly values: number[]; readonly sigma: number; readonly center: number };
}

/**
 * Builds one chart from Phase I data (and optional Phase II `newdata`) in one call, as R qcc's
 * `qcc(data, type, sizes, center, std.dev, newdata, newsizes, nsigmas, confidence.level, rules)`:
 * - `xbar` / `R` / `S`: {@link subgroupLimits} and {@link subgroupPointLimits} (sizes may differ);
 *   with a known `stdDev` the centre is still the Phase I one unless `center` is given, as qcc;
 * - `xbar.one`: mean +/- nSigma sigma, sigma = MR-bar / d2(2) (`MR`, default) or sd / c4 (`SD`);
 * - `MR`: {@link movingRangeLimits} (Phase II ranges continue from the last Phase I value);
 * - `p` / `np` / `c` / `u`: {@link attributeRate} and {@link attributeLimits} per sample size.
 * Violations follow {@link westernElectricViolations}; `spec` adds {@link processCapability} with the
 * chart's centre and sigma on all Phase I values.
 *
 * @throws {@link ChartConfigError} for data of the wrong shape, missing sizes (p, np, u), a confidence
 *   level with a chart whose qcc limits are then probability limits (R, S, attribute charts), spec
 *   limits on a chart other than x-bar / xbar.one, and every error of the functions it calls.
 * @throws InsufficientBaselineError / DegenerateBaselineError from the limit estimators.
 */
export function qcc(data: QccData, options: QccOptions): QccChart {
  const type = options.type;
  const nSigma = resolveNSigma(options);
  const constants = options.constants ?? DEFAULT_RANGE_CONSTANTS;
  const rules = options.rules ?? DEFAULT_RULES;
  if (options.spec && type !== 'xbar' && type !== 'xbar.one') {
    throw new ChartConfigError(`capability needs an x-bar or xbar.one chart (as qcc), got ${type}`);
  }
  checkKnown(options.center, 'center', false);
  checkKnown(options.stdDev, 'stdDev', true);
  const ctx: Context = { options, nSigma, constants };
  let built: Built;
  switch (type) {
    case 'xbar':
    case 'R':
    case 'S':
      built = subgroupChart(type, data, ctx);
      break;
    case 'xbar.one':
      built = individualsChart(data, ctx);
      break;
    case 'MR':
      built = movingRangeChart(data, ctx);
      break;
    case 'p':
    case 'np':
    case 'c':
    case 'u':
      built = attributeChart(type, data, ctx);
      break;
    default:
      throw new ChartConfigError(`unknown chart type "${String(type)}"`);
  }
  const all = [...built.phaseOne, ...built.phaseTwo];
  const found = westernElectricViolations(
    all.map((p) => ({ statistic: p.statistic, ...p.limits })),
    rules,
    nSigma,
  );
  const points: QccPoint[] = all.map((p, index) => ({
    index,
    phase: index < built.phaseOne.length ? 'I' : 'II',
    size: p.size,
    statistic: p.statistic,
    center: p.limits.center,
    sigma: p.limits.sigma,
    lcl: p.limits.lcl,
    ucl: p.limits.ucl,
    violation: found[index],
  }));
  const chart: QccChart = {
    type,
    statistics: built.phaseOne.map((p) => p.statistic),
    newStatistics: built.phaseTwo.map((p) => p.statistic),
    center: built.center,
    stdDev: built.stdDev,
    sigmaMethod: built.sigmaMethod,
    nSigma,
    confidenceLevel: options.confidenceLevel ?? null,
    constants,
    rules: [...rules],
    points,
    violations: {
      beyondLimits: points.filter((p) => p.violation === 1).map((p) => p.index),
      violatingRuns: points.filter((p) => p.violation !== null && p.violation !== 1).map((p) => p.index),
    },
    ...(options.spec && built.capability
      ? {
          capability: processCapability(built.capability.values, options.spec, {
            sigmaWithin: built.capability.sigma,
            center: built.capability.center,
            ...(options.capabilityConfidenceLevel !== undefined
              ? { confidenceLevel: options.capabilityConfidenceLevel }
              : {}),
          }),
        }
      : {}),
  };
  return Object.freeze(chart);
}

function resolveNSigma(options: QccOptions): number {
  const level = options.confidenceLevel;
  if (level === undefined) {
    const nSigma = options.nSigma ?? 3;
    if (!(nSigma > 0 && Number.isFinite(nSigma)))
      throw new ChartConfigError(`nSigma must be > 0, got ${nSigma}`);
    return nSigma;
  }
  if (options.nSigma !== undefined) throw new ChartConfigError('give nSigma or confidenceLevel, not both');
  if (!(level > 0 && level < 1))
    throw new ChartConfigError(`confidenceLevel must be in (0, 1), got ${level}`);
  if (options.type !== 'xbar' && options.type !== 'xbar.one') {
    // qcc's limits.R / limits.S / limits.p ... turn a confidence level into probability limits,
    // which this library does not compute: refuse rather than give different limits.
    throw new ChartConfigError(
      `confidenceLevel is supported for xbar and xbar.one (normal limits); qcc's ${options.type} chart uses probability limits`,
    );
  }
  return normalQuantile(1 - (1 - level) / 2);
}

function asSubgroups(data: QccData | undefined, what: string): ArrayLike<number>[] {
  if (data === undefined) return [];
  const out: ArrayLike<number>[] = [];
  for (let i = 0; i < data.length; i++) {
    const g = data[i];
    if (typeof g === 'number')
      throw new ChartConfigError(`${what}: subgroup charts need one array of values per subgroup`);
    out.push(g);
  }
  return out;
}

function asValues(data: QccData | undefined, what: string): number[] {
  if (data === undefined) return [];
  const out: number[] = [];
  for (let i = 0; i < data.length; i++) {
    const v = data[i];
    if (typeof v !== 'number') throw new ChartConfigError(`${what}: this chart needs one number per point`);
    if (!Number.isFinite(v)) throw new ChartConfigError(`${what}: value ${i} is not finite (${v})`);
    out.push(v);
  }
  return out;
}

function sizesFor(
  sizes: number | ArrayLike<number> | undefined,
  count: number,
  what: string,
): number[] | null {
  if (sizes === undefined) return null;
  if (typeof sizes === 'number') return new Array<number>(count).fill(sizes);
  if (sizes.length !== count)
    throw new ChartConfigError(`${what}: ${sizes.length} sizes for ${count} samples`);
  return Array.from(sizes);
}

function checkKnown(value: number | undefined, what: string, positive: boolean): void {
  if (value === undefined) return;
  if (!Number.isFinite(value) || (positive && !(value > 0)))
    throw new ChartConfigError(`${what} must be ${positive ? '> 0' : 'finite'}, got ${value}`);
}

function subgroupChart(
  type: 'xbar' | 'R' | 'S',
  data: QccData,
  { options, nSigma, constants }: Context,
): Built {
  const phaseOne = asSubgroups(data, 'data');
  const phaseTwo = asSubgroups(options.newdata, 'newdata');
  const method = options.sigmaMethod;
  if (method === 'MR' || method === 'SD')
    throw new ChartConfigError(
      `sigma method ${method} belongs to xbar.one; subgroup charts use UWAVE-R, UWAVE-SD, MVLUE-R, MVLUE-SD or RMSDF`,
    );
  const stats = phaseOne.map(subgroupStatistics);
  let limits: SubgroupLimits;
  if (options.stdDev === undefined) {
    limits = subgroupLimits(phaseOne, type, {
      nSigma,
      constants,
      ...(method ? { sigmaMethod: method } : {}),
    });
  } else {
    // qcc does not estimate sigma when std.dev is given; the centre is still the Phase I one.
    if (stats.length === 0) throw new ChartConfigError('a subgroup chart needs at least one subgroup');
    let weighted = 0;
    let observations = 0;
    for (const g of stats) {
      weighted += g.size * subgroupStatistic(type, g);
      observations += g.size;
    }
    limits = {
      chart: type,
      center: weighted / observations,
      centerLine: 'weighted-mean',
      sigma: options.stdDev,
      sigmaMethod: 'known',
      nSigma,
      constants,
      groups: stats.length,
      observations,
    };
  }
  if (options.center !== undefined) limits = { ...limits, center: options.center };
  const judge = (values: ArrayLike<number>): Judged => {
    const s = subgroupStatistics(values);
    return {
      statistic: subgroupStatistic(type, s),
      size: s.size,
      limits: subgroupPointLimits(limits, s.size),
    };
  };
  const values = phaseOne.flatMap((g) => Array.from(g));
  return {
    phaseOne: phaseOne.map(judge),
    phaseTwo: phaseTwo.map(judge),
    center: limits.center,
    stdDev: limits.sigma,
    sigmaMethod: limits.sigmaMethod,
    ...(type === 'xbar' ? { capability: { values, sigma: limits.sigma, center: limits.center } } : {}),
  };
}

function individualsChart(data: QccData, { options, nSigma, constants }: Context): Built {
  const values = asValues(data, 'data');
  const newValues = asValues(options.newdata, 'newdata');
  const method = options.sigmaMethod ?? 'MR';
  if (method !== 'MR' && method !== 'SD')
    throw new ChartConfigError(`xbar.one sigma method must be MR or SD, got ${method}`);
  const est = estimateSigma(
    values,
    method === 'MR' ? 'moving-range' : 'sample-sd-unbiased',
    rangeConstants(2, constants).d2,
  );
  const center = options.center ?? est.center;
  const sigma = options.stdDev ?? est.sigma;
  const limits = shewhartLimits(center, sigma, nSigma);
  const judge = (statistic: number): Judged => ({ statistic, size: 1, limits });
  return {
    phaseOne: values.map(judge),
    phaseTwo: newValues.map(judge),
    center,
    stdDev: sigma,
    sigmaMethod: options.stdDev === undefined ? method : 'known',
    capability: { values, sigma, center },
  };
}

function movingRangeChart(data: QccData, { options, nSigma, constants }: Context): Built {
  const values = asValues(data, 'data');
  const newValues = asValues(options.newdata, 'newdata');
  if (options.center !== undefined)
    throw new ChartConfigError('an MR chart takes a known stdDev, not a centre');
  const limits =
    options.stdDev === undefined
      ? movingRangeLimits(values, { nSigma, constants })
      : knownMovingRangeLimits(options.stdDev, { nSigma, constants });
  const judge = (statistic: number): Judged => ({ statistic, size: 2, limits });
  const last = values[values.length - 1];
  return {
    phaseOne: Array.from(movingRanges(values), judge),
    phaseTwo: newValues.length > 0 ? Array.from(movingRanges(newValues, last), judge) : [],
    center: limits.center,
    stdDev: limits.mrBar / rangeConstants(2, constants).d2,
    sigmaMethod: options.stdDev === undefined ? 'MR' : 'known',
  };
}

function attributeChart(type: AttributeChartType, data: QccData, { options, nSigma }: Context): Built {
  const counts = asValues(data, 'data');
  const newCounts = asValues(options.newdata, 'newdata');
  if (options.stdDev !== undefined || options.sigmaMethod !== undefined)
    throw new ChartConfigError(
      `a ${type} chart's sigma follows from its rate: give center, not stdDev or sigmaMethod`,
    );
  const sizes = sizesFor(options.sizes, counts.length, 'sizes');
  const newSizes = sizesFor(
    options.newSizes ?? (typeof options.sizes === 'number' ? options.sizes : undefined),
    newCounts.length,
    'newSizes',
  );
  if (type !== 'c' && (sizes === null || (newCounts.length > 0 && newSizes === null)))
    throw new ChartConfigError(`sample sizes must be given for a ${type} chart (as qcc)`);
  const samples = (cs: number[], ss: number[] | null): AttributeSample[] =>
    cs.map((count, i) => (ss === null ? { count } : { count, size: ss[i] }));
  const phaseOne = samples(counts, sizes);
  const phaseTwo = samples(newCounts, newSizes);
  const rate = options.center ?? attributeRate(type, phaseOne);
  const judge = (s: AttributeSample): Judged => ({
    statistic: attributeStatistic(type, s),
    size: s.size ?? 1,
    limits: attributeLimits(type, rate, s.size, nSigma),
  });
  const j1 = phaseOne.map(judge);
  const same = (f: (j: Judged) => number): number | null =>
    j1.length > 0 && j1.every((j) => f(j) === f(j1[0])) ? f(j1[0]) : null;
  return {
    phaseOne: j1,
    phaseTwo: phaseTwo.map(judge),
    center: type === 'np' ? same((j) => j.limits.center) : rate,
    stdDev: type === 'c' || type === 'u' ? Math.sqrt(rate) : same((j) => j.limits.sigma),
    sigmaMethod: null,
  };
}
