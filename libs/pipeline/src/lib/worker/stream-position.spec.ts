import { FencedError } from '@defender/contracts';
import { StreamPosition } from './stream-position';
import { chamber, FakeSource, FakeStore, outage } from './testing/fake-ports';

const EPOCH = 2 ** 21 + 1;

function setup(stored: { highWaterMark?: number; streamId?: string; streamOffset?: number } = {}) {
  const store = new FakeStore();
  store.state = { ...store.state, ownerEpoch: EPOCH, highWaterMark: stored.highWaterMark ?? 0, ...(stored.streamId ? { streamId: stored.streamId } : {}), ...(stored.streamOffset ? { streamOffset: stored.streamOffset } : {}) };
  const source = new FakeSource();
  const events: string[] = [];
  const position = new StreamPosition(chamber, 't1:c1', EPOCH, {
    source,
    store: store.port,
    observer: {
      streamMismatch: (_k, i) => events.push(`mismatch ${i.recorded}->${i.current} at ${i.highWaterMark}`),
      streamAdopted: (_k, i) => events.push(`adopted ${i.streamId} at ${i.highWaterMark}`),
      streamRebased: (_k, i) => events.push(`rebased ${i.from}->${i.to} offset ${i.offset}`),
    },
  });
  position.adopt(store.state);
  return { store, source, events, position };
}

/** Publishes `n` notifications so the stream's last sequence is `n`. */
function fill(source: FakeSource, n: number): void {
  for (let i = 0; i < n; i++) source.publish({ i });
}

describe('StreamPosition', () => {
  it('a new chamber binds the stream once, then reads from sequence 1 and stays bound', async () => {
    const { store, source, events, position } = setup();
    expect(position.stream).toEqual({ streamId: undefined, offset: 0, status: 'unbound' });
    await expect(position.sameStream()).resolves.toBe(false);
    expect(store.state.streamId).toBe(source.id);
    expect(position.stream).toEqual({ streamId: source.id, offset: 0, status: 'bound' });
    await expect(position.sameStream()).resolves.toBe(true);
    expect(store.calls.get('bindStream')).toBe(1);
    expect(position.nextStreamSequence).toBe(1);
    // Nothing applied: nothing adopted worth reporting.
    expect(events).toEqual([]);
  });

  it('a mark recorded without a stream (before migration 3) adopts the current stream, without an offset', async () => {
    const { store, source, events, position } = setup({ highWaterMark: 7 });
    fill(source, 9);
    await expect(position.sameStream()).resolves.toBe(false);
    expect(events).toEqual([`adopted ${source.id} at 7`]);
    expect(store.state).toMatchObject({ streamId: source.id, highWaterMark: 7 });
    expect(store.state.streamOffset).toBeUndefined();
    expect(position.nextStreamSequence).toBe(8);
  });

  it('a stream recreated empty (sequences restarted below the mark) is reported once and re-based: its sequence 1 follows the mark', async () => {
    const { store, source, events, position } = setup({ highWaterMark: 12 });
    fill(source, 12);
    await position.sameStream();
    source.recreate();
    fill(source, 2);
    await expect(position.sameStream()).resolves.toBe(false);
    expect(events).toEqual([`adopted stream-1 at 12`, 'mismatch stream-1->stream-2 at 12', 'rebased stream-1->stream-2 offset 12']);
    expect(position.stream).toEqual({ streamId: 'stream-2', offset: 12, status: 'bound' });
    expect(store.state).toMatchObject({ streamId: 'stream-2', streamOffset: 12, highWaterMark: 12 });
    expect(position.nextStreamSequence).toBe(1);
    // The new stream's sequences map to store sequences above the mark.
    const raw = source.messages[1]!;
    expect(position.toRun(raw)).toMatchObject({ sequence: 14, streamSequence: 2 });
    expect([position.isAhead(0), position.isAhead(1)]).toEqual([false, true]);
    position.advance(14);
    expect([position.mark, position.nextStreamSequence, position.isAhead(2), position.isAhead(3)]).toEqual([14, 3, false, true]);
  });

  it('another identity whose sequences reach the mark (an identity read while NATS restarts) is the same stream: identity taken, no offset', async () => {
    const { store, source, events, position } = setup({ highWaterMark: 5, streamId: 'stream-1' });
    fill(source, 6);
    source.id = 'stream-1-after-restart';
    await expect(position.sameStream()).resolves.toBe(false);
    expect(events).toEqual(['adopted stream-1-after-restart at 5']);
    expect(store.state.streamOffset).toBeUndefined();
    expect(position.stream).toEqual({ streamId: 'stream-1-after-restart', offset: 0, status: 'bound' });
  });

  it('while the re-base fails the chamber stays paused in mismatch, reported once however often it is retried', async () => {
    const { store, source, events, position } = setup({ highWaterMark: 4, streamId: 'stream-1' });
    source.recreate();
    store.before.bindStream = () => Promise.reject(outage());
    for (let i = 0; i < 3; i++) await expect(position.sameStream()).rejects.toMatchObject({ retryable: true });
    expect(position.stream.status).toBe('mismatch');
    expect(events).toEqual(['mismatch stream-1->stream-2 at 4']);
    delete store.before.bindStream;
    await expect(position.sameStream()).resolves.toBe(false);
    expect(position.stream).toEqual({ streamId: 'stream-2', offset: 4, status: 'bound' });
  });

  it('a newer owner fences the binding: nothing is recorded', async () => {
    const { store, source, position } = setup({ highWaterMark: 4, streamId: 'stream-1' });
    source.recreate();
    store.state = { ...store.state, ownerEpoch: EPOCH + 1 };
    await expect(position.sameStream()).rejects.toBeInstanceOf(FencedError);
    expect(store.state.streamId).toBe('stream-1');
  });

  it('a binding someone else recorded meanwhile wins: adopted, and the read is repeated', async () => {
    const { store, source, position } = setup({ highWaterMark: 4, streamId: 'stream-1' });
    source.recreate();
    // A newer owner re-based onto a stream this one does not see yet.
    store.state = { ...store.state, streamId: 'stream-9', streamOffset: 4 };
    await expect(position.sameStream()).resolves.toBe(false);
    expect(position.stream).toMatchObject({ streamId: 'stream-9', offset: 4 });
  });

  it('a source that cannot tell streams apart is trusted', async () => {
    const store = new FakeStore();
    const position = new StreamPosition(chamber, 't1:c1', EPOCH, { source: {}, store: store.port });
    await expect(position.sameStream()).resolves.toBe(true);
    expect(store.calls.get('bindStream')).toBeUndefined();
  });
});
