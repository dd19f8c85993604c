// A real multi-process cluster for the pipeline benchmark: election agent, assignment controller and
// defenders as separate Node processes running the built bundles (dist/apps/<app>/main.js) against a
// private nats-server and the chosen store. Adapted from the e2e fixture tools/e2e/src/cluster.ts
// (not importable through a path alias), with the store backend as a parameter.
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import type { AssignmentMap } from '@defender/contracts';
import { AssignmentMapBucket, openBucket } from '@defender/nats-kv';
import {
  buildApps,
  freePort,
  getJson as getJsonOnce,
  spawnBuiltApp,
  SpawnedApp,
  waitFor,
} from '@defender/infra-harness';

const REPO = join(__dirname, '..', '..', '..');

/**
 * GET with up to 3 attempts: under load a reused keep-alive connection may be closed by the server
 * just as it is reused ("fetch failed"), which says nothing about the process.
 */
export async function getJson(url: string): Promise<{ status: number; body: unknown; text: string }> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await getJsonOnce(url);
    } catch (err) {
      if (attempt >= 3) throw err;
      await new Promise((r) => setTimeout(r, 100 * attempt));
    }
  }
}
export const APPS = ['defender', 'assignment-controller', 'election-agent'] as const;

/** Absolute path of an app's built bundle. */
export function bundleOf(app: (typeof APPS)[number]): string {
  return join(REPO, 'dist', 'apps', app, 'main.js');
}

/** Builds the apps the bench cluster runs (Nx's cache: seconds when nothing changed). @throws AppBuildError */
export function buildBenchApps(): void {
  buildApps(APPS);
}

export interface BenchClusterOptions {
  natsUrl: string;
  /** STORE_BACKEND and its settings, passed to every process. */
  storeEnv: Record<string, string>;
  heartbeatSeconds?: number;
  coldStartWindowSeconds?: number;
  scaleWindowSeconds?: number;
  logLevel?: string;
  /**
   * The tag in the cluster's bucket names (`ids-<tag>`, `map-<tag>`, ...): a cluster started again
   * over stores of an earlier one (a saved warm-up) must use that one's tag. Default: unique per cluster.
   */
  tag?: string;
}

export interface Proc {
  readonly name: string;
  readonly app: SpawnedApp;
  readonly http: number;
  readonly url: string;
  readonly extra?: number;
}

let clusterNo = 0;

export class BenchCluster {
  readonly procs: Proc[] = [];
  /** Processes killed on purpose ({@link kill}): out of {@link procs}, their logs still written by {@link stop}. */
  private readonly killed: Proc[] = [];
  readonly publications: { revision: number; map: AssignmentMap; seenAt: number }[] = [];
  private readonly env: Record<string, string>;
  private readonly agents: Proc[] = [];
  private readonly ports = new Set<number>();
  private stopWatch: (() => void) | undefined;

  private constructor(
    opts: BenchClusterOptions,
    private readonly nc: NatsConnection,
    readonly tag: string,
  ) {
    this.env = {
      NATS_SERVERS: opts.natsUrl,
      HTTP_HOST: '127.0.0.1',
      LOG_LEVEL: opts.logLevel ?? 'warn',
      NATS_KV_STABLE_IDS: `ids-${tag}`,
      NATS_KV_HEARTBEATS: `hb-${tag}`,
      NATS_KV_ASSIGNMENTS: `map-${tag}`,
      ELECTION_KV_BUCKET: `elect-${tag}`,
      HEARTBEAT_INTERVAL_SECONDS: String(opts.heartbeatSeconds ?? 1),
      MAX_DEFENDERS: '10',
      COLD_START_WINDOW_SECONDS: String(opts.coldStartWindowSeconds ?? 1.5),
      SCALE_WINDOW_SECONDS: String(opts.scaleWindowSeconds ?? 1.5),
      MAX_BATCH_WAIT_SECONDS: '10',
      ELECTION_TTL_SECONDS: '2',
      ELECTION_CLOCK_SKEW_MS: '200',
      // The agents require a token, on loopback too (issue 50): one per cluster, which the
      // controllers (and embedded-controller defenders) send.
      ELECTION_AUTH_TOKEN: randomBytes(24).toString('hex'),
      ...opts.storeEnv,
    };
  }

