import {
  AssignmentOptions,
  AssignmentResult,
  AssignmentStrategyName,
  AssignmentTrigger,
  balanceOf,
  BalanceReport,
  ChamberInput,
  computeAssignment,
  CostModel,
  RebalanceAdvice,
  RebalancePolicy,
  RebalancePolicyConfig,
  RecomputeDecision,
  TriggerConfig,
  TriggerDecision,
} from '@defender/assignment';
import { backoffDelayMs } from '@defender/backoff';
import { AssignmentMap, InvalidMessageError } from '@defender/contracts';
import { buildAssignmentMap, HeartbeatClock } from '@defender/membership';
import { NatsUnavailableError, RevisionConflictError, StoredMap } from '@defender/nats-kv';
import { LoadBook } from './load-book';
import { ChamberSource, HeartbeatPort, MapPort, TermPort } from './ports';

/** Balancing by measured load (ADR 0008) instead of samples per run. */
export interface LoadBalancingConfig {
  /** Drift band, sustain time, cooldown, post-crash settle time (the tolerance is the engine's). */
  readonly policy?: Partial<Omit<RebalancePolicyConfig, 'tolerance'>>;
  /** Cost model until defenders have calibrated theirs (default: ADR 0008's). */
  readonly prior?: CostModel;
  /** Run rate of a chamber while no chamber has been measured (default: ADR 0008's). */
  readonly priorRunsPerHour?: number;
}

/** Settings of the engine (from the controller's environment). */
export interface EngineConfig {
  readonly controllerId: string;
  readonly trigger: Partial<TriggerConfig>;
  readonly strategy: AssignmentStrategyName;
  readonly tolerance: number;
  readonly cooldownMs: number;
  readonly maxChambersPerDefender?: number;
  readonly vnodes: number;
  /** How often the chamber list is re-read to notice new or removed chambers, ms. */
  readonly chamberRefreshMs: number;
  /**
   * When set, chambers are weighted by expected CPU (run rate x (fixed + per-sample cost)) from the
   * defenders' measurements, and load drift and a crash's leftover imbalance are rebalanced by
   * {@link RebalancePolicy}. Without it the weight is samples per run, as in the seeds.
   */
  readonly loadBalancing?: LoadBalancingConfig;
}

/** What the engine reports (metrics, logs). */
export interface EngineObserver {
  decision?(d: TriggerDecision, activeDefenders: number): void;
  published?(map: AssignmentMap, result: AssignmentResult | null, why: string): void;
  error?(what: string, err: unknown): void;
  /** The heartbeats could be read again after `ms` of failed reads; that time aged no defender. */
  blind?(ms: number): void;
  stopped?(reason: string): void;
}

export interface EngineDeps {
  readonly maps: MapPort;
  readonly heartbeats: HeartbeatPort;
  readonly chambers: ChamberSource;
  /**
   * Wall clock, Unix ms: only for times written into the map (`timestamp`, `firstAssignmentAt`,
   * `lastMovedAt`). Never used to judge liveness or to time a window, so a clock step moves nothing.
   */
  readonly now: () => number;
  /**
   * Monotonic clock, ms (`performance.now`): heartbeat ageing, the trigger's windows and deadlines,
   * the chamber-list refresh.
   */
  readonly monotonic: () => number;
  readonly sleep: (ms: number, wake: AbortSignal) => Promise<void>;
  /** Uniform [0, 1) for the jitter of retries while NATS or the store is unavailable. Default `Math.random`. */
  readonly random?: () => number;
  readonly observer?: EngineObserver;
}

/** Thrown inside the loop when this process must stop acting as leader. */
class DeposedError extends Error {
  override readonly name = 'DeposedError';
}

/**
 * One leader term of the assignment controller: takes over the map (republishing it under this
 * term's fencing token, so a deposed leader's compare-and-set can no longer succeed), then every
 * heartbeat interval reads the heartbeats, asks the trigger state machine what to do and, when it
 * says so, computes and publishes a new map by compare-and-set. Stops at once when the term ends.
 */
