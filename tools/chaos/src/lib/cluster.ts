import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import type { KV } from '@nats-io/kv';
import { InvalidMessageError, parseStoredMapHead, strategyScope, type AssignmentMap } from '@defender/contracts';
import { ASSIGNMENT_MAP_KEY, AssignmentMapBucket, DEFAULT_BUCKETS, DEFAULT_STREAM_SETTINGS, ensureStreams, HeartbeatBucket, natsAuthorizationConfig, type NatsRole, openBucket } from '@defender/nats-kv';
import { SqliteStore } from '@defender/store';
import { freePort, getJson, imageNodeOptions, makeTestPki, NatsClusterHandle, natsPasswordEnvOf, natsRoleOfApp, NatsServerHandle, spawnBuiltApp, SpawnedApp, startNatsCluster, startNatsServer, testNatsUsers, waitFor, type TestPki } from '@defender/infra-harness';
import { ClusterSettings, SHORT_SETTINGS } from './settings';
import { chamberKeyOf, chaosStrategy, SeedChamber, weightOf } from './workload';

export type Role = 'election-agent' | 'assignment-controller' | 'defender';

/** One process of the cluster. */
export interface Proc {
  readonly name: string;
  readonly role: Role;
  readonly app: SpawnedApp;
  readonly http: number;
  readonly url: string;
  /** gRPC port of an election agent. */
  readonly grpc?: number;
  /** POD_UID of a defender. */
  readonly podUid?: string;
  readonly startedAt: number;
  frozen: boolean;
  /** Set before the harness stops it on purpose; any other exit is restarted like a crashed container. */
  expectedExit: boolean;
  /** The environment it was started with (a restart reuses it: same pod, same UID). */
  readonly env: Record<string, string>;
  /** Container restarts before this process (0: the pod's first). */
  readonly restarts: number;
}

/** User and password of one NATS connection. */
export interface ChaosNatsCredentials {
  readonly user: string;
  readonly pass: string;
}

/** The NATS users of a chaos cluster and the server configuration that defines them. */
export interface ChaosNatsUsers {
  readonly config: string;
  /** The fixture's: unrestricted (an operator's), for the publisher, the watchers and the faults. */
  readonly fixture: ChaosNatsCredentials;
  /** Each app's, with its role's permissions only (libs/nats-kv permissions.ts). */
  readonly apps: Readonly<Record<Role, ChaosNatsCredentials>>;
}

/** Fresh passwords per cluster (tools/infra testNatsUsers); each app role mapped to its NATS role. */
export function chaosNatsUsers(): ChaosNatsUsers {
  const apps: Role[] = ['defender', 'assignment-controller', 'election-agent'];
  const users = testNatsUsers(natsAuthorizationConfig(apps.map((app) => natsRoleOfApp(app) as NatsRole).map((role) => ({ user: role, role, passwordEnv: natsPasswordEnvOf(role) }))), 'chaos-fixture');
  const userOf = (app: Role): ChaosNatsCredentials => {
    const c = users.users[natsRoleOfApp(app)];
    if (!c) throw new Error(`no NATS user for ${app}`);
    return c;
  };
  const creds = Object.fromEntries(apps.map((app) => [app, userOf(app)])) as Record<Role, ChaosNatsCredentials>;
  return { config: users.config, fixture: users.fixture, apps: creds };
}

export const isAlive = (p: Proc): boolean => p.app.child.exitCode === null && p.app.child.signalCode === null;

/** Every map revision the fixture's watcher saw, in order. */
export interface MapRecord {
  readonly revision: number;
  readonly map: AssignmentMap;
  /** When the test process received it (epoch ms): "detection" in the reports. */
  readonly seenAt: number;
}

/**
 * Every map head the fixture's watcher saw, in order, including those whose chunks a newer
 * publication replaced before the watcher could read them (not in {@link MapRecord}s): the map
 * sequence is checked on these.
 */
export interface MapHeadRecord {
  readonly revision: number;
  readonly version: number;
  readonly fencingToken: string;
  /** Its chunks were gone when the watcher read them. */
  readonly superseded: boolean;
}

