export { type Backoff, backoffDelayMs, type BackoffOptions, exponentialBackoff, InvalidBackoffError } from './lib/backoff';
export { RetryAbortedError, retrying, retryingUntilStopped, type RetryOptions, sleepUnlessAborted, supervise, type SuperviseOptions } from './lib/retry';
