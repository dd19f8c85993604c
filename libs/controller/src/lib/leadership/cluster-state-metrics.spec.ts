import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { AssignmentTrigger, computeAssignment, type TriggerDecision } from '@defender/assignment';
import type { AssignmentMap } from '@defender/contracts';
import { buildAssignmentMap } from '@defender/membership';
import { ClusterStateMetrics, ClusterStateMetricSet } from './cluster-state-metrics';
import { CM } from './controller-metrics';

const S = 1000;
const ids = (n: number) => Array.from({ length: n }, (_, i) => `defender-${i}`);

function metricSet(registry: Registry): ClusterStateMetricSet {
  const registers = [registry];
  const counter = (name: string, labelNames: string[] = []) => new Counter({ name, help: name, labelNames, registers });
  const gauge = (name: string) => new Gauge({ name, help: name, registers });
  const histogram = (name: string, labelNames: string[] = []) => new Histogram({ name, help: name, labelNames, buckets: [1, 10, 60], registers });
  return {
    electionParticipated: counter(CM.electionParticipated),
    controllerStarted: counter(CM.controllerStarted),
    leadershipDuration: gauge(CM.leadershipDuration),
    triggerState: counter(CM.triggerState, ['state']),
    restartDetected: counter(CM.restartDetected),
    stabilizationWindow: histogram(CM.stabilizationWindow, ['type']),
    activeHeartbeats: gauge(CM.activeHeartbeats),
    mapVersion: gauge(CM.mapVersion),
    scalingEvents: counter(CM.scalingEvents),
    scalingDuration: histogram(CM.scalingDuration),
    pendingChanges: gauge(CM.pendingChanges),
    emergencyDuration: histogram(CM.emergencyDuration),
    crashedRedistributed: gauge(CM.crashedRedistributed),
    phase1Duration: histogram(CM.phase1Duration),
    phase2Duration: histogram(CM.phase2Duration),
    rebalanceIterations: gauge(CM.rebalanceIterations),
  };
}

function mapOf(version: number, defenders: string[], chambers: number): AssignmentMap {
  return buildAssignmentMap({
    version,
    now: new Date(Date.UTC(2026, 10, 27)),
    fencingToken: '3',
    controllerId: 'c-test',
    trigger: 'cold_start',
    state: 'STABLE',
    lifecycleState: 'stable',
    firstAssignmentAt: null,
    assignments: Object.fromEntries(Array.from({ length: chambers }, (_, i) => [`tool${i}:ch1`, defenders[i % defenders.length]!])),
    defenders: defenders.map((id) => ({ id })),
  });
}

/**
 * Drives the real trigger state machine like the engine does (one observation per second, every
 * recompute published at once) and feeds the metrics; returns the value of a sample from the
 * registry's exposition text.
 */
describe('ClusterStateMetrics (seed 002 controller states, real trigger state machine)', () => {
  let registry: Registry;
  let metrics: ClusterStateMetrics;
  let mono: number;
  let held: AssignmentMap;
  let trigger: AssignmentTrigger;
  /** Beating defenders; a crashed one keeps its last heartbeat entry, which goes stale. */
  const alive = new Set<string>();
  const lastBeat = new Map<string, number>();
  const decisions: TriggerDecision[] = [];

  const value = async (sample: string): Promise<number | undefined> => {
    const text = await registry.metrics();
    const line = text.split('\n').find((l) => l.startsWith(`${sample} `));
    return line === undefined ? undefined : Number(line.slice(sample.length + 1));
  };

  /** Observes each second from `from` to `to`; a recompute is published as the next map version. */
  function run(from: number, to: number): void {
    for (let t = from; t <= to; t++) {
      mono = t * S;
      for (const id of alive) lastBeat.set(id, mono);
      const d = trigger.observe(mono, [...lastBeat].map(([id, lastHeartbeatAt]) => ({ id, lastHeartbeatAt })));
      decisions.push(d);
      metrics.decision(d, alive.size, held);
      if (d.action === 'recompute') {
        held = mapOf(held.version + 1, [...d.defenders], 24);
        trigger.published({ lifecycle: d.lifecycle, defenderIds: d.defenders });
        metrics.published(held, d.trigger);
      }
    }
  }

  beforeAll(() => {
    registry = new Registry();
    mono = 0;
    metrics = new ClusterStateMetrics(metricSet(registry), () => mono);
    // The leader inherits a 12-defender map, but only 3 defenders are alive: a cluster restart.
    held = mapOf(7, ids(12), 24);
    trigger = new AssignmentTrigger({ lifecycle: 'stable', defenderIds: ids(12) }, { heartbeatIntervalMs: 2 * S });
    for (const id of ids(3)) alive.add(id);
    metrics.campaigning();
    metrics.elected();
    metrics.engineStarted();
  });

  it('a restart: counted once, SCALING with the 30 s cold-start window, its map ends the episode', async () => {
    run(1, 5);
    expect(await value(`${CM.pendingChanges}`)).toBe(9);
    expect(await value(`${CM.scalingEvents}`)).toBe(1);
    run(6, 40);
    expect(decisions.filter((d) => d.action === 'recompute')).toHaveLength(1);
    expect(await value(`${CM.restartDetected}`)).toBe(1);
    expect(await value(`${CM.triggerState}{state="cold_start"}`)).toBe(1);
    expect(await value(`${CM.stabilizationWindow}_count{type="cold_start"}`)).toBe(1);
    expect(await value(`${CM.stabilizationWindow}_sum{type="cold_start"}`)).toBe(30);
    expect(await value(`${CM.scalingDuration}_count`)).toBe(1);
    expect(await value(`${CM.scalingDuration}_sum`)).toBe(30);
    expect(await value(`${CM.pendingChanges}`)).toBe(0);
    expect(await value(`${CM.mapVersion}`)).toBe(8);
    expect(await value(`${CM.activeHeartbeats}`)).toBe(3);
    expect(await value(`${CM.electionParticipated}`)).toBe(1);
    expect(await value(`${CM.controllerStarted}`)).toBe(1);
    expect(await value(`${CM.leadershipDuration}`)).toBe(40);
  });

  it('a crash: EMERGENCY timed from detection to its map; the crashed defender\'s chambers counted', async () => {
    const before = held;
    alive.delete('defender-1');
    run(41, 60);
    expect(await value(`${CM.activeHeartbeats}`)).toBe(2);
    const crash = decisions.filter((d) => d.action === 'recompute' && d.trigger === 'crash');
    expect(crash).toHaveLength(1);
    const orphans = Object.values(before.assignments).filter((o) => o === 'defender-1').length;
    expect(orphans).toBeGreaterThan(0);
    expect(await value(`${CM.crashedRedistributed}`)).toBe(orphans);
    expect(await value(`${CM.triggerState}{state="crash"}`)).toBe(1);
    expect(await value(`${CM.emergencyDuration}_count`)).toBe(1);
    // Detected and published within one observation.
    expect(await value(`${CM.emergencyDuration}_sum`)).toBe(0);
    expect(await value(`${CM.restartDetected}`)).toBe(1);
    expect(await value(`${CM.scalingEvents}`)).toBe(1);
  });

  it('a join batched in the 10 s window, then a planned-scale map; deposed resets the leadership time', async () => {
    alive.add('defender-9');
    run(61, 80);
    expect(await value(`${CM.triggerState}{state="planned_scale"}`)).toBe(1);
    expect(await value(`${CM.scalingEvents}`)).toBe(2);
    expect(await value(`${CM.stabilizationWindow}_sum{type="planned_scale"}`)).toBe(10);
    expect(await value(`${CM.scalingDuration}_count`)).toBe(2);
    expect(await value(`${CM.scalingDuration}_sum`)).toBe(40);
    expect(await value(`${CM.leadershipDuration}`)).toBe(80);
    metrics.deposed();
    expect(await value(`${CM.leadershipDuration}`)).toBe(0);
  });
});

