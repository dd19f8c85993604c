/**
 * The level of a window (its valid samples' count and mean) without the rest of its statistics, in
 * time proportional to the window's changes rather than its samples where it holds long runs of one
 * value: a chamber's SVIDs are mostly setpoints and states, and their whole-trace level (the run part
 * of a contrast such as `mean-run_mean`) crosses every step of the recipe.
 */
import { medianFilteredAt } from './median-filter';
import { setNoValid, type BaseStatistics } from './statistics';
import type { SampleArray } from './trace';
import type { SampleRange } from './window';

const TWO_52 = 2 ** 52;
/** Above this magnitude the mean of two equal samples ((k + k) / 2) overflows. */
const HALF_MAX = Number.MAX_VALUE / 2;

/**
 * `s` after `times` additions of `d` in sequence (`for (...) s += d`), bit for bit, in O(1) when every
 * partial sum is exact: when `s` and `d` are whole multiples of one power of two P and
 * |s| + times |d| <= 2^52 P, every partial sum is a whole multiple of P below 2^53 P, which a double
 * holds exactly, so no addition rounds and the sum is `s + times * d` (itself exact). Samples stored as
 * float32, or quantised by an A/D converter, sum this way; otherwise the additions are made one by one.
 */
export function addRepeated(s: number, d: number, times: number): number {
  if (times <= 0) return s;
  // Adding a zero changes at most the sign of a zero sum, and only the first time.
  if (d === 0) return s + d;
  const total = Math.abs(s) + times * Math.abs(d);
  if (total < Infinity) {
    const p = 2 ** (Math.ceil(Math.log2(total)) - 52);
    const a = s / p;
    const b = d / p;
    // The checks in doubles are exact: a and b are whole numbers (or fail) and the bound holds with a margin.
    if (Number.isInteger(a) && Number.isInteger(b) && a * p === s && b * p === d && Math.abs(a) + times * Math.abs(b) <= TWO_52) return s + times * d;
  }
  for (let i = 0; i < times; i++) s += d;
  return s;
}

/**
 * `n`, `nMissing` and `mean` of `values[range)` — of its samples filtered by the running median of 3
 * over the whole array when `filtered` (see `medianFilter3`) — bit for bit as `computeBaseStatistics`
 * computes them (on the filtered samples), the mean's sum kept about the first valid sample in sample
 * order. The other statistics of `out` are set to NaN. A run of two or more equal finite samples inside
 * the window is its own filtered value (each of them has an equal neighbour), so the run is added as
 * one block ({@link addRepeated}); the filter is computed only for the samples between runs.
 * `known` (optional): `[start, end)` pairs by start of ranges each known to hold two or more samples
 * of one finite value (windows found constant): they are not read again.
 */
export function computeWindowLevel(values: SampleArray, range: SampleRange, filtered: boolean, out: BaseStatistics, known?: readonly number[]): BaseStatistics {
  const start = Math.max(0, range.start);
  const end = Math.min(values.length, range.end);
  let n = 0;
  let k = NaN;
  let s1 = 0;
  let i = start;
  let next = 0;
  while (i < end) {
    const x = values[i] as number;
    let j = i + 1;
    if (x - x === 0 && Math.abs(x) <= HALF_MAX) {
      if (known !== undefined) {
        // A known run of one value around sample i holds x up to its end: no need to read it.
        while (next < known.length && (known[next + 1] as number) <= i) next += 2;
        if (next < known.length && (known[next] as number) <= i) j = Math.max(j, Math.min(end, known[next + 1] as number));
      }
      // Equal samples, told apart by sign when zero (0 and -0 are different samples).
      if (x !== 0) while (j < end && values[j] === x) j++;
      else while (j < end && Object.is(values[j], x)) j++;
    }
    if (j - i >= 2) {
      if (n === 0) {
        k = x;
        s1 = addRepeated(s1, x - k, j - i - 1);
      } else s1 = addRepeated(s1, x - k, j - i);
      n += j - i;
      i = j;
      continue;
    }
    const y = filtered ? medianFilteredAt(values, i) : x;
    if (y - y === 0) {
      if (n === 0) k = y;
      else s1 += y - k;
      n++;
    }
    i++;
  }
  setNoValid(out, Math.max(0, end - start) - n, NaN);
  out.n = n;
  if (n > 0) out.mean = k + s1 / n;
  return out;
}
