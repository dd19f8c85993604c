/**
 * Limits for a family of univariate tests that follow the statistics' own tails.
 *
 * A chamber monitor charts a hundred or more indicators, and many of them are not normal: the
 * extremes of a window (max, min), a single sample (first, last) and spreads are skewed or
 * Gumbel-tailed. A Bonferroni limit from the normal (or t) distribution puts each test at a
 * probability of 1e-5 or less, far in a tail where such a statistic exceeds 4.5 sds a hundred to a
 * thousand times more often than a normal one; the family then spends many times its share of the
 * budget (measured on bench:detection: the univariate tests raised about two thirds of the false
 * alarms of the monitor, on max, min, first and last; docs/adr/0005-chamber-monitor.md).
 *
 * What the family must control is the largest standardised deviation of a run over all its
 * indicators, and a maximum has a known limit law: the Gumbel distribution (Fisher–Tippett). So
 * each Phase I run's largest deviation from the other runs (leave one out, so it is a prediction for
 * a new run, like a Phase II run) is computed, a Gumbel law is fitted to these maxima by
 * L-moments (Hosking 1990: robust to one large value, unbiased for small samples), and the family's
 * half-width is its 1 - alpha quantile.
 */
/** A Gumbel law: P(M <= x) = exp(-exp(-(x - location) / scale)). */
export interface GumbelFit {
  readonly location: number;
  readonly scale: number;
}

const EULER_GAMMA = 0.5772156649015329;
/** A column whose sd is below this share of its level has no spread (as the monitor's constant check). */
const SPREAD_TOLERANCE = 1e-7;

/**
 * The Gumbel law of `values` fitted by L-moments: scale = l2 / ln 2, location = l1 - gamma scale
 * (l1 the mean, l2 the second sample L-moment from the probability-weighted moments b0, b1).
 *
 * @throws RangeError with fewer than 2 finite values.
 */
export function fitGumbel(values: readonly number[]): GumbelFit {
  const x = values.filter(Number.isFinite).sort((a, b) => a - b);
  const n = x.length;
  if (n < 2) throw new RangeError(`a Gumbel fit needs 2 or more values, got ${n}`);
  let b0 = 0;
  let b1 = 0;
  x.forEach((v, i) => {
    b0 += v;
    b1 += (i / (n - 1)) * v;
  });
  b0 /= n;
  b1 /= n;
  const l2 = 2 * b1 - b0;
  const scale = l2 / Math.LN2;
  return { location: b0 - EULER_GAMMA * scale, scale };
}

/** The `p` quantile of a Gumbel law. */
export function gumbelQuantile(fit: GumbelFit, p: number): number {
  if (!(p > 0 && p < 1)) throw new RangeError(`p must be in (0, 1), got ${p}`);
  return fit.location - fit.scale * Math.log(-Math.log(p));
}

/**
 * For each run (row) of `rows` (`rows[i][j]`, NaN: missing), the largest over the columns of
 * `|x_ij - mean_-i,j| / sd_-i,j`: its deviation from the mean of the other runs in their sds (a
 * column with fewer than 3 other finite values, or a spread below 1e-7 of their level, is left out). Leave one
 * out by exact downdating of each column's sums: O(runs x columns). `floors[j]` (optional) is the least
 * sd column j is judged at (a lattice sensor's indicator: what one count does to it).
 */
export function leaveOneOutMaxima(rows: readonly (readonly number[])[], floors?: readonly number[]): number[] {
  const n = rows.length;
  const p = n > 0 ? (rows[0] as readonly number[]).length : 0;
  const count = new Float64Array(p);
  const sum = new Float64Array(p);
  const sumSq = new Float64Array(p);
  const shift = new Float64Array(p);
  // Sums about a shift (the column's first finite value) keep the variance exact for large levels.
  for (let j = 0; j < p; j++) {
    shift[j] = NaN;
    for (const r of rows) {
      const v = r[j] as number;
      if (Number.isFinite(v)) {
        shift[j] = v;
        break;
      }
    }
  }
  for (const r of rows) {
    for (let j = 0; j < p; j++) {
      const v = r[j] as number;
      if (!Number.isFinite(v)) continue;
      const d = v - (shift[j] as number);
      count[j]++;
      sum[j] += d;
      sumSq[j] += d * d;
    }
  }
  return rows.map((r) => {
    let worst = 0;
    for (let j = 0; j < p; j++) {
      const v = r[j] as number;
      if (!Number.isFinite(v)) continue;
      const d = v - (shift[j] as number);
      const m = (count[j] as number) - 1;
      if (m < 3) continue;
      const s = (sum[j] as number) - d;
      const mean = s / m;
      const variance = ((sumSq[j] as number) - d * d - s * mean) / (m - 1);
      // A spread at numerical noise level (relative to the level) is no spread.
      const level = Math.abs((shift[j] as number) + mean);
      let sd = variance > 0 && Math.sqrt(variance) > SPREAD_TOLERANCE * level ? Math.sqrt(variance) : 0;
      // A floored indicator (a lattice sensor's: one count) is judged at no less than its floor.
      const floor = floors?.[j] ?? 0;
      if (floor > sd) sd = floor;
      if (!(sd > 0)) continue;
      const z = Math.abs(d - mean) / sd;
      if (z > worst) worst = z;
    }
    return worst;
  });
}

/**
 * The half-width, in the indicators' sds, at which a new in-control run exceeds any of the family's
 * limits with probability `alpha`, from the runs' largest standardised deviations (`maxima`, e.g.
 * {@link leaveOneOutMaxima}): the 1 - alpha quantile of a Gumbel law fitted to them.
 */
export function calibratedFamilyWidth(maxima: readonly number[], alpha: number): { readonly width: number; readonly fit: GumbelFit } {
  const fit = fitGumbel(maxima);
  return { width: gumbelQuantile(fit, 1 - alpha), fit };
}

