/**
 * Evaluation of a monitoring statistic q(z) = z' A z (A symmetric positive semi-definite) with
 * per-variable contributions, when some coordinates of z are missing.
 *
 * Missing indicators: the statistic is evaluated at the values of the missing coordinates that
 * minimise it (a least-squares problem in the missing coordinates only). The reported statistic is
 * therefore never larger than the one the complete run would have had, whatever the missing values
 * were: a missing indicator cannot raise an alarm by itself. For Hotelling T² this is exactly the
 * T² of the observed sub-vector (min over z_M of z' S^-1 z = z_O' S_OO^-1 z_O); for SPE it is
 * the residual of the least-squares projection of the observed part onto the model plane (Nelson,
 * Taylor & MacGregor 1996).
 *
 * Contributions are the complete decomposition (Alcala & Qin 2009): c_j = ((A^1/2 z)_j)^2 with the
 * symmetric square root, non-negative and summing to q(z).
 */
import { symmetricEigen } from './linalg';

/** A PSD quadratic form given by its action A v and the action of its symmetric root A^1/2 v. */
export interface QuadraticForm {
  readonly size: number;
  apply(v: Float64Array): Float64Array;
  applyRoot(v: Float64Array): Float64Array;
}

export interface QuadraticEvaluation {
  /** q(z*) >= 0, z* = z with the minimising values in the missing coordinates. */
  readonly value: number;
  /** ((A^1/2 z*)_j)^2, summing to `value` up to rounding. */
  readonly contributions: Float64Array;
  /** z* (the completed vector). */
  readonly completed: Float64Array;
}

/**
 * @param z the vector; entries at `missing` are ignored (treated as unknown)
 * @param missing indices of the missing coordinates
 */
export function evaluateWithMissing(
  form: QuadraticForm,
  z: Float64Array,
  missing: readonly number[],
): QuadraticEvaluation {
  const completed = Float64Array.from(z);
  for (const j of missing) completed[j] = 0;
  if (missing.length > 0) {
    const k = missing.length;
    // Normal equations A_MM x = -(A z0)_M for the missing block.
    const az0 = form.apply(completed);
    const g = new Float64Array(k * k);
    const e = new Float64Array(form.size);
    for (let c = 0; c < k; c++) {
      e.fill(0);
      e[missing[c]] = 1;
      const col = form.apply(e);
      for (let r = 0; r < k; r++) g[r * k + c] = col[missing[r]];
    }
    for (let r = 0; r < k; r++) {
      for (let c = r + 1; c < k; c++) {
        const v = 0.5 * (g[r * k + c] + g[c * k + r]);
        g[r * k + c] = v;
        g[c * k + r] = v;
      }
    }
    // Minimum-norm solution through the pseudo-inverse: A_MM is singular when a missing variable
    // does not enter the statistic (e.g. SPE of a variable lying in the model plane).
    const eig = symmetricEigen(g, k);
    const top = eig.values[0] ?? 0;
    const x = new Float64Array(k);
    for (let a = 0; a < k; a++) {
      const l = eig.values[a];
      if (!(l > 1e-12 * top)) continue;
      let proj = 0;
      for (let r = 0; r < k; r++) proj += eig.vectors[a * k + r] * az0[missing[r]];
      const coef = -proj / l;
      for (let r = 0; r < k; r++) x[r] += coef * eig.vectors[a * k + r];
    }
    for (let r = 0; r < k; r++) completed[missing[r]] = x[r];
  }
  const root = form.applyRoot(completed);
  const contributions = new Float64Array(root.length);
  let value = 0;
  for (let j = 0; j < root.length; j++) {
    contributions[j] = root[j] * root[j];
    value += contributions[j];
  }
  return { value, contributions, completed };
}