/** A defender process seen heartbeating for the first time, or its heartbeat removed. */
export interface MemberRecord {
  readonly defenderId: string;
  readonly podUid: string | undefined;
  readonly kind: 'joined' | 'removed';
  readonly at: number;
}

/** A fault or action on the timeline. */
export interface ChaosEvent {
  readonly at: number;
  readonly kind: string;
  readonly target?: string;
  readonly detail?: Record<string, unknown>;
}

export interface ChaosClusterOptions {
  readonly chambers: readonly SeedChamber[];
  readonly settings?: ClusterSettings;
  readonly agents?: number;
  readonly controllers?: number;
  readonly maxDefenders?: number;
  /** Extra environment of every defender. */
  readonly defenderEnv?: Record<string, string>;
  readonly logLevel?: string;
  /**
   * Like a Deployment's restart policy: a process that exits without the harness stopping it is
   * started again (same pod name and UID) after this long. Default: Kubernetes' first
   * CrashLoopBackOff delay (10 s at heartbeat 2 s) scaled to the heartbeat.
   */
  readonly restartDelayMs?: number;
  /**
   * NATS nodes: 1 (default) a single nats-server; 3 a cluster on loopback ports, with JetStream
   * replicas 3 for every stream and bucket (the fixture's and the apps' alike).
   */
  readonly natsNodes?: number;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Test-only preload that lets the harness step a process's wall clock (see the file): every
 * controller is started with it, at offset 0 until {@link ChaosCluster.setClockOffset} writes its offset file.
 */
const CLOCK_OFFSET_PRELOAD = join(__dirname, 'clock-offset.cjs');
const CLOCK_OFFSET_APPLIED = '"msg":"chaos: wall clock offset applied"';

/**
 * A real Defender cluster for chaos scenarios: a private nats-server (restartable), election-agent
 * replicas, controllers and defenders as separate Node processes from the built bundles, on one
 * SQLite file. It records every assignment-map publication and membership change as seen from
 * outside, and the faults it injects, with wall-clock times.
 */
export class ChaosCluster {
  readonly procs: Proc[] = [];
  readonly maps: MapRecord[] = [];
  readonly mapHeads: MapHeadRecord[] = [];
  readonly members: MemberRecord[] = [];
  readonly events: ChaosEvent[] = [];
  readonly settings: ClusterSettings;
  private readonly env: Record<string, string>;
  private readonly podOfId = new Map<string, string | undefined>();
  private readonly idOfPod = new Map<string, string>();
  private stopWatchers: (() => void)[] = [];
  private closed = false;
  private counters = { agent: 0, controller: 0 };
  private heartbeatBucket: HeartbeatBucket | undefined;
  private stableIds: KV | undefined;
  /** Processes that exited on their own and wait for their restart. */
  private pendingRestarts = 0;

  private constructor(
    private readonly natsBackend: NatsServerHandle | NatsClusterHandle,
    readonly nc: NatsConnection,
    readonly dir: string,
    private readonly opts: ChaosClusterOptions,
    /** The NATS users of this cluster: the fixture's (for extra connections) and each app role's. */
    readonly natsAuth: ChaosNatsUsers,
    /** The throwaway PKI of the cluster's NATS, which requires TLS from every client. */
    private readonly pki: TestPki,
  ) {
    this.settings = opts.settings ?? SHORT_SETTINGS;
    const s = this.settings;
    this.env = {
      NATS_SERVERS: this.natsUrls.join(','),
      NATS_TLS_CA_FILE: pki.caCert,
      NATS_KV_REPLICAS: String(this.replicas),
      NATS_STREAM_REPLICAS: String(this.replicas),
      ELECTION_KV_REPLICAS: String(this.replicas),
      HTTP_HOST: '127.0.0.1',
      LOG_LEVEL: opts.logLevel ?? process.env['CHAOS_LOG_LEVEL'] ?? 'warn',
      HEARTBEAT_INTERVAL_SECONDS: String(s.heartbeatSeconds),
      MAX_DEFENDERS: String(opts.maxDefenders ?? 64),
      COLD_START_WINDOW_SECONDS: String(s.coldStartWindowSeconds),
      SCALE_WINDOW_SECONDS: String(s.scaleWindowSeconds),
      MAX_BATCH_WAIT_SECONDS: String(s.maxBatchWaitSeconds),
      ELECTION_TTL_SECONDS: String(s.electionTtlSeconds),
      ELECTION_CLOCK_SKEW_MS: String(s.electionClockSkewMs),
      // The agents require a token, on loopback too (issue 50): one per cluster, which the
      // controllers (and embedded-controller defenders) send.
      ELECTION_AUTH_TOKEN: randomBytes(24).toString('hex'),
      STORE_BACKEND: 'sqlite',
      SQLITE_PATH: join(dir, 'defender.db'),
    };
  }

