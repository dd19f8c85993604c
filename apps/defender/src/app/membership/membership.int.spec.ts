import { readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import { buildAssignmentMap, EXIT_POOL_EXHAUSTED } from '@defender/membership';
import { AssignmentMapBucket, DEFAULT_STREAM_SETTINGS, HeartbeatBucket, openBucket, streamConfigs, STREAMS } from '@defender/nats-kv';
import { parseStableIdClaim } from '@defender/contracts';
import { jetstreamManager } from '@nats-io/jetstream';
import { describeWithInfra, freePort, getJson, spawnBuiltApp, SpawnedApp, startSecuredNatsServer, testNatsConnectOptions, testNatsEnv, waitFor } from '@defender/infra-harness';
import { STORE_THREAD_NAME } from '@defender/store';
import { HEARTBEAT_THREAD_NAME } from './heartbeat-thread';

let run = 0;
/**
 * How long a wait that includes a defender process's start may take: a hang guard, not a deadline.
 * 20 s was too short in a fresh-clone CI beside the fab bench (load average about 10 on 2 cores).
 */
const START_MS = 90_000;

describeWithInfra(['nats'], 'defender membership (real processes, real NATS)', () => {
  // Several processes with 1 s heartbeats on a loaded 2-core machine: allow time.
  jest.setTimeout(300_000);
  let nc: NatsConnection;
  const procs: SpawnedApp[] = [];

  beforeAll(async () => {
    nc = await connect(testNatsConnectOptions());
  });
  afterAll(async () => {
    await Promise.all(procs.map((p) => p.stop('SIGKILL')));
    await nc.drain();
  });

  async function cluster(maxDefenders = 5) {
    const tag = `m${++run}-${process.pid}`;
    const names = { ids: `ids-${tag}`, hb: `hb-${tag}`, map: `map-${tag}` };
    // The fixture's NATS user: these buckets are named for one test, which the defender role may not
    // write (main.int.spec.ts and the e2e suites run defenders as their role).
    const env = {
      ...testNatsEnv(),
      HTTP_HOST: '127.0.0.1',
      NATS_KV_STABLE_IDS: names.ids,
      NATS_KV_HEARTBEATS: names.hb,
      NATS_KV_ASSIGNMENTS: names.map,
      HEARTBEAT_INTERVAL_SECONDS: '1',
      MAX_DEFENDERS: String(maxDefenders),
      LOG_LEVEL: process.env['TEST_APP_LOG_LEVEL'] ?? 'warn',
      SQLITE_PATH: join(tmpdir(), `defender-${tag}`, 'd.db'),
    };
    const heartbeats = new HeartbeatBucket(await openBucket(nc, names.hb), names.hb);
    const ids = await openBucket(nc, names.ids);
    let maps = new AssignmentMapBucket(await openBucket(nc, names.map, { history: 5 }), names.map);
    const start = async (extra: Record<string, string> = {}) => {
      const http = await freePort();
      const p = spawnBuiltApp('defender', { ...env, HTTP_PORT: String(http), ...extra });
      procs.push(p);
      return { p, url: `http://127.0.0.1:${http}` };
    };
    let revision: number | null = null;
    const publish = async (version: number, token: string, assignments: Record<string, string>) => {
      const owners = [...new Set(Object.values(assignments))].map((id) => ({ id }));
      const map = buildAssignmentMap({
        version,
        now: new Date(),
        fencingToken: token,
        controllerId: 'test',
        trigger: 'planned_scale',
        state: 'STABLE',
        lifecycleState: 'stable',
        firstAssignmentAt: null,
        assignments,
        defenders: owners,
      });
      revision = await maps.publish(map, revision);
    };
    /** The map bucket deleted and created again (as after NATS lost its store): revisions restart at 1. */
    const recreateMapBucket = async () => {
      await (await jetstreamManager(nc)).streams.delete(`KV_${names.map}`);
      maps = new AssignmentMapBucket(await openBucket(nc, names.map, { history: 5 }), names.map);
      revision = null;
    };
    return { heartbeats, ids, start, publish, recreateMapBucket };
  }

  const DEBUG = 'membership-test-debug-token';

  it('claims IDs, heartbeats, follows the map, ignores stale maps, and leaves cleanly', async () => {
    const c = await cluster();
    const a = await c.start({ POD_UID: 'pod-a', DEBUG_TOKEN: DEBUG });
    await waitFor('defender-0 heartbeat', async () => (await c.heartbeats.readAll()).heartbeats.length === 1, START_MS);
    const b = await c.start({ POD_UID: 'pod-b' });
    await waitFor('two heartbeats', async () => (await c.heartbeats.readAll()).heartbeats.length === 2, START_MS);
    const ids = (await c.heartbeats.readAll()).heartbeats.map((h) => [h.heartbeat.defenderId, h.heartbeat.state, h.heartbeat.podUid]);
    expect(ids).toEqual([
      ['defender-0', 'FOLLOWER', 'pod-a'],
      ['defender-1', 'FOLLOWER', 'pod-b'],
    ]);
    expect((await getJson(`${a.url}/health/ready`)).status).toBe(503);

    await c.publish(1, '5', { 't1:c1': 'defender-0', 't1:c2': 'defender-1', 't2:c1': 'defender-1' });
    await waitFor('both ready', async () => (await getJson(`${a.url}/health/ready`)).status === 200 && (await getJson(`${b.url}/health/ready`)).status === 200, START_MS);
    expect((await getJson(`${b.url}/api/v1/assignments`)).body).toEqual({
      defenderId: 'defender-1',
      assignmentVersion: 1,
      chambers: ['t1:c2', 't2:c1'],
    });
    expect((await getJson(`${a.url}/api/v1/status`)).body).toMatchObject({
      defenderId: 'defender-0',
      state: 'STABLE',
      isLeader: false,
      assignedChambers: 1,
      assignmentVersion: 1,
    });

    await c.publish(2, '5', { 't1:c1': 'defender-0', 't1:c2': 'defender-0', 't2:c1': 'defender-1' });
    await waitFor('v2 applied', async () => ((await getJson(`${a.url}/api/v1/assignments`)).body as { assignmentVersion: number }).assignmentVersion === 2, 60_000);
    expect(((await getJson(`${a.url}/api/v1/assignments`)).body as { chambers: string[] }).chambers).toEqual(['t1:c1', 't1:c2']);

    // A deposed controller (lower token) publishes a higher version: ignored and counted.
    await c.publish(3, '4', { 't1:c1': 'defender-1', 't1:c2': 'defender-1', 't2:c1': 'defender-1' });
    await waitFor('rejection counted', async () => /defender_assignment_maps_rejected_total\{app="defender"\} 1/.test((await getJson(`${a.url}/metrics`)).text), 60_000);
    expect((await getJson(`${a.url}/api/v1/assignments`)).body).toMatchObject({ assignmentVersion: 2, chambers: ['t1:c1', 't1:c2'] });
    const metrics = (await getJson(`${a.url}/metrics`)).text;
    expect(metrics).toMatch(/defender_state\{app="defender"\} 3/);
    expect(metrics).toMatch(/defender_stable_id\{app="defender"\} 0/);
    expect(metrics).toMatch(/defender_assigned_chambers\{app="defender"\} 2/);
    expect(metrics).toMatch(/defender_subscription_added_total\{app="defender"\} 2/);
    // The V8 heaps of the SQLite store's thread and the heartbeat thread (memory/thread-heap.service.ts).
    const threadHeap = (text: string, thread: string) =>
      Number(new RegExp(`^defender_thread_heap_bytes\\{[^}]*thread="${thread}"[^}]*kind="total"[^}]*\\} (\\d+)`, 'm').exec(text)?.[1] ?? 0);
    await waitFor("the threads' heaps reported", async () => {
      const text = (await getJson(`${a.url}/metrics`)).text;
      return threadHeap(text, 'store') > 0 && threadHeap(text, 'heartbeat') > 0;
    }, 60_000);
    // The store thread's trace buffer pool, sized by the trace budget (TRACE_MEMORY_MB, 32 by default).
    expect((await getJson(`${a.url}/metrics`)).text).toMatch(/^defender_trace_buffer_bytes\{[^}]*kind="capacity"[^}]*\} 33554432$/m);
    // Their OS threads carry their names (top -H), their CPU time is reported, and the store thread
    // can be profiled (the debug endpoint, with its token).
    const pid = a.p.child.pid;
    const threadNames = readdirSync(`/proc/${pid}/task`).map((t) => {
      try {
        return readFileSync(`/proc/${pid}/task/${t}/comm`, 'utf8').trim();
      } catch {
        return ''; // a thread that ended meanwhile
      }
    });
    expect(threadNames).toEqual(expect.arrayContaining(['MainThread', STORE_THREAD_NAME, HEARTBEAT_THREAD_NAME]));
    const threadCpu = (text: string, thread: string) =>
      Number(new RegExp(`^defender_thread_cpu_seconds_total\\{[^}]*thread="${thread}"[^}]*\\} ([\\d.e+-]+)`, 'm').exec(text)?.[1] ?? 0);
    await waitFor("the threads' CPU time reported", async () => {
      const text = (await getJson(`${a.url}/metrics`)).text;
      return threadCpu(text, 'store') > 0 && threadCpu(text, 'heartbeat') > 0;
    }, 60_000);
    const profile = (thread: string) =>
      fetch(`${a.url}/debug/cpu-profile`, { method: 'POST', headers: { authorization: `Bearer ${DEBUG}`, 'x-profile-seconds': '1', 'x-profile-thread': thread } });
    const storeProfile = await profile('store');
    expect(storeProfile.status).toBe(201);
    // (What a profile of the thread holds while it serves calls: threaded-sqlite-store.int.spec.ts.)
    const taken = (await storeProfile.json()) as { nodes: unknown[]; startTime: number; endTime: number };
    expect(taken.nodes.length).toBeGreaterThan(0);
    expect(taken.endTime - taken.startTime).toBeGreaterThanOrEqual(900_000); // microseconds: the second asked for
    const unknown = await profile('gpu');
    expect(unknown.status).toBe(400);
    expect(await unknown.text()).toMatch(/x-profile-thread must be main or store/);

    // SIGTERM: heartbeat and claim removed at once, exit 0; the next process takes defender-0.
    expect(await a.p.stop('SIGTERM')).toEqual({ code: 0, signal: null });
    expect((await c.heartbeats.readAll()).heartbeats.map((h) => h.heartbeat.defenderId)).toEqual(['defender-1']);
    await c.start({ POD_UID: 'pod-a2' });
    await waitFor('defender-0 back', async () => (await c.heartbeats.readAll()).heartbeats.some((h) => h.heartbeat.podUid === 'pod-a2' && h.heartbeat.defenderId === 'defender-0'), START_MS);
  });

  it('follows the map bucket created again while its own heartbeats never failed (another process recreated it)', async () => {
    const c = await cluster();
    const a = await c.start({ POD_UID: 'pod-r' });
    const version = async () => ((await getJson(`${a.url}/api/v1/status`)).body as { assignmentVersion: number }).assignmentVersion;
    await waitFor('defender-0 heartbeat', async () => (await c.heartbeats.readAll()).heartbeats.length === 1, START_MS);
    await c.publish(1, '5', { 't1:c1': 'defender-0' });
    await waitFor('v1 applied', async () => (await version()) === 1, START_MS);
    // Its watch (an ordered consumer) started on the old bucket; the new one's revisions restart at 1.
    await c.recreateMapBucket();
    await c.publish(2, '5', { 't1:c1': 'defender-0', 't1:c2': 'defender-0' });
    await waitFor('v2 from the recreated bucket applied', async () => (await version()) === 2, START_MS);
    expect((await getJson(`${a.url}/api/v1/assignments`)).body).toMatchObject({ assignmentVersion: 2, chambers: ['t1:c1', 't1:c2'] });
    expect(a.p.child.exitCode).toBeNull();
  });

  it('exits non-zero with a clear message when the stable-ID pool is exhausted', async () => {
    const c = await cluster(1);
    await c.start({ POD_UID: 'only' });
    await waitFor('first heartbeat', async () => (await c.heartbeats.readAll()).heartbeats.length === 1, START_MS);
    const extra = await c.start({ POD_UID: 'extra', LOG_LEVEL: 'info' });
    const res = await extra.p.exited;
    expect(res.code).toBe(EXIT_POOL_EXHAUSTED);
    expect(extra.p.stdout()).toMatch(/stable-ID pool exhausted: all 1 stable IDs \(defender-0..defender-0\) are claimed by live defenders/);
  });

  it('a SIGKILLed defender\'s ID is taken over after 3 missed heartbeats, not before', async () => {
    const c = await cluster(1);
    // Every write of defender-0's claim as NATS stored it: who wrote it, and when (the server's clock).
    const claims: { ownerId: string; storedAt: number }[] = [];
    const watch = await c.ids.watch({ key: 'defender-0' });
    void (async () => {
      for await (const e of watch) if (e.operation === 'PUT') claims.push({ ownerId: parseStableIdClaim(e.value).ownerId, storedAt: e.created.getTime() });
    })();
    const first = await c.start({ POD_UID: 'victim' });
    await waitFor('first heartbeat', async () => (await c.heartbeats.readAll()).heartbeats.length === 1, START_MS);
    await first.p.stop('SIGKILL');
    const second = await c.start({ POD_UID: 'successor' });
    await waitFor('successor claimed defender-0', async () => claims.some((x) => x.ownerId === 'successor'), START_MS);
    await waitFor('successor heartbeats as defender-0', async () => (await c.heartbeats.readAll()).heartbeats.some((h) => h.heartbeat.podUid === 'successor'), START_MS);
    watch.stop();
    // The successor's first write of the claim came 3 intervals (3 x 1 s) or more after the victim's
    // last refresh: both times from the NATS server's clock, which a slow machine can only spread apart.
    const lastRefresh = claims.filter((x) => x.ownerId === 'victim').at(-1)!;
    const takeover = claims.find((x) => x.ownerId === 'successor')!;
    expect(claims.indexOf(takeover)).toBe(claims.indexOf(lastRefresh) + 1);
    expect(takeover.storedAt - lastRefresh.storedAt).toBeGreaterThanOrEqual(3 * 1000);
    expect(second.p.child.exitCode).toBeNull();
  });
});

