import {
  type AssignmentOptions,
  balanceOf,
  type BalanceReport,
  type ChamberInput,
  computeAssignment,
  type RebalanceAdvice,
  RebalancePolicy,
  type RecomputeDecision,
  type TriggerDecision,
} from '@defender/assignment';
import type { AssignmentMap, Heartbeat } from '@defender/contracts';
import type { EngineConfig } from './controller-engine';
import { LoadBook } from './load-book';
import type { MapKeeper } from './map-keeper';
import type { ChamberSource } from './ports';

/** What a {@link Placement} needs. */
export interface PlacementDeps {
  readonly chambers: ChamberSource;
  /** Monotonic clock, ms (the chamber-list refresh, the policy's windows, the assignment's clock). */
  readonly monotonic: () => number;
  /** The term's map: read, built and published through it. */
  readonly keeper: MapKeeper;
}

/**
 * Where the chambers go in one leader term: the chamber list (re-read every `chamberRefreshMs`), their
 * weights (samples per run, or expected load from the defenders' measurements: ADR 0008), the
 * recomputation the trigger asks for, and on stable ticks the chambers added to or removed from the
 * fab and the rebalancing the load policy asks for.
 */
export class Placement {
  /** The chamber list as the source gives it (weight: samples per run). */
  private chamberList: ChamberInput[] = [];
  private chambersReadAt = Number.NEGATIVE_INFINITY;
  private readonly loadBook: LoadBook | undefined;
  private readonly policy: RebalancePolicy | undefined;
  private lastBalance: BalanceReport | undefined;
  private lastAdvice: RebalanceAdvice | undefined;
  private loadCheckedAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly config: EngineConfig,
    private readonly deps: PlacementDeps,
  ) {
    const lb = config.loadBalancing;
    if (lb) {
      this.loadBook = new LoadBook(lb.prior, lb.priorRunsPerHour);
      this.policy = new RebalancePolicy({ ...lb.policy, tolerance: config.tolerance });
    }
  }

  /** Per-defender load of the published map at the last stable tick; undefined without load balancing. */
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

  /** The defenders' measurements (run rates, cost fits) from their heartbeats. */
  observe(heartbeats: readonly Heartbeat[]): void {
    this.loadBook?.observe(heartbeats);
  }

  /** A tick that is neither a recomputation nor stable: the load policy's windows restart. */
  unsettled(t: number): void {
    this.policy?.observe(t, { stable: false, maxRatio: 1, minRatio: 1 });
  }

  /** A stable tick: chambers added or removed are placed; otherwise the load is checked. */
  async stable(d: TriggerDecision, capacity: Map<string, number>, now: number): Promise<void> {
    if (!(await this.checkChambers(capacity, now))) await this.checkLoad(d, capacity, now);
  }

  /** Computes and publishes the map the trigger asked for; `published` is told first when it was. */
  async recompute(d: RecomputeDecision, capacity: Map<string, number>, now: number, published: () => void): Promise<void> {
    const chambers = await this.chambers(true);
    const prev = this.deps.keeper.map;
    const defenders = d.defenders.map((id) => ({ id, capacity: capacity.get(id) ?? 1 }));
    const result = computeAssignment(
      prev ? { assignments: prev.assignments, lastMovedAt: prev.lastMovedAt } : null,
      chambers,
      defenders,
      this.options(d.mode, now),
    );
    const map = this.deps.keeper.build(result, defenders, chambers, now, {
      trigger: d.restart ? 'restart' : d.trigger,
      state: d.state,
      lifecycle: d.lifecycle,
    });
    if (await this.deps.keeper.publish(map, result, d.trigger)) {
      published();
      this.policy?.published(this.deps.monotonic(), { orphansOnly: d.mode === 'orphans-only' });
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

  /** The defenders of `prev` with their capacity now (as last announced, else as the map has it). */
  private defendersOf(prev: Pick<AssignmentMap, 'defenderInfo'>, capacity: Map<string, number>): { id: string; capacity: number }[] {
    return Object.keys(prev.defenderInfo).map((id) => ({ id, capacity: capacity.get(id) ?? prev.defenderInfo[id]?.capacity ?? 1 }));
  }

  /**
   * A stable tick under load balancing: measures the published map against the current loads and
   * rebalances when the policy says so (sustained drift, or the pass after a crash). Chamber
   * cooldowns and caps apply as in any balance; the moved load is reported against the floor.
   */
  private async checkLoad(d: TriggerDecision, capacity: Map<string, number>, now: number): Promise<void> {
    const prev = this.deps.keeper.map;
    if (!prev || !this.policy) return;
    // Once per heartbeat interval is enough (the policy counts minutes); ~10 ms at 5,000 chambers.
    const t = this.deps.monotonic();
    if (t - this.loadCheckedAt < (this.config.trigger.heartbeatIntervalMs ?? 2000)) return;
    this.loadCheckedAt = t;
    const defenders = this.defendersOf(prev, capacity);
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
    const map = this.deps.keeper.build(result, defenders, chambers, now, { trigger: advice.reason, state: 'REBALANCING', lifecycle: prev.lifecycleState });
    if (await this.deps.keeper.publish(map, result, advice.reason)) this.policy.published(this.deps.monotonic(), { orphansOnly: false });
  }

  /** Chambers added to or removed from the fab since the map: rebalance them in. True when it published. */
  private async checkChambers(capacity: Map<string, number>, now: number): Promise<boolean> {
    const prev = this.deps.keeper.map;
    if (!prev) return false;
    const chambers = await this.chambers(false);
    const keys = new Set(chambers.map((c) => c.key));
    const changed = chambers.length !== prev.chamberCount || Object.keys(prev.assignments).some((k) => !keys.has(k));
    if (!changed) return false;
    const defenders = this.defendersOf(prev, capacity);
    if (defenders.length === 0) return false;
    const result = computeAssignment({ assignments: prev.assignments, lastMovedAt: prev.lastMovedAt }, chambers, defenders, this.options('balance', now));
    const map = this.deps.keeper.build(result, defenders, chambers, now, { trigger: 'chambers_changed', state: 'REBALANCING', lifecycle: prev.lifecycleState });
    const published = await this.deps.keeper.publish(map, result, 'chambers_changed');
    if (published) this.policy?.published(this.deps.monotonic(), { orphansOnly: false });
    return true;
  }
}
