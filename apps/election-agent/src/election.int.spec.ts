import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import { Kvm } from '@nats-io/kv';
import {
  describeWithInfra,
  freePort,
  makeTestPki,
  SecuredNatsServer,
  spawnTsApp,
  startSecuredNatsServer,
  TestPki,
  testNatsConnectOptions,
  testNatsEnv,
  testNatsUrl,
  waitFor,
} from '@defender/infra-harness';
import {
  ELECTION_PROTO_FILE,
  ElectionCallError,
  ElectionClient,
  LeaderView,
  leaseRecordSchema,
  PROTO_LOADER_OPTIONS,
  sourceProtoRoot,
} from '@defender/election';
import { actingOverlap, AGENT_ENTRY, AgentProcess, CandidateProcess, Harness, timeline } from './testing/cluster';

// The run's nats-server requires mutual TLS (jest.config.ts `natsTls`) and a user: the agents and the
// test's own connections present the harness's client certificate and the fixture's user (each test's
// bucket has its own name, which the election-agent role may not write; main.int.spec.ts runs the agent
// as its role). The private servers of the NATS-restart tests are secured too (below).
const privateNats = new Map<string, SecuredNatsServer>();
const natsEnv = (url: string) => (url === testNatsUrl() ? testNatsEnv() : (privateNats.get(url)?.env('election-agent') ?? {}));
/** The election agents' bucket (ELECTION_KV_BUCKET's default): the only one their NATS user may write. */
const ELECTIONS = 'elections';
const harness: Harness = { spawnTsApp, freePort, waitFor, natsEnv };
const TOKEN = 'test-shared-token-0123456789';
let bucketSeq = 0;
const freshBucket = () => `elections-it-${process.pid}-${++bucketSeq}`;

/**
 * Waits (instead of a fixed sleep) until one of two candidates holds `election` and has been told
 * of `n` leases since `second` started campaigning, the other standing by, and returns them by
 * role. Normally `first`, which started first, leads; a busy machine may have kept it from
 * renewing for longer than its TTL, and then `second` has rightly taken over: the roles are the
 * other way round, and the test goes on with them. `settledAt` is when the roles were read.
 */
async function settledRoles(
  first: CandidateProcess,
  second: CandidateProcess,
  election: string,
  n: number,
): Promise<{ leader: CandidateProcess; standby: CandidateProcess; settledAt: number }> {
  const since = second.events({ event: 'started' })[0]!.at;
  let roles = { leader: first, standby: second, settledAt: 0 };
  await waitFor(
    `a leader of ${election} told of ${n} lease(s) while the other stands by`,
    async () => {
      roles = second.leads(election)
        ? { leader: second, standby: first, settledAt: Date.now() }
        : { leader: first, standby: second, settledAt: Date.now() };
      return (
        roles.leader.leads(election) &&
        !roles.standby.leads(election) &&
        roles.leader.events({ event: 'lease', election }).filter((e) => e.at > since).length >= n
      );
    },
    30_000,
    50,
  );
  return roles;
}

/** A raw stub: sends whatever it is given (no client-side validation), with or without a token. */
type Raw = grpc.Client &
  Record<
    string,
    (req: object, md: grpc.Metadata, cb: (err: grpc.ServiceError | null, res?: unknown) => void) => void
  >;
function rawClient(address: string, creds = grpc.credentials.createInsecure()): Raw {
  const root = sourceProtoRoot();
  const def = protoLoader.loadSync(join(root, ELECTION_PROTO_FILE), {
    ...PROTO_LOADER_OPTIONS,
    includeDirs: [root],
  });
  const pkg = grpc.loadPackageDefinition(def) as unknown as {
    election: { v1: { Election: new (a: string, c: grpc.ChannelCredentials) => Raw } };
  };
  return new pkg.election.v1.Election(address, creds);
}
function rawCall(client: Raw, method: string, req: object, token?: string): Promise<unknown> {
  const md = new grpc.Metadata();
  if (token !== undefined) md.set('authorization', token);
  return new Promise((resolve, reject) =>
    client[method]!.call(client, req, md, (err, res) => (err ? reject(err) : resolve(res))),
  );
}