  /** The single nats-server (the cluster's nodes: {@link natsCluster}). */
  get nats(): NatsServerHandle {
    if ('nodes' in this.natsBackend) throw new Error('this chaos cluster runs a NATS cluster: use natsCluster');
    return this.natsBackend;
  }

  /** TLS options of a NATS client of this cluster (it requires TLS; the CA is the cluster's own). */
  get natsTls(): { caFile: string } {
    return { caFile: this.pki.caCert };
  }

  get natsCluster(): NatsClusterHandle | undefined {
    return 'nodes' in this.natsBackend ? this.natsBackend : undefined;
  }

  get natsUrls(): string[] {
    return 'nodes' in this.natsBackend ? this.natsBackend.urls : [this.natsBackend.url];
  }

  /** JetStream replicas of every stream and bucket: one per NATS node. */
  get replicas(): number {
    return this.natsCluster?.nodes.length ?? 1;
  }

  get sqlitePath(): string {
    return this.env['SQLITE_PATH'] ?? '';
  }

  get chambers(): readonly SeedChamber[] {
    return this.opts.chambers;
  }

  /** Starts NATS, seeds the store, starts the agents and controllers (defenders are up to the caller). */
  static async start(opts: ChaosClusterOptions): Promise<ChaosCluster> {
    const dir = mkdtempSync(join(tmpdir(), 'defender-chaos-'));
    // Every app on its own NATS user with its role's permissions, as in production (SECURITY.md);
    // the fixture is the operator's view (it also deletes messages and reads everything).
    const auth = chaosNatsUsers();
    const authConf = join(dir, 'nats-auth.conf');
    writeFileSync(authConf, auth.config, { mode: 0o600 });
    // And over TLS only, as deployments run (a CA made for this cluster; routes stay on loopback).
    let pki: TestPki | undefined;
    let nats: NatsServerHandle | NatsClusterHandle;
    try {
      pki = makeTestPki();
      const tls = { certFile: pki.serverCert, keyFile: pki.serverKey, caFile: pki.caCert };
      nats = (opts.natsNodes ?? 1) > 1 ? await startNatsCluster({ nodes: opts.natsNodes, partitionable: true, extraArgs: ['-c', authConf], tls }) : await startNatsServer({ extraArgs: ['-c', authConf], tls });
    } catch (err) {
      rmSync(dir, { recursive: true, force: true });
      if (pki) rmSync(pki.dir, { recursive: true, force: true });
      throw err;
    }
    const clusterPki = pki;
    const urls = 'nodes' in nats ? nats.urls : [nats.url];
    let nc: NatsConnection | undefined;
    try {
      const conn = await connect({ servers: urls, name: 'chaos', maxReconnectAttempts: -1, reconnectTimeWait: 100, pingInterval: 2000, ...auth.fixture, tls: { caFile: clusterPki.caCert } });
      nc = conn;
      const c = new ChaosCluster(nats, conn, dir, opts, auth, clusterPki);
      await c.seed();
      // The apps create the same streams and buckets with the same settings; creating them first
      // lets the publisher start before any defender and the watchers before any controller.
      // Retried: a fresh NATS cluster may time out creating its first replicated streams on a busy machine.
      await waitFor('the streams created', async () => {
        await ensureStreams(conn, { ...DEFAULT_STREAM_SETTINGS, replicas: c.replicas });
        return true;
      }, 60_000, 500);
      await c.watch();
      for (let i = 0; i < (opts.agents ?? 2); i++) await c.startAgent();
      for (let i = 0; i < (opts.controllers ?? 2); i++) await c.startController();
      return c;
    } catch (err) {
      await nc?.close().catch(() => undefined);
      await nats.stop();
      rmSync(dir, { recursive: true, force: true });
      rmSync(clusterPki.dir, { recursive: true, force: true });
      throw err;
    }
  }

