import type { NatsConnection } from '@nats-io/nats-core';
import type { KV } from '@nats-io/kv';
import { isNewerMap, type AssignmentMap } from '@defender/contracts';
import { AssignmentMapBucket, openBucket } from '@defender/nats-kv';
import { supervise } from '@defender/backoff';
import { historyEntry, type MapHistoryEntry } from './cluster-view';

/** Map versions kept in the movement history. */
export const MAP_HISTORY = 30;

/** What a {@link MapWatcher} needs. */
export interface MapWatcherDeps {
  readonly connection: () => Promise<NatsConnection>;
  /** The assignment map's bucket, and its replicas should the dashboard create it. */
  readonly bucket: string;
  readonly replicas: number;
  /** How often a failed watch is tried again, ms. */
  readonly retryMs: number;
  /** Shows (or, with `undefined`, clears) a problem line of the view. */
  readonly problem: (key: 'map' | 'map-watch', text: string | undefined) => void;
}

/**
 * The assignment map as the dashboard shows it: the newest map and its movement history, from a
 * KV watch that starts with the versions NATS keeps, watched for the dashboard's life and watched
 * again when NATS lost its store ({@link check}).
 */
export class MapWatcher {
  private current: AssignmentMap | null = null;
  private readonly entries: MapHistoryEntry[] = [];
  private stopWatch: (() => void) | undefined;
  /** The map bucket the watch reads, its stream's identity (`created`) then, and the newest revision delivered. */
  private mapKv: KV | undefined;
  private mapBucketCreated: string | undefined;
  private mapRevision = 0;
  /** NATS failed a read since the watch started: it may have lost its store (see {@link check}). */
  private watchSuspect = false;

  constructor(private readonly deps: MapWatcherDeps) {}

  /** The current map (with assignments), or null. */
  get map(): AssignmentMap | null {
    return this.current;
  }

  /** Every retained map version with its moves (oldest first). */
  get history(): readonly MapHistoryEntry[] {
    return this.entries;
  }

  /** Stops the running watch (at shutdown, after the signal given to {@link run} aborted). */
  stop(): void {
    this.stopWatch?.();
  }

  /**
   * Watches the map until `signal` aborts: while that fails (NATS down, or the bucket missing: this
   * read-only identity may not create it, issue 50), shows the problem and tries again every refresh
   * interval; a watch that ends (stopped by {@link check}, or by the server) is started again.
   */
  async run(signal: AbortSignal): Promise<void> {
    const everyMs = this.deps.retryMs;
    await supervise(() => this.watch(), {
      baseMs: everyMs,
      maxMs: everyMs,
      random: Math.random,
      signal,
      onFailure: (err) => this.deps.problem('map', `cannot watch the assignment map: ${(err as Error).message}`),
    });
  }

  /**
   * A watch (an ordered consumer) resumes after the sequence it delivered last; if NATS lost its store
   * and the bucket was created again, its revisions restart at 1 and the watch would wait past every new
   * map while the defenders run on them (issue 52: the map panel stayed at v1 for minutes). So at each
   * refresh: a bucket created anew (its stream's `created` is not the one watched), or a read that
   * failed since the watch started, stops the watch (watched again at once, from the history NATS
   * keeps: newer maps are shown and enter the movement history), and the view says its map may be
   * behind until it has caught up with the bucket's head.
   */
  async check(): Promise<void> {
    const kv = this.mapKv;
    if (!kv || !this.stopWatch) return;
    let created: string;
    let head: number;
    try {
      const status = await kv.status();
      created = status.streamInfo.created;
      head = status.streamInfo.state.last_seq;
    } catch (err) {
      this.watchSuspect = true;
      this.deps.problem('map-watch', `cannot read the assignment map's bucket (${(err as Error).message}): the map shown may be behind`);
      return;
    }
    const recreated = created !== this.mapBucketCreated;
    if (!recreated && !this.watchSuspect) {
      // Caught up with the bucket (its last revision delivered, or only older entries after it).
      if (this.mapRevision > 0 || head === 0) this.deps.problem('map-watch', undefined);
      return;
    }
    this.watchSuspect = false;
    const why = recreated ? `the assignment map's bucket was created again at ${created} (NATS lost its store?)` : 'NATS failed since the map watch started';
    this.deps.problem('map-watch', `${why}: watching the map again; the map shown may be behind until a newer one arrives`);
    this.mapRevision = 0;
    this.stopWatch();
    this.stopWatch = undefined;
  }

  private async watch(): Promise<void> {
    const { bucket, problem } = this.deps;
    const nc = await this.deps.connection();
    const kv = await openBucket(nc, bucket, { history: 5, replicas: this.deps.replicas });
    const created = (await kv.status()).streamInfo.created;
    const w = await new AssignmentMapBucket(kv, bucket).watchPublications(
      {
        onMap: ({ map: m, revision }) => {
          this.mapRevision = Math.max(this.mapRevision, revision);
          // Like a defender: a deposed leader's late map (lower token) is not the current one.
          if (!isNewerMap(m, this.current ?? undefined)) return;
          this.entries.push(historyEntry(this.current ?? undefined, m, revision));
          if (this.entries.length > MAP_HISTORY) this.entries.shift();
          this.current = m;
          problem('map', undefined);
          problem('map-watch', undefined);
        },
        onRejected: (revision, reason) => problem('map', `assignment map revision ${revision} not shown: ${reason}`),
      },
      { history: true },
    );
    this.mapKv = kv;
    this.mapBucketCreated = created;
    this.stopWatch = () => w.stop();
    await w.done;
  }
}
