import { runPool } from './pool';

describe('runPool', () => {
  it('never runs more than `concurrency` calls at once and runs every item', async () => {
    let running = 0;
    let peak = 0;
    const done: number[] = [];
    await runPool([1, 2, 3, 4, 5, 6, 7], 3, async (i) => {
      running++;
      peak = Math.max(peak, running);
      await new Promise((r) => setTimeout(r, 2));
      done.push(i);
      running--;
    });
    expect(peak).toBe(3);
    expect(done.sort()).toEqual([1, 2, 3, 4, 5, 6, 7]);
  });

  it('stops starting new calls after a failure and throws the first error once in-flight calls settle', async () => {
    const started: number[] = [];
    let settled = 0;
    const p = runPool([1, 2, 3, 4, 5, 6], 2, async (i) => {
      started.push(i);
      await new Promise((r) => setTimeout(r, i === 1 ? 1 : 5));
      settled++;
      if (i === 1) throw new Error('first');
    });
    await expect(p).rejects.toThrow('first');
    expect(started).toEqual([1, 2]);
    expect(settled).toBe(2);
  });
});
