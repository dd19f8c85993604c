import type { LoggerService } from '@nestjs/common';
import type { AssignmentResult, TriggerDecision } from '@defender/assignment';
import type { AssignmentMap, ChamberMetadataRepository } from '@defender/contracts';
import type { LeadershipTerm } from '@defender/election';
import type { AssignmentMapBucket } from '@defender/nats-kv';
import type { ControllerSettings } from '../controller-env';
import { ControllerEngine, type EngineConfig, type EngineObserver } from '../engine/controller-engine';
import type { HeartbeatPort } from '../engine/ports';
import type { LeadershipObserver } from './leadership-metrics-observer';

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

/** Repeated election-call failures are summarised once per this many ms (monotonic). */
export const ELECTION_WARNING_INTERVAL_MS = 30_000;

/** The engine's configuration from the controller's settings. */
export function engineConfigOf(cfg: ControllerSettings, controllerId: string): EngineConfig {
  return {
    controllerId,
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
      ? {
          loadBalancing: {
            policy: {
              driftBand: Math.max(cfg.LOAD_DRIFT_BAND, cfg.WEIGHT_REBALANCE_THRESHOLD),
              sustainMs: cfg.LOAD_DRIFT_SUSTAIN_SECONDS * 1000,
              cooldownMs: cfg.LOAD_REBALANCE_COOLDOWN_SECONDS * 1000,
              settleMs: cfg.POST_CRASH_SETTLE_SECONDS * 1000,
            },
          },
        }
      : {}),
  };
}

/** What the election calls back (LeaderElection's options of the same names). */
export interface ElectionHooks {
  /** The floor for a new term's fencing token (ADR 0007). */
  minToken(): Promise<number>;
  onElected(term: LeadershipTerm): void;
  onDeposed(term: LeadershipTerm, reason: string): void;
  onError(err: Error): void;
}

/** The leader election as the orchestration drives it (LeaderElection over an ElectionClient in production). */
export interface ElectionPort {
  start(): void;
  /** Steps down, releases the lease so a standby takes over at once, and closes the transport. */
  stop(): Promise<void>;
  isLeader(): boolean;
  currentTerm(): LeadershipTerm | undefined;
}

/** The cluster's KV buckets a leader reads and writes (ClusterKvService's buckets in production). */
export interface LeaderBuckets {
  readonly assignments: Pick<AssignmentMapBucket, 'read' | 'lastRevision' | 'publishMeasured'>;
  readonly heartbeats: HeartbeatPort;
}

/** What the orchestration needs; the Nest shell passes the real services, tests pass fakes. */
export interface LeadershipDeps {
  readonly settings: ControllerSettings;
  readonly controllerId: string;
  /** The KV buckets once NATS is up (opened once, then the same). */
  buckets(): Promise<LeaderBuckets>;
  /** Creates the buckets NATS lost with its store; the names created (ADR 0007). */
  recreateMissingBuckets(): Promise<string[]>;
  /** The store's chamber metadata once the store is ready. */
  chamberMetadata(): Promise<Pick<ChamberMetadataRepository, 'list' | 'recomputeWeights'>>;
  /** Creates the election (not started) that calls `hooks`. */
  election(hooks: ElectionHooks): ElectionPort;
  readonly observer: LeadershipObserver;
  readonly logger: Pick<LoggerService, 'log' | 'warn' | 'error' | 'debug'>;
  /** Wall clock, Unix ms (times written into maps, the weight recompute's `now`). */
  readonly now: () => number;
  /** Monotonic clock, ms (the engine's windows and ages, the election warning interval). */
  readonly monotonic: () => number;
  readonly sleep: (ms: number, wake: AbortSignal) => Promise<void>;
  /** Runs `fn` every `ms` until the returned function is called. */
  readonly every: (ms: number, fn: () => void) => () => void;
  /** The controller cannot go on (not called once stopping). */
  readonly fatal: (msg: string, err: unknown) => void;
}

