/** One heartbeat key as read from the bucket. */
export interface HeartbeatReading {
  readonly id: string;
  /** KV revision of the entry; a new heartbeat always has a new revision. */
  readonly revision: number;
}

/** A defender and when this observer last saw its heartbeat change (ms on the observer's monotonic clock). */
export interface HeartbeatSeen {
  readonly id: string;
  readonly lastHeartbeatAt: number;
}

/**
 * Judges heartbeat age by the observer's own clock: a heartbeat counts as fresh at the moment the
 * observer first sees its revision change, so neither the defenders' nor the NATS server's clock
 * matters. A defender seen for the first time is stamped with the time of that reading. Entries
 * that disappear from the bucket are dropped.
 *
 * Pass a monotonic clock (`performance.now()`): with the wall clock, a step forward would age every
 * heartbeat at once (a false crash map) and a step back would keep a dead defender alive.
 */
export class HeartbeatClock {
  private readonly seen = new Map<string, { revision: number; at: number }>();

  /**
   * Records a full reading of the bucket taken at `now` (monotonic ms) and returns every defender's
   * last-seen time. With `afterBlindness` (the observer could not read the bucket for a while before
   * this reading), every defender in it counts as seen now: a heartbeat that could not be observed,
   * or not written (NATS unavailable to all), is not held against anyone. A defender that died
   * meanwhile is judged from this reading on, one detection time later.
   */
  observe(readings: readonly HeartbeatReading[], now: number, opts: { afterBlindness?: boolean } = {}): HeartbeatSeen[] {
    const present = new Set<string>();
    for (const r of readings) {
      present.add(r.id);
      const prev = this.seen.get(r.id);
      if (!prev || prev.revision !== r.revision || opts.afterBlindness) this.seen.set(r.id, { revision: r.revision, at: now });
    }
    for (const id of [...this.seen.keys()]) if (!present.has(id)) this.seen.delete(id);
    return [...this.seen.entries()]
      .map(([id, s]) => ({ id, lastHeartbeatAt: s.at }))
      .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }
}
