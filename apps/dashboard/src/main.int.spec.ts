import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import { Kvm } from '@nats-io/kv';
import type { AssignmentMap } from '@defender/contracts';
import { jetstreamManager } from '@nats-io/jetstream';
import { AssignmentMapBucket, ensureStreams, HeartbeatBucket, natsAuthorizationConfig, NATS_ROLES, openBucket, publishOnce, STREAMS } from '@defender/nats-kv';
import { POINT_FLAGS } from '@defender/pipeline';
import { SqliteStore } from '@defender/store';
import { describeAppProcess, describeWithInfra, freePort, getJson, natsPasswordEnvOf, spawnBuiltApp, startSecuredNatsServer, testNatsEnv, waitFor, type SecuredNatsServer, type SpawnedApp } from '@defender/infra-harness';

let n = 0;

describeAppProcess({
  app: 'dashboard',
  validEnv: () => ({ SQLITE_PATH: join(tmpdir(), `dashboard-${process.pid}-${++n}`, 'd.db'), NATS_KV_ASSIGNMENTS: `map-dash-${process.pid}-${n}` }),
  readyChecks: ['nats', 'store', 'cluster-view'],
  invalidEnv: { HTTP_HOST: '127.0.0.1', HTTP_PORT: 'eighty', CONTROLLER_URLS: 'ftp://controller', LOCAL_FAB_CONTROL_URL: 'http://127.0.0.1:1' },
  invalidVariables: ['HTTP_PORT', 'CONTROLLER_URLS', 'LOCAL_FAB_CONTROL_URL'],
});

const chamber = { toolId: 'ETCH01', chamberId: 'PM1' };
/** A chamber under the chamber monitor: its model, a Phase I run, a judged run, and a run T² and SPE flagged. */
const monitored = { toolId: 'ETCH01', chamberId: 'PM2' };
const runViolations = [
  { rule: 'T2', indicatorKey: 'R|m:model', value: 30, limit: 14.2, contributions: [{ indicatorKey: 'R|m/F@Main:mean', share: 0.7, svid: 'F', window: 'Main', statistic: 'mean' }, { indicatorKey: 'R|m/P@Main:mean', share: 0.2, svid: 'P', window: 'Main', statistic: 'mean' }] },
  { rule: 'SPE', indicatorKey: 'R|m:model', value: 9, limit: 6.5, contributions: [{ indicatorKey: 'R|m/F@Main:mean', share: 0.9, svid: 'F', window: 'Main', statistic: 'mean' }] },
];
const runDetails = (runId: string, sequence: number) => ({ kind: 'run', ...monitored, runId, sequence, recipe: 'R', modelVersion: 1, rules: ['T2', 'SPE'], t2: 30, spe: 9, violations: runViolations });

function mapV1(): AssignmentMap {
  return {
    schema: 1,
    version: 1,
    timestamp: new Date().toISOString(),
    state: 'STABLE',
    lifecycleState: 'post_cold_start',
    firstAssignmentAt: new Date().toISOString(),
    fencingToken: '2',
    controllerId: 'controller-a',
    trigger: 'cold_start',
    defenderCount: 1,
    chamberCount: 1,
    assignments: { 'ETCH01:PM1': 'defender-0' },
    lastMovedAt: {},
    defenderInfo: { 'defender-0': { chambers: 1, weight: 60_000, capacity: 1 } },
    statistics: {
      minChambersPerDefender: 1,
      maxChambersPerDefender: 1,
      avgChambersPerDefender: 1,
      minWeightPerDefender: 60_000,
      maxWeightPerDefender: 60_000,
      avgWeightPerDefender: 60_000,
      weightVariancePercent: 0,
      calculationDurationMs: 0.1,
      chambersMoved: 1,
      movedWeight: 60_000,
      movedWeightFraction: 1,
      floorFraction: 1,
    },
  };
}

/** Reads server-sent events until `until` matches one. */
async function readEvents(
  url: string,
  until: (type: string, data: unknown) => boolean,
  timeoutMs: number,
  onEvent: (type: string, data: unknown) => void = () => undefined,
): Promise<{ type: string; data: unknown }[]> {
  const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
  const reader = res.body!.getReader();
  const seen: { type: string; data: unknown }[] = [];
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return seen;
    buf += Buffer.from(value).toString('utf8');
    let i: number;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, i);
      buf = buf.slice(i + 2);
      const type = /^event: (.*)$/m.exec(block)?.[1] ?? 'message';
      const data = JSON.parse(/^data: (.*)$/m.exec(block)?.[1] ?? 'null') as unknown;
      seen.push({ type, data });
      onEvent(type, data);
      if (until(type, data)) {
        await reader.cancel();
        return seen;
      }
    }
  }
}

