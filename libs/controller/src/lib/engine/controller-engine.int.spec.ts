import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import type { AssignmentMap, Heartbeat } from '@defender/contracts';
import { buildAssignmentMap } from '@defender/membership';
import { AssignmentMapBucket, HeartbeatBucket, openBucket } from '@defender/nats-kv';
import { describeWithInfra, testNatsConnectOptions, waitFor } from '@defender/infra-harness';
import { ControllerEngine, EngineConfig } from './controller-engine';
import { INT_CONFIG, LockstepClock } from './int-testing';

const config: EngineConfig = INT_CONFIG;

const chambers = Array.from({ length: 12 }, (_, i) => ({ key: `tool${i}:ch1`, weight: 30_000 * (1 + (i % 4)) }));

describeWithInfra(['nats'], 'ControllerEngine against real NATS KV', () => {
  let nc: NatsConnection;
  let n = 0;
  beforeAll(async () => {
    nc = await connect(testNatsConnectOptions());
  });
  afterAll(async () => {
    await nc.drain();
  });

  async function buckets() {
    const tag = `ce${++n}-${process.pid}`;
    return {
      maps: new AssignmentMapBucket(await openBucket(nc, `map-${tag}`, { history: 5 }), `map-${tag}`),
      heartbeats: new HeartbeatBucket(await openBucket(nc, `hb-${tag}`), `hb-${tag}`),
    };
  }

  function hb(id: string): Heartbeat {
    const t = new Date().toISOString();
    return { schema: 1, defenderId: id, state: 'FOLLOWER', mapVersionSeen: 0, load: { chambers: 0, inflight: 0, processedTotal: 0 }, intervalSeconds: 0.2, startedAt: t, sentAt: t };
  }

  /** The beating defenders' heartbeats, written in every engine sleep (LockstepClock). */
  function beats(b: Awaited<ReturnType<typeof buckets>>, ids: () => readonly string[]) {
    return new LockstepClock(() => Promise.all(ids().map((id) => b.heartbeats.publish(hb(id)))));
  }

  function engine(b: Awaited<ReturnType<typeof buckets>>, token: string, leader: { on: boolean }, clock: LockstepClock, cfg: EngineConfig = config) {
    return new ControllerEngine({ fencingToken: token, isLeader: () => leader.on }, cfg, {
      maps: b.maps,
      heartbeats: b.heartbeats,
      chambers: { list: async () => chambers },
      now: Date.now,
      monotonic: clock.monotonic,
      sleep: clock.sleep,
    });
  }

  /** Waits until the engine has slept `n` more times (ticks of engine time), however long that takes. */
  async function ticksLater(clock: LockstepClock, n: number): Promise<void> {
    const target = clock.ticks + n;
    await waitFor(`${n} more engine ticks`, async () => clock.ticks >= target, 30_000, 10);
  }

  /** The map a previous term (token 3) published, version 4, two defenders; `owner` places chamber i. */
  function previousMap(trigger: AssignmentMap['trigger'], lifecycleState: AssignmentMap['lifecycleState'], owner: (i: number) => string): AssignmentMap {
    return buildAssignmentMap({
      version: 4,
      now: new Date(),
      fencingToken: '3',
      controllerId: 'old',
      trigger,
      state: 'STABLE',
      lifecycleState,
      firstAssignmentAt: new Date().toISOString(),
      assignments: Object.fromEntries(chambers.map((c, i) => [c.key, owner(i)])),
      defenders: [{ id: 'defender-0' }, { id: 'defender-1' }],
    });
  }

  it('cold start: batches the joins, publishes one balanced map, and stops when the term ends', async () => {
    const b = await buckets();
    const ids = ['defender-0', 'defender-1', 'defender-2'];
    // The three join before the engine starts, then beat in every engine tick.
    await Promise.all(ids.map((id) => b.heartbeats.publish(hb(id))));
    const clock = beats(b, () => ids);
    const leader = { on: true };
    const e = engine(b, '7', leader, clock);
    const running = e.run(200);
    try {
      await waitFor('a map', async () => (await b.maps.read()) !== null, 30_000);
      const first = (await b.maps.read())!;
      expect(first.map).toMatchObject({ version: 1, fencingToken: '7', trigger: 'cold_start', lifecycleState: 'post_cold_start', defenderCount: 3, chamberCount: 12 });
      expect(first.map.statistics.maxWeightPerDefender / first.map.statistics.avgWeightPerDefender).toBeLessThanOrEqual(1.34);
      // One map: ten more ticks (2 s of engine time) of the same three defenders publish nothing.
      await ticksLater(clock, 10);
      expect((await b.maps.read())!.revision).toBe(first.revision);
    } finally {
      leader.on = false;
      expect(await running).toBe('term ended');
    }
  });

  it('a two-defender cluster restarted whole: the leader, up first, publishes one restart map and moves no chamber', async () => {
    const b = await buckets();
    // Balanced by samples (15 units each): a balance pass has nothing to move.
    const old = previousMap('cold_start', 'post_cold_start', (i) => (i % 4 === 0 || i % 4 === 3 ? 'defender-0' : 'defender-1'));
    await b.maps.publish(old, null);
    // The heartbeat bucket is empty (every entry expired while the cluster was down). defender-0
    // comes up at the engine's first tick after the takeover, defender-1 1.5 s of engine time later:
    // more than one death threshold (3 x 200 ms), inside the cold-start window (3 s).
    let firstBeatAt: number | undefined;
    const clock = beats(b, () => {
      firstBeatAt ??= clock.monotonic();
      return clock.monotonic() - firstBeatAt >= 1500 ? ['defender-0', 'defender-1'] : ['defender-0'];
    });
    const leader = { on: true };
    const e = engine(b, '9', leader, clock, { ...config, trigger: { ...config.trigger, coldStartWindowMs: 3000, maxBatchWaitMs: 6000 } });
    const running = e.run(200);
    try {
      await waitFor('the map after the restart', async () => (await b.maps.read())!.map.version > 5, 30_000);
      const after = (await b.maps.read())!.map;
      // One map after the takeover (v5): no crash map giving defender-0 everything, then a join.
      expect(after).toMatchObject({ version: 6, trigger: 'restart', lifecycleState: 'post_cold_start', defenderCount: 2, assignments: old.assignments });
      expect(after.statistics.chambersMoved).toBe(0);
      // And no further map in ten more ticks.
      await ticksLater(clock, 10);
      expect((await b.maps.read())!.map.version).toBe(6);
    } finally {
      leader.on = false;
      expect(await running).toBe('term ended');
    }
  });

  it('takeover re-stamps the map with the new token; an older term then cannot publish', async () => {
    const b = await buckets();
    const old = previousMap('planned_scale', 'stable', (i) => `defender-${i % 2}`);
    const rev = await b.maps.publish(old, null);
    // Both defenders are live when this term starts, and beat in every tick.
    let beating = ['defender-0', 'defender-1'];
    await Promise.all(beating.map((id) => b.heartbeats.publish(hb(id))));
    const clock = beats(b, () => beating);
    const leader = { on: true };
    const e = engine(b, '9', leader, clock);
    const running = e.run(200);
    try {
      await waitFor('takeover', async () => (await b.maps.read())!.map.fencingToken === '9', 30_000);
      const now = (await b.maps.read())!;
      expect(now.map).toMatchObject({ version: 5, trigger: 'takeover', lifecycleState: 'stable', assignments: old.assignments });
      // The deposed leader's compare-and-set from the revision it knew fails.
      await expect(b.maps.publish({ ...old, version: 5 }, rev)).rejects.toThrow(/no longer the latest/);

      // A newer term (token 11) takes the map: this engine sees it and steps down.
      await b.maps.publish({ ...now.map, version: 6, fencingToken: '11', trigger: 'takeover' }, now.revision);
      // defender-1 leaves gracefully (between two ticks: no beat of it is in flight): the batch makes
      // the engine publish, and its CAS meets token 11.
      await clock.atNextTick(async () => {
        beating = ['defender-0'];
        await b.heartbeats.remove('defender-1');
      });
      expect(await running).toMatch(/newer term \(token 11\)/);
    } finally {
      leader.on = false;
    }
  });
});