export class ControllerEngine {
  private readonly stopper = new AbortController();
  private current: StoredMap | null = null;
  private revision = 0;
  private trigger: AssignmentTrigger | undefined;
  private readonly clock = new HeartbeatClock();
  /** Since when (monotonic ms) the heartbeats could not be read; undefined while they can. */
  private blindSince: number | undefined;
  /** The chamber list as the source gives it (weight: samples per run). */
  private chamberList: ChamberInput[] = [];
  private readonly loadBook: LoadBook | undefined;
  private readonly policy: RebalancePolicy | undefined;
  private lastBalance: BalanceReport | undefined;
  private lastAdvice: RebalanceAdvice | undefined;
  private loadCheckedAt = Number.NEGATIVE_INFINITY;
  private chambersReadAt = Number.NEGATIVE_INFINITY;
  private lastDecision: TriggerDecision | undefined;
  private active = 0;
  /**
   * The highest map version this term has seen: in the bucket, published, or held by a defender
   * (its heartbeat's `mapVersionSeen`). A map bucket NATS lost and created again starts empty:
   * the next map is numbered above all of these, so defenders (who accept only newer maps) take it
   * and owner epochs keep growing (ADR 0007).
   */
  private versionSeen = 0;

  constructor(
    private readonly term: TermPort,
    private readonly config: EngineConfig,
    private readonly deps: EngineDeps,
  ) {
    const lb = config.loadBalancing;
    if (lb) {
      this.loadBook = new LoadBook(lb.prior, lb.priorRunsPerHour);
      this.policy = new RebalancePolicy({ ...lb.policy, tolerance: config.tolerance });
    }
  }

  /**
   * Per-defender load (CPU µs per hour under the load model) of the published map at the last
   * stable tick, against its target; undefined without load balancing.
   */
  get loadBalance(): BalanceReport | undefined {
    return this.lastBalance;
  }
  get rebalanceAdvice(): RebalanceAdvice | undefined {
    return this.lastAdvice;
  }
  /** Process CPU per defender as last reported (ms per second). */
  cpuByDefender(): Record<string, number> {
    return this.loadBook?.cpuByDefender() ?? {};
  }

  get map(): AssignmentMap | undefined {
    return this.current?.map;
  }
  get decision(): TriggerDecision | undefined {
    return this.lastDecision;
  }
  get activeDefenders(): number {
    return this.active;
  }
  get lifecycle(): string | undefined {
    return this.trigger?.lifecycle;
  }

  stop(): void {
    this.stopper.abort();
  }

  /** The wall-clock time of a monotonic instant (a decision's `deadline`), for people to read. */
  wallTimeOf(monotonicMs: number): Date {
    return new Date(this.deps.now() + (monotonicMs - this.deps.monotonic()));
  }

  /** Runs until the term ends or {@link stop}; resolves with the reason. */
  async run(heartbeatIntervalMs: number): Promise<string> {
    const signal = this.stopper.signal;
    try {
      await this.retrying('take over the map', () => this.takeOver());
      while (!signal.aborted) {
        this.ensureLeader();
        const d = await this.retrying('observe the cluster', () => this.tick());
        const waitMs = d.action === 'wait' ? Math.max(0, Math.min(heartbeatIntervalMs, d.deadline - this.deps.monotonic())) : heartbeatIntervalMs;
        await this.deps.sleep(waitMs, signal);
      }
      return 'stopped';
    } catch (err) {
      if (err instanceof DeposedError) {
        this.deps.observer?.stopped?.(err.message);
        return err.message;
      }
      throw err;
    }
  }

  private noteVersion(version: number): void {
    if (version > this.versionSeen) this.versionSeen = version;
  }

  private ensureLeader(): void {
    if (this.stopper.signal.aborted) throw new DeposedError('stopped');
    if (!this.term.isLeader()) throw new DeposedError('term ended');
  }

