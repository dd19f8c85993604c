import { FencedError, type OutboxEventInput } from '@defender/contracts';
import { OUTBOX_PAGE, OutboxPublisher } from './outbox-publisher';
import { chamber, FakeSink, FakeStore, outage } from './testing/fake-ports';

const EPOCH = 7;

function event(sequence: number, index: number): OutboxEventInput {
  return { subject: `defense.alarms.t1.c1`, msgId: `alarm:t1:c1:r${sequence}:rule${index}:k`, payload: JSON.stringify({ sequence, index, bytes: 'as committed' }) };
}

/** Stores `perRun` events for each run in `sequences`, as commits would. */
function stored(store: FakeStore, sequences: number[], perRun = 2): void {
  for (const sequence of sequences) for (let index = 0; index < perRun; index++) store.outbox.push({ ...event(sequence, index), ...chamber, sequence, index });
}

function setup(epoch = EPOCH) {
  const store = new FakeStore();
  store.state = { ...store.state, ownerEpoch: EPOCH };
  const sink = new FakeSink();
  const observed: string[] = [];
  const publisher = new OutboxPublisher(chamber, 't1:c1', epoch, { store: store.port, sink, observer: { published: (_k, e) => observed.push(`${e.sequence}.${e.index}`) } });
  return { store, sink, observed, publisher };
}

describe('OutboxPublisher.publishPending', () => {
  it('publishes every pending event in order, one at a time, with the stored bytes and ids, then marks the last run', async () => {
    const { store, sink, observed, publisher } = setup();
    stored(store, [3, 4, 6]);
    const expected = store.outbox.map((e) => ({ subject: e.subject, payload: e.payload, msgId: e.msgId }));
    let inFlight = 0;
    let most = 0;
    sink.before.publish = async () => {
      most = Math.max(most, ++inFlight);
      await new Promise<void>((r) => setImmediate(r));
      inFlight--;
    };
    await publisher.publishPending(false);
    expect(sink.published).toEqual(expected);
    expect(most).toBe(1);
    expect(observed).toEqual(['3.0', '3.1', '4.0', '4.1', '6.0', '6.1']);
    expect(store.publishedThrough).toBe(6);
    expect(store.outbox).toEqual([]);
  });

  it('an empty outbox publishes and marks nothing', async () => {
    const { store, sink, publisher } = setup();
    await publisher.publishPending(true);
    expect(sink.published).toEqual([]);
    expect(store.calls.get('markPublished')).toBeUndefined();
  });

  it('after a claim, skips what a previous owner published but could not mark (the newest message per subject)', async () => {
    const { store, sink, publisher } = setup();
    stored(store, [3, 4]);
    // The previous owner died after the stream acknowledged 3.0 and 3.1, before its mark.
    sink.published.push({ subject: 'defense.alarms.t1.c1', payload: '', msgId: event(3, 1).msgId });
    await publisher.publishPending(true);
    expect(sink.published.slice(1).map((p) => p.msgId)).toEqual([event(4, 0).msgId, event(4, 1).msgId]);
    expect(store.publishedThrough).toBe(4);
  });

  it('without a claim, publishes everything pending again (the stream drops doubles by id)', async () => {
    const { store, sink, publisher } = setup();
    stored(store, [3]);
    sink.published.push({ subject: 'defense.alarms.t1.c1', payload: '', msgId: event(3, 1).msgId });
    await publisher.publishPending(false);
    expect(sink.published.slice(1).map((p) => p.msgId)).toEqual([event(3, 0).msgId, event(3, 1).msgId]);
  });

  it('a full page is marked through the run before its last (whose events may go on), and the rest read on, none twice', async () => {
    const { store, sink, publisher } = setup();
    const runs = Array.from({ length: OUTBOX_PAGE / 2 + 1 }, (_, i) => i + 1);
    stored(store, runs);
    const marks: unknown[] = [];
    store.before.markPublished = (through) => void marks.push(through);
    await publisher.publishPending(false);
    expect(marks).toEqual([OUTBOX_PAGE / 2 - 1, OUTBOX_PAGE / 2 + 1]);
    expect(sink.published).toHaveLength(OUTBOX_PAGE + 2);
    expect(new Set(sink.published.map((p) => p.msgId)).size).toBe(OUTBOX_PAGE + 2);
  });

  it('one run with more events than a page is read whole', async () => {
    const { store, sink, publisher } = setup();
    stored(store, [9], OUTBOX_PAGE + 5);
    await publisher.publishPending(false);
    expect(sink.published).toHaveLength(OUTBOX_PAGE + 5);
    expect(store.publishedThrough).toBe(9);
  });

  it('a deposed owner\'s mark is refused: it never marks past what it published', async () => {
    const { store, sink, publisher } = setup(EPOCH - 1);
    stored(store, [3]);
    await expect(publisher.publishPending(false)).rejects.toBeInstanceOf(FencedError);
    expect(sink.published).toHaveLength(2);
    expect(store.publishedThrough).toBe(0);
  });
});

describe('OutboxPublisher.publishCommitted', () => {
  const committed = (store: FakeStore, sequence: number, events: OutboxEventInput[]) => events.forEach((e, index) => store.outbox.push({ ...e, ...chamber, sequence, index }));

  it('once the outbox was seen empty, publishes a commit\'s events as committed without reading the outbox', async () => {
    const { store, sink, observed, publisher } = setup();
    await publisher.publishPending(true);
    const reads = store.calls.get('pending');
    for (const sequence of [5, 6]) {
      const events = [event(sequence, 0), event(sequence, 1)];
      committed(store, sequence, events);
      await publisher.publishCommitted(events, sequence);
    }
    expect(store.calls.get('pending')).toBe(reads);
    expect(sink.published.map((p) => p.msgId)).toEqual([event(5, 0), event(5, 1), event(6, 0), event(6, 1)].map((e) => e.msgId));
    expect(observed).toEqual(['5.0', '5.1', '6.0', '6.1']);
    expect(store.publishedThrough).toBe(6);
  });

  it('before the outbox was seen empty, reads it: older events go out first', async () => {
    const { store, sink, publisher } = setup();
    stored(store, [2]);
    const events = [event(5, 0)];
    committed(store, 5, events);
    await publisher.publishCommitted(events, 5);
    expect(sink.published.map((p) => p.msgId)).toEqual([event(2, 0), event(2, 1), event(5, 0)].map((e) => e.msgId));
    expect(store.publishedThrough).toBe(5);
  });

  it('after a failed publication, the retry reads the outbox again (nothing is lost, the order kept)', async () => {
    const { store, sink, publisher } = setup();
    await publisher.publishPending(true);
    const events = [event(5, 0), event(5, 1)];
    committed(store, 5, events);
    let fail = true;
    sink.before.publish = (_s, _p, id) => {
      if (fail && id === event(5, 1).msgId) throw outage('nats down');
    };
    await expect(publisher.publishCommitted(events, 5)).rejects.toMatchObject({ retryable: true });
    fail = false;
    const reads = store.calls.get('pending') ?? 0;
    await publisher.publishCommitted(events, 5);
    expect(store.calls.get('pending')).toBeGreaterThan(reads);
    expect(sink.published.map((p) => p.msgId)).toEqual([event(5, 0), event(5, 0), event(5, 1)].map((e) => e.msgId));
    expect(store.publishedThrough).toBe(5);
  });
});
