import { InvalidTriggerInputError } from './errors';
import type { AssignmentMode } from './types';

/**
 * Cluster lifecycle, carried in the published map so a new leader inherits it:
 * `cold_start` (no map yet, or a restart detected) -> `post_cold_start` (first map published) ->
 * `stable` (from the second map on).
 */
export type ClusterLifecycle = 'cold_start' | 'post_cold_start' | 'stable';

/** The seeds' cluster states as the controller sees them. */
export type ClusterState = 'STABLE' | 'SCALING' | 'REBALANCING' | 'EMERGENCY';

/** What started a recalculation. */
export type TriggerKind = 'cold_start' | 'planned_scale' | 'crash';

/** Timing and thresholds of the trigger; every value in ms or a count. */
export interface TriggerConfig {
  /** Defender heartbeat period (HEARTBEAT_INTERVAL_SECONDS); default 2,000 ms. */
  readonly heartbeatIntervalMs: number;
  /** A defender is dead once its last heartbeat is older than this many intervals; default 3. */
  readonly missedHeartbeats: number;
  /** Batch window during cold start or after a detected restart; default 30,000 ms. */
  readonly coldStartWindowMs: number;
  /** Batch window for planned scale (joins and graceful leaves); default 10,000 ms. */
  readonly scaleWindowMs: number;
  /**
   * Longest a batch may wait from its first change, however often later changes reset the
   * window; default 60,000 ms. Must be >= both windows.
   */
  readonly maxBatchWaitMs: number;
  /** Restart rule: the published map had at least this many defenders (default 10) ... */
  readonly restartMinPrevious: number;
  /** ... and fewer than this many are alive now (default 5). */
  readonly restartMaxActive: number;
}

/** Defaults from the seeds and design.md section 4. */
export const DEFAULT_TRIGGER_CONFIG: TriggerConfig = {
  heartbeatIntervalMs: 2_000,
  missedHeartbeats: 3,
  coldStartWindowMs: 30_000,
  scaleWindowMs: 10_000,
  maxBatchWaitMs: 60_000,
  restartMinPrevious: 10,
  restartMaxActive: 5,
};

/** What the trigger needs from the published assignment map. */
export interface PublishedMapInfo {
  readonly lifecycle: ClusterLifecycle;
  /** Defenders that own chambers in the map. */
  readonly defenderIds: readonly string[];
}

/** One entry of the heartbeat bucket: a defender and when its last heartbeat was seen (ms, the caller's monotonic clock). */
export interface HeartbeatObservation {
  readonly id: string;
  readonly lastHeartbeatAt: number;
}

/** Live defenders against the published map. All lists sorted. */
export interface TopologyChanges {
  /** Alive, not in the map. */
  readonly joined: readonly string[];
  /** In the map, gone without missing heartbeats (entry removed while fresh), or gone during a restart. */
  readonly left: readonly string[];
  /** In the map, last heartbeat older than missedHeartbeats x heartbeatIntervalMs. */
  readonly crashed: readonly string[];
}

/** Nothing to do. */
export interface IdleDecision {
  readonly action: 'idle';
  readonly state: ClusterState;
}

/** A map exists but no defender is alive: nothing can be assigned until one joins. */
export interface NoDefendersDecision {
  readonly action: 'no-defenders';
  readonly state: ClusterState;
}

/** Changes are being batched; call `observe` again by `deadline` (ms on the clock `observe` is given) at the latest. */
export interface WaitDecision {
  readonly action: 'wait';
  readonly state: 'SCALING';
  readonly trigger: 'cold_start' | 'planned_scale';
  readonly windowMs: number;
  readonly deadline: number;
  readonly changes: TopologyChanges;
}

/**
 * Compute a new map now for `defenders` in `mode`, publish it with `lifecycle`, then call
 * {@link AssignmentTrigger.published}. Until then every `observe` repeats the decision (a failed
 * publication is retried on the next tick).
 */
