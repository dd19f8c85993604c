/** Delays for retries: exponential growth with jitter. */
export interface Backoff {
  /** The next delay in ms (grows with each call until {@link reset}). */
  next(): number;
  reset(): void;
}

/**
 * "Equal jitter" exponential backoff: the n-th delay is uniformly drawn from [d/2, d] with
 * d = min(maxMs, initialMs * 2^n), so retries of many clients spread out but never hammer at 0 ms.
 * @param random uniform in [0, 1); inject `seededRandom` (@defender/hashing) for reproducible tests.
 */
export function jitteredBackoff(opts: { initialMs: number; maxMs: number; random?: () => number }): Backoff {
  if (!(opts.initialMs > 0) || !(opts.maxMs >= opts.initialMs)) {
    throw new RangeError(`backoff needs 0 < initialMs <= maxMs, got ${opts.initialMs}, ${opts.maxMs}`);
  }
  const random = opts.random ?? Math.random;
  let attempt = 0;
  return {
    next() {
      const d = Math.min(opts.maxMs, opts.initialMs * 2 ** Math.min(attempt, 30));
      attempt++;
      return d / 2 + random() * (d / 2);
    },
    reset() {
      attempt = 0;
    },
  };
}
