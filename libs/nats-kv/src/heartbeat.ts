/**
 * `@defender/nats-kv/heartbeat`: what the defender's heartbeat thread needs (its stable-ID claim, its
 * heartbeat writes), without zod or the schemas of the main entry point, which would cost that
 * thread's V8 heap about 11 MB (ADR 0014).
 */
export { DEFAULT_BUCKETS } from './lib/bucket-names';
export { ClaimLostError } from './lib/errors';
export { natsInboxPrefix, natsInboxPrefixFor } from './lib/inbox';
export { HeartbeatWriter } from './lib/heartbeat-writer';
export { StableIdRegistry, type HeldClaim, type StableIdOptions } from './lib/stable-ids';
