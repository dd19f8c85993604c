import type { ChamberRef, RunRef } from './chamber';
import type { ChamberMemory } from './chamber-memory';
import type { ChamberEventInput } from './chamber-event';
import type { MonitorModelInput } from './monitor-model';
import type { MonitorState } from './monitor-state';

/** A JSON value (what strategy documents, chart parameters and alarm details may hold). */
export type JsonValue = null | boolean | number | string | readonly JsonValue[] | { readonly [key: string]: JsonValue };
/** A JSON object. */
export type JsonObject = { readonly [key: string]: JsonValue };

// ---------------------------------------------------------------------------------------------
// Chamber metadata and weights
// ---------------------------------------------------------------------------------------------

/**
 * A row of `chamber_metadata` (seed schema: tool_id, chamber_id, svid_count, collection_freq_hz,
 * context_duration_seconds, weight, last_updated). The weight is the samples of one run,
 * `svidCount x collectionFreqHz x contextDurationSeconds` (30,000 to 3,600,000 in a typical fab).
 */
export interface ChamberMetadata extends ChamberRef {
  /** SVIDs collected per run, integer >= 1. */
  readonly svidCount: number;
  /** Samples per second per SVID, > 0 (a double: observed rates such as 2.5 Hz occur). */
  readonly collectionFreqHz: number;
  /** Context (run) duration in whole seconds, >= 1. */
  readonly contextDurationSeconds: number;
  /** Samples per run, a positive safe integer; see `computeWeight`. */
  readonly weight: number;
  readonly lastUpdated: Date;
  /** `configured`: an estimate from equipment configuration; `observed`: recomputed from runs. */
  readonly source: 'configured' | 'observed';
  /** Runs the observed figures were aggregated from (0 for configured rows). */
  readonly observedRuns: number;
}

/** What one completed run showed about its chamber's workload (input of weight recomputation). */
export interface RunObservation extends RunRef {
  readonly observedAt: Date;
  /** SVIDs in the run's trace, integer >= 1. */
  readonly svidCount: number;
  /** Samples per second per SVID, > 0. */
  readonly collectionFreqHz: number;
  /** Context duration in seconds, > 0 (fractional allowed). */
  readonly contextDurationSeconds: number;
}

/** Result of `ChamberMetadataRepository.recomputeWeights`. */
export interface WeightRecomputeSummary {
  /** Chambers whose row was (re)written from observations. */
  readonly updated: number;
  /** Chambers with observations whose figures were already current (row rewritten only for `lastUpdated`). */
  readonly unchanged: number;
  /** Chambers with observations in the window. */
  readonly observedChambers: number;
}

// ---------------------------------------------------------------------------------------------
// T-chart traces
// ---------------------------------------------------------------------------------------------

/** Samples of one SVID; NaN / +-Infinity mark missing samples. */
export type SampleArray = Float64Array | Float32Array;

/**
 * Sample times, in seconds: `regular` (sample i at `startSeconds + i / frequencyHz`) or `explicit`
 * (one time per sample, stored like an SVID).
 */
export type TraceTiming =
  | { readonly kind: 'regular'; readonly startSeconds: number; readonly frequencyHz: number }
  | { readonly kind: 'explicit'; readonly timesSeconds: Float64Array };

/** A recipe step starting at sample `startIndex`. */
export interface TraceStep {
  readonly name: string;
  readonly startIndex: number;
}

/**
 * One run's trace (T-chart): per SVID a typed array, all of the same length. Stored as binary chunks,
 * never a row per sample; read back with the same element type and SVID order.
 */
export interface TraceRecord extends RunRef {
  readonly timing: TraceTiming;
  readonly svids: ReadonlyMap<string, SampleArray>;
  readonly steps: readonly TraceStep[];
  readonly recipe?: string;
}

/** What `TraceRepository.write` stored. */
export interface TraceWriteSummary {
  /** Samples per SVID. */
  readonly length: number;
  readonly svidCount: number;
  /** Chunks written (SVIDs and explicit times). */
  readonly chunks: number;
  /** Sample bytes written. */
  readonly bytes: number;
}

// ---------------------------------------------------------------------------------------------
// U-chart points, limits, chamber state, alarms
// ---------------------------------------------------------------------------------------------

/**
 * One U-chart point: an indicator's value for one run. The store treats `indicatorKey`, `flags` and
 * `chart` as opaque; the U-chart engine and defense rules give them meaning.
 */
export interface UChartPoint {
  /** Identifies the indicator within the chamber (e.g. `recipe|window|svid|statistic`), 1-512 chars. */
  readonly indicatorKey: string;
  /** The charted value; finite. */
  readonly value: number;
  /** Sample size for attribute charts (p, np, u); finite >= 0 when present. */
  readonly size?: number;
  /** Version of the limit set the point was judged against, integer >= 1. */
  readonly limitsVersion?: number;
  /** Rule flags (a bit set owned by the defense rules), unsigned 32-bit integer. */
  readonly flags: number;
  /** Chart state after this point (e.g. `ewma`, `cusumHigh`, `cusumLow`), finite numbers, <= 16 entries. */
  readonly chart?: Readonly<Record<string, number>>;
}