  private async seed(): Promise<void> {
    const store = await SqliteStore.open({ filename: this.sqlitePath });
    try {
      for (const ch of this.opts.chambers) {
        await store.chamberMetadata.upsert({ ...ch, weight: weightOf(ch), lastUpdated: new Date(), source: 'configured', observedRuns: 0 });
        const key = chamberKeyOf(ch);
        await store.strategies.put({ scope: strategyScope({ kind: 'chamber', chamber: ch }), version: 1, document: chaosStrategy(key), createdAt: new Date(), author: 'chaos' });
      }
    } finally {
      await store.close();
    }
  }

  /** Watches the map key and the heartbeat bucket, re-watching (from the last revision) after NATS restarts. */
  private async watch(): Promise<void> {
    const replicas = this.replicas;
    const maps = await openBucket(this.nc, DEFAULT_BUCKETS.assignments, { history: 5, replicas });
    const hbs = await openBucket(this.nc, DEFAULT_BUCKETS.heartbeats, { history: 1, replicas });
    this.stableIds = await openBucket(this.nc, DEFAULT_BUCKETS.stableIds, { history: 1, replicas });
    this.heartbeatBucket = new HeartbeatBucket(hbs);
    const mapBucket = new AssignmentMapBucket(maps, DEFAULT_BUCKETS.assignments);
    this.keepWatching(maps, ASSIGNMENT_MAP_KEY, async (e) => {
      if (e.operation !== 'PUT') return;
      if (e.revision <= (this.maps.at(-1)?.revision ?? 0)) return;
      // The head and its chunks (ADR 0009); null: superseded before it could be read. A NATS error
      // propagates: the watch resumes at this revision.
      let map: AssignmentMap | null;
      try {
        map = await mapBucket.resolveEntry(e);
      } catch (err) {
        if (!(err instanceof InvalidMessageError)) throw err;
        this.note('bad-map', ASSIGNMENT_MAP_KEY, { revision: e.revision, err: err.message });
        return;
      }
      if (map) {
        this.maps.push({ revision: e.revision, map, seenAt: Date.now() });
        this.mapHeads.push({ revision: e.revision, version: map.version, fencingToken: map.fencingToken, superseded: false });
      } else {
        // Valid (resolveEntry parsed it): its version and token still count in the map sequence.
        const stored = parseStoredMapHead(e.value);
        const head = stored.kind === 'chunked' ? stored.head : stored.map;
        this.mapHeads.push({ revision: e.revision, version: head.version, fencingToken: head.fencingToken, superseded: true });
        this.note('map-superseded', ASSIGNMENT_MAP_KEY, { revision: e.revision, version: head.version });
      }
    });
    this.keepWatching(hbs, '>', (e) => {
      if (e.operation === 'PUT') {
        let hb: { podUid?: string; defenderId: string };
        try {
          hb = JSON.parse(e.string()) as { podUid?: string; defenderId: string };
        } catch (err) {
          this.note('bad-heartbeat', e.key, { err: (err as Error).message });
          return;
        }
        if (!this.podOfId.has(e.key) || this.podOfId.get(e.key) !== hb.podUid) {
          this.podOfId.set(e.key, hb.podUid);
          if (hb.podUid) this.idOfPod.set(hb.podUid, e.key);
          this.members.push({ defenderId: e.key, podUid: hb.podUid, kind: 'joined', at: Date.now() });
        }
      } else if (this.podOfId.has(e.key)) {
        this.members.push({ defenderId: e.key, podUid: this.podOfId.get(e.key), kind: 'removed', at: Date.now() });
        this.podOfId.delete(e.key);
      }
    });
  }

