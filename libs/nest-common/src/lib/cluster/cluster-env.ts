import { DEFAULT_BUCKETS } from '@defender/nats-kv';
import { env } from '../config/env-fields';

/** Variables shared by the defender and the controller (names from the seeds). */
export function clusterEnvShape() {
  return {
    /** Heartbeat (and stable-ID refresh) period; a defender is dead after 3 missed ones. */
    HEARTBEAT_INTERVAL_SECONDS: env.seconds(2, 0.05, 60),
    /** Stable-ID pool size: defender-0 .. defender-(MAX_DEFENDERS-1). */
    MAX_DEFENDERS: env.int(100, 1, 100_000),
    NATS_KV_STABLE_IDS: env.natsName(DEFAULT_BUCKETS.stableIds),
    NATS_KV_HEARTBEATS: env.natsName(DEFAULT_BUCKETS.heartbeats),
    NATS_KV_ASSIGNMENTS: env.natsName(DEFAULT_BUCKETS.assignments),
    /** JetStream replicas of the KV buckets when this process creates them (3 in production). */
    NATS_KV_REPLICAS: env.int(1, 1, 5),
  };
}
