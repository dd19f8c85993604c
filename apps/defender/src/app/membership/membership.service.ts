import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnApplicationBootstrap, Optional } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { HeapInfo } from 'node:v8';
import { performance } from 'node:perf_hooks';
import { sleepUnlessAborted } from '@defender/backoff';
import type { DefenderState } from '@defender/contracts';
import { type ChamberWork, DefenderMembership, EXIT_MEMBERSHIP_FAILED, type MembershipCluster } from '@defender/membership';
import { HeldClaim, NatsUnavailableError, PoolExhaustedError, STALE_AFTER_INTERVALS, StableIdRegistry } from '@defender/nats-kv';
import { ClusterBuckets, ClusterKvService, HealthRegistry, natsClientTls, natsTlsFromEnv } from '@defender/nest-common';
import { DEFENDER_CONFIG } from '../tokens';
import { DefenderConfig } from '../config';
import { DefenderMetricsObserver } from '../metrics/defender-metrics-observer';
import { CHAMBER_WORK } from './chamber-work';
import { DefenderIdentity } from './defender-identity';
import { HeartbeatThread } from './heartbeat-thread';
import { membershipEvents } from './membership-events';

export const PROCESS_EXIT = Symbol('PROCESS_EXIT');
export type ProcessExit = (code: number) => void;

/**
 * The Nest shell of {@link DefenderMembership} (libs/membership): gives it the cluster's KV buckets,
 * the stable-ID registry on them, a heartbeat thread (ADR 0013), the processing of chambers, real
 * clocks and timers, and reports its events to logs, metrics, health and {@link DefenderIdentity};
 * runs it once the app has booted and stops it before the app shuts down.
 */
@Injectable()
export class MembershipService implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(MembershipService.name);
  private readonly membership: DefenderMembership<HeldClaim>;
  /** Writes the heartbeat off the main thread (ADR 0013); the membership only pulses it. */
  private heartbeatThread: HeartbeatThread | undefined;
  private stopping = false;

  constructor(
    @Inject(DEFENDER_CONFIG) private readonly config: DefenderConfig,
    private readonly kv: ClusterKvService,
    health: HealthRegistry,
    @Inject(PROCESS_EXIT) private readonly exit: ProcessExit,
    identity: DefenderIdentity,
    @Optional() @Inject(CHAMBER_WORK) work: ChamberWork | null,
    metrics: DefenderMetricsObserver,
  ) {
    const ownerId = config.POD_UID ?? randomUUID();
    metrics.stableId(-1);
    health.set('stable-id', false, 'not claimed yet');
    health.set('assignment', false, 'no assignment map applied yet');
    this.membership = new DefenderMembership({
      settings: {
        ownerId,
        podName: config.POD_NAME,
        podUid: config.POD_UID,
        heartbeatIntervalSeconds: config.HEARTBEAT_INTERVAL_SECONDS,
        capacity: config.DEFENDER_CAPACITY,
        shutdownDrainTimeoutSeconds: config.SHUTDOWN_DRAIN_TIMEOUT_SECONDS,
        staleAfterIntervals: STALE_AFTER_INTERVALS,
      },
      cluster: this.cluster(ownerId),
      work,
      events: membershipEvents({ logger: this.logger, metrics, health, identity, ownerId }),
      fatal: (code, msg, err) => this.fatal(code, msg, err),
      now: Date.now,
      monotonic: () => performance.now(),
      sleep: sleepUnlessAborted,
      every: (ms, fn) => {
        const t = setInterval(fn, ms);
        return () => clearInterval(t);
      },
      random: Math.random,
    });
  }

  /** The claimed ID, e.g. `defender-3`. */
  get defenderId(): string | undefined {
    return this.membership.defenderId;
  }
  get state(): DefenderState {
    return this.membership.state;
  }
  get ownedChambers(): readonly string[] {
    return this.membership.ownedChambers;
  }
  get mapVersion(): number {
    return this.membership.mapVersion;
  }
  get uptimeSeconds(): number {
    return this.membership.uptimeSeconds;
  }

  onApplicationBootstrap(): void {
    void this.membership.run().catch((err: unknown) => this.fatal(EXIT_MEMBERSHIP_FAILED, 'membership failed', err));
  }

  /** The heartbeat thread's CPU time, while it runs (thread metrics). */
  heartbeatThreadCpuUsage(): Promise<NodeJS.CpuUsage | undefined> {
    return this.heartbeatThread?.cpuUsage() ?? Promise.resolve(undefined);
  }

  /** The heartbeat thread's V8 heap, while it runs (memory metrics). */
  heartbeatThreadHeap(): Promise<HeapInfo | undefined> {
    return this.heartbeatThread?.heapStatistics() ?? Promise.resolve(undefined);
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.stopping = true;
    await this.membership.stop();
  }

  private fatal(code: number, msg: string, err: unknown): void {
    if (this.stopping) return;
    this.logger.fatal({ msg, defenderId: this.defenderId, err: err instanceof Error ? err.message : String(err), exitCode: code });
    this.exit(code);
  }

  /** NATS KV as membership uses it: the cluster's buckets, the stable-ID registry on them, the heartbeat thread. */
  private cluster(ownerId: string): MembershipCluster<HeldClaim> {
    const c = this.config;
    let buckets: ClusterBuckets | undefined;
    return {
      open: async () => {
        const b = await this.kv.buckets();
        buckets = b;
        const registry = new StableIdRegistry(
          b.stableIds,
          { maxDefenders: c.MAX_DEFENDERS, intervalSeconds: c.HEARTBEAT_INTERVAL_SECONDS, ownerId, podName: c.POD_NAME },
          b.stableIdsName,
        );
        return { stableIds: registry, assignments: b.assignments };
      },
      recreateMissing: () => this.kv.recreateMissing(),
      startHeartbeats: (claim, first, hangAfterMs, events) => {
        if (!buckets) throw new Error('heartbeats started before the KV buckets were open');
        const tls = natsTlsFromEnv(c);
        this.heartbeatThread = new HeartbeatThread(
          {
            nats: {
              servers: c.NATS_SERVERS,
              name: `defender:${c.POD_NAME ?? process.pid}:heartbeat`,
              ...(c.NATS_USER !== undefined ? { user: c.NATS_USER } : {}),
              ...(c.NATS_PASSWORD !== undefined ? { pass: c.NATS_PASSWORD } : {}),
              ...(c.NATS_TOKEN !== undefined ? { token: c.NATS_TOKEN } : {}),
              ...(tls ? { tls: natsClientTls(tls) } : {}),
            },
            buckets: { stableIds: buckets.stableIdsName, heartbeats: c.NATS_KV_HEARTBEATS },
            registry: { maxDefenders: c.MAX_DEFENDERS, intervalSeconds: c.HEARTBEAT_INTERVAL_SECONDS, ownerId, ...(c.POD_NAME ? { podName: c.POD_NAME } : {}) },
            claim,
            first,
            hangAfterMs,
          },
          events,
        );
        return this.heartbeatThread;
      },
      isUnavailable: (err) => err instanceof NatsUnavailableError,
      isPoolExhausted: (err) => err instanceof PoolExhaustedError,
    };
  }
}
