/**
 * Phase I data preparation shared by the Hotelling and PCA models: validation, dropping of variables
 * without variation, autoscaling, and the spectrum of the correlation matrix.
 */
import { ChartConfigError, DegenerateBaselineError } from '../errors';
import { MultivariateInputError } from './errors';
import { crossProduct, gramMatrix, symmetricEigen } from './linalg';

/** Default false-alarm probability per statistic: that of a 3-sigma Shewhart chart. */
export const DEFAULT_ALPHA = 0.0027;

/** Leave-one-out limits need at least this many Phase I runs (a moment fit on fewer is not credible). */
export const MIN_LOO_RUNS = 10;

/** How control limits are set: distribution theory, or calibrated by leave-one-out on Phase I. */
export type LimitMethod = 'theory' | 'loo';

/** Eigenvalues below this fraction of the largest count as zero (numerical rank). */
export const RANK_TOLERANCE = 1e-10;

/** A standard deviation at or below this fraction of |mean| is treated as no variation. */
export const NEGLIGIBLE_SD_RELATIVE = 1e-9;

/** Why a variable was left out of a multivariate model. */
export type DroppedReason = 'constant' | 'negligible-variation';

/** A Phase I variable left out of the model (it carries no usable variation). */
export interface DroppedVariable {
  readonly name: string;
  /** Position in the model's `names`. */
  readonly index: number;
  /** `constant`: all Phase I values equal; `negligible-variation`: sd <= 1e-9 |mean|. */
  readonly reason: DroppedReason;
  readonly mean: number;
  readonly sd: number;
  /** Phase I range; scoring reports a value outside it (`droppedOutOfRange`). */
  readonly min: number;
  readonly max: number;
}

export interface PreparedBaseline {
  readonly m: number;
  readonly names: readonly string[];
  /** Indices (into names) of the variables kept, in input order. */
  readonly kept: readonly number[];
  readonly dropped: readonly DroppedVariable[];
  readonly mean: Float64Array;
  readonly sd: Float64Array;
  /** Autoscaled kept data, `m x p` row-major (p = kept.length). */
  readonly z: Float64Array;
  readonly p: number;
}

const MAX_ISSUES = 20;

/** Validates the Phase I matrix and names; every problem is reported (up to 20). */
export function validateRows(rows: readonly (readonly number[])[], names: readonly string[]): void {
  const issues: string[] = [];
  if (!Array.isArray(names) || names.length === 0) issues.push('names: at least one variable is required');
  const seen = new Set<string>();
  (Array.isArray(names) ? names : []).forEach((n, j) => {
    if (typeof n !== 'string' || n.length === 0) issues.push(`names[${j}]: must be a non-empty string`);
    else if (seen.has(n)) issues.push(`names[${j}]: duplicate "${n}"`);
    seen.add(n);
  });
  if (!Array.isArray(rows)) issues.push('rows: must be an array of rows');
  else {
    for (let i = 0; i < rows.length && issues.length < MAX_ISSUES; i++) {
      const row = rows[i];
      if (!Array.isArray(row) || row.length !== names.length) {
        issues.push(
          `rows[${i}]: expected ${names.length} values, got ${Array.isArray(row) ? row.length : typeof row}`,
        );
        continue;
      }
      for (let j = 0; j < row.length && issues.length < MAX_ISSUES; j++) {
        if (typeof row[j] !== 'number' || !Number.isFinite(row[j])) {
          issues.push(`rows[${i}][${j}] (${names[j]}): Phase I values must be finite, got ${String(row[j])}`);
        }
      }
    }
  }
  if (issues.length > 0) throw new MultivariateInputError(issues);
}

/** Validates a false-alarm probability. */
export function validateAlpha(alpha: number): void {
  if (!(alpha > 0 && alpha < 0.5)) throw new ChartConfigError(`alpha must be in (0, 0.5), got ${alpha}`);
}

