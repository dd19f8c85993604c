import { sleepUnlessAborted } from '@defender/backoff';
import { Inject, Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { performance } from 'node:perf_hooks';
import type { NatsConnection } from '@nats-io/nats-core';
import type { ChamberWork } from '@defender/membership';
import { ensureStreams, lastMessageId, NotificationReader, publishOnce, StreamMissingError, STREAMS, watchNotifications } from '@defender/nats-kv';
import { NatsConnectionService, StoreService } from '@defender/nest-common';
import { DefenderProcessing, type ProcessingNats, RunEvaluator, type StreamHealth, type WorkerState } from '@defender/pipeline';
import { releaseTraceMemory, type UChartCacheStats, UChartHistoryCache } from '@defender/store';
import { DefenderConfig } from '../config';
import { DEFENDER_CONFIG } from '../tokens';
import { DefenderMetricsObserver } from '../metrics/defender-metrics-observer';
import { DefenderIdentity } from '../membership/defender-identity';
import { LoadReporter, processCpuMs } from './load-reporter';
import { processingEvents } from './processing-events';

export const RUN_EVALUATOR = Symbol('RUN_EVALUATOR');

/**
 * The Nest shell of {@link DefenderProcessing} (libs/pipeline): gives it NATS (streams, the
 * notification reader and feed, publications), the store with its timings, the history cache, the
 * identity membership writes, real clocks and timers, and reports its events to logs and metrics;
 * membership drives it through CHAMBER_WORK ({@link work}). Starts once the app has booted, closes
 * on shutdown.
 */
@Injectable()
export class ProcessingService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(ProcessingService.name);
  private readonly processing: DefenderProcessing<UChartCacheStats>;

  constructor(
    @Inject(DEFENDER_CONFIG) private readonly config: DefenderConfig,
    nats: NatsConnectionService,
    store: StoreService,
    @Inject(RUN_EVALUATOR) evaluator: RunEvaluator,
    identity: DefenderIdentity,
    metrics: DefenderMetricsObserver,
  ) {
    store.addObserver(metrics.storeOperationDone);
    const c = config;
    this.processing = new DefenderProcessing({
      settings: {
        streamName: c.NATS_STREAM_NAME,
        maxConcurrentMessages: c.MAX_CONCURRENT_MESSAGES,
        maxConcurrentFits: c.MAX_CONCURRENT_FITS,
        traceMemoryBytes: c.TRACE_MEMORY_MB * 1024 * 1024,
        streamCheckMs: c.HEARTBEAT_INTERVAL_SECONDS * 1000,
        processTimeoutMs: c.PROCESS_TIMEOUT_SECONDS * 1000,
        maxAttempts: c.PROCESS_MAX_ATTEMPTS,
        idlePollMs: c.IDLE_POLL_SECONDS * 1000,
        maxTracePoints: c.MAX_TRACE_POINTS,
      },
      nats: async () => this.natsPorts(await nats.connection()),
      store: () => store.ready(),
      createCache: (opts) => new UChartHistoryCache({ ...opts, sizeMb: c.CACHE_SIZE_MB }),
      evaluator,
      identity,
      events: processingEvents(this.logger, metrics, c.NATS_STREAM_NAME),
      clock: {
        now: () => new Date(),
        monotonic: () => performance.now(),
        sleep: sleepUnlessAborted,
        random: Math.random,
        every: (ms, fn) => {
          const t = setInterval(fn, ms);
          t.unref();
          return () => clearInterval(t);
        },
        schedule: (fn, ms) => void setTimeout(fn, ms).unref(),
      },
      // Run rates and CPU cost measured for the controller's load model (ADR 0008).
      load: new LoadReporter(() => performance.now(), processCpuMs),
      timeStoreCall: (kind, fn) => metrics.timedStore(kind, fn),
      releaseTrace: releaseTraceMemory,
    });
  }

  onApplicationBootstrap(): void {
    void this.processing.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.processing.close();
  }

  /** Cache statistics for /api/v1/cache/stats (null until the store is open). */
  cacheStats(): UChartCacheStats | null {
    return this.processing.cacheStats() ?? null;
  }

  /** Chambers with a running worker (their marks and streams). */
  workerStates(): WorkerState[] {
    return this.processing.workerStates();
  }

  /** The notification stream as last checked: missing, and the chambers paused on a mismatch. */
  streamHealth(): StreamHealth {
    return this.processing.streamHealth();
  }

  /** The processing of chambers membership drives (CHAMBER_WORK). */
  get work(): ChamberWork {
    return this.processing;
  }

  /** NATS as the processing uses it, over the app's connection. */
  private natsPorts(nc: NatsConnection): ProcessingNats {
    const c = this.config;
    const streamSettings = {
      replicas: c.NATS_STREAM_REPLICAS,
      notificationMaxAgeSeconds: c.NOTIFICATION_RETENTION_SECONDS,
      eventsMaxAgeSeconds: c.EVENTS_RETENTION_SECONDS,
      duplicateWindowSeconds: c.STREAM_DUPLICATE_WINDOW_SECONDS,
    };
    return {
      ensureStreams: async () => void (await ensureStreams(nc, streamSettings)),
      openReader: () => NotificationReader.open(nc, c.NATS_STREAM_NAME),
      watchNotifications: (onNotice, opts) => watchNotifications(nc, onNotice, { stream: c.NATS_STREAM_NAME, ...opts }),
      sink: {
        publish: async (subject, payload, msgId) => void (await publishOnce(nc, subject, payload, msgId)),
        lastMsgId: (subject) => lastMessageId(nc, STREAMS.defenseEvents, subject),
      },
      isStreamMissing: (err) => err instanceof StreamMissingError,
    };
  }
}
