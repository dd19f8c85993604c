import { retryingUntilStopped } from '@defender/backoff';
import { type LoadReport, parseEquipmentEventSubject, parseNotificationSubject } from '@defender/contracts';
import { STRATEGY_PRESETS } from '@defender/defense-rules';
import type { ChamberWork } from '@defender/membership';
import { boundedSource } from '../bounded-source';
import { ChamberSupervisor, type WorkerState } from '../chamber-supervisor';
import type { WorkerDeps } from '../chamber-worker';
import { isBaselineData } from '../evaluator';
import { FeedWatch } from '../feed-watch';
import type { NotificationSource, PipelineStore } from '../ports';
import { ByteBudget, Semaphore } from '../semaphore';
import { StreamCheck } from '../stream-check';
import { UnknownChamberDeadLetters } from '../unknown-chamber';
import type { DefenderProcessingDeps, ProcessingCache, ProcessingNats } from './ports';
import { RunTally } from './run-tally';
import { timedPipelineStore } from './timed-store';

/**
 * Most NATS reads the chamber workers of one defender have in flight (libs/pipeline bounded-source):
 * enough to keep a busy defender's reads pipelined (a read takes about a millisecond on a local
 * server), few enough that thousands of chambers starting at once queue here, not past NATS's
 * request timeout.
 */
export const NATS_READS_IN_FLIGHT = 64;

/** Longest backoff of a chamber while NATS or the store is unavailable, ms. */
const MAX_OUTAGE_BACKOFF_MS = 5000;

/** Backoff of the setup's retries, ms (@defender/backoff). */
const SETUP_BACKOFF = { baseMs: 250, maxMs: 10_000 } as const;

/** The notification stream's state, as last checked (the status endpoint). */
export interface StreamHealth {
  readonly stream: string;
  readonly streamId: string | undefined;
  readonly missing: boolean;
  /** Chambers paused because the stream was recreated (ADR 0007), sorted. */
  readonly mismatchedChambers: string[];
}

/**
 * The defender's processing of chambers: one {@link ChamberWorker} per owned chamber, started and
 * stopped as membership calls `acquire` / `release` ({@link ChamberSupervisor}). One headers-only
 * feed of the notification stream wakes the workers ({@link FeedWatch}); each reads its chamber by
 * sequence from the store's high-water mark. Every heartbeat interval the stream's identity is
 * checked ({@link StreamCheck}); notifications of chambers no defender owns are dead-lettered by
 * the map's lowest defender. Plain code: NATS, the store, the cache, clocks and timers come in
 * through its deps, logs and metrics go out through its events.
 */
export class DefenderProcessing<S> implements ChamberWork {
  private supervisor: ChamberSupervisor | undefined;
  /** The newest map membership applied, for a supervisor created after it. */
  private lastApplied: { readonly owned: readonly string[]; readonly mapVersion: number } | undefined;
  private readonly semaphore: Semaphore;
  private readonly fitSlots: Semaphore;
  private readonly traceBudget: ByteBudget;
  private readonly tally: RunTally<S>;
  private cache: ProcessingCache<S> | undefined;
  private nats: ProcessingNats | undefined;
  private reader: (NotificationSource & { streamId(): Promise<string> }) | undefined;
  /** The wake-up feed, watched again whenever it ends. */
  private feedWatch: FeedWatch | undefined;
  /** The notification stream's identity and presence, checked every heartbeat interval. */
  private streamCheck: StreamCheck | undefined;
  private stopStreamChecks: (() => void) | undefined;
  private unknownChambers: UnknownChamberDeadLetters | undefined;
  private ready: Promise<void> | undefined;
  private draining = false;
  /** Aborted when draining starts: the setup's retries stop. */
  private readonly stopping = new AbortController();

  constructor(private readonly deps: DefenderProcessingDeps<S>) {
    const s = deps.settings;
    this.semaphore = new Semaphore(s.maxConcurrentMessages);
    this.fitSlots = new Semaphore(s.maxConcurrentFits);
    this.traceBudget = new ByteBudget(s.traceMemoryBytes);
    this.tally = new RunTally({
      events: deps.events.runs,
      load: deps.load,
      inflight: () => this.inflight(),
      cacheStats: () => this.cache?.stats(),
    });
  }