/** Service names listed by server reflection (what `grpcurl list` shows). */
function reflectedServices(address: string): Promise<string[]> {
  const file = join(
    dirname(require.resolve('@grpc/reflection')),
    '..',
    'proto',
    'grpc',
    'reflection',
    'v1',
    'reflection.proto',
  );
  const def = protoLoader.loadSync(file, { keepCase: true });
  type Listing = { list_services_response?: { service: { name: string }[] } };
  type Stream = grpc.ClientDuplexStream<object, Listing>;
  const pkg = grpc.loadPackageDefinition(def) as unknown as {
    grpc: {
      reflection: {
        v1: {
          ServerReflection: new (
            a: string,
            c: grpc.ChannelCredentials,
          ) => grpc.Client & { ServerReflectionInfo(): Stream };
        };
      };
    };
  };
  const client = new pkg.grpc.reflection.v1.ServerReflection(address, grpc.credentials.createInsecure());
  return new Promise((resolve, reject) => {
    const call = client.ServerReflectionInfo();
    call.on('data', (res: Listing) => {
      resolve((res.list_services_response?.service ?? []).map((s) => s.name).sort());
      call.end();
      client.close();
    });
    call.on('error', reject);
    call.write({ list_services: '' });
  });
}

async function kvRecord(nc: NatsConnection, bucket: string, election: string) {
  const entry = await (await new Kvm(nc).open(bucket)).get(election);
  return entry && entry.operation === 'PUT' ? leaseRecordSchema.parse(entry.json()) : null;
}

