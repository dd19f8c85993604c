import type { Counter, Gauge, Histogram } from 'prom-client';
import { performance } from 'node:perf_hooks';
import type { AssignmentStats, TriggerDecision } from '@defender/assignment';
import type { AssignmentMap } from '@defender/contracts';
import { CM } from './controller-metrics';

/**
 * The metrics of seed 002's controller-side states (ELECTION, LEADER, SCALING, REBALANCING, EMERGENCY),
 * and seed 000's phases of the calculation a map comes from.
 */
export interface ClusterStateMetricSet {
  readonly electionParticipated: Counter;
  readonly controllerStarted: Counter;
  readonly leadershipDuration: Gauge;
  readonly triggerState: Counter;
  readonly restartDetected: Counter;
  readonly stabilizationWindow: Histogram;
  readonly activeHeartbeats: Gauge;
  readonly mapVersion: Gauge;
  readonly scalingEvents: Counter;
  readonly scalingDuration: Histogram;
  readonly pendingChanges: Gauge;
  readonly emergencyDuration: Histogram;
  readonly crashedRedistributed: Gauge;
  readonly phase1Duration: Histogram;
  readonly phase2Duration: Histogram;
  readonly rebalanceIterations: Gauge;
}

const STATE_KEYS = [
  'electionParticipated',
  'controllerStarted',
  'leadershipDuration',
  'triggerState',
  'restartDetected',
  'stabilizationWindow',
  'activeHeartbeats',
  'mapVersion',
  'scalingEvents',
  'scalingDuration',
  'pendingChanges',
  'emergencyDuration',
  'crashedRedistributed',
] as const satisfies readonly (keyof ClusterStateMetricSet & keyof typeof CM)[];

/** The names of the state metrics (the dashboard's "Cluster state machine" row shows each). */
export const CLUSTER_STATE_METRIC_NAMES: readonly string[] = STATE_KEYS.map((k) => CM[k]);

/** The triggers whose maps end a SCALING or EMERGENCY episode. */
const EPISODE_TRIGGERS: ReadonlySet<string> = new Set(['cold_start', 'planned_scale', 'crash']);

/**
 * Turns the trigger state machine's decisions and the engine's publications into seed 002's
 * metrics. An episode (a batch of joins/leaves, or a crash) begins at the first decision that is
 * not idle and ends when its map is published (or the changes undo themselves): its trigger, the
 * window chosen and a detected restart are counted once, its time in SCALING or EMERGENCY observed
 * once. Times on the monotonic clock.
 */
export class ClusterStateMetrics {
  private leaderSince: number | undefined;
  private scalingSince: number | undefined;
  private emergencySince: number | undefined;
  private readonly counted = new Set<string>();
  /** Chambers the crashed defenders held in the map the crash decision was made against. */
  private orphans = 0;

  constructor(
    private readonly m: ClusterStateMetricSet,
    private readonly monotonic: () => number = () => performance.now(),
  ) {
    m.leadershipDuration.set(0);
    m.pendingChanges.set(0);
    m.crashedRedistributed.set(0);
    m.rebalanceIterations.set(0);
  }

  /** This process started campaigning (ELECTION). */
  campaigning(): void {
    this.m.electionParticipated.inc();
  }

  /** A term was won (LEADER). */
  elected(): void {
    this.leaderSince = this.monotonic();
    this.m.leadershipDuration.set(0);
  }

  /** The term ended: back to standby. */
  deposed(): void {
    this.leaderSince = undefined;
    this.m.leadershipDuration.set(0);
    this.endEpisode();
  }

  /** The term's assignment engine started. */
  engineStarted(): void {
    this.m.controllerStarted.inc();
  }

  /** One trigger decision against `held`, the map published before it. */
  decision(d: TriggerDecision, active: number, held: AssignmentMap | undefined): void {
    const t = this.monotonic();
    if (this.leaderSince !== undefined) this.m.leadershipDuration.set((t - this.leaderSince) / 1000);
    this.m.activeHeartbeats.set(active);
    if (d.action === 'idle' || d.action === 'no-defenders') {
      this.m.pendingChanges.set(0);
      // The batched changes undid themselves (a joiner left again): SCALING ended without a map.
      if (this.scalingSince !== undefined) this.m.scalingDuration.observe((t - this.scalingSince) / 1000);
      this.endEpisode();
      return;
    }
    const c = d.changes;
    this.m.pendingChanges.set(c.joined.length + c.left.length + c.crashed.length);
    if (d.action === 'wait' && this.scalingSince === undefined) {
      this.scalingSince = t;
      this.m.scalingEvents.inc();
      this.m.stabilizationWindow.observe({ type: d.trigger }, d.windowMs / 1000);
    }
    if (d.action === 'recompute' && d.state === 'EMERGENCY' && this.emergencySince === undefined) {
      this.emergencySince = t;
      const crashed = new Set(c.crashed);
      this.orphans = held ? Object.values(held.assignments).filter((owner) => crashed.has(owner)).length : 0;
    }
    this.countOnce(`trigger:${d.trigger}`, () => this.m.triggerState.inc({ state: d.trigger }));
    if (d.action === 'recompute' && d.restart) this.countOnce('restart', () => this.m.restartDetected.inc());
  }

  /** A map was published (`why`: the decision's trigger, or `takeover`, `chambers_changed`, ...). */
  published(map: AssignmentMap, why: string): void {
    const t = this.monotonic();
    this.m.mapVersion.set(map.version);
    // Only the trigger's own recalculations end an episode (not a takeover, new chambers or a balance pass).
    if (!EPISODE_TRIGGERS.has(why)) return;
    if (this.scalingSince !== undefined) this.m.scalingDuration.observe((t - this.scalingSince) / 1000);
    if (this.emergencySince !== undefined) {
      this.m.emergencyDuration.observe((t - this.emergencySince) / 1000);
      this.m.crashedRedistributed.set(this.orphans);
    }
    this.m.pendingChanges.set(0);
    this.endEpisode();
  }

  /** The calculation behind a published map (not a re-publication of the held one). */
  calculated(stats: Pick<AssignmentStats, 'phase1DurationMs' | 'phase2DurationMs' | 'rebalanceIterations'>): void {
    this.m.phase1Duration.observe(stats.phase1DurationMs / 1000);
    this.m.phase2Duration.observe(stats.phase2DurationMs / 1000);
    this.m.rebalanceIterations.set(stats.rebalanceIterations);
  }

  private countOnce(key: string, inc: () => void): void {
    if (this.counted.has(key)) return;
    this.counted.add(key);
    inc();
  }

  private endEpisode(): void {
    this.scalingSince = undefined;
    this.emergencySince = undefined;
    this.orphans = 0;
    this.counted.clear();
  }
}
