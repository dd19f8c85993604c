import { Injectable } from '@nestjs/common';
import { InjectMetric } from '@willsoto/nestjs-prometheus';
import type { Counter, Gauge, Histogram } from 'prom-client';
import type { DefenderState, StrategyScopeKind } from '@defender/contracts';
import type { TrimResult } from '@defender/malloc';
import type { StoreObserver } from '@defender/store';
import { M, membershipMetricProviders } from './membership-metrics';
import { PM, processingMetricProviders } from './processing-metrics';
import { MM, mallocMetricProviders } from './malloc-metrics';

/** How a run's notification was handled (libs/pipeline `PipelineObserver.processed`). */
export type RunOutcome = 'applied' | 'already-applied' | 'duplicate-run';

/** The U-chart history cache's own counts, which only grow (until the cache is created again). */
export interface CacheCounts {
  readonly hits: number;
  readonly misses: number;
  /** 0-1. */
  readonly hitRate: number;
}

/** One applied assignment map, for the membership metrics. */
export interface AppliedAssignment {
  readonly version: number;
  /** Chambers taken over and released by this map. */
  readonly added: number;
  readonly removed: number;
  /** Chambers owned under it. */
  readonly owned: number;
  /** Release, then acquire, seconds. */
  readonly seconds: number;
}

/**
 * Every metric of the defender (seed 000's defender and subscription-manager tables, seed 002's state
 * machine, dead letters, fencing, stream identity, the C heap): the one Nest provider that holds
 * them, so services report named events and never touch a metric. Names, labels and help texts are
 * defined in `metrics/processing-metrics.ts`, `metrics/membership-metrics.ts` and
 * `malloc-metrics.ts`; times are in seconds.
 */
@Injectable()
export class DefenderMetricsObserver {
  /** Cache hits and misses already added to their counters. */
  private exportedCache = { hits: 0, misses: 0 };

  constructor(
    // Processing (processing-metrics.ts).
    @InjectMetric(PM.received) private readonly received: Counter,
    @InjectMetric(PM.processed) private readonly processed: Counter,
    @InjectMetric(PM.failed) private readonly failed: Counter,
    @InjectMetric(PM.deadLetters) private readonly deadLetters: Counter,
    @InjectMetric(PM.processTime) private readonly processTime: Histogram,
    @InjectMetric(PM.cacheHitRate) private readonly hitRate: Gauge,
    @InjectMetric(PM.cacheHits) private readonly cacheHits: Counter,
    @InjectMetric(PM.cacheMisses) private readonly cacheMisses: Counter,
    @InjectMetric(PM.storeRead) private readonly storeRead: Histogram,
    @InjectMetric(PM.storeWrite) private readonly storeWrite: Histogram,
    @InjectMetric(PM.uchartCalc) private readonly uchartCalc: Histogram,
    @InjectMetric(PM.alarms) private readonly alarms: Counter,
    @InjectMetric(PM.fenced) private readonly fenced: Counter,
    @InjectMetric(PM.paused) private readonly paused: Counter,
    @InjectMetric(PM.inflight) private readonly inflight: Gauge,
    @InjectMetric(PM.storeOperation) private readonly storeOperation: Histogram,
    @InjectMetric(PM.streamMismatch) private readonly mismatch: Gauge,
    @InjectMetric(PM.streamRebased) private readonly rebased: Counter,
    @InjectMetric(PM.streamMissing) private readonly missing: Gauge,
    @InjectMetric(PM.chamberRuns) private readonly chamberRuns: Counter,
    @InjectMetric(PM.chamberAlarms) private readonly chamberAlarms: Counter,
    @InjectMetric(PM.strategyLookups) private readonly strategyLookups: Counter,
    // Membership (membership-metrics.ts).
    @InjectMetric(M.state) private readonly stateGauge: Gauge,
    @InjectMetric(M.stableId) private readonly stableIdGauge: Gauge,
    @InjectMetric(M.assignedChambers) private readonly assignedGauge: Gauge,
    @InjectMetric(M.assignmentVersion) private readonly versionGauge: Gauge,
    @InjectMetric(M.heartbeatErrors) private readonly heartbeatErrors: Counter,
    @InjectMetric(M.subscriptionAdded) private readonly addedCounter: Counter,
    @InjectMetric(M.subscriptionRemoved) private readonly removedCounter: Counter,
    @InjectMetric(M.subscriptionErrors) private readonly subscriptionErrors: Counter,
    @InjectMetric(M.subscriptionUpdateDuration) private readonly updateDuration: Histogram,
    @InjectMetric(M.currentSubscriptions) private readonly currentGauge: Gauge,
    @InjectMetric(M.mapsRejected) private readonly mapsRejected: Counter,
    // Seed 002's state machine (membership-metrics.ts).
    @InjectMetric(M.stateTransitions) private readonly transitions: Counter,
    @InjectMetric(M.stateDuration) private readonly stateDuration: Histogram,
    @InjectMetric(M.initDuration) private readonly initDuration: Histogram,
    @InjectMetric(M.initFailures) private readonly initFailures: Counter,
    @InjectMetric(M.claimAttempts) private readonly claimAttempts: Counter,
    @InjectMetric(M.claimDuration) private readonly claimDuration: Histogram,
    @InjectMetric(M.stableIdClaimed) private readonly claimedGauge: Gauge,
    @InjectMetric(M.followerWait) private readonly followerWait: Histogram,
    @InjectMetric(M.mapVersion) private readonly mapVersionGauge: Gauge,
    @InjectMetric(M.shutdowns) private readonly shutdowns: Counter,
    @InjectMetric(M.shutdownDuration) private readonly shutdownDuration: Histogram,
    @InjectMetric(M.inflightAtShutdown) private readonly inflightAtShutdown: Gauge,
    // The C heap (malloc-metrics.ts).
    @InjectMetric(MM.trims) private readonly trims: Counter,
    @InjectMetric(MM.heap) private readonly heap: Gauge,
    @InjectMetric(MM.threadHeap) private readonly threadHeapGauge: Gauge,
    @InjectMetric(MM.threadCpu) private readonly threadCpuCounter: Counter,
    @InjectMetric(MM.traceBuffers) private readonly traceBufferGauge: Gauge,
    @InjectMetric(MM.traceLeases) private readonly traceLeaseCounter: Counter,
  ) {}

