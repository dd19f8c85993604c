import {
  aggregateObservations,
  InvalidRecordError,
  validatePositiveInt,
  type ChamberMetadata,
  type ChamberRef,
  type RunObservation,
} from '@defender/contracts';
import { storedDate, storedFinite, storedInt, storedText, type RowGetter } from '../codec/rows';

/**
 * `recomputeWeights` as both stores run it: they differ in how they read the observations (SQLite
 * filters the window in SQL, Cassandra takes each partition's newest rows and filters here) and in
 * how they write the metadata rows, not in what the rows mean.
 */

const DAY = 86_400;

/** The window (default a day) and runs per chamber (default 50) of a recompute, validated. */
export function recomputeOptions(options?: { readonly windowSeconds?: number; readonly maxRunsPerChamber?: number }): { windowSeconds: number; maxRuns: number } {
  const windowSeconds = options?.windowSeconds ?? DAY;
  const maxRuns = options?.maxRunsPerChamber ?? 50;
  validatePositiveInt('maxRunsPerChamber', maxRuns);
  if (!(windowSeconds > 0)) throw new InvalidRecordError('windowSeconds', [{ path: 'windowSeconds', message: 'must be > 0' }]);
  return { windowSeconds, maxRuns };
}

/** The chamber of a `run_observations` row. */
export function observedChamberOf(get: RowGetter): ChamberRef {
  return { toolId: storedText(get('tool_id'), {}, 'tool_id'), chamberId: storedText(get('chamber_id'), {}, 'chamber_id') };
}

/**
 * Observations grouped per chamber, newest first as the rows come: a run's first (newest) row wins,
 * and with `maxRuns` a chamber keeps at most that many runs.
 */
export class ObservationsByChamber {
  private readonly byChamber = new Map<string, { chamber: ChamberRef; runs: Map<string, RunObservation> }>();

  constructor(private readonly maxRuns?: number) {}

  /**
   * Adds the `run_observations` row of `chamber`, unless its run is known or the chamber is full
   * (`observedAt`: the row's, when the caller read it already).
   */
  add(chamber: ChamberRef, get: RowGetter, observedAt?: Date): void {
    const key = `${chamber.toolId}:${chamber.chamberId}`;
    const entry = this.byChamber.get(key) ?? { chamber, runs: new Map<string, RunObservation>() };
    this.byChamber.set(key, entry);
    const ctx = { chamber, table: 'run_observations' };
    const runId = storedText(get('run_id'), ctx, 'run_id');
    if ((this.maxRuns !== undefined && entry.runs.size >= this.maxRuns) || entry.runs.has(runId)) return;
    entry.runs.set(runId, {
      ...chamber,
      runId,
      observedAt: observedAt ?? ObservationsByChamber.observedAt(chamber, get),
      svidCount: storedInt(get('svid_count'), { ...ctx, runId }, 'svid_count', 1),
      collectionFreqHz: storedFinite(get('collection_freq_hz'), { ...ctx, runId }, 'collection_freq_hz'),
      contextDurationSeconds: storedFinite(get('context_duration_seconds'), { ...ctx, runId }, 'context_duration_seconds'),
    });
  }

  /** The observed date of a row (for the caller's window check before {@link add}). */
  static observedAt(chamber: ChamberRef, get: RowGetter): Date {
    return storedDate(get('observed_at'), { chamber, table: 'run_observations' }, 'observed_at');
  }

  get size(): number {
    return this.byChamber.size;
  }

  /** Each chamber with the metadata its observations give (`source: 'observed'`, `lastUpdated: now`). */
  *metadata(now: Date): Generator<{ key: string; metadata: ChamberMetadata }> {
    for (const [key, { chamber, runs }] of this.byChamber) {
      yield { key, metadata: { ...chamber, ...aggregateObservations([...runs.values()]), lastUpdated: now, source: 'observed' } };
    }
  }
}

/** Whether `next` says what the stored `old` row says (then it is counted as unchanged). */
export function sameObservedMetadata(old: ChamberMetadata | undefined, next: ChamberMetadata): boolean {
  return (
    old !== undefined &&
    old.source === 'observed' &&
    old.svidCount === next.svidCount &&
    old.collectionFreqHz === next.collectionFreqHz &&
    old.contextDurationSeconds === next.contextDurationSeconds &&
    old.weight === next.weight
  );
}
