import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import type { KV } from '@nats-io/kv';
import { describeWithInfra, testNatsUrl } from '@defender/infra-harness';
import { openBucket } from './buckets';
import { ClaimLostError, PoolExhaustedError } from './errors';
import { StableIdRegistry } from './stable-ids';

describeWithInfra(['nats'], 'StableIdRegistry against a real nats-server', () => {
  let nc: NatsConnection;
  let kv: KV;
  let bucketNo = 0;
  let bucket: string;

  beforeAll(async () => {
    nc = await connect({ servers: testNatsUrl() });
  });
  afterAll(async () => {
    await nc.drain();
  });
  beforeEach(async () => {
    bucket = `stable-ids-t${++bucketNo}`;
    kv = await openBucket(nc, bucket);
  });

  const registry = (ownerId: string, over: Partial<{ maxDefenders: number; intervalSeconds: number; now: () => number }> = {}) =>
    new StableIdRegistry(kv, { maxDefenders: 3, intervalSeconds: 2, ownerId, ...over }, bucket);

  it('hands out the lowest free IDs, and refuses when the pool is full', async () => {
    const got = [];
    for (const owner of ['a', 'b', 'c']) got.push(await registry(owner).claim());
    expect(got.map((c) => [c.defenderId, c.generation, c.how])).toEqual([
      ['defender-0', 0, 'free'],
      ['defender-1', 0, 'free'],
      ['defender-2', 0, 'free'],
    ]);
    await expect(registry('d').claim()).rejects.toBeInstanceOf(PoolExhaustedError);
    await expect(registry('d').claim()).rejects.toThrow('all 3 stable IDs (defender-0..defender-2) are claimed by live defenders');
  });

  it('gives distinct IDs to concurrent claimers', async () => {
    const regs = Array.from({ length: 12 }, (_, i) => registry(`owner-${i}`, { maxDefenders: 20 }));
    const ids = (await Promise.all(regs.map((r) => r.claim()))).map((c) => c.n).sort((a, b) => a - b);
    expect(ids).toEqual(Array.from({ length: 12 }, (_, i) => i));
  });

  it('a released ID is taken again by the next claimer (rolling update keeps IDs)', async () => {
    const a = registry('pod-a');
    const b = registry('pod-b');
    expect((await a.claim()).defenderId).toBe('defender-0');
    expect((await b.claim()).defenderId).toBe('defender-1');
    await a.release();
    expect((await registry('pod-a2').claim()).defenderId).toBe('defender-0');
  });

  it('the next holder of a released ID continues its generation (found by the chaos suite: restart-after-takeover)', async () => {
    // A pod takes a crashed predecessor's stale ID over (generation 1), then is replaced cleanly,
    // as in the next rolling update. Its successor must not restart at generation 0: under the same
    // map its owner epochs would be lower than its predecessor's and every write fenced.
    let skewMs = 0;
    const now = () => Date.now() + skewMs;
    await registry('crashed', { now, maxDefenders: 1 }).claim();
    skewMs = 3 * 2000 + 500;
    const taker = registry('taker', { now, maxDefenders: 1 });
    expect(await taker.claim()).toMatchObject({ defenderId: 'defender-0', how: 'stale', generation: 1 });
    await taker.release();
    const successor = registry('successor', { now, maxDefenders: 1 });
    expect(await successor.claim()).toMatchObject({ defenderId: 'defender-0', how: 'free', generation: 2 });
    expect((await successor.refresh()).generation).toBe(2);
    // Released twice (a clean restart of the successor too): still increasing.
    await successor.release();
    expect(await registry('third', { now, maxDefenders: 1 }).claim()).toMatchObject({ how: 'free', generation: 3 });
  });

  it('the same owner (a restarted container of one pod) gets its own ID back at once', async () => {
    await registry('pod-uid-1').claim();
    await registry('pod-uid-2').claim();
    const again = await registry('pod-uid-1').claim();
    expect(again).toMatchObject({ defenderId: 'defender-0', how: 'own', generation: 1 });
  });

  it('a live claim is kept; a claim unrefreshed for 3 intervals is taken over, and its old owner learns it lost it', async () => {
    let skewMs = 0;
    const now = () => Date.now() + skewMs;
    const old = registry('old', { now });
    await old.claim();
    await old.refresh();
    const newcomer = registry('new', { now, maxDefenders: 1 });
    await expect(newcomer.claim()).rejects.toBeInstanceOf(PoolExhaustedError);

    skewMs = 3 * 2000 + 500; // the newcomer's clock says 6.5 s passed since the last refresh
    expect(await newcomer.claim()).toMatchObject({ defenderId: 'defender-0', how: 'stale', generation: 1 });
    await expect(old.refresh()).rejects.toBeInstanceOf(ClaimLostError);
    // The loser's release must not delete the newcomer's claim.
    await old.release();
    expect((await newcomer.refresh()).defenderId).toBe('defender-0');
  });

  it('keeps the claim when an earlier refresh was applied without its reply (found by the chaos suite: store outage)', async () => {
    // A refresh reaches the server, but its reply is lost (a request timeout while the event loop was
    // blocked by a synchronous SQLite busy wait): the stored revision moved past the one we hold.
    // Nobody else holds the ID, so the next refresh must keep it, not report it taken over (exit 4).
    const reg = registry('pod-a');
    const held = await reg.claim();
    const entry = await kv.get(held.defenderId);
    await kv.update(held.defenderId, entry!.string(), entry!.revision);
    const refreshed = await reg.refresh();
    expect(refreshed).toMatchObject({ defenderId: 'defender-0', generation: 0 });
    expect(refreshed.revision).toBeGreaterThan(entry!.revision + 1);
    expect((await reg.refresh()).revision).toBeGreaterThan(refreshed.revision);
    // Another holder (a takeover, or this pod's own restart with a higher generation) still means lost.
    const now = () => Date.now() + 3 * 2000 + 500;
    expect(await registry('pod-b', { now }).claim()).toMatchObject({ defenderId: 'defender-0', how: 'stale', generation: 1 });
    await expect(reg.refresh()).rejects.toBeInstanceOf(ClaimLostError);
  });

  it('treats an unreadable claim as stale only after the staleness window', async () => {
    await kv.put('defender-0', 'garbage');
    await expect(registry('x', { maxDefenders: 1 }).claim()).rejects.toBeInstanceOf(PoolExhaustedError);
    const later = registry('x', { maxDefenders: 1, now: () => Date.now() + 7000 });
    expect(await later.claim()).toMatchObject({ defenderId: 'defender-0', how: 'stale' });
  });
});