  /** The trace pool's lease counts as last reported (the counter moves by the difference). */
  private traceLeasesSeen = { reused: 0, allocated: 0 };

  /** Each thread's CPU seconds as last reported (the counter moves by the difference). */
  private readonly threadCpuSeen = new Map<string, number>();

  // --- Processing -------------------------------------------------------------------------------

  /** A notification was taken for processing; `inflight` runs are being processed now. */
  runReceived(inflight: number): void {
    this.received.inc();
    this.inflight.set(inflight);
  }

  /** A run's notification was handled after `seconds` (read to commit and publish). */
  runProcessed(chamber: string, outcome: RunOutcome, seconds: number, inflight: number): void {
    this.processed.inc({ outcome });
    if (outcome === 'applied') this.chamberRuns.inc({ chamber });
    this.processTime.observe(seconds);
    this.inflight.set(inflight);
  }

  /** The cache's ratio, and beside it the lookups since the last report as counters. */
  cacheCounts(counts: CacheCounts): void {
    this.hitRate.set(counts.hitRate);
    // A new cache (store reopened) counts from 0 again.
    const base = counts.hits < this.exportedCache.hits || counts.misses < this.exportedCache.misses ? { hits: 0, misses: 0 } : this.exportedCache;
    this.cacheHits.inc(counts.hits - base.hits);
    this.cacheMisses.inc(counts.misses - base.misses);
    this.exportedCache = { hits: counts.hits, misses: counts.misses };
  }

  /** A run attempt's strategy was found under a scope of this kind (contracts `strategyScopeKind`). */
  strategyLookup(kind: StrategyScopeKind): void {
    this.strategyLookups.inc({ scope: kind });
  }

  /** A notification was sent to `dc.dead.<reason>`. */
  deadLetter(reason: string): void {
    this.deadLetters.inc({ reason });
  }

  /** A processing attempt failed (it is retried). */
  attemptFailed(): void {
    this.failed.inc();
  }