/**
 * A private nats-server whose role users are written for the buckets named after `tag` (the dashboard
 * reads only the buckets its permissions name, issue 50), its streams created, and a connection as
 * its unrestricted fixture user.
 */
async function natsFor(tag: string): Promise<{ srv: SecuredNatsServer; nc: NatsConnection }> {
  const names = { stableIds: 'stable-ids', heartbeats: `hb-${tag}`, assignments: `map-${tag}`, elections: `el-${tag}` };
  const srv = await startSecuredNatsServer({ authorization: natsAuthorizationConfig(NATS_ROLES.map((role) => ({ user: role, role, passwordEnv: natsPasswordEnvOf(role) })), names) });
  const nc = await connect(srv.connectOptions());
  await ensureStreams(nc);
  return { srv, nc };
}

/** The built dashboard on a free loopback port, on `srv` and the buckets named after `tag`, once ready. */
async function startDashboard(srv: SecuredNatsServer, tag: string, sqlite: string, env: Record<string, string> = {}): Promise<{ app: SpawnedApp; base: string }> {
  const http = await freePort();
  const base = `http://127.0.0.1:${http}`;
  const app = spawnBuiltApp('dashboard', {
    HTTP_PORT: String(http),
    HTTP_HOST: '127.0.0.1',
    ...srv.env('dashboard'),
    SQLITE_PATH: sqlite,
    NATS_KV_ASSIGNMENTS: `map-${tag}`,
    NATS_KV_HEARTBEATS: `hb-${tag}`,
    ELECTION_KV_BUCKET: `el-${tag}`,
    REFRESH_SECONDS: '0.3',
    LOG_LEVEL: 'warn',
    ...env,
  });
  await waitFor('dashboard ready', async () => (await getJson(`${base}/health/ready`)).status === 200, 30_000);
  return { app, base };
}

