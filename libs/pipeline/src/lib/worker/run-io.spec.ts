import { CorruptRecordError, FencedError, parseRunNotification, strategyScope, type LimitSetRecord, type RunNotification } from '@defender/contracts';
import { isOutage, type OutageRetry } from './attempt-policy';
import { RunIO } from './run-io';
import { chamber, FakeCache, FakeEvaluator, FakeSink, FakeStore, notificationOf, outage, settle, subject, traceOf } from './testing/fake-ports';

const EPOCH = 9;
const owner = { chamber, key: 't1:c1', epoch: EPOCH, ownerId: 'defender-1' };

function run(runId: string, extra: Record<string, unknown> = {}): RunNotification {
  return parseRunNotification(JSON.stringify(notificationOf(runId, extra)));
}

function setup() {
  const store = new FakeStore();
  store.state = { ...store.state, ownerEpoch: EPOCH };
  const sink = new FakeSink();
  const cache = new FakeCache(store);
  const evaluator = new FakeEvaluator();
  const events: string[] = [];
  const retried: string[] = [];
  let t = 0;
  // Retries outages at once (the policy's backoff is AttemptPolicy's, tested there).
  const retry: OutageRetry = async (what, fn) => {
    for (;;) {
      try {
        return await fn();
      } catch (err) {
        if (!isOutage(err)) throw err;
        retried.push(what);
      }
    }
  };
  const released: string[] = [];
  const io = new RunIO(
    owner,
    {
      store: store.port,
      cache,
      sink,
      evaluator,
      releaseTrace: (tr) => void released.push(tr.runId),
      observer: { strategyFound: (_k, s) => events.push(`strategy ${s?.scope ?? 'default'}`), paused: (_k, what) => events.push(`paused ${what}`), stage: (s) => events.push(`stage ${s}`) },
      now: () => new Date(Date.UTC(2026, 11, 1)),
      monotonic: () => t++,
    },
    retry,
  );
  return { store, sink, cache, evaluator, events, retried, released, io };
}

const limitSet = (indicatorKey: string, version: number): LimitSetRecord => ({
  ...chamber,
  indicatorKey,
  version,
  chartType: 'individuals',
  center: 0,
  sigma: 1,
  lcl: -3,
  ucl: 3,
  params: {},
  baseline: { reason: 'initial', fromSequence: 1, toSequence: 20, runCount: 20, excluded: [] } as unknown as LimitSetRecord['baseline'],
  createdAt: new Date(0),
});

