import type { AssignmentMap, Heartbeat } from '@defender/contracts';
import type { LeadershipTerm } from '@defender/election';
import type { StoredMap } from '@defender/nats-kv';
import { controllerOnlyEnvSchema, type ControllerSettings } from '../controller-env';
import type { LeadershipObserver } from './leadership-metrics-observer';
import { type ElectionHooks, type ElectionPort, engineConfigOf, LeadershipOrchestrator, livenessPollMs } from './leadership-orchestrator';

const IDS = ['defender-0', 'defender-1', 'defender-2'];
const chambers = Array.from({ length: 9 }, (_, i) => ({ toolId: `tool${i}`, chamberId: 'ch1', weight: 30_000 * (1 + (i % 3)) }));
const settings: ControllerSettings = { ...controllerOnlyEnvSchema.parse({}), HEARTBEAT_INTERVAL_SECONDS: 2 };

function heartbeat(id: string, mapTokenSeen?: string): Heartbeat {
  const t = '2026-11-27T08:00:00.000Z';
  return {
    schema: 1,
    defenderId: id,
    state: 'STABLE',
    mapVersionSeen: 1,
    ...(mapTokenSeen === undefined ? {} : { mapTokenSeen }),
    load: { chambers: 3, inflight: 0, processedTotal: 0 },
    intervalSeconds: 2,
    startedAt: t,
    sentAt: t,
  };
}

/** Event names in order, a run of one event (the per-poll decisions) written once. */
const runs = (events: readonly string[]) => events.filter((e, i) => e !== events[i - 1]);

/**
 * An orchestrator over fakes: an election the test drives through its hooks, buckets in memory
 * with three defenders beating at every poll, clocks advanced only by the engine's sleeps (no real
 * timers, so the test runs the same on a busy machine), and a recording observer. `onTick` runs
 * after each sleep.
 */
