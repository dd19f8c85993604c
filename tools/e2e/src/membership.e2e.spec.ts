import { describeWithInfra, getJson } from '@defender/infra-harness';
import { DEFAULT_HEARTBEAT_SECONDS, fabChambers, LocalCluster } from './cluster';

/**
 * Issue 7's scenarios on a real cluster: election agent, two controllers, defenders, NATS KV and a
 * SQLite store, with intervals shortened so each runs in seconds (heartbeat 2 s, cold-start
 * window 3 s, scale window 2 s, election TTL 2 s). Each waits for what the cluster does (a map, a
 * status) under a generous hang guard: a loaded host makes it slower, never different.
 */
describeWithInfra(['nats'], 'cluster membership and assignment flow (multi-process)', () => {
  // Up to 15 processes started, or five restarts one after the other, on a host that may be loaded.
  jest.setTimeout(360_000);
  let cluster: LocalCluster | undefined;
  /** When startCluster started the controllers (Unix ms): no controller looked at the cluster before. */
  let controllersStartedAt = 0;

  afterEach(async () => {
    await cluster?.stop();
    cluster = undefined;
  });

  async function startCluster(defenders: number, chambers = 60, opts: { scaleWindowSeconds?: number } = {}) {
    const c = await LocalCluster.start({ chambers: fabChambers(chambers), ...opts });
    cluster = c;
    await c.startAgent();
    // One after another, each once the one before heartbeats: ten booting at once on a loaded host
    // took minutes, and a defender whose heartbeat thread had not yet refreshed its new claim 12 s
    // after taking it (3 intervals as the hint, 3 more watched) lost its ID to another booting one
    // (exit 4).
    for (let i = 0; i < defenders; i++) {
      await c.startDefender(`pod-${i}`);
      await c.waitFor(`pod-${i} heartbeating`, async () => Object.values(await c.members()).includes(`pod-${i}`), 90_000);
    }
    // Every defender heartbeats before a controller looks, so the cold-start map holds them all:
    // started first, the controllers closed the 3 s window on a loaded host while defenders were
    // still booting (tens of seconds apart), and the late ones joined by planned maps of their own.
    controllersStartedAt = Date.now();
    await c.startController('controller-a');
    await c.startController('controller-b');
    return c;
  }

  const ownersOf = (m: { assignments: Record<string, string> }) => new Set(Object.values(m.assignments));

  /** What the leading controller's GET /api/v1/status says (libs/controller status.controller.ts). */
  interface LeaderStatus {
    lastDecision: 'idle' | 'no-defenders' | 'wait' | 'recompute' | null;
    pendingTrigger: { trigger: string; changes: { joined: string[]; left: string[]; crashed: string[] } } | null;
    activeDefenders: number | null;
    assignmentVersion: number | null;
  }

  async function statusOfLeader(c: LocalCluster): Promise<LeaderStatus | undefined> {
    const leader = await c.leader();
    const res = leader && (await getJson(`${leader.url}/api/v1/status`).catch(() => undefined));
    return res?.status === 200 ? (res.body as LeaderStatus) : undefined;
  }

  /**
   * Waits until the leading controller, looking at the cluster after it published map `version`,
   * found `defenders` alive, all of them in that map, and nothing to batch ('idle'): no further map
   * comes until a defender joins, leaves or crashes. (Waiting some seconds instead and counting the
   * maps proved nothing on a loaded machine, where the controller may not have looked yet.)
   */
  async function settledAt(c: LocalCluster, version: number, defenders: number): Promise<void> {
    await c.waitFor(`the leader idle at v${version} with ${defenders} defenders`, async () => {
      const s = await statusOfLeader(c);
      return s?.lastDecision === 'idle' && s.assignmentVersion === version && s.activeDefenders === defenders;
    }, 60_000);
  }

  /**
   * The maps of one scale step, whose joins or leaves were seen at `at` (test clock): the 10 s scale
   * window batches changes that come within it into one map, so changes seen within half of it (a
   * margin for when the controller looks) make exactly one; spread wider (a boot or a drain slowed by
   * a loaded machine), they may make one map per batch, never more than one per change. Either way
   * every map of the step is a planned scale.
   */
  function expectBatches(maps: { map: { trigger: string } }[], at: number[]): void {
    const spreadMs = Math.max(...at) - Math.min(...at);
    if (spreadMs < 5_000) expect({ spreadMs, maps: maps.length }).toEqual({ spreadMs, maps: 1 });
    else expect(maps.length).toBeLessThanOrEqual(at.length);
    expect(maps.length).toBeGreaterThanOrEqual(1);
    for (const m of maps) expect(m.map.trigger).toBe('planned_scale');
  }

  it('cold start: 10 defenders joining -> exactly one map, after the cold-start window, covering every chamber', async () => {
    const c = await startCluster(10);
    await c.waitFor('the first map', async () => c.publications.length > 0, 120_000);
    const first = c.publications[0]!;
    // Nothing else may follow: the controller has nothing left to batch after this map.
    await settledAt(c, 1, 10);
    expect(c.publications).toHaveLength(1);
    // Not before the cold-start window (3 s): the map's own time against a moment before any controller started.
    expect(Date.parse(first.map.timestamp) - controllersStartedAt).toBeGreaterThanOrEqual(3000);
    expect(first.map).toMatchObject({ version: 1, trigger: 'cold_start', lifecycleState: 'post_cold_start', defenderCount: 10, chamberCount: 60 });
    expect(ownersOf(first.map).size).toBe(10);
    expect(first.map.statistics.maxWeightPerDefender / first.map.statistics.avgWeightPerDefender).toBeLessThan(1.5);
    const leader = await c.awaitLeader();
    expect(first.map.controllerId).toBe(leader.name);
    await c.waitFor('every defender applied v1', async () => {
      const seen = (await c.heartbeats.readAll()).heartbeats.map((h) => h.heartbeat.mapVersionSeen);
      return seen.length === 10 && seen.every((v) => v === 1);
    }, 60_000);
  });

  it('planned scale 10 -> 13 -> 10: one map per step, movement near the floor, leavers drained', async () => {
    // The scale window must cover the spread of one step's joins (or leaves), as SCALE_WINDOW_SECONDS
    // does in a deployment (default 10 s): three pods started at once join seconds apart on a loaded
    // host, which a 2 s window splits into several maps (rightly).
    const c = await startCluster(10, 60, { scaleWindowSeconds: 10 });
    await c.waitFor('the cold-start map', async () => c.publications.length === 1, 120_000);
    await settledAt(c, 1, 10);
    for (let i = 10; i < 13; i++) await c.startDefender(`pod-${i}`);
    // When each joiner's first heartbeat is seen (the test's clock, polled): their spread decides how
    // many batches the controller's window may make of them.
    const joinedAt = new Map<string, number>();
    await c.waitFor('pods 10-12 heartbeating', async () => {
      const uids = Object.values(await c.members());
      for (const uid of ['pod-10', 'pod-11', 'pod-12']) if (uids.includes(uid) && !joinedAt.has(uid)) joinedAt.set(uid, Date.now());
      return joinedAt.size === 3;
    }, 120_000, 50);
    await c.waitFor('a map with 13 defenders', async () => c.latest()?.defenderCount === 13, 120_000);
    await settledAt(c, c.latest()!.version, 13);
    expectBatches(c.publications.slice(1), [...joinedAt.values()]);
    const up = c.latest()!;
    expect(up.trigger).toBe('planned_scale');
    expect(up.lifecycleState).toBe('stable');
    // Moved weight against the floor 3/13 (granularity of 60 chambers allows some slack).
    expect(up.statistics.floorFraction).toBeGreaterThan(0.15);
    expect(up.statistics.movedWeightFraction).toBeLessThanOrEqual(up.statistics.floorFraction * 1.1 + 0.1);

    // A scale-down terminates its pods at once (as Kubernetes does): one leave batch, one map. Stopped
    // one after another, each drain can outlast the scale window on a busy machine (two maps, rightly).
    const leavers = c.procs.filter((x) => ['pod-10', 'pod-11', 'pod-12'].includes(x.name));
    const mapsBeforeDown = c.publications.length;
    // Each leaves when its drain ends (its ID released), just before it exits.
    const leftAt: number[] = [];
    const exits = await Promise.all(leavers.map(async (p) => {
      const e = await p.app.stop('SIGTERM');
      leftAt.push(Date.now());
      return e;
    }));
    for (const e of exits) expect(e).toEqual({ code: 0, signal: null });
    await c.waitFor('a map with 10 defenders', async () => c.latest()?.defenderCount === 10, 120_000);
    await settledAt(c, c.latest()!.version, 10);
    expectBatches(c.publications.slice(mapsBeforeDown), leftAt);
    const down = c.latest()!;
    expect(down.trigger).toBe('planned_scale');
    expect([...ownersOf(down)].sort()).toEqual([...ownersOf(c.publications[0]!.map)].sort());
  });

  it('crash: a SIGKILLed defender\'s chambers move in the next map, not before 3 missed heartbeats, and nothing else moves', async () => {
    const c = await startCluster(6);
    await c.waitFor('the cold-start map', async () => c.publications.length === 1, 120_000);
    await settledAt(c, 1, 6);
    const before = c.latest()!;
    const maps = c.publications.length;
    await c.waitFor('all applied', async () => (await c.heartbeats.readAll()).heartbeats.every((h) => h.heartbeat.mapVersionSeen === before.version), 60_000);
    const victim = c.procs.find((p) => p.name === 'pod-2')!;
    const victimId = Object.entries(await c.members()).find(([, uid]) => uid === 'pod-2')![0];
    await victim.app.stop('SIGKILL');
    // Its last heartbeat as NATS stored it (no other can follow).
    const lastBeat = (await c.heartbeats.readAll()).heartbeats.find((h) => h.heartbeat.defenderId === victimId)!;
    expect(lastBeat).toBeDefined();
    await c.waitFor('the crash map', async () => c.publications.length > maps, 60_000);
    const after = c.publications[maps]!.map;
    expect(after).toMatchObject({ version: before.version + 1, trigger: 'crash', defenderCount: 5 });
    // Not judged dead before 3 intervals without a heartbeat: the map's time against the server's
    // store time of the last heartbeat (one host, one clock; a slow machine only makes it later).
    expect(Date.parse(after.timestamp) - lastBeat.storedAt.getTime()).toBeGreaterThanOrEqual(3 * DEFAULT_HEARTBEAT_SECONDS * 1000);
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
    // (11-13 s between the maps of successive restarts). The test never waits the window out (each
    // restart ends when the controller has seen the defender back), so it can be generous: 30 s.
    // What is tested is the same: a restart within the window moves no chamber.
    const c = await startCluster(5, 60, { scaleWindowSeconds: 30 });
    await c.waitFor('the cold-start map', async () => c.publications.length === 1, 120_000);
    await settledAt(c, 1, 5);
    const idsBefore = await c.members();
    const mapBefore = c.latest()!;
    for (let i = 0; i < 5; i++) {
      const old = c.procs.find((p) => p.name === `pod-${i}`)!;
      const id = Object.entries(idsBefore).find(([, uid]) => uid === `pod-${i}`)![0];
      expect(await old.app.stop('SIGTERM')).toEqual({ code: 0, signal: null });
      // The controller saw it leave (a batch waits for the window), so its next 'idle' is about the return.
      await c.waitFor(`the leader batching ${id}'s leave`, async () => {
        const s = await statusOfLeader(c);
        return s?.lastDecision === 'wait' && (s.pendingTrigger?.changes.left ?? []).includes(id);
      }, 60_000);
      const fresh = await c.startDefender(`pod-${i}-v2`);
      await c.waitFor(`pod-${i}-v2 ready`, async () => (await getJson(`${fresh.url}/health/ready`).catch(() => ({ status: 0 }))).status === 200, 60_000);
      expect(((await getJson(`${fresh.url}/api/v1/status`)).body as { defenderId: string }).defenderId).toBe(id);
      // Like a Deployment's minReadySeconds: the leave+join batch closed (netted out, no map) before the next pod.
      await settledAt(c, 1, 5);
    }
    expect(c.publications).toHaveLength(1);
    expect(c.latest()!.assignments).toEqual(mapBefore.assignments);
  });

  it('controller leader SIGKILL: the standby takes over with a higher token, keeps the lifecycle, and handles the next crash', async () => {
    const c = await startCluster(4);
    await c.waitFor('the cold-start map', async () => c.publications.length === 1, 120_000);
    await settledAt(c, 1, 4);
    const first = c.latest()!;
    const leader = await c.awaitLeader();
    await leader.app.stop('SIGKILL');
    await c.waitFor('the standby takes over', async () => c.publications.length === 2, 60_000);
    const takeover = c.latest()!;
    expect(takeover.trigger).toBe('takeover');
    expect(BigInt(takeover.fencingToken)).toBeGreaterThan(BigInt(first.fencingToken));
    expect(takeover.version).toBe(first.version + 1);
    expect(takeover.lifecycleState).toBe(first.lifecycleState);
    expect(takeover.assignments).toEqual(first.assignments);
    const standby = await c.awaitLeader();
    expect(standby.name).not.toBe(leader.name);

    const victim = c.procs.find((p) => p.name === 'pod-1')!;
    await victim.app.stop('SIGKILL');
    await c.waitFor('crash handled by the new leader', async () => c.publications.length === 3, 60_000);
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
    // The defenders host the controllers, so one may lead before the others boot: a late one joins by a planned map.
    await c.waitFor('a map with all 3 defenders', async () => c.latest()?.defenderCount === 3, 120_000);
    const leaderStatus = async () => {
      for (const p of c.procs.filter((x) => x.name.startsWith('pod-') && x.app.child.exitCode === null && x.app.child.signalCode === null)) {
        const res = await getJson(`${p.url}/controller/api/v1/status`).catch(() => undefined);
        if (res?.status === 200 && (res.body as { isLeader: boolean }).isLeader) return p;
      }
      return undefined;
    };
    // Waited for: one status read can fail on a loaded machine, which says nothing about who leads.
    const awaitLeader = async () => {
      let p: Awaited<ReturnType<typeof leaderStatus>>;
      await c.waitFor('a defender whose controller leads', async () => (p = await leaderStatus()) !== undefined, 60_000, 250);
      return p!;
    };
    const leader = await awaitLeader();
    expect(c.latest()!.controllerId).toBe(leader.name);
    expect(((await getJson(`${leader.url}/api/v1/status`)).body as { isLeader: boolean }).isLeader).toBe(true);
    await leader.app.stop('SIGKILL');
    await c.waitFor('a map without the dead defender, from another controller', async () => {
      const m = c.latest()!;
      return m.defenderCount === 2 && m.controllerId !== leader.name;
    }, 120_000);
    const next = await awaitLeader();
    expect(next.name).not.toBe(leader.name);
    expect(BigInt(c.latest()!.fencingToken)).toBeGreaterThan(BigInt(c.publications[0]!.map.fencingToken));
  });
});
