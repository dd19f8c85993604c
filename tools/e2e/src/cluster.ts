import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AssignmentMap } from '@defender/contracts';
import { AssignmentMapBucket, HeartbeatBucket, natsAuthorizationConfig, NATS_ROLES, openBucket, type PermissionNames } from '@defender/nats-kv';
import { SqliteStore } from '@defender/store';
import { freePort, getJson, natsPasswordEnvOf, natsRoleOfApp, SecuredNatsServer, spawnBuiltApp, SpawnedApp, startSecuredNatsServer, waitFor } from '@defender/infra-harness';

/** A chamber to seed into the store's chamber_metadata. */
export interface SeedChamber {
  toolId: string;
  chamberId: string;
  svidCount: number;
  collectionFreqHz: number;
  contextDurationSeconds: number;
}

/** The clusters' heartbeat interval unless a test sets its own: the production default. */
export const DEFAULT_HEARTBEAT_SECONDS = 2;

export interface ClusterOptions {
  chambers: SeedChamber[];
  /**
   * Default 2 s, the production interval (was 1 s): with TLS on every connection and CPU hogs beside
   * a fresh-clone CI, a claim refresh's NATS round trip took longer than 3 intervals of 1 s and
   * joiners took live defenders' stable IDs over (exit 4) in the planned-scale test.
   */
  heartbeatSeconds?: number;
  coldStartWindowSeconds?: number;
  scaleWindowSeconds?: number;
  maxBatchWaitSeconds?: number;
  electionTtlSeconds?: number;
  maxDefenders?: number;
  logLevel?: string;
  /** Names the buckets `ids-<tag>`, `hb-<tag>`, `map-<tag>`, `elect-<tag>` (default: unique per cluster). */
  tag?: string;
}

export interface Proc {
  readonly name: string;
  readonly app: SpawnedApp;
  readonly http: number;
  readonly url: string;
  readonly extra?: number;
}

/** Every map revision seen by the fixture's watcher, in order. */
export interface MapRecord {
  readonly revision: number;
  readonly map: AssignmentMap;
  readonly seenAt: number;
}

let clusterNo = 0;

/**
 * A real multi-process cluster for end-to-end tests: election agents, controllers and defenders as
 * separate Node processes (built bundles) against one SQLite store file and the cluster's own
 * nats-server, run as production runs it (SECURITY.md): TLS from a throwaway CA, and every app on its
 * role's NATS user with that role's permissions for this cluster's buckets (libs/nats-kv
 * permissions.ts). The cluster's watcher reads as the dashboard's user. It records every
 * assignment-map publication.
 */
export class LocalCluster {
  readonly procs: Proc[] = [];
  readonly publications: MapRecord[] = [];
  private readonly dir: string;
  private readonly env: Record<string, string>;
  readonly agents: Proc[] = [];
  private stopWatch: (() => void) | undefined;

  private constructor(
    private readonly opts: ClusterOptions,
    /** The cluster's nats-server (tests restart it, and connect as a role or as the fixture). */
    readonly nats: SecuredNatsServer,
    private readonly nc: NatsConnection,
    readonly maps: AssignmentMapBucket,
    readonly heartbeats: HeartbeatBucket,
    readonly tag: string,
  ) {
    this.dir = mkdtempSync(join(tmpdir(), 'defender-e2e-'));
    this.env = {
      HTTP_HOST: '127.0.0.1',
      LOG_LEVEL: opts.logLevel ?? process.env['E2E_LOG_LEVEL'] ?? 'warn',
      NATS_KV_STABLE_IDS: `ids-${tag}`,
      NATS_KV_HEARTBEATS: `hb-${tag}`,
      NATS_KV_ASSIGNMENTS: `map-${tag}`,
      ELECTION_KV_BUCKET: `elect-${tag}`,
      HEARTBEAT_INTERVAL_SECONDS: String(opts.heartbeatSeconds ?? DEFAULT_HEARTBEAT_SECONDS),
      MAX_DEFENDERS: String(opts.maxDefenders ?? 50),
      COLD_START_WINDOW_SECONDS: String(opts.coldStartWindowSeconds ?? 3),
      SCALE_WINDOW_SECONDS: String(opts.scaleWindowSeconds ?? 2),
      MAX_BATCH_WAIT_SECONDS: String(opts.maxBatchWaitSeconds ?? 10),
      ELECTION_TTL_SECONDS: String(opts.electionTtlSeconds ?? 2),
      ELECTION_CLOCK_SKEW_MS: '200',
      // The agents require a token, on loopback too (issue 50): one per cluster, which the
      // controllers (and embedded-controller defenders) send.
      ELECTION_AUTH_TOKEN: randomBytes(24).toString('hex'),
      STORE_BACKEND: 'sqlite',
      SQLITE_PATH: join(this.dir, 'defender.db'),
    };
  }

