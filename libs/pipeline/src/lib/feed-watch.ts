import { exponentialBackoff } from '@defender/backoff';

/** A running wake-up feed (e.g. `watchNotifications` of libs/nats-kv). */
export interface WatchedFeed {
  /** Stops the feed; a stopped feed does not report that it ended. */
  stop(): Promise<void>;
}

/** What a {@link FeedWatch} tells its app (logs, metrics) about the feed's life. */
export interface FeedWatchObserver {
  /** The feed ended on its own (not stopped): it is watched again after a backoff. */
  ended?(): void;
  /** Re-watch number `attempt` (0 for the first) failed with `err`: the next one follows after a longer backoff. */
  rewatchFailed?(attempt: number, err: unknown): void;
  /** Watching again after `attempts` failed re-watches. */
  rewatched?(attempts: number): void;
}

/** What a {@link FeedWatch} needs. */
export interface FeedWatchDeps {
  /**
   * Starts the feed; it must call `ended` if the feed ends without `stop()` (the consumer was
   * deleted, the stream went away). Throws if the feed cannot start.
   */
  readonly watch: (ended: () => void) => Promise<WatchedFeed>;
  /** Resolves after `ms`, or at once when `signal` aborts. */
  readonly sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  /** Uniform [0, 1) for the backoff's jitter (`Math.random` in the app, a seeded one in tests). */
  readonly random: () => number;
  /**
   * Called after every re-watch (after an end) and restart: notifications stored while no feed ran
   * were not seen, so whoever waits on the feed should re-check (the supervisor wakes every worker).
   */
  readonly resumed: () => void;
  /** Backoff between re-watches, ms (@defender/backoff, equal jitter): default 500 doubling up to 10 000. */
  readonly backoff?: { readonly baseMs: number; readonly maxMs: number };
  readonly observer?: FeedWatchObserver;
}

const DEFAULT_BACKOFF = { baseMs: 500, maxMs: 10_000 } as const;

/**
 * Keeps one wake-up feed running: started by {@link FeedWatch.start}, watched again whenever it ends
 * on its own (with a growing backoff while re-watching fails), started anew by
 * {@link FeedWatch.restart} (the stream was recreated: an ordered consumer would resume past the new
 * stream's first sequences), and stopped for good by {@link FeedWatch.stop}. The clock is the
 * injected `sleep`.
 */
export class FeedWatch {
  private feed: WatchedFeed | undefined;
  /** The newest start: an older one that finishes later, or ends, is stale. */
  private current: symbol | undefined;
  private readonly stopped = new AbortController();

  constructor(private readonly deps: FeedWatchDeps) {}

  /** Whether a feed is running now. */
  get watching(): boolean {
    return this.feed !== undefined;
  }

  /**
   * Starts the feed; does nothing while one runs (started, or restarted meanwhile) and after {@link stop}.
   * @throws whatever `watch` throws: the first start is the caller's to retry.
   */
  async start(): Promise<void> {
    if (this.feed) return;
    await this.open(this.begin());
  }

  /**
   * Stops the running feed and starts a new one from now (a re-watch in progress gives way to it),
   * then reports `resumed`: a notification stored between the old feed's stop and the new one's
   * start woke nobody (without it a chamber whose last run fell in that gap waited for its next run).
   * @throws whatever `watch` throws; no feed runs then, and the caller retries.
   */
  async restart(): Promise<void> {
    if (this.stopped.signal.aborted) return;
    const old = this.feed;
    this.feed = undefined;
    this.current = undefined;
    await old?.stop();
    if (await this.open(this.begin())) this.deps.resumed();
  }

  /** Stops the feed and any re-watch in progress, for good. */
  async stop(): Promise<void> {
    this.stopped.abort();
    this.current = undefined;
    const feed = this.feed;
    this.feed = undefined;
    await feed?.stop();
  }

  /** A new start: every older one is stale from now on. */
  private begin(): symbol {
    const token = Symbol('feed');
    this.current = token;
    return token;
  }

  /** Starts the feed of `token`; false if a newer start or a stop superseded it meanwhile (then it is stopped again). */
  private async open(token: symbol): Promise<boolean> {
    if (this.stopped.signal.aborted) return false;
    const feed = await this.deps.watch(() => {
      if (this.current === token) void this.rewatch(token);
    });
    if (this.current !== token || this.stopped.signal.aborted) {
      await feed.stop();
      return false;
    }
    this.feed = feed;
    return true;
  }

  /** The feed of `token` ended: watch again until it runs, a newer start takes over, or stop. */
  private async rewatch(token: symbol): Promise<void> {
    if (this.stopped.signal.aborted) return;
    this.feed = undefined;
    this.deps.observer?.ended?.();
    const backoff = exponentialBackoff({ ...(this.deps.backoff ?? DEFAULT_BACKOFF), random: this.deps.random });
    for (let attempt = 0; ; attempt++) {
      await this.deps.sleep(backoff.next(), this.stopped.signal);
      // Stopped, or restarted meanwhile: that start owns the feed now.
      if (this.stopped.signal.aborted || this.current !== token) return;
      token = this.begin();
      try {
        if (!(await this.open(token))) return;
      } catch (err) {
        if (this.current !== token) return;
        this.deps.observer?.rewatchFailed?.(attempt, err);
        continue;
      }
      this.deps.observer?.rewatched?.(attempt);
      this.deps.resumed();
      return;
    }
  }
}
