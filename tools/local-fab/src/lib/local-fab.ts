import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import type { AssignmentMap } from '@defender/contracts';
import { AssignmentMapBucket, DEFAULT_BUCKETS, DEFAULT_STREAM_SETTINGS, ensureStreams, natsAuthorizationConfig, natsInboxPrefix, NATS_ROLES, NatsUnavailableError, openBucket, type NatsRole } from '@defender/nats-kv';
import { ensureNatsServer, freePort, getJson, imageRuntimeEnv, makeTestPki, natsClusterNodeArgs, natsMetaPeersReady, natsTlsArgs, removeTestPki, startCassandra, waitFor, type CassandraHandle, type NatsServerTls, type TestPki } from '@defender/infra-harness';
import { killLeftovers, ManagedProcess, PID_FILE_NAME, PRIVATE_DIR_MODE, REPO, RUN_MARKER, writePidFile, type Role } from './processes';
import { ControlServer } from './control-server';

export interface LocalFabOptions {
  /** Defenders started at once (default 3). */
  readonly defenders?: number;
  /** Controller replicas (default 1; more are standbys). */
  readonly controllers?: number;
  readonly store?: 'sqlite' | 'cassandra';
  /** Where logs, the SQLite file and the pid file go (default tmp/local-fab/<time>). */
  readonly runDir?: string;
  /** Dashboard port (default 8090, or a free one when 8090 is taken; 0: always a free one). */
  readonly dashboardPort?: number;
  readonly logLevel?: string;
  /** Heartbeat interval (default 2 s: a crash is detected after 6 s). */
  readonly heartbeatSeconds?: number;
  /** Batch window of the cold start (default 5 s) and of planned scale (default 5 s). */
  readonly coldStartWindowSeconds?: number;
  readonly scaleWindowSeconds?: number;
  /** Controller lease (default 6 s). */
  readonly electionTtlSeconds?: number;
  /** Progress lines of the launcher (default: stderr). */
  readonly log?: (line: string) => void;
  /** Keep the run directory on stop (default true: logs stay for a look afterwards). */
  readonly keepRunDir?: boolean;
  /**
   * fab-sim options of the fab to write into `chamber_metadata` before the controller starts, so its
   * first map covers the fab (`[]`: the default fab; undefined: none).
   */
  readonly seedFab?: readonly string[];
  /** Start the dashboard (default true). */
  readonly dashboard?: boolean;
  /** The seeding fab-sim writes to this terminal (default true) or to its log file. */
  readonly terminal?: boolean;
  /**
   * NATS nodes (default 1). 3 (`--nats-cluster`): a cluster on loopback ports, every app given all
   * their URLs and JetStream replicas 3 for every stream and bucket.
   */
  readonly natsNodes?: number;
}

export interface ProcessInfo {
  readonly name: string;
  readonly role: Role;
  readonly pid: number | null;
  readonly alive: boolean;
  readonly url: string | null;
  readonly startedAt: string;
  readonly exit: { code: number | null; signal: string | null; at: string } | null;
  readonly logFile: string | null;
  /** Defenders: their stable ID, when they answer. */
  readonly defenderId?: string | null;
  /** Controllers: whether they lead. */
  readonly isLeader?: boolean;
}

/** Options of the tests' local fabs: quiet, short intervals, nothing left behind. */
export const TEST_FAB_OPTIONS: LocalFabOptions = {
  heartbeatSeconds: 1,
  coldStartWindowSeconds: 2,
  scaleWindowSeconds: 2,
  logLevel: 'warn',
  keepRunDir: false,
  terminal: false,
  log: () => undefined,
};

/** Run directories of local fabs (each with its logs, SQLite file and pid file). */
export const LOCAL_ROOT = join(REPO, 'tmp', 'local-fab');
/** Runs the workspace's TypeScript tools directly (the workspace's one runner, SWC: starts in about a second). */
const TS_REGISTER = join(REPO, 'tools', 'scripts', 'register.js');
/** The NATS role each app connects as. */
const APP_ROLE: Partial<Record<Role, NatsRole>> = {
  defender: 'defender',
  'assignment-controller': 'controller',
  'election-agent': 'election-agent',
  dashboard: 'dashboard',
  'fab-sim': 'publisher',
};

