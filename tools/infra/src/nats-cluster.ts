import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { NatsConnection } from '@nats-io/nats-core';
import { JetStreamApiError, jetstreamManager, StorageType } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { NatsServerHandle, NatsServerTls, startNatsServer } from './nats';
import { freePort, waitFor } from './ports';
import { startTcpProxy, TcpProxy } from './tcp-proxy';

/** One node of a {@link NatsClusterHandle}: a nats-server with its own port, route port and store. */
export interface NatsClusterNode {
  /** Server name (`n0`, `n1`, ...): what JetStream reports as a stream's or a bucket's leader. */
  readonly name: string;
  readonly url: string;
  readonly port: number;
  readonly clusterPort: number;
  readonly monitorPort: number;
  readonly storeDir: string;
  readonly pid: number | undefined;
  /** Whether the process runs (it may be frozen, see {@link freeze}). */
  readonly running: boolean;
  readonly frozen: boolean;
  /** Stops the process (SIGTERM, or SIGKILL when `hard`), keeping its store. */
  halt(opts?: { hard?: boolean }): Promise<void>;
  /** Starts a halted node again on the same ports (and store, unless it was wiped). */
  start(): Promise<void>;
  /** {@link halt}, then {@link start}; `emptyStore` wipes the node's JetStream store in between. */
  restart(opts?: { hard?: boolean; downMs?: number; emptyStore?: boolean }): Promise<void>;
  /**
   * SIGSTOP: the node keeps its sockets but answers nothing (to clients and to its peers), as a node
   * cut off by a network partition would look from both sides until connections time out.
   */
  freeze(): void;
  thaw(): void;
  /**
   * Cuts every route between this node and the others (a cluster started `partitionable`): the node
   * keeps running and keeps its clients, but has no peer, so it leads nothing and JetStream calls
   * through it fail; the others keep their quorum. {@link heal} lets the routes reconnect.
   */
  partition(): void;
  heal(): void;
  readonly partitioned: boolean;
}

export interface NatsClusterHandle {
  readonly nodes: readonly NatsClusterNode[];
  /** Every node's client URL, in node order (for `servers: [...]` or NATS_SERVERS joined by commas). */
  readonly urls: string[];
  readonly version: string;
  node(name: string): NatsClusterNode;
  /** The node that leads JetStream stream `stream` (asked through `nc`); undefined while none does. */
  streamLeader(nc: NatsConnection, stream: string): Promise<NatsClusterNode | undefined>;
  /** The node that leads KV bucket `bucket` (its stream `KV_<bucket>`). */
  kvLeader(nc: NatsConnection, bucket: string): Promise<NatsClusterNode | undefined>;
  /**
   * Waits until `stream` has a leader and every replica on a running, unfrozen, connected node is current
   * (caught up with the leader), e.g. after a node rejoined.
   */
  waitStreamCurrent(nc: NatsConnection, stream: string, timeoutMs?: number): Promise<NatsClusterNode>;
  /**
   * Waits until every running node reports healthy (`/healthz`) and the JetStream meta leader counts
   * every other reachable node as a current, online peer ({@link natsMetaPeersReady}).
   */
  waitHealthy(timeoutMs?: number): Promise<void>;
  /**
   * {@link waitHealthy} as a StatefulSet's probe sees it: a node whose JetStream is still behind its meta
   * leader after `stuckMs` is restarted (SIGTERM, once) and the wait starts again (`thenMs`).
   * nats-server 2.10 can leave a restarted or wiped node's meta group with commit != applied for good
   * (nats-io/nats-server#5976); a pod's probe cures that, so tests of what we build on the cluster do
   * the same and say so through `onRestart`. Any other unhealthy state fails as {@link waitHealthy} does.
   * @returns the node restarted, if one was.
   */
  waitHealthyAsProbed(opts?: ProbeOptions): Promise<NatsClusterNode | undefined>;
  /**
   * {@link waitStreamCurrent} as a restarted pod's startup probe sees it (the full `/healthz`, which
   * judges each stream replica the node hosts): a running node whose replica of `stream` is still
   * behind after `stuckMs` (default 90 s) is restarted (SIGTERM, once) and the wait starts again
   * (`thenMs`). The NATS chart's startup probe allows a node minutes before it restarts it; tests do
   * it sooner and say so through `onRestart` (a chaos run beside two CPU hogs had a restarted node's
   * replica of the heartbeat bucket behind for 90 s). A missing leader fails as waitStreamCurrent does.
   */
  waitStreamCurrentAsProbed(nc: NatsConnection, stream: string, opts?: ProbeOptions): Promise<NatsClusterNode>;
  /** Stops every node and removes the stores. */
  stop(): Promise<void>;
}

