import {
  BeforeApplicationShutdown,
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
  Optional,
} from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { HeapInfo } from 'node:v8';
import { performance } from 'node:perf_hooks';
import { retrying, supervise } from '@defender/backoff';
import { AssignmentMap, DefenderState, LoadReport } from '@defender/contracts';
import { DefenderLifecycle, defenderMapScope, diffOwnership, lowestDefenderId, ownedChambers } from '@defender/membership';
import {
  HeldClaim,
  NatsUnavailableError,
  PoolExhaustedError,
  STALE_AFTER_INTERVALS,
  StableIdRegistry,
  StoredMap,
} from '@defender/nats-kv';
import { ClusterBuckets, ClusterKvService, HealthRegistry, natsClientTls, natsTlsFromEnv } from '@defender/nest-common';
import { DEFENDER_CONFIG } from '../tokens';
import { DefenderConfig } from '../config';
import { DefenderMetricsObserver } from '../metrics/defender-metrics-observer';
import { CHAMBER_WORK, ChamberWork } from './chamber-work';
import { DefenderIdentity } from './defender-identity';
import type { HeartbeatSnapshot } from './heartbeat-beater';
import { HeartbeatThread } from './heartbeat-thread';
import { MapWatchGuard } from './map-watch-guard';

/** Exit codes of a defender that cannot go on (Kubernetes restarts it). */
export const EXIT_POOL_EXHAUSTED = 3;
export const EXIT_CLAIM_LOST = 4;
export const EXIT_MEMBERSHIP_FAILED = 5;

/** Pulses of the main thread to its heartbeat thread per heartbeat interval (ADR 0013). */
export const PULSES_PER_INTERVAL = 4;

/**
 * Intervals the main thread may go without a pulse before its heartbeats are withheld (ADR 0013):
 * stalls of up to 6.6 s were measured on a starved machine (2 s intervals), and a hung loop is
 * judged dead this many intervals later than a crash.
 */
export const HANG_AFTER_INTERVALS = 2;

/** Extra claim rounds when the pool is full, one staleness window apart. */
export const POOL_EXHAUSTED_RETRIES = 1;

export const PROCESS_EXIT = Symbol('PROCESS_EXIT');
export type ProcessExit = (code: number) => void;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * The defender's cluster membership (seed 002 state machine): claims a stable ID, heartbeats,
 * watches the assignment map and keeps the set of owned chambers — releasing lost chambers (after
 * their in-flight work) before taking gained ones. On shutdown: stops intake, drains, removes its
 * heartbeat and releases the ID.
 */
