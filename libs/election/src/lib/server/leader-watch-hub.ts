import { LeaderView, leaseOrder, LeaseSnapshot, notOlderLease, viewOf } from '../lease';
import { LeaseStore, WatchHandle } from '../lease-store';

export interface LeaderWatchHubOptions {
  store: LeaseStore;
  /** Wall clock in Unix ms. Default `Date.now`. */
  now?: () => number;
  /** How often each watched election is re-read in case a watch event was lost, in ms. Default 1000. */
  resyncMs?: number;
  /** Reports a failed read or watch (the hub keeps trying). */
  onError?: (err: unknown, election: string) => void;
}

export type LeaderListener = (view: LeaderView) => void;

/** The identity of a view for change detection: renewals of the same term are not changes. */
export function viewKey(view: LeaderView): string {
  return `${view.state}|${view.leader ?? ''}|${view.fencingToken}`;
}

/**
 * Fans out leader changes of elections to any number of listeners with one KV watch per election.
 * A change is a new term, a release, or an expiry: nats-server (before 2.11) sends nothing when a
 * lease merely runs out, and the record never ages out anyway, so each election also has a timer
 * at its lease end, judged by this agent's clock. A periodic re-read covers lost watch events and
 * NATS restarts.
 */
export class LeaderWatchHub {
  private readonly channels = new Map<string, Channel>();
  private readonly now: () => number;
  private closed = false;

  constructor(private readonly opts: LeaderWatchHubOptions) {
    this.now = opts.now ?? Date.now;
  }

  /**
   * Calls `listener` with the current view as soon as it is known, then with every change.
   * @returns unsubscribe; the election's watch stops with its last listener.
   */
  subscribe(election: string, listener: LeaderListener): () => void {
    if (this.closed) throw new Error('LeaderWatchHub is closed');
    let channel = this.channels.get(election);
    if (channel === undefined) {
      channel = new Channel(election, this.opts, this.now);
      this.channels.set(election, channel);
      channel.start();
    }
    const ch = channel;
    ch.add(listener);
    return () => {
      if (ch.remove(listener) === 0) {
        ch.stop();
        if (this.channels.get(election) === ch) this.channels.delete(election);
      }
    };
  }

  /** Number of elections watched right now. */
  size(): number {
    return this.channels.size;
  }

  close(): void {
    this.closed = true;
    for (const ch of this.channels.values()) ch.stop();
    this.channels.clear();
  }
}

class Channel {
  private readonly listeners = new Set<LeaderListener>();
  private snapshot: LeaseSnapshot | undefined;
  private lastKey: string | undefined;
  private watch: WatchHandle | undefined;
  private resyncTimer: NodeJS.Timeout | undefined;
  private expiryTimer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly election: string,
    private readonly opts: LeaderWatchHubOptions,
    private readonly now: () => number,
  ) {}

  start(): void {
    void this.resync();
    this.resyncTimer = setInterval(() => void this.resync(), this.opts.resyncMs ?? 1000);
    void this.watchLoop();
  }

  add(listener: LeaderListener): void {
    this.listeners.add(listener);
    if (this.snapshot !== undefined) listener(viewOf(this.election, this.snapshot, this.now()));
  }

  remove(listener: LeaderListener): number {
    this.listeners.delete(listener);
    return this.listeners.size;
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.resyncTimer);
    clearTimeout(this.expiryTimer);
    this.watch?.stop();
  }

  private async watchLoop(): Promise<void> {
    while (!this.stopped) {
      try {
        const handle = await this.opts.store.watch(this.election, (s) => this.apply(s));
        if (this.stopped) {
          handle.stop();
          return;
        }
        this.watch = handle;
        await handle.closed;
      } catch (err) {
        this.opts.onError?.(err, this.election);
      }
      if (!this.stopped) await new Promise((r) => setTimeout(r, this.opts.resyncMs ?? 1000));
    }
  }

  private async resync(): Promise<void> {
    try {
      this.apply(await this.opts.store.get(this.election));
    } catch (err) {
      this.opts.onError?.(err, this.election);
    }
  }

  private apply(snapshot: LeaseSnapshot): void {
    if (this.stopped) return;
    // A re-read can answer after a newer watch event: never go back to an older one (by term, then
    // revision: a bucket created again restarts its revisions, never its tokens).
    if (this.snapshot !== undefined && !notOlderLease(leaseOrder(snapshot), leaseOrder(this.snapshot))) return;
    this.snapshot = snapshot;
    this.evaluate();
  }

  private evaluate(): void {
    if (this.stopped || this.snapshot === undefined) return;
    const now = this.now();
    const view = viewOf(this.election, this.snapshot, now);
    const key = viewKey(view);
    if (key !== this.lastKey) {
      this.lastKey = key;
      for (const l of this.listeners) l(view);
    }
    clearTimeout(this.expiryTimer);
    if (view.state === 'held') {
      this.expiryTimer = setTimeout(() => this.evaluate(), Math.max(1, view.leaseExpiresAtMs - now + 1));
    }
  }
}
