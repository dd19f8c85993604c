/**
 * Hotelling T² charts as R qcc's `mqcc`: subgrouped data (`T2`, qcc's default) and individual
 * observations (`T2.single`), in one call; and T² with known mean vector and covariance matrix
 * (chi-square limit), which qcc has no entry for.
 */
import { ChartConfigError } from '../errors';
import { DEFAULT_ALPHA, validateAlpha } from './baseline-data';
import { MultivariateInputError } from './errors';
import {
  hotellingPhaseOneLimit,
  hotellingPhaseTwoLimit,
  knownT2Limit,
  subgroupT2PhaseOneLimit,
  subgroupT2PhaseTwoLimit,
} from './limits';
import { cholesky, choleskyLogDeterminant, choleskySolve, covarianceMatrix } from './linalg';

/** `T2`: subgroups of n >= 2 observations; `T2.single`: one observation per point. */
export type MqccType = 'T2' | 'T2.single';

/**
 * Data of a multivariate chart: individual observations as rows (`rows[i][j]` = variable j of
 * observation i), or subgroups of rows (`groups[k][i][j]` = variable j of observation i of subgroup
 * k). qcc takes one m x n matrix per variable; this is the same data, grouped by subgroup.
 */
export type MqccData = readonly (readonly number[])[] | readonly (readonly (readonly number[])[])[];

export interface MqccOptions {
  /** Default: `T2` for subgroups of two or more observations, `T2.single` for rows (as qcc). */
  readonly type?: MqccType;
  /** Given centre (qcc's `center`): used for the statistics instead of the Phase I mean. */
  readonly center?: readonly number[];
  /** Given covariance matrix (qcc's `cov`), p x p. */
  readonly covariance?: readonly (readonly number[])[];
  /** Confidence level of both limits (default (1 - 0.0027)^p, as qcc). */
  readonly confidenceLevel?: number;
  /** Phase II data (qcc's `newdata`), judged with the Phase I centre and covariance. */
  readonly newdata?: MqccData;
}

/** The multivariate chart, as qcc's `mqcc` object. */
export interface MqccChart {
  readonly type: MqccType;
  /** Phase I points m, observations per point n, variables p. */
  readonly groups: number;
  readonly size: number;
  readonly variables: number;
  readonly confidenceLevel: number;
  /** Subgroup means (T2) or the observations (T2.single), m x p. */
  readonly means: readonly (readonly number[])[];
  /** Grand mean (or the given centre). */
  readonly center: readonly number[];
  /** Pooled within-subgroup covariance (T2; divisor n - 1 per subgroup, averaged) or sample covariance (T2.single), or the given one. */
  readonly covariance: readonly (readonly number[])[];
  /** |S|, as qcc prints it. */
  readonly determinant: number;
  /** T² of each Phase I point and of each `newdata` point. */
  readonly statistics: readonly number[];
  readonly newStatistics: readonly number[];
  /** Phase I control limits (qcc's `limits`) and Phase II prediction limits (qcc's `pred.limits`); LCL 0. */
  readonly limits: { readonly lcl: 0; readonly ucl: number };
  readonly predictionLimits: { readonly lcl: 0; readonly ucl: number };
  /**
   * Indices over Phase I then Phase II points strictly above the control and the prediction UCL (qcc
   * marks both over all points: violations 1 and 2).
   */
  readonly violations: {
    readonly beyondLimits: readonly number[];
    readonly beyondPredictionLimits: readonly number[];
  };
}

interface Grouped {
  /** groups[k] = flat n x p observations of subgroup k. */
  readonly groups: Float64Array[];
  readonly m: number;
  readonly n: number;
  readonly p: number;
}

function isRows(data: MqccData): data is readonly (readonly number[])[] {
  return data.length > 0 && typeof data[0][0] === 'number';
}

