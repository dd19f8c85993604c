import { ChartConfigError } from '../errors';

/**
 * Standardised tabular CUSUM: z_i = (x_i - target) / sigma,
 * C+_i = max(0, C+_{i-1} + z_i - k), C-_i = max(0, C-_{i-1} - z_i - k); a signal when C+ > h or
 * C- > h (strict). `k`, `h`, `headStart` are in sigma units; `target`, `sigma` in the value's unit.
 */
export interface CusumParams {
  readonly target: number;
  /** In-control sigma of one charted value (> 0). */
  readonly sigma: number;
  /** Reference value (allowance), typically half the shift to detect: 0.5. */
  readonly k: number;
  /** Decision interval, typically 4 or 5. */
  readonly h: number;
  /** Fast initial response: C+_0 = C-_0 = headStart, 0 <= headStart < h (typically h / 2). */
  readonly headStart?: number;
  /** Restart both sums at `headStart` after a signal (default false: the sums keep accumulating). */
  readonly resetOnSignal?: boolean;
}

/** CUSUM state after a point; sums in sigma units, runs = consecutive points with the sum above 0. */
export interface CusumState {
  readonly upper: number;
  readonly lower: number;
  readonly upperRun: number;
  readonly lowerRun: number;
}

/** A CUSUM step's result: the new state and whether this point signals. */
export interface CusumStep extends CusumState {
  readonly signalUpper: boolean;
  readonly signalLower: boolean;
}

/** @throws {@link ChartConfigError} when a parameter is out of its domain. */
export function validateCusumParams(p: CusumParams): void {
  if (!Number.isFinite(p.target)) throw new ChartConfigError(`CUSUM target must be finite, got ${p.target}`);
  if (!(p.sigma > 0 && Number.isFinite(p.sigma)))
    throw new ChartConfigError(`CUSUM sigma must be > 0, got ${p.sigma}`);
  if (!(p.k >= 0 && Number.isFinite(p.k))) throw new ChartConfigError(`CUSUM k must be >= 0, got ${p.k}`);
  if (!(p.h > 0 && Number.isFinite(p.h))) throw new ChartConfigError(`CUSUM h must be > 0, got ${p.h}`);
  const hs = p.headStart ?? 0;
  if (!(hs >= 0 && hs < p.h)) throw new ChartConfigError(`CUSUM headStart must be in [0, h), got ${hs}`);
}

/** The state before the first point (both sums at the head start). */
export function cusumInitial(p: CusumParams): CusumState {
  const hs = p.headStart ?? 0;
  return { upper: hs, lower: hs, upperRun: 0, lowerRun: 0 };
}

/**
 * Advances the CUSUM by one value. The returned sums are this point's (what a chart plots and a
 * signal is judged on); continue from {@link cusumCarry} of the result, which applies `resetOnSignal`.
 */
export function cusumNext(state: CusumState, x: number, p: CusumParams): CusumStep {
  const z = (x - p.target) / p.sigma;
  const upper = Math.max(0, state.upper + z - p.k);
  const lower = Math.max(0, state.lower - z - p.k);
  return {
    upper,
    lower,
    upperRun: upper > 0 ? state.upperRun + 1 : 0,
    lowerRun: lower > 0 ? state.lowerRun + 1 : 0,
    signalUpper: upper > p.h,
    signalLower: lower > p.h,
  };
}

/** The state the next point starts from: the step's sums, or the head start after a signal with `resetOnSignal`. */
export function cusumCarry(step: CusumStep, p: CusumParams): CusumState {
  if (p.resetOnSignal && (step.signalUpper || step.signalLower)) return cusumInitial(p);
  return step;
}

/** A CUSUM chart over a series (sums in sigma units; multiply by sigma for the value's unit). */
export interface CusumSeries {
  readonly upper: Float64Array;
  readonly lower: Float64Array;
  /** 0-based indices where C+ > h. */
  readonly signalsUpper: readonly number[];
  /** 0-based indices where C- > h. */
  readonly signalsLower: readonly number[];
}

/**
 * CUSUM sums for a series of values (with `resetOnSignal`, a signalling point keeps its sums; the next
 * point starts from the head start).
 *
 * @throws {@link ChartConfigError} for invalid parameters or a non-finite value.
 */
export function cusumSeries(values: ArrayLike<number>, p: CusumParams): CusumSeries {
  validateCusumParams(p);
  const n = values.length;
  const upper = new Float64Array(n);
  const lower = new Float64Array(n);
  const signalsUpper: number[] = [];
  const signalsLower: number[] = [];
  let state = cusumInitial(p);
  for (let i = 0; i < n; i++) {
    const x = values[i];
    if (!Number.isFinite(x)) throw new ChartConfigError(`value ${i} is not finite (${x})`);
    const step = cusumNext(state, x, p);
    upper[i] = step.upper;
    lower[i] = step.lower;
    if (step.signalUpper) signalsUpper.push(i);
    if (step.signalLower) signalsLower.push(i);
    state = cusumCarry(step, p);
  }
  return { upper, lower, signalsUpper, signalsLower };
}
