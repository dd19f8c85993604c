import { z } from 'zod';

/**
 * The one KV record of an election (value of key `<election>` in the bucket, JSON). Written only by
 * compare-and-set on the key's revision, so every change is decided on the record it replaces.
 * Times are Unix epoch milliseconds of the agent that wrote the record.
 */
export interface LeaseRecord {
  /** Format version. */
  readonly v: 1;
  /** Candidate of the current (or, when released/expired, the last) term. */
  readonly holder: string;
  /** Fencing token of that term: +1 with every new term, never reused. */
  readonly token: number;
  /** When the term started. */
  readonly acquiredAtMs: number;
  /** Last grant, renewal or release. */
  readonly renewedAtMs: number;
  /** End of the lease; after a release, the release time. */
  readonly leaseExpiresAtMs: number;
  /** TTL the holder asked for; renewals extend by it. */
  readonly ttlMs: number;
  /** The holder gave the term up: a new term may start at once. */
  readonly released: boolean;
  /**
   * SHA-256 (hex) of the lease key the holder campaigned with: Renew and Release of the term must
   * present that key, which no read returns (GetLeader and Observe show holder and token only).
   * Absent for a term granted without a key (in-process use, or an older agent).
   */
  readonly keyDigest?: string;
}

const ms = z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER);

/** Schema of {@link LeaseRecord} as stored (validated on every read: stored data is an edge). */
export const leaseRecordSchema = z.object({
  v: z.literal(1),
  holder: z.string().min(1),
  token: z.number().int().positive().max(Number.MAX_SAFE_INTEGER),
  acquiredAtMs: ms,
  renewedAtMs: ms,
  leaseExpiresAtMs: ms,
  ttlMs: z.number().int().positive(),
  released: z.boolean(),
  keyDigest: z.string().regex(/^[0-9a-f]{64}$/).optional(),
});

/**
 * What the store holds for an election: the record and its revision. `record` is null when the key
 * was never written (`revision` 0) or was deleted by an operator (`revision` of the delete marker).
 */
export interface LeaseSnapshot {
  readonly record: LeaseRecord | null;
  readonly revision: number;
}

export const EMPTY_SNAPSHOT: LeaseSnapshot = { record: null, revision: 0 };

/**
 * Whether `next` is not older than `held`: a higher term's token first, then the revision. Revisions
 * alone do not order snapshots across a bucket NATS lost and created again (they restart at 1, while
 * a new term's token is above every token the agents granted before: ADR 0007), so a watcher that
 * kept the highest revision would ignore every later term.
 */
export function notOlderLease(next: { readonly token: number; readonly revision: number }, held: { readonly token: number; readonly revision: number }): boolean {
  return next.token !== held.token ? next.token > held.token : next.revision >= held.revision;
}

/** A snapshot's place in {@link notOlderLease}'s order (an empty key has token 0). */
export function leaseOrder(s: LeaseSnapshot): { token: number; revision: number } {
  return { token: s.record?.token ?? 0, revision: s.revision };
}

export type LeaseState = 'none' | 'held' | 'expired' | 'released';

/** An election as an agent sees it at one instant of its clock. */
export interface LeaderView {
  readonly election: string;
  readonly state: LeaseState;
  /** The holder while `state` is `held`, else null. */
  readonly leader: string | null;
  /** Token of the current or last term; 0 when none was granted. */
  readonly fencingToken: number;
  readonly acquiredAtMs: number;
  readonly leaseExpiresAtMs: number;
  readonly revision: number;
  /** The agent clock the view was judged at. */
  readonly agentTimeMs: number;
}

/** The view of `snapshot` at `nowMs`: a lease is held while `nowMs < leaseExpiresAtMs`. */
export function viewOf(election: string, snapshot: LeaseSnapshot, nowMs: number): LeaderView {
  const r = snapshot.record;
  if (r === null) {
    return {
      election,
      state: 'none',
      leader: null,
      fencingToken: 0,
      acquiredAtMs: 0,
      leaseExpiresAtMs: 0,
      revision: snapshot.revision,
      agentTimeMs: nowMs,
    };
  }
  const state: LeaseState = r.released ? 'released' : nowMs < r.leaseExpiresAtMs ? 'held' : 'expired';
  return {
    election,
    state,
    leader: state === 'held' ? r.holder : null,
    fencingToken: r.token,
    acquiredAtMs: r.acquiredAtMs,
    leaseExpiresAtMs: r.leaseExpiresAtMs,
    revision: snapshot.revision,
    agentTimeMs: nowMs,
  };
}

/**
 * When a candidate other than the holder may start a new term, by the deciding agent's clock:
 * at once after a release; otherwise only once the lease has been expired for `clockSkewMs`, so an
 * agent whose clock runs ahead of the one that granted the lease by up to `clockSkewMs` still
 * waits until the lease has really ended.
 */
export function vacantAtMs(record: LeaseRecord, clockSkewMs: number): number {
  return record.released ? 0 : record.leaseExpiresAtMs + clockSkewMs;
}

export type CampaignDecision =
  /** A new term for the candidate: write `record` (token = last + 1). */
  | { readonly kind: 'grant'; readonly record: LeaseRecord; readonly previousHolder: string | null }
  /** The candidate already holds the latest term: continue it (same token), lease extended. */
  | { readonly kind: 'extend'; readonly record: LeaseRecord }
  /** Someone else holds it (or it expired less than the skew margin ago). */
  | { readonly kind: 'deny'; readonly retryAfterMs: number };

