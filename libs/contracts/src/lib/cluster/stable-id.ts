import { z } from 'zod';
import { defenderIdSchema, isoTimeSchema } from './shared';
import { parseWith } from './parse';

/**
 * A claim on a stable ID, the value of `stable-ids/<defenderId>`. Created atomically (KV create),
 * refreshed by compare-and-set on every heartbeat, taken over by compare-and-set when stale
 * (3 missed heartbeats), marked `released` on shutdown.
 */
export const stableIdClaimSchema = z.object({
  schema: z.literal(1),
  defenderId: defenderIdSchema,
  /** Owner identity: the pod UID in Kubernetes, or a random UUID per process elsewhere. */
  ownerId: z.string().min(1).max(128),
  podName: z.string().max(253).optional(),
  claimedAt: isoTimeSchema,
  refreshedAt: isoTimeSchema,
  /**
   * Incremented by every new owner of this ID (takeover or restart): orders two processes that held
   * the same ID, so a frozen predecessor's writes are fenced (see ownerEpoch).
   */
  generation: z.number().int().nonnegative().max(2 ** 21 - 1),
  /** How often the owner refreshes, seconds: staleness is judged against 3 x this. */
  intervalSeconds: z.number().positive(),
  /**
   * Set by a clean shutdown instead of deleting the claim: the ID is free at once, and its next
   * holder continues the generation (a deleted claim would restart at 0 and be fenced by the
   * epochs of a predecessor that had taken the ID over).
   */
  released: z.boolean().optional(),
});

export type StableIdClaim = z.infer<typeof stableIdClaimSchema>;

export function parseStableIdClaim(data: Uint8Array | string): StableIdClaim {
  return parseWith('stable-id claim', stableIdClaimSchema, data);
}