  /** Processing paused at `stage` because NATS or the store was unavailable. */
  processingPaused(stage: string): void {
    this.paused.inc({ stage });
  }

  /** A chamber stopped because a newer owner fenced our writes. */
  writeFenced(): void {
    this.fenced.inc();
  }

  /** An alarm was published for `chamber`. */
  alarmPublished(chamber: string): void {
    this.alarms.inc();
    this.chamberAlarms.inc({ chamber });
  }

  /** Indicator computation and rule evaluation of one run took `seconds`. */
  evaluated(seconds: number): void {
    this.uchartCalc.observe(seconds);
  }

  /** `chamber` paused on a stream mismatch (ADR 0007); `pausedChambers` are paused so now. */
  streamMismatch(chamber: string, pausedChambers: number): void {
    this.mismatch.set({ chamber }, 1);
    this.mismatch.set({ chamber: '' }, pausedChambers);
  }

  /** `chamber` is no longer paused here (re-based, or gone to another defender); `pausedChambers` still are. */
  streamMismatchCleared(chamber: string, pausedChambers: number): void {
    this.mismatch.remove({ chamber });
    this.mismatch.set({ chamber: '' }, pausedChambers);
  }

  /** A chamber was re-based onto a recreated notification stream (ADR 0007). */
  streamRebased(): void {
    this.rebased.inc();
  }

  /** Whether the notification stream is missing (NATS lost it) at the last check. */
  streamMissing(missing: boolean): void {
    this.missing.set(missing ? 1 : 0);
  }

  /** Every store operation (for `StoreService.addObserver`). */
  readonly storeOperationDone: StoreObserver = (op) => this.storeOperation.observe({ operation: op.operation, outcome: op.outcome }, op.durationSeconds);

  /** `fn` with each call's time observed as a store read or write (the seeds' histograms). */
  timedStore<A extends unknown[], R>(kind: 'read' | 'write', fn: (...a: A) => Promise<R>): (...a: A) => Promise<R> {
    const histogram = kind === 'read' ? this.storeRead : this.storeWrite;
    return async (...a: A): Promise<R> => {
      const end = histogram.startTimer();
      try {
        return await fn(...a);
      } finally {
        end();
      }
    };
  }

  // --- Membership -------------------------------------------------------------------------------

  /** The process state's code (0=INITIALIZATION ... 9=SHUTDOWN). */
  stateCode(code: number): void {
    this.stateGauge.set(code);
  }

  /** The claimed stable ID's n of `defender-n` (-1 before a claim). */
  stableId(n: number): void {
    this.stableIdGauge.set(n);
  }

  heartbeatFailed(): void {
    this.heartbeatErrors.inc();
  }

  /** An assignment map was ignored (invalid, older, or a lower fencing token). */
  mapRejected(): void {
    this.mapsRejected.inc();
  }

  /** Applying an assignment map failed. */
  assignmentFailed(): void {
    this.subscriptionErrors.inc();
  }

  /** An assignment map was applied. */
  assignmentApplied(a: AppliedAssignment): void {
    this.addedCounter.inc(a.added);
    this.removedCounter.inc(a.removed);
    this.assignedGauge.set(a.owned);
    this.currentGauge.set(a.owned);
    this.versionGauge.set(a.version);
    this.mapVersionGauge.set(a.version);
    this.updateDuration.observe(a.seconds);
  }

  // --- Seed 002's state machine ------------------------------------------------------------------

  /** `from` -> `to` after `seconds` in `from`; the states' own durations on success. */
  transition(from: DefenderState, to: DefenderState, seconds: number): void {
    this.transitions.inc({ from, to });
    this.stateDuration.observe({ state: from }, seconds);
    if (from === 'INITIALIZATION' && to === 'CLAIMING_ID') this.initDuration.observe(seconds);
    else if (from === 'CLAIMING_ID' && to === 'FOLLOWER') this.claimDuration.observe(seconds);
    else if (from === 'FOLLOWER' && to === 'STABLE') this.followerWait.observe(seconds);
  }

  /** A try to get going (open the KV buckets) failed during INITIALIZATION. */
  initializationFailed(): void {
    this.initFailures.inc();
  }

