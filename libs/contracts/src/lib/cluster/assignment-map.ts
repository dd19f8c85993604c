import { z } from 'zod';
import { chamberKeySchema, defenderIdSchema, isoTimeSchema } from './shared';
import { parseWith } from './parse';

export const LIFECYCLE_STATES = ['cold_start', 'post_cold_start', 'stable'] as const;
export const CLUSTER_STATES = ['STABLE', 'SCALING', 'REBALANCING', 'EMERGENCY'] as const;

/** Decimal string of a non-negative integer (fencing tokens may exceed 2^53). */
export const tokenSchema = z.string().regex(/^(0|[1-9]\d{0,30})$/, 'must be a non-negative integer as a decimal string');

/**
 * The assignment map, the value of `defender-assignments/assignment-map`. Published only by the
 * controller leader, by compare-and-set on the KV revision, and carrying the leader's fencing
 * token; defenders accept a map only if it is newer than the one they hold (see {@link isNewerMap}).
 */
export const assignmentMapSchema = z
  .object({
    schema: z.literal(1),
    version: z.number().int().positive(),
    timestamp: isoTimeSchema,
    state: z.enum(CLUSTER_STATES),
    lifecycleState: z.enum(LIFECYCLE_STATES),
    firstAssignmentAt: isoTimeSchema.nullable(),
    /** The controller leader's fencing token from the election agent, for its whole term. */
    fencingToken: tokenSchema,
    /** The publishing controller instance (pod name or process id). */
    controllerId: z.string().min(1).max(253),
    /** Why this version was computed. */
    trigger: z.enum(['cold_start', 'planned_scale', 'crash', 'restart', 'takeover', 'chambers_changed']),
    defenderCount: z.number().int().nonnegative(),
    chamberCount: z.number().int().nonnegative(),
    assignments: z.record(chamberKeySchema, defenderIdSchema),
    /** Chamber key -> epoch ms of its last owner change (drives the rebalance cooldown). */
    lastMovedAt: z.record(chamberKeySchema, z.number().int().nonnegative()).default({}),
    defenderInfo: z.record(
      defenderIdSchema,
      z.object({
        chambers: z.number().int().nonnegative(),
        weight: z.number().nonnegative(),
        capacity: z.number().positive(),
      }),
    ),
    statistics: z.object({
      minChambersPerDefender: z.number(),
      maxChambersPerDefender: z.number(),
      avgChambersPerDefender: z.number(),
      minWeightPerDefender: z.number(),
      maxWeightPerDefender: z.number(),
      avgWeightPerDefender: z.number(),
      weightVariancePercent: z.number(),
      calculationDurationMs: z.number(),
      chambersMoved: z.number().int().nonnegative(),
      movedWeight: z.number().nonnegative(),
      movedWeightFraction: z.number().min(0).max(1),
      floorFraction: z.number().min(0).max(1),
    }),
  })
  .superRefine((m, ctx) => {
    if (Object.keys(m.assignments).length !== m.chamberCount) {
      ctx.addIssue({ code: 'custom', path: ['chamberCount'], message: 'does not match the number of assignments' });
    }
    for (const [chamber, owner] of Object.entries(m.assignments)) {
      if (!(owner in m.defenderInfo)) {
        ctx.addIssue({ code: 'custom', path: ['assignments', chamber], message: `owner ${owner} missing from defenderInfo` });
        break;
      }
    }
  });

export type AssignmentMap = z.infer<typeof assignmentMapSchema>;

export function parseAssignmentMap(data: Uint8Array | string): AssignmentMap {
  return parseWith('assignment map', assignmentMapSchema, data);
}

/**
 * Whether `candidate` supersedes `held`. Versions continue across leader terms, so a candidate must
 * have a strictly higher version and a fencing token no lower than the held one: a deposed leader's
 * map (lower token) is ignored even if its version is higher, and an old map replayed by a watcher
 * (lower or equal version) is ignored too.
 */
export function isNewerMap(candidate: Pick<AssignmentMap, 'version' | 'fencingToken'>, held?: Pick<AssignmentMap, 'version' | 'fencingToken'>): boolean {
  if (held === undefined) return true;
  const ct = BigInt(candidate.fencingToken);
  const ht = BigInt(held.fencingToken);
  return ct >= ht && candidate.version > held.version;
}
