import { backoffDelayMs } from '@defender/backoff';
import { FeedWatch, FeedWatchDeps } from './feed-watch';

/** A feed the test ends, and whether it was stopped. */
interface FakeFeed {
  readonly n: number;
  end(): void;
  stopped: boolean;
}

/** A watch whose feeds and sleeps the test drives: no timers, the test says when a sleep is over. */
function setup(opts: { random?: number } = {}) {
  const feeds: FakeFeed[] = [];
  const sleeps: { ms: number; wake: () => void }[] = [];
  const events: string[] = [];
  /** The next this many watches fail. */
  let failures = 0;
  let watchCalls = 0;
  const deps: FeedWatchDeps = {
    watch: async (ended) => {
      watchCalls++;
      if (failures > 0) {
        failures--;
        throw new Error('stream not found');
      }
      const feed: FakeFeed = {
        n: feeds.length,
        end: ended,
        stopped: false,
      };
      feeds.push(feed);
      return {
        stop: async () => {
          feed.stopped = true;
        },
      };
    },
    sleep: (ms, signal) =>
      new Promise<void>((resolve) => {
        sleeps.push({ ms, wake: resolve });
        signal.addEventListener('abort', () => resolve(), { once: true });
      }),
    random: () => opts.random ?? 0.5,
    resumed: () => events.push('resumed'),
    observer: {
      ended: () => events.push('ended'),
      rewatchFailed: (attempt, err) => events.push(`failed ${attempt} ${(err as Error).message}`),
      rewatched: (attempts) => events.push(`rewatched after ${attempts}`),
    },
  };
  const w = new FeedWatch(deps);
  /** Lets the promises the last step started settle. */
  const settle = async () => {
    for (let i = 0; i < 10; i++) await Promise.resolve();
  };
  /** Ends the pending sleep (the oldest one not woken yet). */
  let woken = 0;
  const wake = async () => {
    const s = sleeps[woken++];
    if (!s) throw new Error('no sleep pending');
    s.wake();
    await settle();
  };
  const failNext = (n: number) => {
    failures = n;
  };
  return { w, feeds, sleeps, events, wake, settle, failNext, watchCalls: () => watchCalls };
}

const delay = (attempt: number, random = 0.5) => backoffDelayMs(attempt, { baseMs: 500, maxMs: 10_000, random: () => random });

