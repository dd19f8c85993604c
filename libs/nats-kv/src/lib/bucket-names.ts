// No zod here (nor anything that loads it): the defender's heartbeat thread imports this (ADR 0014).

/** Bucket names from the seeds (overridable through NATS_KV_* variables in the apps). */
export const DEFAULT_BUCKETS = {
  stableIds: 'stable-ids',
  heartbeats: 'defender-heartbeats',
  assignments: 'defender-assignments',
} as const;
