import type { ChamberMetadata } from '@defender/contracts';
import { ChamberWeightCache, TtlCache } from './ttl-cache';

describe('TtlCache', () => {
  it('reuses a value for the TTL and reloads after it', async () => {
    let now = 1_000;
    let n = 0;
    const cache = new TtlCache(async () => ++n, 60_000, () => now);
    expect(await cache.get()).toBe(1);
    now += 59_999;
    expect(await cache.get()).toBe(1);
    now += 1;
    expect(await cache.get()).toBe(2);
    expect(cache.loadCount).toBe(2);
    expect(cache.ageMs()).toBe(0);
  });

  it('shares one load between concurrent callers and does not cache failures', async () => {
    const now = 0;
    let calls = 0;
    let fail = true;
    // The first load stays in flight until the test ends it.
    let endLoad!: () => void;
    const loading = new Promise<void>((r) => (endLoad = r));
    const cache = new TtlCache(
      async () => {
        calls++;
        if (fail) {
          await loading;
          throw new Error('store down');
        }
        return 'ok';
      },
      1_000,
      () => now,
    );
    const waiting = Promise.allSettled([cache.get(), cache.get(), cache.get()]);
    expect(calls).toBe(1);
    endLoad();
    const results = await waiting;
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected']);
    expect(results.map((r) => (r as PromiseRejectedResult).reason.message)).toEqual(['store down', 'store down', 'store down']);
    expect(calls).toBe(1);
    expect(cache.peek()).toBeUndefined();
    fail = false;
    expect(await cache.get()).toBe('ok');
    expect(calls).toBe(2);
  });

  it('invalidate forces the next get to load', async () => {
    let n = 0;
    const cache = new TtlCache(async () => ++n, 1_000_000, () => 0);
    await cache.get();
    cache.invalidate();
    expect(await cache.get()).toBe(2);
  });
});

describe('ChamberWeightCache', () => {
  const row = (toolId: string, chamberId: string, weight: number): ChamberMetadata => ({
    toolId,
    chamberId,
    svidCount: 1,
    collectionFreqHz: 1,
    contextDurationSeconds: weight,
    weight,
    lastUpdated: new Date(0),
    source: 'configured',
    observedRuns: 0,
  });

  it('keys weights by chamber key and reads the repository once per WEIGHT_CACHE_TTL_SECONDS', async () => {
    let now = 0;
    let lists = 0;
    const repo = {
      list: async () => {
        lists++;
        return [row('tool001', 'chamber1', 30_000), row('tool001', 'chamber2', 3_600_000)];
      },
    };
    const cache = new ChamberWeightCache(repo, 3600, () => now);
    expect(await cache.weights()).toEqual(new Map([
      ['tool001:chamber1', 30_000],
      ['tool001:chamber2', 3_600_000],
    ]));
    now += 3_599_000;
    await cache.metadata();
    expect(lists).toBe(1);
    now += 1_000;
    await cache.weights();
    expect(lists).toBe(2);
    cache.invalidate();
    await cache.weights();
    expect(cache.loadCount).toBe(3);
  });
});
