/**
 * Hotelling T² chart for individual observations (one indicator vector per run).
 */
import { ChartConfigError, DegenerateBaselineError, InsufficientBaselineError } from '../errors';
import {
  DEFAULT_ALPHA,
  MIN_LOO_RUNS,
  RANK_TOLERANCE,
  correlationSpectrum,
  prepareBaseline,
  sortedContributions,
  standardizeObservation,
  validateAlpha,
  validateRows,
  type LimitMethod,
  type StoredPhaseOne,
  type VariableContribution,
} from './baseline-data';
import { NotPositiveDefiniteError } from './errors';
import {
  fitScaledChiSquare,
  hotellingPhaseOneLimit,
  hotellingPhaseTwoLimit,
  scaledChiSquareQuantile,
  type ScaledChiSquare,
} from './limits';
import { evaluateWithMissing, type QuadraticForm } from './quadratic';
import { rankOneDowndate } from './secular';

/** How the covariance matrix is estimated. */
export type CovarianceEstimator = 'sample' | 'ledoit-wolf';

export interface HotellingOptions {
  /** False-alarm probability of the limit (default 0.0027). */
  readonly alpha?: number;
  /**
   * `sample` (default): S with divisor m - 1; needs m >= p + 2 and a well-conditioned S.
   * `ledoit-wolf`: Ledoit & Wolf (2004) shrinkage of the correlation matrix towards the identity
   * (the scaled identity of standardised data) with the analytic optimal intensity; works for p close
   * to or above m. Variances are kept, only correlations shrink.
   */
  readonly covariance?: CovarianceEstimator;
  /**
   * `theory` (default for `sample`): Phase II F limit. `loo` (default and required for `ledoit-wolf`,
   * which has no exact distribution): g chi2(h) fitted to the leave-one-out T² values of Phase I.
   */
  readonly limits?: LimitMethod;
}

/**
 * A fitted Hotelling T² model. Plain JSON (numbers, strings, arrays; every number finite), so it can be
 * stored as is and scored later with {@link scoreHotelling}.
 */
export interface HotellingModel extends StoredPhaseOne {
  readonly kind: 'hotelling-t2';
  readonly version: 1;
  readonly covariance: CovarianceEstimator;
  /** Ledoit-Wolf shrinkage intensity delta in [0, 1] (0 for `sample`): R* = delta I + (1 - delta) R. */
  readonly shrinkage: number;
  /** Positive eigenvalues of the Phase I correlation matrix R, descending (r of them). */
  readonly eigenvalues: readonly number[];
  /** Their unit eigenvectors, r arrays of length kept.length. */
  readonly eigenvectors: readonly (readonly number[])[];
  /** Upper control limit applied by {@link scoreHotelling}. */
  readonly limit: number;
  /** `phase-two-f`: {@link hotellingPhaseTwoLimit}; `loo`: g chi2(1 - alpha; h) of `looFit`. */
  readonly limitMethod: 'phase-two-f' | 'loo';
  /** Tracy-Young-Mason Beta limit for the Phase I statistics (`sample` only, else null). */
  readonly phaseOneLimit: number | null;
  readonly looFit: ScaledChiSquare | null;
  readonly phaseOne: {
    /** T² of each Phase I run against the model. */
    readonly t2: readonly number[];
    /** Leave-one-out T² of each run (`loo` only). */
    readonly looT2: readonly number[] | null;
  };
}

/** The result of scoring one run. */
export interface HotellingScore {
  readonly t2: number;
  readonly limit: number;
  /** t2 > limit. */
  readonly exceeded: boolean;
  /** Complete-decomposition contributions (non-negative, sum to t2), largest first. */
  readonly contributions: readonly VariableContribution[];
  /** Model variables whose value was missing (non-finite); see {@link scoreHotelling}. */
  readonly missing: readonly string[];
  /** Dropped (constant) variables whose value lies outside their Phase I range. */
  readonly droppedOutOfRange: readonly string[];
}

/**
 * Fits a Hotelling T² model on Phase I runs (individual observations): mean, sd, (shrunk) correlation
 * matrix, Phase I T² of every run and the control limit. Variables without variation are dropped
 * (listed with a reason). T² is computed on autoscaled data, which leaves it unchanged (T² is
 * invariant under affine rescaling of the variables) and keeps the arithmetic well scaled.
 *
 * Leave-one-out (`limits: 'loo'`): every run is scored against the model fitted on the other m - 1
 * runs; the mean and covariance of each fold are exact rank-one downdates of the Phase I ones, so
 * all m folds cost O(m r^2) (see secular.ts). The Phase I autoscaling and the shrinkage intensity are
 * held at their full-sample values in the folds. For the sample covariance this is the exact
 * leave-one-out T², T²_(i) = (m / (m - 1))^2 ((m - 2) / (m - 1)) T²_i / (1 - m T²_i / (m - 1)^2).
 *
 * @throws MultivariateInputError bad shapes, names or non-finite Phase I values
 * @throws InsufficientBaselineError fewer runs than the method needs
 * @throws NotPositiveDefiniteError `sample` with a singular or ill-conditioned correlation matrix
 * @throws DegenerateBaselineError no varying variable, or degenerate leave-one-out values
 * @throws ChartConfigError bad options
 */
