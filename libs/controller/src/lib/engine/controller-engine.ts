import {
  AssignmentResult,
  AssignmentStrategyName,
  AssignmentTrigger,
  BalanceReport,
  CostModel,
  RebalanceAdvice,
  RebalancePolicyConfig,
  TriggerConfig,
  TriggerDecision,
} from '@defender/assignment';
import { retrying } from '@defender/backoff';
import { AssignmentMap } from '@defender/contracts';
import { HeartbeatClock } from '@defender/membership';
import { NatsUnavailableError } from '@defender/nats-kv';
import { DeposedError, MapKeeper } from './map-keeper';
import { Placement } from './placement';
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

/**
 * One leader term of the assignment controller: takes over the map (republishing it under this
 * term's fencing token, so a deposed leader's compare-and-set can no longer succeed), then every
 * heartbeat interval reads the heartbeats, asks the trigger state machine what to do and, when it
 * says so, computes and publishes a new map by compare-and-set. Stops at once when the term ends.
 */
export class ControllerEngine {
  private readonly stopper = new AbortController();
  private trigger: AssignmentTrigger | undefined;
  private readonly clock = new HeartbeatClock();
  /** Since when (monotonic ms) the heartbeats could not be read; undefined while they can. */
  private blindSince: number | undefined;
  private lastDecision: TriggerDecision | undefined;
  private active = 0;
  /** The term's map: read, taken over, built and published. */
  private readonly keeper: MapKeeper;
  /** Where the chambers go: recomputations, chambers added or removed, load rebalancing. */
  private readonly placement: Placement;

  constructor(
    private readonly term: TermPort,
    private readonly config: EngineConfig,
    private readonly deps: EngineDeps,
  ) {
    this.keeper = new MapKeeper({
      maps: deps.maps,
      term,
      controllerId: config.controllerId,
      now: deps.now,
      ensureLeader: () => this.ensureLeader(),
      ...(deps.observer ? { observer: deps.observer } : {}),
    });
    this.placement = new Placement(config, { chambers: deps.chambers, monotonic: deps.monotonic, keeper: this.keeper });
  }

  /**
   * Per-defender load (CPU µs per hour under the load model) of the published map at the last
   * stable tick, against its target; undefined without load balancing.
   */
  get loadBalance(): BalanceReport | undefined {
    return this.placement.loadBalance;
  }
  get rebalanceAdvice(): RebalanceAdvice | undefined {
    return this.placement.rebalanceAdvice;
  }
  /** Process CPU per defender as last reported (ms per second). */
  cpuByDefender(): Record<string, number> {
    return this.placement.cpuByDefender();
  }

  get map(): AssignmentMap | undefined {
    return this.keeper.map;
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

  private ensureLeader(): void {
    if (this.stopper.signal.aborted) throw new DeposedError('stopped');
    if (!this.term.isLeader()) throw new DeposedError('term ended');
  }

  /**
   * Retries `fn` while NATS or the store is unavailable (publishing nothing meanwhile), on the
   * workspace's backoff (100 ms .. 2 s); stops with DeposedError once the term ended or the engine
   * was stopped (checked before every attempt; a stop ends the wait at once).
   */
  private retrying<T>(what: string, fn: () => Promise<T>): Promise<T> {
    return retrying(
      () => {
        this.ensureLeader();
        return fn();
      },
      {
        what,
        baseMs: 100,
        maxMs: 2000,
        random: this.deps.random ?? Math.random,
        retryable: (err) => err instanceof NatsUnavailableError || (err as { retryable?: unknown }).retryable === true,
        onRetry: (err) => this.deps.observer?.error?.(what, err),
        sleep: (ms) => this.deps.sleep(ms, this.stopper.signal),
      },
    );
  }

  private async takeOver(): Promise<void> {
    for (;;) {
      await this.keeper.read();
      this.keeper.assertNotSuperseded();
      const held = this.keeper.map;
      this.trigger = new AssignmentTrigger(
        held ? { lifecycle: held.lifecycleState, defenderIds: Object.keys(held.defenderInfo) } : null,
        this.config.trigger,
      );
      // Re-stamp the current map with our token: from now on only this term can publish.
      if (await this.keeper.restamp()) return;
    }
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
    for (const h of heartbeats) this.keeper.noteVersion(h.heartbeat.mapVersionSeen);
    this.placement.observe(heartbeats.map((h) => h.heartbeat));
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
      await this.placement.recompute(d, capacity, now, () => trigger.published({ lifecycle: d.lifecycle, defenderIds: d.defenders }));
    } else if (d.action === 'idle' && this.keeper.map) {
      await this.placement.stable(d, capacity, now);
    } else {
      this.placement.unsettled(t);
    }
    return d;
  }
}
