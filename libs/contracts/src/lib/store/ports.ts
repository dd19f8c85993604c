import type { ChamberRef, RunRef } from './chamber';
import type { ChamberEventRecord } from './chamber-event';
import type { ChamberMemoryRecord } from './chamber-memory';
import type { MonitorModelRecord, MonitorModelVersion } from './monitor-model';
import type { MonitorStateRecord } from './monitor-state';
import type {
  AlarmRecord,
  ChamberMetadata,
  BindStreamInput,
  ChamberState,
  CommitRunInput,
  CommitRunResult,
  HoldRecord,
  LimitSetRecord,
  OutboxEntry,
  PutVersionResult,
  RunObservation,
  RunPointSet,
  StrategyRecord,
  TraceRecord,
  TraceWriteSummary,
  WeightRecomputeSummary,
} from './records';

/*
 * Every method may reject with:
 * - StoreUnavailableError (retryable: store unreachable, timeout, busy) — never treat as success;
 * - StoreClosedError after close();
 * - InvalidRecordError for invalid input (nothing written);
 * - CorruptRecordError (and its subclasses) when stored data cannot be decoded.
 * Further errors are listed per method.
 */

/** Chamber weights (`chamber_metadata`) and the run observations they are recomputed from. */
export interface ChamberMetadataRepository {
  /** Inserts or replaces a chamber's row (e.g. an initial estimate from equipment configuration). */
  upsert(metadata: ChamberMetadata): Promise<void>;
  get(chamber: ChamberRef): Promise<ChamberMetadata | undefined>;
  /** Every chamber's row (the assignment controller's query), in no particular order. */
  list(): Promise<ChamberMetadata[]>;
  /** Records what a completed run showed (idempotent by run). Kept for a bounded time. */
  recordObservation(observation: RunObservation): Promise<void>;
  /**
   * Recomputes the weight of every chamber with observations in `(now - windowSeconds, now]`
   * (default window 24 h, at most `maxRunsPerChamber` newest runs each, default 50): the median of
   * each factor, see `aggregateObservations`. Chambers without recent observations keep their row.
   * Scheduling is the caller's (`WEIGHT_UPDATE_INTERVAL_SECONDS`).
   */
  recomputeWeights(
    now: Date,
    options?: { readonly windowSeconds?: number; readonly maxRunsPerChamber?: number },
  ): Promise<WeightRecomputeSummary>;
}

/** Run traces (T-charts) as checksummed binary chunks keyed by (tool, chamber, run). */
export interface TraceRepository {
  /**
   * Stores a run's trace, replacing an earlier write of the same run. Chunks are written first and
   * the manifest last, so a reader never sees a half-written trace as complete.
   */
  write(trace: TraceRecord): Promise<TraceWriteSummary>;
  /**
   * Reads a trace back with its element types, SVID order, timing and steps.
   * @throws TraceNotFoundError when no complete write of the run exists.
   * @throws TornTraceError when a chunk is missing, truncated, fails its checksum or belongs to
   *   another write (never zero-filled).
   */
  read(run: RunRef): Promise<TraceRecord>;
  /** Deletes a run's trace (no-op when absent). */
  delete(run: RunRef): Promise<void>;
}

/** Committed U-chart points (written by `ChamberStateRepository.commitRun`) and versioned limit sets. */
export interface UChartRepository {
  /**
   * The newest committed runs of a chamber, returned oldest first: at most `limit` runs, only those
   * with sequence < `beforeSequence` when given. Only committed runs exist; a fenced owner's points
   * are never visible.
   */
  history(chamber: ChamberRef, options: { readonly limit: number; readonly beforeSequence?: number }): Promise<RunPointSet[]>;
  /** The committed run at `sequence`, if any. */
  run(chamber: ChamberRef, sequence: number): Promise<RunPointSet | undefined>;
  /**
   * Stores a limit-set version (insert-only).
   * @throws VersionConflictError when a different record exists at that version.
   */
  putLimitSet(limits: LimitSetRecord): Promise<PutVersionResult>;
  /** The given version, or the highest version when omitted. */
  limitSet(chamber: ChamberRef, indicatorKey: string, version?: number): Promise<LimitSetRecord | undefined>;
  /** The highest version of every indicator of the chamber, ordered by indicator key. */
  currentLimitSets(chamber: ChamberRef): Promise<LimitSetRecord[]>;
  /** Every version of one indicator, oldest first. */
  limitSetHistory(chamber: ChamberRef, indicatorKey: string): Promise<LimitSetRecord[]>;
}