/** The U-chart points of one committed run: what `commitRun` stored, exactly once per run. */
export interface RunPointSet extends ChamberRef {
  /** Stream sequence of the run's notification. */
  readonly sequence: number;
  readonly runId: string;
  /** Owner epoch that committed the run. */
  readonly epoch: number;
  readonly committedAt: Date;
  readonly recipe?: string;
  readonly points: readonly UChartPoint[];
  /**
   * Optional summaries a producer may give (the defender's history cache does, and decodes `points`
   * only when read) so that a consumer can skip a run it does not need without decoding it: the
   * number of points, and the bitwise OR of their flags. When present they equal `points.length`
   * and the OR of `points[i].flags`.
   */
  readonly pointCount?: number;
  readonly flagsUnion?: number;
}

/** Phase I baseline a limit set was computed from. */
export interface LimitBaseline {
  /** Why the limits were (re)computed: `initial`, `maintenance`, `recipe-change`, `manual`, ... */
  readonly reason: string;
  readonly runIds: readonly string[];
  readonly excludedRunIds: readonly string[];
}

/**
 * Frozen control limits of one indicator at one version. Versions are immutable: a re-baseline writes
 * version + 1. `center` is always finite; `sigma`, `lcl` and `ucl` are null where they do not apply
 * (attribute charts, whose limits depend on the sample size).
 */
export interface LimitSetRecord extends ChamberRef {
  readonly indicatorKey: string;
  /** Integer >= 1. */
  readonly version: number;
  /** `individuals`, `ewma`, `cusum`, `p`, `np`, `c`, `u`, ... (1-64 chars). */
  readonly chartType: string;
  readonly center: number;
  readonly sigma: number | null;
  readonly lcl: number | null;
  readonly ucl: number | null;
  /** Chart parameters (nSigma, lambda, L, k, h, sigmaMethod, mrBar, ...). */
  readonly params: JsonObject;
  readonly baseline: LimitBaseline;
  readonly createdAt: Date;
}

/** An alarm raised while processing a run (part of `CommitRunInput`). */
export interface AlarmInput {
  /** Rule that fired (e.g. `nelson-1`, `spec-high`, `escalation:2-of-5`), 1-256 chars. */
  readonly ruleId: string;
  /** Indicator the rule fired on; `*` for chamber-level rules (escalations). 1-512 chars. */
  readonly indicatorKey: string;
  /** `ALARM`, `HOLD_CHAMBER`, ... (1-64 chars). */
  readonly action: string;
  /** The flagged value (finite), or null for rules without one. */
  readonly value: number | null;
  readonly lcl?: number;
  readonly ucl?: number;
  readonly center?: number;
  readonly recipe?: string;
  readonly step?: string;
  readonly svid?: string;
  readonly statistic?: string;
  readonly message: string;
  /** Anything else worth keeping (JSON). */
  readonly details?: JsonObject;
}

/**
 * A stored alarm. Identity (idempotency key): (chamber, run, ruleId, indicatorKey) — the run is the
 * committed sequence, so a replayed notification cannot store a second alarm.
 */
export interface AlarmRecord extends AlarmInput, ChamberRef {
  readonly sequence: number;
  readonly runId: string;
  readonly epoch: number;
  readonly raisedAt: Date;
}

/** A hold placed on a chamber while processing a run (part of `CommitRunInput`). */
export interface HoldInput {
  /** Unique id of this hold (used to release exactly this hold), 1-128 chars. */
  readonly holdId: string;
  readonly ruleId: string;
  readonly reason: string;
}

/** The chamber's current hold. */
export interface HoldRecord extends HoldInput, ChamberRef {
  readonly sequence: number;
  readonly runId: string;
  readonly heldAt: Date;
}

/**
 * Per-chamber processing state: the owner epoch (fencing token of the current owner) and the
 * high-water mark (last applied stream sequence; 0 when no run was applied). The chamber's hold is
 * read through `AlarmRepository.hold`.
 */
export interface ChamberState extends ChamberRef {
  readonly ownerEpoch: number;
  readonly ownerId: string;
  readonly highWaterMark: number;
  readonly updatedAt: Date;
  /**
   * Identity of the notification stream the mark counts in (its creation time, from stream info), as
   * recorded by `ChamberStateRepository.bindStream`; undefined for a chamber no owner bound yet (a new
   * chamber, or state written before migration 3). A stream recreated empty restarts its sequences
   * at 1: a mark is meaningful only against the stream it was recorded with (ADR 0007).
   */
  readonly streamId?: string;
  /**
   * What is added to a sequence of the stream `streamId` names to get the store's sequence (0 until
   * the chamber is re-based onto a recreated stream; then the mark at the re-base). Store sequences
   * (the mark, runs, alarms, outbox) keep growing across streams. Undefined means 0.
   */
  readonly streamOffset?: number;
}