describeWithInfra(['nats'], 'dashboard API and live events (built bundle, real NATS and SQLite)', () => {
  let dir: string;
  let srv: SecuredNatsServer | undefined;
  let nc: NatsConnection;
  let app: SpawnedApp | undefined;
  let base: string;
  const tag = `dash${process.pid}`;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'dashboard-'));
    const sqlite = join(dir, 'd.db');
    const store = await SqliteStore.open({ filename: sqlite });
    await store.chamberMetadata.upsert({ ...chamber, svidCount: 100, collectionFreqHz: 1, contextDurationSeconds: 600, weight: 60_000, lastUpdated: new Date(), source: 'configured', observedRuns: 0 });
    await store.chamberState.claim(chamber, 1, 'defender-0', new Date());
    for (let s = 1; s <= 3; s++) {
      await store.chamberState.commitRun({
        chamber,
        epoch: 1,
        ownerId: 'defender-0',
        sequence: s,
        runId: `run-${s}`,
        recipe: 'R',
        committedAt: new Date(),
        points: [
          { indicatorKey: 'R|mean/P', value: s === 3 ? 20 : 10 + s / 10, flags: s === 3 ? POINT_FLAGS.VIOLATION | POINT_FLAGS.WE1 : 0, ...(s > 1 ? { limitsVersion: 1 } : {}) },
          { indicatorKey: 'R|mean/SP_001', value: 5, flags: 0 },
        ],
        ...(s === 3 ? { alarms: [{ ruleId: 'WE1', indicatorKey: 'R|mean/P', action: 'ALARM', value: 20, lcl: 7, ucl: 13, center: 10, svid: 'P', statistic: 'mean', message: 'beyond' }] } : {}),
      });
    }
    await store.uchart.putLimitSet({ ...chamber, indicatorKey: 'R|mean/P', version: 1, chartType: 'individuals', center: 10, sigma: 1, lcl: 7, ucl: 13, params: {}, baseline: { reason: 'initial', runIds: ['run-1'], excludedRunIds: [] }, createdAt: new Date() });
    await store.chamberState.claim(monitored, 1, 'defender-0', new Date());
    const F = POINT_FLAGS;
    const model = [
      { indicatorKey: 'R|m:model', value: 0, flags: 0 },
      { indicatorKey: 'R|m:model', value: 1.5, flags: F.NEW_LIMITS, limitsVersion: 1, chart: { spe: 0.8 } },
      { indicatorKey: 'R|m:model', value: 30, flags: F.RUN_ALARMED | F.VIOLATION | F.T2 | F.SPE, limitsVersion: 1, chart: { spe: 9 } },
    ];
    for (let s = 1; s <= 3; s++) {
      await store.chamberState.commitRun({
        chamber: monitored,
        epoch: 1,
        ownerId: 'defender-0',
        sequence: s,
        runId: `m-${s}`,
        recipe: 'R',
        committedAt: new Date(),
        points: [{ indicatorKey: 'R|m/F@Main:mean', value: 200 + s, flags: model[s - 1]!.flags & ~(F.VIOLATION | F.T2 | F.SPE), ...(s > 1 ? { limitsVersion: 1 } : {}) }, model[s - 1]!],
        ...(s === 3 ? { alarms: [{ ruleId: 'RUN', indicatorKey: 'R|m:model', action: 'ALARM', value: 30, ucl: 14.2, svid: 'F', statistic: 'mean', step: 'Main', message: 'T2+SPE on ETCH01:PM2 run m-3', details: runDetails('m-3', 3) }] } : {}),
      });
    }
    await store.uchart.putLimitSet({
      ...monitored,
      indicatorKey: 'R|m:model',
      version: 1,
      chartType: 'monitor',
      center: 0,
      sigma: null,
      lcl: null,
      ucl: 14.2,
      params: { model: { kind: 'monitor', variables: ['R|m/F@Main:mean'], notCharted: [], pca: { components: 1, explainedVariance: 0.9, limits: { t2: 14.2, spe: 6.5 } }, mewma: null } },
      baseline: { reason: 'initial', runIds: ['m-1', 'm-2'], excludedRunIds: [] },
      createdAt: new Date(),
    });
    await store.close();

    ({ srv, nc } = await natsFor(tag));
    // The buckets exist before the dashboard starts, as the defenders and controllers create them.
    await openBucket(nc, 'stable-ids');
    await new AssignmentMapBucket(await openBucket(nc, `map-${tag}`, { history: 5 }), `map-${tag}`).publish(mapV1(), null);
    await new HeartbeatBucket(await openBucket(nc, `hb-${tag}`), `hb-${tag}`).publish({
      schema: 1,
      defenderId: 'defender-0',
      podName: 'pod-a',
      state: 'STABLE',
      mapVersionSeen: 1,
      load: { chambers: 1, inflight: 0, processedTotal: 3 },
      intervalSeconds: 60,
      startedAt: new Date().toISOString(),
      sentAt: new Date().toISOString(),
    });
    await (await new Kvm(nc).create(`el-${tag}`)).put('assignment-controller', JSON.stringify({ v: 1, holder: 'controller-a', token: 2, leaseExpiresAtMs: Date.now() + 600_000, released: false }));
    ({ app, base } = await startDashboard(srv, tag, sqlite));
  });

  afterAll(async () => {
    await app?.stop('SIGTERM');
    await nc?.drain();
    await srv?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers only to its own names: a rebound domain gets 421, a cross-origin POST 403; health answers any Host', async () => {
    // fetch() may not set Host: a raw request does.
    const send = (method: string, path: string, headers: Record<string, string>) =>
      new Promise<number>((resolve, reject) => {
        const u = new URL(base);
        const req = request({ host: u.hostname, port: u.port, method, path, headers }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
        req.on('error', reject);
        req.end(method === 'POST' ? '{}' : undefined);
      });
    expect(await send('GET', '/api/v1/cluster', { host: 'attacker.example' })).toBe(421);
    expect(await send('GET', '/', { host: 'attacker.example:8083' })).toBe(421);
    expect(await send('GET', '/api/v1/cluster', { host: new URL(base).host })).toBe(200);
    expect(await send('GET', '/api/v1/cluster', { host: 'dashboard.defender.svc.cluster.local' })).toBe(200);
    expect(await send('GET', '/health/live', { host: 'attacker.example' })).toBe(200);
    expect(await send('POST', '/api/v1/local-fab/defenders', { host: new URL(base).host, origin: 'http://attacker.example', 'x-dashboard-action': '1', 'content-type': 'application/json' })).toBe(403);
  });

  it('serves the page with a strict content security policy', async () => {
    const res = await fetch(`${base}/`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(await res.text()).toContain('<script src="/assets/app.js"');
    expect((await fetch(`${base}/assets/app.js`)).headers.get('content-type')).toContain('javascript');
    expect((await fetch(`${base}/assets/render.js`)).status).toBe(200);
    expect((await fetch(`${base}/assets/..%2Fmain.js`)).status).toBe(404);
  });

  it('GET /api/v1/cluster: leader, live defender with its share, map and history', async () => {
    await waitFor('the map and heartbeat in the view', async () => {
      const c = (await getJson(`${base}/api/v1/cluster`)).body as { map: unknown; defenders: unknown[] };
      return c.map !== null && c.defenders.length === 1;
    }, 15_000);
    const c = (await getJson(`${base}/api/v1/cluster`)).body;
    expect(c).toMatchObject({
      leader: { holder: 'controller-a', epoch: '2', valid: true },
      map: { version: 1, trigger: 'cold_start', chamberCount: 1 },
      defenders: [{ defenderId: 'defender-0', podName: 'pod-a', state: 'STABLE', alive: true, chambers: 1, weightVsAvg: 1 }],
      history: [{ version: 1, trigger: 'cold_start' }],
      localFab: false,
    });
  });

  it("GET /api/v1/chambers/<key>: the chamber's charts with limits and violations, its alarms; 400 for a bad key", async () => {
    const d = (await getJson(`${base}/api/v1/chambers/ETCH01:PM1`)).body;
    expect(d).toMatchObject({
      key: 'ETCH01:PM1',
      owner: 'defender-0',
      runs: 3,
      hiddenConstantCharts: 1,
      state: { highWaterMark: 3, ownerEpoch: 1 },
      charts: [{ indicatorKey: 'R|mean/P', limits: { center: 10, ucl: 13, lcl: 7 }, violations: 1 }],
      alarms: [{ ruleId: 'WE1', runId: 'run-3', value: 20 }],
    });
    expect((await getJson(`${base}/api/v1/chambers/no-colon`)).status).toBe(400);
    const list = (await getJson(`${base}/api/v1/chambers`)).body as { chambers: { key: string; owner: string; weight: number }[] };
    expect(list.chambers).toEqual([expect.objectContaining({ key: 'ETCH01:PM1', owner: 'defender-0', weight: 60_000 })]);
  });

  it("GET /api/v1/chambers/<key> of a monitored chamber: T² and SPE per run, the model's limits, the run-level alarm with its contributors", async () => {
    const d = (await getJson(`${base}/api/v1/chambers/ETCH01:PM2`)).body as { monitors: unknown[]; charts: unknown[]; hiddenMonitoredCharts: number; alarms: unknown[] };
    expect(d.monitors).toEqual([
      expect.objectContaining({
        recipe: 'R',
        modelKey: 'R|m:model',
        limits: expect.objectContaining({ version: 1, t2: 14.2, spe: 6.5, components: 1, charted: 1 }),
        alarmedRuns: 1,
        points: [
          expect.objectContaining({ runId: 'm-1', t2: null, spe: null, limitsVersion: null, runAlarmed: false }),
          expect.objectContaining({ runId: 'm-2', t2: 1.5, spe: 0.8, newLimits: true, runAlarmed: false }),
          expect.objectContaining({ runId: 'm-3', t2: 30, spe: 9, rules: ['T2', 'SPE'], runAlarmed: true }),
        ],
      }),
    ]);
    expect(d.charts).toEqual([]);
    expect(d.hiddenMonitoredCharts).toBe(1);
    expect(d.alarms).toEqual([
      expect.objectContaining({ ruleId: 'RUN', runId: 'm-3', run: expect.objectContaining({ rules: ['T2', 'SPE'], t2Limit: 14.2, speLimit: 6.5, top: [expect.objectContaining({ label: 'F mean in Main', share: 0.7 }), expect.objectContaining({ label: 'P mean in Main', share: 0.2 })] }) }),
    ]);
  });

  it('GET /api/v1/alarms: a run-level alarm is one feed item with its rules and top contributors', async () => {
    await publishOnce(nc, 'defense.alarms.ETCH01.PM2', JSON.stringify({ ruleId: 'RUN', indicatorKey: 'R|m:model', action: 'ALARM', value: 30, ucl: 14.2, recipe: 'R', svid: 'F', statistic: 'mean', step: 'Main', message: 'T2+SPE on ETCH01:PM2 run m-9', details: runDetails('m-9', 9), ...monitored, runId: 'm-9', sequence: 9, epoch: 1, ownerId: 'defender-0' }), `${tag}-m-9`);
    type Item = { runId: string; ruleId: string; run?: { rules: string[]; top: { label: string; share: number }[] } };
    let items: Item[] = [];
    await waitFor('the run-level alarm in the feed', async () => {
      items = ((await getJson(`${base}/api/v1/alarms?chamber=ETCH01:PM2`)).body as { alarms: Item[] }).alarms;
      return items.length > 0;
    }, 15_000);
    expect(items).toEqual([expect.objectContaining({ runId: 'm-9', ruleId: 'RUN', run: expect.objectContaining({ rules: ['T2', 'SPE'], top: [expect.objectContaining({ label: 'F mean in Main', share: 0.7 }), expect.objectContaining({ label: 'P mean in Main', share: 0.2 })] }) })]);
  });

  it('pushes the cluster view and each new alarm as server-sent events', async () => {
    let opened!: () => void;
    const open = new Promise<void>((r) => (opened = r));
    const events = readEvents(
      `${base}/api/v1/events`,
      (type, data) => type === 'alarm' && (data as { runId?: string }).runId === 'run-4',
      20_000,
      (type) => type === 'cluster' && opened(),
    );
    // Published once the stream is open: the first cluster event proves it is (the stream subscribes
    // to the alarms in the same turn as it sends that first view). A stream that ends or fails first
    // fails the test through `events`.
    await Promise.race([open, events]);
    await publishOnce(nc, 'defense.alarms.ETCH01.PM1', JSON.stringify({ toolId: 'ETCH01', chamberId: 'PM1', runId: 'run-4', ruleId: 'WE2', svid: 'P', statistic: 'mean', value: 12.5, action: 'ALARM', message: 'two of three' }), `${tag}-run-4`);
    const seen = await events;
    expect(seen[0]).toMatchObject({ type: 'cluster', data: { map: { version: 1 } } });
    expect(seen.at(-1)).toMatchObject({ type: 'alarm', data: { chamber: 'ETCH01:PM1', ruleId: 'WE2', value: 12.5 } });
    const feed = (await getJson(`${base}/api/v1/alarms?limit=5`)).body as { alarms: { runId: string }[] };
    expect(feed.alarms[0]).toMatchObject({ runId: 'run-4' });
  });

  it('has no local-fab buttons outside a local fab', async () => {
    const res = await fetch(`${base}/api/v1/local-fab/defenders`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-dashboard-action': '1' }, body: '{}' });
    expect(res.status).toBe(404);
    expect((await getJson(`${base}/api/v1/local-fab`)).body).toEqual({ enabled: false });
  });

  // Last: it replaces the map every test above reads.
  it('the map bucket created again (NATS lost its store): the newer map is shown and enters the movement history (issue 52, item 2)', async () => {
    await waitFor('map v1 in the view', async () => ((await getJson(`${base}/api/v1/cluster`)).body as { map: { version: number } | null }).map?.version === 1, 15_000);
    // As after NATS lost its store: the bucket is gone, the leader creates it again and publishes a map
    // numbered above the one the defenders hold, at the new bucket's first revisions.
    await (await new Kvm(nc).open(`map-${tag}`)).destroy();
    const again = new AssignmentMapBucket(await openBucket(nc, `map-${tag}`, { history: 5 }), `map-${tag}`);
    await again.publish({ ...mapV1(), version: 2, fencingToken: '3', trigger: 'crash', timestamp: new Date().toISOString() }, null);
    type View = { map: { version: number } | null; history: { version: number }[]; problems: string[] };
    let view: View | undefined;
    await waitFor('map v2 in the view, with its history and no stale-map problem', async () => {
      view = (await getJson(`${base}/api/v1/cluster`)).body as View;
      return view.map?.version === 2 && !view.problems.some((p) => /map/.test(p));
    }, 60_000);
    expect(view!.history.map((h) => h.version)).toEqual([2, 1]);
  });
});

describeWithInfra(['nats'], 'dashboard: the notification stream recreated (built bundle, real NATS, a local fab with one defender)', () => {
  let dir: string;
  let srv: SecuredNatsServer | undefined;
  let nc: NatsConnection;
  let app: SpawnedApp | undefined;
  let control: Server;
  let defender: Server;
  let base: string;
  const tag = `dashs${process.pid}`;
  /** What the defender's GET /api/v1/chambers says of the stream (the test moves it on). */
  let health: { stream: string; streamId: string | undefined; missing: boolean; mismatchedChambers: string[] };
  const streamId = async () => (await (await jetstreamManager(nc)).streams.info(STREAMS.notifications)).created;
  type View = { problems: string[]; notes: string[] };
  const view = async () => (await getJson(`${base}/api/v1/cluster`)).body as View;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'dashboard-stream-'));
    ({ srv, nc } = await natsFor(tag));
    await openBucket(nc, `hb-${tag}`);
    await openBucket(nc, `map-${tag}`, { history: 5 });
    await new Kvm(nc).create(`el-${tag}`);
    health = { stream: STREAMS.notifications, streamId: await streamId(), missing: false, mismatchedChambers: [] };
    // One defender as the launcher lists it, and its GET /api/v1/chambers.
    defender = createServer((req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify(req.url === '/api/v1/chambers' ? { chambers: [], stream: health } : {}));
    });
    await new Promise<void>((r) => defender.listen(0, '127.0.0.1', r));
    const defenderUrl = `http://127.0.0.1:${(defender.address() as AddressInfo).port}`;
    control = createServer((_req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ processes: [{ name: 'defender-pod-0', role: 'defender', alive: true, url: defenderUrl, defenderId: 'defender-0' }, { name: 'dashboard', role: 'dashboard', alive: true, url: 'http://127.0.0.1:1' }] }));
    });
    await new Promise<void>((r) => control.listen(0, '127.0.0.1', r));
    ({ app, base } = await startDashboard(srv, tag, join(dir, 'd.db'), {
      LOCAL_FAB_CONTROL_URL: `http://127.0.0.1:${(control.address() as AddressInfo).port}`,
      LOCAL_FAB_CONTROL_TOKEN: 'local-fab-control-token-0123',
    }));
  });

  afterAll(async () => {
    await app?.stop('SIGTERM');
    await nc?.drain();
    await srv?.stop();
    await new Promise((r) => control?.close(r));
    await new Promise((r) => defender?.close(r));
    rmSync(dir, { recursive: true, force: true });
  });

  it('the "stream recreated" problem lasts while the defender has chambers paused on it, then clears to a history line (issue 52, item 2)', async () => {
    expect(await view()).toMatchObject({ notes: [] });
    expect((await view()).problems.filter((p) => p.includes(STREAMS.notifications))).toEqual([]);
    const was = health.streamId;
    // As after NATS lost its store: the stream is created again (a new identity, sequences from 1).
    await (await jetstreamManager(nc)).streams.delete(STREAMS.notifications);
    await ensureStreams(nc);
    const now = await streamId();
    expect(now).not.toBe(was);
    // The defender saw it and paused a chamber whose mark counts in the old stream.
    health = { ...health, streamId: now, mismatchedChambers: ['ETCH01:PM1'] };
    await waitFor('the recreation is a problem naming the paused chamber', async () => (await view()).problems.some((p) => p.includes(`was recreated at ${now}`) && p.includes('defender-0: 1 chamber(s) paused on the old stream (ETCH01:PM1)')), 30_000);
    expect((await view()).notes).toEqual([]);
    // Re-based: the banner clears; what happened stays as a quiet line.
    health = { ...health, mismatchedChambers: [] };
    let v: View | undefined;
    await waitFor('the problem gone, a history line instead', async () => {
      v = await view();
      return !v.problems.some((p) => p.includes('recreated')) && v.notes.length === 1;
    }, 30_000);
    expect(v!.notes[0]).toBe(`stream ${STREAMS.notifications} was recreated at ${now} (was ${was}); every defender reads it and re-based its chambers`);
  });
});

