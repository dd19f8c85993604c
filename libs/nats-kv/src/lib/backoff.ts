// Backoff has one home, @defender/backoff (equal jitter); this re-export keeps `backoffDelayMs`
// importable from @defender/nats-kv until its last caller imports it from there.
export { backoffDelayMs, type BackoffOptions } from '@defender/backoff';
