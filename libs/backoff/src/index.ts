export { type Backoff, backoffDelayMs, type BackoffOptions, exponentialBackoff, InvalidBackoffError } from './lib/backoff';