/** How {@link NatsClusterHandle.waitHealthyAsProbed} waits. */
export interface ProbeOptions {
  /** How long a node may stay behind (its meta leader, or a stream's leader) before it is restarted (default 60 s, 90 s for a stream). */
  stuckMs?: number;
  /** How long the cluster then has to become healthy (default 90 s). */
  thenMs?: number;
  /** Told before the restart: which node and what the last check saw. */
  onRestart?: (node: NatsClusterNode, lastSeen: string) => void;
}

/**
 * The node a failed {@link NatsClusterHandle.waitHealthy} names as stuck behind its meta leader by its
 * own `/healthz` (what a pod's probe sees), from the error's message. A node only its leader lists as
 * behind answers its probe, so no probe would restart it: undefined.
 */
export function stuckBehindMetaLeader(message: string): string | undefined {
  return /last seen: (\S+) \/healthz: 503 [^;]*not current with the meta leader/.exec(message)?.[1];
}

/** A cluster node as {@link natsMetaPeersReady} sees it: its server name and monitoring port. */
export interface NatsMonitoredNode {
  readonly name: string;
  readonly monitorPort: number;
}

interface MetaClusterInfo {
  leader?: string;
  replicas?: { name: string; current?: boolean; offline?: boolean }[];
}

/**
 * Why the cluster of `nodes` is not ready yet, or undefined when it is: every node answers
 * `/healthz?js-server-only=true`, and one of them leads the JetStream meta group and lists every other one as a current,
 * online peer (`/jsz` meta_cluster). Not yet proof that a replicated stream can be placed: nats-server
 * 2.10 also needs each peer's first statistics message, which a node sends on a backing-off timer
 * (0.25 s, 0.5 s, 1 s, ... up to its interval) and which no monitoring endpoint shows; until the
 * leader has it, it answers "no suitable peers for placement, peer offline" (10005). See
 * {@link startNatsCluster}'s placement probe.
 */
export async function natsMetaPeersUnready(nodes: readonly NatsMonitoredNode[]): Promise<string | undefined> {
  const metas = new Map<string, MetaClusterInfo>();
  for (const n of nodes) {
    // The server and its JetStream, not each asset it hosts: the full check also judges every stream and
    // consumer, and on 2.10 a node kept answering 503 for an ordered consumer of a client gone during a
    // partition ("not current: consumer not found", more than 90 s after the heal; chaos
    // nats-node-partitioned-defaults). Streams are judged by waitStreamCurrent.
    const health = await fetch(`http://127.0.0.1:${n.monitorPort}/healthz?js-server-only=true`);
    if (!health.ok) return `${n.name} /healthz: ${health.status} ${(await health.text()).slice(0, 200)}`;
    const res = await fetch(`http://127.0.0.1:${n.monitorPort}/jsz`);
    if (!res.ok) return `${n.name} /jsz: ${res.status}`;
    metas.set(n.name, ((await res.json()) as { meta_cluster?: MetaClusterInfo }).meta_cluster ?? {});
  }
  if (nodes.length <= 1) return undefined;
  const leader = [...metas].find(([name, meta]) => meta.leader === name);
  if (!leader) return `no meta leader among ${nodes.map((n) => n.name).join(', ')} (they name ${[...metas].map(([n, m]) => `${n}: ${m.leader ?? '-'}`).join(', ')})`;
  const peers = new Map((leader[1].replicas ?? []).map((r) => [r.name, r]));
  const behind = nodes.filter((n) => n.name !== leader[0] && !(peers.get(n.name)?.current === true && peers.get(n.name)?.offline !== true));
  if (behind.length === 0) return undefined;
  return `meta leader ${leader[0]} lists ${behind.map((n) => `${n.name} as ${JSON.stringify(peers.get(n.name) ?? 'unknown')}`).join(', ')}`;
}