/**
 * Decides a Campaign on the current snapshot. A new term's token is the last token + 1; for a key
 * deleted by an operator it is the delete marker's revision + 1, still above every earlier token
 * (each grant is a write to the key, so a term's token never exceeds the revision that granted it).
 */
export function decideCampaign(
  snapshot: LeaseSnapshot,
  req: { readonly candidate: string; readonly ttlMs: number; readonly keyDigest?: string },
  nowMs: number,
  clockSkewMs: number,
  /**
   * The highest token the deciding agent has seen for this election (0: none). A bucket NATS lost
   * and created again starts at revision 0: without the floor, tokens would restart at 1, below the
   * fencing token of the map the last term published, and no new leader could ever publish one
   * that defenders accept (ADR 0007). The candidate's `min_token` (the highest token it has seen used)
   * raises it too, for when every agent lost its memory with the bucket.
   */
  tokenFloor = 0,
): CampaignDecision {
  const current = snapshot.record;
  // The same candidate with another key is not the holder (a process that took its ID and read the
  // token cannot continue its term): it waits like any other.
  if (current !== null && !current.released && current.holder === req.candidate && keyMatches(current, req.keyDigest)) {
    // The holder asks again (a retry after a lost response, or a restart of the same process):
    // no other term was granted since (the CAS on the revision guarantees it), so the term goes on.
    return { kind: 'extend', record: extended(current, nowMs, req.ttlMs) };
  }
  if (current !== null && nowMs < vacantAtMs(current, clockSkewMs)) {
    return { kind: 'deny', retryAfterMs: vacantAtMs(current, clockSkewMs) - nowMs };
  }
  const token = Math.max(current !== null ? current.token : snapshot.revision, tokenFloor) + 1;
  return {
    kind: 'grant',
    previousHolder: current?.holder ?? null,
    record: {
      v: 1,
      holder: req.candidate,
      token,
      acquiredAtMs: nowMs,
      renewedAtMs: nowMs,
      leaseExpiresAtMs: nowMs + req.ttlMs,
      ttlMs: req.ttlMs,
      released: false,
      ...(req.keyDigest !== undefined ? { keyDigest: req.keyDigest } : {}),
    },
  };
}

/** `wrong-key`: the term's holder and token, but not the key it was granted with. */
export type RenewRejection = 'no-term' | 'superseded' | 'not-holder' | 'released' | 'wrong-key';

/** A term granted with a key is the holder's only with that key; one granted without takes any. */
function keyMatches(current: LeaseRecord, keyDigest: string | undefined): boolean {
  return current.keyDigest === undefined || current.keyDigest === keyDigest;
}

export type RenewDecision =
  | { readonly kind: 'extend'; readonly record: LeaseRecord }
  | { readonly kind: 'reject'; readonly reason: RenewRejection };

/**
 * Decides a Renew of the term (`candidate`, `fencingToken`). It succeeds while that term is the
 * latest and not released, even if its lease ran out: no other term can have started meanwhile,
 * since that would have changed the record. The lease never shrinks (max of old and new end).
 */
export function decideRenew(
  snapshot: LeaseSnapshot,
  req: { readonly candidate: string; readonly fencingToken: number; readonly keyDigest?: string },
  nowMs: number,
): RenewDecision {
  const reason = termMismatch(snapshot.record, req);
  if (reason !== null) return { kind: 'reject', reason };
  const current = snapshot.record as LeaseRecord;
  return { kind: 'extend', record: extended(current, nowMs, current.ttlMs) };
}

export type ReleaseDecision =
  | { readonly kind: 'release'; readonly record: LeaseRecord }
  | { readonly kind: 'noop'; readonly reason: RenewRejection };

/** Decides a Release: the lease ends now (never later than it would have). */
export function decideRelease(
  snapshot: LeaseSnapshot,
  req: { readonly candidate: string; readonly fencingToken: number; readonly keyDigest?: string },
  nowMs: number,
): ReleaseDecision {
  const reason = termMismatch(snapshot.record, req);
  if (reason !== null) return { kind: 'noop', reason };
  const current = snapshot.record as LeaseRecord;
  return {
    kind: 'release',
    record: {
      ...current,
      released: true,
      renewedAtMs: nowMs,
      leaseExpiresAtMs: Math.min(current.leaseExpiresAtMs, nowMs),
    },
  };
}

function termMismatch(
  current: LeaseRecord | null,
  req: { readonly candidate: string; readonly fencingToken: number; readonly keyDigest?: string },
): RenewRejection | null {
  if (current === null) return 'no-term';
  if (current.token !== req.fencingToken) return 'superseded';
  if (current.holder !== req.candidate) return 'not-holder';
  if (current.released) return 'released';
  if (!keyMatches(current, req.keyDigest)) return 'wrong-key';
  return null;
}

function extended(current: LeaseRecord, nowMs: number, ttlMs: number): LeaseRecord {
  return {
    ...current,
    ttlMs,
    renewedAtMs: Math.max(current.renewedAtMs, nowMs),
    leaseExpiresAtMs: Math.max(current.leaseExpiresAtMs, nowMs + ttlMs),
  };
}
