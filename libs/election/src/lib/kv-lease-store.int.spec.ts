import type { NatsConnection } from '@nats-io/nats-core';
import { connect } from '@nats-io/transport-node';
import { Kvm } from '@nats-io/kv';
import { describeWithInfra, SecuredNatsServer, startSecuredNatsServer, testNatsConnectOptions, waitFor } from '@defender/infra-harness';
import { CorruptLeaseRecordError, LeaseStoreUnavailableError, RevisionConflictError } from './errors';
import { KvLeaseStore, MAX_LEASE_RECORD_BYTES } from './kv-lease-store';
import { LeaderView, LeaseRecord } from './lease';
import { ElectionAuthority } from './server/election-authority';
import { LeaderWatchHub } from './server/leader-watch-hub';

const record = (over: Partial<LeaseRecord> = {}): LeaseRecord => ({
  v: 1,
  holder: 'a',
  token: 1,
  acquiredAtMs: 1,
  renewedAtMs: 1,
  leaseExpiresAtMs: 2,
  ttlMs: 1,
  released: false,
  ...over,
});

/** The election agents' bucket (ELECTION_KV_BUCKET's default): the only one their NATS user may write. */
const ELECTIONS = 'elections';
let bucketSeq = 0;
const freshBucket = () => `elections-test-${process.pid}-${++bucketSeq}`;

/** How long a watch test waits for a view before it fails: a hang guard, not a figure under test (a lease of 1 s expires, then the hub's timer and a busy machine's scheduling). */
const WATCH_GUARD_MS = 30_000;

