import { createHash } from 'node:crypto';
import { ContentionError, RevisionConflictError } from '../errors';
import {
  decideCampaign,
  decideRelease,
  decideRenew,
  LeaderView,
  LeaseRecord,
  LeaseSnapshot,
  RenewRejection,
  vacantAtMs,
  viewOf,
} from '../lease';
import { LeaseStore } from '../lease-store';
import { CampaignRequest, LeaseRequest } from '../validation';

/** What a Campaign or Renew came to, with the election's state after it. */
export interface LeaseOutcome {
  readonly kind: 'granted' | 'extended' | 'denied' | 'renewed' | 'rejected';
  readonly view: LeaderView;
  /** The requesting candidate holds the election now. */
  readonly isLeader: boolean;
  /** TTL of the current (or last) lease, in ms; 0 when there is none. */
  readonly ttlMs: number;
  /** When not leader: ms until a new term could be granted (0 = now). */
  readonly retryAfterMs: number;
  /** Why a Renew was refused. */
  readonly rejection?: RenewRejection;
}

export interface ReleaseOutcome {
  readonly released: boolean;
  readonly view: LeaderView;
}

/** Hooks for metrics and logs; called after the write that made the change succeeded. */
export interface ElectionAuthorityEvents {
  /** A new term started; `previousHolder` is null for the first term (or after a deleted key). */
  granted?(e: { election: string; candidate: string; token: number; previousHolder: string | null }): void;
  renewRejected?(e: { election: string; candidate: string; token: number; reason: RenewRejection }): void;
  released?(e: { election: string; candidate: string; token: number }): void;
  /** A compare-and-set lost and was retried. */
  conflict?(e: { election: string; attempt: number }): void;
}

export interface ElectionAuthorityOptions {
  store: LeaseStore;
  /**
   * Largest difference between any two agents' clocks, in ms. A lease that was not released is
   * granted to another candidate only once it has been expired for this long.
   */
  clockSkewMs: number;
  /** Wall clock in Unix ms (shared meaning across agents). Default `Date.now`. */
  now?: () => number;
  /** Compare-and-set attempts before giving up with {@link ContentionError}. Default 8. */
  maxAttempts?: number;
  events?: ElectionAuthorityEvents;
}

/**
 * The election rules on top of a {@link LeaseStore}: read the record, decide by this agent's clock,
 * write by compare-and-set on the revision read, and on a lost race decide again on the new record.
 * Holds no state of its own, so any number of agents can serve the same elections.
 */
export class ElectionAuthority {
  private readonly now: () => number;
  private readonly maxAttempts: number;

  /** Per election, the highest token this agent has read or granted (see decideCampaign's floor). */
  private readonly tokensSeen = new Map<string, number>();

  constructor(private readonly opts: ElectionAuthorityOptions) {
    this.now = opts.now ?? Date.now;
    this.maxAttempts = opts.maxAttempts ?? 8;
  }

  /** Campaign: grant a new term, continue the candidate's own term, or report the holder. */
  campaign(req: CampaignRequest): Promise<LeaseOutcome> {
    return this.mutate<LeaseOutcome>(req.election, (snapshot, now) => {
      const d = decideCampaign(snapshot, withKeyDigest(req), now, this.opts.clockSkewMs, Math.max(this.tokensSeen.get(req.election) ?? 0, req.minToken ?? 0));
      if (d.kind === 'deny') {
        return {
          write: null,
          outcome: () => this.notLeader('denied', snapshot, req.election, now, d.retryAfterMs),
        };
      }
      return {
        write: d.record,
        outcome: (revision) => {
          if (d.kind === 'grant') {
            this.opts.events?.granted?.({
              election: req.election,
              candidate: req.candidate,
              token: d.record.token,
              previousHolder: d.previousHolder,
            });
          }
          return this.leader(
            d.kind === 'grant' ? 'granted' : 'extended',
            req.election,
            d.record,
            revision,
            now,
          );
        },
      };
    });
  }

