import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { connect as netConnect } from 'node:net';
import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import { jetstreamManager } from '@nats-io/jetstream';
import { getJson, waitFor } from '@defender/infra-harness';
import { DEFAULT_BUCKETS, STREAMS } from '@defender/nats-kv';
import { LocalFab, TEST_FAB_OPTIONS } from './lib/local-fab';

/**
 * `npm start -- --nats-cluster`: the launcher's cluster (built bundles) on three NATS nodes serving
 * TLS only. Every stream and bucket, whoever created it, has 3 replicas; the apps know all three
 * URLs, so they carry on when a node dies.
 */
describe('local fab on a 3-node NATS cluster (npm start -- --nats-cluster)', () => {
  let fab: LocalFab | undefined;
  let nc: NatsConnection | undefined;

  beforeAll(async () => {
    fab = new LocalFab({
      defenders: 2,
      natsNodes: 3,
      dashboard: false,
      ...TEST_FAB_OPTIONS,
    });
    await fab.start();
    nc = await connect({ servers: fab.natsUrl.split(','), maxReconnectAttempts: -1, reconnectTimeWait: 100, pingInterval: 1000, maxPingOut: 2, ...fab.natsCredentials('dashboard') });
  }, 300_000);

  afterAll(async () => {
    await nc?.close().catch(() => undefined);
    await fab?.stop();
  }, 120_000);

  it('starts three NATS nodes and gives the apps all their URLs', async () => {
    const nodes = fab!.procs.filter((p) => p.role === 'nats');
    expect(nodes.map((p) => p.name)).toEqual(['nats-0', 'nats-1', 'nats-2']);
    expect(nodes.every((p) => p.alive)).toBe(true);
    expect(fab!.natsUrl.split(',')).toEqual(nodes.map((p) => `nats://127.0.0.1:${p.port}`));
    expect(fab!.describe()).toMatchObject({ natsUrl: fab!.natsUrl, natsNodes: 3 });
    const processes = await fab!.processes();
    expect(processes.filter((p) => p.role === 'nats').map((p) => p.url)).toEqual(fab!.natsUrl.split(','));
  });

  it('serves NATS over TLS only, and every process it started trusts the run\'s CA', async () => {
    const nodes = fab!.procs.filter((p) => p.role === 'nats');
    for (const node of nodes) {
      // The first line a plaintext client gets: INFO with tls_required (the server then waits for a TLS handshake).
      const info = await new Promise<string>((resolve, reject) => {
        let data = '';
        const sock = netConnect(node.port, '127.0.0.1');
        sock.on('data', (d) => {
          data += d.toString('latin1');
          if (data.includes('\r\n')) {
            sock.destroy();
            resolve(data);
          }
        });
        sock.on('error', reject);
      });
      expect({ node: node.name, tlsRequired: /"tls_required":true/.test(info) }).toEqual({ node: node.name, tlsRequired: true });
    }
    expect(nc!.info?.tls_required).toBe(true);
    const apps = fab!.procs.filter((p) => p.role !== 'nats' && p.alive);
    expect(apps.length).toBeGreaterThanOrEqual(4);
    for (const p of apps) {
      const env = readFileSync(`/proc/${p.pid}/environ`, 'utf8').split('\0');
      expect({ process: p.name, ca: env.find((e) => e.startsWith('NATS_TLS_CA_FILE=')) }).toEqual({ process: p.name, ca: `NATS_TLS_CA_FILE=${fab!.natsTls!.caFile}` });
    }
    expect(fab!.describe()).toMatchObject({ natsTlsCaFile: fab!.natsTls!.caFile });
  });

  it('every stream and KV bucket the fab and its apps created has 3 replicas', async () => {
    // Every stream, from a node's monitoring endpoint: no NATS user may list streams (issue 50).
    const monitor = fab!.procs.find((p) => p.name === 'nats-1')!.extraPort!;
    const jsz = (await getJson(`http://127.0.0.1:${monitor}/jsz?streams=true&config=true`)).body as { account_details?: { stream_detail?: { name: string; config: { num_replicas: number } }[] }[] };
    const replicas = new Map<string, number>();
    for (const a of jsz.account_details ?? []) for (const d of a.stream_detail ?? []) replicas.set(d.name, d.config.num_replicas);
    // The dashboard's user reads each of them.
    const jsm = await jetstreamManager(nc!);
    for (const name of replicas.keys()) expect((await jsm.streams.info(name)).config.num_replicas).toBe(replicas.get(name));
    const expected = [STREAMS.notifications, STREAMS.deadLetters, STREAMS.defenseEvents, ...Object.values(DEFAULT_BUCKETS).map((b) => `KV_${b}`)];
    for (const name of expected) expect([name, replicas.get(name)]).toEqual([name, 3]);
    expect([...replicas].filter(([, r]) => r !== 3)).toEqual([]);
  });

  it('keeps its run directory, SQLite store and logs readable only by their owner; only the agent and the controllers get the election token (issue 50)', async () => {
    const mode = (f: string) => statSync(f).mode & 0o777;
    expect({ runDir: mode(fab!.runDir), logDir: mode(fab!.logDir) }).toEqual({ runDir: 0o700, logDir: 0o700 });
    const files = [fab!.sqlitePath, ...readdirSync(fab!.logDir).map((f) => join(fab!.logDir, f))];
    expect(files.length).toBeGreaterThan(5);
    expect(files.map((f) => [f, mode(f)])).toEqual(files.map((f) => [f, 0o600]));
    const tokenOf = (p: { pid?: number }) => readFileSync(`/proc/${p.pid}/environ`, 'utf8').split('\0').find((e) => e.startsWith('ELECTION_AUTH_TOKEN='));
    const apps = fab!.procs.filter((p) => p.role !== 'nats' && p.alive);
    const agent = apps.find((p) => p.role === 'election-agent')!;
    expect(tokenOf(agent)).toMatch(/^ELECTION_AUTH_TOKEN=.{16,}$/);
    expect(apps.map((p) => [p.name, tokenOf(p) === tokenOf(agent)])).toEqual(apps.map((p) => [p.name, p.role === 'election-agent' || p.role === 'assignment-controller']));
  });

  it('the cluster keeps its map and its defenders when a NATS node is killed', async () => {
    const victim = fab!.procs.find((p) => p.name === 'nats-0')!;
    await victim.stop('SIGKILL', 0);
    // Both defenders stay in the map. Waited for, not read once: on a loaded machine a defender whose
    // connection was on the killed node may miss heartbeats while it reconnects, be taken out as
    // crashed and rejoin; what must hold is that the map, read through the surviving nodes, has both.
    let count = 0;
    await waitFor('the map, read with a NATS node down, with both defenders', async () => {
      count = (await fab!.map())?.defenderCount ?? 0;
      return count === 2;
    }, 120_000, 250);
    expect(count).toBe(2);
    const defenders = fab!.procs.filter((p) => p.role === 'defender');
    await waitFor('every defender ready with a NATS node down', async () => {
      const res = await Promise.all(defenders.map((d) => getJson(`${d.url}/health/ready`).catch(() => ({ status: 0 }))));
      return res.every((r) => r.status === 200);
    }, 60_000, 250);
    expect(defenders.every((d) => d.alive)).toBe(true);
  });
});
