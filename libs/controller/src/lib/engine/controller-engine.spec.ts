import type { AssignmentMap, Heartbeat } from '@defender/contracts';
import { buildAssignmentMap } from '@defender/membership';
import { NatsUnavailableError, RevisionConflictError, type ObservedHeartbeat, type StoredMap } from '@defender/nats-kv';
import { ControllerEngine, EngineConfig } from './controller-engine';

const INTERVAL_MS = 2000;
const HOUR_MS = 3_600_000;

const config: EngineConfig = {
  controllerId: 'c-test',
  trigger: { heartbeatIntervalMs: INTERVAL_MS },
  strategy: 'sticky-balanced',
  tolerance: 0.05,
  cooldownMs: 0,
  vnodes: 200,
  chamberRefreshMs: 60_000,
};

const IDS = ['defender-0', 'defender-1', 'defender-2'];
const chambers = Array.from({ length: 9 }, (_, i) => ({ key: `tool${i}:ch1`, weight: 30_000 * (1 + (i % 3)) }));

function heartbeat(id: string): Heartbeat {
  const t = '2026-11-27T08:00:00.000Z';
  return { schema: 1, defenderId: id, state: 'STABLE', mapVersionSeen: 1, load: { chambers: 3, inflight: 0, processedTotal: 0 }, intervalSeconds: 2, startedAt: t, sentAt: t };
}

/** A loaded defender beats late (every 2.5 s against the 2 s interval): alive, but some ticks see no new revision. */
const BEAT_MS = 2500;

/**
 * A stable 3-defender cluster driven tick by tick: every controller sleep advances both clocks by
 * the slept time, lets each beating defender write a new heartbeat revision when its next beat is
 * due, and may step the wall clock (as NTP would). No real timers: the test runs the same on an
 * idle or a loaded machine.
 */
function cluster(opts: {
  ticks: number;
  wallStepAt?: Record<number, number>;
  stopsBeatingAt?: Record<string, number>;
  /** Ticks [from, to) during which NATS is unavailable: no heartbeat is read or written. */
  natsOutage?: { from: number; to: number };
}) {
  let wall = Date.UTC(2026, 10, 27, 8);
  let mono = 1_000;
  let tick = 0;
  const revisions = new Map(IDS.map((id, i) => [id, i + 1]));
  const nextBeatAt = new Map(IDS.map((id, i) => [id, mono + 700 * (i + 1)]));
  let nextRevision = IDS.length + 1;
  const published: AssignmentMap[] = [];
  const held: StoredMap = {
    revision: 1,
    map: buildAssignmentMap({
      version: 1,
      now: new Date(wall),
      fencingToken: '7',
      controllerId: 'c-test',
      trigger: 'cold_start',
      state: 'STABLE',
      lifecycleState: 'stable',
      firstAssignmentAt: new Date(wall).toISOString(),
      assignments: Object.fromEntries(chambers.map((c, i) => [c.key, IDS[i % IDS.length] as string])),
      weights: Object.fromEntries(chambers.map((c) => [c.key, c.weight])),
      defenders: IDS.map((id) => ({ id })),
    }),
  };
  let current = held;
  const activeByTick: number[] = [];
  const blindFor: number[] = [];
  const outage = () => opts.natsOutage !== undefined && tick >= opts.natsOutage.from && tick < opts.natsOutage.to;
  const engine: ControllerEngine = new ControllerEngine({ fencingToken: '7', isLeader: () => true }, config, {
    maps: {
      read: async () => current,
      lastRevision: async () => current.revision,
      publish: async (map, expected) => {
        if (expected !== current.revision) throw new Error(`unexpected revision ${expected}`);
        published.push(map);
        current = { map, revision: current.revision + 1 };
        return current.revision;
      },
    },
    heartbeats: {
      readAll: async () => {
        if (outage()) throw new NatsUnavailableError('heartbeats: no answer');
        return {
          heartbeats: [...revisions].map(([id, revision]): ObservedHeartbeat => ({ heartbeat: heartbeat(id), revision, storedAt: new Date(wall) })),
          bad: [],
        };
      },
    },
    chambers: { list: async () => chambers },
    now: () => wall,
    monotonic: () => mono,
    observer: { blind: (ms) => blindFor.push(ms) },
    sleep: async (ms) => {
      activeByTick.push(engine.activeDefenders);
      mono += ms;
      wall += ms + (opts.wallStepAt?.[tick] ?? 0);
      tick += 1;
      for (const id of revisions.keys()) {
        const stopsAt = opts.stopsBeatingAt?.[id];
        if (stopsAt !== undefined && tick >= stopsAt) continue;
        let due = nextBeatAt.get(id) as number;
        // A beat due while NATS is out fails; the defender beats again on its schedule.
        for (; due <= mono; due += BEAT_MS) if (!outage()) revisions.set(id, nextRevision++);
        nextBeatAt.set(id, due);
      }
      if (tick >= opts.ticks) engine.stop();
    },
  });
  return { run: () => engine.run(INTERVAL_MS), published, activeByTick, blindFor, engine, monoNow: () => mono, wallNow: () => wall };
}

