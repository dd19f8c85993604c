import type { KV, KvEntry } from '@nats-io/kv';
import { performance } from 'node:perf_hooks';
// Nothing that loads zod: the defender's heartbeat thread refreshes its claim with this (ADR 0014).
import { defenderIdOf, InvalidMessageError, parseStableIdClaim, type StableIdClaim } from '@defender/contracts/stable-id';
import { DEFAULT_BUCKETS } from './bucket-names';
import { ClaimLostError, mapKvError, PoolExhaustedError, RevisionConflictError } from './errors';

export interface StableIdOptions {
  /** Pool size: IDs defender-0 .. defender-(maxDefenders-1). */
  maxDefenders: number;
  /** Refresh interval, seconds (the heartbeat interval). A claim is stale after 3 of them. */
  intervalSeconds: number;
  /** This process's identity (POD_UID in Kubernetes, else a random UUID). */
  ownerId: string;
  podName?: string;
  /**
   * Wall clock, Unix ms (default `Date.now`): the claim's `claimedAt` / `refreshedAt` (data for
   * people), and the hint of which claims may be abandoned (see {@link StableIdRegistry}); never
   * the verdict that a claim is stale.
   */
  now?: () => number;
  /** Monotonic clock, ms (default `performance.now`): staleness is judged on it alone. */
  monotonicNow?: () => number;
  /** Waits `ms` between looks at a claim being watched (default a timer); injected for tests. */
  sleep?: (ms: number) => Promise<void>;
  /**
   * How long ago the bucket was created, ms by the NATS server's own clock (default: its stream's
   * info, `ts - created`, both the server's; undefined when the server does not say, before 2.10).
   * A hint for missing claims, see {@link StableIdRegistry}; injected for tests of other rules.
   */
  bucketAgeMs?: () => Promise<number | undefined>;
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
 * Staleness is judged on this process's monotonic clock alone: a claim is stale when this registry
 * has watched its KV revision stay the same for {@link STALE_AFTER_INTERVALS} of its holder's
 * intervals. No clock of another machine is compared with ours, so a clock step (here, at the
 * holder or at the NATS server) cannot make a live claim look stale. A claim seen for the first
 * time is never stale: it is watched first, and the claim waits meanwhile, only when
 * - it is lower than the lowest free ID, and the server's store time of its last refresh is older
 *   than the staleness window by this host's wall clock (a hint that its holder may be dead, so a
 *   crashed predecessor's ID is reused; a live holder's next refresh ends the wait within about
 *   one interval, whatever the clocks say), or
 * - no ID is free (the pool looks full: every claim of unknown state is watched).
 * A missing claim is free (created again), never stale, unless the bucket is younger than the
 * staleness window by the server's clock: then it may be a live holder's claim that the holder has
 * not refreshed since NATS lost its store and the bucket was created again (its refresh creates it
 * again, same generation). Missing claims then wait until the bucket is older than the window, or
 * this registry has watched for that long on its monotonic clock: a live holder refreshes within an
 * interval, and one silent for the whole window would have lost a stored claim too. (Found by the
 * e2e test of a NATS store loss: a defender starting just after it took defender-0 while defender-0's
 * holder, alive, had a refresh time out; the holder then exited 4.) A first deployment's bucket is
 * young too: its first claimers wait one window once.
 */
export class StableIdRegistry {
  private held: HeldClaim | undefined;
  private claimedAt: string | undefined;
  private readonly now: () => number;
  private readonly mono: () => number;
  private readonly sleep: (ms: number) => Promise<void>;
  /** Other holders' claims as this registry saw them: revision, since when (monotonic), seen changing. */
  private readonly watched = new Map<string, { revision: number; since: number; changed: boolean }>();
  /** Since when (monotonic) this claim() has waited on a young bucket's missing claims; 'old' once judged. */
  private missingWatch: number | 'old' | undefined;
  private readonly bucketAgeMs: () => Promise<number | undefined>;