export interface RecomputeDecision {
  readonly action: 'recompute';
  readonly state: 'REBALANCING' | 'EMERGENCY';
  readonly trigger: TriggerKind;
  readonly mode: AssignmentMode;
  /** The live defenders to assign to, sorted. */
  readonly defenders: readonly string[];
  readonly changes: TopologyChanges;
  /** Lifecycle to write into the map being published. */
  readonly lifecycle: ClusterLifecycle;
  /** True when this recalculation follows a detected restart (previous >= 10, active < 5; or nobody alive at takeover). */
  readonly restart: boolean;
}

export type TriggerDecision = IdleDecision | NoDefendersDecision | WaitDecision | RecomputeDecision;

const NEXT_LIFECYCLE: Record<ClusterLifecycle, ClusterLifecycle> = {
  cold_start: 'post_cold_start',
  post_cold_start: 'stable',
  stable: 'stable',
};

const sorted = (s: Iterable<string>) => [...s].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));

function validateConfig(c: TriggerConfig): void {
  const problems: string[] = [];
  const positive = (name: keyof TriggerConfig, integer = false) => {
    const v = c[name];
    if (!(Number.isFinite(v) && v > 0 && (!integer || Number.isInteger(v)))) {
      problems.push(
        `${name} must be a ${integer ? 'positive integer' : 'finite number > 0'}, got ${String(v)}`,
      );
    }
  };
  positive('heartbeatIntervalMs');
  positive('missedHeartbeats', true);
  positive('coldStartWindowMs');
  positive('scaleWindowMs');
  positive('maxBatchWaitMs');
  positive('restartMinPrevious', true);
  positive('restartMaxActive', true);
  if (c.maxBatchWaitMs < Math.max(c.coldStartWindowMs, c.scaleWindowMs)) {
    problems.push('maxBatchWaitMs must be >= coldStartWindowMs and scaleWindowMs');
  }
  if (problems.length > 0)
    throw new InvalidTriggerInputError(`invalid trigger configuration: ${problems.join('; ')}`);
}

/**
 * The controller's state-aware trigger (seed 002 "Adaptive Triggering", design.md section 4), a pure
 * state machine: the caller passes the time and the heartbeat bucket's contents to
 * {@link observe} (every heartbeat interval, and at the returned deadline) and gets a decision;
 * it starts no timers and reads no clock.
 *
 * - Death is decided by time since the last heartbeat (> missedHeartbeats x interval), never by a
 *   KV watch event. A map defender whose entry disappears while still fresh left gracefully.
 * - Crash of a map defender: recompute at once (`orphans-only` unless joins or leaves were
 *   pending, which the crash flushes: `balance`), aborting any pending window.
 * - Joins and graceful leaves are batched: the window (30 s in cold start, else 10 s) restarts on
 *   every membership change, but a batch never waits more than `maxBatchWaitMs` from its first
 *   change. If the batch nets out to the published set (a rolling update), nothing is computed.
 * - Restart: at the first observation (leader takeover), or later when no crash is pending, a map
 *   of >= 10 defenders with < 5 alive switches to cold start: departures are not crashes, and
 *   the 30 s window batches the rejoin; the first map after it is published with
 *   `post_cold_start`. At the first observation a map none of whose defenders is alive is a
 *   restart whatever its size: the whole cluster was down (the seeds' thresholds tell a restart
 *   from a partial failure in a large cluster; with nobody alive there is no partial failure).
 * - A new leader has no memory of a map defender without a heartbeat entry: its death is counted
 *   from the leader's first observation (one full threshold), as for an entry it has not seen
 *   change yet. A defender restarting beside the leader is not declared crashed, and all its
 *   chambers moved, only because the leader was up first.
 * - Zero live defenders: the batch is dropped (a later join starts a fresh one).
 */
