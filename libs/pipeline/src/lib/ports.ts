import type {
  AlarmInput,
  ChamberRef,
  DeadLetter,
  DefenderStore,
  EquipmentEvent,
  HoldInput,
  OutboxEntry,
  RunNotification,
  RunPointSet,
  StrategyScopeInfo,
  TraceRecord,
  UChartPoint,
  LimitSetRecord,
  MonitorModelInput,
  MonitorModelRecord,
  MonitorState,
  ChamberMemory,
} from '@defender/contracts';

/** One stored notification (the stream's view). */
export interface NotificationMessage {
  readonly subject: string;
  readonly sequence: number;
  readonly data: Uint8Array;
  readonly storedAt: Date;
}

/** Reads a chamber's notifications by stream sequence. */
export interface NotificationSource {
  /** First notification on `subject` at or after `fromSequence`, or null when there is none yet. */
  next(subject: string, fromSequence: number): Promise<NotificationMessage | null>;
  /**
   * The identity of the stream as it is now (e.g. its creation time): the answer must be one the
   * server gave after the call began, so it covers every `next` that completed before the call. A
   * stream recreated empty restarts its sequences at 1 and has another identity. Rejects with a
   * retryable error while the stream is missing. Without it, a worker cannot tell a recreated stream
   * and trusts its mark (ADR 0007).
   */
  streamId?(): Promise<string>;
  /**
   * The stream's last sequence (0 when empty). With it, a worker tells a stream whose sequences went
   * on (the same stream, whatever identity a read during a restart reported) from one recreated with
   * sequences restarting below its mark, and re-bases only the latter (ADR 0007).
   */
  lastSequence?(): Promise<number>;
}

/** Where alarms, holds and dead letters go; every publication is deduplicated by `msgId`. */
export interface EventSink {
  /** Resolves once the stream acknowledged the message (stored, or a duplicate within its window). */
  publish(subject: string, payload: string, msgId: string): Promise<void>;
  /**
   * The message id of the newest message stored on `subject`, if any. With it, a new owner skips the
   * outbox entries a previous owner published but could not mark (it died between the
   * acknowledgement and the mark), also past the duplicate window; without it they are published
   * again and only the window drops them.
   */
  lastMsgId?(subject: string): Promise<string | undefined>;
}

/** The parts of the store the pipeline uses. */
export type PipelineStore = Pick<DefenderStore, 'chamberState' | 'uchart' | 'traces' | 'alarms' | 'outbox' | 'strategies' | 'chamberMetadata' | 'monitorState' | 'monitorModels' | 'chamberMemory'>;

/**
 * The chamber's committed U-chart history, through the defender's LRU cache (a miss reads the
 * store); `UChartHistoryCache` from @defender/store.
 */
export interface HistoryProvider {
  /**
   * The newest `limit` runs, oldest first; `highWaterMark` reloads a cache that does not end there.
   * Without `allPoints`, the runs may lack the points only a baseline fit reads
   * (`POINT_FLAGS.BASELINE_DATA`): enough for an evaluation given `historyLimit` below the full history,
   * which asks for the full history (`MoreHistoryNeeded`) before it fits.
   */
  history(chamber: ChamberRef, options: { readonly limit: number; readonly highWaterMark?: number; readonly allPoints?: boolean }): Promise<RunPointSet[]>;
  /** A run just committed by this defender. */
  record(run: RunPointSet): void;
  /** Forget the chamber (it moved away). */
  invalidate(chamber: ChamberRef): void;
}

/** What the evaluator returns for one run. */
export interface RunEvaluation {
  readonly points: UChartPoint[];
  readonly alarms: AlarmInput[];
  readonly hold?: HoldInput;
  /** Limit sets established by this run (Phase I baseline completed); stored before the commit. */
  readonly newLimitSets: LimitSetRecord[];
  /** Readings that produced no point, with why (for logs). */
  readonly skipped: { indicatorKey: string; reason: string }[];
  /**
   * The chamber monitor's state for the run's recipe after this run, to commit with it
   * (`CommitRunInput.monitorState`); absent when the run leaves the stored state as it is.
   */
  readonly monitorState?: MonitorState;
  /**
   * The model this run fitted for its recipe, or an earlier release's model (limit sets) it was judged
   * by, converted: committed with the run (`CommitRunInput.monitorModel`), with `monitorState`.
   */
  readonly monitorModel?: MonitorModelInput;
  /**
   * The chamber's memory after this run (`CommitRunInput.chamberMemory`): present when the run is a
   * judged run (it has points).
   */
  readonly chamberMemory?: ChamberMemory;
}

