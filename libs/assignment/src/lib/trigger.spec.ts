import {
  AssignmentTrigger,
  DEFAULT_TRIGGER_CONFIG,
  type HeartbeatObservation,
  InvalidTriggerInputError,
  type PublishedMapInfo,
  type RecomputeDecision,
  type TriggerDecision,
} from '../index';

const S = 1000;
const ids = (n: number, from = 0) => Array.from({ length: n }, (_, i) => `defender-${from + i}`);

/**
 * A simulated heartbeat bucket: live defenders heartbeat every 2 s (on even seconds); a graceful
 * stop deletes the entry; a crash leaves the entry to go stale.
 */
class Cluster {
  private readonly entries = new Map<string, number>();
  private readonly beating = new Set<string>();

  start(id: string, at: number): void {
    this.beating.add(id);
    this.entries.set(id, at);
  }

  stop(id: string): void {
    this.beating.delete(id);
    this.entries.delete(id);
  }

  crash(id: string): void {
    this.beating.delete(id);
  }

  snapshot(now: number): HeartbeatObservation[] {
    for (const id of this.beating) {
      const lastBeat = now - (now % (2 * S));
      if (lastBeat > this.entries.get(id)!) this.entries.set(id, lastBeat);
    }
    return [...this.entries].map(([id, lastHeartbeatAt]) => ({ id, lastHeartbeatAt }));
  }
}

interface Step {
  at: number;
  decision: TriggerDecision;
}

/**
 * Drives the trigger like the controller: one observation per second from `from` to `to`
 * (seconds), applying `events` first; every recompute is "published" at once (unless `publish`
 * is false).
 */
function run(
  trigger: AssignmentTrigger,
  cluster: Cluster,
  from: number,
  to: number,
  events: Record<number, (c: Cluster, at: number) => void> = {},
  publish = true,
): Step[] {
  const steps: Step[] = [];
  for (let t = from; t <= to; t++) {
    events[t]?.(cluster, t * S);
    const decision = trigger.observe(t * S, cluster.snapshot(t * S));
    steps.push({ at: t, decision });
    if (decision.action === 'recompute' && publish) {
      trigger.published({ lifecycle: decision.lifecycle, defenderIds: decision.defenders });
    }
  }
  return steps;
}

const recomputes = (steps: Step[]) =>
  steps.filter((s) => s.decision.action === 'recompute') as Array<{
    at: number;
    decision: RecomputeDecision;
  }>;

function stableCluster(n: number, at: number): Cluster {
  const c = new Cluster();
  for (const id of ids(n)) c.start(id, at);
  return c;
}

const map = (lifecycle: PublishedMapInfo['lifecycle'], n: number): PublishedMapInfo => ({
  lifecycle,
  defenderIds: ids(n),
});

