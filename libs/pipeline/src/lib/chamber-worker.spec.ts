import { equipmentEventSubject, type CommitRunInput, type EquipmentEvent, type MonitorState, type OutboxEventInput } from '@defender/contracts';
import { ChamberWorker, type WorkerDeps, type WorkerOptions } from './chamber-worker';
import { runEvents } from './outbox';
import { ByteBudget, Semaphore } from './semaphore';
import { AttemptTimeoutError } from './worker/attempt-policy';
import { chamber, FakeCache, FakeClock, FakeEvaluator, FakeSink, FakeSource, FakeStore, notificationOf, outage, settle, traceOf, until } from './worker/testing/fake-ports';

/*
 * The worker's loop over fake ports (./worker/testing/fake-ports): claim, outbox, stream position,
 * attempts, dead letters and fencing as one chamber sees them, with time moved by the test. The same
 * paths against real NATS and SQLite: apps/defender chamber-worker.int.spec.ts.
 */

const options: WorkerOptions = { ownerId: 'defender-1', processTimeoutMs: 1000, maxAttempts: 3, idlePollMs: 500, maxTracePoints: 10_000, maxOutageBackoffMs: 400 };

function setup() {
  const clock = new FakeClock();
  const store = new FakeStore();
  const source = new FakeSource();
  const sink = new FakeSink();
  const cache = new FakeCache(store);
  const evaluator = new FakeEvaluator();
  const log: string[] = [];
  const outcomes: string[] = [];
  const failed: unknown[] = [];
  const deps: WorkerDeps = {
    source,
    sink,
    store: store.port,
    evaluator,
    cache,
    semaphore: new Semaphore(4),
    now: clock.now,
    monotonic: clock.monotonic,
    sleep: clock.sleep,
    random: () => 0.5,
    observer: {
      processed: (_k, seq, _ms, outcome) => outcomes.push(`${seq} ${outcome}`),
      deadLettered: (_k, seq, reason) => log.push(`dead ${seq} ${reason}`),
      failedAttempt: (_k, seq, attempt, err) => (failed.push(err), log.push(`failed ${seq} #${attempt}`)),
      paused: (_k, what) => log.push(`paused ${what}`),
      fenced: (_k, epoch) => log.push(`fenced ${epoch}`),
    },
  };
  /** Writes run `runId`'s trace and publishes its notification; returns the stream sequence. */
  const publishRun = (runId: string, extra: Record<string, unknown> = {}, trace = true) => {
    if (trace) store.traces.set(runId, traceOf(runId));
    return source.publish(notificationOf(runId, extra));
  };
  const exits: string[] = [];
  const start = (epoch: number, over: Partial<WorkerDeps> = {}) => {
    const w = new ChamberWorker(chamber, epoch, { ...deps, ...over }, options);
    w.start((reason) => exits.push(reason));
    return w;
  };
  return { clock, store, source, sink, cache, evaluator, log, outcomes, failed, deps, publishRun, start, exits };
}

