import { backoffDelayMs } from '@defender/backoff';
import { FencedError, type DeadLetterReason } from '@defender/contracts';
import type { PipelineObserver } from '../ports';

/** Bad input found by an attempt: the run is dead-lettered with `reason` at once, not retried. */
export class DeadLetterSignal extends Error {
  override readonly name = 'DeadLetterSignal';
  constructor(
    readonly reason: DeadLetterReason,
    readonly detail: string,
    readonly runId: string,
  ) {
    super(`${reason}: ${detail}`);
  }
}

/** An attempt outlasted its bound (`processTimeoutMs` of its own waiting). */
export class AttemptTimeoutError extends Error {
  override readonly name = 'AttemptTimeoutError';
}

/** The worker was stopped: whatever was in progress ends without a result. */
export class StoppedSignal extends Error {
  override readonly name = 'StoppedSignal';
}

/** True for a failure of NATS or the store that passes (the ports' `retryable` errors). */
export function isOutage(err: unknown): boolean {
  return (err as { retryable?: unknown } | null)?.retryable === true;
}

/** Settings of an {@link AttemptPolicy} (those of the worker). */
export interface AttemptPolicyOptions {
  /** Bound on one attempt's own waiting, ms. */
  readonly processTimeoutMs: number;
  /** Attempts (failures other than outages) before a run is dead-lettered. */
  readonly maxAttempts: number;
  /** Longest backoff while NATS or the store is unavailable, ms. */
  readonly maxOutageBackoffMs: number;
}

/** Clock, sleep and reporting of an {@link AttemptPolicy}. */
export interface AttemptPolicyDeps {
  readonly monotonic: () => number;
  /** Resolves after `ms`, or earlier when `signal` aborts. */
  readonly sleep: (ms: number, signal: AbortSignal) => Promise<void>;
  /** Uniform [0, 1) for the backoff's jitter (default Math.random). */
  readonly random?: () => number;
  readonly observer?: PipelineObserver;
}

/** Runs `fn` as one step of a chamber's work, retried through outages (see {@link AttemptPolicy.outageRetry}). */
export type OutageRetry = <T>(what: string, fn: () => Promise<T>) => Promise<T>;

/** What to do after an attempt at a run failed with some error (see {@link afterFailure}). */
export type FailureDecision =
  /** Fenced or stopped: the worker ends. */
  | { readonly kind: 'rethrow' }
  /** Bad input (or every attempt used up): dead-letter the run with this reason. */
  | { readonly kind: 'dead-letter'; readonly reason: DeadLetterReason; readonly detail: string; readonly runId: string; readonly failedAttempt: boolean }
  /** An outage escaped a step: pause, then try again without counting the attempt. */
  | { readonly kind: 'pause' }
  /** Another failure with attempts left: try again. */
  | { readonly kind: 'retry' };

/**
 * The decision after attempt number `attempt` (from 1) failed with `err`: fencing and stopping end
 * the worker, bad input is dead-lettered at once, an outage never counts as an attempt, any other
 * failure is retried until `maxAttempts` and then dead-lettered as `processing-failed` (the run id
 * from `runId`, as far as the notification names one).
 */
export function afterFailure(err: unknown, attempt: number, maxAttempts: number, runId: () => string): FailureDecision {
  if (err instanceof FencedError || err instanceof StoppedSignal) return { kind: 'rethrow' };
  if (err instanceof DeadLetterSignal) return { kind: 'dead-letter', reason: err.reason, detail: err.detail, runId: err.runId, failedAttempt: false };
  if (isOutage(err)) return { kind: 'pause' };
  if (attempt < maxAttempts) return { kind: 'retry' };
  const detail = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  return { kind: 'dead-letter', reason: 'processing-failed', detail: `${attempt} attempts; last: ${detail}`, runId: runId(), failedAttempt: true };
}

/** One attempt at a run: told to stop when it timed out; time paused by outages (ms, monotonic). */
interface AttemptState {
  readonly abandoned: AbortSignal;
  outageMs: number;
  /**
   * Time the attempt spent evaluating its run (and waiting for a fit slot, i.e. for other runs'
   * evaluations): bounded CPU work that cannot hang, so it does not count against the attempt's
   * timeout (on a saturated machine a Phase I fit of thousands of indicators outlasted the timeout;
   * the attempt was abandoned at its next write and the fit done again, up to a dead letter of a
   * valid run).
   */
  evaluationMs: number;
  /** Start of the outage pause in progress (the failed call, then the backoff). */
  pausedSince: number | undefined;
  /** Calls of the attempt paused now (its reads run concurrently and pause together). */
  pausedCalls: number;
}

/**
 * How a chamber's work meets failure and time: outages are retried with backoff (libs/backoff) and
 * pause the attempt's clock; one attempt at a time is bounded by `processTimeoutMs` of its own
 * waiting; the worker's stop ends every wait. The decision after a failed attempt is the pure
 * {@link afterFailure}.
 */
export class AttemptPolicy {
  /** The attempt in progress, if any (attempts never overlap; see {@link withTimeout}). */
  private current: AttemptState | undefined;

  /**
   * @param key the chamber's key, for reports
   * @param stopped aborts when the worker stops
   */
  constructor(
    private readonly key: string,
    private readonly stopped: AbortSignal,
    private readonly opts: AttemptPolicyOptions,
    private readonly deps: AttemptPolicyDeps,
  ) {}

  /** {@link outageRetry} as a function (for the units that take an {@link OutageRetry}). */
  readonly retry: OutageRetry = (what, fn) => this.outageRetry(what, fn);

