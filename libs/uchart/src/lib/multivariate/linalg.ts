/**
 * Small dense linear algebra on row-major `Float64Array`s: an `r x c` matrix stores element (i, j) at
 * `i * c + j`. Sizes here are at most a few hundred, so plain loops are fast enough and keep the code
 * dependency-free and deterministic.
 */
import { ConvergenceError } from '../errors';
import { NotPositiveDefiniteError } from './errors';

const EPS = 2 ** -52;

/** Column means of an `rows x cols` matrix. */
export function columnMeans(data: Float64Array, rows: number, cols: number): Float64Array {
  const mean = new Float64Array(cols);
  for (let i = 0; i < rows; i++) {
    const o = i * cols;
    for (let j = 0; j < cols; j++) mean[j] += data[o + j];
  }
  for (let j = 0; j < cols; j++) mean[j] /= rows;
  return mean;
}

/**
 * Sample covariance matrix (divisor rows - 1) of an `rows x cols` matrix, `cols x cols`. Two passes
 * (centre first), so large offsets do not cost precision. Needs rows >= 2.
 */
export function covarianceMatrix(data: Float64Array, rows: number, cols: number): Float64Array {
  const mean = columnMeans(data, rows, cols);
  const cov = new Float64Array(cols * cols);
  const c = new Float64Array(cols);
  for (let i = 0; i < rows; i++) {
    const o = i * cols;
    for (let j = 0; j < cols; j++) c[j] = data[o + j] - mean[j];
    for (let j = 0; j < cols; j++) {
      const cj = c[j];
      if (cj === 0) continue;
      const rj = j * cols;
      for (let l = j; l < cols; l++) cov[rj + l] += cj * c[l];
    }
  }
  const d = rows - 1;
  for (let j = 0; j < cols; j++) {
    for (let l = j; l < cols; l++) {
      const v = cov[j * cols + l] / d;
      cov[j * cols + l] = v;
      cov[l * cols + j] = v;
    }
  }
  return cov;
}

/**
 * Cholesky factor L (lower triangular, `n x n`, zeros above the diagonal) with A = L L'. Reads the
 * lower triangle of A only.
 *
 * @throws NotPositiveDefiniteError when a pivot is not positive or is below n * eps * max(diag A)
 *   (numerically singular): the message names the pivot.
 */
export function cholesky(a: Float64Array, n: number): Float64Array {
  const l = new Float64Array(n * n);
  let maxDiag = 0;
  for (let i = 0; i < n; i++) maxDiag = Math.max(maxDiag, Math.abs(a[i * n + i]));
  const tiny = n * EPS * maxDiag;
  for (let j = 0; j < n; j++) {
    const rj = j * n;
    let s = a[rj + j];
    for (let k = 0; k < j; k++) s -= l[rj + k] * l[rj + k];
    if (!(s > tiny)) {
      throw new NotPositiveDefiniteError(
        `Cholesky pivot ${j} is ${s.toPrecision(6)} (threshold ${tiny.toPrecision(3)}, size ${n})`,
      );
    }
    const d = Math.sqrt(s);
    l[rj + j] = d;
    for (let i = j + 1; i < n; i++) {
      const ri = i * n;
      let t = a[ri + j];
      for (let k = 0; k < j; k++) t -= l[ri + k] * l[rj + k];
      l[ri + j] = t / d;
    }
  }
  return l;
}

/** Solves A x = b given the Cholesky factor L of A (forward then back substitution). */
export function choleskySolve(l: Float64Array, n: number, b: ArrayLike<number>): Float64Array {
  const y = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const ri = i * n;
    let s = b[i];
    for (let k = 0; k < i; k++) s -= l[ri + k] * y[k];
    y[i] = s / l[ri + i];
  }
  for (let i = n - 1; i >= 0; i--) {
    let s = y[i];
    for (let k = i + 1; k < n; k++) s -= l[k * n + i] * y[k];
    y[i] = s / l[i * n + i];
  }
  return y;
}

/** A^-1 (`n x n`, symmetric) from the Cholesky factor L of A. */
export function choleskyInverse(l: Float64Array, n: number): Float64Array {
  const inv = new Float64Array(n * n);
  const e = new Float64Array(n);
  for (let j = 0; j < n; j++) {
    e.fill(0);
    e[j] = 1;
    const col = choleskySolve(l, n, e);
    for (let i = 0; i < n; i++) inv[i * n + j] = col[i];
  }
  // Symmetrise the rounding.
  for (let i = 0; i < n; i++) {
    for (let j = i + 1; j < n; j++) {
      const v = 0.5 * (inv[i * n + j] + inv[j * n + i]);
      inv[i * n + j] = v;
      inv[j * n + i] = v;
    }
  }
  return inv;
}

/** ln det A from the Cholesky factor L of A: 2 sum ln L_ii. */
export function choleskyLogDeterminant(l: Float64Array, n: number): number {
  let s = 0;
  for (let i = 0; i < n; i++) s += Math.log(l[i * n + i]);
  return 2 * s;
}