function harness(opts: { storedToken?: string; tokenSeen?: string; onTick?: (tick: number, h: Harness) => void } = {}) {
  let wall = Date.UTC(2026, 10, 27, 8);
  let mono = 1_000;
  let tick = 0;
  let revision = 1;
  const events: string[] = [];
  const warnings: Record<string, unknown>[] = [];
  const logs: Record<string, unknown>[] = [];
  const recomputedAt: number[] = [];
  const timers: { ms: number; fn: () => void; cleared: boolean }[] = [];
  const fatal: string[] = [];
  let stored: StoredMap | null = null;
  if (opts.storedToken !== undefined) {
    stored = { revision: 1, map: { fencingToken: opts.storedToken } as AssignmentMap };
  }
  const observer: LeadershipObserver = {
    campaignStarted: () => events.push('campaignStarted'),
    becameLeader: () => events.push('becameLeader'),
    leadershipLost: () => events.push('leadershipLost'),
    engineStarted: () => events.push('engineStarted'),
    triggerDecision: () => events.push('triggerDecision'),
    mapPublished: (map, _result, why) => events.push(`mapPublished ${why} v${map.version} #${map.fencingToken}`),
    mapWritten: (w) => events.push(`mapWritten ${w.totalBytes} B`),
    publishConflict: () => events.push('publishConflict'),
  };
  const election = {
    hooks: undefined as ElectionHooks | undefined,
    term: undefined as LeadershipTerm | undefined,
    started: false,
    stopped: false,
  };
  const port: ElectionPort = {
    start: () => {
      election.started = true;
    },
    stop: async () => {
      election.stopped = true;
    },
    isLeader: () => election.term !== undefined,
    currentTerm: () => election.term,
  };
  const orchestrator = new LeadershipOrchestrator({
    settings,
    controllerId: 'c-test',
    buckets: async () => ({
      assignments: {
        read: async () => stored,
        lastRevision: async () => stored?.revision ?? 0,
        publishMeasured: async (map: AssignmentMap) => {
          stored = { map, revision: (stored?.revision ?? 0) + 1 };
          return { revision: stored.revision, bytes: 1_500, headBytes: 1_500, chunks: 0, maxValueBytes: 1_500, ms: 3 };
        },
      },
      heartbeats: {
        readAll: async () => ({
          heartbeats: IDS.map((id, i) => ({ heartbeat: heartbeat(id, opts.tokenSeen), revision: revision * IDS.length + i, storedAt: new Date(wall) })),
          bad: [],
        }),
      },
    }),
    recreateMissingBuckets: async () => [],
    chamberMetadata: async () => ({
      list: async () => chambers.map((c) => ({ ...c, sampleCount: 0, lastUpdated: new Date(wall) })) as never,
      recomputeWeights: async (now: Date) => {
        recomputedAt.push(now.getTime());
        return { updated: 0, unchanged: 0, observedChambers: 0 } as never;
      },
    }),
    election: (hooks) => {
      election.hooks = hooks;
      return port;
    },
    observer,
    logger: {
      log: (m: Record<string, unknown>) => logs.push(m),
      warn: (m: Record<string, unknown>) => warnings.push(m),
      error: (m: Record<string, unknown>) => warnings.push(m),
      debug: () => undefined,
    },
    now: () => wall,
    monotonic: () => mono,
    sleep: async (ms) => {
      mono += ms;
      wall += ms;
      tick += 1;
      revision += 1;
      opts.onTick?.(tick, h);
      // One turn of the event loop per poll, so the test's own awaits get to run.
      await new Promise((r) => setImmediate(r));
    },
    every: (ms, fn) => {
      const timer = { ms, fn, cleared: false };
      timers.push(timer);
      return () => {
        timer.cleared = true;
      };
    },
    fatal: (msg) => fatal.push(msg),
  });
  const h = {
    orchestrator,
    election,
    events,
    warnings,
    logs,
    recomputedAt,
    timers,
    fatal,
    stored: () => stored,
    advance: (ms: number) => {
      mono += ms;
      wall += ms;
    },
    wall: () => wall,
    elect: (fencingToken: number) => {
      const term: LeadershipTerm = { election: settings.ELECTION_NAME, candidate: 'c-test', fencingToken, acquiredAtMs: wall };
      election.term = term;
      election.hooks?.onElected(term);
      return term;
    },
    depose: (reason: string) => {
      const term = election.term as LeadershipTerm;
      election.term = undefined;
      election.hooks?.onDeposed(term, reason);
    },
  };
  return h;
}
type Harness = ReturnType<typeof harness>;

/** Lets pending promise callbacks run until `done` (bounded by turns of the event loop, not by time). */
async function until(done: () => boolean): Promise<void> {
  for (let i = 0; i < 10_000 && !done(); i++) await new Promise((r) => setImmediate(r));
  expect(done()).toBe(true);
}

