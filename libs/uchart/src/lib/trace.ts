import { TraceValidationError, type TraceIssue } from './errors';

/** Samples of one SVID. Never copied by this library: statistics read the caller's array in place. */
export type SampleArray = Float64Array | Float32Array;

/**
 * Sample times of a trace, in seconds.
 * - `regular`: sample i is at `startSeconds + i / frequencyHz`.
 * - `explicit`: sample i is at `timesSeconds[i]` (finite, non-decreasing).
 */
export type SampleTiming =
  | { readonly kind: 'regular'; readonly startSeconds: number; readonly frequencyHz: number }
  | { readonly kind: 'explicit'; readonly timesSeconds: Float64Array };

/** A recipe step starts at sample `startIndex` and runs until the next step starts (or the trace ends). */
export interface StepMarker {
  readonly name: string;
  readonly startIndex: number;
}

/** A recipe step resolved to the half-open sample range `[start, end)`. */
export interface StepSpan {
  readonly name: string;
  readonly start: number;
  readonly end: number;
}

/** Raw input of {@link createTrace}. */
export interface TraceInput {
  readonly runId: string;
  readonly timing: SampleTiming;
  /** Samples per SVID; every array has the same length. NaN / ±Infinity mark missing samples. */
  readonly svids: Readonly<Record<string, SampleArray>> | ReadonlyMap<string, SampleArray>;
  /** Optional recipe-step markers, in increasing `startIndex` order, unique names. */
  readonly steps?: readonly StepMarker[];
}

/** A validated T-chart: one process run's trace. The sample arrays are the caller's, not copies. */
export interface Trace {
  readonly runId: string;
  /** Samples per SVID (all arrays have this length). */
  readonly length: number;
  readonly timing: SampleTiming;
  readonly svids: ReadonlyMap<string, SampleArray>;
  readonly steps: readonly StepSpan[];
}

function isSampleArray(v: unknown): v is SampleArray {
  return v instanceof Float64Array || v instanceof Float32Array;
}

/**
 * Validates a trace and returns it as a {@link Trace}. The sample arrays are referenced, not copied;
 * sample values are not scanned (NaN/Inf samples are legal and count as missing in the statistics).
 * Explicit sample times are scanned once (O(n)).
 *
 * @throws {@link TraceValidationError} listing every problem: empty run id, no SVIDs, a non-typed-array
 *   SVID, SVID arrays of different lengths, explicit times of another length, non-finite or decreasing
 *   times, a non-positive or non-finite frequency / non-finite start, and step markers that are out of
 *   range, not increasing, unnamed or duplicated.
 */
export function createTrace(input: TraceInput): Trace {
  const issues: TraceIssue[] = [];
  if (typeof input.runId !== 'string' || input.runId.length === 0) {
    issues.push({ code: 'bad-run-id', path: 'runId', message: 'must be a non-empty string' });
  }

  const entries: [string, unknown][] =
    input.svids instanceof Map ? [...input.svids.entries()] : Object.entries(input.svids ?? {});
  const svids = new Map<string, SampleArray>();
  let length = -1;
  if (entries.length === 0)
    issues.push({ code: 'no-svids', path: 'svids', message: 'a trace needs at least one SVID' });
  for (const [name, arr] of entries) {
    if (!isSampleArray(arr)) {
      issues.push({
        code: 'not-typed-array',
        path: `svids.${name}`,
        message: 'must be a Float64Array or Float32Array',
      });
      continue;
    }
    if (length === -1) length = arr.length;
    else if (arr.length !== length) {
      issues.push({
        code: 'length-mismatch',
        path: `svids.${name}`,
        message: `has ${arr.length} samples, expected ${length} (as the first SVID)`,
      });
    }
    svids.set(name, arr);
  }
  if (length === -1) length = 0;

  const timing = input.timing;
  if (timing?.kind === 'regular') {
    if (!Number.isFinite(timing.startSeconds)) {
      issues.push({ code: 'non-finite-time', path: 'timing.startSeconds', message: 'must be finite' });
    }
    if (!(Number.isFinite(timing.frequencyHz) && timing.frequencyHz > 0)) {
      issues.push({ code: 'bad-timing', path: 'timing.frequencyHz', message: 'must be a finite number > 0' });
    }
  } else if (timing?.kind === 'explicit') {
    const t = timing.timesSeconds;
    if (!(t instanceof Float64Array)) {
      issues.push({ code: 'bad-timing', path: 'timing.timesSeconds', message: 'must be a Float64Array' });
    } else {
      if (t.length !== length) {
        issues.push({
          code: 'length-mismatch',
          path: 'timing.timesSeconds',
          message: `has ${t.length} times for ${length} samples`,
        });
      }
      let firstBad = -1;
      let firstBack = -1;
      for (let i = 0; i < t.length; i++) {
        const v = t[i];
        if (!(v - v === 0)) {
          if (firstBad < 0) firstBad = i;
        } else if (i > 0 && v < t[i - 1]) {
          if (firstBack < 0) firstBack = i;
        }
      }
      if (firstBad >= 0) {
        issues.push({
          code: 'non-finite-time',
          path: `timing.timesSeconds[${firstBad}]`,
          message: 'is not finite',
        });
      }
      if (firstBack >= 0) {
        issues.push({
          code: 'time-not-monotonic',
          path: `timing.timesSeconds[${firstBack}]`,
          message: 'is earlier than the previous sample',
        });
      }
    }
  } else {
    issues.push({ code: 'bad-timing', path: 'timing.kind', message: 'must be "regular" or "explicit"' });
  }

  const steps: StepSpan[] = [];
  const markers = input.steps ?? [];
  const names = new Set<string>();
  for (let i = 0; i < markers.length; i++) {
    const m = markers[i];
    const path = `steps[${i}]`;
    if (typeof m.name !== 'string' || m.name.length === 0) {
      issues.push({ code: 'bad-step', path: `${path}.name`, message: 'must be a non-empty string' });
    } else if (names.has(m.name)) {
      issues.push({ code: 'bad-step', path: `${path}.name`, message: `duplicate step "${m.name}"` });
    }
    names.add(m.name);
    if (!Number.isInteger(m.startIndex) || m.startIndex < 0 || m.startIndex >= length) {
      issues.push({
        code: 'bad-step',
        path: `${path}.startIndex`,
        message: `must be an integer in [0, ${length}), got ${m.startIndex}`,
      });
    } else if (i > 0 && !(m.startIndex > markers[i - 1].startIndex)) {
      issues.push({
        code: 'bad-step',
        path: `${path}.startIndex`,
        message: 'must be greater than the previous step start',
      });
    }
  }
  if (issues.length > 0) throw new TraceValidationError(issues);

  for (let i = 0; i < markers.length; i++) {
    steps.push({
      name: markers[i].name,
      start: markers[i].startIndex,
      end: i + 1 < markers.length ? markers[i + 1].startIndex : length,
    });
  }
  return { runId: input.runId, length, timing, svids, steps };
}

/** Time of sample `index` in seconds (no bounds check). */
export function sampleTime(timing: SampleTiming, index: number): number {
  return timing.kind === 'regular'
    ? timing.startSeconds + index / timing.frequencyHz
    : timing.timesSeconds[index];
}
