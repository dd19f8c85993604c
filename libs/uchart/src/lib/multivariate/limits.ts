/**
 * Control limits of multivariate statistics: Hotelling T² (Tracy, Young & Mason 1992 Phase I Beta
 * limit; Phase II F limit for a new observation with estimated parameters), the Q / SPE statistic
 * (Jackson & Mudholkar 1979; Box 1954), and a scaled chi-square g * chi2(h) fitted by moments.
 */
import { ChartConfigError, DegenerateBaselineError } from '../errors';
import { logGamma } from '../constants';
import { betaQuantile, chiSquareQuantile, fQuantile, normalQuantile } from '../distributions';

function checkAlpha(alpha: number): void {
  if (!(alpha > 0 && alpha < 1)) throw new ChartConfigError(`alpha must be in (0, 1), got ${alpha}`);
}

/**
 * Phase I upper control limit of T²_i = (x_i - xbar)' S^-1 (x_i - xbar) for m individual
 * observations of p variables, with xbar and S from the same m runs: T²_i (m / (m - 1)^2) is exactly
 * Beta(p / 2, (m - p - 1) / 2) (Gnanadesikan & Kettenring 1972; Tracy, Young & Mason 1992), so
 * UCL = ((m - 1)^2 / m) B(1 - alpha; p / 2, (m - p - 1) / 2).
 *
 * @throws ChartConfigError unless p >= 1 and m > p + 1
 */
export function hotellingPhaseOneLimit(m: number, p: number, alpha: number): number {
  checkAlpha(alpha);
  if (!(Number.isInteger(p) && p >= 1 && Number.isInteger(m) && m > p + 1)) {
    throw new ChartConfigError(`Phase I T² limit needs integer p >= 1 and m > p + 1 (m = ${m}, p = ${p})`);
  }
  return (((m - 1) * (m - 1)) / m) * betaQuantile(1 - alpha, p / 2, (m - p - 1) / 2);
}

/**
 * Phase II upper control limit of T² for a new observation independent of the m Phase I runs that
 * estimated xbar and S: UCL = p (m + 1) (m - 1) / (m (m - p)) F(1 - alpha; p, m - p) (Tracy, Young &
 * Mason 1992; NIST/SEMATECH e-Handbook 6.5.4.3.4; Ryan 2000, ch. 9).
 *
 * @throws ChartConfigError unless p >= 1 and m > p
 */
export function hotellingPhaseTwoLimit(m: number, p: number, alpha: number): number {
  checkAlpha(alpha);
  if (!(Number.isInteger(p) && p >= 1 && Number.isInteger(m) && m > p)) {
    throw new ChartConfigError(`Phase II T² limit needs integer p >= 1 and m > p (m = ${m}, p = ${p})`);
  }
  return ((p * (m + 1) * (m - 1)) / (m * (m - p))) * fQuantile(1 - alpha, p, m - p);
}

/** theta_i = sum_j lambda_j^i over the residual (left-out) eigenvalues, i = 1, 2, 3. */
export interface ResidualMoments {
  readonly theta1: number;
  readonly theta2: number;
  readonly theta3: number;
}

export function residualMoments(residualEigenvalues: ArrayLike<number>): ResidualMoments {
  let theta1 = 0;
  let theta2 = 0;
  let theta3 = 0;
  for (let i = 0; i < residualEigenvalues.length; i++) {
    const l = Math.max(0, residualEigenvalues[i]);
    theta1 += l;
    theta2 += l * l;
    theta3 += l * l * l;
  }
  return { theta1, theta2, theta3 };
}

/**
 * Jackson & Mudholkar (1979) upper limit of Q = SPE at false-alarm probability alpha:
 * Q_a = theta1 [c_a sqrt(2 theta2 h0^2) / theta1 + 1 + theta2 h0 (h0 - 1) / theta1^2]^(1 / h0),
 * h0 = 1 - 2 theta1 theta3 / (3 theta2^2), c_a the standard normal (1 - alpha)-quantile. The residual
 * eigenvalues are those of the covariance (divisor m - 1) of the autoscaled data beyond the retained
 * components.
 *
 * Returns 0 when no residual variance is left, and NaN when h0 <= 0 (a residual spectrum with a few
 * large and many small eigenvalues, where the normal approximation of (Q / theta1)^h0 breaks down; use
 * {@link boxSpeLimit} then).
 */
export function jacksonMudholkarLimit(residualEigenvalues: ArrayLike<number>, alpha: number): number {
  checkAlpha(alpha);
  const { theta1, theta2, theta3 } = residualMoments(residualEigenvalues);
  if (!(theta1 > 0)) return 0;
  const h0 = 1 - (2 * theta1 * theta3) / (3 * theta2 * theta2);
  if (!(h0 > 0)) return NaN;
  const ca = normalQuantile(1 - alpha);
  const base =
    1 + (ca * Math.sqrt(2 * theta2 * h0 * h0)) / theta1 + (theta2 * h0 * (h0 - 1)) / (theta1 * theta1);
  if (!(base > 0)) return NaN;
  return theta1 * Math.pow(base, 1 / h0);
}

