import { equipmentEventSubject, notificationSubject, type RunPointSet } from '@defender/contracts';
import { ownerEpoch } from '@defender/membership';
import { FakeCache, FakeClock, FakeEvaluator, FakeSink, FakeSource, FakeStore, notificationOf, settle, subject, traceOf, until } from '../worker/testing/fake-ports';
import { DefenderProcessing } from './defender-processing';
import type { DefenderProcessingDeps, ProcessingEvents, ProcessingNats } from './ports';
import { FakeLoad } from './testing/fake-load';

class MissingError extends Error {
  override readonly name = 'MissingError';
}

/** The wake-up feed: the processing's notice callback, while a feed runs. */
class FakeFeed {
  onNotice: ((subject: string, seq: number) => void) | undefined;
  ended: (() => void) | undefined;
  starts = 0;
  failStarts = 0;
  notice(subj: string, seq: number): void {
    this.onNotice?.(subj, seq);
  }
}

/** Events recorded as lines; `cacheSeen` the statistics each processed run reported. */
function recorder() {
  const lines: string[] = [];
  const line = (s: string) => void lines.push(s);
  const cacheSeen: unknown[] = [];
  const events: ProcessingEvents<{ hits: number }> = {
    runs: {
      received: (inflight) => line(`received (${inflight} in flight)`),
      processed: (chamber, sequence, _ms, outcome, _inflight, cache) => {
        cacheSeen.push(cache);
        line(`processed ${chamber} #${sequence} ${outcome}`);
      },
      strategyFound: (chamber, _scope, warn) => warn && line(`deprecated strategy key ${chamber}`),
      streamMismatch: (chamber, _info, paused) => line(`mismatch ${chamber} (${paused} paused)`),
      streamRebased: (chamber, _info, paused) => line(`rebased ${chamber} (${paused} paused)`),
      mismatchForgotten: (chamber, paused) => line(`forgotten ${chamber} (${paused} paused)`),
      deadLettered: (chamber, sequence, reason) => line(`dead-lettered ${chamber} #${sequence} ${reason}`),
    },
    streamCheck: { recreated: (was, now) => line(`stream recreated ${was} -> ${now}`) },
    feed: { failed: (err) => line(`feed failed: ${err.message}`), stopFailed: () => line('feed stop failed') },
    supervisor: {},
    unknownChambers: { deadLettered: (chamber, sequence) => line(`unknown chamber dead-lettered ${chamber} #${sequence}`) },
    setupRetrying: (attempt, delayMs, err) => line(`setup retry #${attempt} after ${delayMs}: ${(err as Error).message}`),
    ready: (n) => line(`ready (${n})`),
    setupFailed: (err) => line(`setup failed: ${(err as Error).message}`),
    drainTimedOut: (ms) => line(`drain timed out ${ms}`),
  };
  return { events, lines, cacheSeen };
}

