import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AssignmentMap } from '@defender/contracts';
import { AssignmentMapBucket, HeartbeatBucket, openBucket } from '@defender/nats-kv';
import { SqliteStore } from '@defender/store';
import { freePort, getJson, spawnBuiltApp, SpawnedApp, waitFor } from '@defender/infra-harness';

/** A chamber to seed into the store's chamber_metadata. */
export interface SeedChamber {
  toolId: string;
  chamberId: string;
  svidCount: number;
  collectionFreqHz: number;
  contextDurationSeconds: number;
}

export interface ClusterOptions {
  natsUrl: string;
  chambers: SeedChamber[];
  heartbeatSeconds?: number;
  coldStartWindowSeconds?: number;
  scaleWindowSeconds?: number;
  maxBatchWaitSeconds?: number;
  electionTtlSeconds?: number;
  maxDefenders?: number;
  logLevel?: string;
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
 * separate Node processes (built bundles) against a real nats-server and one SQLite store file,
 * each cluster isolated by its own KV bucket names. It records every assignment-map publication.
 */
export class LocalCluster {
  readonly procs: Proc[] = [];
  readonly publications: MapRecord[] = [];
  private readonly dir: string;
  private readonly env: Record<string, string>;
  private readonly agents: Proc[] = [];
  private stopWatch: (() => void) | undefined;

  private constructor(
    private readonly opts: ClusterOptions,
    private readonly nc: NatsConnection,
    readonly maps: AssignmentMapBucket,
    readonly heartbeats: HeartbeatBucket,
    readonly tag: string,
  ) {
    this.dir = mkdtempSync(join(tmpdir(), 'defender-e2e-'));
    this.env = {
      NATS_SERVERS: opts.natsUrl,
      HTTP_HOST: '127.0.0.1',
      LOG_LEVEL: opts.logLevel ?? process.env['E2E_LOG_LEVEL'] ?? 'warn',
      NATS_KV_STABLE_IDS: `ids-${tag}`,
      NATS_KV_HEARTBEATS: `hb-${tag}`,
      NATS_KV_ASSIGNMENTS: `map-${tag}`,
      ELECTION_KV_BUCKET: `elect-${tag}`,
      HEARTBEAT_INTERVAL_SECONDS: String(opts.heartbeatSeconds ?? 1),
      MAX_DEFENDERS: String(opts.maxDefenders ?? 50),
      COLD_START_WINDOW_SECONDS: String(opts.coldStartWindowSeconds ?? 3),
      SCALE_WINDOW_SECONDS: String(opts.scaleWindowSeconds ?? 2),
      MAX_BATCH_WAIT_SECONDS: String(opts.maxBatchWaitSeconds ?? 10),
      ELECTION_TTL_SECONDS: String(opts.electionTtlSeconds ?? 2),
      ELECTION_CLOCK_SKEW_MS: '200',
      STORE_BACKEND: 'sqlite',
      SQLITE_PATH: join(this.dir, 'defender.db'),
    };
  }

  get sqlitePath(): string {
    return this.env['SQLITE_PATH']!;
  }

  static async start(opts: ClusterOptions): Promise<LocalCluster> {
    const nc = await connect({ servers: opts.natsUrl });
    const tag = `e2e${++clusterNo}-${process.pid}`;
    const maps = new AssignmentMapBucket(await openBucket(nc, `map-${tag}`, { history: 5 }), `map-${tag}`);
    const heartbeats = new HeartbeatBucket(await openBucket(nc, `hb-${tag}`), `hb-${tag}`);
    const c = new LocalCluster(opts, nc, maps, heartbeats, tag);
    await c.seed();
    await c.watchMaps();
    return c;
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
    const iter = await kv.watch({ key: 'assignment-map' });
    this.stopWatch = () => iter.stop();
    void (async () => {
      for await (const e of iter) {
        if (e.operation !== 'PUT') continue;
        this.publications.push({ revision: e.revision, map: JSON.parse(e.string()) as AssignmentMap, seenAt: Date.now() });
      }
    })();
  }

  /** The newest map seen by the watcher. */
  latest(): AssignmentMap | undefined {
    return this.publications[this.publications.length - 1]?.map;
  }

  private async spawn(app: string, name: string, extraEnv: Record<string, string>, extraPort = false): Promise<Proc> {
    const http = await freePort();
    const extra = extraPort ? await freePort() : undefined;
    const proc: Proc = {
      name,
      http,
      url: `http://127.0.0.1:${http}`,
      extra,
      app: spawnBuiltApp(app, { ...this.env, HTTP_PORT: String(http), ...(extra ? { GRPC_PORT: String(extra), GRPC_HOST: '127.0.0.1' } : {}), ...extraEnv }),
    };
    this.procs.push(proc);
    return proc;
  }

  async startAgent(): Promise<Proc> {
    const p = await this.spawn('election-agent', `agent-${this.agents.length}`, {}, true);
    this.agents.push(p);
    await waitFor(`${p.name} ready`, async () => (await getJson(`${p.url}/health/ready`).catch(() => ({ status: 0 }))).status === 200, 30_000);
    return p;
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
      throw new Error(`${(err as Error).message}\n${this.tails()}`, { cause: err });
    }
  }

  async stop(): Promise<void> {
    this.stopWatch?.();
    await Promise.all(this.procs.map((p) => p.app.stop('SIGKILL', 1000)));
    await this.nc.drain();
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
