import { InvalidRecordError } from './errors';
import type { ChamberMetadata, RunObservation, TraceRecord } from './records';

/**
 * A chamber's weight: samples per run, `svidCount x collectionFreqHz x contextDurationSeconds`,
 * rounded to an integer (at least 1).
 * @throws InvalidRecordError when a factor is not positive and finite or the product is not a safe integer.
 */
export function computeWeight(svidCount: number, collectionFreqHz: number, contextDurationSeconds: number): number {
  const factors = { svidCount, collectionFreqHz, contextDurationSeconds };
  const bad = Object.entries(factors).filter(([, v]) => !(Number.isFinite(v) && v > 0));
  if (bad.length > 0) {
    throw new InvalidRecordError(
      'weight factors',
      bad.map(([k]) => ({ path: k, message: 'must be a finite number > 0' })),
    );
  }
  const w = Math.max(1, Math.round(svidCount * collectionFreqHz * contextDurationSeconds));
  if (!Number.isSafeInteger(w)) throw new InvalidRecordError('weight factors', [{ path: 'weight', message: 'product exceeds 2^53' }]);
  return w;
}

function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

/** Chamber figures aggregated from observed runs (see {@link aggregateObservations}). */
export type AggregatedWeight = Pick<ChamberMetadata, 'svidCount' | 'collectionFreqHz' | 'contextDurationSeconds' | 'weight' | 'observedRuns'>;

/**
 * Aggregates a chamber's observed runs: the median of each factor (robust against an aborted or
 * unusually long run), SVID count rounded to an integer, duration rounded to whole seconds (>= 1),
 * and the weight as their product.
 * @throws InvalidRecordError for an empty list.
 */
export function aggregateObservations(observations: readonly Pick<RunObservation, 'svidCount' | 'collectionFreqHz' | 'contextDurationSeconds'>[]): AggregatedWeight {
  if (observations.length === 0) throw new InvalidRecordError('observations', [{ path: '', message: 'need at least one run' }]);
  const svidCount = Math.max(1, Math.round(median(observations.map((o) => o.svidCount))));
  const collectionFreqHz = median(observations.map((o) => o.collectionFreqHz));
  const contextDurationSeconds = Math.max(1, Math.round(median(observations.map((o) => o.contextDurationSeconds))));
  return {
    svidCount,
    collectionFreqHz,
    contextDurationSeconds,
    weight: computeWeight(svidCount, collectionFreqHz, contextDurationSeconds),
    observedRuns: observations.length,
  };
}

/**
 * What a trace shows about its chamber: SVID count, and frequency and duration such that
 * frequency x duration = samples per SVID (regular timing: the given frequency; explicit times:
 * (n - 1) intervals over the time span). A trace of fewer than 2 explicit samples, or a zero time
 * span, counts as 1 Hz.
 */
export function observeTrace(trace: TraceRecord, observedAt: Date): RunObservation {
  const first = trace.svids.values().next().value;
  const n = first ? first.length : 0;
  let freq: number;
  if (trace.timing.kind === 'regular') freq = trace.timing.frequencyHz;
  else {
    const t = trace.timing.timesSeconds;
    const span = t.length >= 2 ? (t[t.length - 1] as number) - (t[0] as number) : 0;
    freq = span > 0 && Number.isFinite(span) ? (t.length - 1) / span : 1;
  }
  return {
    toolId: trace.toolId,
    chamberId: trace.chamberId,
    runId: trace.runId,
    observedAt,
    svidCount: trace.svids.size,
    collectionFreqHz: freq,
    contextDurationSeconds: Math.max(n, 1) / freq,
  };
}