/**
 * What {@link RunEvaluator.evaluate} answers instead of a {@link RunEvaluation} when the history it
 * was given was read with a limit (`historyLimit`) that it reaches and this run may need older runs:
 * nothing was judged; evaluate the run again with the newest `runs` runs. Not an error of the run: a
 * worker reads more and goes on.
 */
export interface MoreHistoryNeeded {
  readonly kind: 'more-history';
  /** Runs of history to read for this run (`RunEvaluator.fullHistoryRuns`). */
  readonly runs: number;
  /** Why the history read was not enough. */
  readonly reason: string;
}

/** Whether `evaluate` asked for more history instead of judging the run. */
export function needsMoreHistory(answer: RunEvaluation | MoreHistoryNeeded): answer is MoreHistoryNeeded {
  return (answer as { kind?: unknown }).kind === 'more-history';
}

/** Inputs of {@link RunEvaluator.evaluate}. */
export interface EvaluationInput {
  readonly chamber: ChamberRef;
  readonly sequence: number;
  readonly notification: RunNotification;
  readonly trace: TraceRecord;
  /** Committed runs of the chamber, oldest first. */
  readonly history: readonly RunPointSet[];
  /** Current (newest) limit set per indicator. */
  readonly limits: readonly LimitSetRecord[];
  /** The defense strategy document that judges the run, if one is stored (else the default). */
  readonly strategy: unknown;
  /**
   * The scope `strategy` was found under (the winner of the run's lookup order, contracts
   * `strategyScopesForRun`). With it, a document whose own scope disagrees with it is invalid
   * (contracts `strategyScopeConflicts`): the run is not judged. Without it, the document's own scope
   * decides whether it applies (else the default).
   */
  readonly strategyScope?: StrategyScopeInfo;
  /**
   * The time what the run creates is stamped with (limit sets' `createdAt`). A worker passes the run's
   * `completedAt`, so that evaluating the same run again creates the same records.
   */
  readonly now: Date;
  /**
   * The limit `history` was read with (its newest runs): when it holds that many, older runs may
   * exist, and `evaluate` answers {@link MoreHistoryNeeded} when this run needs them. Without it,
   * `history` is all the evaluator may look at.
   */
  readonly historyLimit?: number;
  /**
   * The chamber monitor's stored state for the run's recipe (`MonitorStateRepository.get`). Without
   * it (a chamber monitored before the state was stored) the monitor rebuilds it from `history` once;
   * the state it returns is committed with the run.
   */
  readonly monitorState?: MonitorState;
  /**
   * The recipe's stored model (`MonitorModelRepository.get`): the version `monitorState` judges with,
   * else the newest. Without it the monitor finds a model an earlier release stored in `limits`.
   */
  readonly monitorModel?: MonitorModelRecord;
  /**
   * The chamber's memory as the commit at its high-water mark left it (`ChamberMemoryRepository.get`,
   * written by that very commit; else absent). Without it the escalation rules count the alarmed runs
   * of `history`, and the memory returned starts from them.
   */
  readonly chamberMemory?: ChamberMemory;
}

