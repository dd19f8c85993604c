import { retryingUntilStopped, sleepUnlessAborted } from '@defender/backoff';
import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { performance } from 'node:perf_hooks';
import type { NatsConnection } from '@nats-io/nats-core';
import { ChamberRef, DefenderStore, LoadReport, parseNotificationSubject, strategyScopeKind } from '@defender/contracts';
import { ensureStreams, lastMessageId, NotificationReader, publishOnce, StreamMissingError, STREAMS, watchNotifications } from '@defender/nats-kv';
import { NatsConnectionService, StoreService } from '@defender/nest-common';
import { STRATEGY_PRESETS } from '@defender/defense-rules';
import { boundedSource, ChamberSupervisor, FeedWatch, PipelineObserver, ByteBudget, isBaselineData, RunEvaluator, Semaphore, StreamCheck, UnknownChamberDeadLetters, WorkerDeps, type WorkerState } from '@defender/pipeline';
import { releaseTraceMemory, UChartHistoryCache } from '@defender/store';
import { DefenderConfig } from '../config';
import { DEFENDER_CONFIG } from '../tokens';
import type { ChamberWork } from '@defender/membership';
import { DefenderMetricsObserver } from '../metrics/defender-metrics-observer';
import { DefenderIdentity } from '../membership/defender-identity';
import { LoadReporter, processCpuMs } from './load-reporter';

export const RUN_EVALUATOR = Symbol('RUN_EVALUATOR');

/**
 * Most NATS reads the chamber workers of one defender have in flight (libs/pipeline bounded-source):
 * enough to keep a busy defender's reads pipelined (a read takes about a millisecond on a local
 * server), few enough that thousands of chambers starting at once queue here, not past NATS's
 * request timeout.
 */
const NATS_READS_IN_FLIGHT = 64;



/**
 * Runs one {@link ChamberWorker} per owned chamber: membership calls `acquire` / `release` as the
 * assignment map changes. One headers-only feed of the notification stream wakes the workers; each
 * reads its chamber by sequence from the store's high-water mark.
 */