/**
 * ADR 0007: NATS restarts with an empty store under running defenders. Their next failed heartbeat
 * creates the buckets again; each re-creates its own claim (same generation: a missing claim was
 * not taken over) and its heartbeat, and the notification stream is created again. Before, nobody
 * recreated anything, and a claim found in a recreated bucket could end a defender with exit 4.
 */
describeWithInfra(['nats'], 'defenders after NATS lost its store (real processes, private nats-server)', () => {
  jest.setTimeout(180_000);

  it('re-create the buckets, their own claims (same generation) and heartbeats, and every stream (also when another recreated one); nobody exits', async () => {
    // Run as production runs it (TLS, deploy/nats/auth.conf's users): the defenders recover with only
    // their role's permissions; the test reads as the dashboard (read-only), and an operator (the
    // unrestricted fixture user; the equipment may no longer create a stream, issue 50) recreates one stream.
    const srv = await startSecuredNatsServer();
    const nc = await connect({ ...srv.connectOptions('dashboard'), maxReconnectAttempts: -1, reconnectTimeWait: 100 });
    const operator = await connect({ ...srv.connectOptions(), maxReconnectAttempts: -1, reconnectTimeWait: 100 });
    const tag = `lost-${process.pid}`;
    const procs: SpawnedApp[] = [];
    try {
      const env = {
        ...srv.env('defender'),
        HTTP_HOST: '127.0.0.1',
        HEARTBEAT_INTERVAL_SECONDS: '1',
        MAX_DEFENDERS: '4',
        LOG_LEVEL: process.env['TEST_APP_LOG_LEVEL'] ?? 'warn',
      };
      for (const pod of ['pod-a', 'pod-b']) {
        procs.push(spawnBuiltApp('defender', { ...env, POD_UID: pod, HTTP_PORT: String(await freePort()), SQLITE_PATH: join(tmpdir(), `defender-${tag}-${pod}`, 'd.db') }));
      }
      const claims = async () => {
        const kv = await openBucket(nc, 'stable-ids');
        const out: string[] = [];
        for (const id of ['defender-0', 'defender-1', 'defender-2', 'defender-3']) {
          const e = await kv.get(id);
          if (e?.operation === 'PUT') {
            const c = parseStableIdClaim(e.value);
            if (!c.released) out.push(`${id} ${c.ownerId} g${c.generation}`);
          }
        }
        return out.sort();
      };
      const heartbeatIds = async () => {
        const hb = new HeartbeatBucket(await openBucket(nc, 'defender-heartbeats'), 'defender-heartbeats');
        return (await hb.readAll()).heartbeats.map((h) => h.heartbeat.defenderId).sort();
      };
      await waitFor('two heartbeats', async () => (await heartbeatIds()).length === 2, 60_000);
      const before = await claims();
      expect(before).toHaveLength(2);

      await srv.server.restart({ emptyStore: true });
      const jsm = await waitForValue(async () => jetstreamManager(nc));
      // As in the incident, someone else recreates the notification stream alone (ignored when the
      // defenders were first); otherwise nothing is created here: the defenders must do it.
      const [notifications] = streamConfigs(DEFAULT_STREAM_SETTINGS);
      if (notifications) await (await jetstreamManager(operator)).streams.add(notifications).catch(() => undefined);
      const exists = async (stream: string) => jsm.streams.info(stream).then(() => true, () => false);
      await waitFor(
        'buckets and every stream created again by the defenders',
        async () =>
          (await exists('KV_stable-ids')) && (await exists('KV_defender-heartbeats')) && (await exists(STREAMS.notifications)) && (await exists(STREAMS.defenseEvents)) && (await exists(STREAMS.deadLetters)),
        60_000,
        200,
      );
      await waitFor('both heartbeats back', async () => (await heartbeatIds().catch(() => [])).length === 2, 60_000, 200);
      expect(await claims()).toEqual(before);
      for (const p of procs) expect(p.child.exitCode).toBeNull();
    } finally {
      await Promise.all(procs.map((p) => p.stop('SIGKILL')));
      await nc.close();
      await operator.close();
      await srv.stop();
    }
  });
});

async function waitForValue<T>(f: () => Promise<T>): Promise<T> {
  let value: T | undefined;
  await waitFor('NATS back', async () => {
    value = await f().catch(() => undefined);
    return value !== undefined;
  }, 30_000, 200);
  return value as T;
}