describe('calculation phases (seed 000: phase 1 and 2 durations, weight rebalance iterations), real engine', () => {
  const value = async (registry: Registry, sample: string): Promise<number | undefined> => {
    const line = (await registry.metrics()).split('\n').find((l) => l.startsWith(`${sample} `));
    return line === undefined ? undefined : Number(line.slice(sample.length + 1));
  };
  // Weights 30,000-3,600,000 (the seeds' range), deterministic.
  const chambers = Array.from({ length: 400 }, (_, i) => ({ key: `tool${i}:ch1`, weight: 30_000 + ((i * 7919) % 120) * 29_750 }));
  /** A clock that advances 1 ms per reading: each phase's time is the number of its readings, not the machine's speed. */
  const ticking = () => {
    let t = 0;
    return () => t++;
  };

  it('a planned scale 4 -> 5 rebalances (phase 2 and its rounds counted); a crash map only places (phase 2 = 0)', async () => {
    const registry = new Registry();
    const metrics = new ClusterStateMetrics(metricSet(registry), () => 0);
    expect(await value(registry, CM.rebalanceIterations)).toBe(0);
    const four = computeAssignment(null, chambers, ids(4).map((id) => ({ id })), { clock: ticking() });
    const scale = computeAssignment({ assignments: four.assignments }, chambers, ids(5).map((id) => ({ id })), { clock: ticking() });
    expect(scale.stats.chambersMoved).toBeGreaterThan(0);
    metrics.calculated(scale.stats);
    expect(scale.stats.rebalanceIterations).toBeGreaterThan(0);
    expect(await value(registry, `${CM.phase1Duration}_count`)).toBe(1);
    expect(await value(registry, `${CM.phase1Duration}_sum`)).toBe(scale.stats.phase1DurationMs / 1000);
    expect(scale.stats.phase1DurationMs).toBeGreaterThan(0);
    expect(await value(registry, `${CM.phase2Duration}_sum`)).toBe(scale.stats.phase2DurationMs / 1000);
    expect(scale.stats.phase2DurationMs).toBeGreaterThan(0);
    expect(await value(registry, CM.rebalanceIterations)).toBe(scale.stats.rebalanceIterations);

    const alive = ids(5).filter((id) => id !== 'defender-2');
    const crash = computeAssignment({ assignments: scale.assignments }, chambers, alive.map((id) => ({ id })), { clock: ticking(), mode: 'orphans-only' });
    metrics.calculated(crash.stats);
    expect(crash.stats.phase2DurationMs).toBe(0);
    expect(await value(registry, `${CM.phase1Duration}_count`)).toBe(2);
    expect(await value(registry, `${CM.phase2Duration}_count`)).toBe(2);
    expect(await value(registry, `${CM.phase2Duration}_sum`)).toBe(scale.stats.phase2DurationMs / 1000);
    expect(await value(registry, CM.rebalanceIterations)).toBe(0);
  });
});
