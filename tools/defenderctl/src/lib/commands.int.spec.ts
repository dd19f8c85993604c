import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import { Kvm } from '@nats-io/kv';
import { jetstreamManager } from '@nats-io/jetstream';
import { AssignmentMapBucket, ensureStreams, HeartbeatBucket, openBucket, publishOnce } from '@defender/nats-kv';
import { describeWithInfra, startNatsServer, testNatsConnectOptions, testNatsEnv, testNatsUrl } from '@defender/infra-harness';
import { SqliteStore } from '@defender/store';
import { assignments, CtlError, drain, explainChamber, status, tailAlarms } from './commands';
import { REPO, resolveTarget, type Target } from './context';
import { heartbeatOf, mapOf } from './testing';

/** defenderctl's commands against a real nats-server holding a cluster's KV state and alarm stream. */
describeWithInfra(['nats'], 'defenderctl on real NATS', () => {
  let nc: NatsConnection;
  let target: Target;
  const tag = `ctl${process.pid}`;
  const buckets = {
    NATS_KV_HEARTBEATS: `hb-${tag}`,
    NATS_KV_ASSIGNMENTS: `map-${tag}`,
    ELECTION_KV_BUCKET: `el-${tag}`,
  };
  // An operator's tool: the fixture's NATS user, over the run's TLS (NATS_TLS_CA_FILE, NATS_USER, NATS_PASSWORD).
  let env: typeof buckets & Record<string, string>;

  beforeAll(async () => {
    env = { ...testNatsEnv(), ...buckets };
    nc = await connect(testNatsConnectOptions());
    target = resolveTarget({ nats: testNatsUrl() }, env, null);
    const maps = new AssignmentMapBucket(await openBucket(nc, env.NATS_KV_ASSIGNMENTS, { history: 5 }), env.NATS_KV_ASSIGNMENTS);
    let rev = await maps.publish(mapOf(1, { 'ETCH01:PM1': 'defender-0', 'ETCH01:PM2': 'defender-1' }), null);
    rev = await maps.publish(mapOf(2, { 'ETCH01:PM1': 'defender-1', 'ETCH01:PM2': 'defender-1' }, { trigger: 'crash' }), rev);
    await maps.publish(mapOf(3, { 'ETCH01:PM1': 'defender-1', 'ETCH01:PM2': 'defender-2' }, { trigger: 'planned_scale' }), rev);
    const hb = new HeartbeatBucket(await openBucket(nc, env.NATS_KV_HEARTBEATS), env.NATS_KV_HEARTBEATS);
    await hb.publish(heartbeatOf('defender-1'));
    await hb.publish(heartbeatOf('defender-2', { state: 'FOLLOWER' }));
    const el = await new Kvm(nc).create(env.ELECTION_KV_BUCKET, { history: 10 });
    await el.put('assignment-controller', JSON.stringify({ v: 1, holder: 'controller-7', token: 4, leaseExpiresAtMs: Date.now() + 60_000, released: false }));
    await ensureStreams(nc);
  });

  afterAll(async () => {
    await nc.drain();
  });

  it('status: leader, map and defenders', async () => {
    const s = await status(nc, target);
    expect(s.leader).toMatchObject({ holder: 'controller-7', epoch: '4', valid: true });
    expect(s.map).toMatchObject({ version: 3, trigger: 'planned_scale', chamberCount: 2 });
    expect(s.defenders.map((d) => [d.defenderId, d.state, d.alive, d.chambers])).toEqual([
      ['defender-1', 'STABLE', true, 1],
      ['defender-2', 'FOLLOWER', true, 1],
    ]);
  });

  it('assignments [--defender N] and explain with the moves NATS keeps', async () => {
    const all = await assignments(nc, target, undefined, () => undefined);
    expect(all.chambers.map((c) => [c.chamber, c.owner])).toEqual([
      ['ETCH01:PM1', 'defender-1'],
      ['ETCH01:PM2', 'defender-2'],
    ]);
    expect((await assignments(nc, target, '2', () => undefined)).chambers.map((c) => c.chamber)).toEqual(['ETCH01:PM2']);
    await expect(assignments(nc, target, 'pod-2', () => undefined)).rejects.toThrow(CtlError);
    const e = await explainChamber(nc, target, 'ETCH01:PM1', () => undefined);
    expect(e.moves.map((m) => [m.version, m.trigger, m.from, m.to])).toEqual([
      [1, 'cold_start', null, 'defender-0'],
      [2, 'crash', 'defender-0', 'defender-1'],
    ]);
    expect(e.reasons[0]).toMatch(/came to defender-1 with map v2 \(crash, from defender-0\)/);
  });

  it('alarms tail: the last N alarms (holds on request), oldest first', async () => {
    for (let i = 1; i <= 4; i++) {
      await publishOnce(nc, 'defense.alarms.ETCH01.PM1', JSON.stringify({ toolId: 'ETCH01', chamberId: 'PM1', runId: `r${i}`, ruleId: 'WE1', svid: 'P', statistic: 'mean', value: i, lcl: 0, ucl: 3, center: 1.5, action: 'ALARM' }), `${tag}-a${i}`);
    }
    await publishOnce(nc, 'defense.holds.ETCH01.PM1', JSON.stringify({ toolId: 'ETCH01', chamberId: 'PM1', runId: 'r4', reason: 'escalation' }), `${tag}-h`);
    const lines: string[] = [];
    const ac = new AbortController();
    await tailAlarms(nc, { n: 2, follow: false, holds: false, json: false, signal: ac.signal, write: (l) => lines.push(l) });
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(/ETCH01:PM1 +WE1 +run r3 +P mean = 3 \(LCL 0, CL 1\.5, UCL 3\) +ALARM/);
    // A chamber-monitor alarm as the defender publishes it (libs/pipeline runAlarm): T² and SPE against their limits.
    const monitorAlarm = {
      ruleId: 'RUN', indicatorKey: 'ETCH|monitor', action: 'HOLD_CHAMBER', value: 41.23, ucl: 30.1, svid: 'RF_POWER', statistic: 'mean', step: 'ME', toolId: 'ETCH01', chamberId: 'PM2', runId: 'r9',
      message: 'T2+SPE on ETCH01:PM2 run r9', details: { kind: 'run', t2: 41.23, spe: 3.1, violations: [
        { rule: 'T2', indicatorKey: 'ETCH|monitor', value: 41.23, limit: 30.1, contributions: [{ indicatorKey: 'ETCH|m/RF_POWER@ME:mean', share: 0.62, svid: 'RF_POWER', window: 'ME', statistic: 'mean' }] },
        { rule: 'SPE', indicatorKey: 'ETCH|monitor', value: 3.1, limit: 2.4 },
      ] },
    };
    await publishOnce(nc, 'defense.alarms.ETCH01.PM2', JSON.stringify(monitorAlarm), `${tag}-m`);
    const monitorLines: string[] = [];
    await tailAlarms(nc, { n: 1, follow: false, holds: false, chamber: 'ETCH01:PM2', json: false, signal: ac.signal, write: (l) => monitorLines.push(l) });
    expect(monitorLines).toEqual([expect.stringMatching(/ETCH01:PM2 +RUN +run r9 +T² 41\.23 > 30\.1, SPE 3\.1 > 2\.4 \(top: RF_POWER mean 62 %\) +HOLD_CHAMBER$/)]);
    expect(monitorLines[0]).not.toContain('LCL');
    const withHolds: string[] = [];
    await tailAlarms(nc, { n: 1, follow: false, holds: true, chamber: 'ETCH01:PM1', json: true, signal: ac.signal, write: (l) => withHolds.push(l) });
    expect(JSON.parse(withHolds[0]!)).toMatchObject({ subject: 'defense.holds.ETCH01.PM1', reason: 'escalation' });
  });

  it('drain refuses without a local fab and names the Kubernetes way', async () => {
    await expect(drain(nc, target, 'defender-2', 1000, () => undefined)).rejects.toThrow(/kubectl delete pod pod-defender-2/);
    await expect(drain(nc, target, 'defender-9', 1000, () => undefined)).rejects.toThrow(/defender-9 is not running/);
  });

  it('the CLI process: --json output, exit 1 for an unknown chamber, exit 2 for bad usage', () => {
    const run = (...args: string[]) =>
      spawnSync(join(REPO, 'tools/defenderctl/defenderctl'), ['--nats', testNatsUrl(), ...args], { env: { PATH: process.env['PATH'] ?? '', ...env }, encoding: 'utf8', timeout: 60_000 });
    const st = run('--json', 'status');
    expect(st.status).toBe(0);
    expect(JSON.parse(st.stdout)).toMatchObject({ map: { version: 3 } });
    const ex = run('explain', 'NOPE:PM1');
    expect(ex.status).toBe(1);
    expect(ex.stdout).toMatch(/not in map v3/);
    const bad = run('frobnicate');
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/unknown command "frobnicate"/);
  });
});