  private keepWatching(kv: KV, key: string, onEntry: (e: { key: string; revision: number; operation: string; value: Uint8Array; string(): string }) => void | Promise<void>): void {
    let stopped = false;
    let lastRevision = 0;
    let current: { stop(): void } | undefined;
    this.stopWatchers.push(() => {
      stopped = true;
      current?.stop();
    });
    void (async () => {
      while (!stopped) {
        try {
          const iter = await kv.watch({ key, ...(lastRevision > 0 ? { resumeFromRevision: lastRevision + 1 } : {}) });
          current = iter;
          if (stopped) iter.stop();
          for await (const e of iter) {
            await onEntry(e);
            lastRevision = Math.max(lastRevision, e.revision);
          }
        } catch (err) {
          if (!stopped) this.note('watch-error', key, { err: (err as Error).message });
        }
        if (!stopped) await sleep(200);
      }
    })();
  }

  /** Adds an event to the timeline (now, unless `at` is given). */
  note(kind: string, target?: string, detail?: Record<string, unknown>, at = Date.now()): ChaosEvent {
    const e: ChaosEvent = { at, kind, ...(target !== undefined ? { target } : {}), ...(detail ? { detail } : {}) };
    this.events.push(e);
    return e;
  }

  private async spawn(role: Role, name: string, extraEnv: Record<string, string>, grpc?: number, podUid?: string, restarts = 0): Promise<Proc> {
    const http = await freePort();
    const env = { POD_NAME: name, ...(grpc ? { GRPC_PORT: String(grpc), GRPC_HOST: '127.0.0.1' } : {}), ...extraEnv };
    const cred = this.natsAuth.apps[role];
    const app = spawnBuiltApp(role, { ...this.env, NATS_USER: cred.user, NATS_PASSWORD: cred.pass, HTTP_PORT: String(http), ...env });
    const label = restarts > 0 ? `${name}~${restarts}` : name;
    const p: Proc = {
      name: label,
      role,
      app,
      http,
      url: `http://127.0.0.1:${http}`,
      startedAt: Date.now(),
      frozen: false,
      expectedExit: false,
      env,
      restarts,
      ...(grpc ? { grpc } : {}),
      ...(podUid ? { podUid } : {}),
    };
    this.procs.push(p);
    this.note(restarts > 0 ? 'restarted (like a crashed container)' : 'start', label, { role });
    void app.exited.then((res) => {
      if (this.closed) return;
      if (p.expectedExit) {
        this.note('exited', label, { role, code: res.code, signal: res.signal });
        return;
      }
      this.note('exited on its own', label, { role, code: res.code, signal: res.signal });
      const delay = this.opts.restartDelayMs ?? 10_000 * (this.settings.heartbeatSeconds / 2);
      this.pendingRestarts++;
      setTimeout(() => {
        this.pendingRestarts--;
        if (this.closed) return;
        void this.spawn(role, name, extraEnv, grpc, podUid, restarts + 1).catch((err: unknown) => this.note('restart failed', label, { err: (err as Error).message }));
      }, delay).unref();
    });
    return p;
  }

  /** Processes that exited without the harness stopping them, since `from` (epoch ms). */
  unexpectedExits(from: number): ChaosEvent[] {
    return this.events.filter((e) => e.kind === 'exited on its own' && e.at >= from);
  }

  get agents(): Proc[] {
    return this.procs.filter((p) => p.role === 'election-agent');
  }
  get controllers(): Proc[] {
    return this.procs.filter((p) => p.role === 'assignment-controller');
  }
  get defenders(): Proc[] {
    return this.procs.filter((p) => p.role === 'defender');
  }
  liveDefenders(): Proc[] {
    return this.defenders.filter(isAlive);
  }

  /** Starts an election-agent replica (on `grpc`, e.g. a dead replica's port, or a free one). */
  async startAgent(grpc?: number): Promise<Proc> {
    const port = grpc ?? (await freePort());
    const p = await this.spawn('election-agent', `agent-${this.counters.agent++}`, {}, port);
    await waitFor(`${p.name} ready`, async () => (await getJson(`${p.url}/health/ready`).catch(() => ({ status: 0 }))).status === 200, 60_000);
    return p;
  }