/** Validates shape and values, listing every issue (up to a cap). */
function group(data: MqccData, what: string, p?: number): Grouped {
  const issues: string[] = [];
  const add = (s: string) => {
    if (issues.length < 20) issues.push(s);
  };
  const subgroups: readonly (readonly (readonly number[])[])[] = isRows(data)
    ? data.map((row) => [row])
    : (data as readonly (readonly (readonly number[])[])[]);
  const m = subgroups.length;
  if (m === 0) throw new MultivariateInputError([`${what}: no points`]);
  const n = subgroups[0].length;
  const vars = p ?? subgroups[0][0]?.length ?? 0;
  if (vars < 1) add(`${what}: observations need at least one variable`);
  const groups: Float64Array[] = [];
  subgroups.forEach((g, k) => {
    if (g.length !== n)
      add(`${what}: subgroup ${k} has ${g.length} observations, subgroup 0 has ${n} (qcc needs equal sizes)`);
    const flat = new Float64Array(g.length * vars);
    g.forEach((row, i) => {
      if (row.length !== vars)
        add(`${what}: subgroup ${k} observation ${i} has ${row.length} values, expected ${vars}`);
      for (let j = 0; j < Math.min(vars, row.length); j++) {
        if (!Number.isFinite(row[j]))
          add(`${what}: subgroup ${k} observation ${i} variable ${j} is not finite (${row[j]})`);
        flat[i * vars + j] = row[j];
      }
    });
    groups.push(flat);
  });
  if (issues.length > 0) throw new MultivariateInputError(issues);
  return { groups, m, n, p: vars };
}

function groupMeans(g: Grouped): Float64Array {
  const means = new Float64Array(g.m * g.p);
  g.groups.forEach((flat, k) => {
    for (let i = 0; i < g.n; i++) for (let j = 0; j < g.p; j++) means[k * g.p + j] += flat[i * g.p + j];
    for (let j = 0; j < g.p; j++) means[k * g.p + j] /= g.n;
  });
  return means;
}

/** Mean over subgroups of each subgroup's sample covariance (divisor n - 1), as qcc's `stats.T2`. */
function pooledCovariance(g: Grouped): Float64Array {
  const pooled = new Float64Array(g.p * g.p);
  for (const flat of g.groups) {
    const s = covarianceMatrix(flat, g.n, g.p);
    for (let i = 0; i < s.length; i++) pooled[i] += s[i] / g.m;
  }
  return pooled;
}

function toMatrix(flat: Float64Array, rows: number, cols: number): number[][] {
  return Array.from({ length: rows }, (_, i) => Array.from(flat.subarray(i * cols, (i + 1) * cols)));
}

function givenVector(v: readonly number[], p: number, what: string): Float64Array {
  const issues: string[] = [];
  if (v.length !== p) issues.push(`${what} has ${v.length} values, expected ${p}`);
  v.forEach((x, j) => {
    if (!Number.isFinite(x)) issues.push(`${what}[${j}] is not finite (${x})`);
  });
  if (issues.length > 0) throw new MultivariateInputError(issues);
  return Float64Array.from(v);
}

function givenMatrix(a: readonly (readonly number[])[], p: number, what: string): Float64Array {
  const issues: string[] = [];
  if (a.length !== p) issues.push(`${what} has ${a.length} rows, expected ${p}`);
  const flat = new Float64Array(p * p);
  a.forEach((row, i) => {
    if (row.length !== p) issues.push(`${what} row ${i} has ${row.length} values, expected ${p}`);
    row.forEach((x, j) => {
      if (!Number.isFinite(x)) issues.push(`${what}[${i}][${j}] is not finite (${x})`);
      else if (i < p && j < p) flat[i * p + j] = x;
    });
  });
  for (let i = 0; i < p && issues.length === 0; i++)
    for (let j = 0; j < i; j++)
      if (
        Math.abs(flat[i * p + j] - flat[j * p + i]) >
        1e-12 * (Math.abs(flat[i * p + j]) + Math.abs(flat[j * p + i]))
      )
        issues.push(`${what} is not symmetric at [${i}][${j}]`);
  if (issues.length > 0) throw new MultivariateInputError(issues);
  return flat;
}