/** A processing over the worker's fakes: one chamber's stream, store and sink, a scripted feed and clock. */
function setup(opts: { ensureFailures?: number } = {}) {
  const clock = new FakeClock();
  const source = new FakeSource();
  const sink = new FakeSink();
  const store = new FakeStore();
  const evaluator = new FakeEvaluator();
  const feed = new FakeFeed();
  const rec = recorder();
  const timed: string[] = [];
  const checks: (() => void)[] = [];
  let ensureFailures = opts.ensureFailures ?? 0;
  const identity = { id: 'defender-0' as string | undefined, lowest: false, inMap: new Set<string>() };
  let cache: (FakeCache & { closed: boolean; stats(): { hits: number }; close(): void }) | undefined;
  const nats: ProcessingNats = {
    ensureStreams: async () => {
      if (ensureFailures-- > 0) throw new Error('no responders');
    },
    openReader: async () => source,
    watchNotifications: async (onNotice, o) => {
      feed.starts++;
      feed.onNotice = onNotice;
      feed.ended = o.onEnd;
      return { stop: async () => void (feed.onNotice = undefined) };
    },
    sink,
    isStreamMissing: (err) => err instanceof MissingError,
  };
  const deps: DefenderProcessingDeps<{ hits: number }> = {
    settings: {
      streamName: 'dc-notifications',
      maxConcurrentMessages: 4,
      maxConcurrentFits: 1,
      traceMemoryBytes: 32 * 1024 * 1024,
      streamCheckMs: 2000,
      processTimeoutMs: 5000,
      maxAttempts: 3,
      idlePollMs: 30_000,
      maxTracePoints: 1_000_000,
    },
    nats: async () => nats,
    store: async () => store.port,
    createCache: () => {
      cache = Object.assign(new FakeCache(store), { closed: false, stats: () => ({ hits: 1 }), close: () => void (cache!.closed = true) });
      return cache;
    },
    evaluator,
    identity: {
      defenderId: () => identity.id,
      claimGeneration: () => 1,
      inMap: (c) => identity.inMap.has(c),
      handlesUnknownChambers: () => identity.lowest,
    },
    events: rec.events,
    clock: {
      now: () => clock.now(),
      monotonic: clock.monotonic,
      sleep: (ms, signal) => clock.sleep(ms, signal ?? new AbortController().signal),
      random: () => 0,
      every: (_ms, fn) => {
        checks.push(fn);
        return () => void checks.splice(checks.indexOf(fn), 1);
      },
      schedule: () => undefined,
    },
    load: new FakeLoad(),
    timeStoreCall: (kind, fn) => (...a) => {
      timed.push(kind);
      return fn(...a);
    },
  };
  const p = new DefenderProcessing(deps);
  /** Publishes run `runId` of the chamber (notification and trace) and tells the feed. */
  const run = (runId: string) => {
    store.traces.set(runId, traceOf(runId));
    const seq = source.publish(notificationOf(runId));
    feed.notice(subject, seq);
    return seq;
  };
  return { p, clock, source, sink, store, evaluator, feed, timed, checks, identity, run, cache: () => cache, ...rec };
}

const applied = (store: FakeStore): string[] => [...store.runs.values()].sort((a: RunPointSet, b: RunPointSet) => a.sequence - b.sequence).map((r) => r.runId);