/** {@link natsMetaPeersUnready} found nothing missing. */
export async function natsMetaPeersReady(nodes: readonly NatsMonitoredNode[]): Promise<boolean> {
  return (await natsMetaPeersUnready(nodes)) === undefined;
}

/**
 * The command-line options that make a nats-server node `index` of a cluster whose route ports are
 * `clusterPorts` (in node order): its server name `n<index>` (how JetStream names leaders and
 * replicas), the cluster name, its route listener and routes to every other node.
 */
export function natsClusterNodeArgs(index: number, clusterPorts: readonly number[], clusterName: string, routePorts?: readonly number[]): string[] {
  const port = clusterPorts[index];
  if (port === undefined) throw new Error(`no route port for node ${index} of ${clusterPorts.length}`);
  const routes = routePorts ?? clusterPorts.filter((_, j) => j !== index);
  return [
    '--server_name', `n${index}`,
    '--cluster_name', clusterName,
    '--cluster', `nats://127.0.0.1:${port}`,
    '--routes', routes.map((p) => `nats://127.0.0.1:${p}`).join(','),
  ];
}

/**
 * Starts a private NATS cluster of `nodes` nats-servers with JetStream on loopback ports (clients,
 * routes and monitoring each on a free port), every node routing to the others, each with its own
 * store. Resolves once the JetStream meta group has a leader and, for a cluster without extraArgs or
 * TLS, a stream of `nodes` replicas can be placed. Streams and buckets need `num_replicas` /
 * `replicas` set by their creator (3 for every one on a 3-node cluster).
 */
export async function startNatsCluster(opts: NatsClusterOptions = {}): Promise<NatsClusterHandle> {
  // Ports are picked free but bound only by the nodes: another process may take one in between. A node
  // that cannot bind fails the start; a fresh set of ports is the fix, so the whole start is retried.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startNatsClusterOnce(opts);
    } catch (err) {
      // Rarely (1 start in about 10 of the partitionable kind, nats-server 2.10.27, busy machine) a node
      // never appears in the meta leader's peers within the wait: the error carries the nodes' logs,
      // and a fresh start (new ports and stores) is the fix, as for a port taken meanwhile.
      if (err instanceof ClusterNotFormedError) process.stderr.write(`[infra] NATS cluster not formed, starting it again: ${err.message}\n`);
      if (attempt >= 3 || !(err instanceof ClusterNotFormedError || /address already in use/i.test(describe(err)))) throw err;
    }
  }
}

function describe(err: unknown): string {
  const parts: string[] = [];
  for (let e: unknown = err; e !== undefined && parts.length < 5; e = e instanceof Error ? e.cause : undefined) {
    parts.push(e instanceof Error ? e.message : String(e));
  }
  return parts.join(': ');
}

export interface NatsClusterOptions {
  nodes?: number;
  name?: string;
  partitionable?: boolean;
  /** Passed to every node, after the cluster's own (e.g. `['-c', authConf]` for users and permissions). */
  extraArgs?: readonly string[];
  /** Every node requires TLS from its clients (routes between the nodes stay on loopback, plaintext). */
  tls?: NatsServerTls;
}