/** n (xbar_k - c)' S^-1 (xbar_k - c) for each row of `means` (m x p), S given by its Cholesky factor. */
function t2Statistics(
  means: Float64Array,
  m: number,
  p: number,
  center: Float64Array,
  l: Float64Array,
  n: number,
): number[] {
  const d = new Float64Array(p);
  const out = new Array<number>(m);
  for (let k = 0; k < m; k++) {
    for (let j = 0; j < p; j++) d[j] = means[k * p + j] - center[j];
    const x = choleskySolve(l, p, d);
    let s = 0;
    for (let j = 0; j < p; j++) s += d[j] * x[j];
    out[k] = n * s;
  }
  return out;
}

function defaultConfidence(p: number): number {
  return (1 - 0.0027) ** p;
}

function above(values: readonly number[], ucl: number): number[] {
  return values.flatMap((v, i) => (v > ucl ? [i] : []));
}

/**
 * A Hotelling T² chart in one call, as R qcc's `mqcc(data, type, center, cov, confidence.level,
 * newdata)` (R/mqcc.R, `stats.T2`, `limits.T2`, `stats.T2.single`, `limits.T2.single`):
 * - `T2` (m subgroups of n >= 2 observations): T²_k = n (xbar_k - xbarbar)' Sp^-1 (xbar_k - xbarbar),
 *   Sp the mean of the subgroups' sample covariances; control limit {@link subgroupT2PhaseOneLimit},
 *   prediction limit {@link subgroupT2PhaseTwoLimit}.
 * - `T2.single` (m observations): T²_i = (x_i - xbar)' S^-1 (x_i - xbar), S the sample covariance
 *   (divisor m - 1); control limit {@link hotellingPhaseOneLimit} (Tracy, Young & Mason Beta),
 *   prediction limit {@link hotellingPhaseTwoLimit}, the same limits as {@link fitHotelling}.
 * A given `center` / `covariance` replaces the estimate in the statistics and leaves the limits as they
 * are, as qcc does; for limits that treat them as known use {@link knownParameterT2}. `newdata` is
 * scored with the Phase I centre and covariance, each point with its own subgroup size.
 *
 * @throws MultivariateInputError for unequal subgroup sizes, ragged or non-finite data, a given
 *   centre / covariance of the wrong shape, or `T2.single` asked for subgroups of several observations
 * @throws NotPositiveDefiniteError when the covariance matrix is singular
 * @throws ChartConfigError for a confidence level outside (0, 1) or too few points for the limits (m n - m - p + 1 >= 1; T2.single m > p + 1)
 */
export function mqcc(data: MqccData, options: MqccOptions = {}): MqccChart {
  const g = group(data, 'data');
  const { m, n, p } = g;
  let type: MqccType = options.type ?? (n === 1 ? 'T2.single' : 'T2');
  if (n === 1) type = 'T2.single'; // as qcc: one observation per subgroup is the individuals chart
  if (type === 'T2.single' && n > 1)
    throw new MultivariateInputError([`T2.single needs one observation per point, got subgroups of ${n}`]);
  const confidenceLevel = options.confidenceLevel ?? defaultConfidence(p);
  if (!(confidenceLevel > 0 && confidenceLevel < 1))
    throw new ChartConfigError(`confidenceLevel must be in (0, 1), got ${confidenceLevel}`);
  const alpha = 1 - confidenceLevel;

  const means = groupMeans(g);
  let center: Float64Array;
  if (options.center) center = givenVector(options.center, p, 'center');
  else {
    center = new Float64Array(p);
    for (let k = 0; k < m; k++) for (let j = 0; j < p; j++) center[j] += means[k * p + j] / m;
  }
  const cov = options.covariance
    ? givenMatrix(options.covariance, p, 'covariance')
    : type === 'T2'
      ? pooledCovariance(g)
      : covarianceMatrix(means, m, p);
  const l = cholesky(cov, p);
  const statistics = t2Statistics(means, m, p, center, l, n);

  let newStatistics: number[] = [];
  if (options.newdata) {
    const g2 = group(options.newdata, 'newdata', p);
    newStatistics = t2Statistics(groupMeans(g2), g2.m, p, center, l, g2.n);
  }

  const [control, prediction] =
    type === 'T2'
      ? [subgroupT2PhaseOneLimit(m, n, p, alpha), subgroupT2PhaseTwoLimit(m, n, p, alpha)]
      : [hotellingPhaseOneLimit(m, p, alpha), hotellingPhaseTwoLimit(m, p, alpha)];
  const all = [...statistics, ...newStatistics];
  return Object.freeze({
    type,
    groups: m,
    size: n,
    variables: p,
    confidenceLevel,
    means: toMatrix(means, m, p),
    center: Array.from(center),
    covariance: toMatrix(cov, p, p),
    determinant: Math.exp(choleskyLogDeterminant(l, p)),
    statistics,
    newStatistics,
    limits: { lcl: 0 as const, ucl: control },
    predictionLimits: { lcl: 0 as const, ucl: prediction },
    violations: { beyondLimits: above(all, control), beyondPredictionLimits: above(all, prediction) },
  });
}