export function fitHotelling(
  rows: readonly (readonly number[])[],
  names: readonly string[],
  options: HotellingOptions = {},
): HotellingModel {
  const alpha = options.alpha ?? DEFAULT_ALPHA;
  validateAlpha(alpha);
  const covariance = options.covariance ?? 'sample';
  if (covariance !== 'sample' && covariance !== 'ledoit-wolf') {
    throw new ChartConfigError(`covariance must be 'sample' or 'ledoit-wolf', got ${String(covariance)}`);
  }
  const limits = options.limits ?? (covariance === 'sample' ? 'theory' : 'loo');
  if (limits !== 'theory' && limits !== 'loo') {
    throw new ChartConfigError(`limits must be 'theory' or 'loo', got ${String(limits)}`);
  }
  if (covariance === 'ledoit-wolf' && limits === 'theory') {
    throw new ChartConfigError(
      "shrinkage T² has no exact distribution: use limits: 'loo' with 'ledoit-wolf'",
    );
  }
  validateRows(rows, names);
  const m = rows.length;
  if (m < 3) throw new InsufficientBaselineError(m, 3, 'Hotelling T² needs at least 3 Phase I runs');
  const prep = prepareBaseline(rows, names);
  const p = prep.p;
  if (covariance === 'sample' && m < p + 2) {
    throw new InsufficientBaselineError(
      m,
      p + 2,
      `sample-covariance T² of ${p} variables needs m >= p + 2; use covariance: 'ledoit-wolf' or the PCA model`,
    );
  }
  if (limits === 'loo') {
    const need = covariance === 'sample' ? Math.max(MIN_LOO_RUNS, p + 3) : MIN_LOO_RUNS;
    if (m < need)
      throw new InsufficientBaselineError(m, need, `leave-one-out limits (${covariance} covariance)`);
  }

  const spec = correlationSpectrum(prep.z, m, p);
  const r = spec.r;
  const lambda = spec.values;
  let shrinkage = 0;
  if (covariance === 'sample') {
    if (r < p) {
      throw new NotPositiveDefiniteError(
        `the correlation matrix of the ${p} kept variables has numerical rank ${r} (collinear indicators); ` +
          "use covariance: 'ledoit-wolf' or the PCA model",
      );
    }
  } else {
    shrinkage = ledoitWolfIntensity(prep.z, m, p, lambda);
  }
  const shrunk = new Float64Array(r);
  for (let a = 0; a < r; a++) shrunk[a] = shrinkage + (1 - shrinkage) * lambda[a];

  const t2 = new Array<number>(m);
  for (let i = 0; i < m; i++) {
    let s = 0;
    for (let a = 0; a < r; a++) s += spec.scores[i * r + a] ** 2 / shrunk[a];
    t2[i] = s;
  }

  let limit: number;
  let phaseOneLimit: number | null = null;
  let looFit: ScaledChiSquare | null = null;
  let looT2: number[] | null = null;
  if (limits === 'theory') {
    phaseOneLimit = hotellingPhaseOneLimit(m, p, alpha);
    limit = hotellingPhaseTwoLimit(m, p, alpha);
  } else {
    if (covariance === 'sample') phaseOneLimit = hotellingPhaseOneLimit(m, p, alpha);
    looT2 = leaveOneOutT2(spec.scores, lambda, m, r, shrinkage);
    looFit = fitScaledChiSquare(looT2);
    limit = scaledChiSquareQuantile(looFit, alpha);
  }

  const vectors: number[][] = [];
  const loadings = spec.vectorsOf(r);
  for (let a = 0; a < r; a++) vectors.push(Array.from(loadings.subarray(a * p, (a + 1) * p)));
  return {
    kind: 'hotelling-t2',
    version: 1,
    names: [...names],
    kept: [...prep.kept],
    dropped: prep.dropped,
    runs: m,
    alpha,
    covariance,
    shrinkage,
    mean: Array.from(prep.mean),
    sd: Array.from(prep.sd),
    eigenvalues: Array.from(lambda),
    eigenvectors: vectors,
    limit,
    limitMethod: limits === 'theory' ? 'phase-two-f' : 'loo',
    phaseOneLimit,
    looFit,
    phaseOne: { t2, looT2 },
  };
}