/**
 * Means, sds (divisor m - 1), dropped variables and the autoscaled matrix of the kept variables.
 * @throws DegenerateBaselineError if no variable has variation.
 */
export function prepareBaseline(
  rows: readonly (readonly number[])[],
  names: readonly string[],
): PreparedBaseline {
  const m = rows.length;
  const pAll = names.length;
  const kept: number[] = [];
  const dropped: DroppedVariable[] = [];
  const means: number[] = [];
  const sds: number[] = [];
  for (let j = 0; j < pAll; j++) {
    let s = 0;
    let min = Infinity;
    let max = -Infinity;
    for (let i = 0; i < m; i++) {
      const x = rows[i][j];
      s += x;
      if (x < min) min = x;
      if (x > max) max = x;
    }
    const mean = s / m;
    let ss = 0;
    for (let i = 0; i < m; i++) ss += (rows[i][j] - mean) ** 2;
    const sd = Math.sqrt(ss / (m - 1));
    if (min === max) dropped.push({ name: names[j], index: j, reason: 'constant', mean, sd: 0, min, max });
    else if (!(sd > NEGLIGIBLE_SD_RELATIVE * Math.abs(mean))) {
      dropped.push({ name: names[j], index: j, reason: 'negligible-variation', mean, sd, min, max });
    } else {
      kept.push(j);
      means.push(mean);
      sds.push(sd);
    }
  }
  if (kept.length === 0) {
    throw new DegenerateBaselineError(`none of the ${pAll} variables varies over the ${m} Phase I runs`);
  }
  const p = kept.length;
  const z = new Float64Array(m * p);
  for (let i = 0; i < m; i++) {
    for (let c = 0; c < p; c++) z[i * p + c] = (rows[i][kept[c]] - means[c]) / sds[c];
  }
  return { m, names, kept, dropped, mean: Float64Array.from(means), sd: Float64Array.from(sds), z, p };
}

/**
 * Spectrum of the Phase I correlation matrix R = Z'Z / (m - 1) restricted to its numerical rank r.
 */
export interface CorrelationSpectrum {
  /** The r positive eigenvalues of R, descending (sum = p minus the numerically null part). */
  readonly values: Float64Array;
  /**
   * The unit eigenvectors (loadings) of the first `count` values, `count x p`: row a belongs to
   * `values[a]`. Through the Gram matrix each is a pass over the data, so only those asked for are formed.
   */
  vectorsOf(count: number): Float64Array;
  /** `m x r`, row i holds run i's coordinates z_i' v_a (its principal component scores). */
  readonly scores: Float64Array;
  readonly r: number;
}

/**
 * Decomposes R through the smaller of the `p x p` cross-product and the `m x m` Gram matrix (the
 * nonzero eigenvalues agree: Z'Z v = s v <=> Z Z' u = s u with v = Z'u / sqrt(s)), so the cost is
 * O(m p min(m, p) + min(m, p)^3).
 */
export function correlationSpectrum(z: Float64Array, m: number, p: number): CorrelationSpectrum {
  const dof = m - 1;
  if (p <= m) {
    const eig = symmetricEigen(crossProduct(z, m, p), p);
    const r = rankOf(eig.values, p);
    const values = new Float64Array(r);
    for (let a = 0; a < r; a++) values[a] = eig.values[a] / dof;
    const vectors = eig.vectors;
    const scores = new Float64Array(m * r);
    for (let i = 0; i < m; i++) {
      const zi = i * p;
      for (let a = 0; a < r; a++) {
        const va = a * p;
        let s = 0;
        for (let j = 0; j < p; j++) s += z[zi + j] * vectors[va + j];
        scores[i * r + a] = s;
      }
    }
    return { values, scores, r, vectorsOf: (count) => vectors.slice(0, Math.min(count, r) * p) };
  }
  const eig = symmetricEigen(gramMatrix(z, m, p), m);
  const r = rankOf(eig.values, m);
  const values = new Float64Array(r);
  const scores = new Float64Array(m * r);
  for (let a = 0; a < r; a++) {
    const s = eig.values[a];
    values[a] = s / dof;
    const root = Math.sqrt(s);
    const ua = a * m;
    for (let i = 0; i < m; i++) scores[i * r + a] = eig.vectors[ua + i] * root;
  }
  const vectorsOf = (count: number): Float64Array => {
    const c = Math.min(count, r);
    const vectors = new Float64Array(c * p);
    for (let a = 0; a < c; a++) {
      const root = Math.sqrt(eig.values[a]);
      const ua = a * m;
      const va = a * p;
      for (let i = 0; i < m; i++) {
        const u = eig.vectors[ua + i];
        if (u === 0) continue;
        const zi = i * p;
        for (let j = 0; j < p; j++) vectors[va + j] += u * z[zi + j];
      }
      for (let j = 0; j < p; j++) vectors[va + j] /= root;
    }
    return vectors;
  };
  return { values, scores, r, vectorsOf };
}