/** Options of {@link knownParameterT2}. */
export interface KnownT2Options {
  /** The known mean vector mu (p values). */
  readonly mean: readonly number[];
  /** The known covariance matrix Sigma of one observation (p x p). */
  readonly covariance: readonly (readonly number[])[];
  /** Observations behind each mean (default 1: individual observations). */
  readonly size?: number;
  /** False-alarm probability (default 0.0027). */
  readonly alpha?: number;
}

/** T² against known parameters, with its chi-square limit. */
export interface KnownT2Chart {
  readonly statistics: readonly number[];
  /** chi2(1 - alpha; p). */
  readonly ucl: number;
  readonly alpha: number;
  /** Indices of the statistics strictly above the UCL. */
  readonly beyondLimits: readonly number[];
}

/**
 * T² with known parameters: T²_k = n (xbar_k - mu)' Sigma^-1 (xbar_k - mu) for each row of `means`
 * (subgroup means of n observations, or observations with n = 1), against UCL = chi2(1 - alpha; p)
 * ({@link knownT2Limit}): with mu and Sigma known, T² is exactly chi-square with p degrees of freedom,
 * in Phase I and Phase II alike. Subgroup means of raw data come from {@link subgroupMeans}.
 *
 * @throws MultivariateInputError for ragged or non-finite means or parameters of the wrong shape
 * @throws NotPositiveDefiniteError when Sigma is singular
 * @throws ChartConfigError for alpha outside (0, 0.5) or a size that is not a positive integer
 */
export function knownParameterT2(
  means: readonly (readonly number[])[],
  options: KnownT2Options,
): KnownT2Chart {
  const p = options.mean.length;
  const mu = givenVector(options.mean, p, 'mean');
  const sigma = givenMatrix(options.covariance, p, 'covariance');
  const size = options.size ?? 1;
  if (!(Number.isInteger(size) && size >= 1))
    throw new ChartConfigError(`size must be an integer >= 1, got ${size}`);
  const alpha = options.alpha ?? DEFAULT_ALPHA;
  validateAlpha(alpha);
  const g = group(means, 'means', p);
  if (g.n !== 1)
    throw new MultivariateInputError(['means: one row per point (use subgroupMeans for raw subgroups)']);
  const statistics = t2Statistics(groupMeans(g), g.m, p, mu, cholesky(sigma, p), size);
  const ucl = knownT2Limit(p, alpha);
  return Object.freeze({ statistics, ucl, alpha, beyondLimits: above(statistics, ucl) });
}

/**
 * Mean vector of each subgroup (`groups[k][i][j]` = variable j of observation i of subgroup k), m x p.
 *
 * @throws MultivariateInputError for unequal subgroup sizes or ragged or non-finite data
 */
export function subgroupMeans(groups: readonly (readonly (readonly number[])[])[]): number[][] {
  const g = group(groups, 'groups');
  return toMatrix(groupMeans(g), g.m, g.p);
}