  static async start(opts: BenchClusterOptions): Promise<BenchCluster> {
    const nc = await connect({ servers: opts.natsUrl });
    const tag = opts.tag ?? `bench${++clusterNo}-${process.pid}`;
    const c = new BenchCluster(opts, nc, tag);
    const kv = await openBucket(nc, `map-${tag}`, { history: 5 });
    const w = await new AssignmentMapBucket(kv, `map-${tag}`).watchPublications({
      onMap: ({ map, revision }) => void c.publications.push({ revision, map, seenAt: Date.now() }),
    });
    c.stopWatch = () => w.stop();
    return c;
  }

  latest(): AssignmentMap | undefined {
    return this.publications[this.publications.length - 1]?.map;
  }

  /**
   * A free port this cluster has not handed out yet: the OS may return the same free port twice
   * while the first process is still starting and has not bound it.
   */
  private async uniquePort(): Promise<number> {
    for (;;) {
      const port = await freePort();
      if (!this.ports.has(port)) {
        this.ports.add(port);
        return port;
      }
    }
  }

  private async spawn(
    app: (typeof APPS)[number],
    name: string,
    extraEnv: Record<string, string>,
    extraPort = false,
  ): Promise<Proc> {
    const http = await this.uniquePort();
    const extra = extraPort ? await this.uniquePort() : undefined;
    const proc: Proc = {
      name,
      http,
      url: `http://127.0.0.1:${http}`,
      extra,
      app: spawnBuiltApp(app, {
        ...this.env,
        HTTP_PORT: String(http),
        ...(extra ? { GRPC_PORT: String(extra), GRPC_HOST: '127.0.0.1' } : {}),
        ...extraEnv,
      }),
    };
    this.procs.push(proc);
    return proc;
  }

  async startAgent(): Promise<Proc> {
    const p = await this.spawn('election-agent', `agent-${this.agents.length}`, {}, true);
    this.agents.push(p);
    await waitFor(
      `${p.name} ready`,
      async () => (await getJson(`${p.url}/health/ready`).catch(() => ({ status: 0 }))).status === 200,
      30_000,
    );
    return p;
  }

  async startController(name: string, extraEnv: Record<string, string> = {}): Promise<Proc> {
    return this.spawn('assignment-controller', name, {
      ...extraEnv,
      POD_NAME: name,
      ELECTION_AGENT_ADDR: this.agents.map((a) => `127.0.0.1:${a.extra}`).join(','),
    });
  }

  async startDefender(podUid: string, extraEnv: Record<string, string> = {}): Promise<Proc> {
    return this.spawn('defender', podUid, { POD_UID: podUid, POD_NAME: podUid, ...extraEnv });
  }

  defenders(): Proc[] {
    return this.procs.filter(
      (p) => p.name.startsWith('pod-') && p.app.child.exitCode === null && p.app.child.signalCode === null,
    );
  }