describe('ChamberWorker (fake ports)', () => {
  it('applies each run once, in stream order, and publishes its alarms then its hold after the commit, as committed', async () => {
    const { clock, store, sink, evaluator, outcomes, publishRun, start } = setup();
    evaluator.alarmOn.add('r2');
    evaluator.holdOn.add('r4');
    evaluator.alarmOn.add('r4');
    for (let k = 1; k <= 5; k++) publishRun(`r${k}`);
    const committed: OutboxEventInput[] = [];
    store.before.commitRun = (input) => void committed.push(...((input as CommitRunInput).events ?? []));
    // Every event is published only after its run's commit.
    sink.before.publish = (_s, payload) => expect(store.state.highWaterMark).toBeGreaterThanOrEqual((JSON.parse(payload as string) as { sequence: number }).sequence);
    const w = start(3);
    await until(() => w.mark === 5, clock);
    expect(store.appliedRunIds()).toEqual(['r1', 'r2', 'r3', 'r4', 'r5']);
    expect(evaluator.inputs.map((i) => i.sequence)).toEqual([1, 2, 3, 4, 5]);
    expect(outcomes).toEqual(['1 applied', '2 applied', '3 applied', '4 applied', '5 applied']);
    expect(sink.events()).toEqual([
      'defense.alarms.t1.c1 alarm:t1:c1:r2:WE1:k',
      'defense.alarms.t1.c1 alarm:t1:c1:r2:WE2:k',
      'defense.alarms.t1.c1 alarm:t1:c1:r4:WE1:k',
      'defense.alarms.t1.c1 alarm:t1:c1:r4:WE2:k',
      'defense.holds.t1.c1 hold:t1:c1:r4:esc:*',
    ]);
    expect(sink.published).toEqual(committed);
    expect(JSON.parse(sink.published[4]!.payload)).toMatchObject({ runId: 'r4', sequence: 4, epoch: 3, ownerId: 'defender-1' });
    expect(store.publishedThrough).toBe(4);
    expect(store.observations.map((o) => o.runId)).toEqual(['r1', 'r2', 'r3', 'r4', 'r5']);
    await w.stop();
  });

  it('a notice wakes an idle worker at once; stop ends it', async () => {
    const { store, publishRun, start, exits } = setup();
    const w = start(1);
    await until(() => store.calls.get('bindStream') === 1 && (store.calls.get('claim') ?? 0) === 1);
    await settle();
    const seq = publishRun('r1');
    w.notify(seq);
    await until(() => w.mark === 1);
    // A notice at or below the mark is nothing new.
    w.notify(1);
    await w.stop();
    expect(exits).toEqual(['stopped']);
    expect(w.stopped).toBe(true);
  });

  it('a new owner publishes what the last one committed but did not publish, once; a claim after that publishes nothing', async () => {
    const { clock, store, sink, source, start } = setup();
    source.publish(notificationOf('r1'));
    const events = runEvents(chamber, { sequence: 1, runId: 'r1', recipe: 'R', epoch: 1, ownerId: 'defender-0' }, [
      { ruleId: 'WE1', indicatorKey: 'k', action: 'ALARM', value: 1, message: 'm' },
      { ruleId: 'WE2', indicatorKey: 'k', action: 'ALARM', value: 1, message: 'm' },
    ]);
    await store.port.chamberState.commitRun({ chamber, epoch: 1, ownerId: 'defender-0', sequence: 1, runId: 'r1', committedAt: new Date(0), points: [{ indicatorKey: 'k', value: 1, flags: 0 }], events });
    store.state = { ...store.state, streamId: source.id };
    // The old owner died after the stream acknowledged the first alarm, before its mark.
    sink.published.push({ ...events[0]! });
    const b = start(2);
    await until(() => store.publishedThrough === 1, clock);
    await b.stop();
    expect(sink.published).toEqual(events);
    const c = start(3);
    await until(() => store.calls.get('claim') === 2, clock);
    await settle();
    await c.stop();
    expect(sink.published).toEqual(events);
  });

  it('a notification of a run id applied before (of any age) is skipped: nothing evaluated, written or published again', async () => {
    const { clock, store, sink, evaluator, outcomes, log, publishRun, start } = setup();
    evaluator.alarmOn.add('r1');
    publishRun('r1');
    publishRun('r2');
    publishRun('r1');
    const w = start(1);
    await until(() => w.mark === 3, clock);
    await w.stop();
    expect(outcomes).toEqual(['1 applied', '2 applied', '3 duplicate-run']);
    expect(store.appliedRunIds()).toEqual(['r1', 'r2']);
    expect(evaluator.inputs.map((i) => i.notification.runId)).toEqual(['r1', 'r2']);
    expect(sink.events()).toEqual(['defense.alarms.t1.c1 alarm:t1:c1:r1:WE1:k', 'defense.alarms.t1.c1 alarm:t1:c1:r1:WE2:k']);
    expect(log.filter((l) => l.startsWith('dead'))).toEqual([]);
  });

  it('bad input is dead-lettered with its reason, once, and the chamber goes on', async () => {
    const { clock, store, sink, evaluator, log, source, publishRun, start } = setup();
    source.publish('{not json');
    source.publish({ ...notificationOf('r2'), chamberId: 'c9' });
    publishRun('r3', {}, false);
    publishRun('r4', { trace: { store: 'default', samples: 20_000 } });
    store.traces.set('r5', traceOf('r5', 0));
    source.publish(notificationOf('r5'));
    publishRun('r6');
    publishRun('r7');
    publishRun('r8');
    evaluator.judge = (input) => {
      const runId = input.notification.runId;
      if (runId === 'r6') return { points: [], alarms: [], newLimitSets: [], skipped: [{ indicatorKey: 'k', reason: 'no samples in the window' }] };
      if (runId === 'r7') throw Object.assign(new Error('stored defense strategy is invalid'), { deadLetterReason: 'invalid-strategy' });
      return { points: [{ indicatorKey: 'k', value: 1, flags: 0 }], alarms: [], newLimitSets: [], skipped: [] };
    };
    const w = start(1);
    await until(() => w.mark === 8, clock);
    await w.stop();
    const reasons = ['invalid-json', 'subject-mismatch', 'missing-trace', 'trace-too-large', 'invalid-trace', 'no-indicators', 'invalid-strategy'];
    expect(log).toEqual(reasons.map((r, i) => `dead ${i + 1} ${r}`));
    expect(sink.deadLetters().map((d) => [d.reason, d.attempts])).toEqual(reasons.map((r) => [r, 1]));
    expect(sink.published.map((p) => p.msgId)).toEqual(reasons.map((_, i) => `dead:t1:c1:${i + 1}`));
    expect(store.appliedRunIds()).toEqual(['r8']);
    expect([...store.runs.values()].map((r) => r.runId).slice(0, 2)).toEqual(['dead-letter:1:seq-1', 'dead-letter:2:r2']);
  });

  it('a chamber without metadata dead-letters its runs as unknown-chamber', async () => {
    const { clock, store, sink, publishRun, start } = setup();
    store.metadata = undefined;
    publishRun('r1');
    const w = start(1);
    await until(() => w.mark === 1, clock);
    await w.stop();
    expect(sink.deadLetters().map((d) => d.reason)).toEqual(['unknown-chamber']);
  });

  it('a store outage pauses the run however long it lasts: no attempt is used up, the run is applied once, nothing dead-lettered', async () => {
    const { clock, store, log, outcomes, publishRun, start } = setup();
    publishRun('r1');
    let down = true;
    store.before.commitRun = () => {
      if (down) throw outage();
    };
    const w = start(1);
    await until(() => (store.calls.get('commitRun') ?? 0) > 0, clock);
    const from = clock.monotonic();
    await until(() => clock.monotonic() - from > 20 * options.processTimeoutMs, clock, 1000);
    expect(w.mark).toBe(0);
    down = false;
    await until(() => w.mark === 1, clock);
    await w.stop();
    expect(outcomes).toEqual(['1 applied']);
    expect(log.every((l) => l === 'paused commit')).toBe(true);
    expect(log.length).toBeGreaterThan(20);
  });

  it('an outage that escapes an attempt pauses the run and tries it again without counting attempts', async () => {
    const { clock, store, sink, evaluator, log, publishRun, start } = setup();
    publishRun('r1');
    const judge = evaluator.judge;
    // More escaped outages than attempts, then one real failure: still the first failed attempt.
    const failures: Error[] = [...Array<Error>(options.maxAttempts * 2).fill(outage('model cache unavailable')), new Error('bug')];
    evaluator.judge = (input) => {
      const err = failures.shift();
      if (err) throw err;
      return judge(input);
    };
    const w = start(1);
    await until(() => w.mark === 1, clock);
    await w.stop();
    expect(log).toEqual([...Array<string>(options.maxAttempts * 2).fill('paused process'), 'failed 1 #1']);
    expect(sink.deadLetters()).toEqual([]);
    expect(store.appliedRunIds()).toEqual(['r1']);
  });

  it('a run reserves its declared trace memory before its attempts and gives it back after; the trace is released once evaluated', async () => {
    const { clock, store, publishRun, start } = setup();
    const traceBudget = new ByteBudget(60 * 8);
    const held: number[] = [];
    const released: string[] = [];
    store.before.trace = () => void held.push(traceBudget.inUse);
    publishRun('r1', { trace: { store: 'default', samples: 60 } });
    // Undeclared: charged once read.
    publishRun('r2');
    const w = start(1, { traceBudget, releaseTrace: (t) => void released.push(t.runId) });
    await until(() => w.mark === 2, clock);
    await w.stop();
    expect(held).toEqual([480, 0]);
    expect(traceBudget.inUse).toBe(0);
    // Given back after the evaluation (and again, harmlessly, when the attempt ends).
    expect([...new Set(released)]).toEqual(['r1', 'r2']);
  });

  it('a run that keeps failing is tried maxAttempts times, then dead-lettered as processing-failed; the next run is applied', async () => {
    const { clock, store, sink, evaluator, log, publishRun, start } = setup();
    publishRun('r1');
    publishRun('r2');
    const judge = evaluator.judge;
    evaluator.judge = (input) => {
      if (input.notification.runId === 'r1') throw new Error('bug');
      return judge(input);
    };
    const w = start(1);
    await until(() => w.mark === 2, clock);
    await w.stop();
    expect(log).toEqual(['failed 1 #1', 'failed 1 #2', 'failed 1 #3', 'dead 1 processing-failed']);
    expect(sink.deadLetters()).toMatchObject([{ reason: 'processing-failed', detail: '3 attempts; last: Error: bug', attempts: 3 }]);
    expect(store.appliedRunIds()).toEqual(['r2']);
  });

  it('an attempt that waits past its timeout is abandoned at its next step and the run tried again, applied once', async () => {
    const { clock, store, failed, outcomes, publishRun, start } = setup();
    publishRun('r1');
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    store.before.trace = () => (store.calls.get('trace') === 1 ? gate : undefined);
    const w = start(1);
    await until(() => store.calls.get('trace') === 1, clock);
    await settle();
    clock.advance(options.processTimeoutMs);
    await settle();
    expect(w.mark).toBe(0);
    open();
    await until(() => w.mark === 1, clock);
    await w.stop();
    expect(failed).toHaveLength(1);
    expect(failed[0]).toBeInstanceOf(AttemptTimeoutError);
    expect(outcomes).toEqual(['1 applied']);
    expect(store.calls.get('commitRun')).toBe(1);
  });

  it('a newer owner fences the worker: it stops at once and writes nothing more', async () => {
    const { clock, store, log, publishRun, start, exits } = setup();
    publishRun('r1');
    const w = start(1);
    await until(() => w.mark === 1, clock);
    store.state = { ...store.state, ownerEpoch: 2, ownerId: 'defender-2' };
    w.notify(publishRun('r2'));
    await until(() => exits.length > 0, clock);
    expect(exits).toEqual(['fenced']);
    expect(log).toEqual(['fenced 1']);
    expect(store.appliedRunIds()).toEqual(['r1']);
    expect(w.stopped).toBe(true);
    // A worker started under an older epoch than the stored one is fenced at its claim.
    const old = start(1);
    await until(() => exits.length > 1, clock);
    expect(exits[1]).toBe('fenced');
    expect(old.mark).toBe(0);
  });

  it('a recreated stream re-bases the chamber: its runs are applied after the mark, run ids applied before are skipped', async () => {
    const { clock, store, source, outcomes, publishRun, start } = setup();
    publishRun('r1');
    publishRun('r2');
    const w = start(1);
    await until(() => w.mark === 2, clock);
    source.recreate();
    // Seen at the next idle poll: re-based before anything arrives in the new stream.
    await until(() => w.stream.streamId === 'stream-2', clock);
    publishRun('r2');
    publishRun('r3');
    await until(() => w.mark === 4, clock);
    await w.stop();
    expect(outcomes).toEqual(['1 applied', '2 applied', '3 duplicate-run', '4 applied']);
    expect(store.appliedRunIds()).toEqual(['r1', 'r2', 'r3']);
    expect(store.state).toMatchObject({ streamId: 'stream-2', streamOffset: 2, highWaterMark: 4 });
    expect(w.stream).toEqual({ streamId: 'stream-2', offset: 2, status: 'bound' });
  });

  it('a run that needs more than the steady-state history reads it whole inside a fit slot and is judged again', async () => {
    const { clock, cache, evaluator, store, publishRun, start } = setup();
    const fitSlots = new Semaphore(1);
    const judge = evaluator.judge;
    const slotsHeld: number[] = [];
    evaluator.judge = (input) => {
      if (input.notification.runId === 'r3' && input.historyLimit === evaluator.steadyRuns) return { kind: 'more-history', runs: 30, reason: 'Phase I completes' };
      if (input.notification.runId === 'r3') slotsHeld.push(fitSlots.inUse);
      return judge(input);
    };
    for (let k = 1; k <= 4; k++) publishRun(`r${k}`);
    const w = start(1, { fitSlots });
    await until(() => w.mark === 4, clock);
    await w.stop();
    expect(cache.reads.map((r) => `${r.limit}${r.allPoints ? ' all' : ''}`)).toEqual(['10', '10', '10', '30 all', '10']);
    expect(slotsHeld).toEqual([1]);
    expect(fitSlots.inUse).toBe(0);
    expect(store.appliedRunIds()).toEqual(['r1', 'r2', 'r3', 'r4']);
  });
});