describe('FeedWatch', () => {
  it('watches once on start and does not sleep while the feed runs', async () => {
    const { w, feeds, sleeps, events } = setup();
    await w.start();
    expect(feeds.map((f) => f.stopped)).toEqual([false]);
    expect(w.watching).toBe(true);
    expect(sleeps).toEqual([]);
    expect(events).toEqual([]);
  });

  it('start() while a feed runs (restarted meanwhile) keeps that feed', async () => {
    const { w, feeds, watchCalls } = setup();
    await w.start();
    await w.restart();
    await w.start();
    expect(watchCalls()).toBe(2);
    expect(feeds.map((f) => f.stopped)).toEqual([true, false]);
    expect(w.watching).toBe(true);
  });

  it('propagates a failed first start: the caller retries it', async () => {
    const { w, feeds, sleeps, failNext } = setup();
    failNext(1);
    await expect(w.start()).rejects.toThrow('stream not found');
    expect(feeds).toEqual([]);
    expect(sleeps).toEqual([]);
    expect(w.watching).toBe(false);
  });

  it('watches again after the feed ends, after a backoff, and has the workers re-check', async () => {
    const { w, feeds, sleeps, events, wake, settle } = setup();
    await w.start();
    feeds[0]!.end();
    await settle();
    expect(events).toEqual(['ended']);
    expect(w.watching).toBe(false);
    expect(sleeps.map((s) => s.ms)).toEqual([delay(0)]);
    expect(feeds).toHaveLength(1);
    await wake();
    expect(feeds).toHaveLength(2);
    expect(w.watching).toBe(true);
    expect(events).toEqual(['ended', 'rewatched after 0', 'resumed']);
  });

  it('backs off longer after each failed re-watch (@defender/backoff, capped at 10 s), reporting each failure', async () => {
    const { w, feeds, sleeps, events, wake, settle, failNext } = setup({ random: 0 });
    await w.start();
    failNext(6);
    feeds[0]!.end();
    await settle();
    for (let i = 0; i < 7; i++) await wake();
    // Equal jitter with random 0: half of min(10 000, 500 * 2^attempt).
    expect(sleeps.map((s) => s.ms)).toEqual([250, 500, 1000, 2000, 4000, 5000, 5000]);
    expect(sleeps.map((s) => s.ms)).toEqual([0, 1, 2, 3, 4, 5, 6].map((a) => delay(a, 0)));
    expect(events).toEqual([
      'ended',
      ...[0, 1, 2, 3, 4, 5].map((a) => `failed ${a} stream not found`),
      'rewatched after 6',
      'resumed',
    ]);
    expect(feeds).toHaveLength(2);
    expect(w.watching).toBe(true);
  });

  it('starts the backoff again at its first delay for the next end', async () => {
    const { w, feeds, sleeps, wake, settle, failNext } = setup({ random: 0 });
    await w.start();
    failNext(2);
    feeds[0]!.end();
    await settle();
    for (let i = 0; i < 3; i++) await wake();
    feeds[1]!.end();
    await settle();
    await wake();
    expect(sleeps.map((s) => s.ms)).toEqual([250, 500, 1000, 250]);
    expect(feeds).toHaveLength(3);
  });

  it('stops on stop(): the running feed is stopped and an end afterwards is not re-watched', async () => {
    const { w, feeds, sleeps, events, settle, watchCalls } = setup();
    await w.start();
    const end = feeds[0]!.end;
    await w.stop();
    expect(feeds[0]!.stopped).toBe(true);
    expect(w.watching).toBe(false);
    end();
    await settle();
    expect(sleeps).toEqual([]);
    expect(events).toEqual([]);
    expect(watchCalls()).toBe(1);
  });

  it('stops on stop() during the backoff: the sleep is cut short and nothing is watched again', async () => {
    const { w, feeds, sleeps, events, settle, watchCalls } = setup();
    await w.start();
    feeds[0]!.end();
    await settle();
    expect(sleeps).toHaveLength(1);
    await w.stop();
    await settle();
    expect(watchCalls()).toBe(1);
    expect(w.watching).toBe(false);
    expect(events).toEqual(['ended']);
    // A start after stop does nothing.
    await w.start();
    await w.restart();
    expect(watchCalls()).toBe(1);
  });

  it('stops a feed whose start finished after stop()', async () => {
    let release: () => void = () => undefined;
    let stopped = false;
    const w = new FeedWatch({
      watch: () =>
        new Promise((resolve) => {
          release = () => resolve({ stop: async () => void (stopped = true) });
        }),
      sleep: async () => undefined,
      random: () => 0.5,
      resumed: () => undefined,
    });
    const starting = w.start();
    await w.stop();
    release();
    await starting;
    expect(stopped).toBe(true);
    expect(w.watching).toBe(false);
  });

  it('restart() replaces the running feed with a new one, without reporting an end, and reports it resumed (the gap between the feeds woke nobody)', async () => {
    const { w, feeds, sleeps, events } = setup();
    await w.start();
    await w.restart();
    expect(feeds.map((f) => f.stopped)).toEqual([true, false]);
    expect(w.watching).toBe(true);
    expect(sleeps).toEqual([]);
    expect(events).toEqual(['resumed']);
  });

  it('restart() propagates a failed start (no feed runs; the caller retries)', async () => {
    const { w, feeds, sleeps, failNext } = setup();
    await w.start();
    failNext(1);
    await expect(w.restart()).rejects.toThrow('stream not found');
    expect(feeds.map((f) => f.stopped)).toEqual([true]);
    expect(w.watching).toBe(false);
    expect(sleeps).toEqual([]);
  });

  it('a restart during the backoff takes over: the re-watch gives way, and the stale feed\'s end is ignored', async () => {
    const { w, feeds, sleeps, events, wake, settle, watchCalls } = setup();
    await w.start();
    const staleEnd = feeds[0]!.end;
    staleEnd();
    await settle();
    await w.restart();
    await wake();
    expect(watchCalls()).toBe(2);
    expect(feeds.map((f) => f.stopped)).toEqual([false, false]);
    expect(w.watching).toBe(true);
    staleEnd();
    await settle();
    expect(sleeps).toHaveLength(1);
    expect(events).toEqual(['ended', 'resumed']); // the restart's resume; the stale end reports nothing
    // The new feed's own end is re-watched.
    feeds[1]!.end();
    await settle();
    await wake();
    expect(feeds).toHaveLength(3);
    expect(events).toEqual(['ended', 'resumed', 'ended', 'rewatched after 0', 'resumed']);
  });
});