describe('dashboard process: authentication is required off loopback', () => {
  it('refuses to start (exit 2) bound to a non-loopback address without DASHBOARD_AUTH, or with none', async () => {
    for (const env of [{}, { DASHBOARD_AUTH: 'none' }] as Record<string, string>[]) {
      const app = spawnBuiltApp('dashboard', { HTTP_HOST: '0.0.0.0', HTTP_PORT: String(await freePort()), NATS_SERVERS: 'nats://127.0.0.1:1', ...env });
      expect(await app.exited).toEqual({ code: 2, signal: null });
      expect(app.stderr()).toContain('  - DASHBOARD_AUTH: ');
      expect(app.stderr()).toMatch(/allowed only on a loopback HTTP_HOST|binds HTTP_HOST=0\.0\.0\.0, not a loopback address/);
    }
  });
});

const VIEWER = 'viewer-token-for-the-process-test';
const OPERATOR = 'operator-token-for-the-process-test';

/** A raw request (from `localAddress` when given: the peer address the dashboard sees). */
function send(base: string, method: string, path: string, headers: Record<string, string>, localAddress?: string): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const u = new URL(base);
    const req = request({ host: u.hostname, port: u.port, method, path, headers: { host: u.host, ...headers }, ...(localAddress ? { localAddress } : {}) }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end(method === 'POST' ? '{}' : undefined);
  });
}

