import fc from 'fast-check';
import { ByteBudget } from './semaphore';

const tick = () => new Promise<void>((r) => setImmediate(r));

describe('ByteBudget', () => {
  it('grants within capacity at once and makes the next request wait for a release', async () => {
    const b = new ByteBudget(100);
    const r1 = await b.acquire(60);
    let granted = false;
    const p = b.acquire(50).then((r) => ((granted = true), r));
    await tick();
    expect(granted).toBe(false);
    expect(b.waiting).toBe(1);
    r1();
    const r2 = await p;
    expect(granted).toBe(true);
    expect(b.inUse).toBe(50);
    r2();
    r2(); // idempotent
    expect(b.inUse).toBe(0);
  });

  it('clamps a request larger than the capacity so it runs alone instead of waiting forever', async () => {
    const b = new ByteBudget(100);
    const small = await b.acquire(10);
    const big = b.acquire(10_000);
    await tick();
    expect(b.waiting).toBe(1);
    small();
    const release = await big;
    expect(b.inUse).toBe(100);
    release();
    expect(b.inUse).toBe(0);
  });

  it('serves waiters in arrival order: a big request is not overtaken by smaller ones that would fit', async () => {
    const b = new ByteBudget(100);
    const first = await b.acquire(70);
    const order: string[] = [];
    const big = b.acquire(80).then((r) => (order.push('big'), r));
    const small = b.acquire(10).then((r) => (order.push('small'), r));
    await tick();
    expect(order).toEqual([]); // 10 would fit next to 70, but the 80 came first
    first();
    (await big)();
    (await small)();
    expect(order).toEqual(['big', 'small']);
  });

  it('charge takes bytes without waiting and holds back later requests until it is released', async () => {
    const b = new ByteBudget(100);
    const charged = b.charge(150);
    expect(b.inUse).toBe(150);
    let granted = false;
    const p = b.acquire(1).then((r) => ((granted = true), r));
    await tick();
    expect(granted).toBe(false);
    charged();
    (await p)();
    expect(b.inUse).toBe(0);
  });

  it('rejects a bad capacity or size with a clear error', async () => {
    expect(() => new ByteBudget(0)).toThrow(/capacity must be a positive integer/);
    await expect(new ByteBudget(10).acquire(Number.NaN)).rejects.toThrow(/bytes must be a finite number/);
    await expect(new ByteBudget(10).acquire(-1)).rejects.toThrow(/bytes must be a finite number/);
  });

  it('property: concurrent holders never exceed the capacity, and every request is granted', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 1000 }), fc.array(fc.tuple(fc.integer({ min: 0, max: 1500 }), fc.integer({ min: 0, max: 3 })), { maxLength: 40 }), async (capacity, reqs) => {
        const b = new ByteBudget(capacity);
        let peak = 0;
        let done = 0;
        await Promise.all(
          reqs.map(async ([bytes, hold]) => {
            const release = await b.acquire(bytes);
            peak = Math.max(peak, b.inUse);
            for (let i = 0; i < hold; i++) await tick();
            release();
            done++;
          }),
        );
        expect(peak).toBeLessThanOrEqual(capacity);
        expect(done).toBe(reqs.length);
        expect(b.inUse).toBe(0);
        expect(b.waiting).toBe(0);
      }),
      { seed: 20261126, numRuns: 200 },
    );
  });
});
