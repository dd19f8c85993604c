/** Options of {@link backoffDelayMs}. */
export interface BackoffOptions {
  /** First delay, ms. */
  baseMs: number;
  /** Cap, ms. */
  maxMs: number;
  /** Uniform [0, 1) source; injected for tests. */
  random: () => number;
}

/**
 * Full-jitter exponential backoff: a uniform delay in [0, min(max, base * 2^attempt)), so
 * processes that lost NATS together do not come back in lockstep. `attempt` counts from 0.
 */
export function backoffDelayMs(attempt: number, opts: BackoffOptions): number {
  const ceiling = Math.min(opts.maxMs, opts.baseMs * 2 ** Math.min(attempt, 30));
  return Math.floor(opts.random() * ceiling);
}
