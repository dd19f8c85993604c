/**
 * Spectrum of a diagonal matrix minus a rank-one term, D - sigma w w', without forming eigenvectors.
 *
 * Leave-one-out needs, for each left-out run i, the eigenvalues of the covariance of the other m - 1
 * runs and the projections of run i on its eigenvectors. In the eigenbasis of the full Phase I
 * covariance that fold covariance is exactly diag(d) - sigma w w' (w = run i's coordinates), so each
 * fold costs O(r^2) here instead of a new O(r^3) or O(m^2 p) decomposition.
 *
 * Method (Golub 1973; Bunch, Nielsen & Sorensen 1978): after deflating negligible w_j and merging equal
 * d_j, the eigenvalues are the roots of the secular equation sum_j w_j^2 / (d_j - mu) = 1 / sigma, one
 * in each interval (d_{a+1}, d_a) and the last below d_n; each root is found by safeguarded Newton
 * iteration in a variable shifted to the nearer pole (so d_j - mu keeps its relative precision). With
 * u the unit eigenvector of root mu, u = (D - mu)^-1 w / |(D - mu)^-1 w| and, by the secular equation,
 * (u'w)^2 = 1 / (sigma^2 sum_j w_j^2 / (d_j - mu)^2).
 */
import { ConvergenceError } from '../errors';

const EPS = 2 ** -52;

/** Eigenvalues of D - sigma w w' (descending) and the squared projections (u_a' w)^2 on their eigenvectors. */
export interface DowndateSpectrum {
  readonly values: Float64Array;
  readonly projections: Float64Array;
}

/**
 * @param d diagonal of D, descending
 * @param w the rank-one vector (same length)
 * @param sigma > 0 (a downdate)
 * @param largest how many of the largest eigenvalues to return (default all): the a-th largest root
 *   lies in (d_{a+1}, d_a), below every larger one, so only the first `largest` roots of the secular
 *   equation are solved (O(largest n) per iteration instead of O(n^2)); the other eigenvectors' share of
 *   `w` is |w|^2 minus the returned projections.
 */
export function rankOneDowndate(d: ArrayLike<number>, w: ArrayLike<number>, sigma: number, largest = d.length): DowndateSpectrum {
  const n = d.length;
  let w2sum = 0;
  for (let j = 0; j < n; j++) w2sum += w[j] * w[j];
  const wNorm = Math.sqrt(w2sum);
  const scale = Math.abs(d[0] ?? 0) + sigma * w2sum;
  const tol = 8 * EPS * scale;

  const outValues: number[] = [];
  const outProj: number[] = [];
  const ad: number[] = [];
  const aw2: number[] = [];
  for (let j = 0; j < n; j++) {
    const wj2 = w[j] * w[j];
    if (sigma * Math.abs(w[j]) * wNorm <= tol) {
      // Coupling below rounding: d_j is an eigenvalue, its eigenvector (almost) e_j.
      outValues.push(d[j]);
      outProj.push(wj2);
    } else if (ad.length > 0 && Math.abs(ad[ad.length - 1] - d[j]) <= tol) {
      // Equal diagonal entries: a Givens rotation moves all weight onto one of them; the other is an
      // eigenvalue with an eigenvector orthogonal to w.
      aw2[aw2.length - 1] += wj2;
      outValues.push(d[j]);
      outProj.push(0);
    } else {
      ad.push(d[j]);
      aw2.push(wj2);
    }
  }

  const na = ad.length;
  let activeW2 = 0;
  for (let j = 0; j < na; j++) activeW2 += aw2[j];
  const delta = new Float64Array(na);
  const invSigma = 1 / sigma;
  // Roots below the first `largest` are below each of those: none of them is among the largest.
  const solved = Math.min(na, largest);
  for (let a = 0; a < solved; a++) {
    const upper = ad[a];
    const lowerEnd = a + 1 < na ? ad[a + 1] : ad[na - 1] - sigma * activeW2;
    let origin = upper;
    let lo: number;
    let hi: number;
    if (a + 1 < na) {
      const mid = 0.5 * (upper + lowerEnd);
      let phiMid = -invSigma;
      for (let j = 0; j < na; j++) phiMid += aw2[j] / (ad[j] - mid);
      if (phiMid >= 0) {
        // Root in the lower half: measure from the lower pole.
        origin = lowerEnd;
        lo = 0;
        hi = mid - origin;
      } else {
        lo = mid - origin;
        hi = 0;
      }
    } else {
      lo = lowerEnd - origin;
      hi = 0;
    }
    for (let j = 0; j < na; j++) delta[j] = ad[j] - origin;
    const start = initialGuess(delta, aw2, invSigma, a, a + 1 < na ? a + 1 : -1, lo, hi);
    const tau = solveSecular(delta, aw2, invSigma, lo, hi, start);
    let s2 = 0;
    for (let j = 0; j < na; j++) {
      const r = delta[j] - tau;
      s2 += aw2[j] / (r * r);
    }
    outValues.push(origin + tau);
    outProj.push(1 / (sigma * sigma * s2));
  }

  const order = largestFirst(outValues, largest);
  const values = new Float64Array(order.length);
  const projections = new Float64Array(order.length);
  order.forEach((src, dst) => {
    values[dst] = outValues[src];
    projections[dst] = outProj[src];
  });
  return { values, projections };
}

