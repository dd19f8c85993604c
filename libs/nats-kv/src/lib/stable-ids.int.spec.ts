import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import type { KV } from '@nats-io/kv';
import { describeWithInfra, testNatsConnectOptions } from '@defender/infra-harness';
import { openBucket } from './buckets';
import { ClaimLostError, PoolExhaustedError } from './errors';
import { StableIdOptions, StableIdRegistry } from './stable-ids';

describeWithInfra(['nats'], 'StableIdRegistry against a real nats-server', () => {
  let nc: NatsConnection;
  let kv: KV;
  let bucketNo = 0;
  let bucket: string;
  let testStartMs: number;

  beforeAll(async () => {
    nc = await connect(testNatsConnectOptions());
  });
  afterAll(async () => {
    await nc.drain();
  });
  beforeEach(async () => {
    bucket = `stable-ids-t${++bucketNo}`;
    testStartMs = Date.now();
    kv = await openBucket(nc, bucket);
  });

  type Over = Partial<Pick<StableIdOptions, 'maxDefenders' | 'intervalSeconds' | 'now' | 'monotonicNow' | 'sleep' | 'bucketAgeMs'>>;
  /**
   * A registry whose wall clock stands at the test's start unless `over` says otherwise: a claim
   * made during the test then never looks abandoned by the wall-clock hint, however slowly the
   * machine runs the test (the hint's own tests pass `clocks({ wallOffsetMs })`). Each test's bucket
   * is new, but not one NATS created again after losing its store: it counts as old unless `over`
   * asks the server (the recreated-bucket tests at the end pass `bucketAgeMs: undefined`).
   */
  const registry = (ownerId: string, over: Over = {}) =>
    new StableIdRegistry(kv, { maxDefenders: 3, intervalSeconds: 2, ownerId, now: () => testStartMs, bucketAgeMs: async () => 60_000, ...over }, bucket);

  /**
   * A claimer's clocks: its monotonic clock moves only when it sleeps between looks at a watched
   * claim, and `during` runs what the rest of the cluster does in that time (a live holder
   * refreshing). Its wall clock is the host's, `wallOffsetMs` off (an NTP step). No real waiting:
   * `watchedMs()` counts the claimer's looks (a quarter interval each), not elapsed time, so the
   * bounds on it below hold on a machine of any speed.
   */
  function clocks(opts: { wallOffsetMs?: number; during?: (monoMs: number) => Promise<unknown> } = {}) {
    let mono = 0;
    return {
      now: () => Date.now() + (opts.wallOffsetMs ?? 0),
      monotonicNow: () => mono,
      sleep: async (ms: number) => {
        const before = mono;
        mono += ms;
        // Once per interval of 2 s, as a holder's heartbeat would.
        if (Math.floor(mono / 2000) > Math.floor(before / 2000)) await opts.during?.(mono);
      },
      watchedMs: () => mono,
    };
  }

  it('hands out the lowest free IDs, and refuses when the pool is full', async () => {
    const holders = ['a', 'b', 'c'].map((owner) => registry(owner));
    const got = [];
    for (const h of holders) got.push(await h.claim());
    expect(got.map((c) => [c.defenderId, c.generation, c.how])).toEqual([
      ['defender-0', 0, 'free'],
      ['defender-1', 0, 'free'],
      ['defender-2', 0, 'free'],
    ]);
    // A full pool: the claimer watches every claim until it has seen each one refreshed.
    const live = () => Promise.all(holders.map((h) => h.refresh()));
    await expect(registry('d', clocks({ during: live })).claim()).rejects.toBeInstanceOf(PoolExhaustedError);
    await expect(registry('d', clocks({ during: live })).claim()).rejects.toThrow('all 3 stable IDs (defender-0..defender-2) are claimed by live defenders');
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
    await registry('crashed', { maxDefenders: 1 }).claim();
    const taker = registry('taker', { maxDefenders: 1, ...clocks() });
    expect(await taker.claim()).toMatchObject({ defenderId: 'defender-0', how: 'stale', generation: 1 });
    await taker.release();
    const successor = registry('successor', { maxDefenders: 1 });
    expect(await successor.claim()).toMatchObject({ defenderId: 'defender-0', how: 'free', generation: 2 });
    expect((await successor.refresh()).generation).toBe(2);
    // Released twice (a clean restart of the successor too): still increasing.
    await successor.release();
    expect(await registry('third', { maxDefenders: 1 }).claim()).toMatchObject({ how: 'free', generation: 3 });
  });

  it('the same owner (a restarted container of one pod) gets its own ID back at once', async () => {
    await registry('pod-uid-1').claim();
    await registry('pod-uid-2').claim();
    const again = await registry('pod-uid-1').claim();
    expect(again).toMatchObject({ defenderId: 'defender-0', how: 'own', generation: 1 });
  });

  it('a live claim is kept; a claim unrefreshed for 3 intervals is taken over, and its old owner learns it lost it', async () => {
    const old = registry('old');
    await old.claim();
    await old.refresh();
    await expect(registry('new', { maxDefenders: 1, ...clocks({ during: () => old.refresh() }) }).claim()).rejects.toBeInstanceOf(PoolExhaustedError);

    // The old holder stops refreshing: after 3 intervals of an unchanged revision on the newcomer's
    // monotonic clock (and not before), the claim is stale: at the first look past the window.
    const c = clocks();
    const newcomer = registry('new', { maxDefenders: 1, ...c });
    expect(await newcomer.claim()).toMatchObject({ defenderId: 'defender-0', how: 'stale', generation: 1 });
    expect(c.watchedMs()).toBeGreaterThan(3 * 2000);
    expect(c.watchedMs()).toBeLessThanOrEqual(3 * 2000 + 500);
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
    expect(await registry('pod-b', { maxDefenders: 1, ...clocks() }).claim()).toMatchObject({ defenderId: 'defender-0', how: 'stale', generation: 1 });
    await expect(reg.refresh()).rejects.toBeInstanceOf(ClaimLostError);
  });

  it('treats an unreadable claim as stale only after the staleness window', async () => {
    await kv.put('defender-0', 'garbage');
    const c = clocks();
    expect(await registry('x', { maxDefenders: 1, ...c }).claim()).toMatchObject({ defenderId: 'defender-0', how: 'stale' });
    expect(c.watchedMs()).toBeGreaterThan(3 * 2000);
  });

  describe.each([
    ['+30 s', 30_000],
    ['-30 s', -30_000],
    ['+1 h', 3_600_000],
    ['-1 h', -3_600_000],
  ])('a claimer whose wall clock is %s off', (_label, offsetMs) => {
    it('never takes a live claim over (full pool: refused once the holder is seen refreshing)', async () => {
      const holder = registry('holder', { maxDefenders: 1 });
      await holder.claim();
      const c = clocks({ wallOffsetMs: offsetMs, during: () => holder.refresh() });
      await expect(registry('stepped', { maxDefenders: 1, ...c }).claim()).rejects.toBeInstanceOf(PoolExhaustedError);
      // It watched for one interval of its own clock (until the holder's next refresh), never the
      // staleness window.
      expect(c.watchedMs()).toBeLessThanOrEqual(2000);
      expect(await holder.refresh()).toMatchObject({ defenderId: 'defender-0', generation: 0 });
    });

    it('takes the next free ID beside a live claim, and a dead holder\'s ID only after 3 intervals on its monotonic clock', async () => {
      const live = registry('live', { maxDefenders: 1 });
      await live.claim();
      const c = clocks({ wallOffsetMs: offsetMs, during: () => live.refresh() });
      expect(await registry('joiner', c).claim()).toMatchObject({ defenderId: 'defender-1', how: 'free', generation: 0 });
      expect(c.watchedMs()).toBeLessThanOrEqual(2000);
      expect(await live.refresh()).toMatchObject({ defenderId: 'defender-0' });
      // defender-1's holder dies; a full pool makes the next claimer watch both claims.
      const d = clocks({ wallOffsetMs: offsetMs, during: () => live.refresh() });
      expect(await registry('replacement', { maxDefenders: 2, ...d }).claim()).toMatchObject({ defenderId: 'defender-1', how: 'stale', generation: 1 });
      expect(d.watchedMs()).toBeGreaterThan(3 * 2000);
      expect(await live.refresh()).toMatchObject({ defenderId: 'defender-0', generation: 0 });
    });
  });

  it("a crashed predecessor's lower ID is reused after watching it (the replacement pod of a crash keeps the ID)", async () => {
    const dead = registry('crashed');
    await dead.claim();
    const live = registry('live');
    await live.claim();
    // By the host's clock the crashed claim has not been refreshed for 7 s (longer than the 6 s
    // window): worth watching before taking a free ID. The watch, not the clock, decides.
    const c = clocks({ wallOffsetMs: 7000, during: () => live.refresh() });
    expect(await registry('replacement', c).claim()).toMatchObject({ defenderId: 'defender-0', how: 'stale', generation: 1 });
    expect(c.watchedMs()).toBeGreaterThan(3 * 2000);
    await expect(dead.refresh()).rejects.toBeInstanceOf(ClaimLostError);
    expect(await live.refresh()).toMatchObject({ defenderId: 'defender-1' });
  });

  it('a missing claim is created again by its holder, same generation: nobody took it over', async () => {
    const holder = registry('holder');
    const held = await holder.claim();
    await kv.purge(held.defenderId);
    const again = await holder.refresh();
    expect(again).toMatchObject({ defenderId: 'defender-0', generation: 0 });
    expect((await kv.get('defender-0'))?.json()).toMatchObject({ ownerId: 'holder', generation: 0 });
    // Its next refresh is an ordinary compare-and-set again.
    expect((await holder.refresh()).revision).toBeGreaterThan(again.revision);
  });

  describe('a bucket created again after NATS lost its store (found by the e2e test of that loss)', () => {
    /** NATS lost its store: the bucket is gone and created again, empty, by whoever came first. */
    async function loseAndRecreate(): Promise<void> {
      await kv.destroy();
      kv = await openBucket(nc, bucket);
    }

    it('the server says how old the bucket is (its own clock: ts - created)', async () => {
      const status = await kv.status();
      expect(status.streamInfo.ts).toBeDefined();
    });

    it("a new claimer does not take a live holder's missing ID: it waits, and the holder's refresh creates it again", async () => {
      const holder = registry('holder');
      expect(await holder.claim()).toMatchObject({ defenderId: 'defender-0', generation: 0 });
      await loseAndRecreate();
      // The new claimer looks first, at a bucket younger than the window (3 intervals of 2 s) by the
      // server's clock; the holder, alive, refreshes once an interval meanwhile.
      const c = clocks({ during: () => holder.refresh() });
      const claimer = registry('new', { ...c, bucketAgeMs: undefined });
      expect(await claimer.claim()).toMatchObject({ defenderId: 'defender-1', how: 'free' });
      expect(c.watchedMs()).toBeGreaterThanOrEqual(2000);
      expect(await holder.refresh()).toMatchObject({ defenderId: 'defender-0', generation: 0 });
      expect((await kv.get('defender-0'))?.json()).toMatchObject({ ownerId: 'holder', generation: 0 });
    });

    it('an ID nobody creates again is free once the claimer has watched the young bucket for the window', async () => {
      await loseAndRecreate();
      const c = clocks();
      expect(await registry('new', { ...c, bucketAgeMs: undefined }).claim()).toMatchObject({ defenderId: 'defender-0', how: 'free' });
      expect(c.watchedMs()).toBeGreaterThanOrEqual(3 * 2000);
    });

    it('an old bucket by the server\'s clock: a missing ID is free at once', async () => {
      const c = clocks();
      expect(await registry('new', { ...c, bucketAgeMs: async () => 3 * 2000 }).claim()).toMatchObject({ defenderId: 'defender-0', how: 'free' });
      expect(c.watchedMs()).toBe(0);
    });
  });
});
