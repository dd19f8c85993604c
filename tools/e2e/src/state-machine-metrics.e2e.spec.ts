import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import { SqliteStore } from '@defender/store';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describeWithInfra, freePort, getJson, SecuredNatsServer, spawnBuiltApp, startSecuredNatsServer, waitFor } from '@defender/infra-harness';
import { LocalCluster, Proc, SeedChamber } from './cluster';
import { completeRun } from './runs';

/**
 * Every metric name the seeds give for the cluster's state machine (seed 002: each state's
 * "Metrics" and the "Metrics Summary"; seed 000: the defender, leader and subscription-manager
 * tables), by the process that exports it. The embedded controller (defenders hosting it) exports
 * both lists.
 */
export const SEED_METRICS = {
  defender: [
    'defender_state',
    'defender_state_transitions_total',
    'defender_state_duration_seconds',
    'defender_initialization_duration_seconds',
    'defender_initialization_failures_total',
    'defender_id_claim_attempts_total',
    'defender_id_claim_duration_seconds',
    'defender_stable_id_claimed',
    'defender_stable_id',
    'defender_follower_wait_duration_seconds',
    'defender_assigned_chambers',
    'defender_assignment_version',
    'defender_assignment_map_version',
    'defender_messages_received_total',
    'defender_messages_processed_total',
    'defender_messages_failed_total',
    'defender_process_time_seconds',
    'defender_cache_hit_rate',
    'defender_cassandra_read_duration_seconds',
    'defender_cassandra_write_duration_seconds',
    'defender_uchart_calculation_duration_seconds',
    'defender_heartbeat_errors_total',
    'defender_subscription_update_duration_seconds',
    'defender_subscription_added_total',
    'defender_subscription_removed_total',
    'defender_subscription_errors_total',
    'defender_current_subscriptions',
    'defender_shutdowns_total',
    'defender_shutdown_duration_seconds',
    'defender_inflight_messages_at_shutdown',
  ],
  controller: [
    'defender_election_participated_total',
    'defender_is_leader',
    'defender_assignment_controller_started_total',
    'defender_leadership_duration_seconds',
    'defender_trigger_state',
    'defender_restart_detected_total',
    'defender_stabilization_window_seconds',
    'defender_active_heartbeat_count',
    'defender_active_defenders',
    'defender_assignment_map_version',
    'defender_assignment_version',
    'defender_scaling_events_total',
    'defender_scaling_duration_seconds',
    'defender_pending_topology_changes',
    'defender_rebalance_events_total',
    'defender_rebalance_duration_seconds',
    'defender_chamber_movements_total',
    'defender_emergency_events_total',
    'defender_emergency_duration_seconds',
    'defender_crashed_chambers_redistributed',
    'defender_assignment_calculation_duration_seconds',
    'defender_assignment_phase1_duration_seconds',
    'defender_assignment_phase2_duration_seconds',
    'defender_weight_rebalance_iterations',
    'defender_assignment_chambers_moved',
    'defender_assignment_weight_variance_percent',
    'defender_assignment_min_chambers',
    'defender_assignment_max_chambers',
    'defender_assignment_avg_chambers',
    'defender_assignment_min_weight',
    'defender_assignment_max_weight',
    'defender_assignment_avg_weight',
  ],
} as const;

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

function parse(text: string): Sample[] {
  return text
    .split('\n')
    .filter((l) => l !== '' && !l.startsWith('#'))
    .map((l) => {
      const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(l);
      if (!m) throw new Error(`unparsable sample: ${l}`);
      const labels = Object.fromEntries([...(m[2] ?? '').matchAll(/([a-zA-Z_]+)="((?:[^"\\]|\\.)*)"/g)].map((x) => [x[1]!, x[2]!]));
      return { name: m[1]!, labels, value: Number(m[3]) };
    });
}

/** The sum of the samples named `name` whose labels include `labels` (undefined: no such sample). */
function value(samples: Sample[], name: string, labels: Record<string, string> = {}): number | undefined {
  const hits = samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  return hits.length === 0 ? undefined : hits.reduce((n, s) => n + s.value, 0);
}

