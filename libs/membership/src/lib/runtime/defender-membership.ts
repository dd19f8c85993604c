import { retrying, supervise } from '@defender/backoff';
import type { AssignmentMap, DefenderState, LoadReport } from '@defender/contracts';
import { DefenderLifecycle } from '../defender-state';
import { defenderMapScope } from '../ownership';
import { MapApplier } from './map-applier';
import { MapWatchGuard } from './map-watch-guard';
import type { AssignmentMapPort, ChamberWork, HeartbeatHandle, HeartbeatSnapshot, MembershipCluster, MembershipEvents, MembershipSettings, StableIdClaim, StableIdPort } from './ports';

/** Exit codes of a defender that cannot go on (Kubernetes restarts it). */
export const EXIT_POOL_EXHAUSTED = 3;
export const EXIT_CLAIM_LOST = 4;
export const EXIT_MEMBERSHIP_FAILED = 5;

/** Pulses of the main thread to its heartbeat thread per heartbeat interval (ADR 0013). */
export const PULSES_PER_INTERVAL = 4;

/**
 * Intervals the main thread may go without a pulse before its heartbeats are withheld (ADR 0013):
 * stalls of up to 6.6 s were measured on a starved machine (2 s intervals), and a hung loop is
 * judged dead this many intervals later than a crash.
 */
export const HANG_AFTER_INTERVALS = 2;

/** Extra claim rounds when the pool is full, one staleness window apart. */
export const POOL_EXHAUSTED_RETRIES = 1;

/** Backoff of the NATS retries and of the map watch's restarts, ms (@defender/backoff). */
const NATS_BACKOFF = { baseMs: 200, maxMs: 5000 } as const;

/** What a {@link DefenderMembership} needs: the cluster, the processing it drives, its app, clocks and timers. */
export interface DefenderMembershipDeps<C extends StableIdClaim> {
  readonly settings: MembershipSettings;
  readonly cluster: MembershipCluster<C>;
  /** The processing of chambers; none in a defender without it. */
  readonly work: ChamberWork | null;
  readonly events: MembershipEvents;
  /** Ends the process with `code` (a failure membership cannot go on from; not called once stopping). */
  readonly fatal: (code: number, msg: string, err: unknown) => void;
  /** Wall clock, Unix ms (the heartbeat's `startedAt`, for people). */
  readonly now: () => number;
  /** Monotonic clock, ms (uptime, time in a state). */
  readonly monotonic: () => number;
  /** Resolves after `ms`, or at once when `signal` aborts. */
  readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Calls `fn` every `ms` until the returned function is called. */
  readonly every: (ms: number, fn: () => void) => () => void;
  /** Uniform [0, 1) for the backoffs' jitter. */
  readonly random: () => number;
}

/**
 * The defender's cluster membership (seed 002 state machine): claims a stable ID, heartbeats (from
 * its heartbeat writer, pulsed from this event loop), watches the assignment map and keeps the set
 * of owned chambers ({@link MapApplier}). On {@link stop}: stops intake, drains, removes its
 * heartbeat and releases the ID. Plain code: NATS, the heartbeat thread, clocks and timers come in
 * through its deps, logs and metrics go out through its events.
 */
export class DefenderMembership<C extends StableIdClaim> {
  private readonly lifecycle: DefenderLifecycle;
  private readonly startedAt: string;
  private readonly startedMono: number;
  /** When the current state was entered (monotonic ms). */
  private stateSince: number;
  private stableIds: StableIdPort<C> | undefined;
  private assignments: AssignmentMapPort | undefined;
  private readonly maps: MapApplier;
  private stopping = false;
  /** Aborted when the membership stops: the map is not watched again, waits end. */
  private readonly stopped = new AbortController();
  private heartbeats: HeartbeatHandle | undefined;
  private stopPulses: (() => void) | undefined;
  private pulses = 0;
  private lastLoadReport: LoadReport | undefined;
  private recreating = false;
  private stopWatch: (() => void) | undefined;
  /** Keeps the map watch on the bucket that exists now (ADR 0007): checked every heartbeat. */
  private readonly mapWatch: MapWatchGuard;

  constructor(private readonly deps: DefenderMembershipDeps<C>) {
    this.lifecycle = new DefenderLifecycle(deps.now);
    this.startedAt = new Date(deps.now()).toISOString();
    this.startedMono = deps.monotonic();
    this.stateSince = this.startedMono;
    this.deps.events.state('INITIALIZATION', 'INITIALIZATION', this.lifecycle.code, undefined);
    this.maps = new MapApplier({
      work: deps.work,
      defenderId: () => this.defenderId,
      stopping: () => this.stopping,
      monotonic: deps.monotonic,
      events: deps.events,
      settled: () => {
        if (this.lifecycle.state === 'FOLLOWER') this.setState('STABLE');
      },
      // Owned set and processing could disagree now: restart and re-apply from scratch.
      failed: (err) => this.fatal(EXIT_MEMBERSHIP_FAILED, 'could not apply the assignment map', err),
    });
    this.mapWatch = new MapWatchGuard({
      identity: () => this.assignments?.identity() ?? Promise.reject(new Error('no buckets yet')),
      rewatch: (why) => {
        this.deps.events.rewatch(why);
        this.stopWatch?.();
      },
    });
  }

