/**
 * Resolution of quantised sensors (issue 49, item 4): a gauge that reports whole counts, a sensor that
 * reads 0 or 1, a state with a handful of levels. Such a sensor's readings lie on a lattice
 * `origin + k * step`; its order statistics move by whole steps, and an indicator whose Phase I values
 * take only a few levels has a Phase I sd that says little about the next run (one count is many of
 * those sds). What the monitor does with a lattice is in monitor.ts (`fitMonitorModel`); this file
 * learns lattices and says what one count does to an indicator.
 *
 * Pure functions; every constant is justified where it is defined.
 */

/** A sensor's (or an indicator's) lattice of values: `origin + k * step`. */
export interface Lattice {
  /** The lattice step (one count), > 0. */
  readonly step: number;
  /** A value on the lattice (the smallest level seen). */
  readonly origin: number;
  /** Distinct levels seen in Phase I. */
  readonly levels: number;
}

/**
 * Relative tolerance of "equal" for values computed from samples: a mean or integral of up to 10^6
 * samples in float64 carries a rounding error of about 10^6 x 2^-53 ~ 1e-10 of its magnitude; 1e-9
 * leaves a margin of ten and is still far below any real sensor resolution (1e-9 of full scale).
 */
export const LATTICE_TOLERANCE = 1e-9;

/**
 * The finest step, relative to the values' magnitude, taken for a sensor's resolution. A 20-bit A/D
 * converter, about the finest on process tools, resolves 1e-6 of its full scale; values stored as
 * float32 (24 bits, 6e-8 relative) sit on a lattice of the number format that is not the sensor's.
 */
export const MIN_RELATIVE_STEP = 1e-6;

/**
 * Share of a sensor's Phase I order statistics that must lie on its lattice. Interpolated percentiles
 * (p05, p95 between two order statistics) leave the lattice only when their two neighbouring samples
 * differ, a minority on a lattice sensor (its samples tie in long runs); a continuous sensor has no
 * repeated values at all. 0.8 accepts a lattice sensor with up to one in five percentiles
 * interpolated and rejects a sensor continuous in more than a fifth of its windows (mixed sensors).
 */
export const ON_LATTICE_SHARE = 0.8;

/**
 * A sensor whose lattice shows fewer than this many levels in Phase I has its indicators charted as
 * attributes (counts), and an indicator of a lattice sensor with fewer distinct Phase I values takes
 * the smallest departure from its usual value as its step ({@link fewLevelStep}). A rounded normal variable keeps the moments of its continuous version only
 * while the step is below about one sd (Sheppard's correction, q^2/12, is then at most 1/12 of the
 * variance); ±3 sds then cover at least 6 steps. Fewer than 6 levels over Phase I means the step is
 * larger than the spread: the sd, and any correlation with the continuous indicators, is mostly
 * rounding, so such a sensor's indicators stay out of the PCA and are charted alone, their sd
 * floored at one step.
 */
export const FEW_LEVELS = 6;

/**
 * The greatest common step of `a` and `b` (both >= 0) within `tol`: Euclid's algorithm, a remainder
 * within `tol` of 0 or of the divisor counting as none. 0 when both are within `tol` of 0.
 */
export function toleranceGcd(a: number, b: number, tol: number): number {
  let x = Math.abs(a);
  let y = Math.abs(b);
  if (x < y) [x, y] = [y, x];
  while (y > tol) {
    let r = x % y;
    if (y - r <= tol) r = 0;
    x = y;
    y = r;
  }
  return x > tol ? x : 0;
}

function toleranceOf(values: ArrayLike<number>): number {
  let big = 0;
  for (let i = 0; i < values.length; i++) big = Math.max(big, Math.abs(values[i] as number));
  return LATTICE_TOLERANCE * Math.max(big, 1e-300);
}

/**
 * The finite values of `values` in increasing order, as a stable sort by `a - b` orders them: by the
 * typed array's numeric sort (no comparator call per pair), unless both 0 and -0 occur, whose order
 * that sort changes (-0 first) where a sort by `a - b` keeps theirs.
 */
export function sortedFinite(values: readonly number[]): Float64Array | number[] {
  const xs = new Float64Array(values.length);
  let count = 0;
  let zero = false;
  let minusZero = false;
  for (const v of values) {
    if (!Number.isFinite(v)) continue;
    xs[count++] = v;
    if (v === 0) {
      if (Object.is(v, -0)) minusZero = true;
      else zero = true;
    }
  }
  if (zero && minusZero) return values.filter((v) => Number.isFinite(v)).sort((a, b) => a - b);
  return xs.subarray(0, count).sort();
}

/** Whether `v` lies on `origin + k * step` within `tol`. */
function onLattice(v: number, origin: number, step: number, tol: number): boolean {
  const k = Math.round((v - origin) / step);
  return Math.abs(v - origin - k * step) <= tol;
}