/** Eigen-decomposition of a symmetric matrix: eigenvalues in descending order. */
export interface SymmetricEigen {
  /** Eigenvalues, descending. */
  readonly values: Float64Array;
  /** `n x n`, row j is the unit eigenvector of `values[j]`. */
  readonly vectors: Float64Array;
}

/**
 * Eigenvalues and eigenvectors of a symmetric `n x n` matrix (only its lower triangle is read):
 * Householder reduction to tridiagonal form and the implicit QL algorithm with Wilkinson-type shifts
 * (EISPACK tred2 / tql2 as in JAMA), O(n^3) with a small constant; backward stable, so
 * |A - V diag(values) V'| is of the order of eps * |A|. Eigenvalues are sorted descending; each
 * eigenvector's sign is fixed so that its largest-magnitude component is positive (deterministic
 * output for equal inputs).
 *
 * @throws ConvergenceError for non-finite entries, or if QL needs more than 30 n iterations (not
 *   expected for finite input).
 */
export function symmetricEigen(a: Float64Array, n: number): SymmetricEigen {
  const v = new Float64Array(n * n);
  // Work on A / max|a_ij| so that no intermediate under- or overflows (subnormal entries would
  // otherwise break the plane rotations); the eigenvalues are scaled back at the end.
  let scale = 0;
  for (let i = 0; i < n; i++) for (let j = 0; j <= i; j++) scale = Math.max(scale, Math.abs(a[i * n + j]));
  if (!Number.isFinite(scale)) throw new ConvergenceError('symmetricEigen: matrix has non-finite entries');
  const div = scale > 0 ? scale : 1;
  for (let i = 0; i < n; i++) for (let j = 0; j <= i; j++) v[i * n + j] = a[i * n + j] / div;
  for (let i = 0; i < n; i++) for (let j = i + 1; j < n; j++) v[i * n + j] = v[j * n + i];
  const d = new Float64Array(n);
  const e = new Float64Array(n);
  if (n === 0) return { values: d, vectors: v };
  tred2(v, d, e, n);
  tql2(v, d, e, n);
  for (let i = 0; i < n; i++) d[i] *= div;
  // Eigenvector c is column c of JAMA's V, stored at v[c * n ...]; sort descending and store them as rows.
  const order = Array.from({ length: n }, (_, i) => i).sort((x, y) => d[y] - d[x] || x - y);
  const values = new Float64Array(n);
  const vectors = new Float64Array(n * n);
  for (let r = 0; r < n; r++) {
    const c = order[r];
    const vc = c * n;
    values[r] = d[c];
    let big = 0;
    let sign = 1;
    for (let i = 0; i < n; i++) {
      const x = v[vc + i];
      if (Math.abs(x) > big) {
        big = Math.abs(x);
        sign = x < 0 ? -1 : 1;
      }
    }
    for (let i = 0; i < n; i++) vectors[r * n + i] = sign * v[vc + i];
  }
  return { values, vectors };
}

// tred2 and tql2 (EISPACK, as JAMA writes them) on V stored by columns: element (r, c) of JAMA's V at
// v[c * n + r], so that their inner loops, which run down a column of V, read consecutive memory (the
// same operations in the same order as on rows: the same results, bit for bit).

function tred2(v: Float64Array, d: Float64Array, e: Float64Array, n: number): void {
  for (let j = 0; j < n; j++) d[j] = v[j * n + n - 1];
  for (let i = n - 1; i > 0; i--) {
    let scale = 0;
    let h = 0;
    for (let k = 0; k < i; k++) scale += Math.abs(d[k]);
    if (scale === 0) {
      e[i] = d[i - 1];
      for (let j = 0; j < i; j++) {
        d[j] = v[j * n + i - 1];
        v[j * n + i] = 0;
        v[i * n + j] = 0;
      }
    } else {
      for (let k = 0; k < i; k++) {
        d[k] /= scale;
        h += d[k] * d[k];
      }
      let f = d[i - 1];
      let g = Math.sqrt(h);
      if (f > 0) g = -g;
      e[i] = scale * g;
      h -= f * g;
      d[i - 1] = f - g;
      for (let j = 0; j < i; j++) e[j] = 0;
      for (let j = 0; j < i; j++) {
        f = d[j];
        v[i * n + j] = f;
        const cj = j * n;
        g = e[j] + v[cj + j] * f;
        for (let k = j + 1; k <= i - 1; k++) {
          g += v[cj + k] * d[k];
          e[k] += v[cj + k] * f;
        }
        e[j] = g;
      }
      f = 0;
      for (let j = 0; j < i; j++) {
        e[j] /= h;
        f += e[j] * d[j];
      }
      const hh = f / (h + h);
      for (let j = 0; j < i; j++) e[j] -= hh * d[j];
      for (let j = 0; j < i; j++) {
        f = d[j];
        g = e[j];
        const cj = j * n;
        for (let k = j; k <= i - 1; k++) v[cj + k] -= f * e[k] + g * d[k];
        d[j] = v[cj + i - 1];
        v[cj + i] = 0;
      }
    }
    d[i] = h;
  }
  // Accumulate the transformations.
  for (let i = 0; i < n - 1; i++) {
    const ci = i * n;
    const next = (i + 1) * n;
    v[ci + n - 1] = v[ci + i];
    v[ci + i] = 1;
    const h = d[i + 1];
    if (h !== 0) {
      for (let k = 0; k <= i; k++) d[k] = v[next + k] / h;
      for (let j = 0; j <= i; j++) {
        const cj = j * n;
        let g = 0;
        for (let k = 0; k <= i; k++) g += v[next + k] * v[cj + k];
        for (let k = 0; k <= i; k++) v[cj + k] -= g * d[k];
      }
    }
    for (let k = 0; k <= i; k++) v[next + k] = 0;
  }
  for (let j = 0; j < n; j++) {
    d[j] = v[j * n + n - 1];
    v[j * n + n - 1] = 0;
  }
  v[(n - 1) * n + n - 1] = 1;
  e[0] = 0;
}

