import { Module, type INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { register } from 'prom-client';
import { exposedSample, metricsMovedBy } from '@defender/infra-harness';
import { AssignmentTrigger, computeAssignment, type AssignmentResult, type TriggerDecision } from '@defender/assignment';
import type { AssignmentMap } from '@defender/contracts';
import { buildAssignmentMap } from '@defender/membership';
import { CM, controllerMetricProviders } from './controller-metrics';
import { LeadershipMetricsObserver } from './leadership-metrics-observer';

/** The adapter with the metric providers ControllerModule registers (prom-client's default registry). */
@Module({ providers: [...controllerMetricProviders, LeadershipMetricsObserver] })
class ObserverOnlyModule {}

const ids = (n: number) => Array.from({ length: n }, (_, i) => `defender-${i}`);
// Weights 30,000-3,600,000 (the seeds' range), deterministic.
const chambers = Array.from({ length: 400 }, (_, i) => ({ key: `tool${i}:ch1`, weight: 30_000 + ((i * 7919) % 120) * 29_750 }));
/** A clock that advances 1 ms per reading: phase times are counts of readings, not the machine's speed. */
const ticking = () => {
  let t = 0;
  return () => t++;
};

/** A planned scale 4 -> 5 (both phases and rebalancing rounds non-zero) and the map published from it. */
function scaleOut(): { result: AssignmentResult; map: AssignmentMap } {
  const four = computeAssignment(null, chambers, ids(4).map((id) => ({ id })), { clock: ticking() });
  const result = computeAssignment({ assignments: four.assignments }, chambers, ids(5).map((id) => ({ id })), { clock: ticking() });
  const map = buildAssignmentMap({
    version: 12,
    now: new Date(Date.UTC(2026, 10, 27)),
    fencingToken: '3',
    controllerId: 'c-test',
    trigger: 'planned_scale',
    state: 'STABLE',
    lifecycleState: 'stable',
    firstAssignmentAt: null,
    assignments: result.assignments,
    weights: Object.fromEntries(chambers.map((c) => [c.key, c.weight])),
    defenders: ids(5).map((id) => ({ id })),
    calculationDurationMs: result.stats.calculationDurationMs,
    movement: { chambersMoved: result.stats.chambersMoved, movedWeight: 1_000_000, movedWeightFraction: 0.2, floorFraction: 0.19 },
  });
  return { result, map };
}


const sorted = (names: string[]) => [...names].sort();

/** What every publication moves: its count by trigger, the map's version (two names) and its statistics block. */
const PUBLICATION = [
  CM.rebalanceEvents,
  CM.mapVersion,
  CM.assignmentVersion,
  CM.chambersMoved,
  CM.weightVariance,
  CM.minChambers,
  CM.maxChambers,
  CM.avgChambers,
  CM.minWeight,
  CM.maxWeight,
  CM.avgWeight,
  CM.movedWeightFraction,
];
/** What the calculation behind a publication moves. */
const CALCULATION = [CM.rebalanceDuration, CM.calcDuration, CM.phase1Duration, CM.phase2Duration, CM.rebalanceIterations, CM.chamberMovements];

describe('LeadershipMetricsObserver (the controller\'s one metrics adapter)', () => {
  let app: INestApplicationContext;
  let observer: LeadershipMetricsObserver;

  beforeEach(async () => {
    app = await NestFactory.createApplicationContext(ObserverOnlyModule, { logger: false });
    observer = app.get(LeadershipMetricsObserver);
  });

  afterEach(async () => {
    await app.close();
    register.clear();
  });

  it('registers every controller metric; a standby starts at is_leader 0 and zeroed episode gauges', async () => {
    expect(sorted((await register.getMetricsAsJSON()).map((m) => m.name))).toEqual(sorted(Object.values(CM)));
    expect(await exposedSample(CM.isLeader)).toBe(0);
    expect(await exposedSample(CM.leadershipDuration)).toBe(0);
    expect(await exposedSample(CM.pendingChanges)).toBe(0);
    expect(await exposedSample(CM.crashedRedistributed)).toBe(0);
    expect(await exposedSample(CM.rebalanceIterations)).toBe(0);
  });

  it('campaignStarted counts a participation in the election', async () => {
    expect(await metricsMovedBy(() => observer.campaignStarted())).toEqual([CM.electionParticipated]);
    expect(await exposedSample(CM.electionParticipated)).toBe(1);
  });

  it('becameLeader sets is_leader and counts an "elected" leadership change; leadershipLost undoes is_leader and counts "deposed"', async () => {
    expect(await metricsMovedBy(() => observer.becameLeader())).toEqual(sorted([CM.isLeader, CM.leaderChanges]));
    expect(await exposedSample(CM.isLeader)).toBe(1);
    expect(await exposedSample(`${CM.leaderChanges}{event="elected"}`)).toBe(1);

    expect(await metricsMovedBy(() => observer.leadershipLost())).toEqual(sorted([CM.isLeader, CM.leaderChanges]));
    expect(await exposedSample(CM.isLeader)).toBe(0);
    expect(await exposedSample(`${CM.leaderChanges}{event="deposed"}`)).toBe(1);
    expect(await exposedSample(`${CM.leaderChanges}{event="elected"}`)).toBe(1);
    expect(await exposedSample(CM.leadershipDuration)).toBe(0);
  });

  it('engineStarted counts an assignment engine started', async () => {
    expect(await metricsMovedBy(() => observer.engineStarted())).toEqual([CM.controllerStarted]);
    expect(await exposedSample(CM.controllerStarted)).toBe(1);
  });

  it('triggerDecision: a join batched in the 10 s window sets the live counts and begins SCALING', async () => {
    const trigger = new AssignmentTrigger({ lifecycle: 'stable', defenderIds: ids(3) }, { heartbeatIntervalMs: 2_000 });
    const d: TriggerDecision = trigger.observe(0, ids(4).map((id) => ({ id, lastHeartbeatAt: 0 })));
    expect(d).toMatchObject({ action: 'wait', trigger: 'planned_scale', windowMs: 10_000 });
    expect(await metricsMovedBy(() => observer.triggerDecision(d, 4, undefined))).toEqual(
      sorted([CM.activeDefenders, CM.activeHeartbeats, CM.pendingChanges, CM.scalingEvents, CM.stabilizationWindow, CM.triggerState]),
    );
    expect(await exposedSample(CM.activeDefenders)).toBe(4);
    expect(await exposedSample(CM.activeHeartbeats)).toBe(4);
    expect(await exposedSample(CM.pendingChanges)).toBe(1);
    expect(await exposedSample(CM.scalingEvents)).toBe(1);
    expect(await exposedSample(`${CM.stabilizationWindow}_sum{type="planned_scale"}`)).toBe(10);
    expect(await exposedSample(`${CM.triggerState}{state="planned_scale"}`)).toBe(1);
  });

  it('triggerDecision: an idle decision moves only the live counts', async () => {
    const trigger = new AssignmentTrigger({ lifecycle: 'stable', defenderIds: ids(3) }, { heartbeatIntervalMs: 2_000 });
    const d = trigger.observe(0, ids(3).map((id) => ({ id, lastHeartbeatAt: 0 })));
    expect(d.action).toBe('idle');
    expect(await metricsMovedBy(() => observer.triggerDecision(d, 3, undefined))).toEqual(sorted([CM.activeDefenders, CM.activeHeartbeats]));
    expect(await exposedSample(CM.activeDefenders)).toBe(3);
  });

  it('mapPublished with a calculation: the publication, its calculation times and phases, movements and the map\'s statistics', async () => {
    const { result, map } = scaleOut();
    expect(await metricsMovedBy(() => observer.mapPublished(map, result, 'planned_scale'))).toEqual(sorted([...PUBLICATION, ...CALCULATION]));
    const s = map.statistics;
    expect(await exposedSample(`${CM.rebalanceEvents}{trigger="planned_scale"}`)).toBe(1);
    expect(await exposedSample(CM.assignmentVersion)).toBe(12);
    expect(await exposedSample(CM.mapVersion)).toBe(12);
    expect(await exposedSample(`${CM.calcDuration}_sum`)).toBe(result.stats.calculationDurationMs / 1000);
    expect(await exposedSample(`${CM.rebalanceDuration}_sum`)).toBe(result.stats.calculationDurationMs / 1000);
    expect(await exposedSample(`${CM.phase1Duration}_sum`)).toBe(result.stats.phase1DurationMs / 1000);
    expect(await exposedSample(`${CM.phase2Duration}_sum`)).toBe(result.stats.phase2DurationMs / 1000);
    expect(await exposedSample(CM.rebalanceIterations)).toBe(result.stats.rebalanceIterations);
    expect(await exposedSample(CM.chamberMovements)).toBe(result.stats.chambersMoved);
    expect(await exposedSample(CM.chambersMoved)).toBe(s.chambersMoved);
    expect(await exposedSample(CM.weightVariance)).toBe(s.weightVariancePercent);
    expect(await exposedSample(CM.minChambers)).toBe(s.minChambersPerDefender);
    expect(await exposedSample(CM.maxChambers)).toBe(s.maxChambersPerDefender);
    expect(await exposedSample(CM.avgChambers)).toBe(s.avgChambersPerDefender);
    expect(await exposedSample(CM.minWeight)).toBe(s.minWeightPerDefender);
    expect(await exposedSample(CM.maxWeight)).toBe(s.maxWeightPerDefender);
    expect(await exposedSample(CM.avgWeight)).toBe(s.avgWeightPerDefender);
    expect(await exposedSample(CM.movedWeightFraction)).toBe(0.2);
  });

  it('mapPublished for a crash also counts an emergency recalculation', async () => {
    const { result, map } = scaleOut();
    expect(await metricsMovedBy(() => observer.mapPublished(map, result, 'crash'))).toEqual(sorted([...PUBLICATION, ...CALCULATION, CM.emergencyEvents]));
    expect(await exposedSample(CM.emergencyEvents)).toBe(1);
    expect(await exposedSample(`${CM.rebalanceEvents}{trigger="crash"}`)).toBe(1);
  });

  it('mapPublished without a calculation (the held map again): no calculation time, movement or emergency', async () => {
    const { map } = scaleOut();
    expect(await metricsMovedBy(() => observer.mapPublished(map, null, 'takeover'))).toEqual(sorted(PUBLICATION));
    expect(await exposedSample(`${CM.rebalanceEvents}{trigger="takeover"}`)).toBe(1);
  });

  it('mapWritten sets the stored size by part and observes the write time in seconds', async () => {
    expect(await metricsMovedBy(() => observer.mapWritten({ totalBytes: 48_000, largestValueBytes: 16_000, durationMs: 25 }))).toEqual(
      sorted([CM.mapBytes, CM.mapPublishDuration]),
    );
    expect(await exposedSample(`${CM.mapBytes}{part="total"}`)).toBe(48_000);
    expect(await exposedSample(`${CM.mapBytes}{part="largest_value"}`)).toBe(16_000);
    expect(await exposedSample(`${CM.mapPublishDuration}_sum`)).toBe(0.025);
    expect(await exposedSample(`${CM.mapPublishDuration}_bucket{le="0.05"}`)).toBe(1);
    expect(await exposedSample(`${CM.mapPublishDuration}_bucket{le="0.02"}`)).toBe(0);
  });

  it('publishConflict counts a publication lost to a concurrent writer', async () => {
    expect(await metricsMovedBy(() => observer.publishConflict())).toEqual([CM.publishConflicts]);
    expect(await exposedSample(CM.publishConflicts)).toBe(1);
  });
});