/**
 * Campaigns through the election agents; while leader, runs one {@link ControllerEngine} per term
 * and stops it the moment the term ends. Standbys keep their NATS, store and agent connections hot.
 * Events go to the {@link LeadershipObserver}; clocks, timers and connections come in as deps.
 */
export class LeadershipOrchestrator {
  private election: ElectionPort | undefined;
  private engine: ControllerEngine | undefined;
  private term: LeadershipTerm | undefined;
  private stopping = false;
  private lastMap: AssignmentMap | undefined;
  private electionWarnedAt = Number.NEGATIVE_INFINITY;
  private electionFailures = 0;

  constructor(private readonly deps: LeadershipDeps) {}

  /** The engine of the current term, if leader. */
  get current(): { term: LeadershipTerm; engine: ControllerEngine } | undefined {
    return this.term && this.engine ? { term: this.term, engine: this.engine } : undefined;
  }
  get isLeader(): boolean {
    return this.election?.isLeader() ?? false;
  }
  /** The last map this process published. */
  get publishedMap(): AssignmentMap | undefined {
    return this.engine?.map ?? this.lastMap;
  }

  /** Waits for NATS and the store (a leader without them could not do its job), then campaigns. */
  async start(): Promise<void> {
    await Promise.all([this.deps.buckets(), this.deps.chamberMetadata()]);
    if (this.stopping) return;
    this.election = this.deps.election({
      minToken: () => this.minToken(),
      onElected: (term) => this.elected(term),
      onDeposed: (term, reason) => this.deposed(term, reason),
      onError: (err) => this.electionFailed(err),
    });
    this.election.start();
    this.deps.observer.campaignStarted();
    const { settings, controllerId } = this.deps;
    this.deps.logger.log({ msg: 'campaigning', election: settings.ELECTION_NAME, candidate: controllerId, agents: settings.ELECTION_AGENT_ADDR });
  }

  /** Stops the engine and steps down. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.engine?.stop();
    await this.election?.stop();
  }

  /**
   * A new term's token must outrank the newest map's and every token a defender holds: if every
   * agent lost its memory with the election bucket (NATS restarted empty), tokens would restart
   * at 1 and defenders would refuse every map of the new leader (ADR 0007). Each source counts
   * when it can be read (after NATS lost its store the map bucket may not exist yet while the
   * heartbeats already do).
   */
  private async minToken(): Promise<number> {
    const buckets = await this.deps.buckets();
    const [stored, beats] = await Promise.allSettled([buckets.assignments.read(), buckets.heartbeats.readAll()]);
    const tokens = [this.publishedMap?.fencingToken];
    if (stored.status === 'fulfilled') tokens.push(stored.value?.map.fencingToken);
    if (beats.status === 'fulfilled') tokens.push(...beats.value.heartbeats.map((h) => h.heartbeat.mapTokenSeen));
    return Math.max(0, ...tokens.map((t) => Number(t ?? 0)));
  }

  private fail(msg: string, err: unknown): void {
    if (!this.stopping) this.deps.fatal(msg, err);
  }

  /**
   * An election call failed (agents unreachable, their bucket lost, ...): a controller that cannot
   * campaign never leads, so this is a warning, not debug; repeats are summarised every 30 s.
   */
  private electionFailed(err: Error): void {
    const now = this.deps.monotonic();
    if (now - this.electionWarnedAt < ELECTION_WARNING_INTERVAL_MS) {
      this.electionFailures++;
      return;
    }
    this.deps.logger.warn({ msg: 'election call failed', err: err.message, failedSinceLastWarning: this.electionFailures });
    this.electionWarnedAt = now;
    this.electionFailures = 0;
  }

  private elected(term: LeadershipTerm): void {
    this.term = term;
    this.deps.observer.becameLeader();
    this.deps.logger.log({ msg: 'elected leader', epoch: term.fencingToken, controllerId: this.deps.controllerId });
    void this.runTerm(term).catch((err: unknown) => this.fail('controller engine failed', err));
  }

