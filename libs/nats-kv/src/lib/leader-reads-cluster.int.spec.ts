import type { NatsConnection } from '@nats-io/nats-core';
import { connect } from '@nats-io/transport-node';
import { jetstream, jetstreamManager, StorageType } from '@nats-io/jetstream';
import { describeWithInfra, NatsClusterHandle, startNatsCluster, waitFor } from '@defender/infra-harness';
import { mapKvError, NatsUnavailableError } from './errors';
import { NotificationReader } from './notifications';
import { getFromLeader } from './leader-reads';
import { Kvm } from '@nats-io/kv';

/**
 * Findings 5 and 6 (docs/chaos/findings.md): reads that decide something (a chamber's next run, the
 * assignment map's chunks) must get what the stream's leader holds, never a replica's copy, which
 * may be behind or, caught up around a leader change, hold other messages at a sequence. Here a
 * replica is cut off while the majority stores new values.
 */
/** `fn`'s result, retried for up to 60 s while it fails with what the apps treat as a NATS outage; any other error ends it. */
async function outageRetried<T>(what: string, fn: () => Promise<T>): Promise<T> {
  let out: { v: T } | { err: unknown } | undefined;
  let outage: unknown;
  await waitFor(
    what,
    async () => {
      try {
        out = { v: await fn() };
      } catch (err) {
        if (mapKvError(err, 'maps-r3', what) instanceof NatsUnavailableError) {
          outage = err;
          return false;
        }
        out = { err };
      }
      return true;
    },
    60_000,
    250,
  ).catch((err: unknown) => {
    throw outage ?? err;
  });
  if (!out) throw new Error(`${what}: no result`);
  if ('err' in out) throw out.err;
  return out.v;
}

