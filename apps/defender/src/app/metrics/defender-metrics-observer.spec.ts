import { Module, type INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { register } from 'prom-client';
import { metricsMovedBy } from '@defender/infra-harness';
import { M } from './membership-metrics';
import { PM } from './processing-metrics';
import { DefenderMetricsObserver, defenderMetricsProviders } from './defender-metrics-observer';
import { MM } from './malloc-metrics';

/** The adapter with the providers DefenderModule registers (prom-client's default registry). */
@Module({ providers: defenderMetricsProviders })
class MetricsOnlyModule {}

/** One sample's value: `name` with exactly `labels` (none for an unlabelled metric). */
async function sample(name: string, labels: Record<string, string | number> = {}, metricName = name): Promise<number | undefined> {
  const metric = register.getSingleMetric(name);
  if (!metric) throw new Error(`no metric ${name}`);
  const wanted = JSON.stringify(Object.entries(labels).sort());
  // Histograms name their samples (`_bucket`, `_sum`, `_count`); counters and gauges do not.
  const values: { metricName?: string; labels: object; value: number }[] = (await metric.get()).values;
  return values.find((v) => (v.metricName ?? name) === metricName && JSON.stringify(Object.entries(v.labels).sort()) === wanted)?.value;
}

const count = (name: string, labels: Record<string, string | number> = {}) => sample(name, labels, `${name}_count`);
const sum = (name: string, labels: Record<string, string | number> = {}) => sample(name, labels, `${name}_sum`);

describe('DefenderMetricsObserver', () => {
  let app: INestApplicationContext;
  let m: DefenderMetricsObserver;

  // A fresh adapter per test (it remembers the cache counts it reported) over the same metrics, zeroed.
  beforeEach(async () => {
    app = await NestFactory.createApplicationContext(MetricsOnlyModule, { logger: false });
    m = app.get(DefenderMetricsObserver);
    register.resetMetrics();
  });
  afterEach(async () => {
    await app.close();
  });

  it('owns every metric of the defender under its seed name (nothing else registers one)', async () => {
    const names = [...Object.values(PM), ...Object.values(M), ...Object.values(MM)].sort();
    expect((await register.getMetricsAsJSON()).map((x) => x.name).sort()).toEqual(names);
    expect(names).toHaveLength(22 + 23 + 6);
  });

  // Each event and the one set of metrics it moves.
  const events: [string, (o: DefenderMetricsObserver) => unknown, string[]][] = [
    ['runReceived', (o) => o.runReceived(3), [PM.received, PM.inflight]],
    ['runProcessed applied', (o) => o.runProcessed('t:a', 'applied', 0.2, 1), [PM.processed, PM.chamberRuns, PM.processTime, PM.inflight]],
    ['runProcessed duplicate-run', (o) => o.runProcessed('t:a', 'duplicate-run', 0.2, 1), [PM.processed, PM.processTime, PM.inflight]],
    ['cacheCounts', (o) => o.cacheCounts({ hits: 3, misses: 1, hitRate: 0.75 }), [PM.cacheHitRate, PM.cacheHits, PM.cacheMisses]],
    ['deadLetter', (o) => o.deadLetter('invalid-payload'), [PM.deadLetters]],
    ['attemptFailed', (o) => o.attemptFailed(), [PM.failed]],
    ['processingPaused', (o) => o.processingPaused('commit'), [PM.paused]],
    ['writeFenced', (o) => o.writeFenced(), [PM.fenced]],
    ['alarmPublished', (o) => o.alarmPublished('t:a'), [PM.alarms, PM.chamberAlarms]],
    ['evaluated', (o) => o.evaluated(0.01), [PM.uchartCalc]],
    ['streamMismatch', (o) => o.streamMismatch('t:a', 1), [PM.streamMismatch]],
    ['streamRebased', (o) => o.streamRebased(), [PM.streamRebased]],
    ['streamMissing', (o) => o.streamMissing(true), [PM.streamMissing]],
    ['storeOperationDone', (o) => o.storeOperationDone({ store: 'sqlite', operation: 'chamberState.get', kind: 'read', durationSeconds: 0.002, outcome: 'ok' }), [PM.storeOperation]],
    ['timedStore read', (o) => o.timedStore('read', async () => 1)(), [PM.storeRead]],
    ['timedStore write', (o) => o.timedStore('write', async () => 1)(), [PM.storeWrite]],
    ['stateCode', (o) => o.stateCode(2), [M.state]],
    ['stableId', (o) => o.stableId(4), [M.stableId]],
    ['heartbeatFailed', (o) => o.heartbeatFailed(), [M.heartbeatErrors]],
    ['mapRejected', (o) => o.mapRejected(), [M.mapsRejected]],
    ['assignmentFailed', (o) => o.assignmentFailed(), [M.subscriptionErrors]],
    [
      'assignmentApplied',
      (o) => o.assignmentApplied({ version: 7, added: 2, removed: 1, owned: 5, seconds: 0.05 }),
      [M.subscriptionAdded, M.subscriptionRemoved, M.assignedChambers, M.currentSubscriptions, M.assignmentVersion, M.mapVersion, M.subscriptionUpdateDuration],
    ],
    ['transition INITIALIZATION -> CLAIMING_ID', (o) => o.transition('INITIALIZATION', 'CLAIMING_ID', 1), [M.stateTransitions, M.stateDuration, M.initDuration]],
    ['transition CLAIMING_ID -> FOLLOWER', (o) => o.transition('CLAIMING_ID', 'FOLLOWER', 1), [M.stateTransitions, M.stateDuration, M.claimDuration]],
    ['transition FOLLOWER -> STABLE', (o) => o.transition('FOLLOWER', 'STABLE', 1), [M.stateTransitions, M.stateDuration, M.followerWait]],
    ['transition STABLE -> SHUTDOWN', (o) => o.transition('STABLE', 'SHUTDOWN', 1), [M.stateTransitions, M.stateDuration]],
    ['initializationFailed', (o) => o.initializationFailed(), [M.initFailures]],
    ['claimAttempt', (o) => o.claimAttempt(), [M.claimAttempts]],
    ['claimed', (o) => o.claimed('defender-2', true), [M.stableIdClaimed]],
    ['shutdownBegan', (o) => o.shutdownBegan(3), [M.shutdowns, M.inflightAtShutdown]],
    ['shutdownEnded', (o) => o.shutdownEnded(2), [M.shutdownDuration]],
    ['mallocTrimmed without counters', (o) => o.mallocTrimmed({ released: false }), [MM.trims]],
    [
      'mallocTrimmed with counters',
      (o) => o.mallocTrimmed({ released: true, after: { heapBytes: 4, inUseBytes: 3, freeBytes: 1, mmappedBytes: 2, releasableTopBytes: 0 } }),
      [MM.trims, MM.heap],
    ],
    ['threadHeap', (o) => o.threadHeap('store', { total: 3, used: 2, external: 1 }), [MM.threadHeap]],
    ['threadCpu', (o) => o.threadCpu('store', 0.5), [MM.threadCpu]],
    ['tracePool', (o) => o.tracePool({ reused: 2, allocated: 1, retainedBytes: 65_536, capacityBytes: 1 << 25 }), [MM.traceBuffers, MM.traceLeases]],
    ['strategyLookup', (o) => o.strategyLookup('legacy_key'), [PM.strategyLookups]],
  ];

  it.each(events)('%s moves exactly its metrics', async (_name, event, metrics) => {
    expect(await metricsMovedBy(() => event(m))).toEqual([...metrics].sort());
  });

  it('runs: received, processed by outcome, per-chamber runs of applied ones, times in seconds, runs in flight', async () => {
    m.runReceived(2);
    expect(await sample(PM.received)).toBe(1);
    expect(await sample(PM.inflight)).toBe(2);
    m.runProcessed('t:a', 'applied', 0.25, 1);
    m.runProcessed('t:a', 'already-applied', 0.5, 0);
    expect(await sample(PM.processed, { outcome: 'applied' })).toBe(1);
    expect(await sample(PM.processed, { outcome: 'already-applied' })).toBe(1);
    expect(await sample(PM.chamberRuns, { chamber: 't:a' })).toBe(1);
    expect(await count(PM.processTime)).toBe(2);
    expect(await sum(PM.processTime)).toBe(0.75);
    expect(await sample(PM.inflight)).toBe(0);
  });

  it('cache: the ratio, and the lookups since the last report as counters; a new cache counts from 0 again', async () => {
    m.cacheCounts({ hits: 3, misses: 1, hitRate: 0.75 });
    m.cacheCounts({ hits: 5, misses: 2, hitRate: 5 / 7 });
    expect(await sample(PM.cacheHits)).toBe(5);
    expect(await sample(PM.cacheMisses)).toBe(2);
    expect(await sample(PM.cacheHitRate)).toBeCloseTo(5 / 7);
    // The store was reopened: its cache's counts start again below the ones reported.
    m.cacheCounts({ hits: 1, misses: 1, hitRate: 0.5 });
    expect(await sample(PM.cacheHits)).toBe(6);
    expect(await sample(PM.cacheMisses)).toBe(3);
    expect(await sample(PM.cacheHitRate)).toBe(0.5);
  });

  it('dead letters by reason, pauses by stage, alarms in total and per chamber', async () => {
    m.deadLetter('unknown-chamber');
    m.deadLetter('unknown-chamber');
    m.processingPaused('trace');
    m.alarmPublished('t:a');
    m.alarmPublished('t:b');
    expect(await sample(PM.deadLetters, { reason: 'unknown-chamber' })).toBe(2);
    expect(await sample(PM.paused, { stage: 'trace' })).toBe(1);
    expect(await sample(PM.alarms)).toBe(2);
    expect(await sample(PM.chamberAlarms, { chamber: 't:b' })).toBe(1);
  });

  it('stream mismatch: 1 per paused chamber and their count under chamber="", removed when cleared (ADR 0007)', async () => {
    m.streamMismatch('t:a', 1);
    m.streamMismatch('t:b', 2);
    expect(await sample(PM.streamMismatch, { chamber: 't:a' })).toBe(1);
    expect(await sample(PM.streamMismatch, { chamber: '' })).toBe(2);
    m.streamMismatchCleared('t:a', 1);
    expect(await sample(PM.streamMismatch, { chamber: 't:a' })).toBeUndefined();
    expect(await sample(PM.streamMismatch, { chamber: 't:b' })).toBe(1);
    expect(await sample(PM.streamMismatch, { chamber: '' })).toBe(1);
    m.streamMissing(true);
    expect(await sample(PM.streamMissing)).toBe(1);
    m.streamMissing(false);
    expect(await sample(PM.streamMissing)).toBe(0);
  });

  it('store: each operation by method and outcome; timed reads and writes pass results and errors through', async () => {
    m.storeOperationDone({ store: 'cassandra', operation: 'chamberState.commitRun', kind: 'write', durationSeconds: 0.004, outcome: 'error' });
    expect(await count(PM.storeOperation, { operation: 'chamberState.commitRun', outcome: 'error' })).toBe(1);
    expect(await sum(PM.storeOperation, { operation: 'chamberState.commitRun', outcome: 'error' })).toBe(0.004);
    await expect(m.timedStore('read', async (a: number, b: number) => a + b)(2, 3)).resolves.toBe(5);
    await expect(m.timedStore('write', async () => Promise.reject(new Error('store down')))()).rejects.toThrow('store down');
    expect(await count(PM.storeRead)).toBe(1);
    expect(await count(PM.storeWrite)).toBe(1);
  });

  it('membership: state code, stable ID, an applied map in every gauge and counter that shows it', async () => {
    m.stateCode(3);
    m.stableId(-1);
    expect(await sample(M.state)).toBe(3);
    expect(await sample(M.stableId)).toBe(-1);
    m.assignmentApplied({ version: 7, added: 2, removed: 1, owned: 5, seconds: 0.05 });
    m.assignmentApplied({ version: 8, added: 1, removed: 0, owned: 6, seconds: 0.01 });
    expect(await sample(M.subscriptionAdded)).toBe(3);
    expect(await sample(M.subscriptionRemoved)).toBe(1);
    expect(await sample(M.assignedChambers)).toBe(6);
    expect(await sample(M.currentSubscriptions)).toBe(6);
    expect(await sample(M.assignmentVersion)).toBe(8);
    expect(await sample(M.mapVersion)).toBe(8);
    expect(await count(M.subscriptionUpdateDuration)).toBe(2);
  });

  it("seed 002's state machine: transitions with the time in the state left; the states' own durations", async () => {
    m.transition('INITIALIZATION', 'CLAIMING_ID', 1.5);
    m.transition('CLAIMING_ID', 'FOLLOWER', 0.25);
    m.transition('FOLLOWER', 'STABLE', 4);
    expect(await sample(M.stateTransitions, { from: 'FOLLOWER', to: 'STABLE' })).toBe(1);
    expect(await sum(M.stateDuration, { state: 'INITIALIZATION' })).toBe(1.5);
    expect(await sum(M.initDuration)).toBe(1.5);
    expect(await sum(M.claimDuration)).toBe(0.25);
    expect(await sum(M.followerWait)).toBe(4);
    m.claimed('defender-2', true);
    expect(await sample(M.stableIdClaimed, { id: 'defender-2' })).toBe(1);
    m.claimed('defender-2', false);
    expect(await sample(M.stableIdClaimed, { id: 'defender-2' })).toBe(0);
  });

  it('shutdown: counted with the runs in flight, and its metrics returned for the last log line', async () => {
    m.shutdownBegan(4);
    await expect(m.shutdownEnded(1.25)).resolves.toEqual({
      [M.shutdowns]: 1,
      [M.inflightAtShutdown]: 4,
      [`${M.shutdownDuration}_count`]: 1,
    });
    expect(await sum(M.shutdownDuration)).toBe(1.25);
  });

  it('the C heap: trims by outcome, and the counters after a trim by kind', async () => {
    m.mallocTrimmed({ released: true, after: { heapBytes: 400, inUseBytes: 300, freeBytes: 100, mmappedBytes: 200, releasableTopBytes: 0 } });
    m.mallocTrimmed({ released: false });
    expect(await sample(MM.trims, { released: 'true' })).toBe(1);
    expect(await sample(MM.trims, { released: 'false' })).toBe(1);
    expect(await sample(MM.heap, { kind: 'in_use' })).toBe(300);
    expect(await sample(MM.heap, { kind: 'mmapped' })).toBe(200);
  });

  it("threads' heaps by thread and kind; a thread that stopped has no series", async () => {
    m.threadHeap('store', { total: 30, used: 20, external: 10 });
    m.threadHeap('heartbeat', { total: 9, used: 8, external: 7 });
    expect(await sample(MM.threadHeap, { thread: 'store', kind: 'total' })).toBe(30);
    expect(await sample(MM.threadHeap, { thread: 'store', kind: 'external' })).toBe(10);
    expect(await sample(MM.threadHeap, { thread: 'heartbeat', kind: 'used' })).toBe(8);
    m.threadHeap('heartbeat', undefined);
    expect(await sample(MM.threadHeap, { thread: 'heartbeat', kind: 'used' })).toBeUndefined();
    expect(await sample(MM.threadHeap, { thread: 'store', kind: 'used' })).toBe(20);
  });

  it("threads' CPU seconds: the counter follows each thread's total, and counts a restarted thread from zero", async () => {
    m.threadCpu('store', 1.5);
    m.threadCpu('store', 2.25);
    m.threadCpu('heartbeat', 0.25);
    m.threadCpu('heartbeat', undefined);
    expect(await sample(MM.threadCpu, { thread: 'store' })).toBe(2.25);
    expect(await sample(MM.threadCpu, { thread: 'heartbeat' })).toBe(0.25);
    m.threadCpu('store', 0.5);
    expect(await sample(MM.threadCpu, { thread: 'store' })).toBe(2.75);
  });

  it("the trace buffer pool: free bytes and capacity, leases by source following the pool's counts, a new pool counted from zero", async () => {
    m.tracePool({ reused: 0, allocated: 2, retainedBytes: 0, capacityBytes: 32 << 20 });
    m.tracePool({ reused: 5, allocated: 3, retainedBytes: 3 << 20, capacityBytes: 32 << 20 });
    m.tracePool(undefined);
    expect(await sample(MM.traceLeases, { source: 'reused' })).toBe(5);
    expect(await sample(MM.traceLeases, { source: 'allocated' })).toBe(3);
    expect(await sample(MM.traceBuffers, { kind: 'free' })).toBe(3 << 20);
    expect(await sample(MM.traceBuffers, { kind: 'capacity' })).toBe(32 << 20);
    m.tracePool({ reused: 1, allocated: 1, retainedBytes: 0, capacityBytes: 32 << 20 });
    expect(await sample(MM.traceLeases, { source: 'reused' })).toBe(6);
    expect(await sample(MM.traceLeases, { source: 'allocated' })).toBe(4);
    expect(await sample(MM.traceBuffers, { kind: 'free' })).toBe(0);
  });
});