describe("AssignmentTrigger — the seeds' scenario comparison matrix", () => {
  it('Cold Start: no map, 0 -> 30 rapid joins -> one calculation, 30 s window', () => {
    const trigger = new AssignmentTrigger(null);
    const cluster = new Cluster();
    const events: Record<number, (c: Cluster, at: number) => void> = {};
    ids(30).forEach((id, i) => (events[i] = (c, at) => c.start(id, at)));
    const steps = run(trigger, cluster, 0, 120, events);
    const r = recomputes(steps);
    expect(r).toHaveLength(1);
    // The window restarts on every join (last at 29 s): 29 + 30 = 59 s, inside the 60 s cap.
    expect(r[0]!.at).toBe(59);
    expect(r[0]!.decision).toMatchObject({
      trigger: 'cold_start',
      mode: 'balance',
      lifecycle: 'post_cold_start',
      state: 'REBALANCING',
    });
    expect(r[0]!.decision.defenders).toHaveLength(30);
    expect(steps[10]!.decision).toMatchObject({ action: 'wait', trigger: 'cold_start', windowMs: 30 * S });
    expect(trigger.lifecycle).toBe('post_cold_start');
    expect(trigger.state).toBe('STABLE');
  });

  it('Planned Scale: map version 5 stable, 30 -> 32 gradual -> 10 s window', () => {
    const trigger = new AssignmentTrigger(map('stable', 30));
    const cluster = stableCluster(30, 0);
    const steps = run(trigger, cluster, 90, 200, {
      100: (c, at) => c.start('defender-30', at),
      105: (c, at) => c.start('defender-31', at),
    });
    const r = recomputes(steps);
    expect(r).toHaveLength(1);
    // The seed's fixed window would fire at 110 s; the rule restarts it on the second join.
    expect(steps.find((s) => s.at === 110)!.decision).toMatchObject({ action: 'wait', deadline: 115 * S });
    expect(r[0]!.at).toBe(115);
    expect(r[0]!.decision).toMatchObject({ trigger: 'planned_scale', mode: 'balance', lifecycle: 'stable' });
    expect(r[0]!.decision.changes.joined).toEqual(['defender-30', 'defender-31']);
    expect(r[0]!.decision.defenders).toHaveLength(32);
  });

  it('Crash: 30 -> 29 by missing heartbeats -> immediate, moving only orphans', () => {
    const trigger = new AssignmentTrigger(map('stable', 30));
    const cluster = stableCluster(30, 0);
    const steps = run(trigger, cluster, 90, 200, { 101: (c) => c.crash('defender-15') });
    const r = recomputes(steps);
    expect(r).toHaveLength(1);
    // Crashes at 101 s, last heartbeat at 100 s; dead once that is more than 3 x 2 s old: at 107 s.
    expect(r[0]!.at).toBe(107);
    expect(r[0]!.decision).toMatchObject({
      trigger: 'crash',
      mode: 'orphans-only',
      state: 'EMERGENCY',
      lifecycle: 'stable',
      changes: { joined: [], left: [], crashed: ['defender-15'] },
    });
    expect(r[0]!.decision.defenders).toHaveLength(29);
  });

  it('Maintenance Restart: map version 50 stable with 64, 64 -> 1 -> 64 -> cold start override, 30 s', () => {
    const trigger = new AssignmentTrigger(map('stable', 64));
    const cluster = new Cluster();
    cluster.start('defender-0', 100 * S);
    const events: Record<number, (c: Cluster, at: number) => void> = {};
    // 63 defenders rejoin rapidly between 101 s and 131 s.
    ids(63, 1).forEach((id, i) => {
      const t = 101 + Math.floor(i / 2);
      const prev = events[t];
      events[t] = (c, at) => {
        prev?.(c, at);
        c.start(id, at);
      };
    });
    const steps = run(trigger, cluster, 100, 260, events);
    expect(trigger.restartDetected).toBe(true);
    expect(steps[0]!.decision).toMatchObject({ action: 'wait', trigger: 'cold_start', windowMs: 30 * S });
    const r = recomputes(steps);
    expect(r).toHaveLength(1);
    // Last join at 132 s; capped at 100 + 60 s.
    expect(r[0]!.at).toBe(160);
    expect(r[0]!.decision).toMatchObject({
      trigger: 'cold_start',
      restart: true,
      lifecycle: 'post_cold_start',
      mode: 'balance',
    });
    expect(r[0]!.decision.defenders).toHaveLength(64);
  });

  it('Rolling Update: map version 10 stable, 30 -> 25 -> 30 gradual -> 10 s window, no calculation', () => {
    const trigger = new AssignmentTrigger(map('stable', 30));
    const cluster = stableCluster(30, 0);
    const events: Record<number, (c: Cluster, at: number) => void> = {};
    // Six waves of five pods: each stops gracefully, its replacement claims the same id 3-7 s later.
    for (let wave = 0; wave < 6; wave++) {
      const start = 100 + wave * 20;
      const wid = ids(5, wave * 5);
      events[start] = (c) => wid.forEach((id) => c.stop(id));
      wid.forEach((id, i) => (events[start + 3 + i] = (c, at) => c.start(id, at)));
    }
    const steps = run(trigger, cluster, 90, 260, events);
    expect(recomputes(steps)).toEqual([]);
    expect(steps.find((s) => s.at === 101)!.decision).toMatchObject({
      action: 'wait',
      trigger: 'planned_scale',
      windowMs: 10 * S,
      changes: { left: ids(5), crashed: [] },
    });
    expect(steps[steps.length - 1]!.decision).toEqual({ action: 'idle', state: 'STABLE' });
    expect(trigger.lifecycle).toBe('stable');
  });

  it('Partial Failure: map version 20 stable, 64 -> 50 by crashes -> not a restart (50 >= 5)', () => {
    // The matrix labels this row "Planned Scale, 10 s"; its own rule 4, the issue and design.md
    // guarantee 5 make every crash immediate. What the row establishes, that 50 live defenders
    // are no restart, holds: the lifecycle stays stable and later joins use the 10 s window.
    const trigger = new AssignmentTrigger(map('stable', 64));
    const cluster = stableCluster(64, 0);
    const steps = run(trigger, cluster, 90, 230, {
      101: (c) => ids(14, 50).forEach((id) => c.crash(id)),
      200: (c, at) => c.start('defender-64', at),
    });
    expect(trigger.restartDetected).toBe(false);
    const r = recomputes(steps);
    expect(r).toHaveLength(2);
    expect(r[0]!.at).toBe(107);
    expect(r[0]!.decision).toMatchObject({ trigger: 'crash', mode: 'orphans-only', lifecycle: 'stable' });
    expect(r[0]!.decision.changes.crashed).toEqual(ids(14, 50).sort());
    expect(r[0]!.decision.defenders).toHaveLength(50);
    expect(r[1]!.at).toBe(210);
    expect(r[1]!.decision).toMatchObject({ trigger: 'planned_scale', lifecycle: 'stable' });
  });

  it('Leadership Transfer (stable): map version 30 stable, 45 unchanged -> nothing to do, then 10 s windows', () => {
    const trigger = new AssignmentTrigger(map('stable', 45));
    const cluster = stableCluster(45, 0);
    const steps = run(trigger, cluster, 300, 330, { 315: (c, at) => c.start('defender-45', at) });
    expect(steps[0]!.decision).toEqual({ action: 'idle', state: 'STABLE' });
    expect(trigger.restartDetected).toBe(false);
    const r = recomputes(steps);
    expect(r).toHaveLength(1);
    expect(r[0]!.at).toBe(325);
    expect(r[0]!.decision.trigger).toBe('planned_scale');
  });

  it('Leadership Transfer (cold start): no map, 10 growing -> continue the cold start, 30 s', () => {
    // The old leader died before the first map; ten defenders are already up when the new one starts.
    const cluster = stableCluster(10, 0);
    const trigger = new AssignmentTrigger(null);
    const events: Record<number, (c: Cluster, at: number) => void> = {};
    ids(10, 10).forEach((id, i) => (events[22 + i] = (c, at) => c.start(id, at)));
    const steps = run(trigger, cluster, 21, 120, events);
    expect(steps[0]!.decision).toMatchObject({ action: 'wait', trigger: 'cold_start', windowMs: 30 * S });
    const r = recomputes(steps);
    expect(r).toHaveLength(1);
    expect(r[0]!.at).toBe(31 + 30);
    expect(r[0]!.decision).toMatchObject({ trigger: 'cold_start', lifecycle: 'post_cold_start' });
    expect(r[0]!.decision.defenders).toHaveLength(20);
  });
});