  claimAttempt(): void {
    this.claimAttempts.inc();
  }

  /** `id` (e.g. `defender-5`) claimed (1) or released (0). */
  claimed(id: string, held: boolean): void {
    this.claimedGauge.set({ id }, held ? 1 : 0);
  }

  shutdownBegan(inflightRuns: number): void {
    this.shutdowns.inc();
    this.inflightAtShutdown.set(inflightRuns);
  }

  /** The shutdown ended after `seconds`; returns the shutdown metrics' values for the last log line. */
  async shutdownEnded(seconds: number): Promise<Record<string, number>> {
    this.shutdownDuration.observe(seconds);
    const first = async (m: Counter | Gauge) => (await m.get()).values[0]?.value ?? Number.NaN;
    const count = (await this.shutdownDuration.get()).values.find((v) => v.metricName === `${M.shutdownDuration}_count`)?.value ?? Number.NaN;
    return {
      [M.shutdowns]: await first(this.shutdowns),
      [M.inflightAtShutdown]: await first(this.inflightAtShutdown),
      [`${M.shutdownDuration}_count`]: count,
    };
  }

  // --- The C heap -------------------------------------------------------------------------------

  /** One `malloc_trim` and the heap's counters after it. */
  mallocTrimmed(r: TrimResult): void {
    this.trims.inc({ released: String(r.released) });
    if (r.after) {
      this.heap.set({ kind: 'heap' }, r.after.heapBytes);
      this.heap.set({ kind: 'in_use' }, r.after.inUseBytes);
      this.heap.set({ kind: 'free' }, r.after.freeBytes);
      this.heap.set({ kind: 'mmapped' }, r.after.mmappedBytes);
    }
  }

  /** A thread's V8 heap; `undefined`: the thread is not running (its series are removed). */
  threadHeap(thread: string, heap: ThreadHeap | undefined): void {
    for (const kind of ['total', 'used', 'external'] as const) {
      if (heap) this.threadHeapGauge.set({ thread, kind }, heap[kind]);
      else this.threadHeapGauge.remove({ thread, kind });
    }
  }

  /**
   * A thread's CPU time since it started, seconds; `undefined`: not running. A thread started again
   * (its time below the last report) counts from zero, so the counter never goes back.
   */
  threadCpu(thread: string, seconds: number | undefined): void {
    if (seconds === undefined) return;
    const seen = this.threadCpuSeen.get(thread) ?? 0;
    const delta = seconds >= seen ? seconds - seen : seconds;
    this.threadCpuSeen.set(thread, seconds);
    if (delta > 0) this.threadCpuCounter.inc({ thread }, delta);
  }

  /**
   * The store's trace buffer pool as it reports itself; `undefined`: no pool to ask (the store is
   * not open). A pool made again (its counts below the last report) counts from zero.
   */
  tracePool(stats: TracePoolCounts | undefined): void {
    if (!stats) return;
    this.traceBufferGauge.set({ kind: 'free' }, stats.retainedBytes);
    this.traceBufferGauge.set({ kind: 'capacity' }, stats.capacityBytes);
    for (const source of ['reused', 'allocated'] as const) {
      const seen = this.traceLeasesSeen[source];
      const delta = stats[source] >= seen ? stats[source] - seen : stats[source];
      if (delta > 0) this.traceLeaseCounter.inc({ source }, delta);
    }
    this.traceLeasesSeen = { reused: stats.reused, allocated: stats.allocated };
  }
}

/** What the defender reports of its store's trace buffer pool (libs/store TraceBufferPoolStats). */
export interface TracePoolCounts {
  readonly reused: number;
  readonly allocated: number;
  readonly retainedBytes: number;
  readonly capacityBytes: number;
}

/** A thread's V8 heap, bytes: committed (`total`), live objects (`used`), and external memory. */
export interface ThreadHeap {
  readonly total: number;
  readonly used: number;
  readonly external: number;
}

/** The defender's metric providers and their one adapter, for the module that registers them. */
export const defenderMetricsProviders = [...processingMetricProviders, ...membershipMetricProviders, ...mallocMetricProviders, DefenderMetricsObserver];
