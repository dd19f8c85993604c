import { ChartConfigError } from '../errors';

/**
 * EWMA chart parameters: z_i = lambda x_i + (1 - lambda) z_{i-1}, z_0 = `start` (default `center`).
 * Units of `center`, `sigma`, `start`: the charted value's.
 */
export interface EwmaParams {
  /** Weight of the newest value, 0 < lambda <= 1 (1 = Shewhart chart). */
  readonly lambda: number;
  /** Limit width in EWMA standard deviations (> 0). */
  readonly L: number;
  /** In-control mean (target). */
  readonly center: number;
  /** In-control process sigma of one value (> 0). */
  readonly sigma: number;
  /** z_0; defaults to `center`. */
  readonly start?: number;
}

/** @throws {@link ChartConfigError} when a parameter is out of its domain. */
export function validateEwmaParams(p: EwmaParams): void {
  if (!(p.lambda > 0 && p.lambda <= 1))
    throw new ChartConfigError(`EWMA lambda must be in (0, 1], got ${p.lambda}`);
  if (!(p.L > 0 && Number.isFinite(p.L))) throw new ChartConfigError(`EWMA L must be > 0, got ${p.L}`);
  if (!Number.isFinite(p.center)) throw new ChartConfigError(`EWMA center must be finite, got ${p.center}`);
  if (!(p.sigma > 0 && Number.isFinite(p.sigma)))
    throw new ChartConfigError(`EWMA sigma must be > 0, got ${p.sigma}`);
  if (p.start !== undefined && !Number.isFinite(p.start))
    throw new ChartConfigError(`EWMA start must be finite`);
}

/** The next EWMA value. */
export function ewmaNext(previous: number, x: number, lambda: number): number {
  return lambda * x + (1 - lambda) * previous;
}

/**
 * Exact half-width of the EWMA limits at point i >= 1 (1 = first point after z_0):
 * L sigma sqrt(lambda / (2 - lambda) (1 - (1 - lambda)^(2i))). It grows to the asymptotic
 * L sigma sqrt(lambda / (2 - lambda)), so early points are not judged against too-wide limits.
 */
export function ewmaHalfWidth(p: EwmaParams, i: number): number {
  return p.L * p.sigma * Math.sqrt((p.lambda / (2 - p.lambda)) * (1 - Math.pow(1 - p.lambda, 2 * i)));
}

/** Asymptotic (steady-state) EWMA limits. */
export function ewmaAsymptoticLimits(p: EwmaParams): { readonly lcl: number; readonly ucl: number } {
  const hw = p.L * p.sigma * Math.sqrt(p.lambda / (2 - p.lambda));
  return { lcl: p.center - hw, ucl: p.center + hw };
}

/** An EWMA chart over a series. */
export interface EwmaSeries {
  /** z_1..z_n. */
  readonly z: Float64Array;
  /** Exact time-varying limits for each point. */
  readonly lcl: Float64Array;
  readonly ucl: Float64Array;
  /** 0-based indices of points strictly outside their limits. */
  readonly signals: readonly number[];
}

/**
 * EWMA statistics and exact limits for a series of values.
 *
 * @throws {@link ChartConfigError} for invalid parameters or a non-finite value.
 */
export function ewmaSeries(values: ArrayLike<number>, p: EwmaParams): EwmaSeries {
  validateEwmaParams(p);
  const n = values.length;
  const z = new Float64Array(n);
  const lcl = new Float64Array(n);
  const ucl = new Float64Array(n);
  const signals: number[] = [];
  let prev = p.start ?? p.center;
  for (let i = 0; i < n; i++) {
    const x = values[i];
    if (!Number.isFinite(x)) throw new ChartConfigError(`value ${i} is not finite (${x})`);
    prev = ewmaNext(prev, x, p.lambda);
    const hw = ewmaHalfWidth(p, i + 1);
    z[i] = prev;
    lcl[i] = p.center - hw;
    ucl[i] = p.center + hw;
    if (prev > ucl[i] || prev < lcl[i]) signals.push(i);
  }
  return { z, lcl, ucl, signals };
}
