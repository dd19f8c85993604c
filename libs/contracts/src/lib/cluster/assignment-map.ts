import { z } from 'zod';
import { chamberKeySchema, defenderIdSchema, isoTimeSchema } from './shared';
import { InvalidMessageError, parseWith } from './parse';
import { DEFENDER_ID_PATTERN } from './stable-id';

export const LIFECYCLE_STATES = ['cold_start', 'post_cold_start', 'stable'] as const;
export const CLUSTER_STATES = ['STABLE', 'SCALING', 'REBALANCING', 'EMERGENCY'] as const;

/** Decimal string of a non-negative integer (fencing tokens may exceed 2^53). */
export const tokenSchema = z
  .string()
  .regex(/^(0|[1-9]\d{0,30})$/, 'must be a non-negative integer as a decimal string');

/**
 * The assignment map, the value of `defender-assignments/assignment-map`. Published only by the
 * controller leader, by compare-and-set on the KV revision, and carrying the leader's fencing
 * token; defenders accept a map only if it is newer than the one they hold (see {@link isNewerMap}).
 */
/** The fields of a map that are not per chamber: the whole map minus its assignments (and the head's content). */
const mapSummaryShape = {
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
  trigger: z.enum([
    'cold_start',
    'planned_scale',
    'crash',
    'restart',
    'takeover',
    'chambers_changed',
    'load_drift',
    'post_crash',
  ]),
  defenderCount: z.number().int().nonnegative(),
  chamberCount: z.number().int().nonnegative(),
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
};

/**
 * The assignment map as every reader sees it (AssignmentMapBucket assembles it from the stored head
 * and chunks, ADR 0009; a map stored whole by an older controller has exactly this shape). Published
 * only by the controller leader, by compare-and-set on the KV revision, and carrying the leader's
 * fencing token; defenders accept a map only if it is newer than the one they hold (see {@link isNewerMap}).
 */
export const assignmentMapSchema = z
  .object({
    schema: z.literal(1),
    ...mapSummaryShape,
    assignments: z.record(chamberKeySchema, defenderIdSchema),
    /** Chamber key -> epoch ms of its last owner change (drives the rebalance cooldown). */
    lastMovedAt: z.record(chamberKeySchema, z.number().int().nonnegative()).default({}),
  })
  .superRefine((m, ctx) => {
    if (Object.keys(m.assignments).length !== m.chamberCount) {
      ctx.addIssue({
        code: 'custom',
        path: ['chamberCount'],
        message: 'does not match the number of assignments',
      });
    }
    for (const [chamber, owner] of Object.entries(m.assignments)) {
      if (!(owner in m.defenderInfo)) {
        ctx.addIssue({
          code: 'custom',
          path: ['assignments', chamber],
          message: `owner ${owner} missing from defenderInfo`,
        });
        break;
      }
    }
  });

/** Most chunks one map may have (20,000 chambers take 33 at the default chunk size, 32 KiB). */
export const MAX_MAP_CHUNKS = 4096;

/**
 * The head of a chunked map, the value of `defender-assignments/assignment-map` (schema 2, ADR 0009):
 * everything but the per-chamber data, and where that data is. The chunks are written first, into
 * a slot (0-3: the pair of the publisher's token parity, the one the current head does not use);
 * `revisions` are
 * their KV revisions (read back by exact revision, so a reader gets exactly the bytes this head was
 * published with) and `digests` the SHA-256 of each chunk value (base64url), checked on every read.
 */
export const assignmentMapHeadSchema = z
  .object({
    schema: z.literal(2),
    ...mapSummaryShape,
    chunks: z.object({
      slot: z.number().int().min(0).max(3),
      revisions: z.array(z.number().int().positive()).max(MAX_MAP_CHUNKS),
      digests: z
        .array(z.string().regex(/^[A-Za-z0-9_-]{43}$/, 'must be a base64url SHA-256'))
        .max(MAX_MAP_CHUNKS),
      /** First and last owner in each chunk (entries are sorted by owner, then chamber). */
      owners: z.array(z.tuple([defenderIdSchema, defenderIdSchema])).max(MAX_MAP_CHUNKS),
    }),
  })
  .superRefine((h, ctx) => {
    const n = h.chunks.revisions.length;
    if (h.chunks.digests.length !== n || h.chunks.owners.length !== n) {
      ctx.addIssue({
        code: 'custom',
        path: ['chunks'],
        message: 'revisions, digests and owners differ in length',
      });
    }
  });