  /**
   * Waits until the newest map has `defenders` members and covers `chambers` chambers, every
   * defender is ready and, between them, runs a worker for every chamber (claims done), and no map
   * was published for `quietMs` (a join's planned rebalance may follow the map that first has
   * everyone).
   */
  async settle(defenders: number, chambers: number, timeoutMs = 90_000, quietMs = 5_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    const check = () => {
      const crashed = this.crashed();
      if (crashed) throw new Error(crashed);
    };
    for (;;) {
      check();
      const m = this.latest();
      if (m && m.defenderCount === defenders && Object.keys(m.assignments).length === chambers) break;
      if (Date.now() > deadline) {
        const seen = m
          ? `latest map: version ${m.version}, ${m.defenderCount} defender(s), ${Object.keys(m.assignments).length} chambers`
          : 'no map seen';
        const status: string[] = [];
        for (const p of this.procs.filter((x) => !x.name.startsWith('agent-'))) {
          const res = await getJson(`${p.url}/api/v1/status`).catch((e: unknown) => ({
            text: `unreachable: ${(e as Error).message}`,
          }));
          status.push(`${p.name}: ${res.text.slice(0, 300)}`);
        }
        throw new Error(
          `no map with ${defenders} defender(s) and ${chambers} chambers within ${timeoutMs} ms (${seen}; ${status.join('; ')})`,
        );
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    for (;;) {
      check();
      let workers = 0;
      let ready = true;
      // A cluster started again over stores of an earlier one sees that one's map first, and its
      // first defender may hold every chamber until the others join: the newest map must still have
      // every defender, and each defender workers, before the cluster counts as settled.
      const m = this.latest();
      let everyoneWorks = m !== undefined && m.defenderCount === defenders;
      for (const p of this.defenders()) {
        if ((await getJson(`${p.url}/health/ready`).catch(() => ({ status: 0 }))).status !== 200) {
          ready = false;
          break;
        }
        const res = await getJson(`${p.url}/api/v1/chambers`).catch(() => undefined);
        const own = (res?.body as { chambers?: unknown[] } | undefined)?.chambers?.length ?? 0;
        if (own === 0 && chambers >= defenders) everyoneWorks = false;
        workers += own;
      }
      const quiet = Date.now() - (this.publications[this.publications.length - 1]?.seenAt ?? 0) >= quietMs;
      if (ready && everyoneWorks && workers === chambers && quiet) return;
      if (Date.now() > deadline)
        throw new Error(
          `the cluster did not settle within ${timeoutMs} ms: ${ready ? '' : 'a defender not ready; '}${workers} of ${chambers} chambers with a worker` +
            `${everyoneWorks ? '' : `; newest map ${m ? `v${m.version} with ${m.defenderCount} of ${defenders} defenders` : 'none'} or a defender without chambers`}` +
            `${quiet ? '' : `; a map published less than ${quietMs} ms ago`}`,
        );
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  /**
   * Kills a process at once (SIGKILL: no shutdown, no deregistration, as a node failure does) and
   * takes it out of {@link procs}, so that {@link crashed} does not report it and a process started
   * again under the same name replaces it.
   */
  async kill(name: string): Promise<void> {
    const i = this.procs.findIndex((p) => p.name === name);
    const p = this.procs[i];
    if (!p) throw new Error(`no process named ${name} in the cluster`);
    await p.app.stop('SIGKILL', 0);
    this.procs.splice(i, 1);
    this.killed.push({ ...p, name: `${p.name}-killed-${this.killed.length + 1}` });
  }

  /** A crashed process, if any (name and stderr tail). */
  crashed(): string | undefined {
    const p = this.procs.find((x) => x.app.child.exitCode !== null || x.app.child.signalCode !== null);
    return p
      ? `${p.name} exited (${p.app.child.exitCode ?? p.app.child.signalCode}): ${p.app.stderr().slice(-2000)}${p.app.stdout().slice(-2000)}`
      : undefined;
  }

  /**
   * Stops every process (SIGTERM, SIGKILL after `graceMs`); with `logDir`, writes each one's stdout
   * and stderr to `<logDir>/<prefix><name>.log`.
   */
  async stop(logDir?: string, prefix = '', graceMs = 3000): Promise<void> {
    this.stopWatch?.();
    await Promise.all(this.procs.map((p) => p.app.stop('SIGTERM', graceMs)));
    if (logDir) {
      mkdirSync(logDir, { recursive: true });
      for (const p of [...this.killed, ...this.procs])
        writeFileSync(
          join(logDir, `${prefix}${p.name}.log`),
          `${p.app.stdout()}\n--- stderr ---\n${p.app.stderr()}`,
        );
    }
    await this.nc.drain();
  }
}