  get sqlitePath(): string {
    return this.env['SQLITE_PATH']!;
  }

  static async start(opts: ClusterOptions): Promise<LocalCluster> {
    const tag = opts.tag ?? `e2e${++clusterNo}-${process.pid}`;
    const names: PermissionNames = { stableIds: `ids-${tag}`, heartbeats: `hb-${tag}`, assignments: `map-${tag}`, elections: `elect-${tag}` };
    const nats = await startSecuredNatsServer({
      authorization: natsAuthorizationConfig(NATS_ROLES.map((role) => ({ user: role, role, passwordEnv: natsPasswordEnvOf(role) })), names),
    });
    let nc: NatsConnection | undefined;
    try {
      // The watcher reads as the dashboard, which may create nothing (issue 50): the two buckets it
      // watches are created first by the role that provisions them, as a controller starting first would.
      const provisioner = await connect(nats.connectOptions('controller'));
      try {
        for (const [name, history] of [[names.assignments, 5], [names.heartbeats, 1]] as const) await openBucket(provisioner, name, { history });
      } finally {
        await provisioner.close();
      }
      const conn = await connect(nats.connectOptions('dashboard'));
      nc = conn;
      const maps = new AssignmentMapBucket(await openBucket(conn, names.assignments, { history: 5 }), names.assignments);
      const heartbeats = new HeartbeatBucket(await openBucket(conn, names.heartbeats), names.heartbeats);
      const c = new LocalCluster(opts, nats, conn, maps, heartbeats, tag);
      await c.seed();
      await c.watchMaps();
      return c;
    } catch (err) {
      await nc?.close();
      await nats.stop();
      throw err;
    }
  }

  private async seed(): Promise<void> {
    const store = await SqliteStore.open({ filename: this.sqlitePath });
    try {
      for (const ch of this.opts.chambers) {
        await store.chamberMetadata.upsert({
          ...ch,
          weight: ch.svidCount * ch.collectionFreqHz * ch.contextDurationSeconds,
          lastUpdated: new Date(),
          source: 'configured',
          observedRuns: 0,
        });
      }
    } finally {
      await store.close();
    }
  }

  private async watchMaps(): Promise<void> {
    const kv = await openBucket(this.nc, `map-${this.tag}`, { history: 5 });
    const w = await new AssignmentMapBucket(kv, `map-${this.tag}`).watchPublications({
      onMap: ({ map, revision }) => void this.publications.push({ revision, map, seenAt: Date.now() }),
    });
    this.stopWatch = () => w.stop();
  }

  /** The newest map seen by the watcher. */
  latest(): AssignmentMap | undefined {
    return this.publications[this.publications.length - 1]?.map;
  }

  private async spawn(app: string, name: string, extraEnv: Record<string, string>, extraPort = false, ports?: { http: number; extra?: number }): Promise<Proc> {
    const http = ports?.http ?? (await freePort());
    const extra = ports ? ports.extra : extraPort ? await freePort() : undefined;
    const proc: Proc = {
      name,
      http,
      url: `http://127.0.0.1:${http}`,
      extra,
      app: spawnBuiltApp(app, { ...this.env, ...this.natsIdentity(app, extraEnv), HTTP_PORT: String(http), ...(extra ? { GRPC_PORT: String(extra), GRPC_HOST: '127.0.0.1' } : {}), ...extraEnv }),
    };
    this.procs.push(proc);
    return proc;
  }

  async startAgent(): Promise<Proc> {
    const p = await this.spawn('election-agent', `agent-${this.agents.length}`, {}, true);
    this.agents.push(p);
    await waitFor(`${p.name} ready`, async () => (await getJson(`${p.url}/health/ready`).catch(() => ({ status: 0 }))).status === 200, 120_000);
    return p;
  }

  /**
   * NATS_SERVERS, NATS_TLS_CA_FILE and the app's role's NATS_USER / NATS_PASSWORD; a defender
   * hosting the controller (embedded mode) runs as `defender-controller` (both roles' writes).
   */
  private natsIdentity(app: string, env: Record<string, string>): Record<string, string> {
    const embedded = app === 'defender' && env['ASSIGNMENT_CONTROLLER_ENABLED'] === 'true';
    return this.nats.env(embedded ? 'defender-controller' : natsRoleOfApp(app));
  }

  /** SIGKILLs an election agent and starts it again on the same ports: whatever it remembered is gone. */
  async restartAgent(p: Proc): Promise<Proc> {
    await p.app.stop('SIGKILL');
    const again = await this.spawn('election-agent', p.name, {}, true, { http: p.http, extra: p.extra });
    this.agents[this.agents.indexOf(p)] = again;
    await waitFor(`${again.name} ready`, async () => (await getJson(`${again.url}/health/ready`).catch(() => ({ status: 0 }))).status === 200, 120_000);
    return again;
  }

