/**
 * PCA monitoring of a run's indicator vector: Hotelling T² on the retained principal component scores
 * and the squared prediction error SPE (Q) of the residual, with contributions.
 */
import { ChartConfigError, DegenerateBaselineError, InsufficientBaselineError } from '../errors';
import {
  DEFAULT_ALPHA,
  MIN_LOO_RUNS,
  correlationSpectrum,
  prepareBaseline,
  validateAlpha,
  validateRows,
  type CorrelationSpectrum,
  type LimitMethod,
  type PreparedBaseline,
  type StoredPhaseOne,
} from './baseline-data';
import {
  boxSpeLimit,
  fitScaledChiSquare,
  hotellingPhaseTwoLimit,
  jacksonMudholkarLimit,
  scaledChiSquareQuantile,
  type ScaledChiSquare,
} from './limits';
import { rankOneDowndate } from './secular';

/**
 * How many principal components to retain (eigenvalues of the Phase I correlation matrix):
 * - `cumulative-variance`: the fewest whose eigenvalues sum to at least `fraction` (default 0.9) of
 *   the total variance (= the number of kept variables);
 * - `kaiser`: those with eigenvalue > 1 (Kaiser 1960), at least one;
 * - `fixed`: `count`.
 * Every rule is then capped at min(m - 2, rank - 1): m - 2 keeps the T² limit's F(k, m - k) and every
 * leave-one-out fold defined, rank - 1 keeps a residual subspace so SPE means something.
 */
export type ComponentRule =
  | { readonly rule: 'cumulative-variance'; readonly fraction?: number }
  | { readonly rule: 'kaiser' }
  | { readonly rule: 'fixed'; readonly count: number };

/** The SPE limit under `limits: 'theory'`. */
export type SpeLimitMethod = 'jackson-mudholkar' | 'box';

export interface PcaOptions {
  /** False-alarm probability of each of the T² and SPE limits (default 0.0027). */
  readonly alpha?: number;
  /** Default `{ rule: 'cumulative-variance', fraction: 0.9 }`. */
  readonly components?: ComponentRule;
  /**
   * `theory` (default): T² Phase II F limit with p = k; SPE limit by `speLimit`.
   * `loo`: both limits from g chi2(h) fitted to the leave-one-out statistics of the Phase I runs.
   */
  readonly limits?: LimitMethod;
  /**
   * `jackson-mudholkar` (default) or `box` (g chi2(h), g = theta2 / theta1, h = theta1^2 / theta2).
   * Jackson-Mudholkar falls back to Box when undefined (h0 <= 0); `limits.speMethod` says which.
   */
  readonly speLimit?: SpeLimitMethod;
}

/**
 * A fitted PCA monitoring model. Plain JSON (numbers, strings, arrays, null; every number finite), so
 * it can be stored as is and scored later with {@link scorePca}.
 */
export interface PcaModel extends StoredPhaseOne {
  readonly kind: 'pca';
  readonly version: 1;
  /** All positive eigenvalues of the Phase I correlation matrix, descending. */
  readonly eigenvalues: readonly number[];
  /** Retained components k. */
  readonly components: number;
  readonly componentRule: ComponentRule;
  /** The count the rule asked for when the cap min(m - 2, rank - 1) lowered it, else null. */
  readonly componentsRequested: number | null;
  /** Fraction of the total variance explained by the k components. */
  readonly explainedVariance: number;
  /** k loadings (unit eigenvectors), each of length kept.length. */
  readonly loadings: readonly (readonly number[])[];
  readonly limits: {
    readonly method: LimitMethod;
    /** Limits applied by {@link scorePca}. */
    readonly t2: number;
    readonly spe: number;
    readonly speMethod: 'jackson-mudholkar' | 'box' | 'loo';
    /** Distribution-theory limits, always computed (for comparison). */
    readonly theory: {
      readonly t2: number;
      /** null when undefined (h0 <= 0). */
      readonly speJacksonMudholkar: number | null;
      readonly speBox: number;
    };
    readonly looT2Fit: ScaledChiSquare | null;
    readonly looSpeFit: ScaledChiSquare | null;
  };
  readonly phaseOne: {
    readonly t2: readonly number[];
    readonly spe: readonly number[];
    readonly looT2: readonly number[] | null;
    readonly looSpe: readonly number[] | null;
  };
}

