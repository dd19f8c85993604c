import type { SampleArray, SampleTiming } from './trace';
import type { SampleRange } from './window';

/**
 * Base statistics of one SVID over one window. Missing samples (NaN, ±Infinity) are excluded from
 * every statistic and counted in `nMissing`. Units: the SVID's unit unless stated.
 */
export interface BaseStatistics {
  /** Valid (finite) samples in the window. */
  n: number;
  /** Missing (NaN / ±Infinity) samples in the window. */
  nMissing: number;
  /** Arithmetic mean; NaN when n = 0. */
  mean: number;
  /** Sample standard deviation (divisor n - 1); NaN when n < 2. */
  std: number;
  /** NaN when n = 0. */
  min: number;
  /** NaN when n = 0. */
  max: number;
  /** max - min; NaN when n = 0. */
  range: number;
  /** First valid sample; NaN when n = 0. */
  first: number;
  /** Last valid sample; NaN when n = 0. */
  last: number;
  /** Least-squares slope of value on time, unit per second; NaN when n < 2. */
  slopePerSecond: number;
  /**
   * Trapezoid integral over time, unit x seconds, from the first to the last valid sample; a run of
   * missing samples is bridged by the straight line between its valid neighbours. 0 when n = 1,
   * NaN when n = 0.
   */
  integral: number;
  /** Time from the window's first to its last sample (valid or not), seconds; NaN for an empty window. */
  durationSeconds: number;
}

/** A fresh, reusable output record for {@link computeBaseStatistics}. */
export function createBaseStatistics(): BaseStatistics {
  return {
    n: 0,
    nMissing: 0,
    mean: NaN,
    std: NaN,
    min: NaN,
    max: NaN,
    range: NaN,
    first: NaN,
    last: NaN,
    slopePerSecond: NaN,
    integral: NaN,
    durationSeconds: NaN,
  };
}

/** Fills `out` as for a window without a valid sample: `nMissing` missing samples over `duration` seconds. */
export function setNoValid(out: BaseStatistics, nMissing: number, duration: number): void {
  out.n = 0;
  out.nMissing = nMissing;
  out.mean = NaN;
  out.std = NaN;
  out.min = NaN;
  out.max = NaN;
  out.range = NaN;
  out.first = NaN;
  out.last = NaN;
  out.slopePerSecond = NaN;
  out.integral = NaN;
  out.durationSeconds = duration;
}

/**
 * Computes every base statistic of `values[range.start, range.end)` in one pass over the samples,
 * without copying the input and without allocating per sample (only the result record, and not even
 * that when `out` is given).
 *
 * Numerics: sums are taken of `x - K`, K being the first valid sample of the window (the shifted-data
 * algorithm). The subtraction is exact for samples within a factor of two of K (Sterbenz), so a trace
 * at offset 1e6 with sd 1e-3 keeps its full precision where the naive sum of squares loses it all.
 * The slope uses sample offsets from the first valid sample as abscissa, for the same reason.
 *
 * @param values samples of one SVID (NaN / ±Infinity = missing).
 * @param timing the trace's sample times.
 * @param range half-open sample range; defaults to the whole array. Not bounds-checked beyond
 *   clamping to the array.
 * @param out optional record to fill and return (for allocation-free loops).
 */
export function computeBaseStatistics(
  values: SampleArray,
  timing: SampleTiming,
  range?: SampleRange,
  out: BaseStatistics = createBaseStatistics(),
): BaseStatistics {
  const start = Math.max(0, range?.start ?? 0);
  const end = Math.min(values.length, range?.end ?? values.length);
  if (end <= start) {
    setNoValid(out, 0, NaN);
    return out;
  }
  if (timing.kind === 'regular') regularKernel(values, start, end, 1 / timing.frequencyHz, out);
  else explicitKernel(values, start, end, timing.timesSeconds, out);
  return out;
}

/**
 * {@link computeBaseStatistics} of a window the caller knows holds two or more samples, all valid and
 * equal to `k` (a setpoint or state): the same values, bit for bit, without reading the samples for
 * regular timing (the kernel's sums are all 0 then; the same expressions are evaluated).
 */
