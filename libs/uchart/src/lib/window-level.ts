/**
 * The level of a window (its valid samples' count and mean) without the rest of its statistics, in
 * time proportional to the window's changes rather than its samples where it holds long runs of one
 * value: a chamber's SVIDs are mostly setpoints and states, and their whole-trace level (the run part
 * of a contrast such as `mean-run_mean`) crosses every step of the recipe.
 */
import { interiorMedian, medianFilteredAt } from './median-filter';
import { setNoValid, type BaseStatistics } from './statistics';
import type { SampleArray } from './trace';
import type { SampleRange } from './window';

const TWO_52 = 2 ** 52;
/** Runs up to this long are added one by one (see {@link addRepeated}). */
const SHORT_RUN = 16;
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
  // A short run is added faster than the exactness is checked (quantised noise repeats values in twos and threes).
  if (times <= SHORT_RUN) {
    for (let i = 0; i < times; i++) s += d;
    return s;
  }
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
 * of one finite value (windows found constant): they are not read again. `done` (optional): the
 * samples already filtered (by `medianFilter3`), read rather than filtered again.
 */
export function computeWindowLevel(
  values: SampleArray,
  range: SampleRange,
  filtered: boolean,
  out: BaseStatistics,
  known?: readonly number[],
  done?: FilteredPart,
): BaseStatistics {
  const start = Math.max(0, range.start);
  const end = Math.min(values.length, range.end);
  const sum = new LevelSum();
  let i = start;
  let next = 0;
  // Samples 1 .. length - 2 have both neighbours: their filtered value is the interior median.
  const lastInterior = values.length - 1;
  // Each inner loop is a function of its own: a loop inside this one would be entered by on-stack
  // replacement and leave it by deoptimising, run after run.
  const doneFrom = filtered && done !== undefined ? done.from : end;
  const doneTo = filtered && done !== undefined ? done.to : end;
  while (i < end) {
    if (i >= doneFrom && i < doneTo) {
      i = addAll((done as FilteredPart).values, i, Math.min(end, doneTo), sum);
      continue;
    }
    const x = values[i] as number;
    if (i + 1 < end && startsRun(x, values[i + 1] as number)) {
      let j = i + 2;
      if (known !== undefined) {
        // A known run of one value around sample i holds x up to its end: no need to read it.
        while (next < known.length && (known[next + 1] as number) <= i) next += 2;
        if (next < known.length && (known[next] as number) <= i) j = Math.max(j, Math.min(end, known[next + 1] as number));
      }
      j = runEnd(values, j, end, x);
      sum.addRun(x, j - i);
      i = j;
    } else if (!filtered || i === 0 || i >= lastInterior) {
      sum.add(filtered ? medianFilteredAt(values, i) : x);
      i++;
    } else i = slide(values, i, Math.min(end, lastInterior), sum);
  }
  setNoValid(out, Math.max(0, end - start) - sum.n, NaN);
  out.n = sum.n;
  if (sum.n > 0) out.mean = sum.k + sum.s1 / sum.n;
  return out;
}

/** Samples `[from, to)` of an array already filtered (`values`, as long as the samples). */
export interface FilteredPart {
  readonly values: Float64Array;
  readonly from: number;
  readonly to: number;
}

/** Adds `values[i, stop)` to `sum`; returns `stop`. */
function addAll(values: Float64Array, i: number, stop: number, sum: LevelSum): number {
  for (; i < stop; i++) sum.add(values[i] as number);
  return stop;
}

/** A window's level as its kernel sums it: valid samples `n`, the first `k`, and `s1` the sum of the others' differences from `k`, in order. */
class LevelSum {
  n = 0;
  k = NaN;
  s1 = 0;

  add(y: number): void {
    if (y - y === 0) {
      if (this.n === 0) this.k = y;
      else this.s1 += y - this.k;
      this.n++;
    }
  }

  /** `count` valid samples equal to `x` (its filtered value, a run). */
  addRun(x: number, count: number): void {
    if (this.n === 0) {
      this.k = x;
      this.s1 = addRepeated(this.s1, x - this.k, count - 1);
    } else this.s1 = addRepeated(this.s1, x - this.k, count);
    this.n += count;
  }
}

/** Whether a finite sample `x` and the next, `y`, start a run: equal, told apart by sign when zero (0 and -0 are different samples), and `x + x` finite (its filtered value is then itself). */
function startsRun(x: number, y: number): boolean {
  return x - x === 0 && (x !== 0 ? y === x : Object.is(y, x)) && Math.abs(x) <= HALF_MAX;
}

/** The end of the run of `x` that reaches `from` (the first sample from there that is not `x`), at most `end`. */
function runEnd(values: SampleArray, from: number, end: number, x: number): number {
  let j = from;
  if (x !== 0) while (j < end && values[j] === x) j++;
  else while (j < end && Object.is(values[j], x)) j++;
  return j;
}

/**
 * Adds the filtered samples from `i` (interior: 0 < i, i < `stop` <= length - 1) up to `stop` or the
 * next run, sliding the filter (each sample read once); returns where it stopped.
 */
function slide(values: SampleArray, i: number, stop: number, sum: LevelSum): number {
  let a = values[i - 1] as number;
  let b = values[i] as number;
  let c = values[i + 1] as number;
  for (;;) {
    sum.add(interiorMedian(a, b, c));
    i++;
    if (i >= stop) return i;
    a = b;
    b = c;
    c = values[i + 1] as number;
    if (startsRun(b, c)) return i;
  }
}