  /** The claimed ID, e.g. `defender-3`. */
  get defenderId(): string | undefined {
    return this.stableIds?.current?.defenderId;
  }
  get state(): DefenderState {
    return this.lifecycle.state;
  }
  get ownedChambers(): readonly string[] {
    return this.maps.ownedChambers;
  }
  get mapVersion(): number {
    return this.maps.heldMap?.version ?? 0;
  }
  get uptimeSeconds(): number {
    return Math.round((this.deps.monotonic() - this.startedMono) / 1000);
  }

  /**
   * Opens the buckets, claims an ID, starts the heartbeats and watches the map until {@link stop}.
   * Rejects on a failure it cannot go on from (the process should exit).
   */
  async run(): Promise<void> {
    const { stableIds, assignments } = await this.retry('open KV buckets', () => this.deps.cluster.open(), () => this.deps.events.openFailed());
    if (this.stopping) return;
    this.setState('CLAIMING_ID');
    this.stableIds = stableIds;
    this.assignments = assignments;
    const claim = await this.claim(stableIds);
    if (!claim) return;
    if (this.stopping) {
      await stableIds.release();
      return;
    }
    this.deps.events.claimed(claim);
    this.setState('FOLLOWER');
    await this.startHeartbeats(claim);
    await this.watchMap(assignments);
  }

  /** Stops intake, waits for the map being applied, drains the work, then leaves (heartbeat removed, ID released). */
  async stop(): Promise<void> {
    this.stopping = true;
    this.stopped.abort();
    const began = this.deps.monotonic();
    const from = this.lifecycle.state;
    this.deps.events.shutdownBegan(this.deps.work?.inflight() ?? 0);
    this.setState('SHUTDOWN');
    this.stopWatch?.();
    await this.maps.idle();
    // Heartbeats go on while runs drain (state SHUTDOWN): a draining defender is not a dead one.
    if (this.deps.work) await this.deps.work.drain(this.deps.settings.shutdownDrainTimeoutSeconds * 1000);
    this.stopPulses?.();
    const id = this.defenderId;
    if (this.heartbeats && id) {
      // Not left: the claim then goes stale and is taken over after 3 intervals: slower, still correct.
      const { left, message } = await this.heartbeats.stop(true);
      this.deps.events.released(id, left, from, message);
    }
    await this.deps.events.shutdownEnded((this.deps.monotonic() - began) / 1000, id, from);
  }

  private setState(s: DefenderState): void {
    const from = this.lifecycle.state;
    this.lifecycle.to(s);
    if (from === s) return;
    const now = this.deps.monotonic();
    this.deps.events.state(from, s, this.lifecycle.code, (now - this.stateSince) / 1000);
    this.stateSince = now;
  }

  private fatal(code: number, msg: string, err: unknown): void {
    if (this.stopping) return;
    this.deps.fatal(code, msg, err);
  }

  /** The claim, or undefined when the pool stayed full (the process was told to exit). */
  private async claim(stableIds: StableIdPort<C>): Promise<C | undefined> {
    for (let round = 0; ; round++) {
      try {
        return await this.retry('claim a stable ID', () => {
          this.deps.events.claimAttempt();
          return stableIds.claim();
        });
      } catch (err) {
        if (!this.deps.cluster.isPoolExhausted(err)) throw err;
        if (round >= POOL_EXHAUSTED_RETRIES || this.stopping) {
          this.fatal(EXIT_POOL_EXHAUSTED, `stable-ID pool exhausted: ${(err as Error).message}; raise MAX_DEFENDERS or scale down`, err);
          return undefined;
        }
        // claim() saw every holder refresh; a pod going away meanwhile frees or abandons an ID: look once more before giving up.
        const waitMs = (this.deps.settings.staleAfterIntervals + 1) * this.deps.settings.heartbeatIntervalSeconds * 1000;
        this.deps.events.poolFull(waitMs);
        await this.deps.sleep(waitMs, this.stopped.signal);
      }
    }
  }

  /** Retries `fn` while NATS is unavailable, with jittered backoff; other errors propagate. Each failure is reported to `failed`. */
  private retry<T>(what: string, fn: () => Promise<T>, failed?: () => void): Promise<T> {
    return retrying(fn, {
      what,
      ...NATS_BACKOFF,
      random: this.deps.random,
      sleep: this.deps.sleep,
      onFailure: () => failed?.(),
      retryable: (err) => this.deps.cluster.isUnavailable(err) && !this.stopping,
      onRetry: (err, attempt, delayMs) => this.deps.events.retrying(what, attempt, delayMs, err),
    });
  }