@Injectable()
export class MembershipService implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(MembershipService.name);
  private readonly lifecycle = new DefenderLifecycle(Date.now);
  private readonly ownerId: string;
  /** Wall-clock start time, sent in heartbeats for people; uptime is measured on the monotonic clock. */
  private readonly startedAt = new Date().toISOString();
  private readonly startedMono = performance.now();
  /** When the current state was entered (monotonic ms). */
  private stateSince = this.startedMono;
  private buckets: ClusterBuckets | undefined;
  private registry: StableIdRegistry | undefined;
  private owned: string[] = [];
  private held: AssignmentMap | undefined;
  private applying: Promise<void> = Promise.resolve();
  private stopping = false;
  /** Aborted when the membership stops: the map is not watched again. */
  private readonly stopped = new AbortController();
  /** Writes the heartbeat off the main thread (ADR 0013); this thread only pulses it. */
  private heartbeatThread: HeartbeatThread | undefined;
  private pulseTimer: NodeJS.Timeout | undefined;
  private pulses = 0;
  private lastLoadReport: LoadReport | undefined;
  private recreating = false;
  private stopWatch: (() => void) | undefined;
  /** Keeps the map watch on the bucket that exists now (ADR 0007): checked every heartbeat. */
  private readonly mapWatch = new MapWatchGuard({
    identity: () => this.buckets?.assignments.identity() ?? Promise.reject(new Error('no buckets yet')),
    rewatch: (why) => {
      this.logger.warn({ msg: 'watching the assignment map again: only a newer map is applied', why });
      this.stopWatch?.();
    },
  });

  constructor(
    @Inject(DEFENDER_CONFIG) private readonly config: DefenderConfig,
    private readonly kv: ClusterKvService,
    private readonly health: HealthRegistry,
    @Inject(PROCESS_EXIT) private readonly exit: ProcessExit,
    private readonly identity: DefenderIdentity,
    @Optional() @Inject(CHAMBER_WORK) private readonly work: ChamberWork | null,
    private readonly metrics: DefenderMetricsObserver,
  ) {
    this.ownerId = config.POD_UID ?? randomUUID();
    this.metrics.stableId(-1);
    this.setState('INITIALIZATION');
    this.health.set('stable-id', false, 'not claimed yet');
    this.health.set('assignment', false, 'no assignment map applied yet');
  }

  /** The claimed ID, e.g. `defender-3`. */
  get defenderId(): string | undefined {
    return this.registry?.current?.defenderId;
  }
  get state(): DefenderState {
    return this.lifecycle.state;
  }
  get ownedChambers(): readonly string[] {
    return this.owned;
  }
  get mapVersion(): number {
    return this.held?.version ?? 0;
  }
  get uptimeSeconds(): number {
    return Math.round((performance.now() - this.startedMono) / 1000);
  }

  onApplicationBootstrap(): void {
    void this.run().catch((err: unknown) => this.fatal(EXIT_MEMBERSHIP_FAILED, 'membership failed', err));
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
    this.stopped.abort();
    const began = performance.now();
    const from = this.lifecycle.state;
    this.metrics.shutdownBegan(this.work?.inflight() ?? 0);
    this.setState('SHUTDOWN');
    this.stopWatch?.();
    await this.applying;
    // Heartbeats go on while runs drain (state SHUTDOWN): a draining defender is not a dead one.
    if (this.work) await this.work.drain(this.config.SHUTDOWN_DRAIN_TIMEOUT_SECONDS * 1000);
    if (this.pulseTimer) clearInterval(this.pulseTimer);
    const id = this.defenderId;
    if (this.heartbeatThread && id) {
      const { left, message } = await this.heartbeatThread.stop(true);
      if (left) {
        this.metrics.claimed(id, false);
        this.logger.log({ msg: 'released stable ID', defenderId: id, from });
      } else {
        // The claim then goes stale and is taken over after 3 intervals: slower, still correct.
        this.logger.warn({ msg: 'could not release stable ID on shutdown', defenderId: id, err: message });
      }
    }
    const metrics = await this.metrics.shutdownEnded((performance.now() - began) / 1000);
    this.logger.log({ msg: 'shutdown complete', defenderId: id, from, metrics });
  }

  private setState(s: DefenderState): void {
    const from = this.lifecycle.state;
    this.lifecycle.to(s);
    this.metrics.stateCode(this.lifecycle.code);
    if (from === s) return;
    const now = performance.now();
    this.metrics.transition(from, s, (now - this.stateSince) / 1000);
    this.stateSince = now;
  }

  private fatal(code: number, msg: string, err: unknown): void {
    if (this.stopping) return;
    this.logger.fatal({ msg, defenderId: this.defenderId, err: err instanceof Error ? err.message : String(err), exitCode: code });
    this.exit(code);
  }

  private async run(): Promise<void> {
    this.buckets = await this.retry('open KV buckets', () => this.kv.buckets(), () => this.metrics.initializationFailed());
    if (this.stopping) return;
    this.setState('CLAIMING_ID');
    const registry = new StableIdRegistry(
      this.buckets.stableIds,
      {
        maxDefenders: this.config.MAX_DEFENDERS,
        intervalSeconds: this.config.HEARTBEAT_INTERVAL_SECONDS,
        ownerId: this.ownerId,
        podName: this.config.POD_NAME,
      },
      this.buckets.stableIdsName,
    );
    this.registry = registry;
    let claim;
    for (let round = 0; ; round++) {
      try {
        claim = await this.retry('claim a stable ID', () => {
          this.metrics.claimAttempt();
          return registry.claim();
        });
        break;
      } catch (err) {
        if (!(err instanceof PoolExhaustedError)) throw err;
        if (round >= POOL_EXHAUSTED_RETRIES || this.stopping) {
          this.fatal(EXIT_POOL_EXHAUSTED, `stable-ID pool exhausted: ${err.message}; raise MAX_DEFENDERS or scale down`, err);
          return;
        }
        // claim() saw every holder refresh; a pod going away meanwhile frees or abandons an ID: look once more before giving up.
        const waitMs = (STALE_AFTER_INTERVALS + 1) * this.config.HEARTBEAT_INTERVAL_SECONDS * 1000;
        this.logger.warn({ msg: 'stable-ID pool full; waiting for a stale claim', waitMs });
        await sleep(waitMs);
      }
    }
    if (this.stopping) {
      await registry.release();
      return;
    }
    this.identity.set(claim.defenderId, claim.generation);
    this.metrics.stableId(claim.n);
    this.metrics.claimed(claim.defenderId, true);
    this.health.set('stable-id', true, claim.defenderId);
    this.logger.log({ msg: 'claimed stable ID', defenderId: claim.defenderId, how: claim.how, ownerId: this.ownerId });
    this.setState('FOLLOWER');
    await this.startHeartbeats(this.buckets, claim);
    await this.watchMap();
  }

  /** Retries `fn` while NATS is unavailable, with jittered backoff; other errors propagate. Each failure is reported to `failed`. */
  private retry<T>(what: string, fn: () => Promise<T>, failed?: () => void): Promise<T> {
    return retrying(fn, {
      what,
      baseMs: 200,
      maxMs: 5000,
      random: Math.random,
      onFailure: () => failed?.(),
      retryable: (err) => err instanceof NatsUnavailableError && !this.stopping,
      onRetry: (err, attempt, delayMs) => this.logger.warn({ msg: `${what}: NATS unavailable, retrying`, attempt, delayMs, err: (err as Error).message }),
    });
  }

  /** What the next heartbeats say; the measured load is taken once per interval (it closes its window). */
  private snapshot(): HeartbeatSnapshot {
    if (this.pulses % PULSES_PER_INTERVAL === 0 || this.lastLoadReport === undefined) this.lastLoadReport = this.work?.loadReport?.();
    return {
      schema: 1,
      defenderId: this.defenderId ?? '',
      podName: this.config.POD_NAME,
      podUid: this.config.POD_UID,
      state: this.lifecycle.state,
      mapVersionSeen: this.mapVersion,
      ...(this.held ? { mapTokenSeen: this.held.fencingToken } : {}),
      load: { chambers: this.owned.length, inflight: this.work?.inflight() ?? 0, processedTotal: this.work?.processedTotal() ?? 0 },
      ...(this.lastLoadReport ? { loadReport: this.lastLoadReport } : {}),
      capacity: this.config.DEFENDER_CAPACITY,
      intervalSeconds: this.config.HEARTBEAT_INTERVAL_SECONDS,
      startedAt: this.startedAt,
    };
  }

  /**
   * Hands the claim to the heartbeat thread (ADR 0013) and pulses it from a timer of this event
   * loop; resolves after the first beat's outcome (or one staleness window without one).
   */
  private async startHeartbeats(buckets: ClusterBuckets, claim: HeldClaim): Promise<void> {
    const intervalMs = this.config.HEARTBEAT_INTERVAL_SECONDS * 1000;
    const hangAfterMs = HANG_AFTER_INTERVALS * intervalMs;
    let first: () => void = () => undefined;
    const firstOutcome = new Promise<void>((resolve) => {
      first = resolve;
    });
    const c = this.config;
    this.heartbeatThread = new HeartbeatThread(
      {
        nats: {
          servers: c.NATS_SERVERS,
          name: `defender:${c.POD_NAME ?? process.pid}:heartbeat`,
          ...(c.NATS_USER !== undefined ? { user: c.NATS_USER } : {}),
          ...(c.NATS_PASSWORD !== undefined ? { pass: c.NATS_PASSWORD } : {}),
          ...(c.NATS_TOKEN !== undefined ? { token: c.NATS_TOKEN } : {}),
          ...(natsTlsFromEnv(c) ? { tls: natsClientTls(natsTlsFromEnv(c)) } : {}),
        },
        buckets: { stableIds: buckets.stableIdsName, heartbeats: c.NATS_KV_HEARTBEATS },
        registry: { maxDefenders: c.MAX_DEFENDERS, intervalSeconds: c.HEARTBEAT_INTERVAL_SECONDS, ownerId: this.ownerId, ...(c.POD_NAME ? { podName: c.POD_NAME } : {}) },
        claim,
        first: this.snapshot(),
        // A silence of HANG_AFTER_INTERVALS is a hung loop: judged dead that much later than a
        // crash, while a loop that turns at least every 4 intervals keeps beating (ADR 0013).
        hangAfterMs,
      },
      {
        beat: () => {
          first();
          // If NATS lost its store, the map bucket was created again with revisions from 1 and the
          // watch (an ordered consumer) would resume past them: watch again when it was.
          void this.mapWatch.check();
        },
        failed: (message) => {
          first();
          this.metrics.heartbeatFailed();
          this.mapWatch.natsFailed();
          // Keep working on owned chambers: their writes are fenced in the store.
          this.logger.warn({ msg: 'heartbeat failed', defenderId: this.defenderId, err: message });
          void this.recreateLostBuckets();
        },
        // We were judged dead (e.g. frozen) and our ID went to another process: stop at once.
        claimLost: (message) => this.fatal(EXIT_CLAIM_LOST, 'stable ID taken over by another process', new Error(message)),
        withheld: (silentMs) =>
          this.logger.warn({ msg: 'event loop silent past the hang limit: heartbeats were withheld', defenderId: this.defenderId, silentMs, hangAfterMs }),
        died: (err) => this.fatal(EXIT_MEMBERSHIP_FAILED, 'heartbeat thread failed', err),
      },
    );
    this.pulseTimer = setInterval(() => {
      this.pulses += 1;
      this.heartbeatThread?.pulse(this.snapshot());
    }, intervalMs / PULSES_PER_INTERVAL);
    let guard: NodeJS.Timeout | undefined;
    await Promise.race([firstOutcome, new Promise<void>((r) => (guard = setTimeout(r, STALE_AFTER_INTERVALS * intervalMs)))]);
    clearTimeout(guard);
  }

  /**
   * After a failed heartbeat: NATS may have lost its store (restarted empty). The buckets are created
   * again here, so the next heartbeat re-creates this defender's claim (same generation: a missing
   * claim was not taken over) and its heartbeat, and the map watch resumes (ADR 0007).
   */
  private async recreateLostBuckets(): Promise<void> {
    if (this.recreating) return;
    this.recreating = true;
    try {
      const created = await this.kv.recreateMissing();
      if (created.length > 0) this.logger.error({ msg: 'KV buckets were missing (NATS lost its store?): created again', buckets: created, defenderId: this.defenderId });
    } catch (err) {
      this.logger.warn({ msg: 'could not check the KV buckets', err: (err as Error).message });
    } finally {
      this.recreating = false;
    }
  }

  /** Watches the map for the membership's life: a watch that fails or ends is started again (ADR 0007). */
  private async watchMap(): Promise<void> {
    await supervise(
      async (healthy) => {
        const buckets = this.buckets;
        if (!buckets) return;
        await this.mapWatch.starting();
        const w = await buckets.assignments.watch(
          {
            onMap: (stored) => {
              healthy();
              this.applying = this.applying.then(() =>
                this.apply(stored).catch((err: unknown) =>
                  // Owned set and processing could disagree now: restart and re-apply from scratch.
                  this.fatal(EXIT_MEMBERSHIP_FAILED, 'could not apply the assignment map', err),
                ),
              );
              return this.applying;
            },
            onRejected: (revision, reason) => {
              this.metrics.mapRejected();
              this.logger.warn({ msg: 'assignment map ignored', revision, reason });
            },
          },
          this.held,
          // Only the chunks holding our chambers (ADR 0009); the whole map when we are its lowest defender.
          this.defenderId ? defenderMapScope(this.defenderId) : undefined,
        );
        this.stopWatch = () => w.stop();
        await w.done;
      },
      {
        baseMs: 200,
        maxMs: 5000,
        random: Math.random,
        signal: this.stopped.signal,
        onFailure: (err) => this.logger.warn({ msg: 'assignment watch failed; re-watching', err: (err as Error).message }),
      },
    );
  }

  private async apply(stored: StoredMap): Promise<void> {
    if (this.stopping) return;
    const id = this.defenderId;
    if (!id) return;
    const started = process.hrtime.bigint();
    const next = ownedChambers(stored.map, id);
    const { added, removed } = diffOwnership(this.owned, next);
    try {
      // Lost chambers first, so their in-flight work is finished (or fenced) before anyone else's.
      if (removed.length > 0) await this.work?.release(removed);
      this.owned = this.owned.filter((c) => !removed.includes(c));
      if (added.length > 0) await this.work?.acquire(added, stored.map.version);
      this.owned = next;
      this.work?.mapApplied?.(next, stored.map.version);
    } catch (err) {
      this.metrics.assignmentFailed();
      this.logger.error({ msg: 'applying the assignment map failed', version: stored.map.version, err: (err as Error).message });
      throw err;
    }
    this.held = stored.map;
    // A map read for us alone lists only our chambers: it was read so because we are not the lowest defender.
    this.identity.setMap(new Set(Object.keys(stored.map.assignments)), stored.owner === undefined ? lowestDefenderId(stored.map.defenderInfo) : undefined);
    this.metrics.assignmentApplied({
      version: stored.map.version,
      added: added.length,
      removed: removed.length,
      owned: next.length,
      seconds: Number(process.hrtime.bigint() - started) / 1e9,
    });
    if (this.lifecycle.state === 'FOLLOWER') this.setState('STABLE');
    this.health.set('assignment', true, `map v${stored.map.version}`);
    this.logger.log({
      msg: 'assignment applied',
      defenderId: id,
      version: stored.map.version,
      revision: stored.revision,
      chambers: next.length,
      mapScope: stored.owner === undefined ? 'whole' : 'own chunks',
      added: added.length,
      removed: removed.length,
      clusterState: stored.map.state,
    });
  }
}