/**
 * Ledoit & Wolf (2004) analytic shrinkage intensity for standardised data (sds with divisor m, so the
 * sample covariance S is the correlation matrix R and the target mu I has mu = tr(S) / p = 1):
 * d^2 = |S - I|^2, bbar^2 = m^-2 sum_k |y_k y_k' - S|^2, delta = min(bbar^2, d^2) / d^2, with
 * |A|^2 = tr(A A') / p. Using |S|_F^2 = sum lambda^2 and sum_k |y_k y_k' - S|_F^2 =
 * sum_k |y_k|^4 - m |S|_F^2, no p x p matrix is formed.
 */
function ledoitWolfIntensity(z: Float64Array, m: number, p: number, lambda: Float64Array): number {
  let sumLambda2 = 0;
  for (let a = 0; a < lambda.length; a++) sumLambda2 += lambda[a] * lambda[a];
  // y = z sqrt(m / (m - 1)) has unit 1/m-variance.
  const c = m / (m - 1);
  let sumNorm4 = 0;
  for (let i = 0; i < m; i++) {
    let s = 0;
    for (let j = 0; j < p; j++) s += z[i * p + j] ** 2;
    sumNorm4 += c * c * s * s;
  }
  const d2 = (sumLambda2 - p) / p;
  const bbar2 = Math.max(0, (sumNorm4 - m * sumLambda2) / (m * m * p));
  if (!(d2 > 0)) return 1;
  return Math.min(1, Math.min(bbar2, d2) / d2);
}

/** Leave-one-out T² of every Phase I run (fixed autoscaling and shrinkage; see {@link fitHotelling}). */
function leaveOneOutT2(
  scores: Float64Array,
  lambda: Float64Array,
  m: number,
  r: number,
  shrinkage: number,
): number[] {
  const d = new Float64Array(r);
  for (let a = 0; a < r; a++) d[a] = (m - 1) * lambda[a];
  const sigma = m / (m - 1);
  const factor = sigma * sigma;
  const out = new Array<number>(m);
  for (let i = 0; i < m; i++) {
    const spec = rankOneDowndate(d, scores.subarray(i * r, (i + 1) * r), sigma);
    let s = 0;
    for (let a = 0; a < spec.values.length; a++) {
      const l = shrinkage + ((1 - shrinkage) * spec.values[a]) / (m - 2);
      if (spec.projections[a] === 0) continue;
      if (!(l > RANK_TOLERANCE * (shrinkage + (1 - shrinkage) * lambda[0]))) {
        throw new DegenerateBaselineError(
          `the Phase I runs without run ${i + 1} have a singular covariance matrix`,
        );
      }
      s += spec.projections[a] / l;
    }
    out[i] = factor * s;
  }
  return out;
}

/** R*^-1 (or its root) as a quadratic form on autoscaled kept variables. */
function shrunkInverseForm(model: HotellingModel): QuadraticForm {
  const p = model.kept.length;
  const r = model.eigenvalues.length;
  const delta = model.shrinkage;
  const make =
    (power: number) =>
    (v: Float64Array): Float64Array => {
      // A^power v = sum_a l_a^-power (v_a'v) v_a + delta^-power (v - sum_a (v_a'v) v_a)
      const tail = delta > 0 ? Math.pow(delta, -power) : 0;
      const out = new Float64Array(p);
      if (tail !== 0) for (let j = 0; j < p; j++) out[j] = tail * v[j];
      for (let a = 0; a < r; a++) {
        const vec = model.eigenvectors[a];
        let c = 0;
        for (let j = 0; j < p; j++) c += vec[j] * v[j];
        const l = delta + (1 - delta) * model.eigenvalues[a];
        const coef = c * (Math.pow(l, -power) - tail);
        for (let j = 0; j < p; j++) out[j] += coef * vec[j];
      }
      return out;
    };
  return { size: p, apply: make(1), applyRoot: make(0.5) };
}

/**
 * Scores one run against a fitted model: T² = (x - xbar)' S*^-1 (x - xbar), its limit and the
 * complete-decomposition contributions c_j = ((S*^-1/2 (x - xbar))_j)^2 (Alcala & Qin 2009), which are
 * non-negative and sum to T².
 *
 * Missing values (NaN or +/-Infinity in x): T² is taken at the missing values that minimise it, which
 * is the T² of the observed variables alone (min over x_M of the quadratic form = x_O' S*_OO^-1 x_O),
 * so a missing indicator never raises an alarm; the limit is not changed (conservative).
 *
 * @throws MultivariateInputError if x does not have one value per model variable
 */
export function scoreHotelling(model: HotellingModel, x: readonly number[]): HotellingScore {
  const obs = standardizeObservation(model, x);
  const res = evaluateWithMissing(shrunkInverseForm(model), obs.z, obs.missing);
  return {
    t2: res.value,
    limit: model.limit,
    exceeded: res.value > model.limit,
    contributions: sortedContributions(model, res.contributions),
    missing: obs.missing.map((c) => model.names[model.kept[c]]),
    droppedOutOfRange: obs.droppedOutOfRange,
  };
}
