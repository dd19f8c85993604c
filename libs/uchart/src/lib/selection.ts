import type { SampleArray } from './trace';
import type { SampleRange } from './window';

/** Exact order-statistic summaries of one SVID over one window (R / NumPy "type 7" definition). */
export interface Percentiles {
  /** 50th percentile: the middle sample, or the mean of the two middle samples. */
  median: number;
  /** 5th percentile, linear interpolation between order statistics. */
  p05: number;
  /** 95th percentile, linear interpolation between order statistics. */
  p95: number;
}

/**
 * Rearranges `a[left..right]` so that `a[k]` holds the value it would hold if that range were sorted,
 * smaller-or-equal values before it and greater-or-equal after (Floyd & Rivest, CACM 1975, Algorithm
 * 489: recursive sampling narrows the range before Hoare partitioning). Expected O(n); no allocation.
 */
export function floydRivestSelect(a: Float64Array, k: number, left: number, right: number): void {
  while (right > left) {
    if (right - left > 600) {
      // Select within a sample around the expected position first, so the partition below usually
      // brackets k tightly.
      const n = right - left + 1;
      const i = k - left + 1;
      const z = Math.log(n);
      const s = 0.5 * Math.exp((2 * z) / 3);
      const sd = 0.5 * Math.sqrt((z * s * (n - s)) / n) * (i - n / 2 < 0 ? -1 : 1);
      const newLeft = Math.max(left, Math.floor(k - (i * s) / n + sd));
      const newRight = Math.min(right, Math.floor(k + ((n - i) * s) / n + sd));
      floydRivestSelect(a, k, newLeft, newRight);
    }
    const pivot = a[k];
    let i = left;
    let j = right;
    swap(a, left, k);
    if (a[right] > pivot) swap(a, left, right);
    while (i < j) {
      swap(a, i, j);
      i++;
      j--;
      while (a[i] < pivot) i++;
      while (a[j] > pivot) j--;
    }
    if (a[left] === pivot) swap(a, left, j);
    else {
      j++;
      swap(a, j, right);
    }
    if (j <= k) left = j + 1;
    if (k <= j) right = j - 1;
  }
}

function swap(a: Float64Array, i: number, j: number): void {
  const t = a[i];
  a[i] = a[j];
  a[j] = t;
}

function minOf(a: Float64Array, from: number, to: number): number {
  let m = a[from];
  for (let i = from + 1; i <= to; i++) if (a[i] < m) m = a[i];
  return m;
}

/**
 * A growable scratch buffer for percentile selection, reused across calls so computing percentiles
 * allocates nothing once it has grown to the largest window seen. Not safe to share between
 * concurrent computations (there are none in single-threaded JS unless a caller interleaves them).
 */
export class SelectionScratch {
  private buffer: Float64Array;

  constructor(initialCapacity = 0) {
    this.buffer = new Float64Array(Math.max(0, initialCapacity));
  }

  /** Current capacity in samples. */
  get capacity(): number {
    return this.buffer.length;
  }

  /** A buffer of at least `n` samples (grows geometrically). */
  acquire(n: number): Float64Array {
    if (this.buffer.length < n)
      this.buffer = new Float64Array(Math.max(n, Math.ceil(this.buffer.length * 1.5)));
    return this.buffer;
  }
}

/**
 * Exact median, p05 and p95 of the valid samples of `values[range)` by selection, not sorting: the
 * valid samples are copied into `scratch` (the input is never modified), the median is selected over
 * all of them, then p05 and p95 within the two halves the median selection left. Expected O(n).
 *
 * @returns the percentiles, or `undefined` when the window has no valid sample.
 */
export function computePercentiles(
  values: SampleArray,
  range: SampleRange,
  scratch: SelectionScratch,
): Percentiles | undefined {
  const start = Math.max(0, range.start);
  const end = Math.min(values.length, range.end);
  const buf = scratch.acquire(Math.max(0, end - start));
  let n = 0;
  for (let i = start; i < end; i++) {
    const x = values[i];
    if (x - x === 0) buf[n++] = x;
  }
  if (n === 0) return undefined;
  const last = n - 1;

  // Type 7: h = (n - 1) p, q = x(floor h) + frac(h) * (x(floor h + 1) - x(floor h)).
  const hm = last * 0.5;
  const km = Math.floor(hm);
  floydRivestSelect(buf, km, 0, last);
  const xm = buf[km];
  const median = hm === km ? xm : xm + (hm - km) * (minOf(buf, km + 1, last) - xm);

  const h5 = last * 0.05;
  const k5 = Math.floor(h5);
  let p05: number;
  if (k5 === km) {
    p05 = h5 === k5 ? xm : xm + (h5 - k5) * (minOf(buf, km + 1, last) - xm);
  } else {
    floydRivestSelect(buf, k5, 0, km - 1);
    const x5 = buf[k5];
    // Everything in (k5, km] is >= x5, so the next order statistic is the smallest there.
    p05 = h5 === k5 ? x5 : x5 + (h5 - k5) * (minOf(buf, k5 + 1, km) - x5);
  }

  const h95 = last * 0.95;
  const k95 = Math.floor(h95);
  let p95: number;
  if (k95 === km) {
    p95 = h95 === k95 ? xm : xm + (h95 - k95) * (minOf(buf, km + 1, last) - xm);
  } else {
    floydRivestSelect(buf, k95, km + 1, last);
    const x95 = buf[k95];
    p95 = h95 === k95 || k95 === last ? x95 : x95 + (h95 - k95) * (minOf(buf, k95 + 1, last) - x95);
  }
  return { median, p05, p95 };
}

/**
 * {@link computePercentiles} of a window of `n` >= 1 valid samples all equal to `k`, without copying
 * or selecting: the same expressions with every order statistic `k`, so the same values bit for bit.
 */
export function constantPercentiles(k: number, n: number): Percentiles {
  const last = n - 1;
  const hm = last * 0.5;
  const km = Math.floor(hm);
  const median = hm === km ? k : k + (hm - km) * (k - k);
  const h5 = last * 0.05;
  const k5 = Math.floor(h5);
  const p05 = h5 === k5 ? k : k + (h5 - k5) * (k - k);
  const h95 = last * 0.95;
  const k95 = Math.floor(h95);
  const p95 = h95 === k95 || (k95 !== km && k95 === last) ? k : k + (h95 - k95) * (k - k);
  return { median, p05, p95 };
}