async function startNatsClusterOnce(opts: NatsClusterOptions): Promise<NatsClusterHandle> {
  const count = opts.nodes ?? 3;
  if (!Number.isInteger(count) || count < 1) throw new Error(`a NATS cluster needs at least one node, got ${count}`);
  const clusterName = opts.name ?? 'defender-test';
  const root = mkdtempSync(join(tmpdir(), 'defender-nats-cluster-'));
  const ports: { port: number; clusterPort: number; monitorPort: number }[] = [];
  for (let i = 0; i < count; i++) ports.push({ port: await freePort(), clusterPort: await freePort(), monitorPort: await freePort() });
  const clusterPorts = ports.map((p) => p.clusterPort);
  // Partitionable: node i reaches node j only through its own proxy [i][j], and every node advertises
  // a closed route port, so a cut route cannot be replaced by a direct one learnt from gossip.
  const proxies: TcpProxy[][] = [];
  let partitionArgs: (i: number) => string[] = () => [];
  if (opts.partitionable) {
    for (let i = 0; i < count; i++) {
      proxies.push(await Promise.all(ports.map((p) => startTcpProxy({ target: { host: '127.0.0.1', port: p.clusterPort } }))));
    }
    const closed = await freePort();
    partitionArgs = () => ['--cluster_advertise', `127.0.0.1:${closed}`, '--connect_retries', '0'];
  }
  const routePorts = (i: number): number[] | undefined =>
    opts.partitionable ? ports.flatMap((_, j) => (j === i ? [] : [proxies[i]![j]!.port])) : undefined;
  const partitioned = ports.map(() => false);
  const servers: (NatsServerHandle | undefined)[] = ports.map(() => undefined);
  const frozen = ports.map(() => false);
  const running = ports.map(() => false);

  const startNode = async (i: number): Promise<void> => {
    const p = ports[i]!;
    const storeDir = join(root, `n${i}`);
    mkdirSync(storeDir, { recursive: true });
    const srv = servers[i];
    if (srv) {
      await srv.start();
    } else {
      servers[i] = await startNatsServer({
        storeDir,
        port: p.port,
        monitorPort: p.monitorPort,
        ...(opts.tls ? { tls: opts.tls } : {}),
        extraArgs: [...natsClusterNodeArgs(i, clusterPorts, clusterName, routePorts(i)), ...partitionArgs(i), ...(opts.extraArgs ?? [])],
      });
    }
    running[i] = true;
    frozen[i] = false;
  };

  try {
    await Promise.all(ports.map((_, i) => startNode(i)));
  } catch (err) {
    await Promise.all(servers.map((s) => s?.stop().catch(() => undefined)));
    await Promise.all(proxies.flat().map((p) => p.close()));
    rmSync(root, { recursive: true, force: true });
    throw err;
  }
  /** The proxies of every route from or to node `i`. */
  const linksOf = (i: number): TcpProxy[] => {
    if (!opts.partitionable) throw new Error('this NATS cluster was not started partitionable');
    return proxies.flatMap((row, a) => row.filter((_, b) => a !== b && (a === i || b === i)));
  };
  const version = servers[0]!.version;

  const server = (i: number): NatsServerHandle => {
    const s = servers[i];
    if (!s) throw new Error(`node n${i} was never started`);
    return s;
  };
  const signal = (i: number, sig: NodeJS.Signals): void => {
    const pid = server(i).pid;
    if (pid !== undefined) process.kill(pid, sig);
  };

  const nodes: NatsClusterNode[] = ports.map((p, i) => {
    const halt = async (o: { hard?: boolean } = {}): Promise<void> => {
      if (frozen[i]) signal(i, 'SIGCONT');
      frozen[i] = false;
      await server(i).halt(o);
      running[i] = false;
    };
    return {
      name: `n${i}`,
      url: `nats://127.0.0.1:${p.port}`,
      port: p.port,
      clusterPort: p.clusterPort,
      monitorPort: p.monitorPort,
      storeDir: join(root, `n${i}`),
      get pid() {
        return servers[i]?.pid;
      },
      get running() {
        return running[i]!;
      },
      get frozen() {
        return frozen[i]!;
      },
      halt,
      start: () => startNode(i),
      async restart(o = {}) {
        await halt(o);
        if (o.emptyStore) {
          rmSync(join(root, `n${i}`), { recursive: true, force: true });
          mkdirSync(join(root, `n${i}`), { recursive: true });
        }
        if (o.downMs) await new Promise((r) => setTimeout(r, o.downMs));
        await startNode(i);
      },
      freeze() {
        if (!running[i] || frozen[i]) return;
        signal(i, 'SIGSTOP');
        frozen[i] = true;
      },
      thaw() {
        if (!frozen[i]) return;
        signal(i, 'SIGCONT');
        frozen[i] = false;
      },
      partition() {
        linksOf(i).forEach((l) => l.cut());
        partitioned[i] = true;
      },
      heal() {
        linksOf(i).forEach((l) => l.heal());
        partitioned[i] = false;
      },
      get partitioned() {
        return partitioned[i]!;
      },
    };
  });

  const byName = (name: string | undefined): NatsClusterNode | undefined => nodes.find((n) => n.name === name);

  const streamInfo = async (nc: NatsConnection, stream: string) => (await jetstreamManager(nc, { timeout: 2000 })).streams.info(stream);

  const handle: NatsClusterHandle = {
    nodes,
    urls: nodes.map((n) => n.url),
    version,
    node(name) {
      const n = byName(name);
      if (!n) throw new Error(`no node ${name} in the cluster (${nodes.map((x) => x.name).join(', ')})`);
      return n;
    },
    async streamLeader(nc, stream) {
      return byName((await streamInfo(nc, stream)).cluster?.leader);
    },
    kvLeader(nc, bucket) {
      return handle.streamLeader(nc, `KV_${bucket}`);
    },
    async waitStreamCurrent(nc, stream, timeoutMs = 60_000) {
      let leader: NatsClusterNode | undefined;
      let behind: string[] = [];
      let lastSeen = 'no answer';
      await waitFor(`stream ${stream}: a leader and every live replica current`, async () => {
        const info = await streamInfo(nc, stream);
        leader = byName(info.cluster?.leader);
        const replicas = new Map((info.cluster?.replicas ?? []).map((r) => [r.name, r]));
        lastSeen = `leader ${info.cluster?.leader ?? 'none'}; ${[...replicas.values()].map((r) => `${r.name} ${r.current ? 'current' : 'behind'} lag ${r.lag ?? '?'}${r.offline ? ' offline' : ''}`).join(', ') || 'no replicas'}`;
        if (!leader) return false;
        behind = nodes.filter((n) => n.running && !n.frozen && !n.partitioned && n !== leader && replicas.get(n.name)?.current !== true).map((n) => n.name);
        return behind.length === 0;
      }, timeoutMs, 100).catch((err: unknown) => {
        throw new StreamNotCurrentError(`${(err as Error).message}; last seen: ${lastSeen}`, leader ? behind : [], { cause: err });
      });
      return leader!;
    },
    async waitHealthy(timeoutMs = 60_000) {
      // A probe that throws keeps waiting; the last reason ends up in the timeout's message.
      let why: string | undefined;
      await waitFor(
        'every running NATS node healthy and a current, online peer of the JetStream meta leader',
        async () => (why = await natsMetaPeersUnready(nodes.filter((x) => x.running && !x.frozen && !x.partitioned))) === undefined,
        timeoutMs,
        100,
      ).catch((err: unknown) => {
        throw new Error(`${(err as Error).message}; last seen: ${why ?? 'no answer'}`, { cause: err });
      });
    },
    async waitStreamCurrentAsProbed(nc, stream, { stuckMs = 90_000, thenMs = 90_000, onRestart }: ProbeOptions = {}) {
      try {
        return await handle.waitStreamCurrent(nc, stream, stuckMs);
      } catch (err) {
        const stuck = err instanceof StreamNotCurrentError ? nodes.filter((n) => err.behind.includes(n.name)) : [];
        if (stuck.length === 0) throw err;
        for (const node of stuck) {
          onRestart?.(node, (err as Error).message);
          await node.restart({ hard: false });
        }
        await handle.waitHealthy(thenMs);
        return handle.waitStreamCurrent(nc, stream, thenMs);
      }
    },
    async waitHealthyAsProbed({ stuckMs = 60_000, thenMs = 90_000, onRestart }: ProbeOptions = {}) {
      const failure = await handle.waitHealthy(stuckMs).then(
        () => undefined,
        (err: unknown) => (err as Error).message,
      );
      if (failure === undefined) return undefined;
      const name = stuckBehindMetaLeader(failure);
      const node = nodes.find((n) => n.name === name && n.running && !n.frozen && !n.partitioned);
      if (!node) throw new Error(failure);
      onRestart?.(node, failure);
      await node.restart({ hard: false });
      await handle.waitHealthy(thenMs);
      return node;
    },
    async stop() {
      nodes.forEach((n) => n.thaw());
      await Promise.all(servers.map((s) => s?.halt().catch(() => undefined)));
      await Promise.all(proxies.flat().map((p) => p.close()));
      rmSync(root, { recursive: true, force: true });
    },
  };
  try {
    await handle.waitHealthy();
    if (count > 1 && !opts.extraArgs && !opts.tls) await probePlacement(handle.urls, count);
  } catch (err) {
    const logs = nodes.map((n, i) => `--- ${n.name} ---\n${servers[i]?.logTail().split('\n').slice(-15).join('\n') ?? ''}`).join('\n');
    await handle.stop();
    throw new ClusterNotFormedError(`${(err as Error).message}\n${logs}`, { cause: err });
  }
  return handle;
}