function tql2(v: Float64Array, d: Float64Array, e: Float64Array, n: number): void {
  for (let i = 1; i < n; i++) e[i - 1] = e[i];
  e[n - 1] = 0;
  let f = 0;
  let tst1 = 0;
  let iterations = 0;
  const maxIterations = 30 * n + 30;
  for (let l = 0; l < n; l++) {
    tst1 = Math.max(tst1, Math.abs(d[l]) + Math.abs(e[l]));
    let m = l;
    while (m < n) {
      if (Math.abs(e[m]) <= EPS * tst1) break;
      m++;
    }
    // e[n - 1] is 0, so m < n here.
    if (m > l) {
      do {
        if (++iterations > maxIterations) {
          throw new ConvergenceError(
            `symmetric QL did not converge in ${maxIterations} iterations (n = ${n})`,
          );
        }
        let g = d[l];
        let p = (d[l + 1] - g) / (2 * e[l]);
        let r = Math.hypot(p, 1);
        if (p < 0) r = -r;
        d[l] = e[l] / (p + r);
        d[l + 1] = e[l] * (p + r);
        const dl1 = d[l + 1];
        let h = g - d[l];
        for (let i = l + 2; i < n; i++) d[i] -= h;
        f += h;
        p = d[m];
        let c = 1;
        let c2 = c;
        let c3 = c;
        const el1 = e[l + 1];
        let s = 0;
        let s2 = 0;
        for (let i = m - 1; i >= l; i--) {
          c3 = c2;
          c2 = c;
          s2 = s;
          g = c * e[i];
          h = c * p;
          r = Math.hypot(p, e[i]);
          e[i + 1] = s * r;
          s = e[i] / r;
          c = p / r;
          p = c * d[i] - s * g;
          d[i + 1] = h + s * (c * g + s * d[i]);
          const ci = i * n;
          const next = ci + n;
          for (let k = 0; k < n; k++) {
            h = v[next + k];
            v[next + k] = s * v[ci + k] + c * h;
            v[ci + k] = c * v[ci + k] - s * h;
          }
        }
        p = (-s * s2 * c3 * el1 * e[l]) / dl1;
        e[l] = s * p;
        d[l] = c * p;
      } while (Math.abs(e[l]) > EPS * tst1);
    }
    d[l] += f;
    e[l] = 0;
  }
}

/** The `rows x rows` Gram matrix A A' of an `rows x cols` matrix (row dot products). */
export function gramMatrix(a: Float64Array, rows: number, cols: number): Float64Array {
  const g = new Float64Array(rows * rows);
  for (let i = 0; i < rows; i++) {
    const oi = i * cols;
    for (let j = 0; j <= i; j++) {
      const oj = j * cols;
      let s = 0;
      for (let k = 0; k < cols; k++) s += a[oi + k] * a[oj + k];
      g[i * rows + j] = s;
      g[j * rows + i] = s;
    }
  }
  return g;
}

/** The `cols x cols` cross-product A' A of an `rows x cols` matrix. */
export function crossProduct(a: Float64Array, rows: number, cols: number): Float64Array {
  const c = new Float64Array(cols * cols);
  for (let i = 0; i < rows; i++) {
    const o = i * cols;
    for (let j = 0; j < cols; j++) {
      const aj = a[o + j];
      if (aj === 0) continue;
      const rj = j * cols;
      for (let l = j; l < cols; l++) c[rj + l] += aj * a[o + l];
    }
  }
  for (let j = 0; j < cols; j++) for (let l = j + 1; l < cols; l++) c[l * cols + j] = c[j * cols + l];
  return c;
}