describeWithInfra(['nats'], 'election-agent: election.v1 over gRPC', () => {
  // A hang guard, not a deadline: most tests start agents and candidates from TypeScript source, and
  // beside CPU hogs and other suites (load 15-26) one ran past the 60 s default and one took 129 s;
  // each wait inside has its own, more telling guard.
  jest.setTimeout(300_000);
  const agents: AgentProcess[] = [];
  const candidates: CandidateProcess[] = [];
  const clients: { close(): void }[] = [];
  const connections: NatsConnection[] = [];
  let pki: TestPki;

  beforeAll(() => {
    pki = makeTestPki();
  });
  afterEach(async () => {
    clients.splice(0).forEach((c) => c.close());
    await Promise.all(candidates.splice(0).map((c) => c.proc.stop('SIGKILL')));
    await Promise.all(agents.splice(0).map((a) => a.proc.stop('SIGTERM')));
    await Promise.all(connections.splice(0).map((nc) => nc.close()));
  });
  const agent = async (opts: Parameters<typeof AgentProcess.start>[1]) => {
    const a = await AgentProcess.start(harness, opts);
    agents.push(a);
    return a;
  };
  const client = (c: ElectionClient) => (clients.push(c), c);
  const candidate = (opts: Parameters<typeof CandidateProcess.start>[1]) => {
    const c = CandidateProcess.start(harness, opts);
    candidates.push(c);
    return c;
  };
  const natsConn = async (url: string) => {
    const nc = await connect({ ...(url === testNatsUrl() ? testNatsConnectOptions() : (privateNats.get(url)?.connectOptions() ?? { servers: url })), maxReconnectAttempts: -1, reconnectTimeWait: 100 });
    connections.push(nc);
    return nc;
  };

  it('grants, continues, renews, releases and observes many named elections; counts grants, changes, renew failures', async () => {
    const a = await agent({
      natsUrl: testNatsUrl(),
      bucket: freshBucket(),
      env: { ELECTION_AUTH_TOKEN: TOKEN },
    });
    const c = client(new ElectionClient({ addresses: [a.address], authToken: TOKEN }));
    expect(await reflectedServices(a.address)).toEqual(
      expect.arrayContaining(['election.v1.Election', 'grpc.health.v1.Health']),
    );

    const observed: LeaderView[] = [];
    const obs = c.observe('api.one', { onState: (v) => observed.push(v), onEnd: () => undefined });
    await waitFor('first observed state', async () => observed.length > 0, 10_000, 20);
    expect(observed[0]).toMatchObject({ election: 'api.one', state: 'none', fencingToken: 0 });

    const x = await c.campaign({ election: 'api.one', candidate: 'x', ttlMs: 60_000 });
    expect(x).toMatchObject({
      election: 'api.one',
      leader: 'x',
      isLeader: true,
      fencingToken: 1,
      ttlMs: 60_000,
      state: 'held',
    });
    expect(x.leaseExpiresAtMs - x.acquiredAtMs).toBe(60_000);
    expect(await c.campaign({ election: 'api.one', candidate: 'x', ttlMs: 60_000 })).toMatchObject({
      isLeader: true,
      fencingToken: 1,
    });
    const y = await c.campaign({ election: 'api.one', candidate: 'y', ttlMs: 60_000 });
    expect(y).toMatchObject({ leader: 'x', isLeader: false, fencingToken: 1, state: 'held' });
    // Told to come back when x's lease, plus the agents' 200 ms skew margin, has run out, by the
    // agent's clock at the time it answered.
    expect(y.retryAfterMs).toBe(y.leaseExpiresAtMs + 200 - y.agentTimeMs);
    expect(y.leaseExpiresAtMs).toBeGreaterThan(y.agentTimeMs);
    // Another election is independent.
    expect(await c.campaign({ election: 'api.two', candidate: 'y', ttlMs: 60_000 })).toMatchObject({
      isLeader: true,
      fencingToken: 1,
    });
    // A candidate's min_token (the newest map's token) lifts a new term's token over it, over gRPC.
    expect(await c.campaign({ election: 'api.floor', candidate: 'z', ttlMs: 60_000, minToken: 41 })).toMatchObject({
      isLeader: true,
      fencingToken: 42,
    });

    expect(await c.renew({ election: 'api.one', candidate: 'x', fencingToken: 1 })).toMatchObject({
      isLeader: true,
      fencingToken: 1,
    });
    expect(await c.renew({ election: 'api.one', candidate: 'y', fencingToken: 1 })).toMatchObject({
      isLeader: false,
      leader: 'x',
    });
    expect(await c.release({ election: 'api.one', candidate: 'x', fencingToken: 1 })).toMatchObject({
      released: true,
      leader: { state: 'released', leader: null, fencingToken: 1 },
    });
    expect(await c.renew({ election: 'api.one', candidate: 'x', fencingToken: 1 })).toMatchObject({
      isLeader: false,
      state: 'released',
    });
    expect(await c.campaign({ election: 'api.one', candidate: 'y', ttlMs: 60_000 })).toMatchObject({
      isLeader: true,
      fencingToken: 2,
    });
    expect(await c.getLeader('api.one')).toMatchObject({ state: 'held', leader: 'y', fencingToken: 2 });

    await waitFor('observed y', async () => observed.at(-1)?.leader === 'y', 10_000, 20);
    expect(observed.map((v) => `${v.state}:${v.leader ?? '-'}:${v.fencingToken}`)).toEqual([
      'none:-:0',
      'held:x:1',
      'released:-:1',
      'held:y:2',
    ]);
    obs.cancel();

    const metrics = await a.metrics();
    const value = (name: string, labels: string) =>
      Number(new RegExp(`^${name}\\{${labels}[^}]*\\} (\\d+)`, 'm').exec(metrics)?.[1] ?? NaN);
    expect(value('election_agent_grants_total', 'election="api.one"')).toBe(2);
    expect(value('election_agent_leader_changes_total', 'election="api.one"')).toBe(2);
    expect(value('election_agent_grants_total', 'election="api.two"')).toBe(1);
    expect(value('election_agent_grants_total', 'election="api.floor"')).toBe(1);
    expect(value('election_agent_renew_failures_total', 'election="api.one",reason="not-holder"')).toBe(1);
    expect(value('election_agent_renew_failures_total', 'election="api.one",reason="released"')).toBe(1);
    expect(value('election_agent_requests_total', 'method="Campaign",code="OK"')).toBe(6);
  });

  it('UNAUTHENTICATED without the shared token, INVALID_ARGUMENT with every reason for malformed requests', async () => {
    const a = await agent({
      natsUrl: testNatsUrl(),
      bucket: freshBucket(),
      env: { ELECTION_AUTH_TOKEN: `other-token-abcdefghijkl,${TOKEN}` },
    });
    const raw = rawClient(a.address);
    clients.push(raw);
    const good = { election: 'auth', candidate: 'c', ttl_ms: 5_000, lease_key: 'raw-client-lease-key-0123' };

    for (const token of [undefined, 'Bearer wrong-token-0123456789', TOKEN, 'Basic abc']) {
      await expect(rawCall(raw, 'Campaign', good, token)).rejects.toMatchObject({
        code: grpc.status.UNAUTHENTICATED,
      });
    }
    const stream = raw['Observe'] as unknown as (
      req: object,
      md: grpc.Metadata,
    ) => grpc.ClientReadableStream<unknown>;
    const observeErr = await new Promise<grpc.ServiceError>((resolve) =>
      stream.call(raw, { election: 'auth' }, new grpc.Metadata()).on('error', resolve),
    );
    expect(observeErr.code).toBe(grpc.status.UNAUTHENTICATED);

    // Either of the configured tokens (rotation) is accepted.
    await expect(rawCall(raw, 'Campaign', good, `Bearer ${TOKEN}`)).resolves.toMatchObject({
      is_leader: true,
    });
    await expect(
      rawCall(raw, 'GetLeader', { election: 'auth' }, 'Bearer other-token-abcdefghijkl'),
    ).resolves.toMatchObject({ leader: 'c' });

    const bad = await rawCall(
      raw,
      'Campaign',
      { election: 'bad..name', candidate: '', ttl_ms: 10 },
      `Bearer ${TOKEN}`,
    ).catch((e: grpc.ServiceError) => e);
    expect(bad).toMatchObject({ code: grpc.status.INVALID_ARGUMENT });
    expect((bad as grpc.ServiceError).details).toBe(
      'election: must be [A-Za-z0-9_-] words joined by single dots; candidate: is required; ttl_ms: must be 1000..3600000 ms; lease_key: is required',
    );
    await expect(
      rawCall(raw, 'Renew', { election: 'auth', candidate: 'c' }, `Bearer ${TOKEN}`),
    ).rejects.toMatchObject({
      code: grpc.status.INVALID_ARGUMENT,
      details: 'fencing_token: is required; lease_key: is required',
    });
    await expect(rawCall(raw, 'GetLeader', {}, `Bearer ${TOKEN}`)).rejects.toMatchObject({
      code: grpc.status.INVALID_ARGUMENT,
      details: 'election: is required',
    });

    // The library client reports the same as non-retryable errors.
    const wrong = client(
      new ElectionClient({ addresses: [a.address], authToken: 'Zwrong-token-0123456789' }),
    );
    const err = await wrong.getLeader('auth').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ElectionCallError);
    expect(err).toMatchObject({ code: grpc.status.UNAUTHENTICATED, retryable: false });
  });

  it('serves over TLS, and with a CA requires client certificates (mutual TLS)', async () => {
    const tlsAgent = await agent({
      natsUrl: testNatsUrl(),
      bucket: freshBucket(),
      env: { GRPC_TLS_CERT_FILE: pki.serverCert, GRPC_TLS_KEY_FILE: pki.serverKey },
    });
    const ca = readFileSync(pki.caCert);
    const ok = client(
      new ElectionClient({ addresses: [tlsAgent.address], tls: { rootCerts: ca, serverName: 'localhost' } }),
    );
    expect(await ok.campaign({ election: 'tls', candidate: 'c', ttlMs: 5_000 })).toMatchObject({
      isLeader: true,
    });
    const plain = client(new ElectionClient({ addresses: [tlsAgent.address], callTimeoutMs: 1_000 }));
    await expect(plain.getLeader('tls')).rejects.toMatchObject({ code: grpc.status.UNAVAILABLE });

    const mtlsAgent = await agent({
      natsUrl: testNatsUrl(),
      bucket: freshBucket(),
      env: {
        GRPC_TLS_CERT_FILE: pki.serverCert,
        GRPC_TLS_KEY_FILE: pki.serverKey,
        GRPC_TLS_CA_FILE: pki.caCert,
      },
    });
    const withCert = client(
      new ElectionClient({
        addresses: [mtlsAgent.address],
        tls: {
          rootCerts: ca,
          certChain: readFileSync(pki.clientCert),
          privateKey: readFileSync(pki.clientKey),
          serverName: 'localhost',
        },
      }),
    );
    expect(await withCert.campaign({ election: 'mtls', candidate: 'c', ttlMs: 5_000 })).toMatchObject({
      isLeader: true,
    });
    for (const tls of [
      { rootCerts: ca, serverName: 'localhost' },
      {
        rootCerts: ca,
        certChain: readFileSync(pki.rogueClientCert),
        privateKey: readFileSync(pki.rogueClientKey),
        serverName: 'localhost',
      },
    ]) {
      const refused = client(
        new ElectionClient({ addresses: [mtlsAgent.address], tls, callTimeoutMs: 1_000 }),
      );
      await expect(refused.getLeader('mtls')).rejects.toMatchObject({ code: grpc.status.UNAVAILABLE });
    }
  });

  it('bound to a non-loopback address: refuses to start without TLS and a token (exit 2), serves with both', async () => {
    const grpcPort = await freePort();
    const base = {
      HTTP_HOST: '127.0.0.1',
      HTTP_PORT: String(await freePort()),
      GRPC_HOST: '0.0.0.0',
      GRPC_PORT: String(grpcPort),
      ...testNatsEnv(),
      ELECTION_KV_BUCKET: freshBucket(),
    };
    const tls = { GRPC_TLS_CERT_FILE: pki.serverCert, GRPC_TLS_KEY_FILE: pki.serverKey };
    for (const [env, needs] of [
      [{}, 'needs TLS (GRPC_TLS_CERT_FILE and GRPC_TLS_KEY_FILE) and a token (ELECTION_AUTH_TOKEN)'],
      [{ ELECTION_AUTH_TOKEN: TOKEN }, 'needs TLS (GRPC_TLS_CERT_FILE and GRPC_TLS_KEY_FILE);'],
      [tls, 'needs a token (ELECTION_AUTH_TOKEN);'],
    ] as const) {
      const proc = spawnTsApp(AGENT_ENTRY, { ...base, ...env });
      const exit = await proc.exited;
      expect(exit.code).toBe(2);
      expect(proc.stderr()).toContain(`  - GRPC_HOST: 0.0.0.0 is not a loopback address: serving gRPC there ${needs}`);
    }

    const open = await agent({ natsUrl: testNatsUrl(), bucket: base.ELECTION_KV_BUCKET, env: { GRPC_HOST: '0.0.0.0', ...tls, ELECTION_AUTH_TOKEN: TOKEN } });
    const tlsOpts = { rootCerts: readFileSync(pki.caCert), serverName: 'localhost' };
    const ok = client(new ElectionClient({ addresses: [open.address], tls: tlsOpts, authToken: TOKEN }));
    expect(await ok.campaign({ election: 'open', candidate: 'c', ttlMs: 5_000 })).toMatchObject({ isLeader: true });
    const noToken = client(new ElectionClient({ addresses: [open.address], tls: tlsOpts, callTimeoutMs: 1_000 }));
    await expect(noToken.getLeader('open')).rejects.toMatchObject({ code: grpc.status.UNAUTHENTICATED });
  });

  it('the leader process killed with SIGKILL: a standby leads once the lease ran out, with a higher token', async () => {
    const bucket = freshBucket();
    const [a1, a2] = await Promise.all([
      agent({ natsUrl: testNatsUrl(), bucket }),
      agent({ natsUrl: testNatsUrl(), bucket }),
    ]);
    const addrs = [a1.address, a2.address];
    const first = candidate({ id: 'first', agents: addrs, elections: ['crash'], ttlSeconds: 2 });
    await waitFor('first leads', async () => first.leads('crash'), 30_000, 50);
    const second = candidate({
      id: 'second',
      agents: [a2.address, a1.address],
      elections: ['crash'],
      ttlSeconds: 2,
    });
    await waitFor('second started', async () => second.events({ event: 'started' }).length > 0, 30_000, 50);
    const { leader, standby } = await settledRoles(first, second, 'crash', 2);
    const electedBefore = standby.events({ event: 'elected' }).length;

    const killedAt = Date.now();
    await leader.proc.stop('SIGKILL');
    // Read after the kill: every lease the leader was told of, the last one included.
    const lastLease = leader.events({ event: 'lease' }).at(-1)!;
    // How soon is a performance target, measured by `npm run bench:election` (docs/benchmarks.md,
    // "Leader election failover"), not asserted here: a busy machine delays the standby's process.
    await waitFor('the standby leads', async () => standby.leads('crash'), 30_000, 20);
    const elected = standby.events({ event: 'elected' }).slice(electedBefore);

    expect(elected[0]!.token).toBeGreaterThan(lastLease.token!);
    // Not before the dead leader's lease (plus the 200 ms skew margin) ran out.
    expect(elected[0]!.acquiredAtMs!).toBeGreaterThanOrEqual(lastLease.leaseExpiresAtMs! + 200);
    // One term. (A renewal answered after its renew deadline on a busy machine makes the new leader
    // step down and continue the same term: elected again, with the same token.)
    expect(new Set(elected.map((e) => e.token))).toEqual(new Set([elected[0]!.token]));
    expect(actingOverlap(timeline([first, second], 'crash'), { [leader.id]: killedAt })).toBeNull();
  });

  it('an agent replica killed: clients fail over to another replica with no extra leader change', async () => {
    const bucket = freshBucket();
    const [a1, a2] = await Promise.all([
      agent({ natsUrl: testNatsUrl(), bucket }),
      agent({ natsUrl: testNatsUrl(), bucket }),
    ]);
    // A 4 s TTL: no other term may begin while the leader fails over, so the leader must renew
    // within TTL + skew (4.2 s) however busy the machine; with 2 s that margin was 2.2 s.
    const first = candidate({
      id: 'first',
      agents: [a1.address, a2.address],
      elections: ['replica'],
      ttlSeconds: 4,
    });
    await waitFor('first elected', async () => first.leads('replica'), 30_000, 50);
    const second = candidate({
      id: 'second',
      agents: [a1.address, a2.address],
      elections: ['replica'],
      ttlSeconds: 4,
    });
    await waitFor('second started', async () => second.events({ event: 'started' }).length > 0, 30_000, 50);
    const { leader, standby, settledAt } = await settledRoles(first, second, 'replica', 1);
    const token = leader.events({ event: 'elected' }).at(-1)!.token!;
    // The replica the leader's renewals go to now: the client stays on one until it fails, and on a
    // busy machine a late answer may already have moved it to the second. That one is killed.
    const count = async (a: typeof a1, pattern: RegExp) => Number(pattern.exec(await a.metrics())?.[1] ?? 0);
    const renewals = (a: typeof a1) => count(a, /^election_agent_requests_total\{method="Renew",code="OK"[^}]*\} (\d+)/m);
    // The one whose count grew between two readings (2.5 s apart: more than a renew interval).
    let serving: typeof a1 | undefined;
    let previous: number[] | undefined;
    await waitFor('the replica serving the renewals', async () => {
      const now = await Promise.all([renewals(a1), renewals(a2)]);
      const grew = previous === undefined ? [] : [a1, a2].filter((_, i) => now[i]! > previous![i]!);
      previous = now;
      serving = grew.length === 1 ? grew[0] : undefined;
      return serving !== undefined;
    }, 60_000, 2_500);
    const survivor = serving === a1 ? a2 : a1;
    const changes = () => count(survivor, /^election_agent_leader_changes_total\{election="replica"[^}]*\} (\d+)/m);
    const changesBeforeKill = await changes();
    const errorsBeforeKill = leader.events({ event: 'error' }).length;

    await serving!.kill();
    const killedAt = Date.now();
    // Leases told after the kill can only come through the surviving replica.
    const leasesAfterKill = () => leader.events({ event: 'lease' }).filter((e) => e.at > killedAt);
    await waitFor('two renewals through the surviving replica', async () => leasesAfterKill().length >= 2, 30_000, 50);

    // One term throughout. The leader may step down for a moment (a renewal answered after its
    // renew deadline: on a busy machine the call to the dead replica and the retry through the
    // survivor can take longer than the 1.2 s between renew interval and deadline), but it goes on
    // in the same term, and the standby is granted none.
    const since = (c: CandidateProcess, event: 'elected' | 'deposed') => c.events({ event }).filter((e) => e.at > settledAt);
    expect(since(leader, 'deposed').filter((e) => e.reason !== 'renew-deadline' || e.token !== token)).toEqual([]);
    expect(since(leader, 'elected').filter((e) => e.token !== token)).toEqual([]);
    expect(since(standby, 'elected')).toEqual([]);
    expect(leasesAfterKill().every((e) => e.token === token)).toBe(true);
    expect(leader.events({ event: 'error' }).length).toBeGreaterThan(errorsBeforeKill); // it did hit the dead replica
    expect(await changes()).toBe(changesBeforeKill); // no new term through the survivor
    const rec = await kvRecord(await natsConn(testNatsUrl()), bucket, 'replica');
    expect(rec).toMatchObject({ holder: leader.id, token, released: false });
  });

  describe('NATS restarted', () => {
    // A private nats-server per test (TLS and deploy/nats/auth.conf's users): the agents run as the
    // election agent's user on its own bucket, as in production.
    let nats: SecuredNatsServer;
    beforeEach(async () => {
      nats = await startSecuredNatsServer();
      privateNats.set(nats.server.url, nats);
    });
    afterEach(async () => {
      privateNats.delete(nats.server.url);
      await nats.stop();
    });

    async function pair(bucket: string, ttlSeconds: number) {
      const [a1, a2] = await Promise.all([
        agent({ natsUrl: nats.server.url, bucket }),
        agent({ natsUrl: nats.server.url, bucket }),
      ]);
      const addrs = [a1.address, a2.address];
      const first = candidate({
        id: 'first',
        agents: addrs,
        elections: ['nats'],
        ttlSeconds,
        actEveryMs: 20,
      });
      await waitFor('first leads', async () => first.leads('nats'), 30_000, 50);
      const second = candidate({
        id: 'second',
        agents: addrs,
        elections: ['nats'],
        ttlSeconds,
        actEveryMs: 20,
      });
      await waitFor('second started', async () => second.events({ event: 'started' }).length > 0, 30_000, 50);
      return { first, second };
    }

    /** Every sampled action lies inside its term in the KV history, and terms never overlap. */
    async function assertSafe(bucket: string, cands: CandidateProcess[], skewMs: number): Promise<void> {
      const kv = await new Kvm(await natsConn(nats.server.url)).open(bucket);
      const terms = new Map<number, { holder: string; start: number; end: number; released: boolean }>();
      for await (const e of await kv.history({ key: 'nats' })) {
        if (e.operation !== 'PUT') continue;
        const r = leaseRecordSchema.parse(e.json());
        terms.set(r.token, {
          holder: r.holder,
          start: r.acquiredAtMs,
          end: r.leaseExpiresAtMs,
          released: r.released,
        });
      }
      const tokens = [...terms.keys()].sort((x, y) => x - y);
      for (let i = 1; i < tokens.length; i++) {
        const prev = terms.get(tokens[i - 1]!)!;
        expect(terms.get(tokens[i]!)!.start).toBeGreaterThanOrEqual(prev.end + (prev.released ? 0 : skewMs));
      }
      const acts = cands.flatMap((c) => c.events({ event: 'act', election: 'nats' }));
      expect(acts.length).toBeGreaterThan(0);
      for (const act of acts) {
        const term = terms.get(act.token!);
        expect(term?.holder).toBe(act.candidate);
        expect(act.at).toBeGreaterThanOrEqual(term!.start);
        expect(act.at).toBeLessThan(term!.end);
      }
      expect(actingOverlap(timeline(cands, 'nats'))).toBeNull();
    }

    it('a quick restart: leases survive (same leader, same token) or expire safely', async () => {
      const bucket = ELECTIONS;
      const { first, second } = await pair(bucket, 4);
      const { leader, standby, settledAt } = await settledRoles(first, second, 'nats', 1);
      const before = (await kvRecord(await natsConn(nats.server.url), bucket, 'nats'))!;
      expect(before.holder).toBe(leader.id);
      const deposedBefore = leader.events({ event: 'deposed' }).length;

      await nats.server.restart({ hard: true, downMs: 300 });
      const restartedAt = Date.now();
      // The election is served again: the leader's lease renewed through the restarted server, or a
      // term granted after it (the same again, or the standby's once the leader's lease ran out).
      await waitFor(
        'a lease told after the restart',
        async () => [first, second].some((c) => c.events({ event: 'lease' }).some((e) => e.at > restartedAt)),
        30_000,
        50,
      );

      const after = (await kvRecord(await natsConn(nats.server.url), bucket, 'nats'))!;
      // The file store kept the record through SIGKILL: the token did not go back.
      expect(after.token).toBeGreaterThanOrEqual(before.token);
      const deposed = leader.events({ event: 'deposed' }).slice(deposedBefore);
      const survived = deposed.length === 0;
      if (survived) {
        expect(after).toMatchObject({ holder: leader.id, token: before.token });
        expect(standby.events({ event: 'elected' }).filter((e) => e.at > settledAt)).toEqual([]);
      } else {
        expect(deposed[0]!.reason).toBe('renew-deadline');
      }
      process.stderr.write(
        `[election] NATS restart with 4 s TTL: lease ${survived ? 'survived' : 'expired safely'}\n`,
      );
      await waitFor(
        'a leader after the restart',
        async () => first.leads('nats') || second.leads('nats'),
        15_000,
        50,
      );
      await assertSafe(bucket, [first, second], 200);
    });

    it('an outage longer than the TTL: the leader steps down by itself, nobody leads meanwhile, a leader returns after', async () => {
      const bucket = ELECTIONS;
      const { first, second } = await pair(bucket, 2);
      const { leader } = await settledRoles(first, second, 'nats', 1);
      const before = (await kvRecord(await natsConn(nats.server.url), bucket, 'nats'))!;
      const deposedBefore = leader.events({ event: 'deposed' }).length;

      await nats.server.halt({ hard: true });
      const haltedAt = Date.now();
      await waitFor(
        'the leader steps down by itself',
        async () => leader.events({ event: 'deposed' }).length > deposedBefore,
        30_000,
        50,
      );
      const deposed = leader.events({ event: 'deposed' }).slice(deposedBefore);
      expect(deposed).toHaveLength(1);
      expect(deposed[0]!.reason).toBe('renew-deadline');
      // It stopped acting as leader before its lease (as last renewed) could have passed to anyone:
      // its last act lies before that lease's end by the agent's clock. (When the step-down timer
      // ran is no safety property: isLeader() turns false at the deadline whether or not it ran.)
      const lastLease = leader
        .events({ event: 'lease' })
        .filter((e) => e.at <= deposed[0]!.at)
        .at(-1)!;
      const actsOfTerm = leader.events({ event: 'act', election: 'nats' }).filter((e) => e.token === deposed[0]!.token);
      expect(actsOfTerm.length).toBeGreaterThan(0);
      expect(actsOfTerm.at(-1)!.at).toBeLessThan(lastLease.leaseExpiresAtMs!);
      // The outage outlasts the lease and the skew margin; nobody leads meanwhile, nobody is granted a term.
      await waitFor('the last lease expired', async () => Date.now() > lastLease.leaseExpiresAtMs! + 200, 30_000, 50);
      expect(first.leads('nats') || second.leads('nats')).toBe(false);
      expect(timeline([first, second], 'nats').filter((e) => e.event === 'elected' && e.at > haltedAt)).toEqual([]);

      await nats.server.start();
      await waitFor(
        'a leader after the outage',
        async () => first.leads('nats') || second.leads('nats'),
        20_000,
        50,
      );
      const after = (await kvRecord(await natsConn(nats.server.url), bucket, 'nats'))!;
      expect(after.token).toBeGreaterThanOrEqual(before.token);
      await assertSafe(bucket, [first, second], 200);
    });
  });
});
