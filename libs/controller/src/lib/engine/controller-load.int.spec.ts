import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { chamberLoadMsPerHour, DEFAULT_COST_MODEL } from '@defender/assignment';
import type { AssignmentMap, Heartbeat } from '@defender/contracts';
import { buildAssignmentMap } from '@defender/membership';
import { AssignmentMapBucket, HeartbeatBucket, openBucket } from '@defender/nats-kv';
import { describeWithInfra, testNatsConnectOptions, waitFor } from '@defender/infra-harness';
import { ControllerEngine, EngineConfig } from './controller-engine';
import { INT_CONFIG, LockstepClock } from './int-testing';

/**
 * A mixed fab: every chamber has the same samples per run (120,000), but half run 10x as often as
 * the others. Balanced by samples, each defender holds 10 chambers; in the published map two
 * defenders hold every fast chamber. The defenders report the run rates they measure; the engine
 * must notice the sustained drift and rebalance so that per-defender load is within ±10 %.
 */
const SAMPLES = 120_000;
const FAST = 30; // runs per hour
const SLOW = 3;
const chambers = Array.from({ length: 40 }, (_, i) => ({ key: `tool${String(i).padStart(2, '0')}:ch1`, weight: SAMPLES }));
const rateOf = (key: string) => (Number(key.slice(4, 6)) < 20 ? FAST : SLOW);
const ids = ['defender-0', 'defender-1', 'defender-2', 'defender-3'];

const config: EngineConfig = {
  ...INT_CONFIG,
  controllerId: 'c-load',
  // Short times for the test; production: 10 % band, 5 min sustained, 10 min cooldown (ADR 0008).
  loadBalancing: { policy: { driftBand: 0.1, sustainMs: 1_000, cooldownMs: 1_000, settleMs: 500 } },
};

/** CPU ms per hour of each defender if the chambers really cost what the model says. */
function cpuPerDefender(map: AssignmentMap): Record<string, number> {
  const out: Record<string, number> = Object.fromEntries(ids.map((id) => [id, 0]));
  for (const [key, owner] of Object.entries(map.assignments)) out[owner] = (out[owner] ?? 0) + chamberLoadMsPerHour(rateOf(key), SAMPLES, DEFAULT_COST_MODEL);
  return out;
}

function spread(load: Record<string, number>): { max: number; min: number } {
  const v = Object.values(load);
  const mean = v.reduce((a, x) => a + x, 0) / v.length;
  return { max: Math.max(...v) / mean, min: Math.min(...v) / mean };
}

/**
 * Runs an engine for term 2 against the buckets, on engine time (LockstepClock): `beat` writes the
 * defenders' heartbeats in every engine sleep, so the policy's sustain, cooldown and settle times are
 * counted in ticks of 200 ms, whatever the machine's load.
 */
function startEngine(b: { maps: AssignmentMapBucket; heartbeats: HeartbeatBucket }, list: { key: string; weight: number }[], cfg: EngineConfig, beat: () => Promise<unknown>) {
  const leader = { on: true };
  const clock = new LockstepClock(beat);
  const engine = new ControllerEngine({ fencingToken: '2', isLeader: () => leader.on }, cfg, {
    maps: b.maps,
    heartbeats: b.heartbeats,
    chambers: { list: async () => list },
    now: Date.now,
    monotonic: clock.monotonic,
    sleep: clock.sleep,
  });
  const running = engine.run(200);
  /** Waits until the engine has slept `n` more times, however long that takes. */
  const ticksLater = async (n: number) => {
    const target = clock.ticks + n;
    await waitFor(`${n} more engine ticks`, async () => clock.ticks >= target, 30_000, 10);
  };
  return { engine, clock, ticksLater, stop: async () => ((leader.on = false), await running) };
}