  /** Agents' addresses, every replica ever started (a client skips the dead ones). */
  private agentAddrs(): string {
    return [...new Set(this.agents.map((a) => `127.0.0.1:${a.grpc}`))].join(',');
  }

  /** Starts a controller; its wall clock can be stepped with {@link setClockOffset} (a restart keeps the offset, like its host). */
  async startController(): Promise<Proc> {
    const name = `controller-${this.counters.controller++}`;
    return this.spawn('assignment-controller', name, {
      ELECTION_AGENT_ADDR: this.agentAddrs(),
      NODE_OPTIONS: [imageNodeOptions('assignment-controller'), `--require ${CLOCK_OFFSET_PRELOAD}`].filter(Boolean).join(' '),
      CHAOS_CLOCK_OFFSET_FILE: join(this.dir, `clock-offset-${name}`),
    });
  }

  /**
   * Sets `p`'s wall clock to the host's plus `offsetMs` (a step by the difference from its current
   * offset, as NTP would make it; its monotonic clock does not move) and waits until the process
   * has applied it. Returns when (epoch ms, the host's clock).
   */
  async setClockOffset(p: Proc, offsetMs: number): Promise<number> {
    const file = p.env['CHAOS_CLOCK_OFFSET_FILE'];
    if (!file) throw new Error(`${p.name} was not started with a steppable clock`);
    const applied = () => p.app.stdout().split(CLOCK_OFFSET_APPLIED).length - 1;
    const before = applied();
    writeFileSync(file, String(offsetMs));
    await waitFor(`${p.name} applying a wall-clock offset of ${offsetMs} ms`, async () => applied() > before, 10_000, 10);
    return this.note('wall clock stepped', p.name, { role: p.role, offsetMs }).at;
  }

  /** Starts a defender with pod UID `podUid` (a new pod: a fresh UID). */
  async startDefender(podUid: string, extraEnv: Record<string, string> = {}): Promise<Proc> {
    return this.spawn('defender', podUid, { POD_UID: podUid, ...this.opts.defenderEnv, ...extraEnv }, undefined, podUid);
  }

  async startDefenders(n: number, prefix = 'pod'): Promise<Proc[]> {
    const base = this.defenders.length;
    return Promise.all(Array.from({ length: n }, (_, i) => this.startDefender(`${prefix}-${base + i}`)));
  }

  /** The stable ID a defender process holds (from its heartbeats), if it heartbeated. */
  defenderIdOf(p: Proc): string | undefined {
    return p.podUid ? this.idOfPod.get(p.podUid) : undefined;
  }

  /** The process currently holding `defenderId`. */
  procOf(defenderId: string): Proc | undefined {
    const pod = this.podOfId.get(defenderId);
    return this.defenders.find((p) => p.podUid === pod && isAlive(p));
  }

  latest(): MapRecord | undefined {
    return this.maps.at(-1);
  }

  /** The newest map; throws when none was published yet. */
  current(): MapRecord {
    const m = this.latest();
    if (!m) throw new Error('no assignment map has been published');
    return m;
  }

  /** The stable ID of a defender that heartbeated; throws otherwise. */
  idOf(p: Proc): string {
    const id = this.defenderIdOf(p);
    if (id === undefined) throw new Error(`${p.name} has not heartbeated yet`);
    return id;
  }

  /**
   * How much longer than at a suite's own size (tens of chambers) the hang guards of this cluster's
   * waits are: a GigaFab-size run (`--chambers 20000`) claims thousands of chambers per defender
   * after a crash, which takes minutes on 2 cores. 1 up to 2,000 chambers (every CI run).
   */
  get waitScale(): number {
    return Math.max(1, this.chambers.length / 2000);
  }

  async waitForMap(what: string, pred: (m: MapRecord) => boolean, timeoutMs = 60_000): Promise<MapRecord> {
    let found: MapRecord | undefined;
    await waitFor(what, async () => {
      const l = this.latest();
      if (l && pred(l)) found = l;
      return found !== undefined;
    }, timeoutMs * this.waitScale, 25);
    return this.current();
  }

