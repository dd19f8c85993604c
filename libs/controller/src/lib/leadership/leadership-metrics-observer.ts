import { Injectable } from '@nestjs/common';
import { InjectMetric } from '@willsoto/nestjs-prometheus';
import type { Counter, Gauge, Histogram } from 'prom-client';
import type { AssignmentResult, TriggerDecision } from '@defender/assignment';
import type { AssignmentMap } from '@defender/contracts';
import { ClusterStateMetrics } from './cluster-state-metrics';
import { CM } from './controller-metrics';

/** One write of a map to the assignment bucket (head and chunks, ADR 0009). */
export interface MapWrite {
  /** Bytes of the map as stored, head and chunks. */
  readonly totalBytes: number;
  /** Bytes of the largest single KV value of the write. */
  readonly largestValueBytes: number;
  /** Encoding, chunk writes and the head compare-and-set, ms. */
  readonly durationMs: number;
}

/**
 * What the leadership orchestration reports: campaigning, terms won and lost, the engine's
 * decisions and publications. {@link LeadershipMetricsObserver} turns each event into the
 * controller's metrics; tests pass a recording fake.
 */
export interface LeadershipObserver {
  /** This process started campaigning in the leader election. */
  campaignStarted(): void;
  /** A leader term was won. */
  becameLeader(): void;
  /** The term ended (deposed, lease lost or stepped down): standby again. */
  leadershipLost(): void;
  /** The term's assignment engine started. */
  engineStarted(): void;
  /**
   * One trigger decision of the engine; `activeDefenders` have a fresh heartbeat, `held` is the map
   * published before it (undefined before the first).
   */
  triggerDecision(decision: TriggerDecision, activeDefenders: number, held: AssignmentMap | undefined): void;
  /**
   * A map was published; `result` is the calculation behind it (null when the held map was
   * published again), `why` the decision's trigger or `takeover`, `chambers_changed`, ...
   */
  mapPublished(map: AssignmentMap, result: AssignmentResult | null, why: string): void;
  /** A map was written to the assignment bucket. */
  mapWritten(write: MapWrite): void;
  /** A publication lost the compare-and-set to a concurrent writer. */
  publishConflict(): void;
}

/**
 * The controller's metrics (seed 000's leader table, seed 002's controller states, issue 27's map
 * size): the one Nest provider that holds them, so the orchestration reports events and never
 * touches a metric. Names, labels and help texts are defined in `controller-metrics.ts`.
 */
@Injectable()
export class LeadershipMetricsObserver implements LeadershipObserver {
  private readonly states: ClusterStateMetrics;