/**
 * The indices of the `count` largest of `values`, largest first, equal values in index order: the
 * head of the order a sort by (value descending, index) gives, kept by insertion (a leave-one-out
 * fold keeps a few of its r values, and sorting all r of them was most of its cost).
 */
export function largestFirst(values: readonly number[], count: number): number[] {
  const top: number[] = [];
  const keep = Math.min(count, values.length);
  for (let i = 0; i < values.length; i++) {
    const v = values[i] as number;
    if (top.length === keep && !(v > (values[top[keep - 1] as number] as number))) continue;
    // After every kept value at least as large (those came first).
    let at = top.length;
    while (at > 0 && (values[top[at - 1] as number] as number) < v) at--;
    top.splice(at, 0, i);
    if (top.length > keep) top.pop();
  }
  return top;
}

/**
 * Starting point: the root of the secular function with its two nearest poles kept exactly and the
 * other terms frozen at the interval midpoint (as LAPACK dlaed4 starts); the midpoint if that fails.
 */
function initialGuess(
  delta: Float64Array,
  w2: readonly number[],
  invSigma: number,
  a: number,
  b: number,
  lo: number,
  hi: number,
): number {
  const mid = 0.5 * (lo + hi);
  let c = -invSigma;
  for (let j = 0; j < delta.length; j++) if (j !== a && j !== b) c += w2[j] / (delta[j] - mid);
  let guess = NaN;
  if (b < 0) {
    // Only the upper pole: w_a^2 / (delta_a - tau) + c = 0.
    if (c < 0) guess = delta[a] + w2[a] / c;
  } else {
    // w_a^2 (delta_b - t) + w_b^2 (delta_a - t) + c (delta_a - t)(delta_b - t) = 0, a quadratic in t.
    const da = delta[a];
    const db = delta[b];
    const qa = c;
    const qb = -(c * (da + db) + w2[a] + w2[b]);
    const qc = w2[a] * db + w2[b] * da + c * da * db;
    if (qa === 0) guess = -qc / qb;
    else {
      const disc = qb * qb - 4 * qa * qc;
      if (disc >= 0) {
        const q = -0.5 * (qb + Math.sign(qb || 1) * Math.sqrt(disc));
        const r1 = q / qa;
        const r2 = q !== 0 ? qc / q : NaN;
        guess = r1 > lo && r1 < hi ? r1 : r2;
      }
    }
  }
  return guess > lo && guess < hi ? guess : mid;
}

/**
 * Root of phi(tau) = sum_j w2_j / (delta_j - tau) - invSigma on the open interval (lo, hi), where phi
 * increases from -inf (or a negative value) to +inf (or a positive value).
 */
function solveSecular(
  delta: Float64Array,
  w2: readonly number[],
  invSigma: number,
  lo0: number,
  hi0: number,
  start: number,
): number {
  const n = delta.length;
  let lo = lo0;
  let hi = hi0;
  let tau = start;
  for (let iter = 0; iter < 400; iter++) {
    let phi = -invSigma;
    let dphi = 0;
    let magnitude = invSigma;
    for (let j = 0; j < n; j++) {
      const r = 1 / (delta[j] - tau);
      const t = w2[j] * r;
      phi += t;
      dphi += t * r;
      magnitude += Math.abs(t);
    }
    let next = tau - phi / dphi;
    // Converged once phi is within its own rounding error (or the Newton step is below resolution).
    if (Math.abs(phi) <= 4 * EPS * n * magnitude) return next > lo && next < hi ? next : tau;
    if (phi < 0) lo = tau;
    else hi = tau;
    if (!(next > lo && next < hi)) next = 0.5 * (lo + hi);
    const width = Math.max(Math.abs(lo), Math.abs(hi));
    if (Math.abs(next - tau) <= 2 * EPS * Math.abs(tau) || hi - lo <= 4 * EPS * width) return next;
    tau = next;
  }
  throw new ConvergenceError(`secular equation on (${lo0}, ${hi0})`);
}
