import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import { DeliverPolicy, jetstream, jetstreamManager, type StreamConfig } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { deployNatsAuthorization, describeWithInfra, parseNatsAuthorization, startSecuredNatsServer, type SecuredNatsServer } from '@defender/infra-harness';
import { AssignmentMapBucket } from './assignment-map';
import { listKeys, openBucket, recreateBucketIfMissing } from './buckets';
import { HeartbeatBucket } from './heartbeats';
import { bigMap } from './testing/big-map';
import { lastMessageId, NotificationReader, publishOnce, publishStored, watchNotifications } from './notifications';
import { NATS_ROLES, type NatsRole } from './permissions';
import { ensureStreams, STREAMS } from './streams';
import { jsApi, trySubscribe, type ApiOutcome } from './testing/jetstream-api';
import { justifiedPublish, partsOf, POLICY, type AppRole, type StreamPolicy } from './testing/permission-policy';

const NS = 1_000_000_000;
const inbox = (user: string) => `_INBOX_${user}`;

describe('deploy/nats/auth.conf against the permission matrix (issue 50)', () => {
  const users = parseNatsAuthorization(deployNatsAuthorization());

  it('has one user per NATS role, named after it', () => {
    expect(users.map((u) => [u.user, u.role])).toEqual(NATS_ROLES.map((r) => [r, r]));
  });

  it.each(NATS_ROLES)('%s: publishes exactly to what the matrix justifies (no wildcard beyond it) and subscribes to its own inbox only', (role) => {
    const u = users.find((x) => x.user === role)!;
    const justified = justifiedPublish(role);
    expect({ unjustified: u.publish.filter((s) => !justified.has(s)), missing: [...justified.keys()].filter((s) => !u.publish.includes(s)) }).toEqual({ unjustified: [], missing: [] });
    expect(u.subscribe).toEqual([`${inbox(role)}.>`]);
  });
});