describe('LeadershipOrchestrator (the leadership orchestration, clocks and election injected)', () => {
  it('campaigns once NATS and the store are up, leads a term that publishes the cold-start map, and stops it when deposed', async () => {
    const h = harness({ onTick: (tick, self) => tick === 80 && self.depose('superseded') });
    await h.orchestrator.start();
    expect(h.election.started).toBe(true);
    expect(h.orchestrator.isLeader).toBe(false);
    expect(h.logs[0]).toMatchObject({ msg: 'campaigning', election: settings.ELECTION_NAME, candidate: 'c-test' });

    h.elect(4);
    await until(() => h.logs.some((l) => l['msg'] === 'term ended'));
    // The cold start's 30 s window at 500 ms polls: published within the 80 polls, then deposed.
    expect(runs(h.events)).toEqual([
      'campaignStarted',
      'becameLeader',
      'engineStarted',
      'triggerDecision',
      'mapWritten 1500 B',
      'mapPublished cold_start v2 #4',
      'triggerDecision',
      'leadershipLost',
    ]);
    expect(h.stored()?.map).toMatchObject({ version: 2, fencingToken: '4', defenderCount: 3, chamberCount: 9 });
    expect(h.orchestrator.current).toBeUndefined();
    expect(h.orchestrator.publishedMap).toBe(h.stored()?.map);
    expect(h.logs.find((l) => l['msg'] === 'term ended')).toMatchObject({ epoch: 4 });
    expect(h.warnings).toContainEqual({ msg: 'no longer leader', epoch: 4, reason: 'superseded' });
    expect(h.fatal).toEqual([]);
  });

  it('recomputes chamber weights on the configured interval while leader, and stops the timer with the term', async () => {
    const h = harness({ onTick: (tick, self) => tick === 4 && self.depose('lease expired') });
    await h.orchestrator.start();
    h.elect(2);
    await until(() => h.timers.length === 1);
    const timer = h.timers[0]!;
    expect(timer.ms).toBe(settings.WEIGHT_UPDATE_INTERVAL_SECONDS * 1000);
    timer.fn();
    expect(h.recomputedAt).toEqual([h.wall()]);
    await until(() => timer.cleared);
    // No longer leader: the next firing (if any) recomputes nothing.
    timer.fn();
    expect(h.recomputedAt).toHaveLength(1);
  });

  it('asks for a term token above the newest map\'s and every token a defender has seen (ADR 0007)', async () => {
    const h = harness({ storedToken: '7', tokenSeen: '9' });
    await h.orchestrator.start();
    expect(await h.election.hooks!.minToken()).toBe(9);
    const g = harness({ storedToken: '12', tokenSeen: '9' });
    await g.orchestrator.start();
    expect(await g.election.hooks!.minToken()).toBe(12);
    const empty = harness();
    await empty.orchestrator.start();
    expect(await empty.election.hooks!.minToken()).toBe(0);
  });

  it('warns of a failed election call at once, then summarises repeats every 30 s on the monotonic clock', async () => {
    const h = harness();
    await h.orchestrator.start();
    const fail = () => h.election.hooks!.onError(new Error('agents unreachable'));
    fail();
    h.advance(10_000);
    fail();
    h.advance(19_999);
    fail();
    expect(h.warnings).toEqual([{ msg: 'election call failed', err: 'agents unreachable', failedSinceLastWarning: 0 }]);
    h.advance(1);
    fail();
    expect(h.warnings).toEqual([
      { msg: 'election call failed', err: 'agents unreachable', failedSinceLastWarning: 0 },
      { msg: 'election call failed', err: 'agents unreachable', failedSinceLastWarning: 2 },
    ]);
  });

  it('stop steps down through the election and does not report the engine\'s end as a failure', async () => {
    const h = harness();
    await h.orchestrator.start();
    h.elect(3);
    await until(() => h.orchestrator.current !== undefined);
    await h.orchestrator.stop();
    expect(h.election.stopped).toBe(true);
    await until(() => h.logs.some((l) => l['msg'] === 'term ended'));
    expect(h.fatal).toEqual([]);
  });
});

describe('engineConfigOf', () => {
  it('turns the settings\' seconds into the engine\'s ms, the batch cap at least every window, load balancing by default', () => {
    const cfg = engineConfigOf({ ...settings, MAX_BATCH_WAIT_SECONDS: 5 }, 'c-1');
    expect(cfg).toMatchObject({
      controllerId: 'c-1',
      trigger: { heartbeatIntervalMs: 2_000, coldStartWindowMs: 30_000, scaleWindowMs: 10_000, maxBatchWaitMs: 30_000 },
      strategy: 'sticky-balanced',
      tolerance: 0.05,
      cooldownMs: 0,
      vnodes: 200,
      chamberRefreshMs: 3_600_000,
      loadBalancing: { policy: { driftBand: 0.1, sustainMs: 300_000, cooldownMs: 600_000, settleMs: 30_000 } },
    });
    expect(cfg).not.toHaveProperty('maxChambersPerDefender');
  });

  it('balances samples without a load policy, and passes a chamber cap only when set', () => {
    const cfg = engineConfigOf({ ...settings, ASSIGNMENT_BALANCE_BY: 'samples', MAX_CHAMBERS_PER_DEFENDER: 40 }, 'c-1');
    expect(cfg).not.toHaveProperty('loadBalancing');
    expect(cfg.maxChambersPerDefender).toBe(40);
  });

  it('polls liveness four times per heartbeat interval, never faster than every 100 ms', () => {
    expect(livenessPollMs(2)).toBe(500);
    expect(livenessPollMs(0.2)).toBe(100);
  });
});