/** A stream still had no leader, or a live replica behind it, when {@link NatsClusterHandle.waitStreamCurrent} gave up. */
export class StreamNotCurrentError extends Error {
  override readonly name = 'StreamNotCurrentError';
  constructor(
    message: string,
    /** The running nodes whose replica was behind the leader (empty when there was no leader). */
    readonly behind: readonly string[],
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** A new cluster's nodes did not all join the JetStream meta group in time (see {@link startNatsCluster}). */
class ClusterNotFormedError extends Error {
  override readonly name = 'ClusterNotFormedError';
}

/** JetStream's answers that mean "the cluster is still forming": no peers for placement, no leader. */
const FORMING_CODES = new Set([10005 /* no suitable peers for placement */, 10008 /* temporarily unavailable */]);

/**
 * Creates and deletes a `replicas`-replica stream until the cluster accepts it: ready means every
 * node can host a replica, which on nats-server 2.10 comes some seconds after `/healthz` (see
 * {@link natsMetaPeersReady}). Clusters started with their own configuration or TLS are not probed
 * (this connection has no credentials); their users retry creation as the product does.
 */
async function probePlacement(urls: readonly string[], replicas: number): Promise<void> {
  const nc = await connect({ servers: [...urls], name: 'harness-placement-probe' });
  try {
    const jsm = await jetstreamManager(nc, { timeout: 10_000 });
    await waitFor(`a ${replicas}-replica stream placed on the new cluster`, async () => {
      try {
        await jsm.streams.add({ name: PLACEMENT_PROBE, subjects: [`harness.${PLACEMENT_PROBE}`], num_replicas: replicas, storage: StorageType.Memory });
      } catch (err) {
        if (err instanceof JetStreamApiError && FORMING_CODES.has(err.code)) return false;
        throw err;
      }
      await jsm.streams.delete(PLACEMENT_PROBE);
      return true;
    }, 60_000, 250);
  } finally {
    await nc.close();
  }
}

const PLACEMENT_PROBE = 'HARNESS_PLACEMENT_PROBE';
