import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { AssignmentResult, TriggerDecision } from '@defender/assignment';
import type { AssignmentMap } from '@defender/contracts';
import { ElectionClient, electionClientOptionsFromEnv, LeaderElection, LeadershipTerm } from '@defender/election';
import { ClusterKvService, StoreService } from '@defender/nest-common';
import { ControllerSettings } from '../controller-env';
import { CONTROLLER_SETTINGS } from '../tokens';
import { ControllerEngine, EngineObserver } from '../engine/controller-engine';
import { LeadershipMetricsObserver, type LeadershipObserver } from './leadership-metrics-observer';

/** Exit code when the controller cannot go on (Kubernetes restarts it). */
export const EXIT_CONTROLLER_FAILED = 5;

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

/**
 * Campaigns through the election agents; while leader, runs one {@link ControllerEngine} per term
 * and stops it the moment the term ends. Standbys keep their NATS, store and agent connections hot.
 */
/**
 * How often the leader reads the heartbeats: four times per heartbeat interval. A heartbeat's age
 * is timed from when the leader first sees its new revision, so reading once per interval could
 * add a whole interval to crash detection (6 s + 2 s at the defaults: the 8 s takeover target
 * with nothing left for the takeover itself); a quarter interval keeps detection within 3 missed
 * heartbeats + two polls (seeing the last heartbeat late, then the threshold): <= 7 s at the
 * defaults. A read is one stream-info request and one direct get per defender.
 */
export const LIVENESS_POLLS_PER_INTERVAL = 4;

/** The leader's poll period for a heartbeat interval in seconds (ms, at least 100). */
export function livenessPollMs(heartbeatIntervalSeconds: number): number {
  return Math.max(100, (heartbeatIntervalSeconds * 1000) / LIVENESS_POLLS_PER_INTERVAL);
}