  /** Renew: extend the lease of the term (`candidate`, `fencingToken`) while it is the latest. */
  renew(req: LeaseRequest): Promise<LeaseOutcome> {
    return this.mutate<LeaseOutcome>(req.election, (snapshot, now) => {
      const d = decideRenew(snapshot, withKeyDigest(req), now);
      if (d.kind === 'reject') {
        return {
          write: null,
          outcome: () => {
            this.opts.events?.renewRejected?.({
              election: req.election,
              candidate: req.candidate,
              token: req.fencingToken,
              reason: d.reason,
            });
            const retryAfterMs = snapshot.record
              ? Math.max(0, vacantAtMs(snapshot.record, this.opts.clockSkewMs) - now)
              : 0;
            return {
              ...this.notLeader('rejected', snapshot, req.election, now, retryAfterMs),
              rejection: d.reason,
            };
          },
        };
      }
      return {
        write: d.record,
        outcome: (revision) => this.leader('renewed', req.election, d.record, revision, now),
      };
    });
  }

  /** Release: end the term (`candidate`, `fencingToken`) now; a no-op when it is not current. */
  release(req: LeaseRequest): Promise<ReleaseOutcome> {
    return this.mutate<ReleaseOutcome>(req.election, (snapshot, now) => {
      const d = decideRelease(snapshot, withKeyDigest(req), now);
      if (d.kind === 'noop')
        return {
          write: null,
          outcome: () => ({ released: false, view: viewOf(req.election, snapshot, now) }),
        };
      return {
        write: d.record,
        outcome: (revision) => {
          this.opts.events?.released?.({
            election: req.election,
            candidate: req.candidate,
            token: req.fencingToken,
          });
          return { released: true, view: viewOf(req.election, { record: d.record, revision }, now) };
        },
      };
    });
  }

  /** The election's state by this agent's clock. */
  async getLeader(election: string): Promise<LeaderView> {
    const snapshot = await this.opts.store.get(election);
    return viewOf(election, snapshot, this.now());
  }

  private async mutate<T>(
    election: string,
    decide: (
      snapshot: LeaseSnapshot,
      now: number,
    ) => { write: LeaseRecord | null; outcome: (revision: number) => T },
  ): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const snapshot = await this.opts.store.get(election);
      this.noteToken(election, snapshot.record?.token ?? 0);
      // The clock is read after the record so the decision is never judged at a time before the read.
      const d = decide(snapshot, this.now());
      if (d.write === null) return d.outcome(snapshot.revision);
      try {
        const revision =
          snapshot.revision === 0
            ? await this.opts.store.create(election, d.write)
            : await this.opts.store.update(election, d.write, snapshot.revision);
        this.noteToken(election, d.write.token);
        return d.outcome(revision);
      } catch (err) {
        if (!(err instanceof RevisionConflictError)) throw err;
        this.opts.events?.conflict?.({ election, attempt });
        if (attempt >= this.maxAttempts) {
          throw new ContentionError(`election "${election}": ${attempt} concurrent writes in a row; retry`, {
            cause: err,
          });
        }
      }
    }
  }

  private noteToken(election: string, token: number): void {
    if (token > (this.tokensSeen.get(election) ?? 0)) this.tokensSeen.set(election, token);
  }

  private leader(
    kind: LeaseOutcome['kind'],
    election: string,
    record: LeaseRecord,
    revision: number,
    now: number,
  ): LeaseOutcome {
    return {
      kind,
      view: viewOf(election, { record, revision }, now),
      isLeader: true,
      ttlMs: record.ttlMs,
      retryAfterMs: 0,
    };
  }

  private notLeader(
    kind: LeaseOutcome['kind'],
    snapshot: LeaseSnapshot,
    election: string,
    now: number,
    retryAfterMs: number,
  ): LeaseOutcome {
    return {
      kind,
      view: viewOf(election, snapshot, now),
      isLeader: false,
      ttlMs: snapshot.record?.ttlMs ?? 0,
      retryAfterMs,
    };
  }
}

/**
 * The request with its lease key replaced by the key's SHA-256 (hex): the record keeps only the
 * digest, so neither the store nor any read reveals the key.
 */
function withKeyDigest<R extends { readonly leaseKey?: string }>(req: R): Omit<R, 'leaseKey'> & { keyDigest?: string } {
  const { leaseKey, ...rest } = req;
  return leaseKey === undefined ? rest : { ...rest, keyDigest: createHash('sha256').update(leaseKey).digest('hex') };
}