  private deposed(term: LeadershipTerm, reason: string): void {
    if (this.term?.fencingToken === term.fencingToken) {
      this.engine?.stop();
      this.term = undefined;
    }
    this.deps.observer.leadershipLost();
    this.deps.logger.warn({ msg: 'no longer leader', epoch: term.fencingToken, reason });
  }

  private async runTerm(term: LeadershipTerm): Promise<void> {
    const { deps } = this;
    const buckets = await deps.buckets();
    const chambers = await deps.chamberMetadata();
    const election = this.election;
    if (!election) return;
    const engine = new ControllerEngine(
      {
        fencingToken: String(term.fencingToken),
        isLeader: () => election.currentTerm()?.fencingToken === term.fencingToken,
      },
      engineConfigOf(deps.settings, deps.controllerId),
      {
        maps: {
          read: () => buckets.assignments.read(),
          lastRevision: () => buckets.assignments.lastRevision(),
          publish: async (map, expected) => {
            const p = await buckets.assignments.publishMeasured(map, expected);
            deps.observer.mapWritten({ totalBytes: p.bytes, largestValueBytes: p.maxValueBytes, durationMs: p.ms });
            return p.revision;
          },
        },
        heartbeats: buckets.heartbeats,
        chambers: {
          list: async () => (await chambers.list()).map((m) => ({ key: `${m.toolId}:${m.chamberId}`, weight: m.weight })),
        },
        now: deps.now,
        monotonic: deps.monotonic,
        sleep: deps.sleep,
        observer: this.engineObserver(),
      },
    );
    this.engine = engine;
    deps.observer.engineStarted();
    // The leader keeps chamber weights current from observed runs (seed 000: every 24 h).
    const stopWeights = deps.every(deps.settings.WEIGHT_UPDATE_INTERVAL_SECONDS * 1000, () => {
      if (!election.isLeader()) return;
      chambers.recomputeWeights(new Date(deps.now())).then(
        (s) => deps.logger.log({ msg: 'chamber weights recomputed', updated: s.updated, unchanged: s.unchanged, observedChambers: s.observedChambers }),
        (err: unknown) => deps.logger.warn({ msg: 'weight recompute failed; next interval retries', err: (err as Error).message }),
      );
    });
    const reason = await engine.run(livenessPollMs(deps.settings.HEARTBEAT_INTERVAL_SECONDS)).finally(stopWeights);
    this.lastMap = engine.map;
    deps.logger.log({ msg: 'term ended', epoch: term.fencingToken, reason });
  }

  private engineObserver(): EngineObserver {
    const { observer, logger } = this.deps;
    return {
      decision: (d: TriggerDecision, active: number) => {
        observer.triggerDecision(d, active, this.engine?.map);
        if (d.action === 'wait') logger.debug?.({ msg: 'batching topology changes', trigger: d.trigger, deadline: this.engine?.wallTimeOf(d.deadline).toISOString() });
      },
      published: (map: AssignmentMap, result: AssignmentResult | null, why: string) => {
        observer.mapPublished(map, result, why);
        const s = map.statistics;
        logger.log({
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
        if ((err as Error).name === 'RevisionConflictError') observer.publishConflict();
        logger.warn({ msg: `${what} failed`, err: (err as Error).message });
        // NATS may have lost its store: the leader creates the buckets it needs again (ADR 0007).
        if ((err as { retryable?: unknown }).retryable === true) {
          this.deps.recreateMissingBuckets().then(
            (created) => {
              if (created.length > 0) logger.error({ msg: 'KV buckets were missing (NATS lost its store?): created again', buckets: created });
            },
            (e: unknown) => logger.warn({ msg: 'could not check the KV buckets', err: (e as Error).message }),
          );
        }
      },
      blind: (ms: number) =>
        logger.warn({ msg: 'heartbeats readable again: the time they could not be read aged no defender', blindMs: Math.round(ms) }),
      stopped: (reason: string) => logger.warn({ msg: 'controller engine stopped', reason }),
    };
  }
}