@Injectable()
export class LeadershipService implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(LeadershipService.name);
  readonly controllerId: string;
  private election: LeaderElection | undefined;
  private client: ElectionClient | undefined;
  private engine: ControllerEngine | undefined;
  private term: LeadershipTerm | undefined;
  private stopping = false;
  private lastMap: AssignmentMap | undefined;
  private electionWarnedAt = Number.NEGATIVE_INFINITY;
  private electionFailures = 0;

  constructor(
    @Inject(CONTROLLER_SETTINGS) private readonly config: ControllerSettings,
    private readonly kv: ClusterKvService,
    private readonly store: StoreService,
    @Inject(LeadershipMetricsObserver) private readonly metrics: LeadershipObserver,
  ) {
    this.controllerId = config.POD_NAME ?? `${hostname()}:${process.pid}`;
  }

  /** The engine of the current term, if leader. */
  get current(): { term: LeadershipTerm; engine: ControllerEngine } | undefined {
    return this.term && this.engine ? { term: this.term, engine: this.engine } : undefined;
  }
  get isLeader(): boolean {
    return this.election?.isLeader() ?? false;
  }
  /** The last map this process published (for /api/v1/assignments on a leader). */
  get publishedMap(): AssignmentMap | undefined {
    return this.engine?.map ?? this.lastMap;
  }

  onApplicationBootstrap(): void {
    void this.start().catch((err: unknown) => this.fatal('could not start campaigning', err));
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.stopping = true;
    this.engine?.stop();
    // Steps down and releases the lease so a standby takes over at once.
    await this.election?.stop();
    this.client?.close();
  }

  private fatal(msg: string, err: unknown): void {
    if (this.stopping) return;
    this.logger.fatal({ msg, err: err instanceof Error ? err.message : String(err) });
    setImmediate(() => process.exit(EXIT_CONTROLLER_FAILED));
  }

  private async start(): Promise<void> {
    // A leader that cannot reach NATS or the store could not do its job: wait for both first.
    await Promise.all([this.kv.buckets(), this.store.ready()]);
    if (this.stopping) return;
    this.client = new ElectionClient(
      electionClientOptionsFromEnv(this.config, { protoRoots: [join(__dirname, 'proto')] }),
    );
    this.election = new LeaderElection({
      transport: this.client,
      election: this.config.ELECTION_NAME,
      candidate: this.controllerId,
      ttlMs: this.config.ELECTION_TTL_SECONDS * 1000,
      // A new term's token must outrank the newest map's and every token a defender holds: if every
      // agent lost its memory with the election bucket (NATS restarted empty), tokens would restart
      // at 1 and defenders would refuse every map of the new leader (ADR 0007).
      // Each source counts when it can be read (after NATS lost its store the map bucket may not
      // exist yet while the heartbeats already do).
      minToken: async () => {
        const buckets = await this.kv.buckets();
        const [stored, beats] = await Promise.allSettled([buckets.assignments.read(), buckets.heartbeats.readAll()]);
        const tokens = [this.publishedMap?.fencingToken];
        if (stored.status === 'fulfilled') tokens.push(stored.value?.map.fencingToken);
        if (beats.status === 'fulfilled') tokens.push(...beats.value.heartbeats.map((h) => h.heartbeat.mapTokenSeen));
        return Math.max(0, ...tokens.map((t) => Number(t ?? 0)));
      },
      onElected: (term) => this.elected(term),
      onDeposed: (term, reason) => this.deposed(term, reason),
      onError: (err) => this.electionFailed(err),
    });
    this.election.start();
    this.metrics.campaignStarted();
    this.logger.log({ msg: 'campaigning', election: this.config.ELECTION_NAME, candidate: this.controllerId, agents: this.config.ELECTION_AGENT_ADDR });
  }

  /**
   * An election call failed (agents unreachable, their bucket lost, ...): a controller that cannot
   * campaign never leads, so this is a warning, not debug; repeats are summarised every 30 s.
   */
  private electionFailed(err: Error): void {
    const now = performance.now();
    if (now - this.electionWarnedAt < 30_000) {
      this.electionFailures++;
      return;
    }
    this.logger.warn({ msg: 'election call failed', err: err.message, failedSinceLastWarning: this.electionFailures });
    this.electionWarnedAt = now;
    this.electionFailures = 0;
  }

  private elected(term: LeadershipTerm): void {
    this.term = term;
    this.metrics.becameLeader();
    this.logger.log({ msg: 'elected leader', epoch: term.fencingToken, controllerId: this.controllerId });
    void this.runTerm(term).catch((err: unknown) => this.fatal('controller engine failed', err));
  }

  private deposed(term: LeadershipTerm, reason: string): void {
    if (this.term?.fencingToken === term.fencingToken) {
      this.engine?.stop();
      this.term = undefined;
    }
    this.metrics.leadershipLost();
    this.logger.warn({ msg: 'no longer leader', epoch: term.fencingToken, reason });
  }

  private async runTerm(term: LeadershipTerm): Promise<void> {
    const buckets = await this.kv.buckets();
    const store = await this.store.ready();
    const election = this.election;
    if (!election) return;
    const cfg = this.config;
    const engine = new ControllerEngine(
      {
        fencingToken: String(term.fencingToken),
        isLeader: () => election.currentTerm()?.fencingToken === term.fencingToken,
      },
      {
        controllerId: this.controllerId,
        trigger: {
          heartbeatIntervalMs: cfg.HEARTBEAT_INTERVAL_SECONDS * 1000,
          coldStartWindowMs: cfg.COLD_START_WINDOW_SECONDS * 1000,
          scaleWindowMs: cfg.SCALE_WINDOW_SECONDS * 1000,
          maxBatchWaitMs: Math.max(cfg.MAX_BATCH_WAIT_SECONDS, cfg.COLD_START_WINDOW_SECONDS, cfg.SCALE_WINDOW_SECONDS) * 1000,
        },
        strategy: cfg.ASSIGNMENT_STRATEGY,
        tolerance: cfg.WEIGHT_REBALANCE_THRESHOLD,
        cooldownMs: cfg.REBALANCE_COOLDOWN_SECONDS * 1000,
        ...(cfg.MAX_CHAMBERS_PER_DEFENDER > 0 ? { maxChambersPerDefender: cfg.MAX_CHAMBERS_PER_DEFENDER } : {}),
        vnodes: cfg.ASSIGNMENT_VNODE_COUNT,
        chamberRefreshMs: cfg.WEIGHT_CACHE_TTL_SECONDS * 1000,
        // Balance measured load, not samples per run (ADR 0008).
        ...(cfg.ASSIGNMENT_BALANCE_BY === 'load'
          ? { loadBalancing: { policy: { driftBand: Math.max(cfg.LOAD_DRIFT_BAND, cfg.WEIGHT_REBALANCE_THRESHOLD), sustainMs: cfg.LOAD_DRIFT_SUSTAIN_SECONDS * 1000, cooldownMs: cfg.LOAD_REBALANCE_COOLDOWN_SECONDS * 1000, settleMs: cfg.POST_CRASH_SETTLE_SECONDS * 1000 } } }
          : {}),
      },
      {
        maps: {
          read: () => buckets.assignments.read(),
          lastRevision: () => buckets.assignments.lastRevision(),
          publish: async (map, expected) => {
            const p = await buckets.assignments.publishMeasured(map, expected);
            this.metrics.mapWritten({ totalBytes: p.bytes, largestValueBytes: p.maxValueBytes, durationMs: p.ms });
            return p.revision;
          },
        },
        heartbeats: buckets.heartbeats,
        chambers: {
          list: async () =>
            (await store.chamberMetadata.list()).map((m) => ({ key: `${m.toolId}:${m.chamberId}`, weight: m.weight })),
        },
        now: Date.now,
        monotonic: () => performance.now(),
        sleep,
        observer: this.observer(),
      },
    );
    this.engine = engine;
    this.metrics.engineStarted();
    // The leader keeps chamber weights current from observed runs (seed 000: every 24 h).
    const weights = setInterval(() => {
      if (!election.isLeader()) return;
      store.chamberMetadata.recomputeWeights(new Date()).then(
        (s) => this.logger.log({ msg: 'chamber weights recomputed', updated: s.updated, unchanged: s.unchanged, observedChambers: s.observedChambers }),
        (err: unknown) => this.logger.warn({ msg: 'weight recompute failed; next interval retries', err: (err as Error).message }),
      );
    }, cfg.WEIGHT_UPDATE_INTERVAL_SECONDS * 1000);
    weights.unref();
    const reason = await engine.run(livenessPollMs(cfg.HEARTBEAT_INTERVAL_SECONDS)).finally(() => clearInterval(weights));
    this.lastMap = engine.map;
    this.logger.log({ msg: 'term ended', epoch: term.fencingToken, reason });
  }

  private observer(): EngineObserver {
    return {
      decision: (d: TriggerDecision, active: number) => {
        this.metrics.triggerDecision(d, active, this.engine?.map);
        if (d.action === 'wait') this.logger.debug({ msg: 'batching topology changes', trigger: d.trigger, deadline: this.engine?.wallTimeOf(d.deadline).toISOString() });
      },
      published: (map: AssignmentMap, result: AssignmentResult | null, why: string) => {
        this.metrics.mapPublished(map, result, why);
        const s = map.statistics;
        this.logger.log({
          msg: 'published assignment map',
          version: map.version,
          epoch: map.fencingToken,
          trigger: why,
          lifecycle: map.lifecycleState,
          defenders: map.defenderCount,
          chambers: map.chamberCount,
          chambersMoved: s.chambersMoved,
          movedWeightFraction: Number(s.movedWeightFraction.toFixed(4)),
          floorFraction: Number(s.floorFraction.toFixed(4)),
          calculationMs: Number(s.calculationDurationMs.toFixed(3)),
        });
      },
      error: (what: string, err: unknown) => {
        if ((err as Error).name === 'RevisionConflictError') this.metrics.publishConflict();
        this.logger.warn({ msg: `${what} failed`, err: (err as Error).message });
        // NATS may have lost its store: the leader creates the buckets it needs again (ADR 0007).
        if ((err as { retryable?: unknown }).retryable === true) {
          this.kv.recreateMissing().then(
            (created) => {
              if (created.length > 0) this.logger.error({ msg: 'KV buckets were missing (NATS lost its store?): created again', buckets: created });
            },
            (e: unknown) => this.logger.warn({ msg: 'could not check the KV buckets', err: (e as Error).message }),
          );
        }
      },
      stopped: (reason: string) => this.logger.warn({ msg: 'controller engine stopped', reason }),
    };
  }
}
