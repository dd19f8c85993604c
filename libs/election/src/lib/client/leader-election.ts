import { performance } from 'node:perf_hooks';
import { type Backoff, exponentialBackoff } from '@defender/backoff';
import { ElectionCallError } from '../errors';
import { LeaderView } from '../lease';
import { LeaseInfo } from '../proto';
import { CampaignRequest, LeaseRequest, MAX_MIN_TOKEN } from '../validation';
import { CallOptions, ObserveHandle } from './election-client';

/** What {@link LeaderElection} needs from the agents; {@link ElectionClient} implements it. */
export interface ElectionTransport {
  campaign(req: CampaignRequest, call?: CallOptions): Promise<LeaseInfo>;
  renew(req: LeaseRequest, call?: CallOptions): Promise<LeaseInfo>;
  release(req: LeaseRequest, call?: CallOptions): Promise<{ released: boolean; leader: LeaderView }>;
  /** Optional: lets a standby start campaigning the moment the lease is released. */
  observe?(
    election: string,
    handlers: { onState(view: LeaderView): void; onEnd(err?: ElectionCallError): void },
  ): ObserveHandle;
}

/** A term this process holds. */
export interface LeadershipTerm {
  readonly election: string;
  readonly candidate: string;
  /** Pass it with every write the leader makes, so the store can reject a deposed leader's writes. */
  readonly fencingToken: number;
  /** Agent clock, Unix ms. */
  readonly acquiredAtMs: number;
}

/**
 * Why leadership ended: `lost` (an agent said the term is no longer ours), `renew-deadline` (no
 * renewal succeeded within the renew deadline), `stopped` ({@link LeaderElection.stop}).
 */
export type DeposedReason = 'lost' | 'renew-deadline' | 'stopped';

export interface LeaderElectionOptions {
  transport: ElectionTransport;
  election: string;
  /** Unique per process: two processes with one ID would both believe they lead. */
  candidate: string;
  /** Lease TTL in ms (ELECTION_TTL_SECONDS x 1000). */
  ttlMs: number;
  /**
   * The highest fencing token this candidate has seen used (e.g. the newest map's), asked before
   * each Campaign: a new term's token is granted above it, so a term started after the agents lost
   * their store still outranks what earlier terms wrote. A failure or 0 means no floor.
   */
  minToken?: () => number | Promise<number>;
  /** Renew this long after the last successful renewal was sent. Default ttlMs / 2. */
  renewIntervalMs?: number;
  /**
   * Step down when no renewal sent within this many ms succeeded. Must be shorter than the TTL:
   * the lease runs from when the agent received the request (after we sent it), and no agent
   * grants it to another before the TTL plus the skew margin has passed, so `ttlMs -
   * renewDeadlineMs` is the margin for this process being late (timers, GC pauses). Default 0.8 x TTL.
   */
  renewDeadlineMs?: number;
  /** Deadline of one call to one agent. Default (renewDeadline - renewInterval) / 2, in 100..2000 ms. */
  callTimeoutMs?: number;
  /** Backoff between failed campaign calls (`exponentialBackoff`, equal jitter). Default 100 ms doubling to 2 s. */
  backoff?: { baseMs: number; maxMs: number };
  /** Uniform [0, 1) for jitter; inject a seeded one in tests. */
  random?: () => number;
  /** Monotonic clock in ms for deadlines. Default `performance.now`. */
  monotonicNow?: () => number;
  /** Called when this process becomes leader. Must not throw; may start work. */
  onElected(term: LeadershipTerm): void;
  /** Called when leadership ends; the process must stop acting as leader at once. */
  onDeposed(term: LeadershipTerm, reason: DeposedReason): void;
  /** Every lease answer that names this process as leader (audit, tests). */
  onLease?(lease: LeaseInfo): void;
  /** Failed calls (the loop retries by itself). */
  onError?(err: Error): void;
}

type State = 'follower' | 'leader';

/**
 * The client side of an election: campaigns with jittered backoff, renews every renew interval,
 * and steps down by itself when it cannot renew before its renew deadline, before any agent could
 * give the lease to another candidate. With agents' clocks within their skew margin of each other,
 * two processes never hold `isLeader() === true` at once.
 *
 * A standby waits for the `retryAfterMs` the agent reported (the current lease end plus skew
 * margin) and, when the transport can observe, wakes as soon as the lease is released.
 */