/** A scaled chi-square distribution g * chi2(h). */
export interface ScaledChiSquare {
  readonly g: number;
  readonly h: number;
}

/**
 * Box (1954) approximation of a weighted sum of chi-square(1) variables, Q ~ g chi2(h) with
 * g = theta2 / theta1 and h = theta1^2 / theta2 (same mean and variance); the SPE limit is
 * g chi2(1 - alpha; h). Returns 0 when no residual variance is left.
 */
export function boxSpeLimit(residualEigenvalues: ArrayLike<number>, alpha: number): number {
  checkAlpha(alpha);
  const { theta1, theta2 } = residualMoments(residualEigenvalues);
  if (!(theta1 > 0)) return 0;
  return scaledChiSquareQuantile({ g: theta2 / theta1, h: (theta1 * theta1) / theta2 }, alpha);
}

/**
 * Fits g chi2(h) to observed values by matching their mean and variance (Box 1954; Nomikos &
 * MacGregor 1995): g = var / (2 mean), h = 2 mean^2 / var, var with divisor n - 1.
 *
 * @throws DegenerateBaselineError with fewer than two values, a non-positive mean or zero variance
 */
export function fitScaledChiSquare(values: ArrayLike<number>): ScaledChiSquare {
  const n = values.length;
  if (n < 2) throw new DegenerateBaselineError(`a scaled chi-square fit needs at least two values, got ${n}`);
  let s = 0;
  for (let i = 0; i < n; i++) s += values[i];
  const mean = s / n;
  let ss = 0;
  for (let i = 0; i < n; i++) ss += (values[i] - mean) ** 2;
  const variance = ss / (n - 1);
  if (!(mean > 0 && variance > 0 && Number.isFinite(variance))) {
    throw new DegenerateBaselineError(
      `cannot fit g chi2(h) to values with mean ${mean} and variance ${variance} (need both > 0)`,
    );
  }
  return { g: variance / (2 * mean), h: (2 * mean * mean) / variance };
}

/** The (1 - alpha)-quantile of g chi2(h). */
export function scaledChiSquareQuantile(dist: ScaledChiSquare, alpha: number): number {
  checkAlpha(alpha);
  return dist.g * chiSquareQuantile(1 - alpha, dist.h);
}

/**
 * Upper (1 - alpha) prediction limit for one new value of a positive statistic whose logarithm is
 * normal, from observed values: exp(ybar + t(1 - alpha; n - 1) s sqrt(1 + 1/n)), ybar and s (divisor
 * n - 1) of ln(values): the normal prediction interval (Hahn & Meeker, Statistical Intervals, 1991,
 * ch. 4) on the logarithms. A leave-one-out SPE is close to lognormal
 * when a few indicators' heavy tails dominate it, where a moment-matched g chi2(h) has too light a tail.
 *
 * @throws DegenerateBaselineError with fewer than three values or a value that is not positive and finite
 */
export function logNormalPredictionLimit(values: ArrayLike<number>, alpha: number): number {
  checkAlpha(alpha);
  const n = values.length;
  if (n < 3) throw new DegenerateBaselineError(`a lognormal prediction limit needs at least three values, got ${n}`);
  let s = 0;
  for (let i = 0; i < n; i++) {
    const v = values[i] as number;
    if (!(v > 0 && Number.isFinite(v))) throw new DegenerateBaselineError(`a lognormal prediction limit needs positive values, got ${v}`);
    s += Math.log(v);
  }
  const mean = s / n;
  let ss = 0;
  for (let i = 0; i < n; i++) ss += (Math.log(values[i] as number) - mean) ** 2;
  const sd = Math.sqrt(ss / (n - 1));
  // One-sided t(1 - alpha; nu)^2 = F(1 - 2 alpha; 1, nu) for alpha < 1/2 (symmetric above).
  const t = alpha === 0.5 ? 0 : Math.sign(0.5 - alpha) * Math.sqrt(fQuantile(Math.abs(1 - 2 * alpha), 1, n - 1));
  return Math.exp(mean + t * sd * Math.sqrt(1 + 1 / n));
}

/** The upper-tail model of a positive statistic chosen by {@link fitTail}, and its prediction limit. */
export interface TailFit {
  readonly model: 'scaled-chi-square' | 'lognormal';
  /** Log-likelihood of the values under each model (both have two parameters, so the larger wins). */
  readonly logLikelihood: { readonly scaledChiSquare: number; readonly logNormal: number };
  /** The chosen model's (1 - alpha) limit: g chi2(h) quantile, or the lognormal prediction limit. */
  readonly limit: number;
}

