import { ChartConfigError, DegenerateBaselineError } from '../errors';
import { DEFAULT_RANGE_CONSTANTS, rangeConstants, type RangeConstantsSource } from './control-constants';
import type { ShewhartLimits } from './individuals';

/**
 * Limits of a moving-range chart (span 2, the companion of the individuals chart). `sigma` is the
 * standard error of one moving range, d3(2) / d2(2) x MR-bar (or d3(2) x sigma for a known sigma).
 */
export interface MovingRangeLimits extends ShewhartLimits {
  /** Mean moving range of the Phase I values (d2(2) x sigma for a known sigma). */
  readonly mrBar: number;
  readonly span: 2;
  readonly constants: RangeConstantsSource;
}

/**
 * Moving ranges of span 2, |x_i - x_{i-1}| for i = 1..n-1 (length n - 1). With `previous`, the first
 * value's range to it is included first (length n): a Phase II series continuing a baseline.
 *
 * @throws {@link ChartConfigError} for a non-finite value.
 */
export function movingRanges(values: ArrayLike<number>, previous?: number): Float64Array {
  const n = values.length;
  const lead = previous === undefined ? 0 : 1;
  if (previous !== undefined && !Number.isFinite(previous))
    throw new ChartConfigError(`previous value is not finite (${previous})`);
  const out = new Float64Array(Math.max(0, n - 1 + lead));
  let last = previous;
  for (let i = 0; i < n; i++) {
    const x = values[i];
    if (!Number.isFinite(x)) throw new ChartConfigError(`value ${i} is not finite (${x})`);
    if (last !== undefined) out[i - 1 + lead] = Math.abs(x - last);
    last = x;
  }
  return out;
}

function check(nSigma: number): void {
  if (!(nSigma > 0 && Number.isFinite(nSigma)))
    throw new ChartConfigError(`nSigma must be > 0, got ${nSigma}`);
}

/**
 * Phase I moving-range chart: centre MR-bar, limits MR-bar (1 +/- nSigma d3(2) / d2(2)), LCL clamped
 * at 0; at nSigma = 3 that is UCL = D4 MR-bar = 3.267 MR-bar and LCL = D3 MR-bar = 0 (Montgomery;
 * Montgomery & Runger eq. 16-19). The frozen result pairs with {@link individualsLimits} on the same
 * values (sigma = MR-bar / d2).
 *
 * @param options.constants d2 / d3 source (default `tabulated`: d2 = 1.128, as the individuals chart).
 * @throws {@link ChartConfigError} for fewer than 2 values, a non-finite value or nSigma <= 0.
 * @throws {@link DegenerateBaselineError} when every moving range is 0.
 */
export function movingRangeLimits(
  values: ArrayLike<number>,
  options: { readonly nSigma?: number; readonly constants?: RangeConstantsSource } = {},
): MovingRangeLimits {
  const nSigma = options.nSigma ?? 3;
  check(nSigma);
  if (values.length < 2)
    throw new ChartConfigError(`a moving-range chart needs at least 2 values, got ${values.length}`);
  const mr = movingRanges(values);
  let sum = 0;
  for (let i = 0; i < mr.length; i++) sum += mr[i];
  const mrBar = sum / mr.length;
  if (!(mrBar > 0)) throw new DegenerateBaselineError(`all ${mr.length} moving ranges are 0`);
  const constants = options.constants ?? DEFAULT_RANGE_CONSTANTS;
  const { d2, d3 } = rangeConstants(2, constants);
  const se = (d3 / d2) * mrBar;
  return Object.freeze({
    center: mrBar,
    sigma: se,
    nSigma,
    lcl: Math.max(0, mrBar - nSigma * se),
    ucl: mrBar + nSigma * se,
    mrBar,
    span: 2 as const,
    constants,
  });
}

/**
 * Moving-range limits from a known process sigma: centre d2(2) sigma, limits (d2 +/- nSigma d3) sigma,
 * i.e. D1 sigma = 0 and D2 sigma = 3.686 sigma at nSigma = 3.
 *
 * @throws {@link ChartConfigError} for sigma <= 0 or nSigma <= 0.
 */
export function knownMovingRangeLimits(
  sigma: number,
  options: { readonly nSigma?: number; readonly constants?: RangeConstantsSource } = {},
): MovingRangeLimits {
  const nSigma = options.nSigma ?? 3;
  check(nSigma);
  if (!(sigma > 0 && Number.isFinite(sigma))) throw new ChartConfigError(`sigma must be > 0, got ${sigma}`);
  const constants = options.constants ?? DEFAULT_RANGE_CONSTANTS;
  const { d2, d3 } = rangeConstants(2, constants);
  const center = d2 * sigma;
  return Object.freeze({
    center,
    sigma: d3 * sigma,
    nSigma,
    lcl: Math.max(0, center - nSigma * d3 * sigma),
    ucl: center + nSigma * d3 * sigma,
    mrBar: center,
    span: 2 as const,
    constants,
  });
}

/** One moving range judged against frozen limits. */
export interface MovingRangePoint {
  /** Index of the value that closes the range (in `values`). */
  readonly index: number;
  readonly movingRange: number;
  /** Strictly above the UCL or strictly below the LCL; null otherwise. */
  readonly signal: 'above' | 'below' | null;
}

/**
 * Judges the moving ranges of `values` against frozen limits (Phase II). With `previous` (the last
 * value before `values`, e.g. the baseline's last), the first value gets a range too.
 *
 * @throws {@link ChartConfigError} for a non-finite value.
 */
export function evaluateMovingRanges(
  limits: Pick<MovingRangeLimits, 'lcl' | 'ucl'>,
  values: ArrayLike<number>,
  previous?: number,
): MovingRangePoint[] {
  const mr = movingRanges(values, previous);
  const offset = previous === undefined ? 1 : 0;
  return Array.from(mr, (movingRange, i) => ({
    index: i + offset,
    movingRange,
    signal: movingRange > limits.ucl ? 'above' : movingRange < limits.lcl ? 'below' : null,
  }));
}