  /**
   * Waits until no restart is pending, the newest map names exactly the live, unfrozen defenders,
   * and every one of them heartbeats having applied it.
   */
  async waitStable(timeoutMs = 60_000): Promise<MapRecord> {
    let stable: MapRecord | undefined;
    await waitFor('a stable cluster', async () => {
      stable = undefined;
      const m = this.latest();
      const bucket = this.heartbeatBucket;
      if (!m || !bucket || this.pendingRestarts > 0) return false;
      const ids: string[] = [];
      for (const p of this.liveDefenders().filter((x) => !x.frozen)) {
        const id = this.defenderIdOf(p);
        if (id === undefined) return false;
        ids.push(id);
      }
      const owners = new Set(Object.keys(m.map.defenderInfo));
      if (owners.size !== ids.length || !ids.every((id) => owners.has(id))) return false;
      const { heartbeats } = await bucket.readAll();
      const seen = new Map(heartbeats.map((h) => [h.heartbeat.defenderId, h.heartbeat.mapVersionSeen]));
      if (!ids.every((id) => seen.get(id) === m.map.version)) return false;
      stable = m;
      return true;
    }, timeoutMs * this.waitScale, 50);
    return stable ?? this.current();
  }

  /** The controller that says it leads, if any. */
  async leader(): Promise<Proc | undefined> {
    for (const p of this.controllers.filter((x) => isAlive(x) && !x.frozen)) {
      const res = await getJson(`${p.url}/api/v1/status`).catch(() => undefined);
      if (res?.status === 200 && (res.body as { isLeader?: boolean }).isLeader) return p;
    }
    return undefined;
  }

  async waitLeader(timeoutMs = 30_000): Promise<Proc> {
    let l: Proc | undefined;
    await waitFor('a controller leader', async () => (l = await this.leader()) !== undefined, timeoutMs, 50);
    if (!l) throw new Error('no controller leader');
    return l;
  }

  /** SIGKILL (a crash). */
  async kill(p: Proc): Promise<number> {
    p.expectedExit = true;
    const at = Date.now();
    if (p.frozen) p.app.child.kill('SIGCONT');
    p.app.child.kill('SIGKILL');
    this.note('sigkill', p.name, { role: p.role, defenderId: this.defenderIdOf(p) }, at);
    await p.app.exited;
    return at;
  }

  /** SIGTERM and wait for the clean exit (a planned stop). */
  async terminate(p: Proc): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    p.expectedExit = true;
    this.note('sigterm', p.name, { role: p.role, defenderId: this.defenderIdOf(p) });
    return p.app.stop('SIGTERM', 30_000);
  }

  /** SIGSTOP: the process freezes (no heartbeats, no I/O) but keeps its sockets. */
  freeze(p: Proc): number {
    const at = Date.now();
    p.app.child.kill('SIGSTOP');
    p.frozen = true;
    this.note('sigstop', p.name, { role: p.role, defenderId: this.defenderIdOf(p) }, at);
    return at;
  }

  thaw(p: Proc): number {
    const at = Date.now();
    p.app.child.kill('SIGCONT');
    p.frozen = false;
    this.note('sigcont', p.name, { role: p.role });
    return at;
  }

  /** Hard-stops nats-server (SIGKILL), keeps it down `downMs`, starts it again on the same store. */
  async restartNats(downMs: number): Promise<{ downAt: number; upAt: number }> {
    const downAt = Date.now();
    this.note('nats-kill', 'nats-server');
    await this.nats.halt({ hard: true });
    await sleep(downMs);
    await this.nats.start();
    const upAt = Date.now();
    this.note('nats-up', 'nats-server');
    return { downAt, upAt };
  }

  /**
   * Makes the store unavailable for writes: holds `BEGIN EXCLUSIVE` on the SQLite file from this
   * process (longer than the apps' 5 s busy timeout, their writes fail as unavailable).
   */
  lockStore(timeoutMs = 2000): { lockedAt: number; release(): number } {
    // Waits (synchronously) at most `timeoutMs` for a writer in progress, e.g. a frozen one.
    const db = new Database(this.sqlitePath, { timeout: timeoutMs });
    try {
      db.exec('BEGIN EXCLUSIVE');
    } catch (err) {
      db.close();
      throw new Error(`could not lock the store: ${(err as Error).message}`, { cause: err });
    }
    const lockedAt = Date.now();
    this.note('store-lock', 'sqlite', { mode: 'BEGIN EXCLUSIVE' }, lockedAt);
    return {
      lockedAt,
      release: () => {
        db.exec('ROLLBACK');
        db.close();
        const at = Date.now();
        this.note('store-unlock', 'sqlite', undefined, at);
        return at;
      },
    };
  }

