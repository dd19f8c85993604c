import type { KV, KvEntry } from '@nats-io/kv';
import { defenderIdOf, InvalidMessageError, parseStableIdClaim, StableIdClaim } from '@defender/contracts';
import { DEFAULT_BUCKETS } from './buckets';
import { ClaimLostError, mapKvError, PoolExhaustedError, RevisionConflictError } from './errors';

export interface StableIdOptions {
  /** Pool size: IDs defender-0 .. defender-(maxDefenders-1). */
  maxDefenders: number;
  /** Refresh interval, seconds (the heartbeat interval). A claim is stale after 3 of them. */
  intervalSeconds: number;
  /** This process's identity (POD_UID in Kubernetes, else a random UUID). */
  ownerId: string;
  podName?: string;
  /** Epoch ms; injected for tests. */
  now?: () => number;
}

/** A claim this process holds. */
export interface HeldClaim {
  readonly defenderId: string;
  readonly n: number;
  readonly revision: number;
  /** Generation of this holder of the ID (previous holder's + 1, released or not; 0 for a never-claimed ID). */
  readonly generation: number;
  /** How it was obtained: a free ID, our own earlier claim (same ownerId), or a stale one. */
  readonly how: 'free' | 'own' | 'stale';
}

/** Largest claim generation (21 bits: see ownerEpoch in @defender/membership). */
export const MAX_GENERATION = 2 ** 21 - 1;

/** Multiplier of the interval after which an unrefreshed claim counts as abandoned. */
export const STALE_AFTER_INTERVALS = 3;

/**
 * Stable-ID pool in the `stable-ids` bucket: claim the lowest free ID by atomic create (or by
 * compare-and-set over a released claim), refresh by compare-and-set, take over stale claims by
 * compare-and-set, release on shutdown (the claim is marked released, keeping its generation).
 *
 * Staleness is judged by the time the server stored the last refresh (`KvEntry.created`, the NATS
 * server's clock) against this process's clock, so writers' clocks do not matter; only the skew
 * between this host and the NATS server does, and it must stay well under the staleness window
 * (3 x interval; 6 s at defaults).
 */
export class StableIdRegistry {
  private held: HeldClaim | undefined;
  private claimedAt: string | undefined;
  private readonly now: () => number;

  constructor(
    private readonly kv: KV,
    private readonly opts: StableIdOptions,
    private readonly bucket: string = DEFAULT_BUCKETS.stableIds,
  ) {
    if (!Number.isInteger(opts.maxDefenders) || opts.maxDefenders < 1) {
      throw new RangeError(`maxDefenders must be a positive integer, got ${opts.maxDefenders}`);
    }
    this.now = opts.now ?? Date.now;
  }

  get current(): HeldClaim | undefined {
    return this.held;
  }

  /**
   * Claims the lowest ID that is free, ours from a previous life (same ownerId), or stale.
   *
   * @throws PoolExhaustedError when every ID is held by a live owner.
   * @throws NatsUnavailableError when NATS does not answer.
   */
  async claim(): Promise<HeldClaim> {
    if (this.held) return this.held;
    for (let n = 0; n < this.opts.maxDefenders; n++) {
      const got = await this.tryClaim(n);
      if (got) {
        this.held = got;
        return got;
      }
    }
    throw new PoolExhaustedError(this.opts.maxDefenders);
  }

  /**
   * Refreshes the claim (call on every heartbeat).
   *
   * @throws ClaimLostError when someone else took the ID over: the caller must stop acting as it.
   * @throws NatsUnavailableError when NATS does not answer (the claim may still be ours; retry).
   */
  async refresh(): Promise<HeldClaim> {
    const held = this.held;
    if (!held) throw new Error('refresh() before claim()');
    try {
      const revision = await this.kv.update(held.defenderId, this.encode(held.defenderId), held.revision);
      this.held = { ...held, revision };
      return this.held;
    } catch (err) {
      const mapped = mapKvError(err, this.bucket, held.defenderId, held.revision);
      if (!(mapped instanceof RevisionConflictError)) throw mapped;
      // An earlier refresh may have been applied without our hearing of it (its reply timed out, e.g.
      // while the event loop was blocked): the revision moved, but the claim is still ours if the
      // stored value names this owner and generation. Only another holder means the claim was lost.
      const current = await this.currentRevisionIfOurs(held);
      if (current !== undefined) {
        try {
          const revision = await this.kv.update(held.defenderId, this.encode(held.defenderId), current);
          this.held = { ...held, revision };
          return this.held;
        } catch (err2) {
          const again = mapKvError(err2, this.bucket, held.defenderId, current);
          if (!(again instanceof RevisionConflictError)) throw again;
        }
      }
      this.held = undefined;
      throw new ClaimLostError(held.defenderId, { cause: mapped });
    }
  }