/** Where the running local fab describes itself (read by defenderctl). */
export const CURRENT_FILE = join(LOCAL_ROOT, 'current.json');
/** The deployments' certificate script (docker-compose.yml's tls service runs it too). */
const MAKE_CERTS = join(REPO, 'deploy', 'tls', 'make-certs.sh');

/**
 * A private CA and a certificate for the NATS servers on 127.0.0.1, made in `dir` for one run with
 * deploy/tls/make-certs.sh (openssl; the CA's key is discarded).
 *
 * @throws Error with the script's output when openssl or the script fails.
 */
export function makeNatsCertificates(dir: string): NatsServerTls {
  const uid = process.getuid?.() ?? 0;
  try {
    execFileSync('sh', [MAKE_CERTS, join(dir, 'ca'), `${uid}:${join(dir, 'nats')}:localhost,127.0.0.1`], { stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    const e = err as { stdout?: Buffer; stderr?: Buffer };
    throw new Error(`could not make the NATS certificates (is openssl installed?): ${`${e.stdout?.toString() ?? ''}${e.stderr?.toString() ?? ''}`.trim()}`, { cause: err });
  }
  return { caFile: join(dir, 'ca', 'ca.crt'), certFile: join(dir, 'nats', 'tls.crt'), keyFile: join(dir, 'nats', 'tls.key') };
}

function builtMain(app: string): string {
  const main = join(REPO, 'dist', 'apps', app, 'main.js');
  if (!existsSync(main)) throw new Error(`${main} not found: run \`npx nx run-many -t build -p defender assignment-controller election-agent dashboard\` first`);
  return main;
}

async function portOrFree(preferred: number | undefined): Promise<number> {
  if (preferred === 0) return freePort();
  const want = preferred ?? 8090;
  const net = await import('node:net');
  const free = await new Promise<boolean>((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen(want, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
  return free ? want : freePort();
}

/**
 * A whole Defender cluster on this machine from the built bundles: a private nats-server, one
 * election agent, the controller(s), N defenders and the dashboard, on one SQLite file (or a
 * Cassandra node), plus a local control endpoint (crash / add / drain a defender, restart the
 * leader) that the dashboard's buttons and `defenderctl drain` use.
 */
export class LocalFab {
  readonly procs: ManagedProcess[] = [];
  readonly runDir: string;
  readonly controlToken = randomBytes(18).toString('base64url');
  /**
   * The dashboard's operator token, made up per run: the dashboard requires a login like in
   * production (DASHBOARD_AUTH=token); {@link dashboardLoginUrl} signs a browser in with it.
   */
  readonly dashboardToken = randomBytes(24).toString('base64url');
  /**
   * The election agent's token, made up per run: the agent requires one on loopback too (issue 50),
   * and only the agent and the controllers get it.
   */
  private readonly electionToken = randomBytes(24).toString('base64url');
  /** The NATS client URLs, comma-separated (one per node). */
  natsUrl = '';
  /**
   * NATS serves TLS only, as in compose and Kubernetes: a CA and server certificate made for this
   * run (`<run dir>/tls`); every process the fab starts trusts the CA (NATS_TLS_CA_FILE).
   */
  natsTls: NatsServerTls | undefined;
  /**
   * NATS runs with one user per role, as in production (SECURITY.md): each app connects as its own,
   * fab-sim as `publisher`, the fab itself as `defender` (it provisions replicated streams and reads
   * the map), defenderctl as the read-only `dashboard`. Passwords are made up per run.
   */
  private readonly natsPasswords = Object.fromEntries(NATS_ROLES.map((r) => [r, randomBytes(18).toString('base64url')])) as Record<NatsRole, string>;
  dashboardUrl = '';
  controlUrl = '';

  /** The dashboard's URL that signs the browser in as operator (the token is in the fragment: it never reaches a server log). */
  get dashboardLoginUrl(): string {
    return this.dashboardUrl ? `${this.dashboardUrl}login#token=${this.dashboardToken}` : '';
  }
  private cassandra: CassandraHandle | undefined;
  /** `--cassandra`: the PKI of the node's TLS (the harness's, valid one day); the apps connect over TLS with its CA. */
  private cassandraPki: TestPki | undefined;
  private control: ControlServer | undefined;
  private nc: NatsConnection | undefined;
  private defenderNo = 0;
  private controllerNo = 0;
  private stopping: Promise<void> | undefined;
  private readonly log: (line: string) => void;
  private readonly onExit = () => this.killAllNow();

  constructor(private readonly opts: LocalFabOptions = {}) {
    this.runDir = opts.runDir ?? join(LOCAL_ROOT, new Date().toISOString().replace(/[:.]/g, '-'));
    this.log = opts.log ?? ((l) => process.stderr.write(`${l}\n`));
  }

  get storeKind(): 'sqlite' | 'cassandra' {
    return this.opts.store ?? 'sqlite';
  }

  get sqlitePath(): string {
    return join(this.runDir, 'defender.db');
  }

  get cassandraHosts(): string[] | undefined {
    return this.cassandra?.contactPoints;
  }

  /** NATS nodes, and the JetStream replicas of every stream and bucket (one per node). */
  get natsNodes(): number {
    return this.opts.natsNodes ?? 1;
  }

  get logDir(): string {
    return join(this.runDir, 'logs');
  }

  /** The store variables of the apps (and of fab-sim). */
  storeEnv(): Record<string, string> {
    if (this.storeKind === 'sqlite') return { STORE_BACKEND: 'sqlite', SQLITE_PATH: this.sqlitePath };
    const c = this.cassandra;
    if (!c) throw new Error('Cassandra is not started yet');
    return {
      STORE_BACKEND: 'cassandra',
      CASSANDRA_HOSTS: c.contactPoints.join(','),
      CASSANDRA_LOCAL_DC: c.localDataCenter,
      CASSANDRA_KEYSPACE: 'defense_system',
      // The node the fab started serves TLS (an external CASSANDRA_HOSTS cluster: as it is).
      ...(c.tls ? { CASSANDRA_TLS_CA_FILE: c.tls.caCert } : {}),
    };
  }

  private baseEnv(): Record<string, string> {
    return {
      PATH: process.env['PATH'] ?? '',
      NODE_ENV: 'production',
      [RUN_MARKER]: this.runDir,
      NATS_SERVERS: this.natsUrl,
      ...this.natsTlsEnv(),
      ...this.replicaEnv(),
      HTTP_HOST: '127.0.0.1',
      LOG_LEVEL: this.opts.logLevel ?? 'info',
      HEARTBEAT_INTERVAL_SECONDS: String(this.opts.heartbeatSeconds ?? 2),
      COLD_START_WINDOW_SECONDS: String(this.opts.coldStartWindowSeconds ?? 5),
      SCALE_WINDOW_SECONDS: String(this.opts.scaleWindowSeconds ?? 5),
      MAX_BATCH_WAIT_SECONDS: '20',
      ELECTION_TTL_SECONDS: String(this.opts.electionTtlSeconds ?? 6),
      // Chambers written by fab-sim after the controller started are picked up within seconds.
      WEIGHT_CACHE_TTL_SECONDS: '10',
      ...this.storeEnv(),
    };
  }

  /** Replicas of the streams and buckets the apps create (only on a cluster: 1 is their default). */
  private replicaEnv(): Record<string, string> {
    if (this.natsNodes === 1) return {};
    const r = String(this.natsNodes);
    return { NATS_KV_REPLICAS: r, NATS_STREAM_REPLICAS: r, ELECTION_KV_REPLICAS: r };
  }

  /** Starts everything up to the dashboard; resolves once the first assignment map covers every defender. */
  async start(): Promise<void> {
    // The run directory holds the store, the logs, the NATS passwords and certificates: the
    // user's alone (issue 50), like the files in it.
    mkdirSync(this.logDir, { recursive: true, mode: PRIVATE_DIR_MODE });
    for (const dir of [this.runDir, this.logDir]) chmodSync(dir, PRIVATE_DIR_MODE);
    mkdirSync(LOCAL_ROOT, { recursive: true });
    const killed = killLeftovers(LOCAL_ROOT);
    if (killed.length) this.log(`local-fab: stopped ${killed.length} processes left by an earlier local fab that did not stop cleanly`);
    process.on('exit', this.onExit);
    try {
      if (this.storeKind === 'cassandra') {
        this.log('local-fab: starting Cassandra (the first time fetches it from Maven Central: a few minutes) ...');
        this.cassandraPki = makeTestPki();
        this.cassandra = await startCassandra({ log: (l) => this.log(`  ${l}`), tls: this.cassandraPki });
        this.log(`local-fab: Cassandra ${this.cassandra.version} at ${this.cassandra.contactPoints.join(',')}`);
      }
      await this.startNats();
      if (this.opts.seedFab) {
        const seed = this.startSimulator('seed', this.opts.seedFab, this.opts.terminal ?? true);
        const res = await seed.exited;
        if (res.code !== 0) throw new Error(`fab-sim seed failed (${res.signal ?? `code ${res.code}`})`);
      }
      this.control = await ControlServer.start(this, this.controlToken);
      this.controlUrl = this.control.url;
      await this.startAgent();
      for (let i = 0; i < (this.opts.controllers ?? 1); i++) await this.startController();
      const n = this.opts.defenders ?? 3;
      await Promise.all(Array.from({ length: n }, () => this.addDefender()));
      if (this.opts.dashboard !== false) await this.startDashboard();
      await this.waitForMap(n);
    } catch (err) {
      await this.stop();
      throw err;
    }
  }

  private record(p: ManagedProcess): ManagedProcess {
    this.procs.push(p);
    writePidFile(this.runDir, this.procs);
    void p.exited.then((e) => {
      if (this.stopping) return;
      if (p.role !== 'fab-sim') this.log(`local-fab: ${p.name} exited (${e.signal ?? `code ${e.code}`})`);
      writePidFile(this.runDir, this.procs);
    });
    return p;
  }

  /**
   * Starts the nats-server, or the cluster's nodes (`nats-0`..: server names n0.., routes to each
   * other), each with its own store under the run directory; on a cluster also creates the
   * streams with their replicas before any app or fab-sim could create them with one.
   */
  private async startNats(): Promise<void> {
    const bin = ensureNatsServer((l) => this.log(`local-fab: ${l}`));
    const n = this.natsNodes;
    const nodes: { port: number; monitor: number; cluster: number }[] = [];
    for (let i = 0; i < n; i++) nodes.push({ port: await freePort(), monitor: await freePort(), cluster: await freePort() });
    const clusterPorts = nodes.map((x) => x.cluster);
    const tls = makeNatsCertificates(join(this.runDir, 'tls'));
    this.natsTls = tls;
    const authConf = join(this.runDir, 'nats-auth.conf');
    writeFileSync(authConf, natsAuthorizationConfig(NATS_ROLES.map((role) => ({ user: role, role, password: this.natsPasswords[role] }))), { mode: 0o600 });
    const procs = nodes.map(({ port, monitor }, i) => {
      const name = n === 1 ? 'nats' : `nats-${i}`;
      const storeDir = join(this.runDir, name);
      mkdirSync(storeDir, { recursive: true });
      const clusterArgs = n === 1 ? [] : natsClusterNodeArgs(i, clusterPorts, 'defender-local-fab');
      return this.record(
        ManagedProcess.spawn({
          name,
          role: 'nats',
          command: bin,
          args: ['-c', authConf, '-a', '127.0.0.1', '-p', String(port), '-m', String(monitor), '-js', '-sd', storeDir, ...natsTlsArgs(tls), ...clusterArgs],
          env: { PATH: process.env['PATH'] ?? '', [RUN_MARKER]: this.runDir },
          logFile: join(this.logDir, `${name}.log`),
          port,
          extraPort: monitor,
        }),
      );
    });
    // One node is ready once JetStream is; a cluster once the meta leader counts every node as a
    // current, online peer (before that, 2.10 may refuse a 3-replica stream: "peer offline").
    await waitFor(
      n === 1 ? 'nats-server' : `${n} NATS nodes healthy, each a current peer of the JetStream meta leader`,
      async () => {
        for (const p of procs) if (!p.alive) throw new Error(`${p.name} exited: ${p.tail(5)}`);
        if (n > 1) return natsMetaPeersReady(nodes.map((x, i) => ({ name: `n${i}`, monitorPort: x.monitor })));
        return (await Promise.all(nodes.map(async (x) => (await fetch(`http://127.0.0.1:${x.monitor}/healthz?js-enabled-only=true`)).ok))).every(Boolean);
      },
      // Hang guards: a node's first statistics reach the meta leader on a backing-off timer, which a
      // machine busy with other work (a CI running beside this) stretches past a minute.
      n === 1 ? 20_000 : 120_000,
      100,
    );
    this.natsUrl = nodes.map((x) => `nats://127.0.0.1:${x.port}`).join(',');
    // As a defender: the role that provisions the streams (libs/nats-kv permissions.ts) and reads the map.
    const nc = await connect({ servers: this.natsUrl.split(','), name: 'local-fab', maxReconnectAttempts: -1, ...this.natsCredentials('defender') });
    this.nc = nc;
    // Retried while NATS is unavailable: a node's first statistics may reach the meta leader seconds
    // after it is healthy, and until then 2.10 cannot place a replica on it ("peer offline").
    if (n > 1) {
      await waitFor(`the streams created with ${n} replicas`, async () => {
        try {
          await ensureStreams(nc, { ...DEFAULT_STREAM_SETTINGS, replicas: n });
          return true;
        } catch (err) {
          if (err instanceof NatsUnavailableError) return false;
          throw err;
        }
      }, 120_000, 250);
    }
  }

  /** `role`'s NATS user and password and the fab's CA, for a NATS client's connection options. */
  natsCredentials(role: NatsRole): { user: string; pass: string; inboxPrefix: string; tls: { caFile: string } } {
    if (!this.natsTls) throw new Error('NATS is not started yet');
    return { user: role, pass: this.natsPasswords[role], inboxPrefix: natsInboxPrefix(role), tls: { caFile: this.natsTls.caFile } };
  }

  /** NATS_TLS_CA_FILE for a process's environment. */
  private natsTlsEnv(): Record<string, string> {
    if (!this.natsTls) throw new Error('NATS is not started yet');
    return { NATS_TLS_CA_FILE: this.natsTls.caFile };
  }

  /** `role`'s NATS_USER / NATS_PASSWORD, for a process's environment. */
  private natsIdentity(role: NatsRole): Record<string, string> {
    return { NATS_USER: role, NATS_PASSWORD: this.natsPasswords[role] };
  }

  private spawnApp(app: string, name: string, port: number, env: Record<string, string>, extraPort?: number): ManagedProcess {
    return this.record(
      ManagedProcess.spawn({
        name,
        role: app as Role,
        command: process.execPath,
        args: ['--enable-source-maps', builtMain(app)],
        env: { ...imageRuntimeEnv(app), ...this.baseEnv(), ...this.natsIdentity(APP_ROLE[app as Role] ?? 'dashboard'), HTTP_PORT: String(port), POD_NAME: name, ...env },
        logFile: join(this.logDir, `${name}.log`),
        port,
        ...(extraPort !== undefined ? { extraPort } : {}),
      }),
    );
  }

  private async ready(p: ManagedProcess, timeoutMs = 60_000): Promise<void> {
    await waitFor(
      `${p.name} ready`,
      async () => {
        if (!p.alive) throw new Error(`${p.name} exited (${p.exit?.signal ?? p.exit?.code}); its log:\n${p.tail(15)}`);
        return (await getJson(`${p.url}/health/ready`)).status === 200;
      },
      timeoutMs,
      200,
    );
  }

  private agents(): ManagedProcess[] {
    return this.procs.filter((p) => p.role === 'election-agent' && p.alive);
  }

  private async startAgent(): Promise<void> {
    const http = await freePort();
    const grpc = await freePort();
    const p = this.spawnApp('election-agent', 'election-agent-0', http, { GRPC_HOST: '127.0.0.1', GRPC_PORT: String(grpc), ELECTION_CLOCK_SKEW_MS: '250', ELECTION_AUTH_TOKEN: this.electionToken }, grpc);
    await this.ready(p);
  }

  private agentAddrs(): string {
    return this.agents()
      .map((a) => `127.0.0.1:${a.extraPort}`)
      .join(',');
  }

  /**
   * Starts a controller named `controller-<n>`, on `port` when given (a restart keeps the port, so
   * the dashboard's CONTROLLER_URLS stay valid, but takes a new name: the same name would resume
   * the old term at once, as a container restarted in the same pod does).
   */
  async startController(port?: number): Promise<ManagedProcess> {
    const name = `controller-${this.controllerNo++}`;
    port ??= await freePort();
    const p = this.spawnApp('assignment-controller', name, port, { ELECTION_AGENT_ADDR: this.agentAddrs(), ELECTION_AUTH_TOKEN: this.electionToken });
    await this.ready(p);
    return p;
  }

  /** Starts one more defender (it claims the lowest free stable ID). */
  async addDefender(): Promise<ManagedProcess> {
    const name = `defender-pod-${this.defenderNo++}`;
    const p = this.spawnApp('defender', name, await freePort(), { POD_UID: `${name}-${randomBytes(3).toString('hex')}` });
    await this.ready(p, 90_000).catch((err: unknown) => {
      // Readiness needs an assignment map: before the first one it is normal not to be ready.
      if (!p.alive) throw err;
    });
    return p;
  }

  private async startDashboard(): Promise<void> {
    const port = await portOrFree(this.opts.dashboardPort);
    const controllers = this.procs.filter((p) => p.role === 'assignment-controller').map((p) => p.url);
    const p = this.spawnApp('dashboard', 'dashboard', port, {
      CONTROLLER_URLS: controllers.join(','),
      LOCAL_FAB_CONTROL_URL: this.controlUrl,
      LOCAL_FAB_CONTROL_TOKEN: this.controlToken,
      DASHBOARD_AUTH: 'token',
      DASHBOARD_OPERATOR_TOKENS: this.dashboardToken,
    });
    await this.ready(p);
    this.dashboardUrl = `http://127.0.0.1:${port}/`;
  }

  /** The current assignment map (null before the first). */
  async map(): Promise<AssignmentMap | null> {
    if (!this.nc) return null;
    const b = new AssignmentMapBucket(await openBucket(this.nc, DEFAULT_BUCKETS.assignments, { history: 5, replicas: this.natsNodes }), DEFAULT_BUCKETS.assignments);
    return (await b.read())?.map ?? null;
  }

  private async waitForMap(defenders: number): Promise<void> {
    await waitFor('the first assignment map', async () => ((await this.map())?.defenderCount ?? 0) >= defenders, 120_000, 250);
  }

  /** Running defenders with their stable IDs (asked over HTTP). */
  async defenders(): Promise<{ proc: ManagedProcess; defenderId: string | null }[]> {
    const live = this.procs.filter((p) => p.role === 'defender' && p.alive);
    return Promise.all(
      live.map(async (proc) => {
        const res = await getJson(`${proc.url}/api/v1/status`).catch(() => undefined);
        const id = (res?.body as { defenderId?: string | null } | undefined)?.defenderId ?? null;
        return { proc, defenderId: id };
      }),
    );
  }

  /** A running defender by stable ID (`defender-2`) or process name (`defender-pod-2`). */
  async findDefender(ref: string): Promise<ManagedProcess | undefined> {
    const byName = this.procs.find((p) => p.role === 'defender' && p.alive && p.name === ref);
    if (byName) return byName;
    return (await this.defenders()).find((d) => d.defenderId === ref)?.proc;
  }

  /** SIGKILL: a crash (the controller notices after 3 missed heartbeats). */
  async crashDefender(ref: string): Promise<ManagedProcess> {
    const p = await this.findDefender(ref);
    if (!p) throw new NotFoundError(`no running defender "${ref}"`);
    await p.stop('SIGKILL', 0);
    this.log(`local-fab: crashed ${p.name} (${ref}) with SIGKILL`);
    return p;
  }

  /** SIGTERM: a graceful leave (drains in-flight runs, removes its heartbeat, releases its ID). */
  async drainDefender(ref: string): Promise<ManagedProcess> {
    const p = await this.findDefender(ref);
    if (!p) throw new NotFoundError(`no running defender "${ref}"`);
    this.log(`local-fab: draining ${p.name} (${ref}) with SIGTERM`);
    await p.stop('SIGTERM', 40_000);
    return p;
  }

  /** The controller process that leads now (asked over HTTP). */
  async leader(): Promise<ManagedProcess | undefined> {
    for (const p of this.procs.filter((x) => x.role === 'assignment-controller' && x.alive)) {
      const res = await getJson(`${p.url}/api/v1/status`).catch(() => undefined);
      if ((res?.body as { isLeader?: boolean } | undefined)?.isLeader) return p;
    }
    return undefined;
  }

  /**
   * Restarts the leading controller: `kill` (SIGKILL: a standby, or the restarted process once the
   * lease expires, takes over) or `graceful` (SIGTERM: the lease is released at once). A new
   * controller process starts on the same port.
   */
  async restartLeader(mode: 'kill' | 'graceful' = 'kill'): Promise<{ stopped: string; started: string }> {
    const leader = await this.leader();
    if (!leader) throw new NotFoundError('no controller leads right now (an election may be in progress)');
    await leader.stop(mode === 'kill' ? 'SIGKILL' : 'SIGTERM', 20_000);
    const idx = this.procs.indexOf(leader);
    if (idx >= 0) this.procs.splice(idx, 1);
    const p = await this.startController(leader.port);
    this.log(`local-fab: ${mode === 'kill' ? 'killed' : 'stopped'} the leader ${leader.name}; ${p.name} started on its port`);
    return { stopped: leader.name, started: p.name };
  }

  /** Every process the fab started (also those that exited). */
  async processes(): Promise<ProcessInfo[]> {
    const ids = new Map((await this.defenders()).map((d) => [d.proc, d.defenderId]));
    const leader = await this.leader();
    return this.procs.map((p) => ({
      name: p.name,
      role: p.role,
      pid: p.pid ?? null,
      alive: p.alive,
      url: p.role === 'nats' ? `nats://127.0.0.1:${p.port}` : p.role === 'fab-sim' ? null : p.url,
      startedAt: p.startedAt.toISOString(),
      exit: p.exit ? { code: p.exit.code, signal: p.exit.signal, at: p.exit.at.toISOString() } : null,
      logFile: p.logFile,
      ...(p.role === 'defender' ? { defenderId: ids.get(p) ?? null } : {}),
      ...(p.role === 'assignment-controller' ? { isLeader: p === leader } : {}),
    }));
  }

  /** Starts fab-sim (`args` after the command) against this fab, sharing the terminal. */
  startSimulator(command: 'run' | 'seed', args: readonly string[], inheritStdio = true): ManagedProcess {
    const env: Record<string, string> = {
      PATH: process.env['PATH'] ?? '',
      [RUN_MARKER]: this.runDir,
      NATS_SERVERS: this.natsUrl,
      ...this.natsTlsEnv(),
      ...this.natsIdentity('publisher'),
      ...this.storeEnv(),
      ...(process.env['TERM'] ? { TERM: process.env['TERM'] } : {}),
    };
    return this.record(
      ManagedProcess.spawn({
        name: command === 'seed' ? 'fab-sim-seed' : 'fab-sim',
        role: 'fab-sim',
        command: process.execPath,
        args: ['-r', TS_REGISTER, join(REPO, 'tools/fab-sim/src/main.ts'), command, ...args],
        env,
        logFile: inheritStdio ? null : join(this.logDir, `fab-sim-${command}.log`),
        port: 0,
        inheritStdio,
      }),
    );
  }

  /** What defenderctl and tests need to find this fab. */
  describe(): Record<string, unknown> {
    return {
      runDir: this.runDir,
      natsUrl: this.natsUrl,
      natsNodes: this.natsNodes,
      // Read-only: what defenderctl connects as (the file is the operator's, like the control token).
      natsUser: 'dashboard',
      natsPassword: this.natsPasswords.dashboard,
      // The equipment side's user: what `defenderctl event` publishes an equipment event as.
      publisherUser: 'publisher',
      publisherPassword: this.natsPasswords.publisher,
      // NATS serves TLS only: the CA that signed its certificate (NATS_TLS_CA_FILE for defenderctl).
      natsTlsCaFile: this.natsTls?.caFile ?? null,
      dashboardUrl: this.dashboardUrl,
      // The dashboard's operator token (Authorization: Bearer, or the login URL).
      dashboardToken: this.dashboardToken,
      dashboardLoginUrl: this.dashboardLoginUrl,
      controlUrl: this.controlUrl,
      controlToken: this.controlToken,
      controllerUrls: this.procs.filter((p) => p.role === 'assignment-controller').map((p) => p.url),
      store: this.storeEnv(),
      pid: process.pid,
    };
  }

  /**
   * Stops everything in order: the simulator (it prints its summary), the defenders (graceful
   * drain), the controllers, the dashboard, the election agent, NATS, Cassandra.
   */
  stop(): Promise<void> {
    this.stopping ??= this.doStop();
    return this.stopping;
  }

  private async doStop(): Promise<void> {
    const byRole = (r: Role) => this.procs.filter((p) => p.role === r && p.alive);
    await Promise.all(byRole('fab-sim').map((p) => p.stop('SIGINT', 30_000)));
    await Promise.all(byRole('defender').map((p) => p.stop('SIGTERM', 30_000)));
    await Promise.all(byRole('assignment-controller').map((p) => p.stop('SIGTERM', 20_000)));
    await Promise.all(byRole('dashboard').map((p) => p.stop('SIGTERM', 10_000)));
    await Promise.all(byRole('election-agent').map((p) => p.stop('SIGTERM', 10_000)));
    await this.nc?.close().catch((err: unknown) => this.log(`local-fab: closing NATS: ${(err as Error).message}`));
    await Promise.all(byRole('nats').map((p) => p.stop('SIGTERM', 10_000)));
    await this.control?.close();
    await this.cassandra?.stop();
    if (this.cassandraPki) removeTestPki(this.cassandraPki);
    rmSync(join(this.runDir, PID_FILE_NAME), { force: true });
    if (this.describesMe(CURRENT_FILE)) rmSync(CURRENT_FILE, { force: true });
    if (this.opts.keepRunDir === false) rmSync(this.runDir, { recursive: true, force: true });
    process.removeListener('exit', this.onExit);
  }

  /** Whether `file` (current.json) describes this fab, not another one running beside it. */
  private describesMe(file: string): boolean {
    if (!existsSync(file)) return false;
    try {
      return (JSON.parse(readFileSync(file, 'utf8')) as { runDir?: string }).runDir === this.runDir;
    } catch (err) {
      if (err instanceof SyntaxError) return false;
      throw err;
    }
  }

  /** Last resort on process exit: SIGKILL whatever still runs (synchronous). */
  private killAllNow(): void {
    for (const p of this.procs) if (p.alive) p.child.kill('SIGKILL');
  }
}

/** A defender or controller named in a request does not exist (HTTP 404 at the control endpoint). */
export class NotFoundError extends Error {
  override readonly name = 'NotFoundError';
}
