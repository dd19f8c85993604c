import { z } from 'zod';
import { FieldProblem, InvalidRequestError } from './errors';

/** Shortest and longest lease a candidate may ask for, in milliseconds. */
export const MIN_TTL_MS = 1_000;
export const MAX_TTL_MS = 3_600_000;

const ELECTION_NAME = /^[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*$/;
const CANDIDATE_ID = /^[\x21-\x7e]+$/;

/** An election name: `[A-Za-z0-9_-]` words joined by single dots (a NATS KV key), at most 128 characters. */
export const electionNameSchema = z
  .string({ message: 'is required' })
  .min(1, { message: 'is required', abort: true })
  .max(128, 'must be at most 128 characters')
  .regex(ELECTION_NAME, 'must be [A-Za-z0-9_-] words joined by single dots');

/** A candidate ID: 1-128 printable ASCII characters, no spaces; unique per process. */
export const candidateIdSchema = z
  .string({ message: 'is required' })
  .min(1, { message: 'is required', abort: true })
  .max(128, 'must be at most 128 characters')
  .regex(CANDIDATE_ID, 'must be printable ASCII without spaces');

export const ttlMsSchema = z
  .number({ message: 'is required' })
  .int('must be a whole number of milliseconds')
  .min(MIN_TTL_MS, `must be ${MIN_TTL_MS}..${MAX_TTL_MS} ms`)
  .max(MAX_TTL_MS, `must be ${MIN_TTL_MS}..${MAX_TTL_MS} ms`);

export const fencingTokenSchema = z
  .number({ message: 'is required' })
  .int('must be a whole number')
  .min(1, 'must be >= 1')
  .max(Number.MAX_SAFE_INTEGER, 'is too large');

/**
 * A lease key: the candidate process's secret for its terms (16-128 printable ASCII characters,
 * random). Renew and Release must present the key the term was granted with; no read returns it.
 */
export const leaseKeySchema = z
  .string({ message: 'is required' })
  .min(16, 'must be at least 16 characters')
  .max(128, 'must be at most 128 characters')
  .regex(CANDIDATE_ID, 'must be printable ASCII without spaces');

/** Highest `min_token` a candidate may ask for: room for 2^32 more terms below 2^53. */
export const MAX_MIN_TOKEN = Number.MAX_SAFE_INTEGER - 2 ** 32;

export const campaignRequestSchema = z.object({
  election: electionNameSchema,
  candidate: candidateIdSchema,
  ttlMs: ttlMsSchema,
  /** A new term's token is above this (0 or absent: no floor). */
  minToken: z
    .number()
    .int('must be a whole number')
    .min(0, 'must be >= 0')
    .max(MAX_MIN_TOKEN, `must be <= ${MAX_MIN_TOKEN}`)
    .optional(),
  /** The candidate's lease key (the agent's gRPC API requires one; in-process callers may omit it). */
  leaseKey: leaseKeySchema.optional(),
});
export const leaseRequestSchema = z.object({
  election: electionNameSchema,
  candidate: candidateIdSchema,
  fencingToken: fencingTokenSchema,
  /** The key the term was granted with. */
  leaseKey: leaseKeySchema.optional(),
});
export const electionRequestSchema = z.object({ election: electionNameSchema });

export type CampaignRequest = z.infer<typeof campaignRequestSchema>;
/** Renew and Release: the term (`candidate`, `fencingToken`) of `election`. */
export type LeaseRequest = z.infer<typeof leaseRequestSchema>;
export type ElectionRequest = z.infer<typeof electionRequestSchema>;

/**
 * Validates `input` against `schema`, naming every bad field at once.
 *
 * @param fieldNames maps schema keys to the names the caller knows (e.g. `ttlMs` -> `ttl_ms` on the wire).
 * @throws InvalidRequestError listing each problem.
 */
export function parseRequest<S extends z.ZodType>(
  schema: S,
  input: unknown,
  fieldNames: Record<string, string> = {},
): z.infer<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const problems: FieldProblem[] = result.error.issues.map((issue) => {
    const key = issue.path.map(String).join('.');
    return { field: fieldNames[key] ?? (key || 'request'), message: issue.message };
  });
  throw new InvalidRequestError(problems);
}
