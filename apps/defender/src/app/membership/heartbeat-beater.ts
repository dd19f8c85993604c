import type { Heartbeat } from '@defender/contracts';

/** The heartbeat as the main thread last described it; the beater adds `sentAt`. */
export type HeartbeatSnapshot = Omit<Heartbeat, 'sentAt'>;

/** What one beat writes through (the stable-ID claim and the heartbeat key). */
export interface BeatWriter {
  /** Refreshes the stable-ID claim (StableIdRegistry.refresh); throws ClaimLostError when another process took it. */
  refreshClaim(): Promise<void>;
  publish(hb: Heartbeat): Promise<void>;
}

/** What a tick did. */
export type TickOutcome =
  | { readonly kind: 'beat' }
  | { readonly kind: 'failed'; readonly error: unknown }
  /** The main thread was silent longer than `hangAfterMs`: nothing written (first tick of a silence only). */
  | { readonly kind: 'withheld'; readonly silentMs: number }
  /** Nothing due (between beats, a beat still in flight, or a silence already reported). */
  | { readonly kind: 'none' };

export interface BeaterOptions {
  /** HEARTBEAT_INTERVAL_SECONDS in ms: one beat per interval, at a fixed rate. */
  readonly intervalMs: number;
  /**
   * Longest the main thread may go without a pulse before beats are withheld (a hung event loop
   * must stop beating, so the controller judges the process dead). ADR 0013: two intervals.
   */
  readonly hangAfterMs: number;
  /** Monotonic clock, ms. */
  readonly monotonic: () => number;
  /** Wall clock, Unix ms (`sentAt`, for people). */
  readonly now: () => number;
}

/**
 * The heartbeat schedule of a defender, run off its main thread (ADR 0013): beats at a fixed rate,
 * each written in full (claim refresh, then heartbeat) before the next, as long as the main thread
 * has pulsed within `hangAfterMs`. After a silence it beats again on the first pulse, not at the
 * next slot. Liveness then depends on whether the main thread runs at all, not on how much work
 * is queued on it or on NATS round trips it would have to schedule.
 */
export class HeartbeatBeater {
  private snapshot: HeartbeatSnapshot;
  private lastPulse: number;
  private nextBeatAt: number;
  private inFlight = false;
  private silent = false;

  constructor(
    private readonly writer: BeatWriter,
    first: HeartbeatSnapshot,
    private readonly opts: BeaterOptions,
  ) {
    if (!(opts.intervalMs > 0) || !(opts.hangAfterMs > 0)) throw new RangeError(`intervalMs and hangAfterMs must be > 0 (got ${opts.intervalMs}, ${opts.hangAfterMs})`);
    this.snapshot = first;
    this.lastPulse = opts.monotonic();
    this.nextBeatAt = this.lastPulse;
  }

  /** The main thread ran (and, with a snapshot, says what to publish next). */
  pulse(snapshot?: HeartbeatSnapshot): void {
    this.lastPulse = this.opts.monotonic();
    if (snapshot) this.snapshot = snapshot;
  }

  /** Call often (a quarter interval or less): beats when one is due. */
  async tick(): Promise<TickOutcome> {
    if (this.inFlight) return { kind: 'none' };
    const t = this.opts.monotonic();
    const silentMs = t - this.lastPulse;
    if (silentMs > this.opts.hangAfterMs) {
      if (this.silent) return { kind: 'none' };
      this.silent = true;
      return { kind: 'withheld', silentMs };
    }
    if (!this.silent && t < this.nextBeatAt) return { kind: 'none' };
    this.silent = false;
    // Fixed rate: the next slot does not move by how long this write takes.
    while (this.nextBeatAt <= t) this.nextBeatAt += this.opts.intervalMs;
    this.inFlight = true;
    try {
      await this.writer.refreshClaim();
      await this.writer.publish({ ...this.snapshot, sentAt: new Date(this.opts.now()).toISOString() });
      return { kind: 'beat' };
    } catch (error) {
      return { kind: 'failed', error };
    } finally {
      this.inFlight = false;
    }
  }
}
