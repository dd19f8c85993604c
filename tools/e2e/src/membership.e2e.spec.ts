import { describeWithInfra, getJson } from '@defender/infra-harness';
import { DEFAULT_HEARTBEAT_SECONDS, fabChambers, LocalCluster } from './cluster';

/**
 * Issue 7's scenarios on a real cluster: election agent, two controllers, defenders, NATS KV and a
 * SQLite store, with intervals shortened so each runs in seconds (heartbeat 1 s, cold-start
 * window 3 s, scale window 2 s, election TTL 2 s).
 */
describeWithInfra(['nats'], 'cluster membership and assignment flow (multi-process)', () => {
  let cluster: LocalCluster | undefined;

  afterEach(async () => {
    await cluster?.stop();
    cluster = undefined;
  });

  async function startCluster(defenders: number, chambers = 60, opts: { scaleWindowSeconds?: number } = {}) {
    const c = await LocalCluster.start({ chambers: fabChambers(chambers), ...opts });
    cluster = c;
    await c.startAgent();
    await c.startController('controller-a');
    await c.startController('controller-b');
    for (let i = 0; i < defenders; i++) await c.startDefender(`pod-${i}`);
    return c;
  }

  const ownersOf = (m: { assignments: Record<string, string> }) => new Set(Object.values(m.assignments));

  it('cold start: 10 defenders joining -> exactly one map, after the cold-start window, covering every chamber', async () => {
    const started = Date.now();
    const c = await startCluster(10);
    await c.waitFor('the first map', async () => c.publications.length > 0, 60_000);
    const first = c.publications[0]!;
    // Nothing else may follow: wait out another window plus a scale window.
    await new Promise((r) => setTimeout(r, 6000));
    expect(c.publications).toHaveLength(1);
    expect(first.seenAt - started).toBeGreaterThanOrEqual(3000);
    expect(first.map).toMatchObject({ version: 1, trigger: 'cold_start', lifecycleState: 'post_cold_start', defenderCount: 10, chamberCount: 60 });
    expect(ownersOf(first.map).size).toBe(10);
    expect(first.map.statistics.maxWeightPerDefender / first.map.statistics.avgWeightPerDefender).toBeLessThan(1.5);
    const leader = await c.leader();
    expect(leader).toBeDefined();
    expect(first.map.controllerId).toBe(leader!.name);
    await c.waitFor('every defender applied v1', async () => {
      const seen = (await c.heartbeats.readAll()).heartbeats.map((h) => h.heartbeat.mapVersionSeen);
      return seen.length === 10 && seen.every((v) => v === 1);
    }, 20_000);
  });

  it('planned scale 10 -> 13 -> 10: one map per step, movement near the floor, leavers drained', async () => {
    const c = await startCluster(10);
    await c.waitFor('the cold-start map', async () => c.publications.length === 1, 60_000);
    for (let i = 10; i < 13; i++) await c.startDefender(`pod-${i}`);
    await c.waitFor('a map with 13 defenders', async () => c.latest()?.defenderCount === 13, 60_000);
    await new Promise((r) => setTimeout(r, 3000));
    expect(c.publications).toHaveLength(2);
    const up = c.latest()!;
    expect(up.trigger).toBe('planned_scale');
    expect(up.lifecycleState).toBe('stable');
    // Moved weight against the floor 3/13 (granularity of 60 chambers allows some slack).
    expect(up.statistics.floorFraction).toBeGreaterThan(0.15);
    expect(up.statistics.movedWeightFraction).toBeLessThanOrEqual(up.statistics.floorFraction * 1.1 + 0.1);

    // A scale-down terminates its pods at once (as Kubernetes does): one leave batch, one map. Stopped
    // one after another, each drain can outlast the scale window on a busy machine (two maps, rightly).
    const leavers = c.procs.filter((x) => ['pod-10', 'pod-11', 'pod-12'].includes(x.name));
    const exits = await Promise.all(leavers.map((p) => p.app.stop('SIGTERM')));
    for (const e of exits) expect(e).toEqual({ code: 0, signal: null });
    await c.waitFor('a map with 10 defenders', async () => c.latest()?.defenderCount === 10, 60_000);
    await new Promise((r) => setTimeout(r, 3000));
    expect(c.publications).toHaveLength(3);
    const down = c.latest()!;
    expect(down.trigger).toBe('planned_scale');
    expect([...ownersOf(down)].sort()).toEqual([...ownersOf(c.publications[0]!.map)].sort());
  });

  it('crash: a SIGKILLed defender\'s chambers move within 3 heartbeats + 2 s, and nothing else moves', async () => {
    const c = await startCluster(6);
    await c.waitFor('the cold-start map', async () => c.publications.length >= 1, 60_000);
    // A defender that started after the cold-start window joins by a planned map of its own (seen in
    // a fresh-clone CI): the crash is tested on a map that holds all six.
    await c.waitFor('a map with all 6 defenders', async () => c.latest()?.defenderCount === 6, 60_000);
    const before = c.latest()!;
    const maps = c.publications.length;
    await c.waitFor('all applied', async () => (await c.heartbeats.readAll()).heartbeats.every((h) => h.heartbeat.mapVersionSeen === before.version), 20_000);
    const victim = c.procs.find((p) => p.name === 'pod-2')!;
    const victimId = Object.entries(await c.members()).find(([, uid]) => uid === 'pod-2')![0];
    await victim.app.stop('SIGKILL');
    const killedAt = Date.now();
    await c.waitFor('the crash map', async () => c.publications.length === maps + 1, 30_000, 50);
    const detectMs = c.publications[maps]!.seenAt - killedAt;
    const after = c.publications[maps]!.map;
    expect(after.trigger).toBe('crash');
    expect(detectMs).toBeLessThanOrEqual(3 * DEFAULT_HEARTBEAT_SECONDS * 1000 + 2000);
    expect(ownersOf(after).has(victimId)).toBe(false);
    for (const [chamber, owner] of Object.entries(before.assignments)) {
      if (owner === victimId) expect(after.assignments[chamber]).not.toBe(victimId);
      else expect(after.assignments[chamber]).toBe(owner);
    }
  });

  it('rolling restart of every defender: each reclaims its ID and no chamber moves', async () => {
    // The scale window must cover one defender's restart (graceful stop, process start, ID claim,
    // first heartbeat), as SCALE_WINDOW_SECONDS does in a deployment (default 10 s). This host runs
    // the whole suite on 2 cores: 2 s failed in 5 of 7 runs on a slower one, 5 s failed both
    // fresh-clone CI runs of 2026-11-27 with two CPU hogs beside them, and 10 s the one of 2026-11-29
    // (11-13 s between the maps of successive restarts). 20 s covers a restart on this host under load;
    // what is tested is the same: a restart within the window moves no chamber.
    const scaleWindowSeconds = 20;
    const c = await startCluster(5, 60, { scaleWindowSeconds });
    await c.waitFor('the cold-start map', async () => c.publications.length === 1, 60_000);
    const idsBefore = await c.members();
    const mapBefore = c.latest()!;
    for (let i = 0; i < 5; i++) {
      const old = c.procs.find((p) => p.name === `pod-${i}`)!;
      const id = Object.entries(idsBefore).find(([, uid]) => uid === `pod-${i}`)![0];
      expect(await old.app.stop('SIGTERM')).toEqual({ code: 0, signal: null });
      const fresh = await c.startDefender(`pod-${i}-v2`);
      await c.waitFor(`pod-${i}-v2 ready`, async () => (await getJson(`${fresh.url}/health/ready`).catch(() => ({ status: 0 }))).status === 200, 30_000);
      expect(((await getJson(`${fresh.url}/api/v1/status`)).body as { defenderId: string }).defenderId).toBe(id);
      // Like a Deployment's minReadySeconds: let the leave+join batch close before the next pod.
      await new Promise((r) => setTimeout(r, 2500));
    }
    // A batch still open after the last restart would publish within one window: wait it out.
    await new Promise((r) => setTimeout(r, scaleWindowSeconds * 1000));
    expect(c.publications).toHaveLength(1);
    expect(c.latest()!.assignments).toEqual(mapBefore.assignments);
    // Five restarts one after the other, each up to ~15 s on a loaded host, and the window after them.
  }, 300_000);

  it('controller leader SIGKILL: the standby takes over with a higher token, keeps the lifecycle, and handles the next crash', async () => {
    const c = await startCluster(4);
    await c.waitFor('the cold-start map', async () => c.publications.length === 1, 60_000);
    const first = c.latest()!;
    const leader = (await c.leader())!;
    await leader.app.stop('SIGKILL');
    await c.waitFor('the standby takes over', async () => c.publications.length === 2, 30_000, 50);
    const takeover = c.latest()!;
    expect(takeover.trigger).toBe('takeover');
    expect(BigInt(takeover.fencingToken)).toBeGreaterThan(BigInt(first.fencingToken));
    expect(takeover.version).toBe(first.version + 1);
    expect(takeover.lifecycleState).toBe(first.lifecycleState);
    expect(takeover.assignments).toEqual(first.assignments);
    const standby = (await c.leader())!;
    expect(standby.name).not.toBe(leader.name);

    const victim = c.procs.find((p) => p.name === 'pod-1')!;
    await victim.app.stop('SIGKILL');
    await c.waitFor('crash handled by the new leader', async () => c.publications.length === 3, 30_000);
    expect(c.latest()).toMatchObject({ trigger: 'crash', fencingToken: takeover.fencingToken, controllerId: standby.name, defenderCount: 3 });
    // Every accepted map has a version above its predecessor and a token no lower.
    for (let i = 1; i < c.publications.length; i++) {
      const [a, b] = [c.publications[i - 1]!.map, c.publications[i]!.map];
      expect(b.version).toBe(a.version + 1);
      expect(BigInt(b.fencingToken) >= BigInt(a.fencingToken)).toBe(true);
    }
  });

  it('embedded mode: defenders host the controller; when the leading defender dies another defender\'s controller takes over', async () => {
    const c = await LocalCluster.start({ chambers: fabChambers(30) });
    cluster = c;
    await c.startAgent();
    for (let i = 0; i < 3; i++) await c.startDefender(`pod-${i}`, { ASSIGNMENT_CONTROLLER_ENABLED: 'true' });
    await c.waitFor('the cold-start map', async () => c.publications.length === 1 && c.latest()!.defenderCount === 3, 60_000);
    const leaderStatus = async () => {
      for (const p of c.procs.filter((x) => x.name.startsWith('pod-') && x.app.child.exitCode === null && x.app.child.signalCode === null)) {
        const res = await getJson(`${p.url}/controller/api/v1/status`).catch(() => undefined);
        if (res?.status === 200 && (res.body as { isLeader: boolean }).isLeader) return p;
      }
      return undefined;
    };
    const leader = (await leaderStatus())!;
    expect(c.latest()!.controllerId).toBe(leader.name);
    expect(((await getJson(`${leader.url}/api/v1/status`)).body as { isLeader: boolean }).isLeader).toBe(true);
    await leader.app.stop('SIGKILL');
    await c.waitFor('a map without the dead defender, from another controller', async () => {
      const m = c.latest()!;
      return m.defenderCount === 2 && m.controllerId !== leader.name;
    }, 60_000);
    const next = (await leaderStatus())!;
    expect(next.name).not.toBe(leader.name);
    expect(BigInt(c.latest()!.fencingToken)).toBeGreaterThan(BigInt(c.publications[0]!.map.fencingToken));
  });
});