export function computeConstantStatistics(
  values: SampleArray,
  timing: SampleTiming,
  range: SampleRange,
  out: BaseStatistics = createBaseStatistics(),
): BaseStatistics {
  const start = Math.max(0, range.start);
  const end = Math.min(values.length, range.end);
  if (timing.kind !== 'regular' || end - start < 2) return computeBaseStatistics(values, timing, range, out);
  const dt = 1 / timing.frequencyHz;
  const k = values[start] as number;
  const span = end - 1 - start;
  const n = span + 1;
  const sumU = (span * (span + 1)) / 2;
  const sumUU = (span * (span + 1) * (2 * span + 1)) / 6;
  out.n = n;
  out.nMissing = 0;
  out.mean = k + 0 / n;
  out.std = Math.sqrt(Math.max(0, (0 - 0 / n) / (n - 1)));
  out.min = k;
  out.max = k;
  out.range = k - k;
  out.first = k;
  out.last = k;
  const sxx = sumUU - (sumU * sumU) / n;
  const sxy = 0 - (sumU * 0) / n;
  out.slopePerSecond = sxy / sxx / dt;
  out.integral = dt * (0 - 0.5 * (k - k) + 0.5 * 0) + k * span * dt;
  out.durationSeconds = (end - 1 - start) * dt;
  return out;
}

function regularKernel(v: SampleArray, start: number, end: number, dt: number, out: BaseStatistics): void {
  // `x - x === 0` is false exactly for NaN and ±Infinity: one compare instead of Number.isFinite.
  let f = start;
  while (f < end && !(v[f] - v[f] === 0)) f++;
  if (f === end) {
    setNoValid(out, end - start, (end - 1 - start) * dt);
    return;
  }
  let l = end - 1;
  while (!(v[l] - v[l] === 0)) l--;

  const k = v[f];
  let s1 = 0;
  let s2 = 0;
  let sud = 0;
  let min = k;
  let max = k;
  let missing = 0;
  let missU = 0;
  let missUU = 0;
  let gap = 0;
  for (let i = f + 1; i <= l; i++) {
    const x = v[i];
    if (x - x === 0) {
      const d = x - k;
      s1 += d;
      s2 += d * d;
      sud += (i - f) * d;
      if (x < min) min = x;
      else if (x > max) max = x;
    } else {
      // A run of missing samples between the valid samples a = i - 1 and b (b <= l exists since v[l]
      // is valid). Its offsets leave the closed-form index sums; the trapezoid between a and b spans
      // the gap, which the sum-of-values formula below counts as one step, so add the difference.
      const a = i - 1;
      let b = i;
      do {
        const u = b - f;
        missing++;
        missU += u;
        missUU += u * u;
        b++;
      } while (!(v[b] - v[b] === 0));
      gap += (b - a - 1) * (v[a] - k + (v[b] - k));
      i = b - 1;
    }
  }

  const span = l - f;
  const n = span + 1 - missing;
  const sumU = (span * (span + 1)) / 2 - missU;
  const sumUU = (span * (span + 1) * (2 * span + 1)) / 6 - missUU;
  const dl = v[l] - k;

  out.n = n;
  out.nMissing = missing + (f - start) + (end - 1 - l);
  out.mean = k + s1 / n;
  out.std = n > 1 ? Math.sqrt(Math.max(0, (s2 - (s1 * s1) / n) / (n - 1))) : NaN;
  out.min = min;
  out.max = max;
  out.range = max - min;
  out.first = k;
  out.last = v[l];
  if (n > 1) {
    const sxx = sumUU - (sumU * sumU) / n;
    const sxy = sud - (sumU * s1) / n;
    out.slopePerSecond = sxy / sxx / dt;
  } else {
    out.slopePerSecond = NaN;
  }
  // Trapezoid over consecutive valid samples = dt * (sum - (first + last) / 2), plus the gap terms;
  // the shift K contributes K x (time span).
  out.integral = dt * (s1 - 0.5 * dl + 0.5 * gap) + k * span * dt;
  out.durationSeconds = (end - 1 - start) * dt;
}

