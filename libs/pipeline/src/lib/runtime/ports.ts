import type { LoadReport, StrategyScopeInfo, TraceRecord, UChartPoint } from '@defender/contracts';
import type { SupervisorEvents } from '../chamber-supervisor';
import type { FeedWatchObserver, WatchedFeed } from '../feed-watch';
import type { EventSink, HistoryProvider, NotificationSource, PipelineObserver, PipelineStore, RunEvaluator } from '../ports';
import type { StreamCheckObserver } from '../stream-check';
import type { UnknownChamberObserver } from '../unknown-chamber';

/** NATS as the defender's processing uses it (libs/nats-kv over the app's connection). */
export interface ProcessingNats {
  /** Creates every stream that does not exist, with the configured settings. */
  ensureStreams(): Promise<void>;
  /** Opens the notification stream's reader; throws when NATS does not answer. */
  openReader(): Promise<NotificationSource & { streamId(): Promise<string> }>;
  /** Starts the headers-only wake-up feed of the notification stream (libs/nats-kv `watchNotifications`). */
  watchNotifications(
    onNotice: (subject: string, sequence: number) => void,
    opts: { readonly onError: (err: Error) => void; readonly onEnd: () => void },
  ): Promise<WatchedFeed>;
  /** Publishes alarms, holds and dead letters, once per message id. */
  readonly sink: EventSink;
  /** Whether an error of the reader's `streamId` means the stream does not exist. */
  isStreamMissing(err: unknown): boolean;
}

/** The defender's U-chart history cache (libs/store `UChartHistoryCache`), with its statistics `S`. */
export interface ProcessingCache<S> extends HistoryProvider {
  stats(): S;
  close(): void;
}

/** What the cache is built from. */
export interface ProcessingCacheOptions {
  readonly source: PipelineStore['uchart'];
  /** Points a cached run does not keep (read back by a baseline fit alone, which reads the full history). */
  readonly leaveOut: (point: UChartPoint) => boolean;
  /** Runs kept per chamber: as many as the product's strategies read in a chamber's steady state. */
  readonly runsPerChamber: number;
}

/** Who this defender is in the cluster (written by membership). */
export interface ProcessingIdentity {
  defenderId(): string | undefined;
  /** Generation of our stable-ID claim (the low bits of every owner epoch). */
  claimGeneration(): number;
  /** Whether `chamber` is in the applied map (owned by some defender). */
  inMap(chamber: string): boolean;
  /** Whether this defender dead-letters the runs of chambers no defender owns (the map's lowest). */
  handlesUnknownChambers(): boolean;
}

/** The processing settings (the defender's configuration). */
export interface ProcessingSettings {
  readonly streamName: string;
  /** Runs processed at once across chambers. */
  readonly maxConcurrentMessages: number;
  /** Runs at once that read a chamber's whole history. */
  readonly maxConcurrentFits: number;
  /** Bound on the trace bytes held by runs in flight. */
  readonly traceMemoryBytes: number;
  /** How often the notification stream's identity is checked, ms (the heartbeat interval). */
  readonly streamCheckMs: number;
  readonly processTimeoutMs: number;
  readonly maxAttempts: number;
  readonly idlePollMs: number;
  readonly maxTracePoints: number;
}

/** Clocks and timers of the processing. */
export interface ProcessingClock {
  readonly now: () => Date;
  /** Monotonic, ms. */
  readonly monotonic: () => number;
  /** Resolves after `ms`, or at once when `signal` aborts. */
  readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Uniform [0, 1) for the backoffs' jitter. */
  readonly random: () => number;
  /** Calls `fn` every `ms` (not keeping the process alive) until the returned function is called. */
  readonly every: (ms: number, fn: () => void) => () => void;
  /** Runs `fn` once after `ms` (not keeping the process alive). */
  readonly schedule: (fn: () => void, ms: number) => void;
}

/**
 * What the defender measures for the controller's load model (ADR 0008; apps/defender's
 * LoadReporter): run rates per chamber, and the CPU spent against the runs and samples evaluated.
 */
