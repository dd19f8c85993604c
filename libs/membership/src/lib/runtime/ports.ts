import type { AssignmentMap, DefenderState, Heartbeat, LoadReport } from '@defender/contracts';

/**
 * What owns the processing of chambers (the run processor). Membership calls it when the assignment
 * map changes: first `release` of lost chambers (which must finish or abandon their in-flight runs
 * before returning), then `acquire` of gained ones.
 */
export interface ChamberWork {
  release(chambers: readonly string[]): Promise<void>;
  acquire(chambers: readonly string[], mapVersion: number): Promise<void>;
  /**
   * After each applied map (acquire and release done): every chamber this defender owns in it. A
   * worker fenced under an older map than this one, for a chamber the map still gives this
   * defender, is started again under it (libs/pipeline `epochAfterFence`).
   */
  mapApplied?(owned: readonly string[], mapVersion: number): void;
  /** Stop taking new runs and wait for in-flight ones, at most `timeoutMs`. */
  drain(timeoutMs: number): Promise<void>;
  inflight(): number;
  processedTotal(): number;
  /** The heartbeat's measured load (ADR 0008); closes the measurement interval. */
  loadReport?(): LoadReport;
}

/** A held stable-ID claim (libs/nats-kv `HeldClaim`). */
export interface StableIdClaim {
  readonly defenderId: string;
  readonly n: number;
  /** Generation of this holder of the ID: the low bits of every owner epoch (ownerEpoch). */
  readonly generation: number;
  /** How it was obtained: a free ID, our own earlier claim, or a stale one. */
  readonly how: string;
}

/** The stable-ID pool as membership uses it (libs/nats-kv `StableIdRegistry`). */
export interface StableIdPort<C extends StableIdClaim> {
  /** The claim held now, if any. */
  readonly current: C | undefined;
  /**
   * Claims the lowest free, own or stale ID.
   * @throws an error {@link MembershipCluster.isPoolExhausted} accepts when every ID is held by a live owner.
   * @throws an error {@link MembershipCluster.isUnavailable} accepts when NATS does not answer.
   */
  claim(): Promise<C>;
  release(): Promise<void>;
}

/** An assignment map as read from the bucket (libs/nats-kv `StoredMap`). */
export interface StoredAssignmentMap {
  readonly map: AssignmentMap;
  /** The revision of the map's head. */
  readonly revision: number;
  /** Set when the map was read for one defender: `map.assignments` then holds only its chambers. */
  readonly owner?: string;
}

/** What a map watch calls (libs/nats-kv `MapWatchHandlers`). */
export interface MapWatchHandlers {
  onMap(stored: StoredAssignmentMap): Promise<void>;
  onRejected(revision: number, reason: string): void;
}

/** The assignment-map bucket as membership uses it (libs/nats-kv `AssignmentMapBucket`). */
export interface AssignmentMapPort {
  /** The bucket's identity (its stream's creation); throws when NATS does not answer. */
  identity(): Promise<string>;
  /** Delivers the current map and every newer one than `held`, read as far as `scope` names (ADR 0009). */
  watch(
    handlers: MapWatchHandlers,
    held: AssignmentMap | undefined,
    scope: ((head: Pick<AssignmentMap, 'defenderInfo'>) => string | null) | undefined,
  ): Promise<{ stop(): void; readonly done: Promise<void> }>;
}

/** The heartbeat as the main thread describes it; the writer adds `sentAt`. */
export type HeartbeatSnapshot = Omit<Heartbeat, 'sentAt'>;

/** What the heartbeat writer (the defender's heartbeat thread, ADR 0013) reports. */
export interface HeartbeatEvents {
  /** A heartbeat (and claim refresh) was written. */
  beat(): void;
  /** A write failed; the writer tries again at the next slot. */
  failed(message: string): void;
  /** Another process took the stable ID: the writer stopped for good. */
  claimLost(message: string): void;
  /** The main thread was silent for `silentMs` (> the hang limit): beats were withheld meanwhile. */
  withheld(silentMs: number): void;
  /** The writer ended without being stopped: nothing heartbeats any more. */
  died(err: Error): void;
}