export type AssignmentMapHead = z.infer<typeof assignmentMapHeadSchema>;

/** ids.ts's chamberKeySchema as a plain expression (and stable-id.ts's DEFENDER_ID_PATTERN for defenderIdSchema) (20,000 entries per map: zod per entry is slow). */
export const CHAMBER_KEY_PATTERN = /^[A-Za-z0-9_-]{1,128}:[A-Za-z0-9_-]{1,128}$/;

/** One entry of a chunk: chamber key, owner, lastMovedAt (epoch ms, 0 when the chamber never moved). */
export type MapChunkEntry = [chamber: string, owner: string, lastMovedAt: number];

const chunkEnvelopeShape = {
  schema: z.literal(2),
  version: z.number().int().positive(),
  fencingToken: tokenSchema,
  index: z.number().int().nonnegative(),
};

/**
 * One chunk of a chunked map: entries `[chamber, owner, lastMovedAt]` sorted by owner, then
 * chamber. It names the map version, token and index it was written for, so a chunk read for the
 * wrong head is recognised even before its digest is checked.
 */
export const assignmentMapChunkSchema = z.object({
  ...chunkEnvelopeShape,
  entries: z.array(z.tuple([chamberKeySchema, defenderIdSchema, z.number().int().nonnegative()])),
});

export type AssignmentMapChunk = z.infer<typeof assignmentMapChunkSchema>;

const chunkEnvelopeSchema = z.object({ ...chunkEnvelopeShape, entries: z.array(z.unknown()) });

/** Why `e` is not a valid chunk entry, or null (what assignmentMapChunkSchema checks per entry). */
export function chunkEntryProblem(e: unknown): string | null {
  if (!Array.isArray(e) || e.length !== 3) return 'must be [chamber, owner, lastMovedAt]';
  const [chamber, owner, moved] = e as unknown[];
  if (typeof chamber !== 'string' || !CHAMBER_KEY_PATTERN.test(chamber))
    return 'chamber must look like <tool_id>:<chamber_id>';
  if (typeof owner !== 'string' || !DEFENDER_ID_PATTERN.test(owner))
    return 'owner must look like defender-<n>';
  if (typeof moved !== 'number' || !Number.isSafeInteger(moved) || moved < 0)
    return 'lastMovedAt must be a non-negative integer';
  return null;
}

/**
 * Parses a chunk value: like assignmentMapChunkSchema, with the entries checked without zod.
 *
 * @throws InvalidMessageError when it is not a valid chunk.
 */
export function parseAssignmentMapChunk(data: Uint8Array | string): AssignmentMapChunk {
  const c = parseWith('assignment map chunk', chunkEnvelopeSchema, data);
  for (let i = 0; i < c.entries.length; i++) {
    const problem = chunkEntryProblem(c.entries[i]);
    if (problem !== null) throw new InvalidMessageError('assignment map chunk', `entries.${i}: ${problem}`);
  }
  return c as AssignmentMapChunk;
}

/** A stored head value: a whole map (schema 1, older controllers) or a chunked map's head (schema 2). */
export type StoredMapHead =
  | { readonly kind: 'whole'; readonly map: AssignmentMap }
  | { readonly kind: 'chunked'; readonly head: AssignmentMapHead };

/**
 * Parses the value of the map key: a whole map as older controllers stored it, or the head of a
 * chunked map.
 *
 * @throws InvalidMessageError when it is neither.
 */
export function parseStoredMapHead(data: Uint8Array | string): StoredMapHead {
  const text =
    typeof data === 'string'
      ? data
      : Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString('utf8');
  let schema: unknown;
  try {
    schema = (JSON.parse(text) as { schema?: unknown } | null)?.schema;
  } catch {
    // parseAssignmentMap reports the invalid JSON.
  }
  // The schema number only picks the parser; each validates the whole value.
  if (schema === 2)
    return { kind: 'chunked', head: parseWith('assignment map head', assignmentMapHeadSchema, text) };
  return { kind: 'whole', map: parseAssignmentMap(text) };
}

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
export function isNewerMap(
  candidate: Pick<AssignmentMap, 'version' | 'fencingToken'>,
  held?: Pick<AssignmentMap, 'version' | 'fencingToken'>,
): boolean {
  if (held === undefined) return true;
  const ct = BigInt(candidate.fencingToken);
  const ht = BigInt(held.fencingToken);
  return ct >= ht && candidate.version > held.version;
}