describe('DefenderProcessing', () => {
  it('sets up through failures, then applies each run of an acquired chamber once, in order, counted for the heartbeat', async () => {
    const t = setup({ ensureFailures: 2 });
    void t.p.start();
    await until(() => t.lines.includes('ready (4)'), t.clock);
    expect(t.lines.slice(0, 2)).toEqual(['setup retry #0 after 125: no responders', 'setup retry #1 after 250: no responders']);
    expect(t.checks).toHaveLength(1);

    await t.p.acquire(['t1:c1'], 3);
    t.run('r1');
    t.run('r2');
    await until(() => t.store.runs.size === 2, t.clock);
    t.run('r3');
    await until(() => t.store.runs.size === 3, t.clock);

    expect(applied(t.store)).toEqual(['r1', 'r2', 'r3']);
    expect(t.store.state.ownerEpoch).toBe(ownerEpoch(3, 1));
    expect(t.lines.filter((l) => l.startsWith('processed'))).toEqual(['processed t1:c1 #1 applied', 'processed t1:c1 #2 applied', 'processed t1:c1 #3 applied']);
    expect(t.cacheSeen.at(-1)).toEqual({ hits: 1 });
    expect(t.p.processedTotal()).toBe(3);
    expect(t.p.loadReport().rates.map(([c]) => c)).toEqual(['t1:c1']);
    // The store's calls on the run path are timed.
    expect(t.timed).toEqual(expect.arrayContaining(['read', 'write']));
    expect(t.p.workerStates()).toEqual([expect.objectContaining({ chamber: 't1:c1', highWaterMark: 3, epoch: ownerEpoch(3, 1) })]);
  });

  it("an equipment event's notice wakes the chamber's worker, which applies it in its order", async () => {
    const t = setup();
    void t.p.start();
    await until(() => t.lines.includes('ready (4)'), t.clock);
    await t.p.acquire(['t1:c1'], 3);
    t.run('r1');
    await until(() => t.store.runs.size === 1, t.clock);
    const eventSubject = equipmentEventSubject('t1', 'c1');
    const seq = t.source.publish({ schema: 1, toolId: 't1', chamberId: 'c1', eventId: 'pm-1', kind: 'pm', at: '2026-12-08T00:00:00.000Z' }, eventSubject);
    // No time passes (no idle poll): only the notice can wake the worker.
    t.feed.notice(eventSubject, seq);
    await until(() => t.store.runs.size === 2);
    expect(applied(t.store)).toEqual(['r1', 'event:pm-1']);
    // An event of a chamber no defender owns is no unknown-chamber dead letter (its runs are).
    t.identity.lowest = true;
    t.feed.notice(equipmentEventSubject('t9', 'c9'), t.source.publish({ schema: 1, toolId: 't9', chamberId: 'c9', eventId: 'pm-2', kind: 'pm', at: '2026-12-08T00:00:00.000Z' }, equipmentEventSubject('t9', 'c9')));
    await settle();
    expect(t.sink.published).toEqual([]);
  });

  it('a map applied before the setup finished starts its workers once ready', async () => {
    const t = setup({ ensureFailures: 1 });
    void t.p.start();
    t.p.mapApplied(['t1:c1'], 2);
    const acquired = t.p.acquire(['t1:c1'], 2);
    await until(() => t.lines.includes('ready (4)'), t.clock);
    await acquired;
    t.run('r1');
    await until(() => t.store.runs.size === 1, t.clock);
    expect(t.store.state.ownerEpoch).toBe(ownerEpoch(2, 1));
  });

  it('dead-letters a chamber no defender owns only as the map\'s lowest defender', async () => {
    const t = setup();
    void t.p.start();
    await until(() => t.lines.includes('ready (4)'), t.clock);
    const other = notificationSubject('t9', 'c9');
    const seq = t.source.publish(notificationOf('x1', { toolId: 't9', chamberId: 'c9' }), other);
    t.feed.notice(other, seq);
    t.identity.lowest = true;
    t.identity.inMap.add('t8:c8');
    t.feed.notice(other, seq);
    await until(() => t.sink.published.length === 1);
    await settle();
    expect(t.sink.published).toHaveLength(1);
    expect(t.sink.published[0]).toMatchObject({ subject: 'dc.dead.unknown-chamber', msgId: `dead:t9:c9:${seq}` });
    expect(t.lines).toContain(`unknown chamber dead-lettered t9:c9 #${seq}`);
    expect(t.store.runs.size).toBe(0);
  });

  it('reports a recreated stream at the next check and restarts the feed', async () => {
    const t = setup();
    void t.p.start();
    await until(() => t.lines.includes('ready (4)'), t.clock);
    expect(t.p.streamHealth()).toEqual({ stream: 'dc-notifications', streamId: 'stream-1', missing: false, mismatchedChambers: [] });
    t.source.recreate();
    t.checks.forEach((c) => c());
    await until(() => t.feed.starts === 2);
    expect(t.lines).toContain('stream recreated stream-1 -> stream-2');
    expect(t.p.streamHealth().streamId).toBe('stream-2');
  });

  it('drains: stops the checks and the feed, takes no more chambers, then closes the cache', async () => {
    const t = setup();
    void t.p.start();
    await until(() => t.lines.includes('ready (4)'), t.clock);
    await t.p.acquire(['t1:c1'], 1);
    await t.p.drain(1000);
    expect(t.checks).toEqual([]);
    expect(t.feed.onNotice).toBeUndefined();
    expect(t.p.workerStates()).toEqual([]);
    await t.p.acquire(['t1:c2'], 2);
    expect(t.p.workerStates()).toEqual([]);
    await t.p.close();
    expect(t.cache()!.closed).toBe(true);
  });

  it('stops retrying its setup once drained', async () => {
    const t = setup({ ensureFailures: Number.POSITIVE_INFINITY });
    const started = t.p.start();
    await until(() => t.lines.some((l) => l.startsWith('setup retry')));
    await t.p.drain(1000);
    await started;
    expect(t.lines).not.toContain('ready (4)');
    expect(t.cache()).toBeUndefined();
  });
});
