import { ChartConfigError, UnknownStepError } from './errors';
import { sampleTime, type SampleTiming, type Trace } from './trace';

/**
 * Which samples of a run an indicator summarises.
 * - `context`: the whole trace.
 * - `step`: one recipe step, optionally trimmed: samples earlier than `trimStartSeconds` after the
 *   step's first sample, or later than `trimEndSeconds` before its last sample, are left out
 *   (e.g. to drop a settling transient).
 * - `segment`: the `index`-th (0-based) of `of` equal parts of the trace by sample count (equal time
 *   for regular timing), for traces without step markers.
 */
export type WindowSpec =
  | { readonly kind: 'context' }
  | { readonly kind: 'segment'; readonly index: number; readonly of: number }
  | {
      readonly kind: 'step';
      readonly step: string;
      readonly trimStartSeconds?: number;
      readonly trimEndSeconds?: number;
    };

/** A window resolved to the half-open sample range `[start, end)`; empty when `start >= end`. */
export interface SampleRange {
  readonly start: number;
  readonly end: number;
}

// Sample times are often computed (start + i / f), so a trim boundary that falls on a sample time must
// not miss it by one ulp; one nanosecond is far below any collection period.
const TIME_TOLERANCE_SECONDS = 1e-9;

/** First index in [lo, hi) whose time is >= t (hi when none). Times are non-decreasing. */
function lowerBound(timing: SampleTiming, lo: number, hi: number, t: number): number {
  if (timing.kind === 'regular') {
    const i = Math.ceil(
      (t - timing.startSeconds) * timing.frequencyHz - TIME_TOLERANCE_SECONDS * timing.frequencyHz,
    );
    return Math.min(hi, Math.max(lo, i));
  }
  const times = timing.timesSeconds;
  let a = lo;
  let b = hi;
  while (a < b) {
    const mid = (a + b) >>> 1;
    if (times[mid] < t - TIME_TOLERANCE_SECONDS) a = mid + 1;
    else b = mid;
  }
  return a;
}

/** One past the last index in [lo, hi) whose time is <= t (lo when none). */
function upperBound(timing: SampleTiming, lo: number, hi: number, t: number): number {
  if (timing.kind === 'regular') {
    const i =
      Math.floor(
        (t - timing.startSeconds) * timing.frequencyHz + TIME_TOLERANCE_SECONDS * timing.frequencyHz,
      ) + 1;
    return Math.min(hi, Math.max(lo, i));
  }
  const times = timing.timesSeconds;
  let a = lo;
  let b = hi;
  while (a < b) {
    const mid = (a + b) >>> 1;
    if (times[mid] <= t + TIME_TOLERANCE_SECONDS) a = mid + 1;
    else b = mid;
  }
  return a;
}

/**
 * Resolves a window on a trace to a sample range. Trims are in seconds relative to the step's first
 * and last sample times.
 *
 * @throws {@link UnknownStepError} when the step is not in the trace.
 * @throws {@link ChartConfigError} when a trim is negative or not finite, or a segment is out of range.
 */
export function resolveWindow(trace: Trace, window: WindowSpec): SampleRange {
  if (window.kind === 'context') return { start: 0, end: trace.length };
  if (window.kind === 'segment') {
    const { index, of } = window;
    if (!(Number.isInteger(of) && of >= 1 && Number.isInteger(index) && index >= 0 && index < of)) {
      throw new ChartConfigError(`segment ${index} of ${of}: need integers 0 <= index < of`);
    }
    return { start: Math.floor((index * trace.length) / of), end: Math.floor(((index + 1) * trace.length) / of) };
  }
  const span = trace.steps.find((s) => s.name === window.step);
  if (!span)
    throw new UnknownStepError(
      window.step,
      trace.steps.map((s) => s.name),
    );
  const trimStart = window.trimStartSeconds ?? 0;
  const trimEnd = window.trimEndSeconds ?? 0;
  if (!(Number.isFinite(trimStart) && trimStart >= 0) || !(Number.isFinite(trimEnd) && trimEnd >= 0)) {
    throw new ChartConfigError(`step trims must be finite and >= 0 seconds (got ${trimStart}, ${trimEnd})`);
  }
  if (trimStart === 0 && trimEnd === 0) return { start: span.start, end: span.end };
  const t0 = sampleTime(trace.timing, span.start);
  const t1 = sampleTime(trace.timing, span.end - 1);
  const start = trimStart === 0 ? span.start : lowerBound(trace.timing, span.start, span.end, t0 + trimStart);
  const end = trimEnd === 0 ? span.end : upperBound(trace.timing, span.start, span.end, t1 - trimEnd);
  return { start, end: Math.max(start, end) };
}