const DEFAULT_RULE: ComponentRule = { rule: 'cumulative-variance', fraction: 0.9 };

/**
 * Fits a PCA monitoring model on Phase I runs (rows: one indicator vector per run, same order as
 * `names`). Data are autoscaled with the Phase I mean and sd; variables without variation (constant,
 * or sd <= 1e-9 |mean|) are dropped and listed with the reason. The eigen-decomposition goes through
 * the m x m Gram matrix when there are more variables than runs.
 *
 * Leave-one-out (`limits: 'loo'`): every run is scored (T², SPE) against the PCA model with the same
 * k fitted on the other m - 1 runs. The fold mean and covariance are exact rank-one downdates of the
 * Phase I ones, so each fold's eigenvalues and the left-out run's projections come from a secular
 * equation in the r-dimensional Phase I eigenbasis (O(r^2) per fold, O(m p min(m, p)) in total)
 * instead of m new decompositions. The folds keep the Phase I autoscaling (mean and sd of all m runs
 * for the standardisation; the fold's own mean and covariance for the model). The limits are then
 * the (1 - alpha)-quantiles of g chi2(h) fitted to the m leave-one-out values by mean and variance.
 *
 * @throws MultivariateInputError bad shapes, names or non-finite Phase I values
 * @throws InsufficientBaselineError fewer than 3 runs (10 for `loo`)
 * @throws DegenerateBaselineError fewer than two varying variables, rank < 2, degenerate folds
 * @throws ChartConfigError bad options
 */
export function fitPcaModel(
  rows: readonly (readonly number[])[],
  names: readonly string[],
  options: PcaOptions = {},
): PcaModel {
  const settings = settingsOf(options);
  validateRows(rows, names);
  checkRuns(rows.length, settings.method);
  return fitOnBasis(basisOf(rows, names), settings);
}

/**
 * The Phase I data of a PCA prepared once for several questions (how many components a rule retains,
 * the fit): validated, autoscaled, and the spectrum of its correlation matrix. Opaque.
 */
export interface PcaBasis {
  readonly runs: number;
  readonly names: readonly string[];
  readonly prepared: PreparedBaseline;
  readonly spectrum: CorrelationSpectrum;
}

/**
 * Validates and prepares Phase I runs for {@link pcaComponentCount} and {@link fitPcaBasis}.
 *
 * @throws MultivariateInputError bad shapes, names or non-finite Phase I values
 * @throws DegenerateBaselineError no variable varies
 */
export function preparePcaBasis(rows: readonly (readonly number[])[], names: readonly string[]): PcaBasis {
  validateRows(rows, names);
  return basisOf(rows, names);
}

/**
 * The components {@link fitPcaModel} retains under `rule` on these runs (the rule's count, capped at
 * min(m - 2, rank - 1)), without the fit.
 *
 * @throws DegenerateBaselineError rank < 2 or fewer than 3 runs, as the fit
 * @throws ChartConfigError a bad rule
 */
export function pcaComponentCount(basis: PcaBasis, rule: ComponentRule): number {
  validateRule(rule);
  return Math.min(componentCount(rule, basis.spectrum.values, basis.prepared.p), capOf(basis));
}

/**
 * {@link fitPcaModel} on prepared runs: the same model, without preparing them again.
 *
 * @throws as {@link fitPcaModel}, but for the input errors {@link preparePcaBasis} reports
 */
export function fitPcaBasis(basis: PcaBasis, options: PcaOptions = {}): PcaModel {
  const settings = settingsOf(options);
  checkRuns(basis.runs, settings.method);
  return fitOnBasis(basis, settings);
}

interface PcaSettings {
  readonly alpha: number;
  readonly rule: ComponentRule;
  readonly method: LimitMethod;
  readonly speLimit: SpeLimitMethod;
}

