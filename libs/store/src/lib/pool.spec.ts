import { runPool } from './pool';

/** A promise the test settles: each call of the pool waits on its own. */
function gate(): { promise: Promise<void>; open: () => void; fail: (err: Error) => void } {
  let open!: () => void;
  let fail!: (err: Error) => void;
  const promise = new Promise<void>((resolve, reject) => {
    open = resolve;
    fail = reject;
  });
  return { promise, open, fail };
}

/** Lets every promise reaction that is ready run (the pool's workers move on from a settled call). */
const settle = () => new Promise<void>((r) => setImmediate(r));

describe('runPool', () => {
  it('never runs more than `concurrency` calls at once, starts the next as one ends, and runs every item', async () => {
    const gates = new Map<number, ReturnType<typeof gate>>();
    let running = 0;
    let peak = 0;
    const started: number[] = [];
    const done: number[] = [];
    const p = runPool([1, 2, 3, 4, 5, 6, 7], 3, async (i) => {
      running++;
      peak = Math.max(peak, running);
      started.push(i);
      const g = gate();
      gates.set(i, g);
      await g.promise;
      done.push(i);
      running--;
    });
    await settle();
    expect(started).toEqual([1, 2, 3]);
    // Ending the calls out of order: each end starts exactly one more, in item order.
    for (const [end, next] of [[2, 4], [1, 5], [4, 6], [3, 7]] as const) {
      gates.get(end)!.open();
      await settle();
      expect(started.at(-1)).toBe(next);
      expect(running).toBe(3);
    }
    for (const i of [5, 6, 7]) gates.get(i)!.open();
    await p;
    expect(peak).toBe(3);
    expect(started).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(done.sort()).toEqual([1, 2, 3, 4, 5, 6, 7]);
  });

  it('stops starting new calls after a failure and throws the first error once in-flight calls settle', async () => {
    const gates = new Map<number, ReturnType<typeof gate>>();
    const started: number[] = [];
    let settled = 0;
    let outcome: 'pending' | 'rejected' | 'resolved' = 'pending';
    const p = runPool([1, 2, 3, 4, 5, 6], 2, async (i) => {
      started.push(i);
      const g = gate();
      gates.set(i, g);
      try {
        await g.promise;
      } finally {
        settled++;
      }
    });
    void p.then(
      () => (outcome = 'resolved'),
      () => (outcome = 'rejected'),
    );
    await settle();
    expect(started).toEqual([1, 2]);
    gates.get(1)!.fail(new Error('first'));
    await settle();
    // No new call after the failure, and no result while call 2 is still in flight.
    expect(started).toEqual([1, 2]);
    expect(outcome).toBe('pending');
    gates.get(2)!.fail(new Error('second'));
    await expect(p).rejects.toThrow('first');
    expect(started).toEqual([1, 2]);
    expect(settled).toBe(2);
  });
});
