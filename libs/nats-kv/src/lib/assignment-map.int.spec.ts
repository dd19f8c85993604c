import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import { AssignmentMap } from '@defender/contracts';
import { describeWithInfra, startNatsServer, testNatsUrl, waitFor } from '@defender/infra-harness';
import { ASSIGNMENT_MAP_KEY, AssignmentMapBucket, StoredMap } from './assignment-map';
import { openBucket } from './buckets';
import { NatsUnavailableError, RevisionConflictError } from './errors';
import { HeartbeatBucket } from './heartbeats';

const T = '2026-11-25T10:00:00.000Z';

function mapV(version: number, token: string, owner = 'defender-0'): AssignmentMap {
  return {
    schema: 1,
    version,
    timestamp: T,
    state: 'STABLE',
    lifecycleState: 'stable',
    firstAssignmentAt: T,
    fencingToken: token,
    controllerId: `c-${token}`,
    trigger: 'planned_scale',
    defenderCount: 1,
    chamberCount: 1,
    assignments: { 'tool1:ch1': owner },
    lastMovedAt: {},
    defenderInfo: { [owner]: { chambers: 1, weight: 30_000, capacity: 1 } },
    statistics: {
      minChambersPerDefender: 1,
      maxChambersPerDefender: 1,
      avgChambersPerDefender: 1,
      minWeightPerDefender: 30_000,
      maxWeightPerDefender: 30_000,
      avgWeightPerDefender: 30_000,
      weightVariancePercent: 0,
      calculationDurationMs: 0.1,
      chambersMoved: 0,
      movedWeight: 0,
      movedWeightFraction: 0,
      floorFraction: 0,
    },
  };
}