export class LeaderElection {
  private readonly renewIntervalMs: number;
  private readonly renewDeadlineMs: number;
  private readonly callTimeoutMs: number;
  private readonly random: () => number;
  private readonly mono: () => number;
  private readonly backoff: Backoff;
  private state: State = 'follower';
  private term: LeadershipTerm | undefined;
  /** Monotonic ms: when this process stops being leader unless a renewal succeeds first. */
  private stepDownAt = 0;
  private lastSentAt = 0;
  private stepDownTimer: NodeJS.Timeout | undefined;
  private running = false;
  private loop: Promise<void> | undefined;
  private wakeSleeper: (() => void) | undefined;
  private observeHandle: ObserveHandle | undefined;
  private observeRetry: NodeJS.Timeout | undefined;

  constructor(private readonly opts: LeaderElectionOptions) {
    this.renewIntervalMs = opts.renewIntervalMs ?? opts.ttlMs / 2;
    this.renewDeadlineMs = opts.renewDeadlineMs ?? opts.ttlMs * 0.8;
    if (!(
      this.renewIntervalMs > 0 &&
      this.renewIntervalMs < this.renewDeadlineMs &&
      this.renewDeadlineMs < opts.ttlMs
    )) {
      throw new RangeError(
        `need 0 < renewInterval (${this.renewIntervalMs}) < renewDeadline (${this.renewDeadlineMs}) < ttl (${opts.ttlMs}) ms`,
      );
    }
    this.callTimeoutMs =
      opts.callTimeoutMs ?? Math.min(2000, Math.max(100, (this.renewDeadlineMs - this.renewIntervalMs) / 2));
    this.random = opts.random ?? Math.random;
    this.mono = opts.monotonicNow ?? (() => performance.now());
    this.backoff = exponentialBackoff({ baseMs: 100, maxMs: 2000, ...opts.backoff, random: this.random });
  }

