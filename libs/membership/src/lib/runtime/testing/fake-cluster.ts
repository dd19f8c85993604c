/**
 * Plain in-memory fakes of the ports a {@link DefenderMembership} uses, for its unit specs: a
 * cluster whose opens, claims and map watches are scripted by the test, a heartbeat writer the test
 * drives through its events, a processing of chambers that records every call, and events recorded
 * as lines. Time does not pass: a wait is recorded and returns at once, a timer fires when the test
 * says.
 */
import type { AssignmentMap, DefenderState, LoadReport } from '@defender/contracts';
import type { DefenderMembershipDeps } from '../defender-membership';
import type {
  AppliedAssignment,
  ChamberWork,
  HeartbeatEvents,
  HeartbeatSnapshot,
  MapWatchHandlers,
  MembershipCluster,
  MembershipEvents,
  StableIdClaim,
  StableIdPort,
  StoredAssignmentMap,
} from '../ports';

export class UnavailableError extends Error {
  override readonly name = 'UnavailableError';
}
export class PoolFullError extends Error {
  override readonly name = 'PoolFullError';
}

export const claimOf = (n: number, generation = 1): StableIdClaim => ({ defenderId: `defender-${n}`, n, generation, how: 'free' });

/** A map giving `chambers` (chamber -> defender ID) at `version`. */
export function mapOf(version: number, assignments: Record<string, string>): StoredAssignmentMap {
  const defenderInfo: Record<string, { totalWeight: number; chamberCount: number; capacity: number }> = {};
  for (const owner of Object.values(assignments)) defenderInfo[owner] = { totalWeight: 0, chamberCount: 0, capacity: 1 };
  const map = { version, fencingToken: 1, assignments, defenderInfo, state: 'STABLE' } as unknown as AssignmentMap;
  return { map, revision: version };
}

/** One map watch the membership started: the test delivers maps and ends it. */
export class FakeWatch {
  stopped = false;
  private end!: (err?: Error) => void;
  readonly done = new Promise<void>((resolve, reject) => {
    this.end = (err) => (err ? reject(err) : resolve());
  });

  constructor(
    readonly handlers: MapWatchHandlers,
    readonly held: AssignmentMap | undefined,
    readonly scoped: boolean,
  ) {}

  deliver(stored: StoredAssignmentMap): Promise<void> {
    return this.handlers.onMap(stored);
  }
  finish(err?: Error): void {
    this.end(err);
  }
  stop(): void {
    this.stopped = true;
    this.end();
  }
}

/** The heartbeat writer the membership started. */
export interface FakeHeartbeats {
  readonly claim: StableIdClaim;
  readonly first: HeartbeatSnapshot;
  readonly hangAfterMs: number;
  readonly events: HeartbeatEvents;
  readonly pulses: HeartbeatSnapshot[];
  left?: boolean;
}

/** The stable-ID pool: `claims` are consumed in order (an Error is thrown, a claim returned). */
export class FakeStableIds implements StableIdPort<StableIdClaim> {
  current: StableIdClaim | undefined;
  released = 0;

  constructor(private readonly claims: (Error | StableIdClaim)[]) {}

  async claim(): Promise<StableIdClaim> {
    const next = this.claims.shift() ?? new Error('no claim scripted');
    if (next instanceof Error) throw next;
    this.current = next;
    return next;
  }
  async release(): Promise<void> {
    this.released += 1;
    this.current = undefined;
  }
}

/** The cluster: `opens` and `claims` are consumed in order (an Error is thrown, a claim returned). */
export class FakeCluster implements MembershipCluster<StableIdClaim> {
  readonly opens: (Error | 'ok')[] = [];
  readonly claims: (Error | StableIdClaim)[] = [];
  readonly watches: FakeWatch[] = [];
  heartbeats: FakeHeartbeats | undefined;
  identity = 'bucket-1';
  missing: string[] = [];

  open(): Promise<{ stableIds: StableIdPort<StableIdClaim>; assignments: FakeCluster['assignments'] }> {
    const next = this.opens.shift() ?? 'ok';
    if (next instanceof Error) return Promise.reject(next);
    return Promise.resolve({ stableIds: this.stableIds, assignments: this.assignments });
  }

  readonly stableIds = new FakeStableIds(this.claims);

  readonly assignments = {
    identity: async (): Promise<string> => this.identity,
    watch: async (handlers: MapWatchHandlers, held: AssignmentMap | undefined, scope: unknown) => {
      const w = new FakeWatch(handlers, held, scope !== undefined);
      this.watches.push(w);
      return w;
    },
  };

  get watch(): FakeWatch {
    const w = this.watches.at(-1);
    if (!w) throw new Error('no map watch started');
    return w;
  }

  recreateMissing(): Promise<string[]> {
    const created = this.missing;
    this.missing = [];
    return Promise.resolve(created);
  }