describeWithInfra(['nats'], 'dashboard authentication (built bundle, real NATS): token and reverse-proxy modes', () => {
  let dir: string;
  let tokenApp: SpawnedApp | undefined;
  let proxyApp: SpawnedApp | undefined;
  let control: Server;
  const controlCalls: { path: string; authorization: string | undefined }[] = [];
  let tokenBase: string;
  let proxyBase: string;
  const CONTROL_TOKEN = 'local-fab-control-token-0123';

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'dashboard-auth-'));
    // The launcher's control endpoint as the dashboard sees it: it records what reaches it.
    control = createServer((req, res) => {
      controlCalls.push({ path: req.url ?? '', authorization: req.headers.authorization });
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify(req.url === '/control/processes' ? { processes: [] } : { started: 'defender-pod-9' }));
    });
    await new Promise<void>((r) => control.listen(0, '127.0.0.1', r));
    const common = { HTTP_HOST: '127.0.0.1', ...testNatsEnv('dashboard'), SQLITE_PATH: join(dir, 'd.db'), NATS_KV_ASSIGNMENTS: `map-auth-${process.pid}`, LOG_LEVEL: 'warn' };
    const tp = await freePort();
    const pp = await freePort();
    tokenBase = `http://127.0.0.1:${tp}`;
    proxyBase = `http://127.0.0.1:${pp}`;
    tokenApp = spawnBuiltApp('dashboard', {
      ...common,
      HTTP_PORT: String(tp),
      DASHBOARD_AUTH: 'token',
      DASHBOARD_VIEWER_TOKENS: VIEWER,
      DASHBOARD_OPERATOR_TOKENS: `old-operator-token-being-rotated,${OPERATOR}`,
      LOCAL_FAB_CONTROL_URL: `http://127.0.0.1:${(control.address() as AddressInfo).port}`,
      LOCAL_FAB_CONTROL_TOKEN: CONTROL_TOKEN,
    });
    // Trusts only 127.0.0.1: the same headers sent from 127.0.0.2 come from an untrusted address.
    proxyApp = spawnBuiltApp('dashboard', { ...common, HTTP_PORT: String(pp), DASHBOARD_AUTH: 'proxy', DASHBOARD_TRUSTED_PROXIES: '127.0.0.1', DASHBOARD_OPERATOR_GROUPS: 'fab-operators' });
    await waitFor('both dashboards live', async () => (await getJson(`${tokenBase}/health/live`)).status === 200 && (await getJson(`${proxyBase}/health/live`)).status === 200, 30_000);
  });

  afterAll(async () => {
    await tokenApp?.stop('SIGTERM');
    await proxyApp?.stop('SIGTERM');
    await new Promise((r) => control?.close(r));
    rmSync(dir, { recursive: true, force: true });
  });

  it('without credentials: 401 for the API and the event stream, the login page for the page; probes and metrics stay open', async () => {
    for (const path of ['/api/v1/cluster', '/api/v1/events', '/api/v1/local-fab', '/api/v1/chambers/ETCH01:PM1', '/api/v1/alarms']) {
      const r = await send(tokenBase, 'GET', path, {});
      expect([path, r.status, r.headers['www-authenticate']]).toEqual([path, 401, 'Bearer realm="dashboard"']);
    }
    expect((await send(tokenBase, 'POST', '/api/v1/local-fab/defenders', { 'content-type': 'application/json', 'x-dashboard-action': '1' })).status).toBe(401);
    const page = await send(tokenBase, 'GET', '/', {});
    expect([page.status, page.headers.location]).toEqual([302, '/login']);
    const login = await send(tokenBase, 'GET', '/login', {});
    expect(login.status).toBe(200);
    expect(login.body).toContain('data-testid="login-form"');
    // The API's documentation (no data) is served like the page's code.
    for (const path of ['/health/live', '/metrics', '/assets/login.js', '/api/docs/openapi.json']) expect([path, (await send(tokenBase, 'GET', path, {})).status]).toEqual([path, 200]);
    expect(controlCalls).toEqual([]);
  });

  it("the served OpenAPI document: Swagger UI's Authorize button for the bearer token on every path that needs one (issue 52, item 6)", async () => {
    const doc = JSON.parse((await send(tokenBase, 'GET', '/api/docs/openapi.json', {})).body) as {
      components?: { securitySchemes?: Record<string, { type?: string; scheme?: string }> };
      paths: Record<string, Record<string, { security?: Record<string, unknown>[] }>>;
    };
    expect(doc.components?.securitySchemes?.['bearer']).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(doc.paths['/api/v1/cluster']?.['get']?.security).toEqual([{ bearer: [] }]);
    expect(doc.paths['/api/v1/local-fab/defenders']?.['post']?.security).toEqual([{ bearer: [] }]);
    for (const open of ['/health/live', '/metrics', '/api/v1/session']) expect([open, doc.paths[open]?.['get']?.security]).toEqual([open, undefined]);
  });

  it('a viewer reads everything and gets 403 on an operator action; a wrong token gets 401', async () => {
    const viewer = { authorization: `Bearer ${VIEWER}` };
    expect((await send(tokenBase, 'GET', '/api/v1/cluster', viewer)).status).toBe(200);
    expect(JSON.parse((await send(tokenBase, 'GET', '/api/v1/session', viewer)).body)).toMatchObject({ mode: 'token', authenticated: true, role: 'viewer' });
    const pressed = await send(tokenBase, 'POST', '/api/v1/local-fab/defenders', { ...viewer, 'content-type': 'application/json', 'x-dashboard-action': '1' });
    expect(pressed.status).toBe(403);
    expect(pressed.body).toContain('operator role required');
    expect((await send(tokenBase, 'GET', '/api/v1/cluster', { authorization: `Bearer ${VIEWER}x` })).status).toBe(401);
    expect(controlCalls).toEqual([]);
  });

  it('an operator presses a local-fab button: forwarded to the control endpoint with its token', async () => {
    const r = await send(tokenBase, 'POST', '/api/v1/local-fab/defenders', { authorization: `Bearer ${OPERATOR}`, 'content-type': 'application/json', 'x-dashboard-action': '1' });
    expect([r.status, JSON.parse(r.body)]).toEqual([201, { started: 'defender-pod-9' }]);
    expect(controlCalls).toEqual([{ path: '/control/defenders', authorization: `Bearer ${CONTROL_TOKEN}` }]);
  });

  it('a browser signs in with a token: an HttpOnly SameSite=Strict cookie authenticates the page, the API and the live events', async () => {
    expect((await send(tokenBase, 'POST', '/api/v1/session', { 'content-type': 'application/json' })).status).toBe(400);
    const bad = await fetch(`${tokenBase}/api/v1/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token: 'not-a-dashboard-token-123' }) });
    expect([bad.status, bad.headers.get('set-cookie')]).toEqual([401, null]);
    const res = await fetch(`${tokenBase}/api/v1/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ token: OPERATOR }) });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ role: 'operator', expiresAt: expect.any(String) });
    const setCookie = res.headers.get('set-cookie') ?? '';
    expect(setCookie).toMatch(/^dashboard_session=v1\.operator\.[^;]+; Path=\/; Max-Age=28800; HttpOnly; SameSite=Strict$/);
    expect(setCookie).not.toContain(OPERATOR);
    const cookie = { cookie: setCookie.split(';')[0]! };
    expect((await send(tokenBase, 'GET', '/', cookie)).status).toBe(200);
    expect(JSON.parse((await send(tokenBase, 'GET', '/api/v1/session', cookie)).body)).toMatchObject({ authenticated: true, role: 'operator', via: 'session' });
    // The event stream with the cookie: the first event is the cluster view.
    const stream = await fetch(`${tokenBase}/api/v1/events`, { headers: cookie, signal: AbortSignal.timeout(15_000) });
    expect(stream.status).toBe(200);
    const reader = stream.body!.getReader();
    let text = '';
    while (!text.includes('\n\n')) text += Buffer.from((await reader.read()).value ?? []).toString('utf8');
    await reader.cancel();
    expect(text).toMatch(/^event: cluster$/m);
    // Signing out clears the cookie.
    const out = await send(tokenBase, 'DELETE', '/api/v1/session', cookie);
    expect([out.status, String(out.headers['set-cookie'])]).toEqual([204, expect.stringContaining('dashboard_session=; Path=/; Max-Age=0')]);
  });

  it('proxy mode: the identity headers count from the trusted proxy only; groups give the role', async () => {
    const alice = { 'x-forwarded-user': 'alice@fab.example', 'x-forwarded-groups': 'engineers,fab-operators' };
    const bob = { 'x-forwarded-user': 'bob@fab.example', 'x-forwarded-groups': 'engineers' };
    expect(JSON.parse((await send(proxyBase, 'GET', '/api/v1/session', alice, '127.0.0.1')).body)).toMatchObject({ mode: 'proxy', authenticated: true, role: 'operator', user: 'alice@fab.example', via: 'proxy' });
    expect((await send(proxyBase, 'GET', '/api/v1/cluster', bob, '127.0.0.1')).status).toBe(200);
    // bob is a viewer: no operator actions (the guard answers before the local fab's 404).
    expect((await send(proxyBase, 'POST', '/api/v1/local-fab/defenders', { ...bob, 'content-type': 'application/json', 'x-dashboard-action': '1' }, '127.0.0.1')).status).toBe(403);
    expect((await send(proxyBase, 'POST', '/api/v1/local-fab/defenders', { ...alice, 'content-type': 'application/json', 'x-dashboard-action': '1' }, '127.0.0.1')).status).toBe(404);
    // The same headers from an address that is not the proxy are ignored.
    expect((await send(proxyBase, 'GET', '/api/v1/cluster', alice, '127.0.0.2')).status).toBe(401);
    expect(JSON.parse((await send(proxyBase, 'GET', '/api/v1/session', alice, '127.0.0.2')).body)).toEqual({ mode: 'proxy', authenticated: false });
    expect((await send(proxyBase, 'GET', '/api/v1/cluster', {}, '127.0.0.1')).status).toBe(401);
  });
});