  /**
   * Runs `fn`, retrying with backoff while NATS or the store is unavailable. Inside an attempt, the
   * time lost to the outage (the failed call and the backoff) extends the attempt's timeout, and an
   * attempt that timed out stops at its next step. A stopped worker stops at the next step too, but
   * for a `commit`, which is let through (its outcome decides what the mark is).
   */
  async outageRetry<T>(what: string, fn: () => Promise<T>): Promise<T> {
    const inAttempt = this.current;
    for (let attempt = 0; ; attempt++) {
      if (this.stopped.aborted && what !== 'commit') throw new StoppedSignal();
      if (inAttempt?.abandoned.aborted) throw new AttemptTimeoutError(`abandoned at ${what}: the attempt timed out`);
      const t0 = this.deps.monotonic();
      try {
        return await fn();
      } catch (err) {
        if (!isOutage(err)) throw err;
        // The failed call counts as paused, and so does the backoff while it lasts; concurrent calls
        // paused by the same outage count once, from the first failure to the last resumption.
        if (inAttempt && inAttempt.pausedCalls++ === 0) inAttempt.pausedSince = t0;
        this.deps.observer?.paused?.(this.key, what, err);
        const delay = backoffDelayMs(attempt, { baseMs: 100, maxMs: Math.max(100, this.opts.maxOutageBackoffMs), random: this.deps.random ?? Math.random });
        try {
          await this.sleepUnless(delay, inAttempt?.abandoned);
        } finally {
          if (inAttempt && --inAttempt.pausedCalls === 0) {
            inAttempt.outageMs += this.deps.monotonic() - (inAttempt.pausedSince ?? t0);
            inAttempt.pausedSince = undefined;
          }
        }
        if (this.stopped.aborted) throw new StoppedSignal();
      }
    }
  }

  /**
   * Runs one attempt bounded by `processTimeoutMs` of its own waiting: time paused by an outage does
   * not count (a store or NATS outage pauses the chamber; it must never use up the attempts and
   * dead-letter a valid run), nor does the evaluation, which is bounded CPU work (its result would
   * only be thrown away and computed again; see {@link notCounted}). When the bound is reached, the
   * attempt is told to stop at its next step, and the next attempt starts only after it has ended:
   * two attempts at one run never overlap (an abandoned attempt that committed late made its retry
   * see the run as a duplicate, or the dead letter of a run race its commit; found by the chaos
   * suite's store outage). If it committed after all, its outcome counts.
   */
  async withTimeout<T>(run: () => Promise<T>): Promise<T> {
    const ctl = new AbortController();
    const state: AttemptState = { abandoned: ctl.signal, outageMs: 0, evaluationMs: 0, pausedSince: undefined, pausedCalls: 0 };
    this.current = state;
    try {
      const started = this.deps.monotonic();
      const p = run();
      const timer = new AbortController();
      const timeout = (async (): Promise<'timeout' | undefined> => {
        for (;;) {
          const now = this.deps.monotonic();
          const paused = state.outageMs + state.evaluationMs + (state.pausedSince === undefined ? 0 : now - state.pausedSince);
          const left = started + this.opts.processTimeoutMs + paused - now;
          if (left <= 0) return 'timeout';
          await this.deps.sleep(left, timer.signal);
          if (timer.signal.aborted) return undefined;
        }
      })();
      try {
        const first = await Promise.race([p.then((value) => ({ value })), timeout]);
        if (first !== 'timeout' && first !== undefined) return first.value;
      } finally {
        timer.abort();
      }
      ctl.abort();
      try {
        return await p;
      } catch (err) {
        if (err instanceof FencedError || err instanceof StoppedSignal || err instanceof DeadLetterSignal) throw err;
        throw new AttemptTimeoutError(`run took longer than ${this.opts.processTimeoutMs} ms`, { cause: err });
      }
    } finally {
      // Reads issued ahead by an attempt that failed first stop at their next retry.
      ctl.abort();
      this.current = undefined;
    }
  }

  /** {@link afterFailure} under this policy's `maxAttempts`. */
  decide(err: unknown, attempt: number, runId: () => string): FailureDecision {
    return afterFailure(err, attempt, this.opts.maxAttempts, runId);
  }

  /** `ms` of the attempt in progress (an evaluation, a wait for a fit slot) do not count against its timeout. */
  notCounted(ms: number): void {
    if (this.current) this.current.evaluationMs += ms;
  }

  /** The pause after an outage escaped an attempt's steps, before the run is tried again. */
  async pauseRun(err: unknown): Promise<void> {
    this.deps.observer?.paused?.(this.key, 'process', err);
    await this.deps.sleep(Math.min(this.opts.maxOutageBackoffMs, 500), this.stopped);
    if (this.stopped.aborted) throw new StoppedSignal();
  }

  /** Sleeps `ms`, waking early when the worker stops or `abandoned` (an attempt's) aborts. */
  private async sleepUnless(ms: number, abandoned: AbortSignal | undefined): Promise<void> {
    if (!abandoned) return this.deps.sleep(ms, this.stopped);
    const wake = new AbortController();
    const onAbort = () => wake.abort();
    this.stopped.addEventListener('abort', onAbort, { once: true });
    abandoned.addEventListener('abort', onAbort, { once: true });
    try {
      if (this.stopped.aborted || abandoned.aborted) return;
      await this.deps.sleep(ms, wake.signal);
    } finally {
      this.stopped.removeEventListener('abort', onAbort);
      abandoned.removeEventListener('abort', onAbort);
    }
  }
}
