import { connect } from '@nats-io/transport-node';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { MAX_NOTIFICATION_BYTES } from '@defender/contracts';
import { describeWithInfra, startSecuredNatsServer, waitFor } from '@defender/infra-harness';
import { lastMessageId, NotificationReader, publishOnce, watchNotifications } from './notifications';
import { ensureStreams, STREAMS } from './streams';
import { StreamMissingError } from './errors';

// Each test has its own nats-server (TLS and users, as production runs it; the fixture's user plays
// publisher and defender): the stream names and subjects are fixed.
describeWithInfra(['nats'], 'notification streams against a real nats-server', () => {
  it('creates the streams idempotently (concurrently), reads a chamber by sequence, wakes on new runs, dedupes events', async () => {
    const srv = await startSecuredNatsServer();
    const nc = await connect(srv.connectOptions());
    try {
      await Promise.all([ensureStreams(nc), ensureStreams(nc), ensureStreams(nc)]);
      const jsm = await jetstreamManager(nc);
      const info = await jsm.streams.info(STREAMS.notifications);
      expect(info.config).toMatchObject({ subjects: ['dc.*.*.completed', 'dc.*.*.event'], allow_direct: true, storage: 'file', retention: 'limits' });

      const js = jetstream(nc);
      const notices: [string, number][] = [];
      const feed = await watchNotifications(nc, (subject, seq) => notices.push([subject, seq]));
      for (const [t, c] of [['t1', 'c1'], ['t1', 'c2'], ['t1', 'c1'], ['t2', 'c1'], ['t1', 'c1']]) {
        await js.publish(`dc.${t}.${c}.completed`, JSON.stringify({ t, c }));
      }
      await expect(js.publish('dc.t1.c1.started', 'x')).rejects.toThrow();
      // A notification larger than MAX_NOTIFICATION_BYTES is refused at publication (bad input stays
      // at the edge, and a dead letter never has to carry it).
      expect(info.config.max_msg_size).toBe(MAX_NOTIFICATION_BYTES);
      await expect(js.publish('dc.t9.c9.completed', new Uint8Array(MAX_NOTIFICATION_BYTES + 1))).rejects.toThrow();

      const reader = await NotificationReader.open(nc);
      const seqs: number[] = [];
      for (let from = 1; ; ) {
        const m = await reader.next('dc.t1.c1.completed', from);
        if (!m) break;
        seqs.push(m.sequence);
        from = m.sequence + 1;
      }
      expect(seqs).toEqual([1, 3, 5]);
      expect(await reader.lastSequence()).toBe(5);

      await waitFor('five notices', async () => notices.length === 5, 30_000);
      expect(notices.map(([, s]) => s)).toEqual([1, 2, 3, 4, 5]);
      expect(notices[1]![0]).toBe('dc.t1.c2.completed');
      await feed.stop();

      expect(await lastMessageId(nc, STREAMS.defenseEvents, 'defense.alarms.t1.c1')).toBeUndefined();
      expect(await publishOnce(nc, 'defense.alarms.t1.c1', '{"a":1}', 'alarm-t1:c1-3-nelson1')).toBe(true);
      expect(await publishOnce(nc, 'defense.alarms.t1.c1', '{"a":1}', 'alarm-t1:c1-3-nelson1')).toBe(false);
      expect((await jsm.streams.info(STREAMS.defenseEvents)).state.messages).toBe(1);
      expect(await publishOnce(nc, 'defense.alarms.t1.c2', '{"a":2}', 'alarm-t1:c2-4-nelson1')).toBe(true);
      expect(await lastMessageId(nc, STREAMS.defenseEvents, 'defense.alarms.t1.c1')).toBe('alarm-t1:c1-3-nelson1');
      expect(await lastMessageId(nc, STREAMS.defenseEvents, 'defense.alarms.t1.c2')).toBe('alarm-t1:c2-4-nelson1');
      expect(await publishOnce(nc, 'dc.dead.invalid-json', 'x', 'dead-7')).toBe(true);
      expect((await jsm.streams.info(STREAMS.deadLetters)).state.messages).toBe(1);
    } finally {
      await nc.close();
      await srv.stop();
    }
  });

  it('a stream recreated after NATS lost its store has another identity, and its sequences restart at 1', async () => {
    const srv = await startSecuredNatsServer();
    const nc = await connect({ ...srv.connectOptions(), maxReconnectAttempts: -1, reconnectTimeWait: 100 });
    try {
      await ensureStreams(nc);
      const js = jetstream(nc);
      for (let i = 0; i < 3; i++) await js.publish('dc.t.c.completed', String(i));
      const reader = await NotificationReader.open(nc);
      const first = await reader.streamId();
      // Callers asking at once share requests, and every answer is the stream's as it is.
      expect(await Promise.all([reader.streamId(), reader.streamId(), reader.streamId()])).toEqual([first, first, first]);
      expect((await reader.next('dc.t.c.completed', 3))?.sequence).toBe(3);

      await srv.server.restart({ emptyStore: true });
      const missing = await waitForValue(() => reader.streamId().then(() => undefined, (err: unknown) => (err instanceof StreamMissingError ? err : undefined)));
      expect(missing).toMatchObject({ name: 'StreamMissingError', retryable: true, stream: STREAMS.notifications });
      expect(await reader.next('dc.t.c.completed', 1).catch((err: unknown) => err)).toMatchObject({ retryable: true });

      await ensureStreams(nc);
      const second = await reader.streamId();
      expect(second).not.toBe(first);
      expect((await js.publish('dc.t.c.completed', 'again')).seq).toBe(1);
      expect((await reader.next('dc.t.c.completed', 1))?.sequence).toBe(1);
    } finally {
      await nc.close();
      await srv.stop();
    }
  });

  it('the feed resumes without gaps after a NATS restart', async () => {
    const srv = await startSecuredNatsServer();
    const nc = await connect({ ...srv.connectOptions(), maxReconnectAttempts: -1, reconnectTimeWait: 100 });
    try {
      await ensureStreams(nc);
      const seen: number[] = [];
      const feed = await watchNotifications(nc, (_s, seq) => seen.push(seq));
      const js = jetstream(nc);
      await js.publish('dc.t.c.completed', '1');
      await waitFor('first', async () => seen.length === 1, 30_000);
      await srv.server.restart({ hard: true });
      await waitFor('publish after restart', async () => {
        try {
          await js.publish('dc.t.c.completed', String(seen.length + 1));
          return true;
        } catch {
          return false;
        }
      }, 20_000, 200);
      await waitFor('second', async () => seen.length >= 2, 20_000);
      expect(seen.slice(0, 2)).toEqual([1, 2]);
      await feed.stop();
    } finally {
      await nc.close();
      await srv.stop();
    }
  });
});

/** Polls `f` until it returns a value (NATS reconnecting after a restart answers with transport errors first). */
async function waitForValue<T>(f: () => Promise<T | undefined>): Promise<T> {
  let found: T | undefined;
  await waitFor(
    'a value',
    async () => {
      found = await f().catch(() => undefined);
      return found !== undefined;
    },
    30_000,
    100,
  );
  return found as T;
}