function rankOf(values: Float64Array, n: number): number {
  const top = values[0] ?? 0;
  if (!(top > 0)) return 0;
  let r = 0;
  while (r < n && values[r] > RANK_TOLERANCE * top) r++;
  return r;
}

/** The scaling part of a stored model (plain JSON). */
export interface StoredScaling {
  /** Input variable names, in the order of the rows and of scored observations. */
  readonly names: readonly string[];
  /** Indices (into `names`) of the variables in the model. */
  readonly kept: readonly number[];
  readonly dropped: readonly DroppedVariable[];
  /** Phase I mean and sd (divisor m - 1) of the kept variables (autoscaling). */
  readonly mean: readonly number[];
  readonly sd: readonly number[];
}

/** What every stored multivariate model records of its Phase I besides the scaling. */
export interface StoredPhaseOne extends StoredScaling {
  /** Phase I runs m. */
  readonly runs: number;
  /** False-alarm probability of each limit. */
  readonly alpha: number;
}

export interface StandardizedObservation {
  /** Autoscaled kept variables (0 where missing). */
  readonly z: Float64Array;
  /** Positions (in `kept`) of non-finite values. */
  readonly missing: readonly number[];
  /** Names of dropped variables whose finite value lies outside their Phase I range. */
  readonly droppedOutOfRange: readonly string[];
}

/**
 * Autoscales one observation with the Phase I mean and sd. Non-finite values (NaN, +/-Infinity) are
 * missing.
 * @throws MultivariateInputError if x does not have one value per model variable
 */
export function standardizeObservation(model: StoredScaling, x: readonly number[]): StandardizedObservation {
  if (!Array.isArray(x) || x.length !== model.names.length) {
    throw new MultivariateInputError([
      `observation: expected ${model.names.length} values (${model.names.join(', ')}), got ${
        Array.isArray(x) ? x.length : typeof x
      }`,
    ]);
  }
  const p = model.kept.length;
  const z = new Float64Array(p);
  const missing: number[] = [];
  for (let c = 0; c < p; c++) {
    const v = x[model.kept[c]];
    if (typeof v === 'number' && Number.isFinite(v)) z[c] = (v - model.mean[c]) / model.sd[c];
    else missing.push(c);
  }
  const droppedOutOfRange: string[] = [];
  for (const d of model.dropped) {
    const v = x[d.index];
    if (typeof v === 'number' && Number.isFinite(v) && (v < d.min || v > d.max))
      droppedOutOfRange.push(d.name);
  }
  return { z, missing, droppedOutOfRange };
}

/** One variable's share of a statistic. */
export interface VariableContribution {
  readonly name: string;
  readonly value: number;
}

/** Contributions of the kept variables, largest first (ties in variable order). */
export function sortedContributions(model: StoredScaling, values: Float64Array): VariableContribution[] {
  const order = Array.from(values, (_, c) => c).sort((a, b) => values[b] - values[a] || a - b);
  return order.map((c) => ({ name: model.names[model.kept[c]], value: values[c] }));
}