  constructor(
    private readonly kv: KV,
    private readonly opts: StableIdOptions,
    private readonly bucket: string = DEFAULT_BUCKETS.stableIds,
  ) {
    if (!Number.isInteger(opts.maxDefenders) || opts.maxDefenders < 1) {
      throw new RangeError(`maxDefenders must be a positive integer, got ${opts.maxDefenders}`);
    }
    this.now = opts.now ?? Date.now;
    this.mono = opts.monotonicNow ?? (() => performance.now());
    this.sleep = opts.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms)));
    this.bucketAgeMs = opts.bucketAgeMs ?? (() => this.serverBucketAgeMs());
  }

  get current(): HeldClaim | undefined {
    return this.held;
  }

  /**
   * Claims the lowest ID that is free, ours from a previous life (same ownerId), or stale. Waits
   * (looking again every quarter interval) while a claim it must judge first is being watched:
   * at most {@link STALE_AFTER_INTERVALS} intervals for one, about one interval for a live one.
   *
   * @throws PoolExhaustedError when every ID is held by an owner seen alive.
   * @throws NatsUnavailableError when NATS does not answer.
   */
  async claim(): Promise<HeldClaim> {
    if (this.held) return this.held;
    const pollMs = Math.max(10, (this.opts.intervalSeconds * 1000) / 4);
    this.missingWatch = undefined;
    for (;;) {
      const { got, watch } = await this.scan();
      if (got) {
        this.held = got;
        return got;
      }
      if (watch === 0) throw new PoolExhaustedError(this.opts.maxDefenders);
      await this.sleep(pollMs);
    }
  }

  /**
   * One pass over the pool, lowest ID first: takes the first ID that is free, released, ours or
   * stale, unless a lower claim is being watched (then nothing is taken: its verdict comes first).
   * Returns how many claims to watch when nothing was taken.
   */
  private async scan(): Promise<{ got?: HeldClaim; watch: number }> {
    let maybeAbandoned = 0;
    let unknown = 0;
    for (let n = 0; n < this.opts.maxDefenders; n++) {
      const key = defenderIdOf(n);
      let entry: KvEntry | null;
      try {
        entry = await this.kv.get(key);
      } catch (err) {
        throw mapKvError(err, this.bucket, key);
      }
      if (!entry || entry.operation !== 'PUT') {
        this.watched.delete(key);
        if (maybeAbandoned > 0) return { watch: maybeAbandoned };
        // Every ID above may be a live holder's too: wait for the bucket to age, lowest ID first.
        if (await this.bucketTooYoung()) return { watch: 1 };
        const got = await this.take(key, n, null, 0, 'free');
        if (got) return { got, watch: 0 };
        continue; // another claimer created it first
      }
      const verdict = this.judge(key, entry);
      if (verdict === 'live') continue;
      if (verdict === 'maybe-abandoned') {
        maybeAbandoned++;
        continue;
      }
      if (verdict === 'unknown') {
        unknown++;
        continue;
      }
      // A claim of our own is ours to resume whatever lies below it; anything else waits its turn.
      if (verdict.how !== 'own' && maybeAbandoned > 0) return { watch: maybeAbandoned };
      const generation = Math.min(verdict.previousGeneration + 1, MAX_GENERATION);
      const got = await this.take(key, n, entry.revision, generation, verdict.how);
      if (got) return { got, watch: 0 };
    }
    // Nothing free: the pool looks full, so every claim of unknown state is watched.
    return { watch: maybeAbandoned + unknown };
  }

  /**
   * Continues a claim this owner took through another registry (e.g. handed to the defender's
   * heartbeat thread): `refresh` and `release` then act on it here. The other registry must stop
   * refreshing it, or the two would conflict on its revision.
   *
   * @throws Error when this registry holds a claim already.
   */
  resume(held: HeldClaim): void {
    if (this.held) throw new Error(`resume(${held.defenderId}) while holding ${this.held.defenderId}`);
    this.held = held;
  }

  /**
   * Refreshes the claim (call on every heartbeat).
   *
   * A claim found missing (deleted, or its bucket lost and created again) was not taken over by
   * anyone: it is created again, same generation.
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
          const value = this.encode(held.defenderId);
          const revision = current === 'missing' ? await this.kv.create(held.defenderId, value) : await this.kv.update(held.defenderId, value, current);
          this.held = { ...held, revision };
          return this.held;
        } catch (err2) {
          const again = mapKvError(err2, this.bucket, held.defenderId, current === 'missing' ? 0 : current);
          if (!(again instanceof RevisionConflictError)) throw again;
        }
      }
      this.held = undefined;
      throw new ClaimLostError(held.defenderId, { cause: mapped });
    }
  }

  /**
   * The revision of the stored claim if it is still `held` (same owner and generation, not
   * released), `missing` when there is none, undefined when it is someone else's.
   */
  private async currentRevisionIfOurs(held: HeldClaim): Promise<number | 'missing' | undefined> {
    let entry: KvEntry | null;
    try {
      entry = await this.kv.get(held.defenderId);
    } catch (err) {
      throw mapKvError(err, this.bucket, held.defenderId);
    }
    if (!entry || entry.operation !== 'PUT') return 'missing';
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

  /** Takes `key` by atomic create (`expected` null) or compare-and-set; undefined when another claimer won. */
  private async take(key: string, n: number, expected: number | null, generation: number, how: HeldClaim['how']): Promise<HeldClaim | undefined> {
    try {
      const value = this.encode(key, generation);
      const revision = expected === null ? await this.kv.create(key, value) : await this.kv.update(key, value, expected);
      this.watched.delete(key);
      return { defenderId: key, n, revision, generation, how };
    } catch (err) {
      const mapped = mapKvError(err, this.bucket, key, expected ?? 0);
      if (mapped instanceof RevisionConflictError) return undefined;
      throw mapped;
    }
  }

  /**
   * Whether missing claims must still wait (see {@link StableIdRegistry}): the bucket is younger than
   * the staleness window by the server's clock, and this claim() has not yet watched for that long.
   */
  private async bucketTooYoung(): Promise<boolean> {
    if (this.missingWatch === 'old') return false;
    const windowMs = STALE_AFTER_INTERVALS * this.opts.intervalSeconds * 1000;
    const t = this.mono();
    this.missingWatch ??= t;
    const age = await this.bucketAgeMs();
    if (age === undefined || age >= windowMs || t - this.missingWatch >= windowMs) {
      this.missingWatch = 'old';
      return false;
    }
    return true;
  }

  private async serverBucketAgeMs(): Promise<number | undefined> {
    let info: { created: string; ts?: string };
    try {
      info = (await this.kv.status()).streamInfo;
    } catch (err) {
      throw mapKvError(err, this.bucket, '(bucket status)');
    }
    return info.ts === undefined ? undefined : isoMs(info.ts) - isoMs(info.created);
  }

  /**
   * What a stored claim is to this registry: takeable (released, ours, or stale: its revision
   * unchanged for the staleness window on our monotonic clock), live (its revision changed while
   * we watched), or not known yet (first seen, or watched for less than the window).
   */
  private judge(
    key: string,
    entry: KvEntry,
  ): { how: HeldClaim['how']; previousGeneration: number } | 'live' | 'unknown' | 'maybe-abandoned' {
    let claim: StableIdClaim | undefined;
    try {
      claim = parseStableIdClaim(entry.value);
    } catch (err) {
      if (!(err instanceof InvalidMessageError)) throw err;
      // An unreadable claim is nobody's: treat it like an abandoned one (judged by watching below).
    }
    // An unreadable claim has no generation; we continue from 0 (see the README: a corrupted claim
    // weakens fencing against its old holder at the same map version).
    const previousGeneration = claim?.generation ?? 0;
    // Released by a clean shutdown: free, and the next holder continues the generation.
    if (claim?.released) return { how: 'free', previousGeneration };
    if (claim && claim.ownerId === this.opts.ownerId) return { how: 'own', previousGeneration };
    const windowMs = STALE_AFTER_INTERVALS * (claim?.intervalSeconds ?? this.opts.intervalSeconds) * 1000;
    const t = this.mono();
    const seen = this.watched.get(key);
    if (!seen || seen.revision !== entry.revision) {
      this.watched.set(key, { revision: entry.revision, since: t, changed: seen !== undefined });
      if (seen) return 'live';
    } else if (t - seen.since > windowMs) {
      return { how: 'stale', previousGeneration };
    } else if (seen.changed) {
      return 'live';
    }
    // Not known yet. Only a hint, never a verdict: the server's store time of the last refresh
    // against our wall clock says whether the holder may be dead and the claim is worth waiting for.
    return this.now() - entry.created.getTime() > windowMs ? 'maybe-abandoned' : 'unknown';
  }
}

/** Unix ms of an RFC 3339 time as the NATS server writes it (nanosecond fractions cut to ms). */
function isoMs(iso: string): number {
  const ms = Date.parse(iso.replace(/(\.\d{3})\d+/, '$1'));
  if (Number.isNaN(ms)) throw new Error(`not a time: ${iso}`);
  return ms;
}