/*
 * Equipment events in a chamber's stream (ADR 0019): applied in stream order between runs, each
 * recipe's state stepped by the evaluator and committed with the event at its sequence; an event
 * published again is skipped; a bad one is dead-lettered. The same against real NATS and SQLite:
 * apps/defender chamber-worker.int.spec.ts.
 */
describe('ChamberWorker with equipment events (fake ports)', () => {
  const pm = (eventId: string, over: Partial<EquipmentEvent> = {}): EquipmentEvent => ({ schema: 1, toolId: 't1', chamberId: 'c1', eventId, kind: 'pm', at: '2026-12-08T01:00:00.000Z', ...over });
  const judging = (judgedRuns: number): MonitorState => ({ phase: 'judging', modelVersion: 1, judgedRuns, extensionCheckAt: null, mewma: [1, 2], levelOffsets: {} });
  const eventSubject = equipmentEventSubject('t1', 'c1');

  it("applies an event between two runs before the second: each recipe's state stepped and committed with the event at its sequence", async () => {
    const { clock, store, source, evaluator, outcomes, failed, publishRun, start } = setup();
    const recipe = notificationOf('r1')['recipe'] as string;
    // The runs leave a judging state; the event resets its MEWMA (what the evaluator answers here).
    evaluator.judge = (input) => ({ points: [{ indicatorKey: 'k', value: 1, flags: 0 }], alarms: [], newLimitSets: [], skipped: [], monitorState: judging(input.sequence) });
    evaluator.eventStep = ({ state }) => (state.phase === 'judging' ? { ...state, mewma: [0, 0] } : undefined);
    publishRun('r1');
    source.publish(pm('pm-1') as unknown as Record<string, unknown>, eventSubject);
    publishRun('r2');
    const w = start(1);
    await until(() => w.mark === 3, clock);
    await w.stop();
    expect(failed).toEqual([]);
    expect(outcomes).toEqual(['1 applied', '2 applied', '3 applied']);
    // The event saw the state run r1 left, and run r2 the state the event left.
    expect(evaluator.eventInputs.map((i) => [i.recipe, i.sequence, i.event.eventId, i.state])).toEqual([[recipe, 2, 'pm-1', judging(1)]]);
    expect(evaluator.inputs.map((i) => [i.notification.runId, i.monitorState])).toEqual([
      ['r1', undefined],
      ['r2', { ...judging(1), mewma: [0, 0] }],
    ]);
    expect(store.runs.get(2)).toMatchObject({ runId: 'event:pm-1', points: [] });
    expect(store.appliedRunIds()).toEqual(['r1', 'r2']);
  });

  it('an event published again is skipped; a bad event is dead-lettered with its reason; the runs go on', async () => {
    const { clock, store, source, sink, evaluator, log, outcomes, publishRun, start } = setup();
    for (const e of [pm('pm-1'), pm('pm-1'), { ...pm('x'), kind: 'lunch' }, pm('pm-2', { chamberId: 'c9' })]) source.publish(e as unknown as Record<string, unknown>, eventSubject);
    source.publish('{not json', eventSubject);
    publishRun('r1');
    const w = start(1);
    await until(() => w.mark === 6, clock);
    await w.stop();
    expect(outcomes).toEqual(['1 applied', '2 duplicate-run', '6 applied']);
    expect(log).toEqual(['dead 3 invalid-event', 'dead 4 subject-mismatch', 'dead 5 invalid-event']);
    expect(sink.deadLetters().map((d) => [d.reason, d.detail])).toEqual([
      ['invalid-event', expect.stringContaining('kind') as string],
      ['subject-mismatch', 'payload names t1:c9 but subject is dc.t1.c1.event'],
      ['invalid-event', 'invalid equipment event: invalid-json'],
    ]);
    expect(evaluator.inputs.map((i) => i.notification.runId)).toEqual(['r1']);
    expect([...store.runs.values()].map((r) => r.runId)).toEqual(['event:pm-1', 'dead-letter:3:event:x', 'dead-letter:4:event:pm-2', 'dead-letter:5:seq-5', 'r1']);
  });
});