describeWithInfra(['nats'], 'the permission matrix on a real nats-server with TLS and deploy/nats/auth.conf (issue 50)', () => {
  let nats: SecuredNatsServer;
  let fixture: NatsConnection;
  const conns = new Map<NatsRole, NatsConnection>();
  const as = (role: NatsRole) => conns.get(role)!;
  const configs = new Map<string, StreamConfig>();
  const allowed = (role: NatsRole, who: readonly AppRole[]) => partsOf(role).some((p) => who.includes(p));

  beforeAll(async () => {
    nats = await startSecuredNatsServer();
    fixture = await connect(nats.connectOptions());
    for (const role of NATS_ROLES) conns.set(role, await connect(nats.connectOptions(role)));
    // Everything exists with one message, set up by the unrestricted fixture user.
    await ensureStreams(fixture);
    for (const name of ['stable-ids', 'defender-heartbeats', 'defender-assignments', 'elections']) await openBucket(fixture, name, { history: 5 });
    const js = jetstream(fixture);
    for (const p of Object.values(POLICY)) for (const { sample } of p.subjects) await js.publish(sample, JSON.stringify({ by: 'fixture' }));
    const jsm = await jetstreamManager(fixture);
    for (const p of Object.values(POLICY)) configs.set(p.stream, (await jsm.streams.info(p.stream)).config);
  }, 120_000);

  afterAll(async () => {
    for (const nc of [...conns.values(), fixture]) await nc?.close();
    await nats?.stop();
  });

  /**
   * A consumer as an ordered consumer makes it: ephemeral, no acks, filtered, gone when idle. From new
   * messages only, so a next-message request is answered at once (404, no messages).
   */
  const consumerRequest = (p: StreamPolicy, name: string) => ({
    stream_name: p.stream,
    config: { name, ack_policy: 'none', deliver_policy: 'new', filter_subject: p.subjects[0]!.sample, inactive_threshold: 120 * NS, mem_storage: true, num_replicas: 1 },
  });
  const createConsumer = (nc: NatsConnection, p: StreamPolicy, name: string) => jsApi(nc, `$JS.API.CONSUMER.CREATE.${p.stream}.${name}.${p.subjects[0]!.sample}`, consumerRequest(p, name));

  /** Each JetStream API operation on a stream, whom the matrix allows it, and its request. */
  const streamOperations = (p: StreamPolicy): [string, readonly AppRole[], (nc: NatsConnection) => Promise<ApiOutcome>][] => {
    const s = p.stream;
    const sample = p.subjects[0]!.sample;
    const api = (nc: NatsConnection, sub: string, body?: unknown) => jsApi(nc, `$JS.API.${sub}`, body);
    return [
      ['STREAM.INFO', p.readers, (nc) => api(nc, `STREAM.INFO.${s}`)],
      ['STREAM.MSG.GET', p.readers, (nc) => api(nc, `STREAM.MSG.GET.${s}`, { last_by_subj: sample })],
      ['DIRECT.GET', p.readers, (nc) => api(nc, `DIRECT.GET.${s}`, { last_by_subj: sample })],
      ['DIRECT.GET by subject', p.readers, (nc) => api(nc, `DIRECT.GET.${s}.${sample}`)],
      ['STREAM.CREATE (same configuration)', p.provisioners, (nc) => api(nc, `STREAM.CREATE.${s}`, configs.get(s))],
      ['STREAM.UPDATE (same configuration)', p.updaters, (nc) => api(nc, `STREAM.UPDATE.${s}`, configs.get(s))],
      ['STREAM.DELETE', [], (nc) => api(nc, `STREAM.DELETE.${s}`)],
      ['STREAM.PURGE', [], (nc) => api(nc, `STREAM.PURGE.${s}`)],
      ['STREAM.MSG.DELETE', [], (nc) => api(nc, `STREAM.MSG.DELETE.${s}`, { seq: 1 })],
      ['STREAM.SNAPSHOT', [], (nc) => api(nc, `STREAM.SNAPSHOT.${s}`, { deliver_subject: `${inbox('x')}.snapshot` })],
      ['STREAM.RESTORE', [], (nc) => api(nc, `STREAM.RESTORE.${s}`, { config: configs.get(s), state: {} })],
      ['STREAM.PEER.REMOVE', [], (nc) => api(nc, `STREAM.PEER.REMOVE.${s}`, { peer: 'x' })],
      ['STREAM.LEADER.STEPDOWN', [], (nc) => api(nc, `STREAM.LEADER.STEPDOWN.${s}`)],
      ['CONSUMER.CREATE (ordered, named)', p.consumers, (nc) => createConsumer(nc, p, `probe_${Math.random().toString(36).slice(2, 10)}`)],
      ['CONSUMER.CREATE (unnamed, legacy)', [], (nc) => api(nc, `CONSUMER.CREATE.${s}`, { stream_name: s, config: { ack_policy: 'none', inactive_threshold: 60 * NS } })],
      ['CONSUMER.DURABLE.CREATE', [], (nc) => api(nc, `CONSUMER.DURABLE.CREATE.${s}.rogue`, { stream_name: s, config: { durable_name: 'rogue', ack_policy: 'explicit' } })],
      ['CONSUMER.INFO', p.consumers, (nc) => api(nc, `CONSUMER.INFO.${s}.probe`)],
      ['CONSUMER.MSG.NEXT', p.consumers, (nc) => api(nc, `CONSUMER.MSG.NEXT.${s}.probe`, { batch: 1, no_wait: true })],
      ['CONSUMER.LIST', [], (nc) => api(nc, `CONSUMER.LIST.${s}`)],
      ['CONSUMER.NAMES', [], (nc) => api(nc, `CONSUMER.NAMES.${s}`)],
      ['CONSUMER.LEADER.STEPDOWN', [], (nc) => api(nc, `CONSUMER.LEADER.STEPDOWN.${s}.probe`)],
      // Last: it removes the consumer the operations above use (set up again for the next role).
      ['CONSUMER.DELETE', p.consumers, (nc) => api(nc, `CONSUMER.DELETE.${s}.probe`)],
    ];
  };

  /** What went otherwise than the matrix says, one line each (empty: as it says). */
  const check = (role: NatsRole, what: string, mayDo: boolean, got: ApiOutcome): string[] => {
    if (!mayDo) return got.kind === 'denied' ? [] : [`${role} ${what}: expected a permission violation, got ${JSON.stringify(got).slice(0, 200)}`];
    if (got.kind === 'denied') return [`${role} ${what}: refused (${got.message}) though the matrix allows it`];
    // An allowed operation works, but for a direct get of a stream without direct gets (no responder).
    if (got.kind === 'answered' && got.body.error) return [`${role} ${what}: allowed but failed: ${JSON.stringify(got.body.error)}`];
    return [];
  };

  it.each(Object.keys(POLICY))('%s: every JetStream API operation is allowed to whom the matrix allows it and refused to every other role', async (key) => {
    const p = POLICY[key]!;
    const wrong: string[] = [];
    for (const role of NATS_ROLES) {
      for (const [what, who, run] of streamOperations(p)) {
        // Each operation meets a fresh consumer for the consumer operations to name, with nothing
        // pending (the probes' publications would otherwise be waiting in it).
        await jsApi(fixture, `$JS.API.CONSUMER.DELETE.${p.stream}.probe`);
        const setup = await createConsumer(fixture, p, 'probe');
        expect(setup).toMatchObject({ kind: 'answered', body: { name: 'probe' } });
        wrong.push(...check(role, `${what} on ${p.stream}`, allowed(role, who), await run(as(role))));
      }
      for (const { sample } of p.subjects) {
        const pub = jetstream(as(role)).publish(sample, JSON.stringify({ by: role }));
        const got: ApiOutcome = await pub.then(
          () => ({ kind: 'answered', body: {} }) as const,
          (err: Error) => (/Permissions Violation for Publish/.test(err.message) ? { kind: 'denied', message: err.message } : { kind: 'answered', body: { error: { code: 0, description: err.message } } }),
        );
        wrong.push(...check(role, `publish to ${sample}`, allowed(role, p.writers), got));
      }
    }
    // Nothing the refused operations asked for happened: the stream and its configuration are intact.
    const info = await (await jetstreamManager(fixture)).streams.info(p.stream);
    expect({ wrong, config: info.config.max_msgs, messages: info.state.messages > 0 }).toEqual({ wrong: [], config: configs.get(p.stream)!.max_msgs, messages: true });
  }, 120_000);

  it('account-wide operations: account info for every role; listing streams, templates, stepping down leaders, removing servers, purging the account and creating a stream of its own for none', async () => {
    const wrong: string[] = [];
    for (const role of NATS_ROLES) {
      wrong.push(...check(role, 'INFO', true, await jsApi(as(role), '$JS.API.INFO')));
      for (const [sub, body] of [
        ['STREAM.NAMES', {}],
        ['STREAM.LIST', {}],
        ['STREAM.TEMPLATE.NAMES', {}],
        ['STREAM.TEMPLATE.CREATE.rogue', { name: 'rogue', max_streams: 1, config: { subjects: ['rogue.*'] } }],
        ['META.LEADER.STEPDOWN', {}],
        ['SERVER.REMOVE', { peer: 'x' }],
        ['ACCOUNT.PURGE.$G', {}],
        [`STREAM.CREATE.rogue-${role}`, { name: `rogue-${role}`, subjects: [`rogue.${role}.>`], storage: 'memory', num_replicas: 1 }],
      ] as const) {
        wrong.push(...check(role, sub, false, await jsApi(as(role), `$JS.API.${sub}`, body)));
      }
    }
    expect(wrong).toEqual([]);
  });

  it.each(NATS_ROLES)('%s subscribes to its own inbox only: not to every subject, the runs, the events, the buckets, the API, the shared inbox or another role\'s', async (role) => {
    const other = role === 'dashboard' ? 'defender' : 'dashboard';
    const refused = ['>', 'dc.>', 'defense.>', '$KV.>', '$JS.API.>', '_INBOX.>', `${inbox(other)}.>`];
    const got = Object.fromEntries(await Promise.all([...refused, `${inbox(role)}.probe`].map(async (s) => [s, await trySubscribe(as(role), s)] as const)));
    expect(got).toEqual({ ...Object.fromEntries(refused.map((s) => [s, 'denied'])), [`${inbox(role)}.probe`]: 'allowed' });
  });

  it('issue 50\'s attacks fail: the equipment cannot shrink the alarm history, the dashboard cannot add a stream or consumers on the notifications, a provisioner\'s create cannot reshape a stream', async () => {
    const jsm = await jetstreamManager(fixture);
    const before = (await jsm.streams.info(STREAMS.defenseEvents)).state.messages;
    const cfg = configs.get(STREAMS.defenseEvents)!;
    expect(await jsApi(as('publisher'), `$JS.API.STREAM.UPDATE.${STREAMS.defenseEvents}`, { ...cfg, max_msgs: 1 })).toMatchObject({ kind: 'denied' });
    expect(await jsApi(as('dashboard'), '$JS.API.STREAM.CREATE.dashboard-own', { name: 'dashboard-own', subjects: ['own.>'], storage: 'memory', num_replicas: 1 })).toMatchObject({ kind: 'denied' });
    expect(await createConsumer(as('dashboard'), POLICY['notifications']!, 'dash')).toMatchObject({ kind: 'denied' });
    // The provisioner's right: a create naming an existing stream with other settings is refused by the server.
    const reshaped = await jsApi(as('defender'), `$JS.API.STREAM.CREATE.${STREAMS.defenseEvents}`, { ...cfg, max_msgs: 1 });
    expect(reshaped).toMatchObject({ kind: 'answered', body: { error: { err_code: 10058 } } });
    const after = await jsm.streams.info(STREAMS.defenseEvents);
    expect({ messages: after.state.messages, maxMsgs: after.config.max_msgs }).toEqual({ messages: before, maxMsgs: cfg.max_msgs });
  });

  it('each role does its own job with these permissions', async () => {
    // defender: the streams and its buckets with their limits, a claim, a dead letter, an alarm, the notification feed and reads.
    const d = as('defender');
    await ensureStreams(d);
    const ids = await openBucket(d, 'stable-ids', { maxValueBytes: 4096, applyLimit: true });
    await ids.put('defender-0', JSON.stringify({ owner: 'pod-a' }));
    await openBucket(d, 'defender-heartbeats', { maxValueBytes: 32 * 1024, applyLimit: true });
    expect(await listKeys(ids, 'stable-ids')).toContain('defender-0');
    expect(await publishOnce(d, 'dc.dead.bad-payload', JSON.stringify({ reason: 'probe' }), 'dead-1')).toBe(true);
    expect(await publishOnce(d, 'defense.alarms.tool9.ch1', JSON.stringify({ runId: 'r1' }), 'alarm-r1')).toBe(true);
    expect(await lastMessageId(d, STREAMS.defenseEvents, 'defense.alarms.tool9.ch1')).toBe('alarm-r1');
    const seen: string[] = [];
    const feed = await watchNotifications(d, (subject) => void seen.push(subject));
    // publisher: a run notification, the stream's info, the alarm feed (fab-sim's report).
    const pub = as('publisher');
    await (await jetstreamManager(pub)).streams.info(STREAMS.notifications);
    const { seq } = await publishStored(jetstream(pub), 'dc.tool9.ch1.completed', JSON.stringify({ runId: 'r1' }), 'tool9:ch1:r1');
    const alarm = await (await jetstream(pub).consumers.get(STREAMS.defenseEvents, { deliver_policy: DeliverPolicy.Last })).next({ expires: 5000 });
    expect(alarm?.json()).toEqual({ runId: 'r1' });
    await waitUntil(() => seen.includes('dc.tool9.ch1.completed'));
    await feed.stop();
    expect((await (await NotificationReader.open(d)).next('dc.tool9.ch1.completed', 1))?.sequence).toBe(seq);
    // controller: the map's bucket with its limit, a map published; the heartbeats read.
    const c = as('controller');
    const maps = new AssignmentMapBucket(await openBucket(c, 'defender-assignments', { history: 5, maxValueBytes: 1024 * 1024, applyLimit: true }), 'defender-assignments');
    const map = { ...bigMap(1, 0, 0, '7'), controllerId: 'c-7', defenderCount: 1, chamberCount: 1, assignments: { 'tool1:ch1': 'defender-0' }, defenderInfo: { 'defender-0': { chambers: 1, weight: 30_000, capacity: 1 } } };
    await maps.publish(map, await maps.lastRevision() || null);
    // (The probes' writes are the bucket's only entry, not a heartbeat: read and reported as such.)
    expect((await new HeartbeatBucket(await openBucket(c, 'defender-heartbeats'), 'defender-heartbeats').readAll()).bad.map((b) => b.key)).toEqual(['probe']);
    // defenders, controllers and the dashboard read and watch the map.
    for (const role of ['defender', 'controller', 'dashboard'] as const) {
      const bucket = new AssignmentMapBucket(await openBucket(as(role), 'defender-assignments', { history: 5 }), 'defender-assignments');
      expect((await bucket.read())?.map.controllerId).toBe('c-7');
      const w = await (await new Kvm(as(role)).open('defender-assignments')).watch();
      w.stop();
    }
    // election agent: its bucket, a lease record, a watch; the dashboard reads it.
    const e = as('election-agent');
    const elections = await new Kvm(e).create('elections', { history: 5 });
    await elections.put('leader', JSON.stringify({ holder: 'a' }));
    (await elections.watch({ key: 'leader' })).stop();
    expect((await (await new Kvm(as('dashboard')).open('elections')).get('leader'))?.json()).toEqual({ holder: 'a' });
  }, 60_000);

  it('the store-loss recovery (issue 22) works with these rights: defenders re-create the streams and cluster buckets, controllers the cluster buckets, election agents theirs', async () => {
    const jsm = await jetstreamManager(fixture);
    for (const s of [STREAMS.notifications, STREAMS.defenseEvents, 'KV_stable-ids', 'KV_defender-assignments', 'KV_elections']) await jsm.streams.delete(s);
    await ensureStreams(as('defender'));
    expect(await recreateBucketIfMissing(as('defender'), 'stable-ids')).toBe(true);
    expect(await recreateBucketIfMissing(as('controller'), 'defender-assignments', { history: 5 })).toBe(true);
    await new Kvm(as('election-agent')).create('elections', { history: 5 });
    // Nobody else may: the dashboard and the equipment create nothing.
    await jsm.streams.delete('KV_defender-heartbeats');
    for (const role of ['dashboard', 'publisher', 'election-agent'] as const) {
      await expect(recreateBucketIfMissing(as(role), 'defender-heartbeats')).rejects.toThrow(/Permissions Violation/);
    }
    expect(await recreateBucketIfMissing(as('controller'), 'defender-heartbeats')).toBe(true);
    const names = (await jsm.streams.names().next()).sort();
    expect(names).toEqual(['KV_defender-assignments', 'KV_defender-heartbeats', 'KV_elections', 'KV_stable-ids', 'dc-dead-letters', 'dc-notifications', 'defense-events']);
  }, 60_000);
});

async function waitUntil(cond: () => boolean, timeoutMs = 30_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}