/**
 * Chooses between g chi2(h) (moments) and a lognormal for observed positive values (e.g. leave-one-out
 * SPEs) by maximum likelihood (equal parameter counts: the AIC comparison) and returns the chosen
 * model's (1 - alpha) limit. A chi-square-like statistic keeps its chi-square tail; one whose values
 * are dominated by a few heavy-tailed terms gets the lognormal's longer tail.
 *
 * @throws DegenerateBaselineError with fewer than three values or one that is not positive and finite
 */
export function fitTail(values: ArrayLike<number>, alpha: number): TailFit {
  checkAlpha(alpha);
  const n = values.length;
  if (n < 3) throw new DegenerateBaselineError(`a tail fit needs at least three values, got ${n}`);
  let sumLog = 0;
  for (let i = 0; i < n; i++) {
    const v = values[i] as number;
    if (!(v > 0 && Number.isFinite(v))) throw new DegenerateBaselineError(`a tail fit needs positive values, got ${v}`);
    sumLog += Math.log(v);
  }
  const { g, h } = fitScaledChiSquare(values);
  const mu = sumLog / n;
  let ss = 0;
  for (let i = 0; i < n; i++) ss += (Math.log(values[i] as number) - mu) ** 2;
  const sigma2 = ss / n;
  let chi = 0;
  let ln = 0;
  const chiConst = (h / 2) * Math.log(2) + logGamma(h / 2) + Math.log(g);
  for (let i = 0; i < n; i++) {
    const x = values[i] as number;
    const y = x / g;
    chi += (h / 2 - 1) * Math.log(y) - y / 2 - chiConst;
    ln += -Math.log(x) - 0.5 * Math.log(2 * Math.PI * sigma2) - (Math.log(x) - mu) ** 2 / (2 * sigma2);
  }
  const logNormalWins = sigma2 > 0 && ln > chi;
  return {
    model: logNormalWins ? 'lognormal' : 'scaled-chi-square',
    logLikelihood: { scaledChiSquare: chi, logNormal: ln },
    limit: logNormalWins ? logNormalPredictionLimit(values, alpha) : scaledChiSquareQuantile({ g, h }, alpha),
  };
}

function checkSubgroupT2(m: number, n: number, p: number): number {
  const df2 = m * n - m - p + 1;
  if (!(Number.isInteger(m) && m >= 2 && Number.isInteger(n) && n >= 2 && Number.isInteger(p) && p >= 1 && df2 >= 1)) {
    throw new ChartConfigError(
      `subgroup T² limits need integers m >= 2, n >= 2, p >= 1 and m n - m - p + 1 >= 1 (m = ${m}, n = ${n}, p = ${p})`,
    );
  }
  return df2;
}

/**
 * Phase I upper control limit of the subgroup T²_k = n (xbar_k - xbarbar)' Sp^-1 (xbar_k - xbarbar) for
 * m subgroups of n values of p variables, Sp the pooled within-subgroup covariance:
 * UCL = p (m - 1)(n - 1) / (m n - m - p + 1) F(1 - alpha; p, m n - m - p + 1) (Alt 1985; Montgomery,
 * Introduction to SQC, ch. 11; R qcc `limits.T2`, control limits).
 *
 * @throws ChartConfigError unless m >= 2, n >= 2, p >= 1 and m n - m - p + 1 >= 1
 */
export function subgroupT2PhaseOneLimit(m: number, n: number, p: number, alpha: number): number {
  checkAlpha(alpha);
  const df2 = checkSubgroupT2(m, n, p);
  return ((p * (m - 1) * (n - 1)) / df2) * fQuantile(1 - alpha, p, df2);
}

/**
 * Phase II upper limit of the subgroup T² of a new subgroup of n values against xbarbar and Sp from m
 * Phase I subgroups: UCL = p (m + 1)(n - 1) / (m n - m - p + 1) F(1 - alpha; p, m n - m - p + 1)
 * (Alt 1985; Montgomery, ch. 11; R qcc `limits.T2`, prediction limits).
 *
 * @throws ChartConfigError as {@link subgroupT2PhaseOneLimit}
 */
export function subgroupT2PhaseTwoLimit(m: number, n: number, p: number, alpha: number): number {
  checkAlpha(alpha);
  const df2 = checkSubgroupT2(m, n, p);
  return ((p * (m + 1) * (n - 1)) / df2) * fQuantile(1 - alpha, p, df2);
}

/**
 * Upper limit of T² with known mean vector and covariance matrix: T² is chi-square with p degrees of
 * freedom, UCL = chi2(1 - alpha; p) (Montgomery, Introduction to SQC, ch. 11).
 *
 * @throws ChartConfigError unless p is an integer >= 1
 */
export function knownT2Limit(p: number, alpha: number): number {
  checkAlpha(alpha);
  if (!(Number.isInteger(p) && p >= 1)) throw new ChartConfigError(`T² limit needs an integer p >= 1, got ${p}`);
  return chiSquareQuantile(1 - alpha, p);
}