  /**
   * Streams, reader, cache and feed. Every step is retried until it succeeds (or the drain): a
   * defender that cannot prepare must not fail its membership, only wait.
   */
  start(): Promise<void> {
    this.ready ??= this.prepare();
    this.ready.catch((err: unknown) => this.deps.events.setupFailed(err));
    return this.ready;
  }

  /** The history cache's statistics (undefined until the store is open). */
  cacheStats(): S | undefined {
    return this.cache?.stats();
  }

  /**
   * Chambers with a running worker: their high-water marks (store sequences) and the stream the mark
   * counts in (`stream.status` `mismatch`: paused, the stream was recreated; ADR 0007).
   */
  workerStates(): WorkerState[] {
    return this.supervisor?.states() ?? [];
  }

  /** The notification stream as last checked: missing, and the chambers paused on a mismatch. */
  streamHealth(): StreamHealth {
    const check = this.streamCheck;
    return { stream: this.deps.settings.streamName, streamId: check?.streamId, missing: check?.missing ?? false, mismatchedChambers: this.tally.mismatchedChambers };
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
    this.tally.released(chambers);
    await this.supervisor?.release(chambers);
  }

  async drain(timeoutMs: number): Promise<void> {
    this.draining = true;
    this.stopping.abort();
    this.stopStreamChecks?.();
    this.streamCheck?.stop();
    await this.feedWatch?.stop().catch((err: unknown) => this.deps.events.feed.stopFailed(err));
    const stopped = (await this.supervisor?.drain(timeoutMs)) ?? true;
    if (!stopped) this.deps.events.drainTimedOut(timeoutMs);
  }

  /** Drains (briefly, unless drained already) and closes the cache. */
  async close(): Promise<void> {
    if (!this.draining) await this.drain(1000);
    this.cache?.close();
  }

  inflight(): number {
    return this.supervisor?.inflight() ?? 0;
  }

  processedTotal(): number {
    return this.tally.processedTotal;
  }

  /** The heartbeat's load report: closes the measurement interval (call once per heartbeat). */
  loadReport(): LoadReport {
    return this.tally.loadReport();
  }

  private async prepare(): Promise<void> {
    const { settings, events, clock, evaluator } = this.deps;
    const nats = await this.deps.nats();
    this.nats = nats;
    const store = await this.deps.store();
    // Until it succeeds, or the drain comes first (then nothing is left to do).
    await retryingUntilStopped(
      async () => {
        await nats.ensureStreams();
        this.reader ??= await nats.openReader();
        this.feedWatch ??= this.createFeedWatch(nats);
        this.streamCheck ??= this.createStreamCheck(nats, this.reader, this.feedWatch);
        await this.streamCheck.init();
        const check = this.streamCheck;
        this.stopStreamChecks ??= clock.every(settings.streamCheckMs, () => void check.check());
        // The cache keeps as many runs per chamber as the product's strategies read in a chamber's steady
        // state (a history call asking for more, a run completing Phase I for example, bypasses it and
        // decodes every point of every run it reads from the store). It keeps only the points such a
        // read uses: a monitored indicator's value is read back by a baseline fit alone, which reads
        // the full history (ADR 0015); a Phase I run keeps its model point, not its ~640 values.
        this.cache ??= this.deps.createCache({
          source: store.uchart,
          leaveOut: isBaselineData,
          runsPerChamber: Math.max(evaluator.historyRuns(undefined), ...STRATEGY_PRESETS.map((p) => evaluator.historyRuns(p.document))),
        });
        if (!this.supervisor) {
          this.supervisor = this.createSupervisor(nats, this.reader, this.cache, store);
          // A map applied before processing was ready: its workers start through acquire().
          const m = this.lastApplied;
          if (m) this.supervisor.rememberMap(m.owned, m.mapVersion);
        }
        await this.feedWatch.start();
        events.ready(settings.maxConcurrentMessages);
      },
      {
        what: 'processing setup',
        ...SETUP_BACKOFF,
        random: clock.random,
        sleep: clock.sleep,
        signal: this.stopping.signal,
        onRetry: (err, attempt, delayMs) => events.setupRetrying(attempt, delayMs, err),
      },
    );
  }

