import { InvalidTriggerInputError } from './errors';

/** When the controller rebalances without a membership change; every time in ms. */
export interface RebalancePolicyConfig {
  /**
   * Drift band half-width: a load rebalance is considered only while some defender's load is
   * outside (1 ± driftBand) x its target. Wider than the assignment tolerance, so a fresh balance
   * (inside ±tolerance) needs a real change of load, not measurement noise, to leave it. Default 0.10.
   */
  readonly driftBand: number;
  /** A defender must stay outside the drift band this long without a break. Default 300,000. */
  readonly sustainMs: number;
  /** At least this long between two load rebalances. Default 600,000. */
  readonly cooldownMs: number;
  /** After a crash's orphans-only map, the cluster must be stable this long before the post-crash pass. Default 30,000. */
  readonly settleMs: number;
  /** The assignment band (WEIGHT_REBALANCE_THRESHOLD) that the post-crash pass restores. Default 0.05. */
  readonly tolerance: number;
}

export const DEFAULT_REBALANCE_POLICY: RebalancePolicyConfig = {
  driftBand: 0.1,
  sustainMs: 300_000,
  cooldownMs: 600_000,
  settleMs: 30_000,
  tolerance: 0.05,
};

/** What the policy is shown at each observation. */
export interface BalanceObservation {
  /** No membership change pending (the trigger's state is STABLE and it said idle). */
  readonly stable: boolean;
  /** Largest and smallest load / target over the live defenders of the published map. */
  readonly maxRatio: number;
  readonly minRatio: number;
}

export type RebalanceAdvice =
  | { readonly action: 'none'; readonly outsideSinceMs?: number }
  | { readonly action: 'rebalance'; readonly reason: 'load_drift' | 'post_crash' };

/**
 * Decides when load alone justifies a rebalance (a pure state machine; the caller passes a
 * monotonic `now`):
 * - load drift: some defender outside (1 ± driftBand) x target continuously for `sustainMs`
 *   (any observation back inside restarts the count), and `cooldownMs` since the last load
 *   rebalance. Noise that stays inside the band, or leaves it for less than `sustainMs`, never
 *   rebalances.
 * - post-crash: after an orphans-only map ({@link published} with `orphansOnly`), once the cluster
 *   has been stable for `settleMs`: one balance pass if the map is outside ±tolerance, else none.
 *   Any later balance map clears it.
 * Only stable observations count; a pending membership change resets both clocks (its own
 * recomputation balances anyway).
 */
export class RebalancePolicy {
  private readonly config: RebalancePolicyConfig;
  private outsideSince: number | undefined;
  private lastRebalanceAt = Number.NEGATIVE_INFINITY;
  private crashPending = false;
  private stableSince: number | undefined;

  /** @throws InvalidTriggerInputError on a configuration value out of range. */
  constructor(config: Partial<RebalancePolicyConfig> = {}) {
    this.config = { ...DEFAULT_REBALANCE_POLICY, ...config };
    const c = this.config;
    const problems: string[] = [];
    if (!(c.driftBand > 0 && c.driftBand < 1)) problems.push(`driftBand must be in (0, 1), got ${c.driftBand}`);
    if (!(c.tolerance >= 0 && c.tolerance < 1)) problems.push(`tolerance must be in [0, 1), got ${c.tolerance}`);
    if (!(c.driftBand >= c.tolerance)) problems.push('driftBand must be >= tolerance (else a fresh balance could trigger)');
    for (const k of ['sustainMs', 'cooldownMs', 'settleMs'] as const) {
      if (!(Number.isFinite(c[k]) && c[k] >= 0)) problems.push(`${k} must be a finite number >= 0, got ${c[k]}`);
    }
    if (problems.length > 0) throw new InvalidTriggerInputError(`invalid rebalance policy: ${problems.join('; ')}`);
  }

  /** True while an orphans-only map waits for its post-crash pass. */
  get postCrashPending(): boolean {
    return this.crashPending;
  }

  observe(now: number, o: BalanceObservation): RebalanceAdvice {
    if (!o.stable) {
      this.outsideSince = undefined;
      this.stableSince = undefined;
      return { action: 'none' };
    }
    this.stableSince ??= now;
    const c = this.config;
    if (this.crashPending) {
      // The post-crash pass has precedence: drift is not counted until it has run (or was not needed).
      if (now - this.stableSince < c.settleMs) return { action: 'none' };
      this.crashPending = false;
      if (o.maxRatio > 1 + c.tolerance || o.minRatio < 1 - c.tolerance) return { action: 'rebalance', reason: 'post_crash' };
    }
    const outside = o.maxRatio > 1 + c.driftBand || o.minRatio < 1 - c.driftBand;
    if (!outside) {
      this.outsideSince = undefined;
      return { action: 'none' };
    }
    this.outsideSince ??= now;
    if (now - this.outsideSince >= c.sustainMs && now - this.lastRebalanceAt >= c.cooldownMs) {
      return { action: 'rebalance', reason: 'load_drift' };
    }
    return { action: 'none', outsideSinceMs: this.outsideSince };
  }

  /**
   * A map was published at `now`. `orphansOnly`: a crash's map (arms the post-crash pass); else a
   * balance map (clears it and starts the load-rebalance cooldown: it balanced the load already).
   */
  published(now: number, kind: { orphansOnly: boolean }): void {
    this.outsideSince = undefined;
    this.crashPending = kind.orphansOnly;
    this.stableSince = undefined;
    if (!kind.orphansOnly) this.lastRebalanceAt = now;
  }
}