  /** What the next heartbeats say; the measured load is taken once per interval (it closes its window). */
  private snapshot(): HeartbeatSnapshot {
    const { settings, work } = this.deps;
    if (this.pulses % PULSES_PER_INTERVAL === 0 || this.lastLoadReport === undefined) this.lastLoadReport = work?.loadReport?.();
    const held: AssignmentMap | undefined = this.maps.heldMap;
    return {
      schema: 1,
      defenderId: this.defenderId ?? '',
      podName: settings.podName,
      podUid: settings.podUid,
      state: this.lifecycle.state,
      mapVersionSeen: this.mapVersion,
      ...(held ? { mapTokenSeen: held.fencingToken } : {}),
      load: { chambers: this.maps.ownedChambers.length, inflight: work?.inflight() ?? 0, processedTotal: work?.processedTotal() ?? 0 },
      ...(this.lastLoadReport ? { loadReport: this.lastLoadReport } : {}),
      capacity: settings.capacity,
      intervalSeconds: settings.heartbeatIntervalSeconds,
      startedAt: this.startedAt,
    };
  }

  /**
   * Starts the heartbeat writer (ADR 0013) and pulses it from a timer of this event loop; resolves
   * after the first beat's outcome (or one staleness window without one).
   */
  private async startHeartbeats(claim: C): Promise<void> {
    const intervalMs = this.deps.settings.heartbeatIntervalSeconds * 1000;
    // A silence of HANG_AFTER_INTERVALS is a hung loop: judged dead that much later than a crash,
    // while a loop that turns at least every 4 intervals keeps beating (ADR 0013).
    const hangAfterMs = HANG_AFTER_INTERVALS * intervalMs;
    const firstOutcome = new AbortController();
    const { events } = this.deps;
    this.heartbeats = this.deps.cluster.startHeartbeats(claim, this.snapshot(), hangAfterMs, {
      beat: () => {
        firstOutcome.abort();
        // If NATS lost its store, the map bucket was created again with revisions from 1 and the
        // watch (an ordered consumer) would resume past them: watch again when it was.
        void this.mapWatch.check();
      },
      failed: (message) => {
        firstOutcome.abort();
        // Keep working on owned chambers: their writes are fenced in the store.
        events.heartbeatFailed(this.defenderId, message);
        this.mapWatch.natsFailed();
        void this.recreateLostBuckets();
      },
      // We were judged dead (e.g. frozen) and our ID went to another process: stop at once.
      claimLost: (message) => this.fatal(EXIT_CLAIM_LOST, 'stable ID taken over by another process', new Error(message)),
      withheld: (silentMs) => events.heartbeatWithheld(this.defenderId, silentMs, hangAfterMs),
      died: (err) => this.fatal(EXIT_MEMBERSHIP_FAILED, 'heartbeat thread failed', err),
    });
    this.stopPulses = this.deps.every(intervalMs / PULSES_PER_INTERVAL, () => {
      this.pulses += 1;
      this.heartbeats?.pulse(this.snapshot());
    });
    await this.deps.sleep(this.deps.settings.staleAfterIntervals * intervalMs, firstOutcome.signal);
  }

  /**
   * After a failed heartbeat: NATS may have lost its store (restarted empty). The buckets are created
   * again here, so the next heartbeat re-creates this defender's claim (same generation: a missing
   * claim was not taken over) and its heartbeat, and the map watch resumes (ADR 0007).
   */
  private async recreateLostBuckets(): Promise<void> {
    if (this.recreating) return;
    this.recreating = true;
    try {
      const created = await this.deps.cluster.recreateMissing();
      this.deps.events.bucketsChecked(created, this.defenderId);
    } catch (err) {
      this.deps.events.bucketsChecked([], this.defenderId, err);
    } finally {
      this.recreating = false;
    }
  }

  /** Watches the map for the membership's life: a watch that fails or ends is started again (ADR 0007). */
  private async watchMap(assignments: AssignmentMapPort): Promise<void> {
    await supervise(
      async (healthy) => {
        await this.mapWatch.starting();
        const w = await assignments.watch(
          {
            onMap: (stored) => {
              healthy();
              return this.maps.enqueue(stored);
            },
            onRejected: (revision, reason) => this.deps.events.mapRejected(revision, reason),
          },
          this.maps.heldMap,
          // Only the chunks holding our chambers (ADR 0009); the whole map when we are its lowest defender.
          this.defenderId ? defenderMapScope(this.defenderId) : undefined,
        );
        this.stopWatch = () => w.stop();
        await w.done;
      },
      {
        ...NATS_BACKOFF,
        random: this.deps.random,
        sleep: this.deps.sleep,
        signal: this.stopped.signal,
        onFailure: (err) => this.deps.events.watchFailed(err),
      },
    );
  }
}