function settingsOf(options: PcaOptions): PcaSettings {
  const alpha = options.alpha ?? DEFAULT_ALPHA;
  validateAlpha(alpha);
  const rule = options.components ?? DEFAULT_RULE;
  validateRule(rule);
  const method = options.limits ?? 'theory';
  if (method !== 'theory' && method !== 'loo') {
    throw new ChartConfigError(`limits must be 'theory' or 'loo', got ${String(method)}`);
  }
  const speLimit = options.speLimit ?? 'jackson-mudholkar';
  if (speLimit !== 'jackson-mudholkar' && speLimit !== 'box') {
    throw new ChartConfigError(`speLimit must be 'jackson-mudholkar' or 'box', got ${String(speLimit)}`);
  }
  return { alpha, rule, method, speLimit };
}

function checkRuns(m: number, method: LimitMethod): void {
  const minRuns = method === 'loo' ? MIN_LOO_RUNS : 3;
  if (m < minRuns) throw new InsufficientBaselineError(m, minRuns, `PCA model with ${method} limits`);
}

function basisOf(rows: readonly (readonly number[])[], names: readonly string[]): PcaBasis {
  const prepared = prepareBaseline(rows, names);
  return { runs: rows.length, names, prepared, spectrum: correlationSpectrum(prepared.z, rows.length, prepared.p) };
}

/** The most components a model of these runs may retain: min(m - 2, rank - 1). */
function capOf(basis: PcaBasis): number {
  const m = basis.runs;
  const r = basis.spectrum.r;
  const cap = Math.min(m - 2, r - 1);
  if (cap < 1) {
    throw new DegenerateBaselineError(
      `PCA needs at least two independent varying variables and 3 runs (rank ${r}, ${m} runs)`,
    );
  }
  return cap;
}

function fitOnBasis(basis: PcaBasis, settings: PcaSettings): PcaModel {
  const { alpha, rule, method, speLimit } = settings;
  const { names, prepared: prep, spectrum: spec } = basis;
  const m = basis.runs;
  const p = prep.p;
  const r = spec.r;
  const lambda = spec.values;
  const cap = capOf(basis);
  const requested = componentCount(rule, lambda, p);
  const k = Math.min(requested, cap);

  let explained = 0;
  for (let a = 0; a < k; a++) explained += lambda[a];
  const residual = lambda.subarray(k);

  const t2 = new Array<number>(m);
  const spe = new Array<number>(m);
  for (let i = 0; i < m; i++) {
    let t = 0;
    let q = 0;
    for (let a = 0; a < r; a++) {
      const s = spec.scores[i * r + a];
      if (a < k) t += (s * s) / lambda[a];
      else q += s * s;
    }
    t2[i] = t;
    spe[i] = q;
  }

  const theoryT2 = hotellingPhaseTwoLimit(m, k, alpha);
  const jm = jacksonMudholkarLimit(residual, alpha);
  const box = boxSpeLimit(residual, alpha);
  const theorySpeMethod: 'jackson-mudholkar' | 'box' =
    speLimit === 'jackson-mudholkar' && Number.isFinite(jm) ? 'jackson-mudholkar' : 'box';

  let t2Limit = theoryT2;
  let speLimitValue = theorySpeMethod === 'box' ? box : jm;
  let speMethod: 'jackson-mudholkar' | 'box' | 'loo' = theorySpeMethod;
  let looT2Fit: ScaledChiSquare | null = null;
  let looSpeFit: ScaledChiSquare | null = null;
  let looT2: number[] | null = null;
  let looSpe: number[] | null = null;
  if (method === 'loo') {
    ({ t2: looT2, spe: looSpe } = leaveOneOut(spec.scores, lambda, m, r, k));
    looT2Fit = fitScaledChiSquare(looT2);
    looSpeFit = fitScaledChiSquare(looSpe);
    t2Limit = scaledChiSquareQuantile(looT2Fit, alpha);
    speLimitValue = scaledChiSquareQuantile(looSpeFit, alpha);
    speMethod = 'loo';
  }

  const loadings: number[][] = [];
  const vectors = spec.vectorsOf(k);
  for (let a = 0; a < k; a++) loadings.push(Array.from(vectors.subarray(a * p, (a + 1) * p)));
  return {
    kind: 'pca',
    version: 1,
    names: [...names],
    kept: [...prep.kept],
    dropped: prep.dropped,
    runs: m,
    alpha,
    mean: Array.from(prep.mean),
    sd: Array.from(prep.sd),
    eigenvalues: Array.from(lambda),
    components: k,
    componentRule: normalizedRule(rule),
    componentsRequested: requested > k ? requested : null,
    explainedVariance: explained / p,
    loadings,
    limits: {
      method,
      t2: t2Limit,
      spe: speLimitValue,
      speMethod,
      theory: { t2: theoryT2, speJacksonMudholkar: Number.isFinite(jm) ? jm : null, speBox: box },
      looT2Fit,
      looSpeFit,
    },
    phaseOne: { t2, spe, looT2, looSpe },
  };
}