function explicitKernel(
  v: SampleArray,
  start: number,
  end: number,
  t: Float64Array,
  out: BaseStatistics,
): void {
  let f = start;
  while (f < end && !(v[f] - v[f] === 0)) f++;
  if (f === end) {
    setNoValid(out, end - start, t[end - 1] - t[start]);
    return;
  }
  const k = v[f];
  const t0 = t[f];
  let n = 1;
  let missing = f - start;
  let s1 = 0;
  let s2 = 0;
  let st = 0;
  let stt = 0;
  let std = 0;
  let integ = 0;
  let prevTau = 0;
  let prevD = 0;
  let min = k;
  let max = k;
  let last = k;
  let lastTau = 0;
  for (let i = f + 1; i < end; i++) {
    const x = v[i];
    if (x - x === 0) {
      const d = x - k;
      const tau = t[i] - t0;
      n++;
      s1 += d;
      s2 += d * d;
      st += tau;
      stt += tau * tau;
      std += tau * d;
      integ += (prevD + d) * (tau - prevTau);
      prevD = d;
      prevTau = tau;
      if (x < min) min = x;
      else if (x > max) max = x;
      last = x;
      lastTau = tau;
    } else {
      missing++;
    }
  }
  out.n = n;
  out.nMissing = missing;
  out.mean = k + s1 / n;
  out.std = n > 1 ? Math.sqrt(Math.max(0, (s2 - (s1 * s1) / n) / (n - 1))) : NaN;
  out.min = min;
  out.max = max;
  out.range = max - min;
  out.first = k;
  out.last = last;
  const sxx = stt - (st * st) / n;
  out.slopePerSecond = n > 1 && sxx > 0 ? (std - (st * s1) / n) / sxx : NaN;
  out.integral = 0.5 * integ + k * lastTau;
  out.durationSeconds = t[end - 1] - t[start];
}

/**
 * Length of the moving average behind `ma_max` / `ma_min`, seconds (5-10 samples at the 1-2 Hz of
 * most chambers, 50 at 10 Hz). A pulse or dropout at least this long moves the average by its full
 * height while the sample noise in it shrinks by sqrt(samples); a 3 s pulse keeps 3/5 of it. Measured
 * on bench:detection (docs/adr/0005-chamber-monitor.md, decision 9): 3 s, matched to the shortest
 * pulse, caught less with a worse worst chamber (the extremes of short averages of skewed sample
 * noise have a long tail); 10 s diluted the pulses.
 */
export const MOVING_AVERAGE_SECONDS = 5;

const SQRT_PI = Math.sqrt(Math.PI);

/**
 * Shape statistics of one SVID over one window, for transients the base statistics see poorly.
 * Missing samples (NaN, ±Infinity) break adjacency: no difference or average spans one.
 */
export interface ShapeStatistics {
  /**
   * Within-run noise sd from successive differences: `sqrt(pi) / 2 x sum |x[i+1] - x[i]| / m` over
   * the `m` pairs of adjacent samples that are both valid. For white Gaussian noise of sd s,
   * `E|x[i+1] - x[i]| = 2 s / sqrt(pi)`, so it estimates s; around a slowly varying profile (a ramp,
   * a settling transient, a level) it leaves the profile out, which `std` includes. Absolute rather
   * than squared differences: skewed or heavy-tailed sample noise gives the squared form a long
   * right tail from run to run (docs/adr/0005-chamber-monitor.md, decision 9). NaN when m = 0.
   */
  noise: number;
  /**
   * Samples per moving average: `max(1, round(MOVING_AVERAGE_SECONDS x rate))`, the rate being the
   * frequency for regular timing, the window's mean rate `(n - 1) / (t_last - t_first)` over its
   * `n` samples for explicit times (1 sample when the window spans no time).
   */
  maSamples: number;
  /**
   * Largest mean of `maSamples` consecutive samples of the window, all valid (a scan statistic: a
   * short pulse moves it by its full height while the noise it carries is averaged down); NaN when
   * the window has no such run of valid samples.
   */
  maMax: number;
  /** Smallest mean of `maSamples` consecutive valid samples (a short dropout); NaN like `maMax`. */
  maMin: number;
}

