import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { retryingUntilStopped } from '@defender/backoff';
import { HealthRegistry, NatsConnectionService } from '@defender/nest-common';
import {
  KvLeaseStore,
  LeaderWatchHub,
  LeaseRecord,
  LeaseSnapshot,
  LeaseStore,
  LeaseStoreUnavailableError,
  WatchHandle,
} from '@defender/election';
import { ElectionAgentConfig } from '../config';
import { ELECTION_AGENT_CONFIG } from '../tokens';

/**
 * The agent's {@link LeaseStore}: the NATS KV bucket, opened in the background once NATS is
 * connected (readiness check `election-kv`). Until then every call fails with
 * LeaseStoreUnavailableError, which callers see as UNAVAILABLE.
 */
@Injectable()
export class ElectionStoreService implements LeaseStore, OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(ElectionStoreService.name);
  private store: KvLeaseStore | undefined;
  private lastError = 'connecting to NATS';
  /** Aborted on shutdown: opening the bucket stops retrying. */
  private readonly stopping = new AbortController();

  constructor(
    @Inject(ELECTION_AGENT_CONFIG) private readonly config: ElectionAgentConfig,
    private readonly nats: NatsConnectionService,
    private readonly health: HealthRegistry,
  ) {}

  onModuleInit(): void {
    this.health.register('election-kv', () =>
      this.store
        ? { ok: true, detail: this.config.ELECTION_KV_BUCKET }
        : { ok: false, detail: this.lastError },
    );
    void this.open();
  }

  onApplicationShutdown(): void {
    this.stopping.abort();
  }

  get(election: string): Promise<LeaseSnapshot> {
    return this.ready().get(election);
  }
  create(election: string, record: LeaseRecord): Promise<number> {
    return this.ready().create(election, record);
  }
  update(election: string, record: LeaseRecord, revision: number): Promise<number> {
    return this.ready().update(election, record, revision);
  }
  watch(election: string, onChange: (snapshot: LeaseSnapshot) => void): Promise<WatchHandle> {
    return Promise.resolve().then(() => this.ready().watch(election, onChange));
  }

  private ready(): KvLeaseStore {
    if (!this.store)
      throw new LeaseStoreUnavailableError(
        `KV bucket "${this.config.ELECTION_KV_BUCKET}" not open yet: ${this.lastError}`,
      );
    return this.store;
  }

  private async open(): Promise<void> {
    let nc;
    try {
      nc = await this.nats.connection();
    } catch (err) {
      // Only when the app shuts down before NATS ever answered.
      this.lastError = (err as Error).message;
      return;
    }
    // Until it succeeds, or the service stops first (then nothing is left to do).
    await retryingUntilStopped(
      async () => {
        this.store = await KvLeaseStore.open(nc, {
          bucket: this.config.ELECTION_KV_BUCKET,
          history: this.config.ELECTION_KV_HISTORY,
          replicas: this.config.ELECTION_KV_REPLICAS,
          timeoutMs: this.config.ELECTION_KV_TIMEOUT_MS,
          isConnected: () => this.nats.isConnected(),
          onBucketRecreated: (bucket) => this.logger.error({ msg: 'election KV bucket was missing (NATS lost its store?): created again; tokens go on above the last seen', bucket }),
          onBucketCheckFailed: (err) => this.logger.warn({ msg: 'could not check the election KV bucket', err: err.message }),
        });
        this.logger.log({ msg: 'election KV bucket open', bucket: this.config.ELECTION_KV_BUCKET });
      },
      {
        what: 'open the election KV bucket',
        baseMs: 250,
        maxMs: 5_000,
        random: Math.random,
        signal: this.stopping.signal,
        onRetry: (err, _attempt, delayMs) => {
          this.lastError = (err as Error).message;
          this.logger.warn({ msg: 'cannot open election KV bucket; retrying', bucket: this.config.ELECTION_KV_BUCKET, err: this.lastError, delayMs: Math.round(delayMs) });
        },
      },
    );
  }
}

/** Provides the one {@link LeaderWatchHub} of the process and closes it on shutdown. */
@Injectable()
export class LeaderWatchService implements OnApplicationShutdown {
  private readonly logger = new Logger(LeaderWatchService.name);
  readonly hub: LeaderWatchHub;

  constructor(@Inject(ELECTION_AGENT_CONFIG) config: ElectionAgentConfig, store: ElectionStoreService) {
    this.hub = new LeaderWatchHub({
      store,
      resyncMs: config.ELECTION_OBSERVE_RESYNC_MS,
      onError: (err, election) =>
        this.logger.debug({
          msg: 'observe: read or watch failed; retrying',
          election,
          err: (err as Error).message,
        }),
    });
  }

  onApplicationShutdown(): void {
    this.hub.close();
  }
}