/** Turns a run into U-chart points, alarms and a hold (U-chart engine + defense rules). */
export interface RunEvaluator {
  /**
   * How many committed runs of history to read for a run judged by `strategy` (a stored document, or
   * undefined for the default), found under `strategyScope` when given (see
   * {@link EvaluationInput.strategyScope}): enough in a chamber's steady state; pass it as
   * {@link EvaluationInput.historyLimit} so that a run that needs more says so. With the chamber's
   * `memory` (as {@link EvaluationInput.chamberMemory}), the escalation rules it covers read none:
   * 0 when nothing else does (read no history).
   */
  historyRuns(strategy: unknown, strategyScope?: StrategyScopeInfo, memory?: ChamberMemory): number;
  /**
   * The most committed runs an evaluation by `strategy` reads (Phase I, the monitor's Phase I
   * extension): what {@link MoreHistoryNeeded.runs} asks for when `historyRuns` was not enough.
   */
  fullHistoryRuns(strategy: unknown, strategyScope?: StrategyScopeInfo): number;
  /**
   * Judges the run. With `historyLimit`, the answer is {@link MoreHistoryNeeded} when `history` holds
   * that many runs and this run needs older ones (evaluate it again with the newest `runs` runs);
   * without it, `history` is all there is and the run is always judged.
   */
  evaluate(input: EvaluationInput & { readonly historyLimit: number }): RunEvaluation | MoreHistoryNeeded;
  evaluate(input: EvaluationInput & { readonly historyLimit?: undefined }): RunEvaluation;
  evaluate(input: EvaluationInput): RunEvaluation | MoreHistoryNeeded;
  /**
   * The recipe's monitor state after an equipment event (committed at `sequence`), by the action the
   * recipe's strategy gives the event's kind; undefined when it stays as it is (or the strategy has no
   * monitor). A pure step.
   * @throws InvalidStrategyDocumentError when the strategy is invalid (never another one instead).
   */
  stateAfterEvent(input: EventStepInput): MonitorState | undefined;
}

/** Inputs of {@link RunEvaluator.stateAfterEvent}. */
export interface EventStepInput {
  readonly chamber: ChamberRef;
  readonly recipe: string;
  /** The event's store sequence. */
  readonly sequence: number;
  readonly event: EquipmentEvent;
  /** The recipe's state before the event. */
  readonly state: MonitorState;
  /** The strategy document that judges the recipe's runs (undefined: the default), and its scope. */
  readonly strategy: unknown;
  readonly strategyScope?: StrategyScopeInfo;
}

/** What the pipeline reports (metrics, logs); all optional. */
export interface PipelineObserver {
  received?(chamber: string, sequence: number): void;
  /** `duplicate-run`: the run id was applied at an earlier sequence (a re-published notification): skipped. */
  processed?(chamber: string, sequence: number, ms: number, outcome: 'applied' | 'already-applied' | 'duplicate-run'): void;
  deadLettered?(chamber: string, sequence: number, reason: string, detail: string): void;
  failedAttempt?(chamber: string, sequence: number, attempt: number, err: unknown): void;
  paused?(chamber: string, what: string, err: unknown): void;
  /** `WorkerDeps.releaseTrace` threw: the trace's memory is left to the garbage collector. */
  releaseFailed?(chamber: string, err: unknown): void;
  fenced?(chamber: string, epoch: number, err: unknown): void;
  /** A mark recorded without a stream identity (before migration 3) adopted the current stream, once. */
  streamAdopted?(chamber: string, info: { readonly streamId: string; readonly highWaterMark: number }): void;
  /**
   * The stream is not the one the chamber's mark was recorded with (recreated: its sequences restarted):
   * the chamber is paused, nothing is committed, until it is re-based (`streamRebased`).
   */
  streamMismatch?(chamber: string, info: { readonly recorded: string; readonly current: string; readonly highWaterMark: number }): void;
  /**
   * The chamber was re-based onto the stream `to`: its sequence 1 is the store's `offset + 1`; every
   * notification it holds is read, those of run ids applied before are skipped (`duplicate-run`).
   */
  streamRebased?(chamber: string, info: { readonly from: string; readonly to: string; readonly offset: number }): void;
  /** An outbox event the stream acknowledged (an alarm or hold; again after a claim if its mark was not written). */
  published?(chamber: string, event: OutboxEntry): void;
  stage?(stage: 'history' | 'trace' | 'evaluate' | 'commit', ms: number): void;
  /** A run's trace was read and checked: its samples (SVIDs x samples), for the load model's cost fit (ADR 0008). */
  traceSamples?(chamber: string, samples: number): void;
  /**
   * A run's strategy was looked up: the scope of its lookup order that holds the strategy judging it
   * (`deprecated`: the legacy `<tool>:<chamber>` key), or `undefined` when no scope holds one (the
   * built-in default). Once per attempt.
   */
  strategyFound?(chamber: string, scope: StrategyScopeInfo | undefined): void;
}

export type { DeadLetter };
