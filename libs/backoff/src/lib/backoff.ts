/** Thrown for bounds a backoff cannot use: `baseMs` not above 0, `maxMs` below `baseMs` or not finite, a negative attempt. */
export class InvalidBackoffError extends RangeError {
  override readonly name = 'InvalidBackoffError';
}

/** Options of {@link backoffDelayMs} and {@link exponentialBackoff}. */
export interface BackoffOptions {
  /** Ceiling of the first delay (attempt 0), ms; above 0. */
  baseMs: number;
  /** Largest ceiling, ms; at least `baseMs`, finite. */
  maxMs: number;
  /**
   * Uniform source in [0, 1): `Math.random` where an app wires the retry loop, a seeded one
   * (`seededRandom` from @defender/hashing) in tests. Domain code never calls `Math.random` itself.
   */
  random: () => number;
}

function check(opts: BackoffOptions): void {
  if (!(opts.baseMs > 0) || !(opts.maxMs >= opts.baseMs) || !Number.isFinite(opts.maxMs)) {
    throw new InvalidBackoffError(`backoff needs 0 < baseMs <= maxMs < Infinity, got baseMs ${opts.baseMs}, maxMs ${opts.maxMs}`);
  }
}

/**
 * The delay before retry number `attempt` (0 for the first retry), ms: exponential backoff with
 * **equal jitter**, uniform in [d/2, d) with d = min(maxMs, baseMs * 2^attempt).
 *
 * Why equal jitter (the workspace's one policy): the random half spreads processes that lost NATS or
 * the store together, so they do not come back in lockstep, and the fixed half keeps a floor, so a
 * retry never hammers a server that is down at 0 ms. (Full jitter, uniform in [0, d), spreads a
 * little more but lets a retry follow a failure at once.)
 * @throws InvalidBackoffError for unusable bounds or a negative attempt.
 */
export function backoffDelayMs(attempt: number, opts: BackoffOptions): number {
  check(opts);
  if (!(attempt >= 0)) throw new InvalidBackoffError(`backoff attempt must be >= 0, got ${attempt}`);
  // 2^30 already exceeds any sensible cap; the bound keeps the product finite.
  const d = Math.min(opts.maxMs, opts.baseMs * 2 ** Math.min(attempt, 30));
  return d / 2 + opts.random() * (d / 2);
}

/** A retry loop's backoff: each {@link Backoff.next} is the next attempt's delay, until {@link Backoff.reset}. */
export interface Backoff {
  /** The delay before the next retry, ms ({@link backoffDelayMs} of attempt 0, 1, 2, ...). */
  next(): number;
  /** Starts again at attempt 0 (after a success). */
  reset(): void;
}

/**
 * {@link backoffDelayMs} with the attempt counted for the caller.
 * @throws InvalidBackoffError at once for unusable bounds.
 */
export function exponentialBackoff(opts: BackoffOptions): Backoff {
  check(opts);
  let attempt = 0;
  return {
    next: () => backoffDelayMs(attempt++, opts),
    reset: () => {
      attempt = 0;
    },
  };
}