export class AssignmentTrigger {
  private readonly config: TriggerConfig;
  private hasMap: boolean;
  private mapSet: Set<string>;
  private lifecycleValue: ClusterLifecycle;
  private restartMode = false;
  private restartSeen = false;
  private observed = false;
  /** Time of the first observation (the leader's takeover): map defenders never seen are aged from it. */
  private firstObservedAt = 0;
  private lastNow = Number.NEGATIVE_INFINITY;
  private readonly lastSeen = new Map<string, number>();
  private readonly gracefulLeft = new Set<string>();
  private readonly crashed = new Set<string>();
  private prevAlive = new Set<string>();
  private batch: { startedAt: number; lastChangeAt: number } | null = null;
  private stateValue: ClusterState = 'STABLE';

  /**
   * @param map the published map, or null when there is none (cold start).
   * @throws InvalidTriggerInputError on a configuration value out of range.
   */
  constructor(map: PublishedMapInfo | null, config: Partial<TriggerConfig> = {}) {
    this.config = { ...DEFAULT_TRIGGER_CONFIG, ...config };
    validateConfig(this.config);
    this.hasMap = map !== null;
    this.mapSet = new Set(map?.defenderIds ?? []);
    this.lifecycleValue = map === null ? 'cold_start' : map.lifecycle;
    this.prevAlive = new Set(this.mapSet);
  }

  /** Lifecycle now (including a restart override); goes into the next published map. */
  get lifecycle(): ClusterLifecycle {
    return this.lifecycleValue;
  }

  /** The cluster state after the last observation. */
  get state(): ClusterState {
    return this.stateValue;
  }

  /** True once a restart (previous >= 10, active < 5; or nobody alive at takeover) has been detected by this instance. */
  get restartDetected(): boolean {
    return this.restartSeen;
  }

  /** Death threshold: a heartbeat older than this (ms) means the defender is gone. */
  get deadAfterMs(): number {
    return this.config.missedHeartbeats * this.config.heartbeatIntervalMs;
  }