  constructor(
    @InjectMetric(CM.isLeader) private readonly isLeader: Gauge,
    @InjectMetric(CM.activeDefenders) private readonly activeDefenders: Gauge,
    @InjectMetric(CM.rebalanceEvents) private readonly rebalanceEvents: Counter,
    @InjectMetric(CM.rebalanceDuration) private readonly rebalanceDuration: Histogram,
    @InjectMetric(CM.chamberMovements) private readonly chamberMovements: Counter,
    @InjectMetric(CM.emergencyEvents) private readonly emergencyEvents: Counter,
    @InjectMetric(CM.assignmentVersion) private readonly assignmentVersion: Gauge,
    @InjectMetric(CM.calcDuration) private readonly calcDuration: Histogram,
    @InjectMetric(CM.chambersMoved) private readonly chambersMoved: Gauge,
    @InjectMetric(CM.weightVariance) private readonly weightVariance: Gauge,
    @InjectMetric(CM.minChambers) private readonly minChambers: Gauge,
    @InjectMetric(CM.maxChambers) private readonly maxChambers: Gauge,
    @InjectMetric(CM.avgChambers) private readonly avgChambers: Gauge,
    @InjectMetric(CM.minWeight) private readonly minWeight: Gauge,
    @InjectMetric(CM.maxWeight) private readonly maxWeight: Gauge,
    @InjectMetric(CM.avgWeight) private readonly avgWeight: Gauge,
    @InjectMetric(CM.movedWeightFraction) private readonly movedWeightFraction: Gauge,
    @InjectMetric(CM.publishConflicts) private readonly publishConflicts: Counter,
    @InjectMetric(CM.leaderChanges) private readonly leaderChanges: Counter,
    @InjectMetric(CM.mapBytes) private readonly mapBytes: Gauge,
    @InjectMetric(CM.mapPublishDuration) private readonly mapPublishDuration: Histogram,
    @InjectMetric(CM.electionParticipated) electionParticipated: Counter,
    @InjectMetric(CM.controllerStarted) controllerStarted: Counter,
    @InjectMetric(CM.leadershipDuration) leadershipDuration: Gauge,
    @InjectMetric(CM.triggerState) triggerState: Counter,
    @InjectMetric(CM.restartDetected) restartDetected: Counter,
    @InjectMetric(CM.stabilizationWindow) stabilizationWindow: Histogram,
    @InjectMetric(CM.activeHeartbeats) activeHeartbeats: Gauge,
    @InjectMetric(CM.mapVersion) mapVersion: Gauge,
    @InjectMetric(CM.scalingEvents) scalingEvents: Counter,
    @InjectMetric(CM.scalingDuration) scalingDuration: Histogram,
    @InjectMetric(CM.pendingChanges) pendingChanges: Gauge,
    @InjectMetric(CM.emergencyDuration) emergencyDuration: Histogram,
    @InjectMetric(CM.crashedRedistributed) crashedRedistributed: Gauge,
    @InjectMetric(CM.phase1Duration) phase1Duration: Histogram,
    @InjectMetric(CM.phase2Duration) phase2Duration: Histogram,
    @InjectMetric(CM.rebalanceIterations) rebalanceIterations: Gauge,
  ) {
    this.isLeader.set(0);
    // Seed 002's episodes (SCALING, EMERGENCY) need state across events: kept by ClusterStateMetrics.
    this.states = new ClusterStateMetrics({
      electionParticipated,
      controllerStarted,
      leadershipDuration,
      triggerState,
      restartDetected,
      stabilizationWindow,
      activeHeartbeats,
      mapVersion,
      scalingEvents,
      scalingDuration,
      pendingChanges,
      emergencyDuration,
      crashedRedistributed,
      phase1Duration,
      phase2Duration,
      rebalanceIterations,
    });
  }

  campaignStarted(): void {
    this.states.campaigning();
  }

  becameLeader(): void {
    this.isLeader.set(1);
    this.leaderChanges.inc({ event: 'elected' });
    this.states.elected();
  }

  leadershipLost(): void {
    this.isLeader.set(0);
    this.leaderChanges.inc({ event: 'deposed' });
    this.states.deposed();
  }

  engineStarted(): void {
    this.states.engineStarted();
  }

  triggerDecision(decision: TriggerDecision, activeDefenders: number, held: AssignmentMap | undefined): void {
    this.activeDefenders.set(activeDefenders);
    this.states.decision(decision, activeDefenders, held);
  }

  mapPublished(map: AssignmentMap, result: AssignmentResult | null, why: string): void {
    this.rebalanceEvents.inc({ trigger: why });
    this.states.published(map, why);
    this.assignmentVersion.set(map.version);
    if (result) {
      const seconds = result.stats.calculationDurationMs / 1000;
      this.rebalanceDuration.observe(seconds);
      this.calcDuration.observe(seconds);
      this.states.calculated(result.stats);
      this.chamberMovements.inc(result.stats.chambersMoved);
      if (why === 'crash') this.emergencyEvents.inc();
    }
    const s = map.statistics;
    this.chambersMoved.set(s.chambersMoved);
    this.weightVariance.set(s.weightVariancePercent);
    this.minChambers.set(s.minChambersPerDefender);
    this.maxChambers.set(s.maxChambersPerDefender);
    this.avgChambers.set(s.avgChambersPerDefender);
    this.minWeight.set(s.minWeightPerDefender);
    this.maxWeight.set(s.maxWeightPerDefender);
    this.avgWeight.set(s.avgWeightPerDefender);
    this.movedWeightFraction.set(s.movedWeightFraction);
  }

  mapWritten(write: MapWrite): void {
    this.mapBytes.set({ part: 'total' }, write.totalBytes);
    this.mapBytes.set({ part: 'largest_value' }, write.largestValueBytes);
    this.mapPublishDuration.observe(write.durationMs / 1000);
  }

  publishConflict(): void {
    this.publishConflicts.inc();
  }
}