  private agentAddrs(): string {
    return this.agents.map((a) => `127.0.0.1:${a.extra}`).join(',');
  }

  async startController(name: string): Promise<Proc> {
    return this.spawn('assignment-controller', name, { POD_NAME: name, ELECTION_AGENT_ADDR: this.agentAddrs() });
  }

  async startDefender(podUid: string, extraEnv: Record<string, string> = {}): Promise<Proc> {
    return this.spawn('defender', podUid, { POD_UID: podUid, POD_NAME: podUid, ELECTION_AGENT_ADDR: this.agentAddrs(), ...extraEnv });
  }

  /** Live heartbeats by defender ID -> pod UID. */
  async members(): Promise<Record<string, string | undefined>> {
    const { heartbeats } = await this.heartbeats.readAll();
    return Object.fromEntries(heartbeats.map((h) => [h.heartbeat.defenderId, h.heartbeat.podUid]));
  }

  async leader(): Promise<Proc | undefined> {
    for (const p of this.procs.filter((x) => x.name.startsWith('controller'))) {
      if (p.app.child.exitCode !== null || p.app.child.signalCode !== null) continue;
      const res = await getJson(`${p.url}/api/v1/status`).catch(() => undefined);
      if (res?.status === 200 && (res.body as { isLeader: boolean }).isLeader) return p;
    }
    return undefined;
  }

  /**
   * The leading controller, waited for: one status read can fail on a loaded machine (a request that
   * times out, a renewal in flight), which says nothing about who leads.
   */
  async awaitLeader(timeoutMs = 60_000): Promise<Proc> {
    let leader: Proc | undefined;
    await this.waitFor('a controller that says it leads', async () => (leader = await this.leader()) !== undefined, timeoutMs, 250);
    return leader as Proc;
  }

  /**
   * With `E2E_LOG_DIR` set (a diagnosis of a flaky test), every process's whole output is written
   * there at stop, one file per process started (`<tag>-<n>-<name>.log`: a restarted agent has two).
   */
  private keepLogs(): void {
    const dir = process.env['E2E_LOG_DIR'];
    if (!dir) return;
    mkdirSync(dir, { recursive: true });
    this.procs.forEach((p, n) => writeFileSync(join(dir, `${this.tag}-${n}-${p.name}.log`), p.app.stdout() + p.app.stderr()));
  }

  /** The last `lines` lines each process wrote (stdout and stderr), for failure messages. */
  tails(lines = 15): string {
    return this.procs
      .map((p) => {
        const out = (p.app.stdout() + p.app.stderr()).trimEnd().split('\n').slice(-lines).join('\n');
        const state = p.app.child.exitCode !== null ? `exited ${p.app.child.exitCode}` : p.app.child.signalCode ? `killed ${p.app.child.signalCode}` : 'running';
        return `--- ${p.name} (${state}) ---\n${out}`;
      })
      .join('\n');
  }

  /** `waitFor` that, on timeout, appends every process's recent output to the error. */
  async waitFor(what: string, probe: () => Promise<boolean>, timeoutMs: number, intervalMs = 100): Promise<void> {
    try {
      await waitFor(what, probe, timeoutMs, intervalMs);
    } catch (err) {
      // The probe's last error says what it saw (jest does not always print a cause).
      const seen = ((err as Error).cause as Error | undefined)?.message;
      throw new Error(`${(err as Error).message}${seen ? `; last seen: ${seen}` : ''}\n${this.tails()}`, { cause: err });
    }
  }

  async stop(): Promise<void> {
    this.stopWatch?.();
    await Promise.all(this.procs.map((p) => p.app.stop('SIGKILL', 1000)));
    this.keepLogs();
    await this.nc.drain();
    await this.nats.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** `n` chambers over tools of 1-4 chambers with weights from 30 K to 3.6 M (seeded, deterministic). */
export function fabChambers(n: number, seed = 1): SeedChamber[] {
  let s = seed >>> 0;
  const rnd = () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
  const svids = [50, 100, 150, 200];
  const freqs = [1, 2, 5, 10];
  const durations = [600, 900, 1200, 1800];
  const out: SeedChamber[] = [];
  for (let tool = 1; out.length < n; tool++) {
    const perTool = 1 + Math.floor(rnd() * 4);
    for (let c = 1; c <= perTool && out.length < n; c++) {
      out.push({
        toolId: `tool${String(tool).padStart(3, '0')}`,
        chamberId: `chamber${c}`,
        svidCount: svids[Math.floor(rnd() * 4)]!,
        collectionFreqHz: freqs[Math.floor(rnd() ** 2 * 4)]!,
        contextDurationSeconds: durations[Math.floor(rnd() * 4)]!,
      });
    }
  }
  return out;
}