/** Names with a sample or a TYPE line (a labelled metric nothing has counted yet has only the latter). */
function namesIn(text: string): Set<string> {
  const names = new Set<string>();
  for (const m of text.matchAll(/^# TYPE (\S+) /gm)) names.add(m[1]!);
  return names;
}

const chambers: SeedChamber[] = Array.from({ length: 6 }, (_, i) => ({
  toolId: `tool${i + 1}`,
  chamberId: 'ch1',
  svidCount: 2,
  collectionFreqHz: 1,
  contextDurationSeconds: 600,
}));

describeWithInfra(['nats'], 'seed 002 state-machine metrics on /metrics (multi-process)', () => {
  // Four processes booted one after another and a crash detected, on a machine that may be loaded.
  jest.setTimeout(360_000);
  let cluster: LocalCluster | undefined;
  let store: SqliteStore | undefined;
  let nc: NatsConnection | undefined;
  let nats: SecuredNatsServer | undefined;

  afterEach(async () => {
    await cluster?.stop();
    await store?.close();
    await nc?.close();
    await nats?.stop();
    cluster = undefined;
    store = undefined;
    nc = undefined;
    nats = undefined;
  });

  const scrape = async (p: Proc) => {
    const res = await getJson(`${p.url}/metrics`);
    expect(res.status).toBe(200);
    return res.text;
  };

  it('each counts its event: election, cold start, processing, a planned scale, a crash, a SIGTERM; every seed name is exported', async () => {
    // The cluster's own nats-server: the notification stream's subjects are fixed, other suites publish runs too.
    // One controller that must keep its one term throughout (the counts below are of one term): an
    // election TTL of 15 s, so only a process stalled for seconds could lose it (with the 2 s default, a
    // CI run beside CPU hogs saw the controller deposed and elected again: two engine starts).
    const c = await LocalCluster.start({ chambers, coldStartWindowSeconds: 1.5, electionTtlSeconds: 15 });
    cluster = c;
    await c.startAgent();
    // One after the other, each once the one before heartbeats (two booting at once on a loaded machine
    // may contend for one ID), and both before the controller looks, so its cold start sees both
    // (started first, its 1.5 s window could close while one was still booting: a planned map more).
    const pod0 = await c.startDefender('pod-0');
    await c.waitFor('pod-0 heartbeating', async () => Object.values(await c.members()).includes('pod-0'), 120_000);
    // Logs at info level: its shutdown's last line carries the shutdown metrics.
    const pod1 = await c.startDefender('pod-1', { LOG_LEVEL: 'info' });
    await c.waitFor('pod-1 heartbeating', async () => Object.values(await c.members()).includes('pod-1'), 120_000);
    const controller = await c.startController('controller-a');
    await c.waitFor('the cold-start map', async () => c.latest()?.defenderCount === 2, 120_000);
    await c.waitFor('defenders ready', async () => {
      for (const p of [pod0, pod1]) if ((await getJson(`${p.url}/health/ready`).catch(() => ({ status: 0 }))).status !== 200) return false;
      return true;
    }, 120_000);

    // Two runs per chamber: the first reads the history from the store, the second may find it cached.
    const st = await SqliteStore.open({ filename: c.sqlitePath });
    store = st;
    // The fab's equipment publishes the runs.
    const conn = await connect(c.nats.connectOptions('publisher'));
    nc = conn;
    for (const ch of chambers) {
      for (let k = 0; k < 2; k++) {
        await completeRun(st, conn, { toolId: ch.toolId, chamberId: 'ch1', runId: `${ch.toolId}-run-${k}`, svids: ['pressure', 'rf_power'], samples: 600, seed: 7919 * (k + 1) + ch.toolId.length });
      }
    }
    const applied = async () => {
      let n = 0;
      for (const p of [pod0, pod1]) n += value(parse(await scrape(p)), 'defender_messages_processed_total', { outcome: 'applied' }) ?? 0;
      return n;
    };
    await c.waitFor('12 runs applied', async () => (await applied()) === 12, 120_000);

    // Planned scale 2 -> 3, then a crash of the newcomer.
    const pod2 = await c.startDefender('pod-2');
    await c.waitFor('a map with 3 defenders', async () => c.latest()?.defenderCount === 3, 120_000);
    const scaled = c.latest()!.version;
    const pod2Chambers = async () => ((await getJson(`${pod2.url}/api/v1/assignments`)).body as { assignmentVersion: number; chambers: string[] });
    await c.waitFor('pod-2 applied the 3-defender map', async () => (await pod2Chambers()).assignmentVersion >= scaled, 120_000);
    const owned = (await pod2Chambers()).chambers.length;
    expect(owned).toBeGreaterThan(0);
    await pod2.app.stop('SIGKILL');
    await c.waitFor('the crash map', async () => c.publications.some((p) => p.map.trigger === 'crash'), 120_000);

    const latest = c.latest()!.version;
    // The watcher may see the map before the leader's publish call returned and counted it.
    await c.waitFor('the leader counted the crash map', async () => (value(parse(await scrape(controller)), 'defender_assignment_map_version') ?? 0) >= latest, 120_000);
    const ctlText = await scrape(controller);
    const ctl = parse(ctlText);
    expect(value(ctl, 'defender_is_leader')).toBe(1);
    expect(value(ctl, 'defender_election_participated_total')).toBe(1);
    expect(value(ctl, 'defender_assignment_controller_started_total')).toBe(1);
    expect(value(ctl, 'defender_leadership_duration_seconds')).toBeGreaterThan(0);
    expect(value(ctl, 'defender_trigger_state', { state: 'cold_start' })).toBe(1);
    expect(value(ctl, 'defender_trigger_state', { state: 'planned_scale' })).toBe(1);
    expect(value(ctl, 'defender_trigger_state', { state: 'crash' })).toBe(1);
    expect(value(ctl, 'defender_restart_detected_total')).toBe(0);
    expect(value(ctl, 'defender_scaling_events_total')).toBe(2);
    expect(value(ctl, 'defender_scaling_duration_seconds_count')).toBe(2);
    expect(value(ctl, 'defender_stabilization_window_seconds_sum', { type: 'cold_start' })).toBe(1.5);
    expect(value(ctl, 'defender_stabilization_window_seconds_sum', { type: 'planned_scale' })).toBe(2);
    expect(value(ctl, 'defender_emergency_events_total')).toBe(1);
    expect(value(ctl, 'defender_emergency_duration_seconds_count')).toBe(1);
    expect(value(ctl, 'defender_crashed_chambers_redistributed')).toBe(owned);
    expect(value(ctl, 'defender_pending_topology_changes')).toBe(0);
    expect(value(ctl, 'defender_active_heartbeat_count')).toBe(2);
    expect(value(ctl, 'defender_assignment_map_version')).toBeGreaterThanOrEqual(latest);

    await c.waitFor('pod-0 applied the crash map', async () => (value(parse(await scrape(pod0)), 'defender_assignment_map_version') ?? 0) >= latest, 120_000);
    const d0Text = await scrape(pod0);
    const d0 = parse(d0Text);
    expect(value(d0, 'defender_id_claim_attempts_total')).toBe(1);
    expect(value(d0, 'defender_id_claim_duration_seconds_count')).toBe(1);
    // pod-0 started first and took the lowest free ID, but read it from its status all the same.
    const id0 = ((await getJson(`${pod0.url}/api/v1/status`)).body as { defenderId: string }).defenderId;
    expect(value(d0, 'defender_stable_id_claimed', { id: id0 })).toBe(1);
    expect(value(d0, 'defender_initialization_duration_seconds_count')).toBe(1);
    expect(value(d0, 'defender_initialization_failures_total')).toBe(0);
    expect(value(d0, 'defender_follower_wait_duration_seconds_count')).toBe(1);
    for (const [from, to] of [['INITIALIZATION', 'CLAIMING_ID'], ['CLAIMING_ID', 'FOLLOWER'], ['FOLLOWER', 'STABLE']]) {
      expect({ from, to, n: value(d0, 'defender_state_transitions_total', { from: from!, to: to! }) }).toEqual({ from, to, n: 1 });
      expect({ state: from, n: value(d0, 'defender_state_duration_seconds_count', { state: from! }) }).toEqual({ state: from, n: 1 });
    }
    expect(value(d0, 'defender_state')).toBe(3);
    expect(value(d0, 'defender_assignment_map_version')).toBeGreaterThanOrEqual(latest);
    expect(value(d0, 'defender_shutdowns_total')).toBe(0);
    // Cache counters beside the ratio, summed over both defenders: every lookup counted once.
    const d1 = parse(await scrape(pod1));
    for (const d of [d0, d1]) {
      const hits = value(d, 'defender_cache_hits_total')!;
      const misses = value(d, 'defender_cache_misses_total')!;
      expect(hits + misses).toBeGreaterThan(0);
      expect(value(d, 'defender_cache_hit_rate')).toBeCloseTo(hits / (hits + misses), 9);
    }

    // Every seed name, on the process that owns it.
    const missing = [
      ...SEED_METRICS.defender.filter((n) => !namesIn(d0Text).has(n)).map((n) => `defender: ${n}`),
      ...SEED_METRICS.controller.filter((n) => !namesIn(ctlText).has(n)).map((n) => `assignment-controller: ${n}`),
    ];
    expect(missing).toEqual([]);

    // SIGTERM: the shutdown is counted, timed and the runs in flight recorded (its last log line).
    expect(await pod1.app.stop('SIGTERM')).toEqual({ code: 0, signal: null });
    const done = pod1.app
      .stdout()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { msg?: string; metrics?: Record<string, number> })
      .find((l) => l.msg === 'shutdown complete');
    expect(done?.metrics).toEqual({
      defender_shutdowns_total: 1,
      defender_inflight_messages_at_shutdown: 0,
      defender_shutdown_duration_seconds_count: 1,
    });
  });

  it('initialization failures: a NATS without JetStream keeps the defender in INITIALIZATION, each failed try counted', async () => {
    nats = await startSecuredNatsServer({ jetstream: false });
    const http = await freePort();
    const tag = `smm-${process.pid}`;
    const app = spawnBuiltApp('defender', {
      ...nats.env('defender'),
      HTTP_HOST: '127.0.0.1',
      HTTP_PORT: String(http),
      LOG_LEVEL: 'error',
      SQLITE_PATH: join(tmpdir(), `defender-${tag}`, 'd.db'),
    });
    try {
      const failures = async () => value(parse((await getJson(`http://127.0.0.1:${http}/metrics`).catch(() => ({ text: '' }))).text), 'defender_initialization_failures_total') ?? 0;
      await waitFor('two failed tries to open the KV buckets', async () => (await failures()) >= 2, 60_000);
      const m = parse((await getJson(`http://127.0.0.1:${http}/metrics`)).text);
      expect(value(m, 'defender_state')).toBe(0);
      expect(value(m, 'defender_initialization_duration_seconds_count')).toBe(0);
      expect(value(m, 'defender_id_claim_attempts_total')).toBe(0);
    } finally {
      expect(await app.stop('SIGTERM')).toEqual({ code: 0, signal: null });
    }
  });
});