  /** Prometheus text of a process (undefined when it does not answer). */
  async metrics(p: Proc): Promise<string | undefined> {
    if (!isAlive(p) || p.frozen) return undefined;
    const ctl = new AbortController();
    const t = setTimeout(() => ctl.abort(), 2000);
    try {
      const res = await fetch(`${p.url}/metrics`, { signal: ctl.signal });
      return res.ok ? await res.text() : undefined;
    } catch {
      return undefined;
    } finally {
      clearTimeout(t);
    }
  }

  /** The stable-ID claim of `defenderId` (generation and owner), if one is stored. */
  async claimOf(defenderId: string): Promise<{ generation: number; ownerId: string } | undefined> {
    const e = await this.stableIds?.get(defenderId);
    if (!e || e.operation !== 'PUT') return undefined;
    const claim = JSON.parse(e.string()) as { generation?: number; ownerId?: string };
    return { generation: claim.generation ?? 0, ownerId: claim.ownerId ?? '' };
  }

  /** Chambers a defender runs a worker for (`GET /api/v1/chambers`); undefined when it does not answer. */
  async workerChambers(p: Proc): Promise<string[] | undefined> {
    if (!isAlive(p) || p.frozen) return undefined;
    const res = await getJson(`${p.url}/api/v1/chambers`).catch(() => undefined);
    if (res?.status !== 200) return undefined;
    return (res.body as { chambers: { chamber: string }[] }).chambers.map((c) => c.chamber);
  }

  /**
   * Chambers the newest map assigns to a live defender that runs no worker for them (a worker
   * stops when it is fenced, e.g.), as `chamber: assigned to <id>, ...` lines. Retried for
   * `settleMs` so that acquisitions in progress can finish.
   */
  async chambersWithoutWorker(settleMs = 3000): Promise<string[]> {
    const deadline = Date.now() + settleMs;
    for (;;) {
      const m = this.latest();
      const missing: string[] = [];
      if (m) {
        for (const p of this.liveDefenders().filter((x) => !x.frozen)) {
          const id = this.defenderIdOf(p);
          if (id === undefined || !(id in m.map.defenderInfo)) continue;
          const have = await this.workerChambers(p);
          if (!have) continue;
          const set = new Set(have);
          for (const [k, owner] of Object.entries(m.map.assignments)) {
            if (owner === id && !set.has(k)) missing.push(`${k}: assigned to ${id} (${p.name}), which runs no worker for it`);
          }
        }
      }
      if (missing.length === 0 || Date.now() > deadline) return missing.sort();
      await sleep(250);
    }
  }

  /** Whether the process answers /health/live within `ms` (a blocked event loop does not). */
  async answers(p: Proc, ms: number): Promise<boolean> {
    const ctl = new AbortController();
    const t = setTimeout(() => ctl.abort(), ms);
    try {
      return (await fetch(`${p.url}/health/live`, { signal: ctl.signal })).ok;
    } catch {
      return false;
    } finally {
      clearTimeout(t);
    }
  }

  /** Kills every process (SIGCONT first for frozen ones), stops NATS, removes the directory. */
  async stop(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const w of this.stopWatchers) w();
    for (const p of this.procs) p.expectedExit = true;
    for (const p of this.procs) if (p.frozen) p.app.child.kill('SIGCONT');
    await Promise.all(this.procs.map((p) => p.app.stop('SIGKILL', 1000)));
    await this.nc.close().catch(() => undefined);
    await this.natsBackend.stop();
    rmSync(this.dir, { recursive: true, force: true });
    rmSync(this.pki.dir, { recursive: true, force: true });
  }
}