export interface ProcessingLoad {
  /** A run's trace was evaluated: its samples. */
  evaluated(samples: number): void;
  /** A run of `chamber` was applied. */
  applied(chamber: string): void;
  /** Chambers no longer owned: their rates are the next owner's to measure. */
  release(chambers: readonly string[]): void;
  /** Closes the measurement interval: the heartbeat's load report. */
  report(): LoadReport;
}

/** Wraps a store call to time it as a read or a write (the seeds' store histograms). */
export type TimeStoreCall = <A extends unknown[], R>(kind: 'read' | 'write', fn: (...a: A) => Promise<R>) => (...a: A) => Promise<R>;

type RunOutcome = 'applied' | 'already-applied' | 'duplicate-run';

/** What the chamber workers do, as the processing reports it: the pipeline's events with the processing's counts. */
export interface RunEvents<S> extends Omit<PipelineObserver, 'received' | 'processed' | 'traceSamples' | 'strategyFound' | 'streamMismatch' | 'streamRebased'> {
  /** A run was taken up: the runs in flight now. */
  received(inflight: number): void;
  /** A run is done: the runs in flight now and the cache's statistics (once it is open). */
  processed(chamber: string, sequence: number, ms: number, outcome: RunOutcome, inflight: number, cache: S | undefined): void;
  /** A run's strategy was looked up; `warnDeprecated` the first time a chamber's came from the deprecated key. */
  strategyFound(chamber: string, scope: StrategyScopeInfo | undefined, warnDeprecated: boolean): void;
  /** The chamber is paused on a recreated stream; `paused` chambers are now. */
  streamMismatch(chamber: string, info: Parameters<Required<PipelineObserver>['streamMismatch']>[1], paused: number): void;
  /** The chamber was re-based onto the recreated stream; `paused` chambers are left. */
  streamRebased(chamber: string, info: Parameters<Required<PipelineObserver>['streamRebased']>[1], paused: number): void;
  /** A paused chamber moved away: it no longer counts as paused here; `paused` are left. */
  mismatchForgotten(chamber: string, paused: number): void;
}

/** What the processing tells its app (logs, metrics). */
export interface ProcessingEvents<S> {
  readonly runs: RunEvents<S>;
  readonly streamCheck: StreamCheckObserver;
  readonly feed: FeedWatchObserver & {
    /** The feed reported an error (it is re-watched when it ends). */
    failed(err: Error): void;
    /** The feed could not be stopped on drain. */
    stopFailed(err: unknown): void;
  };
  readonly supervisor: Omit<SupervisorEvents, 'forgotten'>;
  readonly unknownChambers: UnknownChamberObserver;
  /** A setup step failed: everything is tried again after `delayMs`. */
  setupRetrying(attempt: number, delayMs: number, err: unknown): void;
  /** Streams, reader, cache and feed are ready. */
  ready(maxConcurrent: number): void;
  /** The setup failed for good (not retried). */
  setupFailed(err: unknown): void;
  /** The drain's time ran out: in-flight runs are left to the next owner (fenced). */
  drainTimedOut(timeoutMs: number): void;
}

/** What a {@link DefenderProcessing} needs. */
export interface DefenderProcessingDeps<S> {
  readonly settings: ProcessingSettings;
  /** NATS, once connected (waits for the app's connection). */
  readonly nats: () => Promise<ProcessingNats>;
  /** The store, once open (waits for the app's store). */
  readonly store: () => Promise<PipelineStore>;
  readonly createCache: (opts: ProcessingCacheOptions) => ProcessingCache<S>;
  readonly evaluator: RunEvaluator;
  readonly identity: ProcessingIdentity;
  readonly events: ProcessingEvents<S>;
  readonly clock: ProcessingClock;
  /** The load model's measurements (ADR 0008). */
  readonly load: ProcessingLoad;
  /** Times the store's reads and writes (none: untimed). */
  readonly timeStoreCall?: TimeStoreCall;
  /** Gives a read trace's memory back once the run is done with it (libs/store `releaseTraceMemory`). */
  readonly releaseTrace?: (trace: TraceRecord) => void;
}
