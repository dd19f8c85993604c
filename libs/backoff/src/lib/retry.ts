import { backoffDelayMs, type BackoffOptions } from './backoff';

/**
 * Waits `ms`, or until `signal` aborts if that comes first; never rejects (a stopped loop just goes on
 * to see that it was stopped). The one abortable sleep of the workspace.
 */
export function sleepUnlessAborted(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** Thrown by {@link retrying} when its signal aborted before `fn` succeeded: nothing to retry any more. */
export class RetryAbortedError extends Error {
  override readonly name = 'RetryAbortedError';

  constructor(what: string, options?: ErrorOptions) {
    super(`${what}: stopped before it succeeded`, options);
  }
}

/** Options of {@link retrying}: the backoff between attempts and what to retry. */
export interface RetryOptions extends BackoffOptions {
  /** What is retried, for errors (`RetryAbortedError`'s message). */
  readonly what: string;
  /** Stops retrying: an attempt is not started once it aborted, a wait ends at once. */
  readonly signal?: AbortSignal;
  /** Told of every failure, retried or not, first (a metric of failed calls). */
  readonly onFailure?: (err: unknown, attempt: number) => void;
  /** Whether a failure is retried (default: every one); one that is not is thrown as it is. */
  readonly retryable?: (err: unknown) => boolean;
  /** Told of each failure that is retried, before the wait: the error, the attempt (0 first), the wait. */
  readonly onRetry?: (err: unknown, attempt: number, delayMs: number) => void;
  /** The wait (default {@link sleepUnlessAborted}); a test passes its stepped clock's. */
  readonly sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

/**
 * Calls `fn` until it resolves, waiting the workspace's backoff (equal jitter, {@link backoffDelayMs})
 * after each retryable failure: the one retry loop of the workspace, for a connection, a store, a
 * first read that must succeed before a service is ready.
 *
 * @returns what `fn` resolved with.
 * @throws the first failure that `retryable` refuses, as it is.
 * @throws RetryAbortedError (its cause the last failure) when `signal` aborts before `fn` succeeded.
 */
export async function retrying<T>(fn: (attempt: number) => Promise<T>, opts: RetryOptions): Promise<T> {
  const sleep = opts.sleep ?? sleepUnlessAborted;
  let last: unknown;
  for (let attempt = 0; ; attempt++) {
    if (opts.signal?.aborted) throw new RetryAbortedError(opts.what, last === undefined ? undefined : { cause: last });
    try {
      return await fn(attempt);
    } catch (err) {
      opts.onFailure?.(err, attempt);
      if (opts.retryable && !opts.retryable(err)) throw err;
      last = err;
      const delay = backoffDelayMs(attempt, opts);
      opts.onRetry?.(err, attempt, delay);
      await sleep(delay, opts.signal);
    }
  }
}

/**
 * {@link retrying} for a loop its owner stops (a service that shuts down before it connected):
 * resolves with `undefined` once `signal` aborted instead of throwing `RetryAbortedError`.
 */
export async function retryingUntilStopped<T>(fn: (attempt: number) => Promise<T>, opts: RetryOptions & { readonly signal: AbortSignal }): Promise<T | undefined> {
  try {
    return await retrying(fn, opts);
  } catch (err) {
    if (err instanceof RetryAbortedError) return undefined;
    throw err;
  }
}

/** Options of {@link supervise}. */
export interface SuperviseOptions extends BackoffOptions {
  /** Ends the loop: no run is started once it aborted, a wait ends at once. */
  readonly signal: AbortSignal;
  /** Told when a run failed (rejected), before the wait: the error, the restart's attempt, the wait. */
  readonly onFailure?: (err: unknown, attempt: number, delayMs: number) => void;
  /** Told when a run ended without failing (a watch or consumer the server ended), before the wait. */
  readonly onEnd?: (attempt: number, delayMs: number) => void;
  /** The wait (default {@link sleepUnlessAborted}); a test passes its stepped clock's. */
  readonly sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

/**
 * Keeps `run` running for as long as `signal` is not aborted: a watch, a consumer, anything meant to
 * last as long as its owner. Each time it ends or fails it is started again after the backoff's next
 * delay; `run` calls `healthy()` once it works (its first message, say), so the restart after a long
 * healthy run waits the first delay again, not the last. The workspace's one supervised loop.
 */
export async function supervise(run: (healthy: () => void) => Promise<void>, opts: SuperviseOptions): Promise<void> {
  const sleep = opts.sleep ?? sleepUnlessAborted;
  let attempt = 0;
  const healthy = () => {
    attempt = 0;
  };
  while (!opts.signal.aborted) {
    let failure: { err: unknown } | undefined;
    try {
      await run(healthy);
    } catch (err) {
      failure = { err };
    }
    if (opts.signal.aborted) return;
    const delay = backoffDelayMs(attempt, opts);
    if (failure) opts.onFailure?.(failure.err, attempt, delay);
    else opts.onEnd?.(attempt, delay);
    attempt++;
    await sleep(delay, opts.signal);
  }
}