describeWithInfra(['nats'], 'AssignmentMapBucket and HeartbeatBucket against a real nats-server', () => {
  let nc: NatsConnection;
  let n = 0;

  beforeAll(async () => {
    nc = await connect({ servers: testNatsUrl() });
  });
  afterAll(async () => {
    await nc.drain();
  });

  async function bucket(): Promise<AssignmentMapBucket> {
    const name = `assign-t${++n}`;
    return new AssignmentMapBucket(await openBucket(nc, name), name);
  }

  it('publishes only by compare-and-set: two writers from one revision -> exactly one wins', async () => {
    const b = await bucket();
    expect(await b.read()).toBeNull();
    const r1 = await b.publish(mapV(1, '5'), null);
    await expect(b.publish(mapV(1, '6'), null)).rejects.toBeInstanceOf(RevisionConflictError);

    const results = await Promise.allSettled([b.publish(mapV(2, '5'), r1), b.publish(mapV(2, '6'), r1)]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const lost = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect(lost.reason).toBeInstanceOf(RevisionConflictError);
    expect((await b.read())?.map.version).toBe(2);
  });

  it('watch delivers newer maps in order and rejects older versions, lower tokens and garbage', async () => {
    const name = `assign-t${++n}`;
    const kv = await openBucket(nc, name);
    const b = new AssignmentMapBucket(kv, name);
    const seen: StoredMap[] = [];
    const rejected: string[] = [];
    const w = await b.watch({ onMap: (s) => void seen.push(s), onRejected: (_rev, reason) => rejected.push(reason) });

    let rev = await b.publish(mapV(1, '5'), null);
    rev = await b.publish(mapV(2, '5'), rev);
    rev = await kv.put(ASSIGNMENT_MAP_KEY, '{"not":"a map"}');
    rev = await b.publish(mapV(3, '4'), rev); // a deposed leader's map (lower token)
    rev = await b.publish(mapV(2, '6'), rev); // not newer than v2
    await b.publish(mapV(3, '6'), rev);

    await waitFor('the last map', async () => seen.length === 3, 5000);
    w.stop();
    await w.done;
    expect(seen.map((s) => [s.map.version, s.map.fencingToken])).toEqual([
      [1, '5'],
      [2, '5'],
      [3, '6'],
    ]);
    expect(rejected).toHaveLength(3);
    expect(rejected[0]).toMatch(/invalid assignment map/);
    expect(rejected[1]).toMatch(/map v3 \(token 4\) is not newer than v2 \(token 5\)/);
  });

  it('heartbeats: publish, read all, report a malformed entry without failing', async () => {
    const name = `hb-t${++n}`;
    const kv = await openBucket(nc, name);
    const hb = new HeartbeatBucket(kv, name);
    const base = {
      schema: 1 as const,
      state: 'STABLE' as const,
      mapVersionSeen: 2,
      load: { chambers: 3, inflight: 0, processedTotal: 10 },
      intervalSeconds: 2,
      startedAt: T,
      sentAt: T,
    };
    await hb.publish({ ...base, defenderId: 'defender-1' });
    await hb.publish({ ...base, defenderId: 'defender-0' });
    await kv.put('defender-2', 'not json');
    await kv.put('defender-3', JSON.stringify({ ...base, defenderId: 'defender-9' }));
    await hb.remove('defender-1');
    await hb.publish({ ...base, defenderId: 'defender-4' });
    const { heartbeats, bad } = await hb.readAll();
    expect(heartbeats.map((h) => h.heartbeat.defenderId)).toEqual(['defender-0', 'defender-4']);
    expect(heartbeats[0]!.storedAt).toBeInstanceOf(Date);
    expect(bad.map((b) => [b.key, b.reason])).toEqual([
      ['defender-2', 'invalid-json'],
      ['defender-3', 'defenderId defender-9 does not match the key'],
    ]);
  });

  it('heartbeats: read all lists each defender once while heartbeats keep landing', async () => {
    // nats.js's key lister (a consumer) listed a key rewritten during the listing twice, and at
    // times never settled: seen as a duplicate defender and as a 150 s hang in membership tests.
    const name = `hb-t${++n}`;
    const hb = new HeartbeatBucket(await openBucket(nc, name), name);
    const ids = Array.from({ length: 8 }, (_, i) => `defender-${i}`);
    const beat = (defenderId: string) =>
      hb.publish({
        schema: 1,
        defenderId,
        state: 'FOLLOWER',
        mapVersionSeen: 0,
        load: { chambers: 0, inflight: 0, processedTotal: 0 },
        intervalSeconds: 1,
        startedAt: T,
        sentAt: new Date().toISOString(),
      });
    await Promise.all(ids.map(beat));
    let writing = true;
    const writer = (async () => {
      for (let i = 0; writing; i++) await beat(ids[i % ids.length]!);
    })();
    try {
      for (let round = 0; round < 40; round++) {
        const { heartbeats, bad } = await hb.readAll();
        expect(bad).toEqual([]);
        expect(heartbeats.map((h) => h.heartbeat.defenderId)).toEqual(ids);
      }
    } finally {
      writing = false;
      await writer;
    }
  });

  it('a NATS outage surfaces as a retryable NatsUnavailableError and heals without a new connection', async () => {
    const srv = await startNatsServer();
    const c = await connect({ servers: srv.url, maxReconnectAttempts: -1, reconnectTimeWait: 100, timeout: 1000 });
    try {
      const kv = await openBucket(c, 'outage');
      const b = new AssignmentMapBucket(kv, 'outage');
      const r1 = await b.publish(mapV(1, '1'), null);
      await srv.halt();
      const err = await b.publish(mapV(2, '1'), r1).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(NatsUnavailableError);
      expect((err as NatsUnavailableError).retryable).toBe(true);
      await srv.start();
      await waitFor('publish after recovery', async () => {
        try {
          await b.publish(mapV(2, '1'), r1);
          return true;
        } catch (e) {
          if (e instanceof NatsUnavailableError) return false;
          throw e;
        }
      }, 20_000, 200);
      expect((await b.read())?.map.version).toBe(2);
    } finally {
      await c.close();
      await srv.stop();
    }
  });
});
