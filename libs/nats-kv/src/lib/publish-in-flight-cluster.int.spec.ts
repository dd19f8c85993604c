import type { NatsConnection } from '@nats-io/nats-core';
import { connect } from '@nats-io/transport-node';
import { jetstream, jetstreamManager, StorageType, type PubAck } from '@nats-io/jetstream';
import { describeWithInfra, NatsClusterHandle, startNatsCluster, waitFor } from '@defender/infra-harness';
import { NatsUnavailableError } from './errors';
import { publishStored, type StoredAck } from './notifications';

/**
 * A publication retried while its first attempt is still an uncommitted proposal of the stream's
 * leader (a leader cut off from its replicas, a client connected to it): nats-server 2.10 answers the
 * retry with a duplicate acknowledgement at sequence 0, although the stream does not hold the message
 * and, once that leader is deposed, never will. Taken as "stored", an alarm or a run is lost: the
 * nats-cluster chaos suite lost alarms (outbox marked published) and runs (a publisher that took the
 * answer as its acknowledgement) this way on 2.10.27. `publishStored` resolves only at a real sequence.
 */
describeWithInfra(['nats'], 'publication of a message whose first attempt is still in flight (3-node NATS cluster)', () => {
  let cluster: NatsClusterHandle;
  let nc: NatsConnection;

  beforeAll(async () => {
    cluster = await startNatsCluster({ nodes: 3, partitionable: true });
    nc = await connect({ servers: cluster.urls, maxReconnectAttempts: -1, reconnectTimeWait: 100, timeout: 5000 });
  }, 120_000);

  afterAll(async () => {
    await nc?.close().catch(() => undefined);
    await cluster?.stop();
  });

  it('is not acknowledged until the stream holds it; once the leader is back among its peers the retry stores it exactly once', async () => {
    const jsm = await jetstreamManager(nc, { timeout: 10_000 });
    await waitFor('PUBS created', async () => !!(await jsm.streams.add({ name: 'PUBS', subjects: ['pubs.>'], num_replicas: 3, storage: StorageType.File })), 60_000, 500);
    // A new replicated stream answers publications only once its leader is elected ("no responders" before).
    await cluster.waitStreamCurrent(nc, 'PUBS');
    await jetstream(nc).publish('pubs.a', 'before', { msgID: 'before' });
    const leader = await cluster.waitStreamCurrent(nc, 'PUBS');

    // A client of the leader only: cut from its peers, the leader still takes the client's publications.
    const lonely = await connect({ servers: leader.url, maxReconnectAttempts: 0, timeout: 5000 });
    try {
      leader.partition();
      const js = jetstream(lonely);
      // The first attempt: proposed, never committed (no quorum), so no acknowledgement.
      await expect(js.publish('pubs.a', 'alarm', { msgID: 'alarm-1', timeout: 1000 })).rejects.toThrow();
      // The retry, while the first is in flight: not an acknowledgement, whatever the server answers.
      await expect(publishStored(js, 'pubs.a', 'alarm', 'alarm-1', { timeout: 1000 })).rejects.toBeInstanceOf(NatsUnavailableError);
      // What the server answered to such a retry (2.10: a duplicate at sequence 0; or no answer).
      const raw = await js.publish('pubs.a', 'alarm', { msgID: 'alarm-1', timeout: 1000 }).catch((err: unknown) => err as Error);
      if (!(raw instanceof Error)) expect(raw).toMatchObject<Partial<PubAck>>({ seq: 0, duplicate: true });
    } finally {
      leader.heal();
      await lonely.close().catch(() => undefined);
    }

    // The caller retries as the outbox does (outage: later, again) until the stream holds it.
    let stored: StoredAck | undefined;
    await waitFor(
      'alarm-1 stored',
      async () => {
        stored = await publishStored(jetstream(nc), 'pubs.a', 'alarm', 'alarm-1', { timeout: 2000 });
        return true;
      },
      90_000,
      250,
    );
    expect(stored?.seq).toBeGreaterThan(1);
    await cluster.waitStreamCurrent(nc, 'PUBS');
    const ids: string[] = [];
    const last = (await jsm.streams.info('PUBS')).state.last_seq;
    for (let seq = 1; seq <= last; seq++) {
      const m = await jsm.streams.getMessage('PUBS', { seq }).catch(() => null);
      if (m) ids.push(m.header?.get('Nats-Msg-Id') ?? '');
    }
    expect(ids).toEqual(['before', 'alarm-1']);
    const at = await jsm.streams.getMessage('PUBS', { seq: stored?.seq ?? 0 });
    expect(at?.header?.get('Nats-Msg-Id')).toBe('alarm-1');
  }, 180_000);
});