/**
 * Per-chamber ownership and progress: the fencing point of the whole system. A chamber's state holds
 * the owner epoch and the high-water mark; both change only together with a run's results.
 */
export interface ChamberStateRepository {
  /** Linearizable read of the chamber's state (undefined for a chamber never claimed). */
  get(chamber: ChamberRef): Promise<ChamberState | undefined>;
  /**
   * Takes ownership for `epoch` (raising the stored epoch, which fences every older owner at once)
   * and returns the state to resume from (`highWaterMark`). Creates the state of a new chamber.
   * @throws FencedError when the stored epoch is greater than `epoch`.
   */
  claim(chamber: ChamberRef, epoch: number, ownerId: string, now: Date): Promise<ChamberState>;
  /**
   * Atomically stores the run's points, alarms, hold and outbox events, records its run id as
   * applied, sets the high-water mark to `sequence` and the owner epoch to `epoch` — only if the
   * stored epoch is <= `epoch`, the high-water mark is below `sequence` and the run id was never
   * applied. A replay of the same run at the same sequence returns `already-applied` and writes
   * nothing; the run id applied at another sequence returns `duplicate-run` and only moves the
   * high-water mark (fenced like a commit), whatever the age of the first application.
   * @throws FencedError when the stored epoch is greater than the caller's (nothing written).
   * @throws SequenceConflictError when `sequence` is at or below the high-water mark but the run
   *   stored at `sequence` is another one (or none).
   */
  commitRun(input: CommitRunInput): Promise<CommitRunResult>;
  /**
   * The sequence at which `runId` was applied to the chamber (kept for as long as the chamber's
   * state), or undefined. A hint for skipping work early; `commitRun` decides.
   */
  appliedRun(chamber: ChamberRef, runId: string): Promise<number | undefined>;
  /**
   * Records which notification stream the chamber's mark counts in (see {@link BindStreamInput}),
   * fenced like a commit, only while the stored stream id is still `expectedStreamId` (else the
   * state is returned unchanged: the caller compares its `streamId`). With `rebase`, the stream
   * offset becomes the high-water mark in the same operation, so the mark, the applied run ids and
   * the outbox keep their (store) sequences and a run applied before is still recognised by id.
   * @throws FencedError when the stored epoch is greater than `epoch` (nothing written).
   */
  bindStream(input: BindStreamInput): Promise<ChamberState>;
}

/**
 * A chamber's outbox: the events `commitRun` stored with their runs, and the published-through mark
 * (the run sequence through which every event was acknowledged by the stream). An owner publishes
 * the entries above the mark, in order, with their stored message id and payload, then raises the
 * mark; a new owner does the same on claim, so an event is published again only if its
 * acknowledgement was never recorded (and then with identical bytes and id).
 */
export interface OutboxRepository {
  /** Entries of runs above the published-through mark, in (sequence, index) order, at most `limit`. */
  pending(chamber: ChamberRef, options: { readonly limit: number }): Promise<OutboxEntry[]>;
  /** The published-through mark (0 when nothing was ever marked). */
  publishedThrough(chamber: ChamberRef): Promise<number>;
  /**
   * Raises the published-through mark to `through` (never lowers it) and drops the entries at or
   * below it, fenced like a commit: only while the stored owner epoch is <= `epoch`.
   * @throws FencedError when a newer owner holds the chamber (the mark is left as it is).
   */
  markPublished(chamber: ChamberRef, epoch: number, through: number): Promise<void>;
}

/**
 * Alarms and holds. Alarms are written with their run by `commitRun` and are unique per
 * (chamber, run, rule, indicator); a replay cannot duplicate them.
 */
export interface AlarmRepository {
  /** The newest alarms of a chamber, newest first. */
  list(chamber: ChamberRef, options: { readonly limit: number }): Promise<AlarmRecord[]>;
  /** The alarms of one committed run (by sequence), ordered by rule then indicator. */
  ofRun(chamber: ChamberRef, sequence: number): Promise<AlarmRecord[]>;
  /** The chamber's current hold, if any. */
  hold(chamber: ChamberRef): Promise<HoldRecord | null>;
  /** Releases the hold `holdId`; false when the chamber holds no hold or another one. */
  releaseHold(chamber: ChamberRef, holdId: string): Promise<boolean>;
}

