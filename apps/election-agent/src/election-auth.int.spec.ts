import * as grpc from '@grpc/grpc-js';
import { describeWithInfra, freePort, spawnTsApp, testNatsEnv, testNatsUrl, waitFor } from '@defender/infra-harness';
import { ElectionClient } from '@defender/election';
import { AGENT_ENTRY, AgentProcess, Harness } from './testing/cluster';

// The agents run from source on the run's nats-server as the fixture (each test's bucket has its own
// name), on loopback: issue 50 is about who may call a loopback agent and what a caller learns.
const harness: Harness = { spawnTsApp, freePort, waitFor, natsEnv: () => testNatsEnv() };
const TOKEN = 'auth-test-shared-token-0123456789';
let seq = 0;
const bucket = () => `elections-auth-${process.pid}-${++seq}`;

describeWithInfra(['nats'], 'election-agent: a token on loopback too; what GetLeader tells is not enough to Release (issue 50)', () => {
  jest.setTimeout(300_000);
  const agents: AgentProcess[] = [];
  const clients: ElectionClient[] = [];
  const client = (opts: ConstructorParameters<typeof ElectionClient>[0]) => {
    const c = new ElectionClient(opts);
    clients.push(c);
    return c;
  };
  afterEach(async () => {
    clients.splice(0).forEach((c) => c.close());
    await Promise.all(agents.splice(0).map((a) => a.proc.stop('SIGTERM')));
  });

  it('refuses to start on loopback without a token (exit 2, naming the variable and the development flag); with ELECTION_DEV_NO_AUTH=true it serves without one', async () => {
    const base = {
      HTTP_HOST: '127.0.0.1',
      HTTP_PORT: String(await freePort()),
      GRPC_HOST: '127.0.0.1',
      GRPC_PORT: String(await freePort()),
      ...testNatsEnv(),
      ELECTION_KV_BUCKET: bucket(),
    };
    const refused = spawnTsApp(AGENT_ENTRY, base);
    expect((await refused.exited).code).toBe(2);
    expect(refused.stderr()).toContain('  - ELECTION_AUTH_TOKEN: is required, also on loopback');
    expect(refused.stderr()).toContain('ELECTION_DEV_NO_AUTH=true');

    const dev = await AgentProcess.start(harness, { natsUrl: testNatsUrl(), bucket: base.ELECTION_KV_BUCKET, env: { ELECTION_DEV_NO_AUTH: 'true' } });
    agents.push(dev);
    expect(await client({ addresses: [dev.address] }).campaign({ election: 'dev', candidate: 'c', ttlMs: 5_000 })).toMatchObject({ isLeader: true });
  });

  it('with a token on loopback: no token or a wrong one is UNAUTHENTICATED for every call, the token works', async () => {
    const a = await AgentProcess.start(harness, { natsUrl: testNatsUrl(), bucket: bucket(), env: { ELECTION_AUTH_TOKEN: TOKEN } });
    agents.push(a);
    for (const authToken of [undefined, 'wrong-token-0123456789abc']) {
      const c = client({ addresses: [a.address], callTimeoutMs: 2_000, ...(authToken ? { authToken } : {}) });
      await expect(c.getLeader('loop')).rejects.toMatchObject({ code: grpc.status.UNAUTHENTICATED });
      await expect(c.campaign({ election: 'loop', candidate: 'intruder', ttlMs: 5_000 })).rejects.toMatchObject({ code: grpc.status.UNAUTHENTICATED });
    }
    expect(await client({ addresses: [a.address], authToken: TOKEN }).campaign({ election: 'loop', candidate: 'c', ttlMs: 5_000 })).toMatchObject({ isLeader: true });
  });

  it('another caller with the token reads holder and fencing token from GetLeader but can neither release nor renew the term, nor continue it by campaigning as the holder; the holder can', async () => {
    const a = await AgentProcess.start(harness, { natsUrl: testNatsUrl(), bucket: bucket(), env: { ELECTION_AUTH_TOKEN: TOKEN } });
    agents.push(a);
    const holder = client({ addresses: [a.address], authToken: TOKEN });
    const other = client({ addresses: [a.address], authToken: TOKEN });
    const term = await holder.campaign({ election: 'ctl', candidate: 'controller-a', ttlMs: 60_000 });
    expect(term).toMatchObject({ isLeader: true, leader: 'controller-a' });

    const seen = await other.getLeader('ctl');
    expect(seen).toMatchObject({ state: 'held', leader: 'controller-a', fencingToken: term.fencingToken });
    // Everything GetLeader answered, sent back by another process (its own lease key):
    expect(await other.release({ election: 'ctl', candidate: seen.leader!, fencingToken: seen.fencingToken })).toMatchObject({ released: false, leader: { state: 'held', leader: 'controller-a' } });
    expect(await other.renew({ election: 'ctl', candidate: seen.leader!, fencingToken: seen.fencingToken })).toMatchObject({ isLeader: false, leader: 'controller-a' });
    expect(await other.campaign({ election: 'ctl', candidate: seen.leader!, ttlMs: 60_000 })).toMatchObject({ isLeader: false, leader: 'controller-a' });
    // ... or with a guessed key: refused the same way.
    expect(await other.release({ election: 'ctl', candidate: seen.leader!, fencingToken: seen.fencingToken, leaseKey: 'guessed-lease-key-0123456789' })).toMatchObject({ released: false });
    expect(await holder.getLeader('ctl')).toMatchObject({ state: 'held', leader: 'controller-a', fencingToken: term.fencingToken });

    // The holder renews and releases its own term.
    expect(await holder.renew({ election: 'ctl', candidate: 'controller-a', fencingToken: term.fencingToken })).toMatchObject({ isLeader: true });
    expect(await holder.release({ election: 'ctl', candidate: 'controller-a', fencingToken: term.fencingToken })).toMatchObject({ released: true, leader: { state: 'released' } });
  });
});
