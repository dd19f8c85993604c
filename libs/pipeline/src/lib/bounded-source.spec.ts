import { seededRandom } from '@defender/hashing';
import { boundedSource } from './bounded-source';
import type { NotificationMessage, NotificationSource } from './ports';

/** A source whose calls resolve when the test says so, counting how many are in flight. */
function gatedSource() {
  let inFlight = 0;
  let most = 0;
  const pending: (() => void)[] = [];
  const gate = async <T>(value: T, fail = false): Promise<T> => {
    inFlight++;
    most = Math.max(most, inFlight);
    await new Promise<void>((resolve) => pending.push(resolve));
    inFlight--;
    if (fail) throw new Error('NATS timeout');
    return value;
  };
  const source: NotificationSource = {
    next: (subject, from) => gate<NotificationMessage | null>(subject === 'fail' ? null : { subject, sequence: from, data: new Uint8Array(0), storedAt: new Date(0) }, subject === 'fail'),
    streamId: () => gate('stream-1'),
    lastSequence: () => gate(42),
  };
  return { source, pending, inFlight: () => inFlight, most: () => most };
}

const tick = () => new Promise<void>((r) => setImmediate(r));

describe('boundedSource', () => {
  it('never has more than its permits in flight, whatever the mix of calls, and answers each as the source did', async () => {
    const rnd = seededRandom(7);
    for (let trial = 0; trial < 20; trial++) {
      const permits = 1 + Math.floor(rnd() * 5);
      const g = gatedSource();
      const b = boundedSource(g.source, permits);
      const calls: Promise<unknown>[] = [];
      const want: unknown[] = [];
      for (let i = 0; i < 30; i++) {
        const kind = Math.floor(rnd() * 3);
        if (kind === 0) {
          calls.push(b.next(`s${i}`, i));
          want.push(expect.objectContaining({ subject: `s${i}`, sequence: i }));
        } else if (kind === 1) {
          calls.push(b.streamId!());
          want.push('stream-1');
        } else {
          calls.push(b.lastSequence!());
          want.push(42);
        }
      }
      // Release the gates one at a time, in random order, until every call is answered.
      let answered = false;
      void Promise.all(calls).then(() => (answered = true));
      while (!answered) {
        await tick();
        expect(g.inFlight()).toBeLessThanOrEqual(permits);
        if (g.pending.length > 0) g.pending.splice(Math.floor(rnd() * g.pending.length), 1)[0]!();
      }
      expect(await Promise.all(calls)).toEqual(want);
      expect(g.most()).toBe(Math.min(permits, 30));
    }
  });

  it('a failed call frees its permit (the next one proceeds) and fails as the source failed', async () => {
    const g = gatedSource();
    const b = boundedSource(g.source, 1);
    const failing = b.next('fail', 1);
    const after = b.next('ok', 2);
    await tick();
    expect(g.pending.length).toBe(1);
    g.pending.shift()!();
    await expect(failing).rejects.toThrow('NATS timeout');
    await tick();
    g.pending.shift()!();
    await expect(after).resolves.toMatchObject({ subject: 'ok', sequence: 2 });
  });

  it('keeps a source without streamId / lastSequence without them', () => {
    const b = boundedSource({ next: async () => null }, 2);
    expect(b.streamId).toBeUndefined();
    expect(b.lastSequence).toBeUndefined();
  });
});
