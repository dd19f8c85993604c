/** What a {@link MapWatchGuard} reads and does. */
export interface MapWatchGuardDeps {
  /** The map bucket's identity now (its stream's creation); throws when NATS does not answer. */
  readonly identity: () => Promise<string>;
  /** Stops the running watch, which its supervisor starts again at once (re-reading the current map). */
  readonly rewatch: (why: string) => void;
}

/**
 * Keeps the assignment-map watch on the bucket that exists now (ADR 0007). A watch is an ordered
 * consumer: when NATS lost its store and the bucket was created again, revisions restart at 1 and
 * the watch would resume past every new map, so the defender would stay on the last map it saw
 * while the others move on. Checked every heartbeat: a bucket whose identity is not the one the
 * watch started on, or a NATS failure since the watch started, watches again (only a newer map is
 * applied, so a needless re-watch costs one read). A defender whose own heartbeats never failed
 * (NATS came back between two of them, and another process created the buckets again) is caught by
 * the identity; one that could not read the identity when its watch started re-watches at the first
 * check that can.
 */
export class MapWatchGuard {
  /** The identity the running watch started on; undefined when unknown (or no watch runs). */
  private watched: string | undefined;
  private suspect = false;
  private checking = false;

  constructor(private readonly deps: MapWatchGuardDeps) {}

  /**
   * A watch is about to start: reads the bucket's identity it starts on (unknown if that fails:
   * the next check then watches again). Never throws.
   */
  async starting(): Promise<void> {
    this.suspect = false;
    this.watched = await this.deps.identity().catch(() => undefined);
  }

  /** NATS failed us (a heartbeat failed): the next check that reaches NATS watches again. */
  natsFailed(): void {
    this.suspect = true;
  }

  /** One check (every heartbeat); does nothing while another runs. Never throws. */
  async check(): Promise<void> {
    if (this.checking) return;
    this.checking = true;
    try {
      let now: string;
      try {
        now = await this.deps.identity();
      } catch {
        this.suspect = true;
        return;
      }
      const why = this.suspect
        ? 'NATS failed since the map watch started'
        : this.watched === undefined
          ? 'the map bucket was not known when the watch started'
          : now !== this.watched
            ? `the map bucket was created again at ${now} (NATS lost its store?)`
            : undefined;
      if (why === undefined) return;
      this.suspect = false;
      // The next watch records its own identity; until then a check does not fire twice.
      this.watched = now;
      this.deps.rewatch(why);
    } finally {
      this.checking = false;
    }
  }
}
