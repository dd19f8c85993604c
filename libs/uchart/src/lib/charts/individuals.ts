import { c4, D2_MOVING_RANGE } from '../constants';
import { ChartConfigError } from '../errors';

/**
 * How Phase I estimates the process sigma of a variables chart:
 * - `moving-range`: mean |x_i - x_{i-1}| / d2 (d2 = 1.128): robust to a slow drift in the baseline;
 *   the design default.
 * - `sample-sd`: the sample standard deviation (n - 1).
 * - `sample-sd-unbiased`: the sample standard deviation divided by c4(n) (as R qcc's `std.dev = "SD"`).
 */
export type SigmaMethod = 'moving-range' | 'sample-sd' | 'sample-sd-unbiased';

/** Centre and sigma of a series of individual values. */
export interface SigmaEstimate {
  /** Mean of the values, in the values' unit. */
  readonly center: number;
  /** Estimated process sigma, in the values' unit. */
  readonly sigma: number;
  readonly method: SigmaMethod;
  /** Mean moving range (only for `moving-range`). */
  readonly mrBar?: number;
  readonly n: number;
}

/** Shewhart limits: centre +/- nSigma x sigma. */
export interface ShewhartLimits {
  readonly center: number;
  readonly sigma: number;
  readonly nSigma: number;
  readonly lcl: number;
  readonly ucl: number;
}

/**
 * Estimates centre (mean) and sigma of individual values, in order.
 *
 * @param d2 moving-range constant (default 1.128).
 * @throws {@link ChartConfigError} for fewer than 2 values or a non-finite value.
 */
export function estimateSigma(
  values: ArrayLike<number>,
  method: SigmaMethod = 'moving-range',
  d2: number = D2_MOVING_RANGE,
): SigmaEstimate {
  const n = values.length;
  if (n < 2) throw new ChartConfigError(`sigma estimation needs at least 2 values, got ${n}`);
  // Shifted sums (see computeBaseStatistics): exact differences for values near the first one.
  const k = values[0];
  let s1 = 0;
  let s2 = 0;
  let mr = 0;
  for (let i = 0; i < n; i++) {
    const x = values[i];
    if (!Number.isFinite(x)) throw new ChartConfigError(`value ${i} is not finite (${x})`);
    const d = x - k;
    s1 += d;
    s2 += d * d;
    if (i > 0) mr += Math.abs(x - values[i - 1]);
  }
  const center = k + s1 / n;
  const sd = Math.sqrt(Math.max(0, (s2 - (s1 * s1) / n) / (n - 1)));
  switch (method) {
    case 'moving-range': {
      const mrBar = mr / (n - 1);
      return { center, sigma: mrBar / d2, method, mrBar, n };
    }
    case 'sample-sd':
      return { center, sigma: sd, method, n };
    case 'sample-sd-unbiased':
      return { center, sigma: sd / c4(n), method, n };
  }
}

/** Limits centre +/- nSigma x sigma. */
export function shewhartLimits(center: number, sigma: number, nSigma = 3): ShewhartLimits {
  return { center, sigma, nSigma, lcl: center - nSigma * sigma, ucl: center + nSigma * sigma };
}

/**
 * Individuals (X) chart limits from Phase I values: centre = mean, sigma per `sigmaMethod`
 * (default moving range / 1.128), limits = centre +/- nSigma x sigma.
 *
 * @throws {@link ChartConfigError} for fewer than 2 values, a non-finite value or nSigma <= 0.
 */
export function individualsLimits(
  values: ArrayLike<number>,
  options: { sigmaMethod?: SigmaMethod; nSigma?: number; d2?: number } = {},
): ShewhartLimits & { readonly mrBar?: number } {
  const nSigma = options.nSigma ?? 3;
  if (!(nSigma > 0 && Number.isFinite(nSigma)))
    throw new ChartConfigError(`nSigma must be > 0, got ${nSigma}`);
  const est = estimateSigma(values, options.sigmaMethod ?? 'moving-range', options.d2);
  return {
    ...shewhartLimits(est.center, est.sigma, nSigma),
    ...(est.mrBar !== undefined ? { mrBar: est.mrBar } : {}),
  };
}