  startHeartbeats(claim: StableIdClaim, first: HeartbeatSnapshot, hangAfterMs: number, events: HeartbeatEvents) {
    const hb: FakeHeartbeats = { claim, first, hangAfterMs, events, pulses: [] };
    this.heartbeats = hb;
    return {
      pulse: (s: HeartbeatSnapshot) => void hb.pulses.push(s),
      stop: async (leave: boolean) => {
        hb.left = leave;
        return { left: leave };
      },
    };
  }

  isUnavailable(err: unknown): boolean {
    return err instanceof UnavailableError;
  }
  isPoolExhausted(err: unknown): boolean {
    return err instanceof PoolFullError;
  }
}

/** Processing that records `release x,y` / `acquire x,y @v` / `mapApplied ...` / `drain ms`; `gate` holds the next acquire. */
export class FakeWork implements ChamberWork {
  readonly calls: string[] = [];
  gate: Promise<void> | undefined;
  fail: Error | undefined;
  inflightRuns = 0;
  reports = 0;

  async release(chambers: readonly string[]): Promise<void> {
    this.calls.push(`release ${chambers.join(',')}`);
  }
  async acquire(chambers: readonly string[], mapVersion: number): Promise<void> {
    this.calls.push(`acquire ${chambers.join(',')} @${mapVersion}`);
    const gate = this.gate;
    this.gate = undefined;
    if (gate) await gate;
    if (this.fail) throw this.fail;
  }
  mapApplied(owned: readonly string[], mapVersion: number): void {
    this.calls.push(`mapApplied ${owned.join(',')} @${mapVersion}`);
  }
  async drain(timeoutMs: number): Promise<void> {
    this.calls.push(`drain ${timeoutMs}`);
  }
  inflight(): number {
    return this.inflightRuns;
  }
  processedTotal(): number {
    return 7;
  }
  loadReport(): LoadReport {
    this.reports += 1;
    return { intervalSeconds: this.reports } as unknown as LoadReport;
  }
}

/** Events recorded as lines (`state FOLLOWER`, `claimed defender-0`, ...) and the applied maps. */
export function recordedEvents(): { events: MembershipEvents; lines: string[]; applied: AppliedAssignment[]; states: DefenderState[] } {
  const lines: string[] = [];
  const applied: AppliedAssignment[] = [];
  const states: DefenderState[] = [];
  const line = (s: string) => void lines.push(s);
  return {
    lines,
    applied,
    states,
    events: {
      state: (_from, to) => void states.push(to),
      retrying: (what, attempt, delayMs) => line(`retrying ${what} #${attempt} after ${delayMs}`),
      openFailed: () => line('open failed'),
      claimAttempt: () => line('claim attempt'),
      poolFull: (waitMs) => line(`pool full: wait ${waitMs}`),
      claimed: (c) => line(`claimed ${c.defenderId}`),
      heartbeatFailed: (id, message) => line(`heartbeat failed ${id}: ${message}`),
      heartbeatWithheld: (_id, silentMs) => line(`withheld ${silentMs}`),
      bucketsChecked: (created, _id, err) => line(err ? `bucket check failed` : `buckets created: ${created.join(',')}`),
      rewatch: (why) => line(`rewatch: ${why}`),
      watchFailed: (err) => line(`watch failed: ${(err as Error).message}`),
      mapRejected: (revision) => line(`rejected ${revision}`),
      applyFailed: (version) => line(`apply failed v${version}`),
      applied: (a) => {
        applied.push(a);
        line(`applied v${a.stored.map.version}: ${a.owned.join(',')}`);
      },
      shutdownBegan: (inflight) => line(`shutdown began (${inflight} in flight)`),
      released: (id, left) => line(`released ${id}: ${left}`),
      shutdownEnded: async () => line('shutdown ended'),
    },
  };
}

/** Deps over the fakes: waits recorded and returned at once, timers fired by `tick()`, exits recorded. */
export function fakeDeps(cluster: FakeCluster, work: FakeWork | null = new FakeWork()) {
  const recorded = recordedEvents();
  const waits: number[] = [];
  const exits: [number, string][] = [];
  const timers: { ms: number; fn: () => void }[] = [];
  const deps: DefenderMembershipDeps<StableIdClaim> = {
    settings: { ownerId: 'owner-1', podName: 'pod-a', heartbeatIntervalSeconds: 2, capacity: 1, shutdownDrainTimeoutSeconds: 25, staleAfterIntervals: 3 },
    cluster,
    work,
    events: recorded.events,
    fatal: (code, msg) => void exits.push([code, msg]),
    now: () => Date.UTC(2026, 11, 1),
    monotonic: () => 0,
    sleep: async (ms) => void waits.push(ms),
    every: (ms, fn) => {
      const t = { ms, fn };
      timers.push(t);
      return () => void timers.splice(timers.indexOf(t), 1);
    },
    random: () => 0,
  };
  return { deps, ...recorded, waits, exits, timers, work, tick: () => timers.forEach((t) => t.fn()) };
}