describe('ControllerEngine: liveness on the monotonic clock', () => {
  it.each([
    ['+30 s', 30_000],
    ['-30 s', -30_000],
    ['+1 h', HOUR_MS],
    ['-1 h', -HOUR_MS],
  ])('a wall-clock step of %s publishes nothing and keeps every defender alive', async (_label, stepMs) => {
    const c = cluster({ ticks: 12, wallStepAt: { 3: stepMs } });
    expect(await c.run()).toBe('stopped');
    expect(c.published).toEqual([]);
    expect(c.activeByTick).toEqual(Array(12).fill(3));
    expect(c.engine.decision).toMatchObject({ action: 'idle', state: 'STABLE' });
  });

  it('steps both ways in one run (+30 s, then -30 s, then +1 h, then -1 h): still nothing published', async () => {
    const c = cluster({ ticks: 20, wallStepAt: { 3: 30_000, 7: -30_000, 11: HOUR_MS, 15: -HOUR_MS } });
    await c.run();
    expect(c.published).toEqual([]);
    expect(Math.min(...c.activeByTick)).toBe(3);
  });

  it.each([
    ['no step', 0],
    ['-30 s', -30_000],
    ['-1 h', -HOUR_MS],
    ['+1 h', HOUR_MS],
  ])('a defender that stops beating is still judged crashed after 3 missed heartbeats (%s)', async (_label, stepMs) => {
    // defender-1 writes its last heartbeat at tick 1 and the wall clock steps right after: a step
    // back must not keep it alive, a step forward must not make the others look dead.
    const c = cluster({ ticks: 8, wallStepAt: { 2: stepMs }, stopsBeatingAt: { 'defender-1': 2 } });
    await c.run();
    expect(c.published).toHaveLength(1);
    const crash = c.published[0] as AssignmentMap;
    expect(crash).toMatchObject({ trigger: 'crash', version: 2 });
    expect(Object.keys(crash.defenderInfo)).toEqual(['defender-0', 'defender-2']);
    // Exactly the orphaned chambers moved.
    expect(crash.statistics.chambersMoved).toBe(3);
    // Detected after 3 intervals without a new revision (seen at tick 1, judged at tick 5), not earlier.
    expect(c.activeByTick.slice(0, 5)).toEqual([3, 3, 3, 3, 3]);
    expect(c.activeByTick[5]).toBe(2);
    // The map's own timestamp is wall-clock data, stepped with the clock.
    expect(Date.parse(crash.timestamp)).toBe(c.wallNow() - (8 - 5) * INTERVAL_MS);
  });

  it('a NATS outage longer than the detection time (no heartbeat read or written) publishes nothing: that time ages nobody', async () => {
    // Ticks 3-8 fail to read (each retry sleeps its backoff); the defenders' beats fail meanwhile.
    const c = cluster({ ticks: 30, natsOutage: { from: 3, to: 12 } });
    await c.run();
    expect(c.published).toEqual([]);
    expect(c.blindFor).toHaveLength(1);
    expect(c.blindFor[0]).toBeGreaterThan(3 * INTERVAL_MS);
    expect(c.activeByTick.at(-1)).toBe(3);
  });

  it('a defender that died during a NATS outage is judged crashed a detection time after the heartbeats are readable again', async () => {
    const c = cluster({ ticks: 40, natsOutage: { from: 3, to: 12 }, stopsBeatingAt: { 'defender-1': 5 } });
    await c.run();
    expect(c.published).toHaveLength(1);
    expect(c.published[0]).toMatchObject({ trigger: 'crash', version: 2 });
    expect(Object.keys((c.published[0] as AssignmentMap).defenderInfo)).toEqual(['defender-0', 'defender-2']);
  });

  it('reports a batching deadline as wall-clock time for people, whatever the monotonic origin', () => {
    const c = cluster({ ticks: 1 });
    expect(c.engine.wallTimeOf(c.monoNow() + 5000).getTime()).toBe(c.wallNow() + 5000);
  });
});

