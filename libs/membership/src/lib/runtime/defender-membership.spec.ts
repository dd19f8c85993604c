import { DefenderMembership, EXIT_CLAIM_LOST, EXIT_MEMBERSHIP_FAILED, EXIT_POOL_EXHAUSTED, HANG_AFTER_INTERVALS, PULSES_PER_INTERVAL } from './defender-membership';
import { claimOf, FakeCluster, fakeDeps, FakeWork, mapOf, PoolFullError, UnavailableError } from './testing/fake-cluster';

/** Lets pending promise callbacks and immediates run until `cond` holds (nothing here waits on time). */
async function until(cond: () => boolean, what = 'condition'): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (cond()) return;
    await new Promise((r) => setImmediate(r));
  }
  throw new Error(`never happened: ${what}`);
}

/** A membership that claimed defender-0 and watches the map. */
async function started(work: FakeWork | null = new FakeWork()) {
  const cluster = new FakeCluster();
  cluster.claims.push(claimOf(0));
  const f = fakeDeps(cluster, work);
  const m = new DefenderMembership(f.deps);
  const running = m.run();
  await until(() => cluster.watches.length === 1, 'the map watch');
  return { m, cluster, running, ...f };
}

describe('DefenderMembership', () => {
  it('opens the buckets through NATS outages, claims an ID, heartbeats, then watches the map', async () => {
    const cluster = new FakeCluster();
    cluster.opens.push(new UnavailableError('no responders'), new UnavailableError('timeout'));
    cluster.claims.push(new UnavailableError('timeout'), claimOf(2));
    const f = fakeDeps(cluster);
    const m = new DefenderMembership(f.deps);
    expect(m.state).toBe('INITIALIZATION');
    void m.run();
    await until(() => cluster.watches.length === 1);

    expect(f.lines.slice(0, 7)).toEqual([
      'open failed',
      'retrying open KV buckets #0 after 100',
      'open failed',
      'retrying open KV buckets #1 after 200',
      'claim attempt',
      'retrying claim a stable ID #0 after 100',
      'claim attempt',
    ]);
    expect(f.lines).toContain('claimed defender-2');
    expect(f.states).toEqual(['INITIALIZATION', 'CLAIMING_ID', 'FOLLOWER']);
    expect(m.defenderId).toBe('defender-2');
    const hb = cluster.heartbeats!;
    expect(hb.claim.defenderId).toBe('defender-2');
    expect(hb.hangAfterMs).toBe(HANG_AFTER_INTERVALS * 2000);
    expect(hb.first).toMatchObject({ schema: 1, defenderId: 'defender-2', podName: 'pod-a', state: 'FOLLOWER', mapVersionSeen: 0, load: { chambers: 0, inflight: 0, processedTotal: 7 }, capacity: 1, intervalSeconds: 2 });
    // Pulsed every quarter interval; without a beat, the start went on after one staleness window.
    expect(f.timers.map((t) => t.ms)).toEqual([2000 / PULSES_PER_INTERVAL]);
    expect(f.waits).toContain(3 * 2000);
    // Only our chunks of the map (ADR 0009).
    expect(cluster.watch.scoped).toBe(true);
  });

  it('applies maps in order: lost chambers released before gained ones are acquired, a map waits for the one before', async () => {
    const { m, cluster, work, lines, states, applied } = await started();
    let open!: () => void;
    work!.gate = new Promise<void>((r) => (open = r));
    const first = cluster.watch.deliver(mapOf(1, { 'a:1': 'defender-0', 'a:2': 'defender-0', 'b:1': 'defender-1' }));
    const second = cluster.watch.deliver(mapOf(2, { 'a:1': 'defender-1', 'a:2': 'defender-0', 'b:1': 'defender-0' }));
    await until(() => work!.calls.length === 1);
    // The second map waits while the first one's acquire runs.
    expect(work!.calls).toEqual(['acquire a:1,a:2 @1']);
    expect(m.mapVersion).toBe(0);
    open();
    await Promise.all([first, second]);
    expect(work!.calls).toEqual(['acquire a:1,a:2 @1', 'mapApplied a:1,a:2 @1', 'release a:1', 'acquire b:1 @2', 'mapApplied a:2,b:1 @2']);
    expect(m.ownedChambers).toEqual(['a:2', 'b:1']);
    expect(m.mapVersion).toBe(2);
    expect(states.at(-1)).toBe('STABLE');
    expect(lines).toContain('applied v2: a:2,b:1');
    expect(applied[1]).toMatchObject({ defenderId: 'defender-0', added: 1, removed: 1, lowestDefender: 'defender-0' });
    expect([...applied[1]!.mapChambers].sort()).toEqual(['a:1', 'a:2', 'b:1']);
  });

  it('a map read for this defender alone names no lowest defender', async () => {
    const { cluster, applied } = await started();
    await cluster.watch.deliver({ ...mapOf(1, { 'a:1': 'defender-0' }), owner: 'defender-0' });
    expect(applied[0]!.lowestDefender).toBeUndefined();
  });

  it('exits when a map cannot be applied', async () => {
    const { cluster, work, lines, exits } = await started();
    work!.fail = new Error('store down');
    await cluster.watch.deliver(mapOf(1, { 'a:1': 'defender-0' }));
    expect(lines).toContain('apply failed v1');
    expect(exits).toEqual([[EXIT_MEMBERSHIP_FAILED, 'could not apply the assignment map']]);
  });

  it('looks once more a staleness window later when the pool is full, then exits', async () => {
    const cluster = new FakeCluster();
    cluster.claims.push(new PoolFullError('5 of 5 held'), new PoolFullError('5 of 5 held'));
    const f = fakeDeps(cluster);
    await new DefenderMembership(f.deps).run();
    expect(f.lines).toEqual(['claim attempt', 'pool full: wait 8000', 'claim attempt']);
    expect(f.waits).toEqual([(3 + 1) * 2000]);
    expect(f.exits).toEqual([[EXIT_POOL_EXHAUSTED, 'stable-ID pool exhausted: 5 of 5 held; raise MAX_DEFENDERS or scale down']]);
    expect(cluster.heartbeats).toBeUndefined();
  });

  it('takes an ID freed while it waited on a full pool', async () => {
    const cluster = new FakeCluster();
    cluster.claims.push(new PoolFullError('full'), claimOf(4));
    const f = fakeDeps(cluster);
    void new DefenderMembership(f.deps).run();
    await until(() => cluster.watches.length === 1);
    expect(f.exits).toEqual([]);
    expect(f.lines).toContain('claimed defender-4');
  });

  it('exits at once when its claim is taken over, and when the heartbeat thread dies', async () => {
    const { cluster, exits } = await started();
    cluster.heartbeats!.events.claimLost('revision mismatch');
    cluster.heartbeats!.events.died(new Error('thread crashed'));
    expect(exits).toEqual([
      [EXIT_CLAIM_LOST, 'stable ID taken over by another process'],
      [EXIT_MEMBERSHIP_FAILED, 'heartbeat thread failed'],
    ]);
  });

  it('after a failed heartbeat creates lost buckets again and re-watches the map at the next beat', async () => {
    const { cluster, lines } = await started();
    cluster.missing = ['KV_ids', 'KV_map'];
    cluster.heartbeats!.events.failed('no responders');
    await until(() => lines.some((l) => l.startsWith('buckets created')));
    expect(lines).toContain('heartbeat failed defender-0: no responders');
    expect(lines).toContain('buckets created: KV_ids,KV_map');
    cluster.heartbeats!.events.beat();
    await until(() => cluster.watches.length === 2, 'a second watch');
    expect(cluster.watches[0]!.stopped).toBe(true);
    expect(lines).toContain('rewatch: NATS failed since the map watch started');
  });

  it('re-watches from the map it holds when the bucket was created again, or when the watch ends', async () => {
    const { cluster, lines } = await started();
    await cluster.watch.deliver(mapOf(3, { 'a:1': 'defender-0' }));
    cluster.identity = 'bucket-2';
    cluster.heartbeats!.events.beat();
    await until(() => cluster.watches.length === 2);
    expect(lines).toContain('rewatch: the map bucket was created again at bucket-2 (NATS lost its store?)');
    expect(cluster.watch.held?.version).toBe(3);
    cluster.watch.finish(new Error('consumer deleted'));
    await until(() => cluster.watches.length === 3);
    expect(lines).toContain('watch failed: consumer deleted');
  });

  it('heartbeats say what it owns; the load report is taken once per interval', async () => {
    const { cluster, work, tick } = await started();
    await cluster.watch.deliver(mapOf(1, { 'a:1': 'defender-0', 'a:2': 'defender-0' }));
    for (let i = 0; i < PULSES_PER_INTERVAL * 2; i++) tick();
    const pulses = cluster.heartbeats!.pulses;
    expect(pulses).toHaveLength(8);
    expect(pulses[0]).toMatchObject({ state: 'STABLE', mapVersionSeen: 1, mapTokenSeen: 1, load: { chambers: 2 } });
    // The first snapshot, then one report per PULSES_PER_INTERVAL pulses.
    expect(work!.reports).toBe(3);
  });

  it('on stop: waits for the map being applied, drains, leaves, and exits no more', async () => {
    const { m, cluster, work, lines, states, exits, timers } = await started();
    let open!: () => void;
    work!.gate = new Promise<void>((r) => (open = r));
    void cluster.watch.deliver(mapOf(1, { 'a:1': 'defender-0' }));
    await until(() => work!.calls.length === 1);
    work!.inflightRuns = 2;
    const stopping = m.stop();
    await until(() => lines.includes('shutdown began (2 in flight)'));
    expect(work!.calls).not.toContain('drain 25000');
    open();
    await stopping;
    expect(work!.calls.slice(-1)).toEqual(['drain 25000']);
    expect(cluster.heartbeats!.left).toBe(true);
    expect(lines.slice(-2)).toEqual(['released defender-0: true', 'shutdown ended']);
    expect(states.at(-1)).toBe('SHUTDOWN');
    expect(timers).toEqual([]);
    expect(cluster.watch.stopped).toBe(true);
    cluster.heartbeats!.events.claimLost('late');
    expect(exits).toEqual([]);
  });

  it('stopped before it claimed: gives the ID back', async () => {
    const cluster = new FakeCluster();
    let claimed!: () => void;
    const gate = new Promise<void>((r) => (claimed = r));
    cluster.claims.push(claimOf(1));
    const claim = cluster.stableIds.claim.bind(cluster.stableIds);
    cluster.stableIds.claim = async () => {
      await gate;
      return claim();
    };
    const f = fakeDeps(cluster, null);
    const m = new DefenderMembership(f.deps);
    const running = m.run();
    await until(() => f.lines.includes('claim attempt'));
    await m.stop();
    claimed();
    await running;
    expect(cluster.stableIds.released).toBe(1);
    expect(cluster.heartbeats).toBeUndefined();
    expect(f.lines).not.toContain('claimed defender-1');
  });
});