  /** The revision of the stored claim if it is still `held` (same owner and generation, not released). */
  private async currentRevisionIfOurs(held: HeldClaim): Promise<number | undefined> {
    let entry: KvEntry | null;
    try {
      entry = await this.kv.get(held.defenderId);
    } catch (err) {
      throw mapKvError(err, this.bucket, held.defenderId);
    }
    if (!entry || entry.operation !== 'PUT') return undefined;
    try {
      const claim = parseStableIdClaim(entry.value);
      const ours = claim.ownerId === this.opts.ownerId && claim.generation === held.generation && !claim.released;
      return ours ? entry.revision : undefined;
    } catch (err) {
      if (err instanceof InvalidMessageError) return undefined;
      throw err;
    }
  }

  /**
   * Marks the claim released if it is still ours (compare-and-set), so a successor can take the ID
   * at once. The claim is not deleted: the successor must continue its generation, or its owner
   * epochs would be lower than ours under the same map and its writes fenced (a pod that took a
   * stale ID over has generation >= 1; a deleted key would be created again with generation 0).
   */
  async release(): Promise<void> {
    const held = this.held;
    if (!held) return;
    this.held = undefined;
    try {
      await this.kv.update(held.defenderId, this.encode(held.defenderId, held.generation, true), held.revision);
    } catch (err) {
      const mapped = mapKvError(err, this.bucket, held.defenderId, held.revision);
      // Someone took it over already: nothing of ours to release.
      if (!(mapped instanceof RevisionConflictError)) throw mapped;
    }
  }

  private encode(defenderId: string, generation = this.held?.generation ?? 0, released = false): string {
    const now = new Date(this.now()).toISOString();
    this.claimedAt ??= now;
    const claim: StableIdClaim = {
      schema: 1,
      defenderId,
      ownerId: this.opts.ownerId,
      podName: this.opts.podName,
      claimedAt: this.claimedAt,
      refreshedAt: now,
      generation,
      intervalSeconds: this.opts.intervalSeconds,
      ...(released ? { released: true } : {}),
    };
    return JSON.stringify(claim);
  }

  private async tryClaim(n: number): Promise<HeldClaim | undefined> {
    const key = defenderIdOf(n);
    try {
      const revision = await this.kv.create(key, this.encode(key, 0));
      return { defenderId: key, n, revision, generation: 0, how: 'free' };
    } catch (err) {
      // create fails when a live value exists; anything else is a real error.
      const mapped = mapKvError(err, this.bucket, key, 0);
      if (!(mapped instanceof RevisionConflictError)) throw mapped;
    }
    let entry: KvEntry | null;
    try {
      entry = await this.kv.get(key);
    } catch (err) {
      throw mapKvError(err, this.bucket, key);
    }
    if (!entry || entry.operation !== 'PUT') return undefined; // changed under us: try the next ID
    const taken = this.takeable(entry);
    if (!taken) return undefined;
    const generation = Math.min(taken.previousGeneration + 1, MAX_GENERATION);
    try {
      const revision = await this.kv.update(key, this.encode(key, generation), entry.revision);
      return { defenderId: key, n, revision, generation, how: taken.how };
    } catch (err) {
      const mapped = mapKvError(err, this.bucket, key, entry.revision);
      if (mapped instanceof RevisionConflictError) return undefined; // another claimer won it
      throw mapped;
    }
  }

  private takeable(entry: KvEntry): { how: HeldClaim['how']; previousGeneration: number } | undefined {
    let claim: StableIdClaim | undefined;
    try {
      claim = parseStableIdClaim(entry.value);
    } catch (err) {
      if (!(err instanceof InvalidMessageError)) throw err;
      // An unreadable claim is nobody's: treat it like a stale one (judged by its age below).
    }
    // An unreadable claim has no generation; we continue from 0 (see the README: a corrupted claim
    // weakens fencing against its old holder at the same map version).
    const previousGeneration = claim?.generation ?? 0;
    // Released by a clean shutdown: free, and the next holder continues the generation.
    if (claim?.released) return { how: 'free', previousGeneration };
    if (claim && claim.ownerId === this.opts.ownerId) return { how: 'own', previousGeneration };
    const intervalMs = (claim?.intervalSeconds ?? this.opts.intervalSeconds) * 1000;
    const ageMs = this.now() - entry.created.getTime();
    return ageMs > STALE_AFTER_INTERVALS * intervalMs ? { how: 'stale', previousGeneration } : undefined;
  }
}