  /** Starts campaigning (idempotent). */
  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
  }

  /**
   * True while this process holds the term and its renew deadline has not passed. Check it right
   * before acting; a timer also calls `onDeposed` at the deadline, but timers can run late.
   */
  isLeader(): boolean {
    return this.state === 'leader' && this.mono() < this.stepDownAt;
  }

  /** The term held now, or undefined (same test as {@link isLeader}). */
  currentTerm(): LeadershipTerm | undefined {
    return this.isLeader() ? this.term : undefined;
  }

  /** Milliseconds until this process steps down unless it renews (0 when not leader). */
  leaseRemainingMs(): number {
    return this.isLeader() ? this.stepDownAt - this.mono() : 0;
  }

  /**
   * Stops campaigning. A leader steps down first (`onDeposed(..., 'stopped')`), then releases the
   * term so a standby takes over at once instead of after the TTL.
   */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    this.closeObserve();
    const held = this.state === 'leader' ? this.term : undefined;
    this.stepDown('stopped');
    this.wakeSleeper?.();
    await this.loop;
    if (held) await this.release(held);
  }

  private async run(): Promise<void> {
    while (this.running) {
      if (this.state === 'leader') await this.renewOnce();
      else await this.campaignOnce();
    }
  }

  private async campaignOnce(): Promise<void> {
    this.ensureObserve();
    const sentAt = this.mono();
    let lease: LeaseInfo;
    try {
      const minToken = await this.minToken();
      lease = await this.opts.transport.campaign(
        { election: this.opts.election, candidate: this.opts.candidate, ttlMs: this.opts.ttlMs, ...(minToken > 0 ? { minToken } : {}) },
        { timeoutMs: this.callTimeoutMs, attempts: 1 },
      );
    } catch (err) {
      this.report(err);
      await this.sleep(this.backoff.next());
      return;
    }
    this.backoff.reset();
    if (!lease.isLeader) {
      const jitter = this.random() * Math.min(50, this.opts.ttlMs / 20);
      await this.sleep(Math.min(lease.retryAfterMs, this.opts.ttlMs) + jitter);
      return;
    }
    this.opts.onLease?.(lease);
    if (!this.running) {
      // Won while stopping: hand the term back rather than sit on it until it expires.
      await this.release(this.termOf(lease));
      return;
    }
    // An answer that took longer than the renew deadline leaves no safe time to lead; the next
    // Campaign continues the same term with a fresh deadline.
    if (this.mono() >= sentAt + this.renewDeadlineMs) return;
    this.becomeLeader(lease, sentAt);
  }

  /** The candidate's token floor; a failure to read it is reported and means no floor this time. */
  private async minToken(): Promise<number> {
    if (!this.opts.minToken) return 0;
    try {
      const t = await this.opts.minToken();
      return Number.isSafeInteger(t) && t > 0 ? Math.min(t, MAX_MIN_TOKEN) : 0;
    } catch (err) {
      this.report(err);
      return 0;
    }
  }

  private async renewOnce(): Promise<void> {
    await this.sleep(this.lastSentAt + this.renewIntervalMs - this.mono());
    const term = this.term;
    while (this.running && this.state === 'leader' && term !== undefined && this.term === term) {
      const remaining = this.stepDownAt - this.mono();
      if (remaining <= 0) {
        this.stepDown('renew-deadline');
        return;
      }
      const sentAt = this.mono();
      let lease: LeaseInfo;
      try {
        lease = await this.opts.transport.renew(
          { election: term.election, candidate: term.candidate, fencingToken: term.fencingToken },
          { timeoutMs: Math.min(this.callTimeoutMs, remaining), attempts: 1 },
        );
      } catch (err) {
        this.report(err);
        // The client moved to the next agent; try again soon, within the deadline.
        await this.sleep(Math.min(25 + this.random() * 75, this.stepDownAt - this.mono()));
        continue;
      }
      if (this.state !== 'leader' || this.term !== term) return; // stepped down while the call ran
      if (lease.isLeader && lease.fencingToken === term.fencingToken) {
        this.opts.onLease?.(lease);
        this.extendTo(sentAt);
      } else {
        this.stepDown('lost');
      }
      return;
    }
  }

  private becomeLeader(lease: LeaseInfo, sentAt: number): void {
    this.closeObserve();
    this.state = 'leader';
    this.term = this.termOf(lease);
    this.extendTo(sentAt);
    try {
      this.opts.onElected(this.term);
    } catch (err) {
      this.report(err);
    }
  }

  private extendTo(sentAt: number): void {
    this.lastSentAt = sentAt;
    this.stepDownAt = sentAt + this.renewDeadlineMs;
    clearTimeout(this.stepDownTimer);
    this.stepDownTimer = setTimeout(
      () => this.stepDown('renew-deadline'),
      Math.max(0, this.stepDownAt - this.mono()),
    );
  }

  private stepDown(reason: DeposedReason): void {
    const term = this.term;
    if (this.state !== 'leader' || term === undefined) return;
    this.state = 'follower';
    this.stepDownAt = 0;
    clearTimeout(this.stepDownTimer);
    this.wakeSleeper?.();
    try {
      this.opts.onDeposed(term, reason);
    } catch (err) {
      this.report(err);
    }
  }

  private async release(term: LeadershipTerm): Promise<void> {
    try {
      await this.opts.transport.release(
        { election: term.election, candidate: term.candidate, fencingToken: term.fencingToken },
        { timeoutMs: this.callTimeoutMs },
      );
    } catch (err) {
      // The lease then simply expires after its TTL.
      this.report(err);
    }
  }

  private termOf(lease: LeaseInfo): LeadershipTerm {
    return {
      election: this.opts.election,
      candidate: this.opts.candidate,
      fencingToken: lease.fencingToken,
      acquiredAtMs: lease.acquiredAtMs,
    };
  }

  /** While a standby: an Observe stream whose vacancy events cut the wait short. */
  private ensureObserve(): void {
    const observe = this.opts.transport.observe?.bind(this.opts.transport);
    if (!observe || this.observeHandle || this.observeRetry || !this.running) return;
    this.observeHandle = observe(this.opts.election, {
      onState: (view) => {
        if (this.state === 'follower' && view.state !== 'held') this.wakeSleeper?.();
      },
      onEnd: (err) => {
        if (err) this.report(err);
        this.observeHandle = undefined;
        if (!this.running || this.state === 'leader') return;
        this.observeRetry = setTimeout(() => {
          this.observeRetry = undefined;
          if (this.running && this.state === 'follower') this.ensureObserve();
        }, this.backoff.next());
      },
    });
  }

  private closeObserve(): void {
    clearTimeout(this.observeRetry);
    this.observeRetry = undefined;
    const h = this.observeHandle;
    this.observeHandle = undefined;
    h?.cancel();
  }

  /** Sleeps up to `ms`; {@link stop}, a step-down or a vacancy event wakes it early (one sleeper: the loop). */
  private sleep(ms: number): Promise<void> {
    if (ms <= 0 || !this.running) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        if (this.wakeSleeper === done) this.wakeSleeper = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wakeSleeper = done;
    });
  }

  private report(err: unknown): void {
    this.opts.onError?.(err instanceof Error ? err : new Error(String(err)));
  }
}
