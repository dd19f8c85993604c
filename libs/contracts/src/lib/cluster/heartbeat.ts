import { z } from 'zod';
import { chamberKeySchema, defenderIdSchema, isoTimeSchema } from './shared';
import { parseWith } from './parse';
import { tokenSchema } from './assignment-map';

/** Defender process states (the seeds' state machine). */
export const DEFENDER_STATES = ['INITIALIZATION', 'CLAIMING_ID', 'FOLLOWER', 'STABLE', 'SHUTDOWN'] as const;
export type DefenderState = (typeof DEFENDER_STATES)[number];

/** Most chamber run rates one heartbeat carries (a defender reports its chambers a page at a time). */
export const MAX_RATES_PER_HEARTBEAT = 64;

/**
 * What the defender measures for the load model (ADR 0008): its own CPU cost per run and per
 * sample (fitted over its recent runs), its process CPU, and the run rate of up to
 * {@link MAX_RATES_PER_HEARTBEAT} of its chambers, cycling through them heartbeat after heartbeat,
 * so the value stays bounded whatever the number of chambers (64 keys of at most 257 characters:
 * < 20 KB; ~2 KB with fab keys).
 */
export const loadReportSchema = z.object({
  /** CPU ms of one run whatever its size (fitted). */
  fixedMsPerRun: z.number().finite().nonnegative(),
  /** CPU ns per sample (fitted). */
  nsPerSample: z.number().finite().nonnegative(),
  /** Runs the fit is based on (0: the prior). */
  calibrationRuns: z.number().int().nonnegative(),
  /** Process CPU (user + system) over the last heartbeat interval, ms per second (1000 = one core). */
  cpuMsPerSecond: z.number().finite().nonnegative(),
  /** [chamber key, runs per hour] measured (EWMA) by this defender. */
  rates: z
    .array(z.tuple([chamberKeySchema, z.number().finite().positive()]))
    .max(MAX_RATES_PER_HEARTBEAT),
});
export type LoadReport = z.infer<typeof loadReportSchema>;

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
  /**
   * Fencing token of that map (absent: none yet). A controller campaigns with the highest token
   * defenders hold as its floor, so a new term outranks it even when NATS lost the map and the
   * election bucket together (ADR 0007).
   */
  mapTokenSeen: tokenSchema.optional(),
  load: z.object({
    chambers: z.number().int().nonnegative(),
    inflight: z.number().int().nonnegative(),
    processedTotal: z.number().int().nonnegative(),
  }),
  /** Measured load (ADR 0008); absent from defenders that do not process runs yet. */
  loadReport: loadReportSchema.optional(),
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