@Injectable()
export class ProcessingService implements ChamberWork, OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(ProcessingService.name);
  /** The chamber workers: started, restarted and stopped as the maps say (libs/pipeline). */
  private supervisor: ChamberSupervisor | undefined;
  /** The newest map membership applied, for a supervisor created after it. */
  private lastApplied: { readonly owned: readonly string[]; readonly mapVersion: number } | undefined;
  private readonly semaphore: Semaphore;
  private readonly fitSlots: Semaphore;
  private readonly traceBudget: ByteBudget;
  private cache: UChartHistoryCache | undefined;
  private reader: NotificationReader | undefined;
  /** The wake-up feed, watched again whenever it ends (libs/pipeline). */
  private feedWatch: FeedWatch | undefined;
  private nc: NatsConnection | undefined;
  private ready: Promise<void> | undefined;
  private draining = false;
  /** Aborted when draining starts: the setup's retries stop. */
  private readonly stopping = new AbortController();
  private processedTotalCount = 0;
  /** Run rates and CPU cost measured for the controller's load model (ADR 0008). */
  private readonly loadReporter = new LoadReporter(() => performance.now(), processCpuMs);
  private storeHandle: DefenderStore | undefined;
  /** Chambers paused on a stream mismatch (ADR 0007), for the gauge's total. */
  private readonly mismatched = new Set<string>();
  private unknownChambers: UnknownChamberDeadLetters | undefined;
  /** Chambers whose strategy came from the deprecated `<tool>:<chamber>` key, warned about once. */
  private readonly legacyStrategyWarned = new Set<string>();
  /** The notification stream's identity and presence, checked every heartbeat interval. */
  private streamCheck: StreamCheck | undefined;
  private streamCheckTimer: NodeJS.Timeout | undefined;

  constructor(
    @Inject(DEFENDER_CONFIG) private readonly config: DefenderConfig,
    private readonly nats: NatsConnectionService,
    private readonly store: StoreService,
    @Inject(RUN_EVALUATOR) private readonly evaluator: RunEvaluator,
    private readonly identity: DefenderIdentity,
    private readonly metrics: DefenderMetricsObserver,
  ) {
    store.addObserver(metrics.storeOperationDone);
    this.semaphore = new Semaphore(config.MAX_CONCURRENT_MESSAGES);
    this.fitSlots = new Semaphore(config.MAX_CONCURRENT_FITS);
    this.traceBudget = new ByteBudget(config.TRACE_MEMORY_MB * 1024 * 1024);
  }

  onApplicationBootstrap(): void {
    this.ready = this.prepare();
    this.ready.catch((err: unknown) => this.logger.error({ msg: 'processing could not start', err: (err as Error).message }));
  }

  /** Cache statistics for /api/v1/cache/stats (null until the store is open). */
  cacheStats() {
    return this.cache?.stats() ?? null;
  }

  /**
   * Chambers with a running worker: their high-water marks (store sequences) and the stream the mark
   * counts in (`stream.status` `mismatch`: paused, the stream was recreated; ADR 0007).
   */
  workerStates(): WorkerState[] {
    return this.supervisor?.states() ?? [];
  }

  /** The notification stream as last checked: missing, and the chambers paused on a mismatch. */
  streamHealth(): { stream: string; streamId: string | undefined; missing: boolean; mismatchedChambers: string[] } {
    return { stream: this.config.NATS_STREAM_NAME, streamId: this.streamCheck?.streamId, missing: this.streamCheck?.missing ?? false, mismatchedChambers: [...this.mismatched].sort() };
  }

  /**
   * Every heartbeat interval: is the notification stream still the one we saw (libs/pipeline
   * StreamCheck)? A recreated stream wakes every worker and restarts the feed; a missing one is
   * created again (with the configured settings), so publishers and workers resume.
   */
  private createStreamCheck(nc: NatsConnection, reader: NotificationReader, feedWatch: FeedWatch): StreamCheck {
    const stream = this.config.NATS_STREAM_NAME;
    return new StreamCheck({
      streamId: () => reader.streamId(),
      isMissing: (err) => err instanceof StreamMissingError,
      ensureStreams: async () => void (await ensureStreams(nc, this.streamSettings())),
      wakeAll: () => this.supervisor?.wakeAll(),
      restartFeed: () => feedWatch.restart(),
      observer: {
        status: (missing) => this.metrics.streamMissing(missing),
        missing: () => this.logger.error({ msg: 'notification stream missing (NATS lost its store?): processing paused; creating it again', stream }),
        back: () => this.logger.warn({ msg: 'notification stream exists again', stream }),
        streamsCreated: (ok, err) =>
          ok
            ? this.logger.warn({ msg: 'streams created again', stream })
            : this.logger.warn({ msg: 'could not create the streams again; retrying', err: (err as Error).message }),
        recreated: (was, now) =>
          this.logger.error({ msg: 'notification stream recreated: its sequences restarted; every chamber re-checks its mark before its next commit', stream, was, now }),
        recreateIncomplete: (err) => this.logger.warn({ msg: 'could not create the other streams again; next check retries', err: (err as Error).message }),
        checkFailed: (err) => this.logger.debug({ msg: 'notification stream check failed', err: (err as Error).message }),
      },
    });
  }

  /** A chamber that moved away no longer counts as paused here (its new owner reports it). */
  private forgetMismatch(key: string): void {
    if (!this.mismatched.delete(key)) return;
    this.metrics.streamMismatchCleared(key, this.mismatched.size);
  }

  private streamSettings() {
    return {
      replicas: this.config.NATS_STREAM_REPLICAS,
      notificationMaxAgeSeconds: this.config.NOTIFICATION_RETENTION_SECONDS,
      eventsMaxAgeSeconds: this.config.EVENTS_RETENTION_SECONDS,
      duplicateWindowSeconds: this.config.STREAM_DUPLICATE_WINDOW_SECONDS,
    };
  }

  /**
   * Streams, reader, cache and feed. Every step is retried until it succeeds (or shutdown): a
   * defender that cannot prepare must not fail its membership, only wait.
   */
  private async prepare(): Promise<void> {
    const nc = await this.nats.connection();
    this.nc = nc;
    const store = await this.store.ready();
    this.storeHandle = store;
    // Until it succeeds, or the service stops first (then nothing is left to do).
    await retryingUntilStopped(
      async () => {
        await ensureStreams(nc, this.streamSettings());
        this.reader ??= await NotificationReader.open(nc, this.config.NATS_STREAM_NAME);
        this.feedWatch ??= this.createFeedWatch(nc);
        this.streamCheck ??= this.createStreamCheck(nc, this.reader, this.feedWatch);
        await this.streamCheck.init();
        const check = this.streamCheck;
        this.streamCheckTimer ??= setInterval(() => void check.check(), this.config.HEARTBEAT_INTERVAL_SECONDS * 1000);
        this.streamCheckTimer.unref();
        // The cache keeps as many runs per chamber as the product's strategies read in a chamber's steady
        // state (a history call asking for more, a run completing Phase I for example, bypasses it and
        // decodes every point of every run it reads from the store). It keeps only the points such a
        // read uses: a monitored indicator's value is read back by a baseline fit alone, which reads
        // the full history (ADR 0015); a Phase I run keeps its model point, not its ~640 values.
        this.cache ??= new UChartHistoryCache({
          source: store.uchart,
          sizeMb: this.config.CACHE_SIZE_MB,
          leaveOut: isBaselineData,
          runsPerChamber: Math.max(this.evaluator.historyRuns(undefined), ...STRATEGY_PRESETS.map((p) => this.evaluator.historyRuns(p.document))),
        });
        if (!this.supervisor) {
          this.supervisor = this.createSupervisor(nc, this.reader, this.cache);
          // A map applied before processing was ready: its workers start through acquire().
          const m = this.lastApplied;
          if (m) this.supervisor.rememberMap(m.owned, m.mapVersion);
        }
        await this.feedWatch.start();
        this.logger.log({ msg: 'processing ready', maxConcurrent: this.config.MAX_CONCURRENT_MESSAGES });
      },
      {
        what: 'processing setup',
        baseMs: 250,
        maxMs: 10_000,
        random: Math.random,
        signal: this.stopping.signal,
        onRetry: (err, attempt, delayMs) => this.logger.warn({ msg: 'processing not ready yet; retrying', attempt, delayMs: Math.round(delayMs), err: (err as Error).message }),
      },
    );
  }

  /** The wake-up feed; if it ever ends, it is watched again and every worker re-checks the stream. */
  private createFeedWatch(nc: NatsConnection): FeedWatch {
    return new FeedWatch({
      watch: (ended) =>
        watchNotifications(nc, (subject, seq) => this.onNotice(subject, seq), {
          stream: this.config.NATS_STREAM_NAME,
          onError: (err) => this.logger.warn({ msg: 'notification feed failed', err: err.message }),
          onEnd: ended,
        }),
      sleep: sleepUnlessAborted,
      random: Math.random,
      resumed: () => this.supervisor?.wakeAll(),
      observer: {
        ended: () => this.logger.warn({ msg: 'notification feed ended; re-watching' }),
        rewatchFailed: (attempt, err) => this.logger.warn({ msg: 'could not re-watch notifications; retrying', attempt, err: (err as Error).message }),
      },
    });
  }

  private onNotice(subject: string, seq: number): void {
    const s = parseNotificationSubject(subject);
    if (!s) return;
    const key = `${s.toolId}:${s.chamberId}`;
    if (this.supervisor?.notify(key, seq)) return;
    if (!this.identity.inMap(key) && this.identity.handlesUnknownChambers()) void this.deadLetterUnknown(subject, key, seq);
  }

  /**
   * A notification for a chamber no defender owns (not in chamber_metadata, so not in the map):
   * dead-lettered by libs/pipeline `UnknownChamberDeadLetters`, kept in the stream.
   */
  private async deadLetterUnknown(subject: string, key: string, seq: number): Promise<void> {
    const nc = this.nc;
    const reader = this.reader;
    if (!nc || !reader) return;
    this.unknownChambers ??= new UnknownChamberDeadLetters({
      read: (subj, sequence) => reader.next(subj, sequence),
      sink: { publish: async (subj, payload, msgId) => void (await publishOnce(nc, subj, payload, msgId)) },
      defenderId: () => this.identity.defenderId(),
      now: () => new Date(),
      observer: {
        deadLettered: (chamber, sequence) => {
          this.metrics.deadLetter('unknown-chamber');
          this.logger.warn({ msg: 'dead-lettered', chamber, sequence, reason: 'unknown-chamber' });
        },
        failed: (chamber, sequence, err) =>
          this.logger.warn({ msg: 'could not dead-letter an unknown chamber', chamber, sequence, err: (err as Error).message }),
      },
    });
    await this.unknownChambers.deadLetter(subject, key, seq);
  }

  async acquire(chambers: readonly string[], mapVersion: number): Promise<void> {
    await this.ready;
    if (this.draining) return;
    this.supervisor?.acquire(chambers, mapVersion);
  }

  mapApplied(owned: readonly string[], mapVersion: number): void {
    this.lastApplied = { owned, mapVersion };
    if (this.draining) return;
    this.supervisor?.mapApplied(owned, mapVersion);
  }

  async release(chambers: readonly string[]): Promise<void> {
    this.loadReporter.release(chambers);
    await this.supervisor?.release(chambers);
  }

  async drain(timeoutMs: number): Promise<void> {
    this.draining = true;
    this.stopping.abort();
    if (this.streamCheckTimer) clearInterval(this.streamCheckTimer);
    this.streamCheck?.stop();
    await this.feedWatch?.stop().catch((err: unknown) => this.logger.warn({ msg: 'could not stop the notification feed', err: (err as Error).message }));
    const stopped = (await this.supervisor?.drain(timeoutMs)) ?? true;
    if (!stopped) this.logger.warn({ msg: 'drain timed out; in-flight runs are left to the next owner (fenced)', timeoutMs });
  }

  inflight(): number {
    return this.supervisor?.inflight() ?? 0;
  }

  processedTotal(): number {
    return this.processedTotalCount;
  }

  /** The heartbeat's load report: closes the measurement interval (call once per heartbeat). */
  loadReport(): LoadReport {
    return this.loadReporter.report();
  }

  async onApplicationShutdown(): Promise<void> {
    if (!this.draining) await this.drain(1000);
    this.cache?.close();
  }

  /** The supervisor of the chamber workers, once NATS, the store and the cache are ready. */
  private createSupervisor(nc: NatsConnection, reader: NotificationReader, cache: UChartHistoryCache): ChamberSupervisor {
    const worker: WorkerDeps = {
      source: boundedSource(reader, NATS_READS_IN_FLIGHT),
      sink: {
        publish: async (subject, payload, msgId) => void (await publishOnce(nc, subject, payload, msgId)),
        lastMsgId: (subject) => lastMessageId(nc, STREAMS.defenseEvents, subject),
      },
      store: this.storeWithTimings(),
      evaluator: this.evaluator,
      cache,
      semaphore: this.semaphore,
      fitSlots: this.fitSlots,
      traceBudget: this.traceBudget,
      // A trace's arrays outlive young collections (a run holds them across its reads): without
      // this they would stay resident until the next full collection.
      releaseTrace: releaseTraceMemory,
      observer: this.observer(),
      now: () => new Date(),
      monotonic: () => performance.now(),
      sleep: sleepUnlessAborted,
    };
    return new ChamberSupervisor({
      worker,
      workerOptions: {
        ownerId: this.identity.defenderId() ?? 'unknown',
        processTimeoutMs: this.config.PROCESS_TIMEOUT_SECONDS * 1000,
        maxAttempts: this.config.PROCESS_MAX_ATTEMPTS,
        idlePollMs: this.config.IDLE_POLL_SECONDS * 1000,
        maxTracePoints: this.config.MAX_TRACE_POINTS,
        maxOutageBackoffMs: 5000,
      },
      claimGeneration: () => this.identity.claimGeneration(),
      schedule: (fn, ms) => void setTimeout(fn, ms).unref(),
      random: Math.random,
      invalidate: (chamber) => cache.invalidate(chamber),
      events: {
        workerCrashed: (chamber, err, delayMs) => this.logger.error({ msg: 'chamber worker crashed; restarting', chamber, delayMs, err: (err as Error)?.message }),
        restartedAfterFence: (chamber, fencedEpoch, epoch) =>
          this.logger.warn({ msg: 'worker fenced under an older map than the one that gives us the chamber: started again under it', chamber, fencedEpoch, epoch }),
        orphansStarted: (mapVersion, chambers) =>
          this.logger.warn({ msg: 'owned chambers without a worker (fenced under an older map): started under this map', mapVersion, chambers: chambers.slice(0, 20), count: chambers.length }),
        forgotten: (chamber) => this.forgetMismatch(chamber),
      },
    });
  }

  /** The store with read/write timings for the seeds' histograms. */
  private storeWithTimings(): WorkerDeps['store'] {
    const s = this.storeOrThrow();
    const timed = this.metrics.timedStore.bind(this.metrics);
    return {
      chamberState: {
        get: timed('read', (c: ChamberRef) => s.chamberState.get(c)),
        claim: timed('write', (c: ChamberRef, e: number, o: string, n: Date) => s.chamberState.claim(c, e, o, n)),
        commitRun: timed('write', (i: Parameters<typeof s.chamberState.commitRun>[0]) => s.chamberState.commitRun(i)),
        appliedRun: timed('read', (c: ChamberRef, runId: string) => s.chamberState.appliedRun(c, runId)),
        bindStream: timed('write', (i: Parameters<typeof s.chamberState.bindStream>[0]) => s.chamberState.bindStream(i)),
      },
      traces: { ...s.traces, read: timed('read', (r: Parameters<typeof s.traces.read>[0]) => s.traces.read(r)) } as typeof s.traces,
      uchart: s.uchart,
      alarms: s.alarms,
      outbox: s.outbox,
      strategies: s.strategies,
      chamberMetadata: s.chamberMetadata,
      monitorState: {
        get: timed('read', (c: ChamberRef, recipe: string) => s.monitorState.get(c, recipe)),
        list: (c: ChamberRef) => s.monitorState.list(c),
      },
      monitorModels: {
        get: timed('read', (c: ChamberRef, recipe: string, version?: number) => s.monitorModels.get(c, recipe, version)),
        versions: (c: ChamberRef) => s.monitorModels.versions(c),
      },
      chamberMemory: { get: timed('read', (c: ChamberRef) => s.chamberMemory.get(c)) },
    };
  }

  private storeOrThrow(): DefenderStore {
    if (!this.storeHandle) throw new Error('store not open');
    return this.storeHandle;
  }

  private observer(): PipelineObserver {
    return {
      received: () => this.metrics.runReceived(this.inflight()),
      processed: (chamber, sequence, ms, outcome) => {
        this.processedTotalCount++;
        if (outcome === 'applied') this.loadReporter.applied(chamber);
        this.metrics.runProcessed(chamber, outcome, ms / 1000, this.inflight());
        const stats = this.cache?.stats();
        if (stats) this.metrics.cacheCounts(stats);
        if (outcome === 'duplicate-run') this.logger.debug({ msg: 'run id applied before: notification skipped', chamber, sequence, outcome });
        else this.logger.debug({ msg: 'run applied', chamber, sequence, ms: Math.round(ms), outcome });
      },
      traceSamples: (_chamber, samples) => this.loadReporter.evaluated(samples),
      strategyFound: (chamber, scope) => {
        this.metrics.strategyLookup(strategyScopeKind(scope));
        if (scope?.deprecated && !this.legacyStrategyWarned.has(chamber)) {
          this.legacyStrategyWarned.add(chamber);
          this.logger.warn({
            msg: `strategy read from the deprecated key "${scope.scope}": store it under "chamber/${scope.scope}" (defenderctl strategy put), which takes precedence; warned once per chamber`,
            chamber,
          });
        }
      },
      deadLettered: (chamber, sequence, reason, detail) => {
        this.metrics.deadLetter(reason);
        this.logger.warn({ msg: 'dead-lettered', chamber, sequence, reason, detail });
      },
      failedAttempt: (chamber, sequence, attempt, err) => {
        this.metrics.attemptFailed();
        this.logger.warn({ msg: 'run attempt failed', chamber, sequence, attempt, err: (err as Error)?.message });
      },
      paused: (chamber, what, err) => {
        this.metrics.processingPaused(what);
        this.logger.warn({ msg: 'paused: dependency unavailable', chamber, stage: what, err: (err as Error)?.message });
      },
      releaseFailed: (chamber, err) => {
        this.logger.warn({ msg: 'trace memory not released: left to the garbage collector', chamber, err: (err as Error)?.message });
      },
      fenced: (chamber, epoch, err) => {
        this.metrics.writeFenced();
        this.logger.warn({ msg: 'fenced: a newer owner holds the chamber', chamber, epoch, err: (err as Error)?.message });
      },
      streamAdopted: (chamber, info) => {
        this.logger.warn({ msg: 'high-water mark recorded without a stream identity (before migration 3): adopted the current stream, once', chamber, ...info });
      },
      streamMismatch: (chamber, info) => {
        this.mismatched.add(chamber);
        this.metrics.streamMismatch(chamber, this.mismatched.size);
        this.logger.error({
          msg:
            'notification stream is not the one this chamber\'s high-water mark counts in (recreated: sequences restarted below the mark); ' +
            'chamber paused, nothing committed; re-basing it onto the new stream (run ids applied before are skipped). If it stays paused, check the store and NATS',
          chamber,
          ...info,
        });
      },
      streamRebased: (chamber, info) => {
        this.mismatched.delete(chamber);
        this.metrics.streamMismatchCleared(chamber, this.mismatched.size);
        this.metrics.streamRebased();
        this.logger.warn({ msg: 'chamber re-based onto the recreated notification stream: reading it from its start', chamber, ...info });
      },
      published: (chamber, event) => {
        if (!event.subject.startsWith('defense.alarms.')) return;
        this.metrics.alarmPublished(chamber);
      },
      stage: (stage, ms) => {
        if (stage === 'evaluate') this.metrics.evaluated(ms / 1000);
      },
    };
  }
}