describeWithInfra(['nats'], 'KvLeaseStore on a real NATS KV bucket', () => {
  const connections: NatsConnection[] = [];
  // The run's server (TLS, the fixture's user: the buckets are named per test), or a private one (TLS,
  // deploy/nats/auth.conf's users) as the election agent's user on its bucket, ELECTIONS.
  const conn = async (server?: SecuredNatsServer) => {
    const nc = await connect({ ...(server ? server.connectOptions('election-agent') : testNatsConnectOptions()), maxReconnectAttempts: -1, reconnectTimeWait: 100 });
    connections.push(nc);
    return nc;
  };
  afterAll(async () => {
    await Promise.all(connections.map((nc) => nc.close()));
  });

  it('creates, reads and replaces records only by compare-and-set on the revision', async () => {
    const bucket = freshBucket();
    const store = await KvLeaseStore.open(await conn(), { bucket, history: 5 });
    expect(await store.get('e')).toEqual({ record: null, revision: 0 });

    const r1 = await store.create('e', record());
    expect(await store.get('e')).toEqual({ record: record(), revision: r1 });
    await expect(store.create('e', record({ holder: 'b' }))).rejects.toBeInstanceOf(RevisionConflictError);

    const r2 = await store.update('e', record({ token: 2 }), r1);
    expect(r2).toBeGreaterThan(r1);
    await expect(store.update('e', record({ token: 3 }), r1)).rejects.toBeInstanceOf(RevisionConflictError);
    expect((await store.get('e')).record?.token).toBe(2);

    // The bucket has no TTL: leases are judged by the agents' clocks, never aged out by the server.
    const kv = await new Kvm(await conn()).open(bucket);
    expect((await kv.status()).ttl).toBe(0);
  });

  it('the bucket refuses a value over MAX_LEASE_RECORD_BYTES, also one an older agent created without a limit; the largest record fits', async () => {
    const nc = await conn();
    const bucket = freshBucket();
    const older = await new Kvm(nc).create(bucket, { history: 10 });
    expect((await older.status()).maxValueSize).toBe(-1);
    const store = await KvLeaseStore.open(nc, { bucket });
    expect((await (await new Kvm(nc).open(bucket)).status()).maxValueSize).toBe(MAX_LEASE_RECORD_BYTES);
    // Every field at its longest: the holder at the 128 characters the agent accepts.
    const largest = record({ holder: 'h'.repeat(128), token: Number.MAX_SAFE_INTEGER, acquiredAtMs: Number.MAX_SAFE_INTEGER, renewedAtMs: Number.MAX_SAFE_INTEGER, leaseExpiresAtMs: Number.MAX_SAFE_INTEGER, ttlMs: Number.MAX_SAFE_INTEGER });
    expect(JSON.stringify(largest).length).toBeLessThan(1000);
    await expect(store.create('e', largest)).resolves.toBeGreaterThan(0);
    await expect(older.put('big', 'x'.repeat(MAX_LEASE_RECORD_BYTES + 1))).rejects.toThrow(/message size exceeds maximum allowed/);
  });

  it('reports a deleted key with the marker revision, and refuses to re-create it blindly', async () => {
    const nc = await conn();
    const bucket = freshBucket();
    const store = await KvLeaseStore.open(nc, { bucket });
    const authority = new ElectionAuthority({ store, clockSkewMs: 0 });
    for (const c of ['a', 'b', 'c']) {
      const r = await authority.campaign({ election: 'e', candidate: c, ttlMs: 1_000 });
      await authority.release({ election: 'e', candidate: c, fencingToken: r.view.fencingToken });
    }
    const before = await store.get('e');
    expect(before.record?.token).toBe(3);
    const kv = await new Kvm(nc).open(bucket);
    await kv.delete('e');
    const snap = await store.get('e');
    expect(snap.record).toBeNull();
    expect(snap.revision).toBeGreaterThan(before.revision);
    await expect(store.create('e', record({ token: 1 }))).rejects.toBeInstanceOf(RevisionConflictError);
    // The authority continues above the marker: tokens never go back.
    const next = await authority.campaign({ election: 'e', candidate: 'z', ttlMs: 1_000 });
    expect(next.view.fencingToken).toBe(snap.revision + 1);
    expect(next.view.fencingToken).toBeGreaterThan(3);
  });

  it('refuses a corrupt record instead of guessing', async () => {
    const nc = await conn();
    const bucket = freshBucket();
    const store = await KvLeaseStore.open(nc, { bucket });
    const kv = await new Kvm(nc).open(bucket);
    await kv.put('bad', '{"v":1,"holder":"a"}');
    await kv.put('worse', 'not json');
    await expect(store.get('bad')).rejects.toBeInstanceOf(CorruptLeaseRecordError);
    await expect(store.get('worse')).rejects.toThrow(/not JSON/);
  });

  it('concurrent agents on separate connections never grant one term twice', async () => {
    const bucket = freshBucket();
    const agents = await Promise.all(
      [0, 1, 2, 3].map(
        async () =>
          new ElectionAuthority({ store: await KvLeaseStore.open(await conn(), { bucket }), clockSkewMs: 0 }),
      ),
    );
    const tokens: number[] = [];
    for (let round = 0; round < 15; round++) {
      // Every agent campaigns at once for its own candidate; the CAS lets exactly one through.
      const results = await Promise.all(
        agents.map((a, i) => a.campaign({ election: 'race', candidate: `c${i}`, ttlMs: 60_000 })),
      );
      const winners = results.filter((r) => r.isLeader);
      expect(winners).toHaveLength(1);
      const token = winners[0]!.view.fencingToken;
      expect(results.every((r) => r.view.fencingToken === token)).toBe(true);
      tokens.push(token);
      const released = await agents[round % 4]!.release({
        election: 'race',
        candidate: winners[0]!.view.leader!,
        fencingToken: token,
      });
      expect(released.released).toBe(true);
    }
    expect(tokens).toEqual(Array.from({ length: 15 }, (_, i) => i + 1));
  });

  it('fails fast with LeaseStoreUnavailableError when the connection is down', async () => {
    const server = await startSecuredNatsServer();
    try {
      const nc = await conn(server);
      let up = true;
      const store = await KvLeaseStore.open(nc, {
        bucket: ELECTIONS,
        timeoutMs: 500,
        isConnected: () => up,
      });
      await store.create('e', record());
      await server.server.halt();
      up = false;
      await expect(store.get('e')).rejects.toBeInstanceOf(LeaseStoreUnavailableError);
      up = true; // believes it is up, but the server is gone: the request times out
      await expect(store.get('e')).rejects.toBeInstanceOf(LeaseStoreUnavailableError);
    } finally {
      await server.stop();
    }
  });

  it('after NATS lost its store: the bucket is created again and an agent goes on granting tokens above the last it saw', async () => {
    const server = await startSecuredNatsServer();
    try {
      const nc = await conn(server);
      const recreated: string[] = [];
      const bucket = ELECTIONS;
      const store = await KvLeaseStore.open(nc, { bucket, timeoutMs: 1000, onBucketRecreated: (b) => recreated.push(b) });
      let now = 1_000_000;
      const authority = new ElectionAuthority({ store, clockSkewMs: 0, now: () => now });
      for (const candidate of ['a', 'b', 'c']) {
        await authority.campaign({ election: 'e', candidate, ttlMs: 1000 });
        now += 5000;
      }
      expect((await authority.getLeader('e')).fencingToken).toBe(3);

      await server.server.restart({ emptyStore: true });
      let granted: Awaited<ReturnType<ElectionAuthority['campaign']>> | undefined;
      await waitFor(
        'a grant after the bucket came back',
        async () => {
          granted = await authority.campaign({ election: 'e', candidate: 'd', ttlMs: 1000 }).catch((err: unknown) => {
            if (!(err instanceof LeaseStoreUnavailableError)) throw err;
            return undefined;
          });
          return granted !== undefined;
        },
        30_000,
        200,
      );
      expect(recreated).toEqual([bucket]);
      expect(granted).toMatchObject({ kind: 'granted', isLeader: true });
      expect(granted?.view.fencingToken).toBe(4);
    } finally {
      await server.stop();
    }
  });

  it('LeaderWatchHub reports terms, releases and expiries (by timer, without any write), across a NATS restart', async () => {
    const server = await startSecuredNatsServer();
    const hubs: LeaderWatchHub[] = [];
    try {
      const bucket = ELECTIONS;
      const store = await KvLeaseStore.open(await conn(server), { bucket });
      const authority = new ElectionAuthority({ store, clockSkewMs: 100 });
      const hub = new LeaderWatchHub({ store, resyncMs: 200 });
      hubs.push(hub);
      const seen: LeaderView[] = [];
      const unsubscribe = hub.subscribe('w', (v) => seen.push(v));
      await waitFor('initial view', async () => seen.length === 1, WATCH_GUARD_MS, 20);
      expect(seen[0]).toMatchObject({ state: 'none' });

      const a = await authority.campaign({ election: 'w', candidate: 'a', ttlMs: 1_000 });
      await waitFor('held', async () => seen.at(-1)?.state === 'held', WATCH_GUARD_MS, 20);
      await authority.renew({ election: 'w', candidate: 'a', fencingToken: a.view.fencingToken }); // not a change
      await waitFor('expired', async () => seen.at(-1)?.state === 'expired', WATCH_GUARD_MS, 20);
      expect(seen.map((v) => `${v.state}:${v.leader ?? '-'}:${v.fencingToken}`)).toEqual([
        'none:-:0',
        'held:a:1',
        'expired:-:1',
      ]);

      await server.server.restart({ hard: true, downMs: 200 });
      await waitFor(
        'a campaign after the restart',
        async () => (await authority.campaign({ election: 'w', candidate: 'b', ttlMs: 5_000 })).isLeader,
        15_000,
        200,
      );
      await waitFor('b held', async () => seen.at(-1)?.leader === 'b', WATCH_GUARD_MS, 20);
      expect(seen.at(-1)).toMatchObject({ state: 'held', fencingToken: 2 });
      await authority.release({ election: 'w', candidate: 'b', fencingToken: 2 });
      await waitFor('released', async () => seen.at(-1)?.state === 'released', WATCH_GUARD_MS, 20);

      unsubscribe();
      expect(hub.size()).toBe(0);
    } finally {
      hubs.forEach((h) => h.close());
      await server.stop();
    }
  });
});