/** A running heartbeat writer. */
export interface HeartbeatHandle {
  /** The main thread runs: the content of the next heartbeats. */
  pulse(snapshot: HeartbeatSnapshot): void;
  /** Stops beating; with `leave`, removes the heartbeat and releases the claim. */
  stop(leave: boolean): Promise<{ readonly left: boolean; readonly message?: string }>;
}

/** The cluster (NATS KV and the heartbeat writer) as membership uses it. */
export interface MembershipCluster<C extends StableIdClaim> {
  /**
   * Opens the cluster's KV buckets and the stable-ID registry on them.
   * @throws an error {@link isUnavailable} accepts while NATS does not answer.
   */
  open(): Promise<{ readonly stableIds: StableIdPort<C>; readonly assignments: AssignmentMapPort }>;
  /** Creates the KV buckets NATS lost (restarted empty): their names, none when nothing was missing. */
  recreateMissing(): Promise<string[]>;
  /** Starts writing heartbeats for `claim`, `first` until the first pulse; a silence of `hangAfterMs` withholds them. */
  startHeartbeats(claim: C, first: HeartbeatSnapshot, hangAfterMs: number, events: HeartbeatEvents): HeartbeatHandle;
  /** Whether `err` means NATS did not answer (retried). */
  isUnavailable(err: unknown): boolean;
  /** Whether `err` means every stable ID is held by a live owner. */
  isPoolExhausted(err: unknown): boolean;
}

/** An applied assignment map, as membership reports it. */
export interface AppliedAssignment {
  readonly defenderId: string;
  readonly stored: StoredAssignmentMap;
  /** Every chamber this defender owns under the map, sorted. */
  readonly owned: readonly string[];
  readonly added: number;
  readonly removed: number;
  /** Every chamber of the map (only ours when it was read for us alone). */
  readonly mapChambers: ReadonlySet<string>;
  /** The map's lowest defender when it was read whole (it dead-letters unknown chambers' runs). */
  readonly lowestDefender: string | undefined;
  readonly seconds: number;
}

/**
 * What membership tells its app (logs, metrics, health, the identity processing reads). Called
 * synchronously, in the order things happen.
 */
export interface MembershipEvents {
  /** The state machine moved (or, at start, was set): `secondsIn` the time spent in `from` (undefined at start). */
  state(from: DefenderState, to: DefenderState, code: number, secondsIn: number | undefined): void;
  /** A NATS call failed with NATS unavailable and is retried after `delayMs`. */
  retrying(what: string, attempt: number, delayMs: number, err: unknown): void;
  /** Opening the KV buckets failed (every failure, retried or not). */
  openFailed(): void;
  /** A stable-ID claim is attempted. */
  claimAttempt(): void;
  /** Every stable ID is held by a live owner: one more look after `waitMs`. */
  poolFull(waitMs: number): void;
  claimed(claim: StableIdClaim): void;
  heartbeatFailed(defenderId: string | undefined, message: string): void;
  heartbeatWithheld(defenderId: string | undefined, silentMs: number, hangAfterMs: number): void;
  /** After a failed heartbeat: the buckets NATS had lost were created again (`created`), or the check failed. */
  bucketsChecked(created: readonly string[], defenderId: string | undefined, err?: unknown): void;
  /** The map is watched again (`why`): only a newer map is applied. */
  rewatch(why: string): void;
  watchFailed(err: unknown): void;
  mapRejected(revision: number, reason: string): void;
  /** Applying the map failed (the process then exits). */
  applyFailed(version: number, err: unknown): void;
  applied(a: AppliedAssignment): void;
  shutdownBegan(inflight: number): void;
  /** On shutdown: the stable ID was released (`left`), or could not be (it goes stale instead). */
  released(defenderId: string, left: boolean, from: DefenderState, message?: string): void;
  shutdownEnded(seconds: number, defenderId: string | undefined, from: DefenderState): Promise<void>;
}

/** Membership's settings (the defender's configuration). */
export interface MembershipSettings {
  readonly ownerId: string;
  readonly podName?: string;
  readonly podUid?: string;
  readonly heartbeatIntervalSeconds: number;
  /** The capacity announced in heartbeats. */
  readonly capacity: number;
  readonly shutdownDrainTimeoutSeconds: number;
  /** Heartbeat intervals after which a silent claim is stale (libs/nats-kv STALE_AFTER_INTERVALS). */
  readonly staleAfterIntervals: number;
}
