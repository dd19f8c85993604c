import { z } from 'zod';
import { defenderIdSchema, isoTimeSchema } from './shared';
import { parseWith } from './parse';

/** Defender process states (the seeds' state machine). */
export const DEFENDER_STATES = ['INITIALIZATION', 'CLAIMING_ID', 'FOLLOWER', 'STABLE', 'SHUTDOWN'] as const;
export type DefenderState = (typeof DEFENDER_STATES)[number];

/**
 * A defender's heartbeat, the value of `defender-heartbeats/<defenderId>`, written every
 * HEARTBEAT_INTERVAL_SECONDS. The controller judges liveness by the time since the last one it
 * saw, never by KV expiry.
 */
export const heartbeatSchema = z.object({
  schema: z.literal(1),
  defenderId: defenderIdSchema,
  podName: z.string().max(253).optional(),
  podUid: z.string().max(64).optional(),
  state: z.enum(DEFENDER_STATES),
  /** Version of the newest assignment map the defender has applied (0: none yet). */
  mapVersionSeen: z.number().int().nonnegative(),
  load: z.object({
    chambers: z.number().int().nonnegative(),
    inflight: z.number().int().nonnegative(),
    processedTotal: z.number().int().nonnegative(),
  }),
  /** Relative capacity for weighted assignment (default 1). */
  capacity: z.number().positive().finite().optional(),
  intervalSeconds: z.number().positive(),
  startedAt: isoTimeSchema,
  sentAt: isoTimeSchema,
});

export type Heartbeat = z.infer<typeof heartbeatSchema>;

export function parseHeartbeat(data: Uint8Array | string): Heartbeat {
  return parseWith('heartbeat', heartbeatSchema, data);
}