/** A fresh, reusable output record for {@link computeShapeStatistics}. */
export function createShapeStatistics(): ShapeStatistics {
  return { noise: NaN, maSamples: 0, maMax: NaN, maMin: NaN };
}

/**
 * {@link computeShapeStatistics} of a window the caller knows holds two or more samples, all valid and
 * equal (see {@link computeConstantStatistics}): the same values bit for bit, without a pass (the
 * differences and the moving sums are all 0).
 */
export function computeConstantShape(
  values: SampleArray,
  timing: SampleTiming,
  range: SampleRange,
  out: ShapeStatistics = createShapeStatistics(),
): ShapeStatistics {
  const start = Math.max(0, range.start);
  const end = Math.min(values.length, range.end);
  if (end - start < 2) return computeShapeStatistics(values, timing, range, out);
  const rate = movingAverageRate(timing, start, end);
  const w = Number.isFinite(rate) ? Math.max(1, Math.round(MOVING_AVERAGE_SECONDS * rate)) : 1;
  const k = values[start] as number;
  out.maSamples = w;
  out.noise = (SQRT_PI / 2) * (0 / (end - start - 1));
  out.maMax = end - start >= w ? k + 0 / w : NaN;
  out.maMin = out.maMax;
  return out;
}

/** Samples per second of `[start, end)` (see `ShapeStatistics.maSamples`); NaN when it spans no time. */
function movingAverageRate(timing: SampleTiming, start: number, end: number): number {
  if (timing.kind === 'regular') return timing.frequencyHz;
  const span = end - start >= 2 ? timing.timesSeconds[end - 1] - timing.timesSeconds[start] : 0;
  return span > 0 ? (end - start - 1) / span : NaN;
}

/**
 * Computes the {@link ShapeStatistics} of `values[range.start, range.end)` in one pass, reading the
 * samples in place and allocating nothing (only the result record, and not even that when `out` is
 * given). The moving sum is kept of `x - K`, K the window's first valid sample, as in
 * {@link computeBaseStatistics}.
 *
 * @param values samples of one SVID (NaN / ±Infinity = missing).
 * @param timing the trace's sample times (they set the moving average's length).
 * @param range half-open sample range; defaults to the whole array, clamped to it.
 * @param out optional record to fill and return.
 */
export function computeShapeStatistics(
  values: SampleArray,
  timing: SampleTiming,
  range?: SampleRange,
  out: ShapeStatistics = createShapeStatistics(),
): ShapeStatistics {
  const start = Math.max(0, range?.start ?? 0);
  const end = Math.min(values.length, range?.end ?? values.length);
  const rate = movingAverageRate(timing, start, end);
  const w = Number.isFinite(rate) ? Math.max(1, Math.round(MOVING_AVERAGE_SECONDS * rate)) : 1;
  out.maSamples = w;
  let k = 0;
  for (let i = start; i < end; i++) {
    if (values[i] - values[i] === 0) {
      k = values[i];
      break;
    }
  }
  let sad = 0;
  let pairs = 0;
  let sum = 0;
  // Invalid samples among the last w, and the maximum / minimum of the moving sum.
  let invalid = 0;
  let maxSum = -Infinity;
  let minSum = Infinity;
  let prev = NaN;
  for (let i = start; i < end; i++) {
    const x = values[i];
    const valid = x - x === 0;
    if (valid) {
      sum += x - k;
      if (prev - prev === 0) {
        const d = x - prev;
        sad += d < 0 ? -d : d;
        pairs++;
      }
    } else invalid++;
    prev = x;
    if (i - start >= w) {
      const y = values[i - w];
      if (y - y === 0) sum -= y - k;
      else invalid--;
    }
    if (i - start >= w - 1 && invalid === 0) {
      if (sum > maxSum) maxSum = sum;
      if (sum < minSum) minSum = sum;
    }
  }
  out.noise = pairs > 0 ? (SQRT_PI / 2) * (sad / pairs) : NaN;
  out.maMax = maxSum === -Infinity ? NaN : k + maxSum / w;
  out.maMin = minSum === Infinity ? NaN : k + minSum / w;
  return out;
}
