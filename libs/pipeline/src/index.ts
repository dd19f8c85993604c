export type {
  DeadLetter,
  EvaluationInput,
  EventSink,
  HistoryProvider,
  MoreHistoryNeeded,
  NotificationMessage,
  NotificationSource,
  PipelineObserver,
  PipelineStore,
  RunEvaluation,
  RunEvaluator,
} from './lib/ports';
export { needsMoreHistory } from './lib/ports';
export { ByteBudget, Semaphore } from './lib/semaphore';
export { boundedSource } from './lib/bounded-source';
export { ChamberWorker, declaredTraceBytes } from './lib/chamber-worker';
export { ChamberSupervisor, epochAfterFence, type AppliedMap, type SupervisorDeps, type SupervisorEvents, type WorkerState } from './lib/chamber-supervisor';
export type { StreamStatus, WorkerDeps, WorkerOptions } from './lib/chamber-worker';
export { FeedWatch, type FeedWatchDeps, type FeedWatchObserver, type WatchedFeed } from './lib/feed-watch';
export { StreamCheck, type StreamCheckDeps, type StreamCheckObserver } from './lib/stream-check';
export { UnknownChamberDeadLetters, type UnknownChamberDeps, type UnknownChamberObserver } from './lib/unknown-chamber';
export { eventMsgId, markAfter, publishedPrefix, runEvents, type RunEventContext } from './lib/outbox';
export {
  CHART_KEYS,
  EvaluatorConfigError,
  InvalidStrategyDocumentError,
  InvalidTraceError,
  MONITOR_CHART_TYPE,
  MONITOR_COUNT_KEYS,
  MONITOR_PART_CHART_TYPE,
  PENDING_BASELINE_CHART_TYPE,
  POINT_FLAGS,
  createRunEvaluator,
  decodeHistory,
  decodeLimits,
  decodePoint,
  decodeRun,
  describeFlags,
  encodeLimits,
  encodePoint,
  evaluateWithHistory,
  holdIdOf,
  isBaselineData,
  legacyModelLimitSets,
  monitorModelOf,
  monitorModelSummary,
  pendingBaselineOf,
  rebaselineRecords,
  ruleFlag,
  storeIndicatorKey,
  withoutBaselineData,
  type MonitorModelSummary,
} from './lib/evaluator';
export type {
  DecodedLimits,
  PendingBaseline,
  PointFlag,
  RebaselineRequest,
  RunEvaluatorOptions,
} from './lib/evaluator';
export { DefenderProcessing, NATS_READS_IN_FLIGHT, type StreamHealth } from './lib/runtime/defender-processing';
export type {
  DefenderProcessingDeps,
  ProcessingCache,
  ProcessingCacheOptions,
  ProcessingClock,
  ProcessingEvents,
  ProcessingIdentity,
  ProcessingLoad,
  ProcessingNats,
  ProcessingSettings,
  RunEvents,
  TimeStoreCall,
} from './lib/runtime/ports';