describe('RunIO.readRun', () => {
  it('issues every read of an attempt at once, before any of them answers', async () => {
    const { store, io } = setup();
    store.traces.set('r1', traceOf('r1'));
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    for (const op of ['latest', 'currentLimitSets', 'metadata', 'trace', 'appliedRun'] as const) store.before[op] = () => gate;
    const reads = io.readRun(run('r1'), 0);
    await settle();
    expect(['latest', 'currentLimitSets', 'metadata', 'trace', 'appliedRun'].map((op) => store.calls.get(op as never))).toEqual([1, 1, 1, 1, 1]);
    open();
    const [strategy, history, limits, metadata, trace, applied] = await Promise.all([reads.strategy, reads.history, reads.limits, reads.metadata, reads.trace, reads.applied]);
    expect({ strategy, history, limits, metadata: metadata?.weight, trace: trace.trace.runId, applied }).toEqual({ strategy: undefined, history: { runs: [], limit: 10 }, limits: [], metadata: 60, trace: 'r1', applied: undefined });
  });

  it('reads the steady-state history the strategy needs, at the mark, without baseline-only points', async () => {
    const { store, cache, evaluator, io } = setup();
    store.traces.set('r1', traceOf('r1'));
    evaluator.steadyRuns = 12;
    await io.readRun(run('r1'), 41).history;
    expect(cache.reads).toEqual([{ limit: 12, highWaterMark: 41, allPoints: false }]);
    // A strategy whose steady state is its whole history reads every point; so does a longer read.
    evaluator.steadyRuns = 30;
    await io.readRun(run('r1'), 41).history;
    await io.history(undefined, 41, 90);
    expect(cache.reads.slice(1)).toEqual([
      { limit: 30, highWaterMark: 41, allPoints: true },
      { limit: 90, highWaterMark: 41, allPoints: true },
    ]);
  });

  it('the first scope of the run\'s lookup order holding a strategy judges it, and is reported', async () => {
    const { store, events, io } = setup();
    store.traces.set('r1', traceOf('r1'));
    const doc = { schema: 1 };
    const chamberScope = strategyScope({ kind: 'chamber', chamber });
    const record = (scope: string, version: number) => ({ scope, version, document: doc, createdAt: new Date(0), author: 'x' });
    store.strategies = [record(strategyScope({ kind: 'default' }), 5), record(chamberScope, 1), record(chamberScope, 2), record(strategyScope({ kind: 'recipe', recipe: 'R' }), 3)];
    const found = await io.readRun(run('r1'), 0).strategy;
    expect(found?.scope.scope).toBe(chamberScope);
    expect(found?.record.version).toBe(2);
    expect(events).toEqual([`strategy ${chamberScope}`]);
  });

  it('a store answering for a scope it was not asked about is a failure, not a strategy', async () => {
    const { store, io } = setup();
    store.traces.set('r1', traceOf('r1'));
    store.port.strategies.latest = async () => [{ scope: 'strategy:x:y', version: 1, document: {}, createdAt: new Date(0), author: 'x' } as never];
    await expect(io.readRun(run('r1'), 0).strategy).rejects.toThrow('which was not asked for');
  });

  it.each([
    ['missing-trace', undefined],
    ['corrupt-trace', new CorruptRecordError('checksum' as never, { table: 'trace_chunks' } as never, 'chunk 3 fails its checksum')],
  ])('a trace the store cannot give is bad input: %s', async (reason, err) => {
    const { store, io } = setup();
    if (err) store.before.trace = () => Promise.reject(err);
    await expect(io.readRun(run('r1'), 0).trace).rejects.toMatchObject({ name: 'DeadLetterSignal', reason, runId: 'r1' });
  });

  it('retries every read through an outage, each under its own step name', async () => {
    const { store, retried, io } = setup();
    store.traces.set('r1', traceOf('r1'));
    const once = new Set<string>();
    for (const op of ['latest', 'currentLimitSets', 'metadata', 'trace', 'appliedRun'] as const) {
      store.before[op] = () => {
        if (once.has(op)) return;
        once.add(op);
        throw outage();
      };
    }
    const reads = io.readRun(run('r1'), 0);
    await Promise.all([reads.strategy, reads.history, reads.limits, reads.metadata, reads.trace, reads.applied]);
    expect(retried.sort()).toEqual(['applied', 'limits', 'metadata', 'strategy', 'trace']);
  });

  it('a read nobody awaits (the attempt failed first) is no unhandled rejection, and its trace is given back', async () => {
    const { store, released, io } = setup();
    store.traces.set('r1', traceOf('r1'));
    store.before.latest = () => Promise.reject(new Error('broken'));
    const reads = io.readRun(run('r1'), 0);
    io.releaseUnevaluated(reads);
    await settle();
    expect(released).toEqual(['r1']);
  });
});

