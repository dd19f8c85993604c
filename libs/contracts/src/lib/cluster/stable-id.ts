// No zod in this module: the defender's heartbeat thread refreshes its claim with it, and loading
// zod alone costs that thread's V8 heap about 11 MB (ADR 0014). The claim is small enough to check by
// hand; this is its only validator.
import { decodeJson, InvalidMessageError } from './invalid-message';

/** `defender-<n>`, n a non-negative integer without leading zeros (at most 6 digits). */
export const DEFENDER_ID_PATTERN = /^defender-(0|[1-9]\d{0,5})$/;

/** Highest claim generation (21 bits: it is part of the fencing epoch, see ownerEpoch). */
export const MAX_CLAIM_GENERATION = 2 ** 21 - 1;

export function defenderIdOf(n: number): string {
  if (!Number.isInteger(n) || n < 0) throw new RangeError(`defender number must be a non-negative integer, got ${n}`);
  return `defender-${n}`;
}

/**
 * A claim on a stable ID, the value of `stable-ids/<defenderId>`. Created atomically (KV create),
 * refreshed by compare-and-set on every heartbeat, taken over by compare-and-set when stale
 * (3 missed heartbeats), marked `released` on shutdown.
 */
export interface StableIdClaim {
  readonly schema: 1;
  readonly defenderId: string;
  /** Owner identity: the pod UID in Kubernetes, or a random UUID per process elsewhere (1-128 characters). */
  readonly ownerId: string;
  /** At most 253 characters. */
  readonly podName?: string;
  /** ISO-8601 with a zone (what `Date.prototype.toISOString` writes). */
  readonly claimedAt: string;
  readonly refreshedAt: string;
  /**
   * Incremented by every new owner of this ID (takeover or restart): orders two processes that held
   * the same ID, so a frozen predecessor's writes are fenced (see ownerEpoch). 0 .. 2^21 - 1.
   */
  readonly generation: number;
  /** How often the owner refreshes, seconds (> 0): staleness is judged against 3 x this. */
  readonly intervalSeconds: number;
  /**
   * Set by a clean shutdown instead of deleting the claim: the ID is free at once, and its next
   * holder continues the generation (a deleted claim would restart at 0 and be fenced by the
   * epochs of a predecessor that had taken the ID over).
   */
  readonly released?: boolean;
}

/** ISO-8601 date and time with seconds, optional fraction and a zone (Z or ±hh:mm), of a real instant. */
const ISO_TIME = /^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d{1,9})?(Z|[+-]([01]\d|2[0-3]):[0-5]\d)$/;

function isIsoTime(v: unknown): v is string {
  if (typeof v !== 'string' || !ISO_TIME.test(v)) return false;
  // The calendar: 2026-02-30 matches the pattern but is no day.
  const [y, m, d] = v.slice(0, 10).split('-').map(Number) as [number, number, number];
  return d <= new Date(Date.UTC(y, m, 0)).getUTCDate();
}

/** The first problem of a claim's fields (`field: what`), or undefined. */
function claimProblem(o: Record<string, unknown>): string | undefined {
  if (o['schema'] !== 1) return 'schema: must be 1';
  const id = o['defenderId'];
  if (typeof id !== 'string' || !DEFENDER_ID_PATTERN.test(id)) return 'defenderId: must look like defender-<n>';
  const owner = o['ownerId'];
  if (typeof owner !== 'string' || owner.length < 1 || owner.length > 128) return 'ownerId: must be a string of 1-128 characters';
  const pod = o['podName'];
  if (pod !== undefined && (typeof pod !== 'string' || pod.length > 253)) return 'podName: must be a string of at most 253 characters';
  if (!isIsoTime(o['claimedAt'])) return 'claimedAt: must be an ISO-8601 time with a zone';
  if (!isIsoTime(o['refreshedAt'])) return 'refreshedAt: must be an ISO-8601 time with a zone';
  const gen = o['generation'];
  if (typeof gen !== 'number' || !Number.isInteger(gen) || gen < 0 || gen > MAX_CLAIM_GENERATION) return `generation: must be an integer 0-${MAX_CLAIM_GENERATION}`;
  const interval = o['intervalSeconds'];
  if (typeof interval !== 'number' || !Number.isFinite(interval) || interval <= 0) return 'intervalSeconds: must be a positive number';
  const released = o['released'];
  if (released !== undefined && typeof released !== 'boolean') return 'released: must be a boolean';
  return undefined;
}

/**
 * Decodes and checks a stored claim; unknown fields are dropped.
 *
 * @throws InvalidMessageError (kind `stable-id claim`) with reason `invalid-json` or the first problem.
 */
export function parseStableIdClaim(data: Uint8Array | string): StableIdClaim {
  const raw = decodeJson('stable-id claim', data);
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new InvalidMessageError('stable-id claim', '(root): must be an object');
  const o = raw as Record<string, unknown>;
  const problem = claimProblem(o);
  if (problem) throw new InvalidMessageError('stable-id claim', problem);
  return {
    schema: 1,
    defenderId: o['defenderId'] as string,
    ownerId: o['ownerId'] as string,
    ...(o['podName'] !== undefined ? { podName: o['podName'] as string } : {}),
    claimedAt: o['claimedAt'] as string,
    refreshedAt: o['refreshedAt'] as string,
    generation: o['generation'] as number,
    intervalSeconds: o['intervalSeconds'] as number,
    ...(o['released'] !== undefined ? { released: o['released'] as boolean } : {}),
  };
}
