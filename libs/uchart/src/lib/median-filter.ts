import type { SampleArray } from './trace';

/** The median of three samples, NaN-aware: of the valid ones among them (two valid: their mean). */
export function median3(a: number, b: number, c: number): number {
  const an = a === a;
  const bn = b === b;
  const cn = c === c;
  if (an && bn && cn) return a > b ? (b > c ? b : a > c ? c : a) : a > c ? a : b > c ? c : b;
  if (an && bn) return (a + b) / 2;
  if (an && cn) return (a + c) / 2;
  if (bn && cn) return (b + c) / 2;
  return an ? a : bn ? b : cn ? c : NaN;
}

/**
 * The filtered sample between `a` and `c`: three valid samples take the branch-free median (the
 * samples of a trace are noise, so a comparison's branch is a coin toss), any NaN {@link median3}.
 */
export function interiorMedian(a: number, b: number, c: number): number {
  return a === a && b === b && c === c ? Math.max(Math.min(a, b), Math.min(Math.max(a, b), c)) : median3(a, b, c);
}

/**
 * Sample `i` of `values` filtered by the running median of 3 (see {@link medianFilter3}): what that
 * filter writes at `i`, computed alone.
 */
export function medianFilteredAt(values: SampleArray, i: number): number {
  const n = values.length;
  if (n === 1) return values[0] as number;
  if (i === 0) return median3(values[0] as number, values[1] as number, NaN);
  if (i === n - 1) return median3(values[n - 2] as number, values[n - 1] as number, NaN);
  return interiorMedian(values[i - 1] as number, values[i] as number, values[i + 1] as number);
}

/**
 * `values` filtered by a running median of 3 into `out` (same length), or only `out[from, to)` (each
 * filtered sample depends on the raw samples beside it alone, so a part equals that part of the whole).
 * The first and last sample take the median of the two at the edge; NaN samples are left out of each
 * median, and a sample with no valid neighbourhood stays NaN.
 */
export function medianFilter3(values: SampleArray, out: Float64Array, from = 0, to = values.length): Float64Array {
  const n = values.length;
  const lo = Math.max(0, from);
  const hi = Math.min(n, to);
  if (hi <= lo) return out;
  if (n === 1) {
    out[0] = values[0] as number;
    return out;
  }
  if (lo === 0) out[0] = medianFilteredAt(values, 0);
  const last = Math.min(hi, n - 1);
  let i = Math.max(1, lo);
  if (i < last) {
    // Each sample is read once (the window slides).
    let a = values[i - 1] as number;
    let b = values[i] as number;
    for (; i < last; i++) {
      const c = values[i + 1] as number;
      out[i] = interiorMedian(a, b, c);
      a = b;
      b = c;
    }
  }
  if (hi === n) out[n - 1] = medianFilteredAt(values, n - 1);
  return out;
}