  /** Retries `fn` while NATS or the store is unavailable (publishing nothing meanwhile). */
  private async retrying<T>(what: string, fn: () => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      this.ensureLeader();
      try {
        return await fn();
      } catch (err) {
        const retryable = err instanceof NatsUnavailableError || (err as { retryable?: unknown }).retryable === true;
        if (!retryable) throw err;
        this.deps.observer?.error?.(what, err);
        await this.deps.sleep(backoffDelayMs(attempt, { baseMs: 100, maxMs: 2000, random: this.deps.random ?? Math.random }), this.stopper.signal);
      }
    }
  }

  private async readMap(): Promise<void> {
    try {
      const stored = await this.deps.maps.read();
      if (!stored && this.current) {
        // The map is gone (its bucket lost and created again): keep ours as the base of the next
        // one (sticky), and write it by create, numbered above every version seen.
        this.deps.observer?.error?.('read the map', new Error(`assignment map missing (bucket recreated?): next map above v${this.versionSeen}`));
        this.current = { map: this.current.map, revision: 0 };
        this.revision = 0;
        return;
      }
      this.current = stored;
      this.revision = this.current?.revision ?? 0;
      this.noteVersion(this.current?.map.version ?? 0);
    } catch (err) {
      if (!(err instanceof InvalidMessageError)) throw err;
      // An unreadable map: start over as in a cold start, but write over it by compare-and-set.
      this.deps.observer?.error?.('read the map', err);
      this.current = null;
      this.revision = await this.deps.maps.lastRevision();
    }
  }

  private async takeOver(): Promise<void> {
    for (;;) {
      await this.readMap();
      const held = this.current?.map;
      if (held && BigInt(held.fencingToken) > BigInt(this.term.fencingToken)) {
        throw new DeposedError(`a newer term (token ${held.fencingToken}) already published`);
      }
      this.trigger = new AssignmentTrigger(
        held ? { lifecycle: held.lifecycleState, defenderIds: Object.keys(held.defenderInfo) } : null,
        this.config.trigger,
      );
      if (!held || held.fencingToken === this.term.fencingToken) return;
      // Re-stamp the current map with our token: from now on only this term can publish.
      const map: AssignmentMap = {
        ...held,
        version: Math.max(held.version, this.versionSeen) + 1,
        timestamp: new Date(this.deps.now()).toISOString(),
        fencingToken: this.term.fencingToken,
        controllerId: this.config.controllerId,
        trigger: 'takeover',
        statistics: { ...held.statistics, chambersMoved: 0, movedWeight: 0, movedWeightFraction: 0, floorFraction: 0, calculationDurationMs: 0 },
      };
      if (await this.publish(map, null, 'takeover')) return;
    }
  }

  /** Publishes by compare-and-set; false when another writer got there first (re-read and re-decide). */
  private async publish(map: AssignmentMap, result: AssignmentResult | null, why: string): Promise<boolean> {
    this.ensureLeader();
    try {
      const revision = await this.deps.maps.publish(map, this.revision);
      this.current = { map, revision };
      this.revision = revision;
      this.noteVersion(map.version);
      this.deps.observer?.published?.(map, result, why);
      return true;
    } catch (err) {
      if (!(err instanceof RevisionConflictError)) throw err;
      this.deps.observer?.error?.('publish the map', err);
      await this.readMap();
      const now = this.current?.map;
      if (now && BigInt(now.fencingToken) > BigInt(this.term.fencingToken)) {
        throw new DeposedError(`a newer term (token ${now.fencingToken}) published`);
      }
      return false;
    }
  }

  /** The chambers with their assignment weight: samples per run, or expected load (ADR 0008). */
  private async chambers(force: boolean): Promise<ChamberInput[]> {
    const t = this.deps.monotonic();
    if (force || t - this.chambersReadAt >= this.config.chamberRefreshMs) {
      this.chamberList = await this.deps.chambers.list();
      this.chambersReadAt = t;
    }
    return this.loadBook ? this.loadBook.loads(this.chamberList) : this.chamberList;
  }

  /**
   * Bounds one NATS read: a listing that never completes (seen under heavy load while the
   * connection drained) must not freeze the controller, or crashes would go undetected. A miss
   * counts as NATS unavailable, which the loop retries.
   */
  private async withDeadline<T>(what: string, p: Promise<T>): Promise<T> {
    const ms = Math.max(5000, 2 * (this.config.trigger.heartbeatIntervalMs ?? 2000));
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new NatsUnavailableError(`${what}: no answer within ${ms} ms`)), ms);
    });
    try {
      return await Promise.race([p, deadline]);
    } finally {
      clearTimeout(timer);
    }
  }

  private async tick(): Promise<TriggerDecision> {
    const trigger = this.trigger;
    if (!trigger) throw new Error('tick before takeover');
    let heartbeats: Awaited<ReturnType<HeartbeatPort['readAll']>>['heartbeats'];
    try {
      ({ heartbeats } = await this.withDeadline('read the heartbeats', this.deps.heartbeats.readAll()));
    } catch (err) {
      this.blindSince ??= this.deps.monotonic();
      throw err;
    }
    // Liveness on this process's monotonic clock only: a heartbeat is fresh when its revision
    // changes, aged from when this process saw that. The heartbeat's own times (`sentAt`, the NATS
    // server's store time) come from other clocks and are never compared with ours. Time during
    // which the bucket could not be read ages nobody (findings.md, 5): a NATS outage or leader
    // election stops the defenders' writes as well as these reads, and is not a crash.
    const t = this.deps.monotonic();
    const afterBlindness = this.blindSince !== undefined;
    if (this.blindSince !== undefined) this.deps.observer?.blind?.(t - this.blindSince);
    this.blindSince = undefined;
    const now = this.deps.now();
    for (const h of heartbeats) this.noteVersion(h.heartbeat.mapVersionSeen);
    this.loadBook?.observe(heartbeats.map((h) => h.heartbeat));
    const capacity = new Map(heartbeats.map((h) => [h.heartbeat.defenderId, h.heartbeat.capacity ?? 1]));
    const seen = this.clock.observe(
      heartbeats.map((h) => ({ id: h.heartbeat.defenderId, revision: h.revision })),
      t,
      { afterBlindness },
    );
    const d = trigger.observe(t, seen);
    this.lastDecision = d;
    this.active = seen.filter((s) => t - s.lastHeartbeatAt <= trigger.deadAfterMs).length;
    this.deps.observer?.decision?.(d, this.active);
    if (d.action === 'recompute') {
      await this.recompute(d, capacity, now);
    } else if (d.action === 'idle' && this.current) {
      if (!(await this.checkChambers(capacity, now))) await this.checkLoad(d, capacity, now);
    } else {
      this.policy?.observe(t, { stable: false, maxRatio: 1, minRatio: 1 });
    }
    return d;
  }

  private options(mode: AssignmentOptions['mode'], now: number): AssignmentOptions {
    return {
      strategy: this.config.strategy,
      mode,
      tolerance: this.config.tolerance,
      cooldownMs: this.config.cooldownMs,
      now,
      clock: () => this.deps.monotonic(),
      vnodes: this.config.vnodes,
      ...(this.config.maxChambersPerDefender ? { maxChambersPerDefender: this.config.maxChambersPerDefender } : {}),
    };
  }

  private async recompute(d: RecomputeDecision, capacity: Map<string, number>, now: number): Promise<void> {
    const chambers = await this.chambers(true);
    const prev = this.current?.map;
    const defenders = d.defenders.map((id) => ({ id, capacity: capacity.get(id) ?? 1 }));
    const result = computeAssignment(
      prev ? { assignments: prev.assignments, lastMovedAt: prev.lastMovedAt } : null,
      chambers,
      defenders,
      this.options(d.mode, now),
    );
    const map = this.mapFrom(result, defenders, chambers, now, {
      trigger: d.restart ? 'restart' : d.trigger,
      state: d.state,
      lifecycle: d.lifecycle,
    });
    if (await this.publish(map, result, d.trigger)) {
      this.trigger?.published({ lifecycle: d.lifecycle, defenderIds: d.defenders });
      this.policy?.published(this.deps.monotonic(), { orphansOnly: d.mode === 'orphans-only' });
    }
  }

  /**
   * A stable tick under load balancing: measures the published map against the current loads and
   * rebalances when the policy says so (sustained drift, or the pass after a crash). Chamber
   * cooldowns and caps apply as in any balance; the moved load is reported against the floor.
   */
  private async checkLoad(d: TriggerDecision, capacity: Map<string, number>, now: number): Promise<void> {
    const prev = this.current?.map;
    if (!prev || !this.policy) return;
    // Once per heartbeat interval is enough (the policy counts minutes); ~10 ms at 5,000 chambers.
    const t = this.deps.monotonic();
    if (t - this.loadCheckedAt < (this.config.trigger.heartbeatIntervalMs ?? 2000)) return;
    this.loadCheckedAt = t;
    const defenders = Object.keys(prev.defenderInfo).map((id) => ({ id, capacity: capacity.get(id) ?? prev.defenderInfo[id]?.capacity ?? 1 }));
    if (defenders.length === 0) return;
    const chambers = await this.chambers(false);
    const balance = balanceOf(prev.assignments, chambers, defenders);
    this.lastBalance = balance;
    const advice = this.policy.observe(this.deps.monotonic(), { stable: d.state === 'STABLE', maxRatio: balance.maxRatio, minRatio: balance.minRatio });
    this.lastAdvice = advice;
    if (advice.action !== 'rebalance') return;
    const result = computeAssignment({ assignments: prev.assignments, lastMovedAt: prev.lastMovedAt }, chambers, defenders, this.options('balance', now));
    if (result.stats.chambersMoved === 0) {
      this.policy.published(this.deps.monotonic(), { orphansOnly: false });
      return;
    }
    const map = this.mapFrom(result, defenders, chambers, now, { trigger: advice.reason, state: 'REBALANCING', lifecycle: prev.lifecycleState });
    if (await this.publish(map, result, advice.reason)) this.policy.published(this.deps.monotonic(), { orphansOnly: false });
  }

  /** Chambers added to or removed from the fab since the map: rebalance them in. True when it published. */
  private async checkChambers(capacity: Map<string, number>, now: number): Promise<boolean> {
    const prev = this.current?.map;
    if (!prev) return false;
    const chambers = await this.chambers(false);
    const keys = new Set(chambers.map((c) => c.key));
    const changed = chambers.length !== prev.chamberCount || Object.keys(prev.assignments).some((k) => !keys.has(k));
    if (!changed) return false;
    const defenders = Object.keys(prev.defenderInfo).map((id) => ({ id, capacity: capacity.get(id) ?? prev.defenderInfo[id]?.capacity ?? 1 }));
    if (defenders.length === 0) return false;
    const result = computeAssignment({ assignments: prev.assignments, lastMovedAt: prev.lastMovedAt }, chambers, defenders, this.options('balance', now));
    const map = this.mapFrom(result, defenders, chambers, now, { trigger: 'chambers_changed', state: 'REBALANCING', lifecycle: prev.lifecycleState });
    const published = await this.publish(map, result, 'chambers_changed');
    if (published) this.policy?.published(this.deps.monotonic(), { orphansOnly: false });
    return true;
  }

  private mapFrom(
    result: AssignmentResult,
    defenders: { id: string; capacity: number }[],
    chambers: ChamberInput[],
    now: number,
    meta: { trigger: AssignmentMap['trigger']; state: AssignmentMap['state']; lifecycle: AssignmentMap['lifecycleState'] },
  ): AssignmentMap {
    const prev = this.current?.map;
    return buildAssignmentMap({
      version: Math.max(prev?.version ?? 0, this.versionSeen) + 1,
      now: new Date(now),
      fencingToken: this.term.fencingToken,
      controllerId: this.config.controllerId,
      trigger: meta.trigger,
      state: meta.state,
      lifecycleState: meta.lifecycle,
      firstAssignmentAt: prev?.firstAssignmentAt ?? new Date(now).toISOString(),
      assignments: result.assignments,
      weights: Object.fromEntries(chambers.map((c) => [c.key, c.weight])),
      defenders,
      lastMovedAt: result.lastMovedAt,
      calculationDurationMs: result.stats.calculationDurationMs,
      movement: {
        chambersMoved: result.stats.chambersMoved,
        movedWeight: result.stats.movedWeight,
        movedWeightFraction: result.stats.movedWeightFraction,
        floorFraction: result.stats.floorFraction,
      },
    });
  }
}