/**
 * defenderctl pointed at a NATS that is not a Defender cluster's (issue 52, item 4): it names the URL
 * it connected to and how to point it elsewhere, and exits 1, never "missing buckets" with exit 0.
 */
describeWithInfra(['nats'], 'defenderctl against a NATS without a Defender cluster', () => {
  const run = (url: string, ...args: string[]) =>
    spawnSync(join(REPO, 'tools/defenderctl/defenderctl'), ['--nats', url, ...args], { env: { PATH: process.env['PATH'] ?? '' }, encoding: 'utf8', timeout: 60_000 });

  it('an empty JetStream server: every NATS command says no Defender cluster is there and exits 1', async () => {
    const srv = await startNatsServer();
    try {
      for (const args of [['status'], ['--json', 'status'], ['assignments'], ['explain', 'ETCH01:PM1'], ['alarms', 'tail']]) {
        const r = run(srv.url, ...args);
        expect([args.join(' '), r.status]).toEqual([args.join(' '), 1]);
        expect(r.stdout).toBe('');
        expect(r.stderr).toContain(`no Defender cluster found at ${srv.url} (--nats): connected, but none of Defender's KV buckets or streams exist there (KV bucket defender-heartbeats, KV bucket defender-assignments, stream dc-notifications`);
        expect(r.stderr).toMatch(/point defenderctl at your cluster with --nats nats:\/\/HOST:PORT or NATS_SERVERS=nats:\/\/HOST:PORT/);
      }
      // It created nothing there.
      const nc = await connect({ servers: srv.url });
      try {
        expect(await (await jetstreamManager(nc)).streams.names().next()).toEqual([]);
      } finally {
        await nc.close();
      }
    } finally {
      await srv.stop();
    }
  }, 120_000);

  it('a server without JetStream: says so and exits 1', async () => {
    const srv = await startNatsServer({ jetstream: false });
    try {
      const r = run(srv.url, 'status');
      expect(r.status).toBe(1);
      expect(r.stderr).toContain(`no Defender cluster found at ${srv.url} (--nats): connected, but the server has no JetStream`);
    } finally {
      await srv.stop();
    }
  }, 60_000);

  it('a cluster missing some of its buckets: status prints them as PROBLEM lines and exits 1', async () => {
    const srv = await startNatsServer();
    const nc = await connect({ servers: srv.url });
    try {
      await ensureStreams(nc);
      const r = run(srv.url, 'status');
      expect(r.status).toBe(1);
      expect(r.stdout).toMatch(/PROBLEM +KV bucket defender-heartbeats is missing/);
      expect(r.stdout).toMatch(/PROBLEM +KV bucket defender-assignments is missing/);
      expect(r.stderr).toContain(`2 problem(s) at ${srv.url} (--nats) (the PROBLEM lines above)`);
    } finally {
      await nc.close();
      await srv.stop();
    }
  }, 60_000);
});