/**
 * ADR 0007: NATS lost its store and the map bucket came back empty. Defenders accept only maps newer
 * than the one they hold, so the controller numbers the next map above every version it has seen,
 * including the ones defenders report holding in their heartbeats.
 */
describe('ControllerEngine: a map bucket that came back empty', () => {
  function emptyBucket(opts: { stored: StoredMap | null; emptyAfterTick?: number; mapVersionSeen: number; stopsBeatingAt?: number }) {
    let mono = 1_000;
    let wall = Date.UTC(2026, 10, 27, 8);
    let stored = opts.stored;
    let rev = 0;
    let tick = 0;
    const published: AssignmentMap[] = [];
    const engine: ControllerEngine = new ControllerEngine({ fencingToken: '7', isLeader: () => true }, config, {
      maps: {
        read: async () => stored,
        lastRevision: async () => stored?.revision ?? 0,
        publish: async (map, expected) => {
          if ((expected ?? 0) !== (stored?.revision ?? 0)) throw new RevisionConflictError('defender-assignments', 'assignment-map', expected ?? 0);
          published.push(map);
          stored = { map, revision: (stored?.revision ?? 0) + 1 };
          return stored.revision;
        },
      },
      heartbeats: {
        readAll: async () => ({
          heartbeats: IDS.filter((id) => !(id === 'defender-1' && opts.stopsBeatingAt !== undefined && tick >= opts.stopsBeatingAt)).map(
            (id): ObservedHeartbeat => ({ heartbeat: { ...heartbeat(id), mapVersionSeen: opts.mapVersionSeen }, revision: ++rev, storedAt: new Date(wall) }),
          ),
          bad: [],
        }),
      },
      chambers: { list: async () => chambers },
      now: () => wall,
      monotonic: () => mono,
      sleep: async (ms) => {
        mono += ms;
        wall += ms;
        tick += 1;
        if (tick === opts.emptyAfterTick) stored = null;
        if (published.length >= 1 || tick > 200) engine.stop();
      },
    });
    return { run: () => engine.run(INTERVAL_MS), published };
  }

  it('a new term on an empty bucket publishes its first map above the version the defenders hold', async () => {
    const c = emptyBucket({ stored: null, mapVersionSeen: 41 });
    await c.run();
    expect(c.published.map((m) => [m.version, m.trigger])).toEqual([[42, 'cold_start']]);
  });

  it('a bucket emptied during the term: the next map is created above every version seen, from the map held (sticky)', async () => {
    const held = buildAssignmentMap({
      version: 5,
      now: new Date(Date.UTC(2026, 10, 27, 8)),
      fencingToken: '7',
      controllerId: 'c-test',
      trigger: 'cold_start',
      state: 'STABLE',
      lifecycleState: 'stable',
      firstAssignmentAt: '2026-11-27T08:00:00.000Z',
      assignments: Object.fromEntries(chambers.map((c, i) => [c.key, IDS[i % IDS.length] as string])),
      weights: Object.fromEntries(chambers.map((c) => [c.key, c.weight])),
      defenders: IDS.map((id) => ({ id })),
    });
    // defender-1 leaves after the bucket was emptied: the compare-and-set on the lost revision fails,
    // the map is re-read (missing) and the next one is created.
    const c = emptyBucket({ stored: { map: held, revision: 3 }, emptyAfterTick: 1, mapVersionSeen: 5, stopsBeatingAt: 2 });
    await c.run();
    expect(c.published.map((m) => [m.version, m.trigger])).toEqual([[6, 'planned_scale']]);
    // Only defender-1's chambers moved: the lost map was the base.
    expect((c.published[0] as AssignmentMap).statistics.chambersMoved).toBe(3);
  });
});