/** Versioned defense-strategy documents. */
export interface StrategyRepository {
  /**
   * Stores a strategy version (insert-only).
   * @throws VersionConflictError when a different record exists at that version.
   */
  put(strategy: StrategyRecord): Promise<PutVersionResult>;
  /** The given version, or the highest version when omitted. */
  get(scope: string, version?: number): Promise<StrategyRecord | undefined>;
  /** Stored versions of a scope, ascending. */
  versions(scope: string): Promise<number[]>;
  /**
   * The newest version of each of `scopes` that has one, in the order of `scopes` (scopes without a
   * stored strategy are left out), read in one store round trip: with a run's lookup order
   * (`strategyScopesForRun`) the first record is the strategy that judges the run.
   * @throws InvalidRecordError unless `scopes` holds 1 to `RECORD_LIMITS.strategyScopes` distinct
   *   strategy scopes (`validateStrategyScopes`).
   */
  latest(scopes: readonly string[]): Promise<StrategyRecord[]>;
}

/**
 * The chamber monitor's state per chamber and recipe (see {@link MonitorStateRecord}): written only by
 * `ChamberStateRepository.commitRun` (`CommitRunInput.monitorState`), so it moves with the high-water
 * mark and a fenced owner can never write it; read here by the owner, the dashboard and defenderctl.
 */
export interface MonitorStateRepository {
  /** The recipe's state as the newest run of the recipe that carried one left it, or undefined. */
  get(chamber: ChamberRef, recipe: string): Promise<MonitorStateRecord | undefined>;
  /** Every recipe's state of the chamber, ordered by recipe. */
  list(chamber: ChamberRef): Promise<MonitorStateRecord[]>;
}

/**
 * The chamber monitor's fitted models per chamber and recipe, one record per version (see
 * {@link MonitorModelRecord}): written only by `ChamberStateRepository.commitRun`
 * (`CommitRunInput.monitorModel`) with the run that fitted it, so a fenced owner can never write one;
 * read here by the owner (the version the recipe's monitor state names), the dashboard and defenderctl.
 */
export interface MonitorModelRepository {
  /** The recipe's model of `version`, or its newest version when omitted; undefined when none is stored. */
  get(chamber: ChamberRef, recipe: string, version?: number): Promise<MonitorModelRecord | undefined>;
  /** Every stored model version of the chamber (without the models), ordered by recipe then version. */
  versions(chamber: ChamberRef): Promise<MonitorModelVersion[]>;
}

/**
 * A chamber's memory of its own runs (see {@link ChamberMemoryRecord}): written only by
 * `ChamberStateRepository.commitRun` (`CommitRunInput.chamberMemory`), so it moves with the high-water
 * mark and a fenced owner can never write it; read here by the owner.
 */
export interface ChamberMemoryRepository {
  /** The memory as the newest run that carried one left it, or undefined (none stored yet). */
  get(chamber: ChamberRef): Promise<ChamberMemoryRecord | undefined>;
}

/**
 * A chamber's equipment events (see {@link ChamberEventRecord}): written only by
 * `ChamberStateRepository.commitRun` (`CommitRunInput.event`) at the event's stream sequence, fenced
 * like a run; read here by the dashboard (markers on the charts) and defenderctl.
 */
export interface ChamberEventRepository {
  /** The chamber's newest events, newest first (`limit` 1-1000). */
  list(chamber: ChamberRef, options: { readonly limit: number }): Promise<ChamberEventRecord[]>;
}

/** Everything Defender persists, behind one object (an adapter: Cassandra or SQLite). */
export interface DefenderStore {
  /** `cassandra` or `sqlite`. */
  readonly kind: string;
  readonly chamberMetadata: ChamberMetadataRepository;
  readonly traces: TraceRepository;
  readonly uchart: UChartRepository;
  readonly chamberState: ChamberStateRepository;
  readonly alarms: AlarmRepository;
  readonly outbox: OutboxRepository;
  readonly strategies: StrategyRepository;
  readonly monitorState: MonitorStateRepository;
  readonly monitorModels: MonitorModelRepository;
  readonly chamberMemory: ChamberMemoryRepository;
  readonly chamberEvents: ChamberEventRepository;
  /** Releases connections / file handles; later calls reject with StoreClosedError. Idempotent. */
  close(): Promise<void>;
}