describeWithInfra(['nats'], 'leader reads on a partitioned 3-node NATS cluster', () => {
  let cluster: NatsClusterHandle;
  let nc: NatsConnection;

  beforeAll(async () => {
    cluster = await startNatsCluster({ nodes: 3, partitionable: true });
    nc = await connect({ servers: cluster.urls.slice(1), maxReconnectAttempts: -1, reconnectTimeWait: 100, timeout: 5000 });
  }, 120_000);

  afterAll(async () => {
    await nc?.close().catch(() => undefined);
    await cluster?.stop();
  });

  /** Steps `stream`'s leader down until it is not n0 (the node the tests cut off must be a replica). */
  async function leaderAwayFromN0(stream: string): Promise<void> {
    await waitFor(
      `n0 a replica of ${stream}`,
      async () => {
        if ((await cluster.streamLeader(nc, stream))?.name !== 'n0') return true;
        await nc.request(`$JS.API.STREAM.LEADER.STEPDOWN.${stream}`, undefined, { timeout: 2000 }).catch(() => undefined);
        return false;
      },
      60_000,
      500,
    );
  }

  it('a reader connected to a cut-off replica gets no answer (retry later), never the replica\'s stale copy; healed, it reads what the majority stored', async () => {
    const jsm = await jetstreamManager(nc);
    // Configured as the product's notification stream is: direct gets allowed (other readers use them).
    // Retried: a fresh cluster may time out creating its first replicated stream on a busy machine.
    await waitFor(
      'NOTES created',
      async () => !!(await jsm.streams.add({ name: 'NOTES', subjects: ['dc.*.*.completed'], num_replicas: 3, storage: StorageType.File, allow_direct: true })),
      60_000,
      500,
    );
    // A new replicated stream answers publications only once its leader is elected ("no responders" before).
    await cluster.waitStreamCurrent(nc, 'NOTES');
    const js = jetstream(nc);
    const subject = 'dc.t1.c1.completed';
    for (let i = 0; i < 3; i++) await js.publish(subject, `run-${i}`);
    await cluster.waitStreamCurrent(nc, 'NOTES');
    // n0 must be a replica, not the leader, when it is cut off.
    await leaderAwayFromN0('NOTES');
    const replica = cluster.node('n0');
    const lonely = await connect({ servers: replica.url, timeout: 5000 });
    try {
      const lonelyReader = await NotificationReader.open(lonely, 'NOTES');
      expect((await lonelyReader.next(subject, 3))?.data).toEqual(new TextEncoder().encode('run-2'));

      replica.partition();
      await waitFor(
        'runs 4 and 5 stored by the majority',
        async () => {
          await js.publish(subject, 'run-3', { msgID: 'run-3' });
          await js.publish(subject, 'run-4', { msgID: 'run-4' });
          return true;
        },
        60_000,
        200,
      );
      // The replica still holds seq 1-3 and would answer "nothing after 3 yet" from its copy; the
      // reader goes to the leader, which the replica cannot reach: an outage, not an answer.
      await expect(lonelyReader.next(subject, 4)).rejects.toBeInstanceOf(NatsUnavailableError);

      replica.heal();
      let m: Awaited<ReturnType<NotificationReader['next']>> = null;
      await waitFor(
        'the healed replica\'s reader sees run 4',
        async () => {
          m = await lonelyReader.next(subject, 4).catch(() => null);
          return m !== null;
        },
        90_000,
        250,
      );
      expect(m).toMatchObject({ sequence: 4, data: new TextEncoder().encode('run-3') });
    } finally {
      replica.heal();
      await lonely.close();
    }
  });

  it('a KV read through a cut-off replica fails (retry later) instead of answering from the replica\'s stale copy; healed, it gets the value', async () => {
    let kv: Awaited<ReturnType<Kvm['create']>> | undefined;
    await waitFor('maps-r3 created', async () => !!(kv = await new Kvm(nc).create('maps-r3', { history: 5, replicas: 3 })), 60_000, 500);
    if (!kv) throw new Error('unreachable');
    const bucket = kv;
    // The bucket's stream answers writes only once its leader is elected ("no responders" before).
    await cluster.waitStreamCurrent(nc, 'KV_maps-r3');
    await bucket.put('head', 'v1');
    await cluster.waitStreamCurrent(nc, 'KV_maps-r3');
    await leaderAwayFromN0('KV_maps-r3');
    const replica = cluster.node('n0');
    const lonely = await connect({ servers: replica.url, timeout: 5000 });
    try {
      // As the apps open their buckets (create: direct gets where the stream allows them).
      const lonelyKv = await new Kvm(lonely).open('maps-r3', { allow_direct: true });
      replica.partition();
      let r2 = 0;
      await waitFor('v2 stored by the majority', async () => (r2 = await bucket.put('head', 'v2')) > 0, 60_000, 200);
      // The replica's own answer (a direct get) may be its stale copy, v1, a map the majority
      // replaced (or nothing, once it stops answering direct gets: timing). The leader read cannot
      // reach the leader: always an error, retried.
      await expect(getFromLeader(lonelyKv, 'head')).rejects.toThrow();
      await expect(getFromLeader(lonelyKv, 'head', { revision: r2 })).rejects.toThrow();

      replica.heal();
      let e: Awaited<ReturnType<typeof getFromLeader>> = null;
      await waitFor('the healed replica\'s client reads v2 from the leader', async () => (e = await getFromLeader(lonelyKv, 'head', { revision: r2 }).catch(() => null)) !== null, 90_000, 250);
      expect(e).toMatchObject({ key: 'head', revision: r2, operation: 'PUT' });
      expect(new TextDecoder().decode(e!.value)).toBe('v2');
      // The rejoined node's term can depose the leader once more after the heal ("JetStream system
      // temporarily unavailable", seen in a fresh-clone CI with CPU hogs): an outage the apps retry
      // (mapKvError: NatsUnavailableError), so these reads retry it too; any other error or answer counts.
      const read = (key: string, opts?: { revision: number }) => outageRetried(`get ${key}`, () => getFromLeader(bucket, key, opts));
      // Another key's revision is not this key's value; a missing revision is null.
      await outageRetried('put other', () => bucket.put('other', 'x'));
      expect(await read('other', { revision: r2 })).toBeNull();
      expect(await read('head', { revision: 10_000 })).toBeNull();
      expect(new TextDecoder().decode((await read('head'))!.value)).toBe('v2');
      // A bucket NATS lost is an outage (retried; whoever needs it creates it again), never a crash.
      await waitFor('KV_maps-r3 deleted', async () => (await jetstreamManager(nc)).streams.delete('KV_maps-r3'), 60_000, 500);
      await expect(getFromLeader(bucket, 'head')).rejects.toBeInstanceOf(NatsUnavailableError);
    } finally {
      replica.heal();
      await lonely.close();
    }
  });
});