/** `defenderctl status` when NATS lost its store: every missing bucket and stream is a problem line, never a crash. */
describeWithInfra(['nats'], 'defenderctl status after NATS lost its store', () => {
  it('names the chambers whose mark counts in an older stream, and survives missing buckets and streams', async () => {
    const srv = await startNatsServer();
    const nc = await connect({ servers: srv.url, maxReconnectAttempts: -1, reconnectTimeWait: 100 });
    const store = await SqliteStore.open({ filename: ':memory:' });
    try {
      const target = resolveTarget({ nats: srv.url }, {}, null);
      await ensureStreams(nc);
      const maps = new AssignmentMapBucket(await openBucket(nc, target.buckets.assignments), target.buckets.assignments);
      await maps.publish(mapOf(1, { 'ETCH01:PM1': 'defender-0', 'ETCH01:PM2': 'defender-0', 'ETCH01:PM3': 'defender-0' }), null);
      await new HeartbeatBucket(await openBucket(nc, target.buckets.heartbeats), target.buckets.heartbeats).publish(heartbeatOf('defender-0'));
      const current = (await jetstreamManager(nc)).streams.info('dc-notifications');
      const pm1 = { toolId: 'ETCH01', chamberId: 'PM1' };
      const pm2 = { toolId: 'ETCH01', chamberId: 'PM2' };
      for (const [ch, streamId] of [[pm1, 'an-older-stream'], [pm2, (await current).created]] as const) {
        await store.chamberState.claim(ch, 1, 'defender-0', new Date());
        await store.chamberState.bindStream({ chamber: ch, epoch: 1, expectedStreamId: undefined, streamId, rebase: false });
      }

      const before = await status(nc, target, store);
      expect(before.marks).toEqual({ checked: 3, onOtherStream: ['ETCH01:PM1'], unbound: 1 });
      expect(before.problems).toEqual([expect.stringMatching(/1 chamber\(s\) have a high-water mark of another \(older\) dc-notifications stream.*ETCH01:PM1/)]);
      expect(before.streams.map((x) => [x.name, x.exists])).toEqual([
        ['dc-notifications', true],
        ['dc-dead-letters', true],
        ['defense-events', true],
      ]);

      await srv.restart({ emptyStore: true });
      let after: Awaited<ReturnType<typeof status>> | undefined;
      // The first calls after the restart may meet the reconnect; every answer after it must be a status.
      for (let i = 0; i < 100 && !after; i++) {
        after = await status(nc, target, store).catch((err: unknown) => {
          if ((err as Error).name === 'StreamNotFoundError') throw err;
          return new Promise<undefined>((r) => setTimeout(() => r(undefined), 200));
        });
      }
      expect(after).toBeDefined();
      expect(after?.map).toBeNull();
      expect(after?.defenders).toEqual([]);
      expect(after?.leader).toBeNull();
      expect(after?.marks).toBeNull();
      expect(after?.streams.map((x) => x.exists)).toEqual([false, false, false]);
      // The checks run concurrently: their order is not part of the contract.
      expect(after?.problems).toHaveLength(5);
      expect(after?.problems).toEqual(expect.arrayContaining([
        expect.stringMatching(/KV bucket defender-heartbeats is missing .*every defender creates it again/),
        expect.stringMatching(/KV bucket defender-assignments is missing .*controller creates it again/),
        expect.stringMatching(/stream dc-notifications is missing .*re-base/),
        expect.stringMatching(/stream dc-dead-letters is missing/),
        expect.stringMatching(/stream defense-events is missing/),
      ]));
    } finally {
      await store.close();
      await nc.close();
      await srv.stop();
    }
  }, 120_000);
});