describe('RunIO writes', () => {
  const evaluation = { points: [{ indicatorKey: 'k', value: 1, flags: 0 }], alarms: [{ ruleId: 'WE1', indicatorKey: 'k', action: 'ALARM', value: 1, message: 'm' }], newLimitSets: [limitSet('k', 1)] };
  const events = [{ subject: 'defense.alarms.t1.c1', msgId: 'alarm:t1:c1:r1:WE1:k', payload: '{}' }];

  it('stores the run\'s limit sets, then commits the run with its events under the owner\'s epoch, and records it in the cache', async () => {
    const { store, cache, io } = setup();
    const order: string[] = [];
    store.before.putLimitSet = () => void order.push('limits');
    store.before.commitRun = () => void order.push('commit');
    await expect(io.commit({ sequence: 3, runId: 'r1', recipe: 'R', committedAt: new Date(0), evaluation, events })).resolves.toBe('applied');
    expect(order).toEqual(['limits', 'commit']);
    expect(store.state).toMatchObject({ highWaterMark: 3, ownerEpoch: EPOCH, ownerId: 'defender-1' });
    expect(store.outbox).toEqual([{ ...events[0], ...chamber, sequence: 3, index: 0 }]);
    expect(cache.recorded.map((r) => [r.sequence, r.runId, r.points.length])).toEqual([[3, 'r1', 1]]);
    // The same run at the same sequence again: already applied, nothing written twice.
    await expect(io.commit({ sequence: 3, runId: 'r1', recipe: 'R', committedAt: new Date(0), evaluation, events })).resolves.toBe('already-applied');
    expect(store.outbox).toHaveLength(1);
  });

  it("reads the run's recipe's monitor state with the attempt, and commits the evaluation's state with the run; a fenced commit leaves the stored one", async () => {
    const { store, io } = setup();
    store.traces.set('r1', traceOf('r1'));
    const recipe = run('r1').recipe;
    const before = { phase: 'collecting' as const, modelVersion: 1, runs: 4 };
    store.monitorStates.set(recipe, { ...chamber, recipe, sequence: 2, runId: 'r0', committedAt: new Date(0), state: before });
    expect(await io.readRun(run('r1'), 2).monitorState).toEqual(before);
    expect(store.calls.get('monitorState')).toBe(1);
    const after = { phase: 'collecting' as const, modelVersion: 1, runs: 5 };
    await io.commit({ sequence: 3, runId: 'r1', recipe, committedAt: new Date(0), evaluation: { ...evaluation, monitorState: after }, events: [] });
    expect(store.monitorStates.get(recipe)).toMatchObject({ sequence: 3, runId: 'r1', state: after });
    store.state = { ...store.state, ownerEpoch: EPOCH + 1 };
    await expect(io.commit({ sequence: 4, runId: 'r2', recipe, committedAt: new Date(0), evaluation: { ...evaluation, monitorState: { ...after, runs: 6 } }, events: [] })).rejects.toBeInstanceOf(FencedError);
    expect(store.monitorStates.get(recipe)?.state).toEqual(after);
  });

  it("reads the model the recipe's state judges with (none in Phase I, the newest without a state), and commits the model the evaluation fitted with the run", async () => {
    const { store, io } = setup();
    store.traces.set('r1', traceOf('r1'));
    const recipe = run('r1').recipe;
    const modelOf = (version: number) => ({ version, reason: 'initial' as const, excludedRunIds: [], createdAt: new Date(0), model: { kind: 'monitor', version } });
    for (const version of [1, 2]) store.monitorModels.set(`${recipe}|${version}`, { ...chamber, recipe, sequence: version, runId: `r${version}`, committedAt: new Date(0), ...modelOf(version) });
    // No state (the recipe's first run here): the newest model.
    expect((await io.readRun(run('r1'), 2).monitorModel)?.version).toBe(2);
    expect(store.calls.get('monitorModel')).toBe(1);
    // A judging state: the version it names.
    const judging = { phase: 'judging' as const, modelVersion: 1, judgedRuns: 3, extensionCheckAt: null, mewma: null, levelOffsets: {} };
    store.monitorStates.set(recipe, { ...chamber, recipe, sequence: 2, runId: 'r0', committedAt: new Date(0), state: judging });
    expect((await io.readRun(run('r1'), 2).monitorModel)?.version).toBe(1);
    // Phase I (a re-baseline collecting version 3): no model is read.
    store.monitorStates.set(recipe, { ...chamber, recipe, sequence: 2, runId: 'r0', committedAt: new Date(0), state: { phase: 'collecting', modelVersion: 3, runs: 4 } });
    expect(await io.readRun(run('r1'), 2).monitorModel).toBeUndefined();
    expect(store.calls.get('monitorModel')).toBe(2);
    const fitted = modelOf(3);
    await io.commit({ sequence: 3, runId: 'r1', recipe, committedAt: new Date(0), evaluation: { ...evaluation, monitorState: { ...judging, modelVersion: 3, judgedRuns: 1 }, monitorModel: fitted }, events: [] });
    expect(store.monitorModels.get(`${recipe}|3`)).toMatchObject({ sequence: 3, runId: 'r1', ...fitted });
  });

  it("reads the chamber's memory when the commit at the mark wrote it (then no history for a strategy it answers), and commits the evaluation's memory with the run", async () => {
    const { store, cache, io } = setup();
    store.traces.set('r1', traceOf('r1'));
    const memory = { recentAlarms: [false, true], fromFirstRun: true };
    store.chamberMemory = { ...chamber, sequence: 2, runId: 'r0', committedAt: new Date(0), memory };
    const reads = io.readRun(run('r1'), 2);
    expect(await reads.chamberMemory).toEqual(memory);
    expect(await reads.history).toEqual({ runs: [], limit: 0 });
    expect(cache.reads).toEqual([]);
    // Behind the mark (a dead letter, a skipped duplicate or an earlier release committed after it): not
    // the chamber's memory; the history counts, as much as the steady state reads.
    const behind = io.readRun(run('r1'), 3);
    expect(await behind.chamberMemory).toBeUndefined();
    expect((await behind.history).limit).toBe(10);
    expect(cache.reads.map((r) => r.limit)).toEqual([10]);
    const after = { recentAlarms: [false, true, false], fromFirstRun: true };
    await io.commit({ sequence: 3, runId: 'r1', committedAt: new Date(0), evaluation: { ...evaluation, chamberMemory: after }, events: [] });
    expect(store.chamberMemory).toMatchObject({ sequence: 3, runId: 'r1', memory: after });
    // A dead letter carries none: the stored memory stays behind the mark.
    await io.deadLetter({ subject, sequence: 4, streamSequence: 4, data: Buffer.from('{}'), storedAt: new Date(0) }, { reason: 'invalid-trace', detail: 'no samples', runId: 'r2', attempts: 1 });
    expect(store.state.highWaterMark).toBe(4);
    expect(store.chamberMemory).toMatchObject({ sequence: 3 });
    expect(await io.readRun(run('r3'), 4).chamberMemory).toBeUndefined();
  });

  it('a run id applied at another sequence is not recorded again: only the mark moves', async () => {
    const { store, cache, io } = setup();
    await io.commit({ sequence: 3, runId: 'r1', committedAt: new Date(0), evaluation, events });
    await expect(io.commit({ sequence: 8, runId: 'r1', committedAt: new Date(0), evaluation, events })).resolves.toBe('duplicate-run');
    expect(cache.recorded).toHaveLength(1);
    await expect(io.skipDuplicate(9, 'r1')).resolves.toBe('duplicate-run');
    expect(store.state.highWaterMark).toBe(9);
    expect(store.runs.size).toBe(1);
  });

  it('a deposed owner\'s commit is fenced: nothing written', async () => {
    const { store, cache, io } = setup();
    store.state = { ...store.state, ownerEpoch: EPOCH + 1 };
    await expect(io.commit({ sequence: 3, runId: 'r1', committedAt: new Date(0), evaluation, events })).rejects.toBeInstanceOf(FencedError);
    expect(store.runs.size).toBe(0);
    expect(cache.recorded).toEqual([]);
  });

  it('a dead letter is published with its reason, then the mark moves past it with an empty commit', async () => {
    const { store, sink, cache, io } = setup();
    const msg = { subject, sequence: 14, streamSequence: 4, data: Buffer.from('{nope'), storedAt: new Date(0) };
    await io.deadLetter(msg, { reason: 'invalid-json', detail: 'Unexpected token', runId: 'seq-14', attempts: 1 });
    expect(sink.published.map((p) => [p.subject, p.msgId])).toEqual([['dc.dead.invalid-json', 'dead:t1:c1:14']]);
    expect(JSON.parse(sink.published[0]!.payload)).toMatchObject({ reason: 'invalid-json', detail: 'Unexpected token', subject, streamSequence: 4, defenderId: 'defender-1', attempts: 1 });
    expect(store.state.highWaterMark).toBe(14);
    expect(store.runs.get(14)).toMatchObject({ runId: 'dead-letter:14:seq-14', points: [] });
    expect(cache.recorded.map((r) => r.runId)).toEqual(['dead-letter:14:seq-14']);
  });

  it('a lost weight observation is reported, never a failure of the run', async () => {
    const { store, events, io } = setup();
    store.before.recordObservation = () => Promise.reject(new Error('disk full'));
    await expect(io.recordObservation({ ...chamber, runId: 'r1' } as never)).resolves.toBeUndefined();
    expect(events).toEqual(['paused observation']);
  });
});