describe('AssignmentTrigger — windows, crashes and lifecycle', () => {
  it('a crash during a scaling window aborts it and recalculates at once, with the pending joins', () => {
    const trigger = new AssignmentTrigger(map('stable', 30));
    const cluster = stableCluster(30, 0);
    const steps = run(trigger, cluster, 90, 200, {
      100: (c, at) => c.start('defender-30', at),
      101: (c) => c.crash('defender-15'),
      105: (c, at) => c.start('defender-31', at),
    });
    const r = recomputes(steps);
    expect(r).toHaveLength(1);
    expect(r[0]!.at).toBe(107);
    expect(r[0]!.decision).toMatchObject({
      trigger: 'crash',
      mode: 'balance',
      changes: { joined: ['defender-30', 'defender-31'], crashed: ['defender-15'] },
    });
    expect(r[0]!.decision.defenders).toHaveLength(31);
  });

  it('each crash detected at a different time recalculates on its own', () => {
    const trigger = new AssignmentTrigger(map('stable', 30));
    const steps = run(trigger, stableCluster(30, 0), 90, 200, {
      101: (c) => c.crash('defender-10'),
      105: (c) => c.crash('defender-11'),
    });
    expect(recomputes(steps).map((s) => [s.at, s.decision.changes.crashed])).toEqual([
      [107, ['defender-10']],
      [111, ['defender-11']],
    ]);
  });

  it('a steady trickle of joins cannot starve assignment: the batch closes 60 s after its first change', () => {
    const trigger = new AssignmentTrigger(map('stable', 30));
    const events: Record<number, (c: Cluster, at: number) => void> = {};
    for (let k = 0; k < 12; k++) events[100 + 8 * k] = (c, at) => c.start(`defender-${30 + k}`, at);
    const steps = run(trigger, stableCluster(30, 0), 90, 200, events);
    const r = recomputes(steps);
    expect(r[0]!.at).toBe(160);
    expect(steps.find((s) => s.at === 157)!.decision).toMatchObject({ action: 'wait', deadline: 160 * S });
    expect(r[0]!.decision.defenders).toHaveLength(38);
  });

  it('a graceful leave is a planned change (10 s window), not a crash', () => {
    const trigger = new AssignmentTrigger(map('stable', 30));
    const steps = run(trigger, stableCluster(30, 0), 90, 200, { 100: (c) => c.stop('defender-29') });
    const r = recomputes(steps);
    expect(r).toHaveLength(1);
    expect(r[0]!.at).toBe(110);
    expect(r[0]!.decision).toMatchObject({
      trigger: 'planned_scale',
      mode: 'balance',
      changes: { joined: [], left: ['defender-29'], crashed: [] },
    });
  });

  it('a joiner that dies before the batch closes is no emergency: the batch nets out', () => {
    const trigger = new AssignmentTrigger(map('stable', 30));
    const steps = run(trigger, stableCluster(30, 0), 90, 200, {
      100: (c, at) => c.start('defender-30', at),
      102: (c) => c.crash('defender-30'),
    });
    expect(recomputes(steps)).toEqual([]);
    expect(steps[steps.length - 1]!.decision).toEqual({ action: 'idle', state: 'STABLE' });
  });

  it('decides death by time since the last heartbeat: exactly 3 intervals is alive, more is dead', () => {
    const trigger = new AssignmentTrigger(map('stable', 2));
    const hb = (a: number, b: number) => [
      { id: 'defender-0', lastHeartbeatAt: a },
      { id: 'defender-1', lastHeartbeatAt: b },
    ];
    expect(trigger.deadAfterMs).toBe(6 * S);
    expect(trigger.observe(10 * S, hb(10 * S, 4 * S)).action).toBe('idle');
    expect(trigger.observe(10 * S + 1, hb(10 * S, 4 * S))).toMatchObject({
      action: 'recompute',
      trigger: 'crash',
      changes: { crashed: ['defender-1'] },
    });
  });

  it('a map defender missing when a leader takes over (no memory of it) is crashed one threshold after the takeover', () => {
    const trigger = new AssignmentTrigger(map('stable', 30));
    const cluster = stableCluster(29, 0);
    const steps = run(trigger, cluster, 50, 60);
    // Aged from the first observation (50 s) like a heartbeat seen then: dead once over 6 s, at 57 s.
    expect(steps.filter((s) => s.at < 57).map((s) => s.decision.action)).toEqual(Array(7).fill('idle'));
    const r = recomputes(steps);
    expect(r).toHaveLength(1);
    expect(r[0]!.at).toBe(57);
    expect(r[0]!.decision).toMatchObject({ trigger: 'crash', mode: 'orphans-only', changes: { crashed: ['defender-29'] } });
    expect(r[0]!.decision.defenders).toHaveLength(29);
  });

  it('a defender restarting beside a new leader keeps its chambers when it heartbeats within one threshold', () => {
    const trigger = new AssignmentTrigger(map('post_cold_start', 2));
    const cluster = new Cluster();
    cluster.start('defender-0', 100 * S);
    // defender-1 has no entry at the takeover (100 s) and its first heartbeat lands 5 s later.
    const steps = run(trigger, cluster, 100, 200, { 105: (c, at) => c.start('defender-1', at) });
    expect(trigger.restartDetected).toBe(false);
    expect(recomputes(steps)).toHaveLength(0);
    expect(steps.every((s) => s.decision.action === 'idle')).toBe(true);
  });

  it('a defender missing for longer than one threshold after the takeover is a crash, and its return a planned join', () => {
    const trigger = new AssignmentTrigger(map('post_cold_start', 2));
    const cluster = new Cluster();
    cluster.start('defender-0', 100 * S);
    const steps = run(trigger, cluster, 100, 200, { 110: (c, at) => c.start('defender-1', at) });
    expect(recomputes(steps).map((s) => [s.at, s.decision.trigger, s.decision.mode, s.decision.defenders])).toEqual([
      [107, 'crash', 'orphans-only', ['defender-0']],
      [120, 'planned_scale', 'balance', ['defender-0', 'defender-1']],
    ]);
  });

  it('a small cluster restarted whole (nobody alive at the takeover) is a restart: one map after the 30 s window, no crash', () => {
    // The seeds' rule (>= 10 in the map, < 5 alive) cannot fire with 2 defenders; nobody alive can only be a restart.
    const trigger = new AssignmentTrigger(map('post_cold_start', 2));
    const cluster = new Cluster();
    const steps = run(trigger, cluster, 100, 200, {
      103: (c, at) => c.start('defender-0', at),
      // 12 s after the first: beyond one death threshold, which during a restart judges nobody.
      115: (c, at) => c.start('defender-1', at),
    });
    expect(trigger.restartDetected).toBe(true);
    expect(steps[0]!.decision).toEqual({ action: 'no-defenders', state: 'STABLE' });
    expect(steps.find((s) => s.at === 110)!.decision).toMatchObject({ action: 'wait', trigger: 'cold_start', windowMs: 30 * S });
    const r = recomputes(steps);
    expect(r).toHaveLength(1);
    expect(r[0]!.at).toBe(115 + 30);
    expect(r[0]!.decision).toMatchObject({
      trigger: 'cold_start',
      restart: true,
      mode: 'balance',
      lifecycle: 'post_cold_start',
      defenders: ['defender-0', 'defender-1'],
      changes: { crashed: [] },
    });
  });

  it('a cluster that loses every defender while the leader runs is no restart below the seeds\' threshold: the first back takes the orphans', () => {
    const trigger = new AssignmentTrigger(map('stable', 2));
    const cluster = stableCluster(2, 0);
    const steps = run(trigger, cluster, 90, 160, {
      100: (c) => ids(2).forEach((id) => c.crash(id)),
      120: (c, at) => c.start('defender-0', at),
      140: (c, at) => c.start('defender-1', at),
    });
    expect(trigger.restartDetected).toBe(false);
    expect(recomputes(steps).map((s) => [s.at, s.decision.trigger, s.decision.mode])).toEqual([
      [120, 'crash', 'orphans-only'],
      [150, 'planned_scale', 'balance'],
    ]);
  });

  it('repeats a recompute until the map is published (a failed publication is retried)', () => {
    const trigger = new AssignmentTrigger(map('stable', 30));
    const cluster = stableCluster(30, 0);
    const steps = run(trigger, cluster, 90, 120, { 101: (c) => c.crash('defender-3') }, false);
    expect(recomputes(steps).map((s) => s.at)).toEqual(Array.from({ length: 14 }, (_, i) => 107 + i));
    trigger.published({ lifecycle: 'stable', defenderIds: ids(30).filter((id) => id !== 'defender-3') });
    expect(trigger.observe(121 * S, cluster.snapshot(121 * S))).toEqual({ action: 'idle', state: 'STABLE' });
  });

  it('walks the lifecycle cold_start -> post_cold_start -> stable across publications', () => {
    const trigger = new AssignmentTrigger(null);
    expect(trigger.lifecycle).toBe('cold_start');
    const steps = run(trigger, new Cluster(), 0, 200, {
      0: (c, at) => c.start('defender-0', at),
      100: (c, at) => c.start('defender-1', at),
      150: (c, at) => c.start('defender-2', at),
    });
    expect(recomputes(steps).map((s) => [s.at, s.decision.trigger, s.decision.lifecycle])).toEqual([
      [30, 'cold_start', 'post_cold_start'],
      [110, 'planned_scale', 'stable'],
      [160, 'planned_scale', 'stable'],
    ]);
  });

  it('detects a restart while running when graceful leaves drop a large cluster below 5 alive', () => {
    const trigger = new AssignmentTrigger(map('stable', 12));
    const cluster = stableCluster(12, 0);
    const events: Record<number, (c: Cluster, at: number) => void> = {
      100: (c) => ids(12).forEach((id) => c.stop(id)),
    };
    ids(12).forEach((id, i) => (events[200 + i] = (c, at) => c.start(id, at)));
    const steps = run(trigger, cluster, 90, 300, events);
    expect(trigger.restartDetected).toBe(true);
    expect(steps.find((s) => s.at === 150)!.decision).toEqual({ action: 'no-defenders', state: 'STABLE' });
    const r = recomputes(steps);
    expect(r).toHaveLength(1);
    expect(r[0]!.at).toBe(211 + 30);
    expect(r[0]!.decision).toMatchObject({
      trigger: 'cold_start',
      restart: true,
      lifecycle: 'post_cold_start',
    });
  });

  it('treats a clock stepping back as standing still', () => {
    const trigger = new AssignmentTrigger(map('stable', 1));
    const hb = [{ id: 'defender-0', lastHeartbeatAt: 100 * S }];
    expect(trigger.observe(100 * S, hb).action).toBe('idle');
    expect(trigger.observe(50 * S, hb).action).toBe('idle');
    expect(trigger.observe(107 * S, hb)).toMatchObject({ action: 'no-defenders' });
  });

  it('rejects an invalid configuration', () => {
    expect(DEFAULT_TRIGGER_CONFIG).toMatchObject({
      coldStartWindowMs: 30 * S,
      scaleWindowMs: 10 * S,
      maxBatchWaitMs: 60 * S,
    });
    expect(() => new AssignmentTrigger(null, { heartbeatIntervalMs: 0 })).toThrow(InvalidTriggerInputError);
    expect(() => new AssignmentTrigger(null, { missedHeartbeats: 2.5 })).toThrow(InvalidTriggerInputError);
    expect(() => new AssignmentTrigger(null, { maxBatchWaitMs: 20 * S })).toThrow(InvalidTriggerInputError);
  });
});