/** A defender's heartbeat reporting `rates` with the prior as its calibrated cost. */
function reporting(id: string, mapVersion: number, rates: [string, number][]): Heartbeat {
  const t = new Date().toISOString();
  return {
    schema: 1,
    defenderId: id,
    state: 'STABLE',
    mapVersionSeen: mapVersion,
    load: { chambers: rates.length, inflight: 0, processedTotal: 0 },
    loadReport: { ...DEFAULT_COST_MODEL, calibrationRuns: 100, cpuMsPerSecond: 0, rates },
    intervalSeconds: 0.2,
    startedAt: t,
    sentAt: t,
  };
}

describeWithInfra(['nats'], 'ControllerEngine balancing measured load against real NATS KV', () => {
  let nc: NatsConnection;
  beforeAll(async () => {
    nc = await connect(testNatsConnectOptions());
  });
  afterAll(async () => {
    await nc.drain();
  });

  it('a mixed fab (run rates 10x apart, equal samples per run) ends with per-defender load within ±10 %', async () => {
    const tag = `load-${process.pid}`;
    const maps = new AssignmentMapBucket(await openBucket(nc, `map-${tag}`, { history: 5 }), `map-${tag}`);
    const heartbeats = new HeartbeatBucket(await openBucket(nc, `hb-${tag}`), `hb-${tag}`);
    // Balanced by samples: 10 chambers each, but defender-0 and -1 hold all the fast ones.
    const before = buildAssignmentMap({
      version: 1,
      now: new Date(),
      fencingToken: '1',
      controllerId: 'old',
      trigger: 'cold_start',
      state: 'STABLE',
      lifecycleState: 'stable',
      firstAssignmentAt: new Date().toISOString(),
      assignments: Object.fromEntries(chambers.map((c, i) => [c.key, ids[Math.floor(i / 10)]!])),
      weights: Object.fromEntries(chambers.map((c) => [c.key, c.weight])),
      defenders: ids.map((id) => ({ id })),
    });
    await maps.publish(before, null);
    const beforeCpu = cpuPerDefender(before);
    expect(spread(beforeCpu).max).toBeGreaterThan(1.5);

    // Each defender reports the rates of the chambers the map it last read gives it (read in each beat).
    let held: AssignmentMap = before;
    const hb = (id: string): Heartbeat =>
      reporting(id, held.version, Object.keys(held.assignments).filter((k) => held.assignments[k] === id).map((k) => [k, rateOf(k)]));
    await Promise.all(ids.map((id) => heartbeats.publish(hb(id))));
    const { stop, ticksLater } = startEngine({ maps, heartbeats }, chambers, config, async () => {
      held = (await maps.read())?.map ?? held;
      await Promise.all(ids.map((id) => heartbeats.publish(hb(id))));
    });
    try {
      await waitFor('a load_drift map', async () => (await maps.read())?.map.trigger === 'load_drift', 30_000);
      const current = (await maps.read())!.map;
      const afterCpu = cpuPerDefender(current);
      const s = spread(afterCpu);
      expect(s.max).toBeLessThanOrEqual(1.1);
      expect(s.min).toBeGreaterThanOrEqual(0.9);
      // Samples per defender stay equal too here (every chamber the same size).
      expect(current.statistics.movedWeightFraction).toBeGreaterThan(0);
      expect(current.statistics.movedWeightFraction).toBeLessThanOrEqual(1.1 * current.statistics.floorFraction + 1e-9);
      // Stable afterwards: the balanced map is a fixed point, noise-free reports move nothing more,
      // for longer than a cooldown and a sustain time together (15 ticks, 3 s of engine time).
      const rev = (await maps.read())!.revision;
      await ticksLater(15);
      expect((await maps.read())!.revision).toBe(rev);
      const dir = join(process.cwd(), 'tmp');
      mkdirSync(dir, { recursive: true });
      writeFileSync(
        join(dir, 'controller-load-mixed-fab.json'),
        JSON.stringify({ beforeCpuMsPerHour: beforeCpu, afterCpuMsPerHour: afterCpu, before: spread(beforeCpu), after: s, statistics: current.statistics }, null, 2),
      );
    } finally {
      await stop();
    }
  });

  it('after a crash: orphans move at once, then one post-crash pass restores the ±5 % band', async () => {
    const tag = `crash-${process.pid}`;
    const maps = new AssignmentMapBucket(await openBucket(nc, `map-${tag}`, { history: 5 }), `map-${tag}`);
    const heartbeats = new HeartbeatBucket(await openBucket(nc, `hb-${tag}`), `hb-${tag}`);
    // Three defenders with ten small chambers each; defender-3 holds one chamber as heavy as ten.
    const small = Array.from({ length: 30 }, (_, i) => ({ key: `small${String(i).padStart(2, '0')}:ch1`, weight: 100_000 }));
    const heavy = { key: 'heavy:ch1', weight: 5_200_000 };
    const fab = [...small, heavy];
    const owners = Object.fromEntries([...small.map((c, i) => [c.key, ids[i % 3]!]), [heavy.key, 'defender-3']]);
    const costOf = (c: { weight: number }) => chamberLoadMsPerHour(SLOW, c.weight, DEFAULT_COST_MODEL);
    const perDefender = (m: AssignmentMap, live: readonly string[]) => {
      const out: Record<string, number> = Object.fromEntries(live.map((id) => [id, 0]));
      for (const c of fab) out[m.assignments[c.key]!] = (out[m.assignments[c.key]!] ?? 0) + costOf(c);
      return out;
    };
    await maps.publish(
      buildAssignmentMap({
        version: 1,
        now: new Date(),
        fencingToken: '1',
        controllerId: 'old',
        trigger: 'planned_scale',
        state: 'STABLE',
        lifecycleState: 'stable',
        firstAssignmentAt: new Date().toISOString(),
        assignments: owners,
        defenders: ids.map((id) => ({ id })),
      }),
      null,
    );
    let beating = [...ids];
    const hb = (id: string): Heartbeat => reporting(id, 1, fab.filter((c) => owners[c.key] === id).map((c) => [c.key, SLOW]));
    await Promise.all(beating.map((id) => heartbeats.publish(hb(id))));
    const { stop, clock, ticksLater } = startEngine({ maps, heartbeats }, fab, { ...config, loadBalancing: { policy: { ...config.loadBalancing!.policy, settleMs: 2_000 } } }, () =>
      Promise.all(beating.map((id) => heartbeats.publish(hb(id)))),
    );
    try {
      await waitFor('the takeover', async () => (await maps.read())?.map.fencingToken === '2', 30_000);
      // defender-3 crashes: its beats stop between two ticks.
      await clock.atNextTick(() => {
        beating = ids.slice(0, 3);
      });
      await waitFor('the crash map', async () => (await maps.read())?.map.trigger === 'crash', 30_000);
      const crash = (await maps.read())!.map;
      // Only the orphan moved: the heavy chamber, onto one survivor, which is now far above the others.
      expect(Object.entries(crash.assignments).filter(([k, o]) => o !== owners[k]).map(([k]) => k)).toEqual([heavy.key]);
      const left = spread(perDefender(crash, ids.slice(0, 3)));
      expect(left.max).toBeGreaterThan(1.05);
      await waitFor('the post-crash pass', async () => (await maps.read())?.map.trigger === 'post_crash', 30_000);
      const pass = (await maps.read())!.map;
      const after = spread(perDefender(pass, ids.slice(0, 3)));
      expect(after.max).toBeLessThanOrEqual(1.05 + 1e-9);
      expect(after.min).toBeGreaterThanOrEqual(0.95 - 1e-9);
      expect(pass.assignments[heavy.key]).toBe(crash.assignments[heavy.key]);
      // One pass: nothing more is published while the cluster stays stable (15 ticks, 3 s of engine
      // time: longer than the settle time and a cooldown).
      const rev = (await maps.read())!.revision;
      await ticksLater(15);
      expect((await maps.read())!.revision).toBe(rev);
    } finally {
      await stop();
    }
  });
});