function validateRule(rule: ComponentRule): void {
  switch (rule?.rule) {
    case 'cumulative-variance': {
      const f = rule.fraction ?? 0.9;
      if (!(f > 0 && f <= 1))
        throw new ChartConfigError(`cumulative-variance fraction must be in (0, 1], got ${f}`);
      return;
    }
    case 'kaiser':
      return;
    case 'fixed':
      if (!(Number.isInteger(rule.count) && rule.count >= 1)) {
        throw new ChartConfigError(`fixed component count must be an integer >= 1, got ${rule.count}`);
      }
      return;
    default:
      throw new ChartConfigError(`unknown component rule ${JSON.stringify(rule)}`);
  }
}

/** A plain copy of the rule with defaults filled in (stored in the model). */
function normalizedRule(rule: ComponentRule): ComponentRule {
  switch (rule.rule) {
    case 'cumulative-variance':
      return { rule: 'cumulative-variance', fraction: rule.fraction ?? 0.9 };
    case 'kaiser':
      return { rule: 'kaiser' };
    case 'fixed':
      return { rule: 'fixed', count: rule.count };
  }
}

function componentCount(rule: ComponentRule, lambda: Float64Array, total: number): number {
  switch (rule.rule) {
    case 'fixed':
      return rule.count;
    case 'kaiser': {
      let k = 0;
      while (k < lambda.length && lambda[k] > 1) k++;
      return Math.max(1, k);
    }
    case 'cumulative-variance': {
      // The relative slack absorbs rounding when the fraction is hit exactly (e.g. 1).
      const target = (rule.fraction ?? 0.9) * total * (1 - 1e-12);
      let s = 0;
      for (let a = 0; a < lambda.length; a++) {
        s += lambda[a];
        if (s >= target) return a + 1;
      }
      return lambda.length;
    }
  }
}

/**
 * Leave-one-out T² and SPE of each Phase I run. Fold i's covariance, in the Phase I eigenbasis, is
 * ((m - 1) diag(lambda) - (m / (m - 1)) w_i w_i') / (m - 2) with w_i run i's Phase I scores, and run i
 * centred on the fold mean is (m / (m - 1)) w_i.
 */
function leaveOneOut(
  scores: Float64Array,
  lambda: Float64Array,
  m: number,
  r: number,
  k: number,
): { t2: number[]; spe: number[] } {
  const d = new Float64Array(r);
  for (let a = 0; a < r; a++) d[a] = (m - 1) * lambda[a];
  const sigma = m / (m - 1);
  const factor = sigma * sigma;
  const t2 = new Array<number>(m);
  const spe = new Array<number>(m);
  for (let i = 0; i < m; i++) {
    const w = scores.subarray(i * r, (i + 1) * r);
    // Only the fold's k largest eigenvalues are solved for: the residual is what they leave of |w|^2.
    const fold = rankOneDowndate(d, w, sigma, k);
    let w2 = 0;
    for (let a = 0; a < r; a++) w2 += w[a] * w[a];
    let t = 0;
    let inModel = 0;
    for (let a = 0; a < k; a++) {
      const l = (fold.values[a] ?? 0) / (m - 2);
      if (!(l > 1e-12 * lambda[0])) {
        throw new DegenerateBaselineError(
          `without run ${i + 1} the Phase I runs span fewer than ${k} components; retain fewer components`,
        );
      }
      t += fold.projections[a] / l;
      inModel += fold.projections[a];
    }
    t2[i] = factor * t;
    spe[i] = factor * Math.max(0, w2 - inModel);
  }
  return { t2, spe };
}