/**
 * Binds a chamber's mark to a notification stream (`ChamberStateRepository.bindStream`): adopts the
 * stream of a mark that has none (`rebase: false`), or re-bases the mark onto a recreated stream
 * (`rebase: true`: `streamOffset := highWaterMark`, so the new stream's sequence 1 is the store's
 * `highWaterMark + 1`).
 */
export interface BindStreamInput {
  readonly chamber: ChamberRef;
  /** Caller's owner epoch (fencing token). */
  readonly epoch: number;
  /** The stream id the caller read from the state (undefined: none bound); a different stored one wins. */
  readonly expectedStreamId: string | undefined;
  /** The identity of the stream as it is now (1-128 chars). */
  readonly streamId: string;
  readonly rebase: boolean;
}

/** One run's results, committed atomically with the high-water mark (see `ChamberStateRepository.commitRun`). */
export interface CommitRunInput {
  readonly chamber: ChamberRef;
  /** Caller's owner epoch (fencing token), safe integer >= 0. */
  readonly epoch: number;
  /** Caller's identity (e.g. `defender-5`), for diagnostics. */
  readonly ownerId: string;
  /** Stream sequence of the run's notification, safe integer >= 1. */
  readonly sequence: number;
  readonly runId: string;
  readonly recipe?: string;
  readonly committedAt: Date;
  /** The run's U-chart points (may be empty); indicator keys unique. */
  readonly points: readonly UChartPoint[];
  /** Alarms raised for this run; (ruleId, indicatorKey) unique. */
  readonly alarms?: readonly AlarmInput[];
  /** Places (or replaces) the chamber's hold. */
  readonly hold?: HoldInput;
  /**
   * What to publish once the run is committed (its alarms and hold), written to the chamber's
   * outbox in the same operation, in this order; published by the owner and marked with
   * `OutboxRepository.markPublished` (see {@link OutboxEntry}).
   */
  readonly events?: readonly OutboxEventInput[];
  /**
   * The chamber monitor's state for `recipe` after this run (required with it), replacing the stored
   * one in the same operation, fenced like the rest of the commit (`MonitorStateRepository`).
   */
  readonly monitorState?: MonitorState;
  /**
   * The model this run fitted for `recipe` (`MonitorModelRepository`), stored in the same operation,
   * fenced like the rest of the commit; `monitorState` is required with it and judges with it (a
   * judging state of the same version).
   */
  readonly monitorModel?: MonitorModelInput;
  /**
   * The chamber's memory after this run (`ChamberMemoryRepository`), replacing the stored one in the
   * same operation, fenced like the rest of the commit.
   */
  readonly chamberMemory?: ChamberMemory;
  /**
   * An equipment event committed at this sequence instead of a run (`ChamberEventRepository`): no
   * points, alarms, hold, monitor state or model; `runId` is its `eventRunId`; the monitor states it
   * changes are written with it.
   */
  readonly event?: ChamberEventInput;
}

/** One publication of a committed run: the exact bytes to publish, so every owner publishes the same. */
export interface OutboxEventInput {
  /** NATS subject, e.g. `defense.alarms.<tool>.<chamber>` (1-256 chars). */
  readonly subject: string;
  /** JetStream message id (deduplication), stable across owners (1-512 chars). */
  readonly msgId: string;
  /** The payload as published (JSON text, at most 1 MiB). */
  readonly payload: string;
}

/** A committed, not yet marked published, event of a chamber's outbox. */
export interface OutboxEntry extends OutboxEventInput, ChamberRef {
  /** Stream sequence of the run that committed it. */
  readonly sequence: number;
  /** Position within the run's events, from 0. */
  readonly index: number;
}

/**
 * `applied`: this call wrote the run. `already-applied`: the same run was committed before at this
 * sequence (a replay); nothing was written. `duplicate-run`: the run id was applied before at another
 * sequence (`appliedSequence`; a notification re-published into the stream, of any age): nothing of
 * the run was written, the high-water mark moved to `sequence` (if below it) so the chamber goes on.
 */
export interface CommitRunResult {
  readonly outcome: 'applied' | 'already-applied' | 'duplicate-run';
  readonly state: ChamberState;
  /** For `duplicate-run`: the sequence the run id was applied at. */
  readonly appliedSequence?: number;
}

// ---------------------------------------------------------------------------------------------
// Defense strategies and versioned writes
// ---------------------------------------------------------------------------------------------

/**
 * A defense strategy: a versioned JSON document (owned by the defense rules) for a scope built by
 * `strategyScope`. Versions are immutable.
 */
export interface StrategyRecord {
  readonly scope: string;
  /** Integer >= 1. */
  readonly version: number;
  readonly document: JsonObject;
  readonly createdAt: Date;
  readonly author: string;
}

/** `created`: this call stored the version; `unchanged`: the identical record was already stored. */
export type PutVersionResult = 'created' | 'unchanged';