  /**
   * Feeds the heartbeat bucket's contents at time `now` and returns what to do. `now` and the
   * heartbeat times are ms on one clock, which should be monotonic (`performance.now()`): the
   * wall clock steps, and a step forward would age every heartbeat past the death threshold.
   * A `now` earlier than the previous one is treated as the previous one.
   */
  observe(now: number, heartbeats: readonly HeartbeatObservation[]): TriggerDecision {
    now = Math.max(now, this.lastNow);
    this.lastNow = now;
    const deadAfter = this.deadAfterMs;
    const present = new Set<string>();
    for (const hb of heartbeats) {
      present.add(hb.id);
      const seen = this.lastSeen.get(hb.id);
      if (seen === undefined || hb.lastHeartbeatAt > seen) this.lastSeen.set(hb.id, hb.lastHeartbeatAt);
    }
    const alive = new Set<string>();
    for (const [id, at] of this.lastSeen) if (present.has(id) && now - at <= deadAfter) alive.add(id);

    const firstObservation = !this.observed;
    this.observed = true;
    if (firstObservation) this.firstObservedAt = now;
    const restartPattern =
      this.hasMap &&
      this.mapSet.size >= this.config.restartMinPrevious &&
      alive.size < this.config.restartMaxActive;
    // Defenders in the map, none alive: the whole cluster was down (used at the first observation only).
    const wholeClusterDown = this.mapSet.size > 0 && alive.size === 0;

    // Classify map defenders that are not alive. Classifications stick until the next publication.
    for (const id of alive) {
      this.gracefulLeft.delete(id);
      this.crashed.delete(id);
    }
    if (firstObservation && (restartPattern || wholeClusterDown)) this.enterRestart();
    if (!this.restartMode) {
      for (const id of this.mapSet) {
        if (alive.has(id) || this.gracefulLeft.has(id) || this.crashed.has(id)) continue;
        const seen = this.lastSeen.get(id);
        if (seen === undefined && now - this.firstObservedAt <= deadAfter) continue; // not judged yet
        if (!present.has(id) && seen !== undefined && now - seen <= deadAfter) this.gracefulLeft.add(id);
        else this.crashed.add(id);
      }
      if (this.crashed.size === 0 && restartPattern) this.enterRestart();
    }

    const joined = sorted([...alive].filter((id) => !this.mapSet.has(id)));
    const gone = sorted([...this.mapSet].filter((id) => !alive.has(id)));
    const changes: TopologyChanges = {
      joined,
      left: this.restartMode ? gone : gone.filter((id) => this.gracefulLeft.has(id)),
      crashed: this.restartMode ? [] : gone.filter((id) => this.crashed.has(id)),
    };
    const membershipChanged = !sameSet(alive, this.prevAlive);
    this.prevAlive = alive;
    const defenders = sorted(alive);

    if (changes.crashed.length > 0 && alive.size > 0) {
      this.batch = null;
      this.stateValue = 'EMERGENCY';
      return {
        action: 'recompute',
        state: 'EMERGENCY',
        trigger: 'crash',
        mode: changes.joined.length === 0 && changes.left.length === 0 ? 'orphans-only' : 'balance',
        defenders,
        changes,
        lifecycle: NEXT_LIFECYCLE[this.lifecycleValue],
        restart: false,
      };
    }
    if (alive.size === 0) {
      this.batch = null;
      this.stateValue = 'STABLE';
      return this.hasMap ? { action: 'no-defenders', state: 'STABLE' } : { action: 'idle', state: 'STABLE' };
    }
    const pending =
      changes.joined.length > 0 || changes.left.length > 0 || this.lifecycleValue === 'cold_start';
    if (!pending) {
      this.batch = null;
      this.stateValue = 'STABLE';
      return { action: 'idle', state: 'STABLE' };
    }

    if (this.batch === null) this.batch = { startedAt: now, lastChangeAt: now };
    else if (membershipChanged) this.batch.lastChangeAt = now;
    const coldStart = this.lifecycleValue === 'cold_start';
    const windowMs = coldStart ? this.config.coldStartWindowMs : this.config.scaleWindowMs;
    const deadline = Math.min(
      this.batch.lastChangeAt + windowMs,
      this.batch.startedAt + this.config.maxBatchWaitMs,
    );
    const trigger = coldStart ? 'cold_start' : 'planned_scale';
    if (now < deadline) {
      this.stateValue = 'SCALING';
      return { action: 'wait', state: 'SCALING', trigger, windowMs, deadline, changes };
    }
    this.stateValue = 'REBALANCING';
    return {
      action: 'recompute',
      state: 'REBALANCING',
      trigger,
      mode: 'balance',
      defenders,
      changes,
      lifecycle: NEXT_LIFECYCLE[this.lifecycleValue],
      restart: this.restartMode,
    };
  }

  /**
   * Records a successful publication of a map for `defenderIds` carrying `lifecycle` (normally the
   * decision's). Clears the batch and the restart override.
   */
  published(map: PublishedMapInfo): void {
    this.hasMap = true;
    this.mapSet = new Set(map.defenderIds);
    this.lifecycleValue = map.lifecycle;
    this.restartMode = false;
    this.batch = null;
    this.stateValue = 'STABLE';
    for (const id of [...this.gracefulLeft]) if (!this.mapSet.has(id)) this.gracefulLeft.delete(id);
    for (const id of [...this.crashed]) if (!this.mapSet.has(id)) this.crashed.delete(id);
  }

  private enterRestart(): void {
    if (!this.restartMode) this.batch = null;
    this.restartMode = true;
    this.restartSeen = true;
    this.lifecycleValue = 'cold_start';
    this.gracefulLeft.clear();
    this.crashed.clear();
  }
}

function sameSet(a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  if (a.size !== b.size) return false;
  for (const x of a) if (!b.has(x)) return false;
  return true;
}