/** The distinct values of sorted `xs` (equal within `tol`) and how often each occurs, in value order. */
function levelsOf(xs: ArrayLike<number>, tol: number): { value: number; count: number }[] {
  const levels: { value: number; count: number }[] = [];
  for (let i = 0; i < xs.length; ) {
    let j = i + 1;
    while (j < xs.length && (xs[j] as number) - (xs[i] as number) <= tol) j++;
    levels.push({ value: xs[i] as number, count: j - i });
    i = j;
  }
  return levels;
}

function distinctLevels(values: readonly number[], origin: number, step: number): number {
  const seen = new Set<number>();
  for (const v of values) seen.add(Math.round((v - origin) / step));
  return seen.size;
}

/**
 * A sensor's lattice from values that lie on it when the sensor is quantised: its order statistics
 * (min, max, p05, p95, median, first, last of its windows over the Phase I runs). Only values that
 * occur more than once are levels (a lattice sensor's values repeat; a continuous sensor's do not);
 * the step is the coarsest common step of the most frequent levels on which at least
 * {@link ON_LATTICE_SHARE} of all the values lie, the smallest and the largest among them (a value off
 * the lattice must lie between two levels, as an interpolated percentile does). Undefined when the sensor shows no lattice:
 * fewer than two repeated levels (a continuous sensor, or a constant one, whose step cannot be told
 * from one level), too many values off the lattice (a sensor continuous in some windows), or a step
 * below {@link MIN_RELATIVE_STEP} of the values (the number format's, e.g. float32).
 */
export function learnLattice(values: readonly number[]): Lattice | undefined {
  const xs = sortedFinite(values);
  if (xs.length < 2) return undefined;
  const tol = toleranceOf(xs);
  // Levels (values equal within the tolerance) that occur more than once, most frequent first.
  const levels = levelsOf(xs, tol).filter((l) => l.count >= 2);
  if (levels.length < 2) return undefined;
  levels.sort((a, b) => b.count - a.count || a.value - b.value);
  // The coarsest lattice that holds ON_LATTICE_SHARE of the values: the step of the most frequent
  // levels, refined (a common step with the next most frequent level) until it does. Interpolated
  // percentiles repeat too (the same fraction between two levels in every run of a window), but
  // less often than the levels themselves, so they are reached last, if ever.
  const origin = (levels[0] as { value: number }).value;
  let step = 0;
  for (let i = 1; i < levels.length; i++) {
    step = toleranceGcd(step, (levels[i] as { value: number }).value - origin, tol);
    if (!(step > 0) || step < MIN_RELATIVE_STEP * Math.max(Math.abs(xs[0] as number), Math.abs(xs[xs.length - 1] as number))) return undefined;
    let on = 0;
    for (const v of xs) if (onLattice(v, origin, step, tol)) on++;
    if (on < ON_LATTICE_SHARE * xs.length) continue;
    // An interpolated percentile lies between two levels; a value off the lattice outside its
    // range is a level the step misses (99 and 101 most often, 98 now and then: the step is 1).
    const lowest = xs[0] as number;
    if (onLattice(lowest, origin, step, tol) && onLattice(xs[xs.length - 1] as number, origin, step, tol)) {
      const lattice: number[] = [];
      for (const v of xs) if (onLattice(v, origin, step, tol)) lattice.push(v);
      return { step, origin: lowest, levels: distinctLevels(lattice, lowest, step) };
    }
  }
  return undefined;
}

/**
 * The step of an indicator's own Phase I values (all of them on `origin + k * step` within the
 * tolerance): what one count of its sensor does to it when it is a linear function of the readings
 * (a window mean moves by step / n, an integral by step x the sample interval). Undefined when the
 * values are all equal. On continuous values Euclid ends near the tolerance: a step that small floors
 * nothing (it is far below the indicator's sd) and spans millions of levels, so it changes nothing.
 */
export function indicatorStep(values: readonly number[]): number | undefined {
  const xs = values.filter((v) => Number.isFinite(v));
  if (xs.length < 2) return undefined;
  const tol = toleranceOf(xs);
  const origin = xs[0] as number;
  let step = 0;
  for (const v of xs) step = toleranceGcd(step, v - origin, tol);
  return step > 0 ? step : undefined;
}

/**
 * For an indicator with fewer than {@link FEW_LEVELS} distinct values: the smallest
 * departure of a value from the most frequent one — what the fewest counts seen in Phase I did to it
 * (a window that usually sits on one level and now and then has a few readings off it: the mean
 * moves by those readings over the window's n, whatever n is). Undefined when the values take
 * FEW_LEVELS or more distinct values, or one.
 */
export function fewLevelStep(values: readonly number[]): number | undefined {
  const xs = sortedFinite(values);
  if (xs.length < 2) return undefined;
  const levels = levelsOf(xs, toleranceOf(xs));
  if (levels.length < 2 || levels.length >= FEW_LEVELS) return undefined;
  const mode = levels.reduce((a, b) => (b.count > a.count ? b : a)).value;
  let step = Infinity;
  for (const l of levels) if (l.value !== mode) step = Math.min(step, Math.abs(l.value - mode));
  return step;
}
