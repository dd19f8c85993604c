/**
 * Scoring one run against a fitted {@link PcaModel}: T², SPE, their contributions, and missing
 * indicators at the values that minimise each statistic (the fit is in pca.ts).
 */
import { sortedContributions, standardizeObservation, type StoredPhaseOne, type VariableContribution } from './baseline-data';
import type { PcaModel } from './pca';
import { evaluateWithMissing, type QuadraticForm } from './quadratic';

/** The result of scoring one run against a {@link PcaModel}. */
export interface PcaScore {
  /** sum_a t_a^2 / lambda_a over the k retained components. */
  readonly t2: number;
  /** |z - P P' z|^2 of the autoscaled run z. */
  readonly spe: number;
  readonly t2Limit: number;
  readonly speLimit: number;
  readonly t2Exceeded: boolean;
  readonly speExceeded: boolean;
  /** The k scores t = P' z (missing values at their T²-minimising values). */
  readonly scores: readonly number[];
  /**
   * The contributions by name, largest first. Sorted when first read (a getter): a caller that only
   * needs them for an alarm, or in model order ({@link PcaScore.contributionValues}), does not pay the
   * sort of every model variable.
   */
  readonly contributions: {
    /** Complete decomposition ((P Lambda^-1/2 P' z)_j)^2: non-negative, sums to t2. Largest first. */
    readonly t2: readonly VariableContribution[];
    /** e_j^2, sums to spe. Largest first. */
    readonly spe: readonly VariableContribution[];
  };
  /**
   * The same contributions unsorted, in the order of the kept variables (entry c belongs to
   * `model.names[model.kept[c]]`). Read-only: the sorted lists are built from these arrays.
   */
  readonly contributionValues: {
    readonly t2: Float64Array;
    readonly spe: Float64Array;
  };
  /** Model variables whose value was missing (non-finite); see {@link scorePca}. */
  readonly missing: readonly string[];
  /** Dropped (constant) variables whose value lies outside their Phase I range. */
  readonly droppedOutOfRange: readonly string[];
}

/** {@link PcaScore.contributions}: each list sorted once, when first read. */
function lazyContributions(model: StoredPhaseOne, t2: Float64Array, spe: Float64Array): PcaScore['contributions'] {
  let t2Sorted: readonly VariableContribution[] | undefined;
  let speSorted: readonly VariableContribution[] | undefined;
  return {
    get t2() {
      return (t2Sorted ??= sortedContributions(model, t2));
    },
    get spe() {
      return (speSorted ??= sortedContributions(model, spe));
    },
  };
}

function pcaForms(model: PcaModel): { t2: QuadraticForm; spe: QuadraticForm } {
  const p = model.kept.length;
  const k = model.components;
  const project = (v: Float64Array): Float64Array => {
    const t = new Float64Array(k);
    for (let a = 0; a < k; a++) {
      const vec = model.loadings[a];
      let s = 0;
      for (let j = 0; j < p; j++) s += vec[j] * v[j];
      t[a] = s;
    }
    return t;
  };
  const combine = (coef: Float64Array): Float64Array => {
    const out = new Float64Array(p);
    for (let a = 0; a < k; a++) {
      const vec = model.loadings[a];
      const c = coef[a];
      for (let j = 0; j < p; j++) out[j] += c * vec[j];
    }
    return out;
  };
  const scaled =
    (power: number) =>
    (v: Float64Array): Float64Array => {
      const t = project(v);
      for (let a = 0; a < k; a++) t[a] *= Math.pow(model.eigenvalues[a], -power);
      return combine(t);
    };
  const residual = (v: Float64Array): Float64Array => {
    const fit = combine(project(v));
    const e = new Float64Array(p);
    for (let j = 0; j < p; j++) e[j] = v[j] - fit[j];
    return e;
  };
  return {
    t2: { size: p, apply: scaled(1), applyRoot: scaled(0.5) },
    spe: { size: p, apply: residual, applyRoot: residual },
  };
}

/**
 * Scores one run (x: one value per model name) against a fitted PCA model: T², SPE, their limits,
 * the scores and per-variable contributions (variable names, largest first).
 *
 * Missing values (NaN or +/-Infinity in x): each statistic is evaluated at the values of the missing
 * variables that minimise it: for SPE the least-squares projection of the observed variables onto the
 * model plane (Nelson, Taylor & MacGregor 1996), for T² the smallest score distance compatible with the
 * observed variables. Either statistic is then at most what the complete run would give, so a missing
 * indicator alone never causes an alarm; missing variables contribute 0 to SPE. Limits are unchanged
 * (conservative). The missing variables are listed in `missing`.
 *
 * @throws MultivariateInputError if x does not have one value per model variable
 */
export function scorePca(model: PcaModel, x: readonly number[]): PcaScore {
  const obs = standardizeObservation(model, x);
  const forms = pcaForms(model);
  const t = evaluateWithMissing(forms.t2, obs.z, obs.missing);
  const q = evaluateWithMissing(forms.spe, obs.z, obs.missing);
  const scores: number[] = [];
  for (let a = 0; a < model.components; a++) {
    const vec = model.loadings[a];
    let s = 0;
    for (let j = 0; j < vec.length; j++) s += vec[j] * t.completed[j];
    scores.push(s);
  }
  return {
    t2: t.value,
    spe: q.value,
    t2Limit: model.limits.t2,
    speLimit: model.limits.spe,
    t2Exceeded: t.value > model.limits.t2,
    speExceeded: q.value > model.limits.spe,
    scores,
    contributions: lazyContributions(model, t.contributions, q.contributions),
    contributionValues: { t2: t.contributions, spe: q.contributions },
    missing: obs.missing.map((c) => model.names[model.kept[c]]),
    droppedOutOfRange: obs.droppedOutOfRange,
  };
}

/**
 * The SPE contributions of a run, `(z - P P' z)_j^2` over the kept variables in their order: what
 * `scorePca(model, x).contributionValues.spe` holds, bit for bit (the same operations in the same
 * order), without the T² side, the completion of missing values or the allocations of a score. A run
 * with a missing (non-finite) model variable, or of the wrong length, goes to {@link scorePca}.
 */
export function pcaResidualContributions(model: PcaModel, x: readonly number[]): Float64Array {
  const p = model.kept.length;
  const k = model.components;
  if (x.length !== model.names.length) return scorePca(model, x).contributionValues.spe;
  const z = new Float64Array(p);
  for (let c = 0; c < p; c++) {
    const v = x[model.kept[c] as number];
    if (typeof v !== 'number' || !Number.isFinite(v)) return scorePca(model, x).contributionValues.spe;
    z[c] = (v - (model.mean[c] as number)) / (model.sd[c] as number);
  }
  const fit = new Float64Array(p);
  for (let a = 0; a < k; a++) {
    const vec = model.loadings[a] as readonly number[];
    let s = 0;
    for (let j = 0; j < p; j++) s += (vec[j] as number) * (z[j] as number);
    for (let j = 0; j < p; j++) fit[j] += s * (vec[j] as number);
  }
  for (let j = 0; j < p; j++) {
    const e = (z[j] as number) - (fit[j] as number);
    fit[j] = e * e;
  }
  return fit;
}