  /**
   * Every heartbeat interval: is the notification stream still the one we saw? A recreated stream
   * wakes every worker and restarts the feed; a missing one is created again (with the configured
   * settings), so publishers and workers resume.
   */
  private createStreamCheck(nats: ProcessingNats, reader: { streamId(): Promise<string> }, feedWatch: FeedWatch): StreamCheck {
    return new StreamCheck({
      streamId: () => reader.streamId(),
      isMissing: (err) => nats.isStreamMissing(err),
      ensureStreams: () => nats.ensureStreams(),
      wakeAll: () => this.supervisor?.wakeAll(),
      restartFeed: () => feedWatch.restart(),
      observer: this.deps.events.streamCheck,
    });
  }

  /** The wake-up feed; if it ever ends, it is watched again and every worker re-checks the stream. */
  private createFeedWatch(nats: ProcessingNats): FeedWatch {
    const feed = this.deps.events.feed;
    return new FeedWatch({
      watch: (ended) => nats.watchNotifications((subject, seq) => this.onNotice(subject, seq), { onError: (err) => feed.failed(err), onEnd: ended }),
      sleep: this.deps.clock.sleep,
      random: this.deps.clock.random,
      resumed: () => this.supervisor?.wakeAll(),
      observer: feed,
    });
  }

  private onNotice(subject: string, seq: number): void {
    // A run, or an equipment event (ADR 0019): either wakes the chamber's worker, which reads both in order.
    const run = parseNotificationSubject(subject);
    const s = run ?? parseEquipmentEventSubject(subject);
    if (!s) return;
    const key = `${s.toolId}:${s.chamberId}`;
    if (this.supervisor?.notify(key, seq)) return;
    // An event of a chamber no defender owns waits in the stream; its runs are the ones dead-lettered.
    if (!run) return;
    const identity = this.deps.identity;
    if (!identity.inMap(key) && identity.handlesUnknownChambers()) void this.deadLetterUnknown(subject, key, seq);
  }

  /**
   * A notification for a chamber no defender owns (not in chamber_metadata, so not in the map):
   * dead-lettered by {@link UnknownChamberDeadLetters}, kept in the stream.
   */
  private async deadLetterUnknown(subject: string, key: string, seq: number): Promise<void> {
    const nats = this.nats;
    const reader = this.reader;
    if (!nats || !reader) return;
    this.unknownChambers ??= new UnknownChamberDeadLetters({
      read: (subj, sequence) => reader.next(subj, sequence),
      sink: { publish: (subj, payload, msgId) => nats.sink.publish(subj, payload, msgId) },
      defenderId: () => this.deps.identity.defenderId(),
      now: this.deps.clock.now,
      observer: this.deps.events.unknownChambers,
    });
    await this.unknownChambers.deadLetter(subject, key, seq);
  }

  /** The supervisor of the chamber workers, once NATS, the store and the cache are ready. */
  private createSupervisor(nats: ProcessingNats, reader: NotificationSource, cache: ProcessingCache<S>, store: PipelineStore): ChamberSupervisor {
    const { settings, clock, timeStoreCall, releaseTrace } = this.deps;
    const worker: WorkerDeps = {
      source: boundedSource(reader, NATS_READS_IN_FLIGHT),
      sink: nats.sink,
      store: timeStoreCall ? timedPipelineStore(store, timeStoreCall) : store,
      evaluator: this.deps.evaluator,
      cache,
      semaphore: this.semaphore,
      fitSlots: this.fitSlots,
      traceBudget: this.traceBudget,
      // A trace's arrays outlive young collections (a run holds them across its reads): without
      // this they would stay resident until the next full collection.
      ...(releaseTrace ? { releaseTrace } : {}),
      observer: this.tally.observer(),
      now: clock.now,
      monotonic: clock.monotonic,
      sleep: clock.sleep,
    };
    return new ChamberSupervisor({
      worker,
      workerOptions: {
        ownerId: this.deps.identity.defenderId() ?? 'unknown',
        processTimeoutMs: settings.processTimeoutMs,
        maxAttempts: settings.maxAttempts,
        idlePollMs: settings.idlePollMs,
        maxTracePoints: settings.maxTracePoints,
        maxOutageBackoffMs: MAX_OUTAGE_BACKOFF_MS,
      },
      claimGeneration: () => this.deps.identity.claimGeneration(),
      schedule: clock.schedule,
      random: clock.random,
      invalidate: (chamber) => cache.invalidate(chamber),
      events: { ...this.deps.events.supervisor, forgotten: (chamber) => this.tally.forget(chamber) },
    });
  }
}
