import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import { jetstreamManager } from '@nats-io/jetstream';
import Database from 'better-sqlite3';
import { notificationSubject, RunPointSet, strategyScope } from '@defender/contracts';
import { SqliteStore } from '@defender/store';
import { describeWithInfra, getJson } from '@defender/infra-harness';
import { DEFAULT_STREAM_SETTINGS, publishOnce, streamConfigs, STREAMS } from '@defender/nats-kv';
import { LocalCluster, MapRecord, SeedChamber } from './cluster';
import { completeRun, completeRunWithCorruptChunk, makeTrace, notificationOf, publishRaw, RunSpec } from './runs';

const SVIDS = ['pressure', 'rf_power'];

function chambers(n: number): SeedChamber[] {
  return Array.from({ length: n }, (_, i) => ({
    toolId: `tool${i + 1}`,
    chamberId: 'ch1',
    svidCount: SVIDS.length,
    collectionFreqHz: 1,
    contextDurationSeconds: 600,
  }));
}

function spec(toolId: string, k: number, over: Partial<RunSpec> = {}): RunSpec {
  // Well-separated seeds: consecutive mulberry32 seeds would correlate runs and shrink the moving range.
  return { toolId, chamberId: 'ch1', runId: `${toolId}-run-${k}`, svids: SVIDS, samples: 600, seed: Math.imul(k + 1, 2654435761) ^ toolId.length * 40503, ...over };
}

/** Every committed run of a chamber, oldest first (history is bounded: ask for plenty). */
async function committed(store: SqliteStore, toolId: string): Promise<RunPointSet[]> {
  return store.uchart.history({ toolId, chamberId: 'ch1' }, { limit: 1000 });
}

async function hwm(store: SqliteStore, toolId: string): Promise<number> {
  return (await store.chamberState.get({ toolId, chamberId: 'ch1' }))?.highWaterMark ?? 0;
}

/** Checks exactly-once and order: one committed run per published sequence, increasing. */
function expectExactlyOnce(runs: RunPointSet[], sequences: number[]): void {
  expect(runs.map((r) => r.sequence)).toEqual([...sequences].sort((a, b) => a - b));
  expect(new Set(runs.map((r) => r.runId)).size).toBe(runs.length);
  for (let i = 1; i < runs.length; i++) expect(runs[i]!.epoch).toBeGreaterThanOrEqual(runs[i - 1]!.epoch);
}

describeWithInfra(['nats'], 'run processing: exactly-once, ordered, fenced (multi-process)', () => {
  let cluster: LocalCluster | undefined;
  let store: SqliteStore | undefined;
  let nc: NatsConnection | undefined;

  afterEach(async () => {
    await cluster?.stop();
    await store?.close();
    await nc?.close();
    cluster = undefined;
    store = undefined;
    nc = undefined;
  });

  /**
   * Each test's cluster has its own nats-server: the notification stream's subjects are fixed
   * (dc.*.*.completed), so two tests on one server would read each other's runs.
   */
  async function start(nChambers: number, defenders: number, env: Record<string, string> = {}) {
    const c = await LocalCluster.start({ chambers: chambers(nChambers), coldStartWindowSeconds: 1.5 });
    cluster = c;
    await c.startAgent();
    await c.startController('controller-a');
    for (let i = 0; i < defenders; i++) await c.startDefender(`pod-${i}`, env);
    await cluster!.waitFor('the first map', async () => c.publications.length > 0 && c.latest()!.defenderCount === defenders, 60_000);
    await cluster!.waitFor('defenders ready', async () => {
      for (const p of c.procs.filter((x) => x.name.startsWith('pod-'))) {
        if ((await getJson(`${p.url}/health/ready`).catch(() => ({ status: 0 }))).status !== 200) return false;
      }
      return true;
    }, 60_000);
    const st = await SqliteStore.open({ filename: c.sqlitePath });
    store = st;
    // The fixture's user: the test publishes runs (the equipment's part) and also plays a defender's (alarm windows).
    const conn = await connect({ ...c.nats.connectOptions(), maxReconnectAttempts: -1, reconnectTimeWait: 100 });
    nc = conn;
    return { c, store: st, nc: conn };
  }

  it('applies every run once, in order, and raises each alarm once', async () => {
    const { c, store, nc } = await start(3, 2);
    const seqs: Record<string, number[]> = {};
    for (const tool of ['tool1', 'tool2', 'tool3']) {
      seqs[tool] = [];
      for (let k = 0; k < 34; k++) {
        // 31 in-control runs (the default strategy's Phase I is 30), then a 15-sigma shift on runs 32-34.
        seqs[tool]!.push(await completeRun(store, nc, spec(tool, k, k >= 31 ? { shift: 15 } : {})));
      }
    }
    for (const tool of Object.keys(seqs)) {
      await cluster!.waitFor(`${tool} caught up`, async () => (await hwm(store, tool)) === seqs[tool]!.at(-1), 60_000);
      expectExactlyOnce(await committed(store, tool), seqs[tool]!);
      const alarms = await store.alarms.list({ toolId: tool, chamberId: 'ch1' }, { limit: 100 });
      expect(alarms.length).toBeGreaterThan(0);
      // Each shifted run raised one run-level alarm whose violations name both SVIDs (a 15-sigma shift
      // is beyond any limit); an in-control run may raise the occasional false alarm, which is a
      // chart's nature, not a fault.
      for (const seq of seqs[tool]!.slice(31)) {
        const run = alarms.filter((a) => a.sequence === seq);
        expect(run.map((a) => a.ruleId)).toEqual(['RUN']);
        const named = new Set(((run[0]!.details?.['violations'] ?? []) as { svid?: string; contributions?: { svid?: string }[] }[]).flatMap((v) => [v.svid, ...(v.contributions ?? []).map((c) => c.svid)]));
        for (const svid of SVIDS) expect(named.has(svid)).toBe(true);
      }
      const identities = alarms.map((a) => `${a.sequence}|${a.ruleId}|${a.indicatorKey}`);
      expect(new Set(identities).size).toBe(identities.length);
      expect(alarms[0]).toMatchObject({ toolId: tool, chamberId: 'ch1', recipe: 'ETCH-A' });
    }
    // The alarm stream holds each stored alarm exactly once (publications are deduplicated).
    const jsm = await jetstreamManager(nc);
    const stored = (await Promise.all(['tool1', 'tool2', 'tool3'].map((t) => store.alarms.list({ toolId: t, chamberId: 'ch1' }, { limit: 100 })))).flat();
    const info = await jsm.streams.info('defense-events', { subjects_filter: 'defense.alarms.>' });
    const alarmSubjects = Object.values(info.state.subjects ?? {}).reduce((a, b) => a + b, 0);
    expect(alarmSubjects).toBe(stored.length);
    // Escalation: three alarmed runs within five -> the chamber is held.
    expect(await store.alarms.hold({ toolId: 'tool1', chamberId: 'ch1' })).toMatchObject({ toolId: 'tool1' });
    const metrics = (await Promise.all(c.procs.filter((p) => p.name.startsWith('pod-')).map((p) => getJson(`${p.url}/metrics`)))).map((m) => m.text).join('\n');
    expect(metrics).toMatch(/defender_messages_processed_total\{outcome="applied",app="defender"\} \d+/);
    // Every store operation is timed by name: each applied run committed once and read its trace.
    const opCount = (op: string) =>
      metrics
        .split('\n')
        .filter((l) => l.startsWith('defender_store_operation_duration_seconds_count{') && l.includes(`operation="${op}"`) && l.includes('outcome="ok"'))
        .reduce((n, l) => n + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
    const applied = [...metrics.matchAll(/defender_messages_processed_total\{outcome="applied",app="defender"\} (\d+)/g)].reduce((n, m) => n + Number(m[1]), 0);
    expect(applied).toBeGreaterThan(0);
    expect(opCount('chamberState.commitRun')).toBeGreaterThanOrEqual(applied);
    expect(opCount('traces.read')).toBeGreaterThanOrEqual(applied);
    // Per chamber: runs applied and run alarms published (the alarm rate against the budget).
    const perChamber = (name: string, chamber: string) =>
      [...metrics.matchAll(new RegExp(`${name}\\{chamber="${chamber}",app="defender"\\} (\\d+)`, 'g'))].reduce((n, m) => n + Number(m[1]), 0);
    for (const tool of ['tool1', 'tool2', 'tool3']) {
      expect(perChamber('defender_chamber_runs_total', `${tool}:ch1`)).toBe(34);
      expect(perChamber('defender_chamber_alarms_total', `${tool}:ch1`)).toBe((await store.alarms.list({ toolId: tool, chamberId: 'ch1' }, { limit: 100 })).length);
    }
  });

  it('an outage longer than the duplicate window (shortened to 1 s): no alarm published twice, no run applied twice', async () => {
    const { c, store, nc } = await start(1, 1, { STREAM_DUPLICATE_WINDOW_SECONDS: '1' });
    const alarmed = (k: number) => spec('tool1', k, k >= 31 ? { shift: 15 } : {});
    const seqs: number[] = [];
    for (let k = 0; k < 33; k++) seqs.push(await completeRun(store, nc, alarmed(k)));
    await cluster!.waitFor('caught up', async () => (await hwm(store, 'tool1')) === seqs.at(-1), 60_000);
    const jsm = await jetstreamManager(nc);
    const inStream = async (subjects: string) =>
      Object.values((await jsm.streams.info('defense-events', { subjects_filter: subjects })).state.subjects ?? {}).reduce((a, b) => a + b, 0);
    const storedAlarms = async () => (await store.alarms.list({ toolId: 'tool1', chamberId: 'ch1' }, { limit: 100 })).length;
    await cluster!.waitFor('alarms published', async () => (await inStream('defense.alarms.tool1.ch1')) === (await storedAlarms()), 60_000);
    expect(await storedAlarms()).toBeGreaterThanOrEqual(2);

    // The defender dies, and the outage outlasts the duplicate window (a probe id is accepted again).
    await c.procs.find((p) => p.name === 'pod-0')!.app.stop('SIGKILL');
    expect(await publishOnce(nc, 'defense.alarms.probe.window', '{}', 'window-probe')).toBe(true);
    await cluster!.waitFor('the duplicate window to pass', async () => publishOnce(nc, 'defense.alarms.probe.window', '{}', 'window-probe'), 60_000);
    // Meanwhile an alarmed run's notification is published again, and a new run completes.
    const replay = await publishRaw(nc, notificationSubject('tool1', 'ch1'), JSON.stringify(notificationOf(alarmed(31))));
    const next = await completeRun(store, nc, alarmed(33));

    await c.startDefender('pod-1');
    await cluster!.waitFor('resumed after the outage', async () => (await hwm(store, 'tool1')) === next, 90_000);
    await cluster!.waitFor('alarms published', async () => (await inStream('defense.alarms.tool1.ch1')) === (await storedAlarms()), 60_000);
    const runs = await committed(store, 'tool1');
    expectExactlyOnce(runs, [...seqs, next]);
    expect(runs.some((r) => r.sequence === replay)).toBe(false);
    // Each stored alarm is in the stream once, the new run's included.
    expect(await inStream('defense.alarms.tool1.ch1')).toBe(await storedAlarms());
    expect((await store.alarms.ofRun({ toolId: 'tool1', chamberId: 'ch1' }, next)).map((a) => a.ruleId)).toEqual(['RUN']);
    const metrics = (await getJson(`${c.procs.find((p) => p.name === 'pod-1')!.url}/metrics`)).text;
    expect(metrics).toMatch(/defender_messages_processed_total\{outcome="duplicate-run",app="defender"\} 1\b/);
  });

  it('SIGKILL of an owner in the middle of a burst: the new owner applies the rest, each run exactly once', async () => {
    const { c, store, nc } = await start(2, 2);
    const owner = c.latest()!.assignments['tool1:ch1']!;
    const members = await c.members();
    const victim = c.procs.find((p) => p.name === members[owner])!;
    expect(victim).toBeDefined();
    const seqs: number[] = [];
    for (let k = 0; k < 30; k++) {
      seqs.push(await completeRun(store, nc, spec('tool1', k, { samples: 20_000 })));
      if (k === 10) await victim.app.stop('SIGKILL');
    }
    await cluster!.waitFor('all 30 applied', async () => (await hwm(store, 'tool1')) === seqs.at(-1), 90_000);
    const runs = await committed(store, 'tool1');
    expectExactlyOnce(runs, seqs);
    expect(new Set(runs.map((r) => r.epoch)).size).toBeGreaterThanOrEqual(1);
    expect(c.latest()!.assignments['tool1:ch1']).not.toBe(owner);
  });

  it('a stale owner frozen with SIGSTOP and resumed after the takeover cannot write', async () => {
    const { c, store, nc } = await start(1, 2);
    const owner = c.latest()!.assignments['tool1:ch1']!;
    const members = await c.members();
    const victim = c.procs.find((p) => p.name === members[owner])!;
    for (let k = 0; k < 3; k++) await completeRun(store, nc, spec('tool1', k));
    await cluster!.waitFor('warm-up applied', async () => (await committed(store, 'tool1')).length === 3, 60_000);
    const epochBefore = (await store.chamberState.get({ toolId: 'tool1', chamberId: 'ch1' }))!.ownerEpoch;

    victim.app.child.kill('SIGSTOP');
    const seqs: number[] = [];
    for (let k = 3; k < 8; k++) seqs.push(await completeRun(store, nc, spec('tool1', k, { samples: 50_000 })));
    await cluster!.waitFor('takeover processed the runs', async () => (await hwm(store, 'tool1')) === seqs.at(-1), 60_000);
    const epochAfter = (await store.chamberState.get({ toolId: 'tool1', chamberId: 'ch1' }))!.ownerEpoch;
    expect(epochAfter).toBeGreaterThan(epochBefore);
    const moved = (p: MapRecord) => p.map.assignments['tool1:ch1'] !== owner;
    await cluster!.waitFor('the takeover map', async () => c.publications.some(moved), 60_000);
    const takeover = c.publications.find(moved)!.map.version;

    victim.app.child.kill('SIGCONT');
    // The stale owner has applied the map that took the chamber from it (or a later one): its old
    // worker was released before the version shows (its run in flight finished or fenced), or, under
    // a later map that gives the chamber back, is fenced at its first write and started again under
    // that map. Then the later runs: whatever the stale owner tried meanwhile is in the store or never.
    await cluster!.waitFor('the stale owner applied the takeover map', async () => {
      const res = await getJson(`${victim.url}/api/v1/assignments`).catch(() => undefined);
      return ((res?.body as { assignmentVersion?: number } | undefined)?.assignmentVersion ?? 0) >= takeover;
    }, 60_000);
    for (let k = 8; k < 12; k++) seqs.push(await completeRun(store, nc, spec('tool1', k)));
    await cluster!.waitFor('later runs applied', async () => (await hwm(store, 'tool1')) === seqs.at(-1), 60_000);
    const runs = await committed(store, 'tool1');
    expect(runs).toHaveLength(12);
    // Every run after the freeze was written under the new owner's epoch (or a later one): none by the stale owner.
    for (const r of runs.filter((x) => seqs.includes(x.sequence))) expect(r.epoch).toBeGreaterThanOrEqual(epochAfter);
  });

  it('NATS restarted during a burst: nothing lost, nothing doubled', async () => {
    const { store, nc } = await start(2, 2);
    const server = cluster!.nats.server;
    const seqs: Record<string, number[]> = { tool1: [], tool2: [] };
    const publish = async (tool: string, k: number) => {
      for (;;) {
        try {
          seqs[tool]!.push(await completeRun(store, nc, spec(tool, k)));
          return;
        } catch {
          await new Promise((r) => setTimeout(r, 200)); // NATS is down: retry like a producer would
        }
      }
    };
    for (let k = 0; k < 40; k++) {
      await publish('tool1', k);
      await publish('tool2', k);
      if (k === 15) await server.restart({ hard: true, downMs: 1000 });
    }
    for (const tool of ['tool1', 'tool2']) {
      await cluster!.waitFor(`${tool} caught up`, async () => (await hwm(store, tool)) === seqs[tool]!.at(-1), 90_000);
      expectExactlyOnce(await committed(store, tool), seqs[tool]!);
    }
  });

  it('NATS restarted with an empty store and the election agent with it (ADR 0007): no new run skipped, none doubled; buckets back, the controller leads again above the token defenders hold, a new defender joins, nobody exits', async () => {
    const { c, store, nc } = await start(2, 2);
    const server = cluster!.nats.server;
    const tools = ['tool1', 'tool2'];
    const publish = async (tool: string, k: number): Promise<number> => {
      for (;;) {
        try {
          return await completeRun(store, nc, spec(tool, k));
        } catch {
          await new Promise((r) => setTimeout(r, 200)); // NATS down or the stream not there yet: retry like a producer would
        }
      }
    };
    const before: Record<string, number> = {};
    for (let k = 0; k < 10; k++) for (const tool of tools) before[tool] = await publish(tool, k);
    for (const tool of tools) await c.waitFor(`${tool} caught up`, async () => (await hwm(store, tool)) === before[tool], 90_000);

    // A second term first (graceful hand-over to a standby), so the token defenders hold is 2, above
    // the 1 a forgetful agent would grant next.
    await c.startController('controller-b');
    await c.procs.find((x) => x.name === 'controller-a')!.app.stop('SIGTERM');
    await c.waitFor('the standby\'s takeover map', async () => c.latest()?.fencingToken === '2', 60_000, 100);
    const versionBefore = ((await getJson(`${c.procs.find((x) => x.name === 'pod-0')!.url}/api/v1/status`)).body as { assignmentVersion: number }).assignmentVersion;
    const tokenBefore = BigInt(c.latest()!.fencingToken);
    await server.restart({ emptyStore: true });
    // The agent goes down with NATS: its memory of the tokens it granted is gone, and the election
    // bucket and the map come back empty. Only the defenders still know the newest token.
    await c.restartAgent(c.agents[0]!);
    // As in the incident, the publisher recreates the notification stream alone (unless a defender was first).
    const [notifications] = streamConfigs(DEFAULT_STREAM_SETTINGS);
    await c.waitFor('the notification stream back', async () => {
      const jsm = await jetstreamManager(nc).catch(() => undefined);
      if (!jsm || !notifications) return false;
      return jsm.streams.add(notifications).then(
        () => true,
        () => jsm.streams.info(STREAMS.notifications).then(() => true, () => false),
      );
    }, 60_000, 200);
    // Sequences restart at 1, far below both marks (20 runs were published before). The defenders see
    // the stream's sequences restarted below their marks and re-base; a recreated stream that had
    // already passed a mark before its chamber looked would be taken for the same stream (ADR 0007:
    // marks are in the thousands at a real fab, checked every heartbeat), so the rest follows the re-base.
    const after: Record<string, number[]> = { tool1: [], tool2: [] };
    for (const tool of tools) after[tool]!.push(await publish(tool, 10));
    expect(after['tool1']![0]).toBeLessThan(before['tool1']!);
    for (const tool of tools) {
      await c.waitFor(`${tool} re-based`, async () => ((await store.chamberState.get({ toolId: tool, chamberId: 'ch1' }))?.streamOffset ?? 0) > 0, 60_000, 250);
    }
    for (let k = 11; k < 20; k++) for (const tool of tools) after[tool]!.push(await publish(tool, k));

    for (const tool of tools) {
      await c.waitFor(`${tool}: every run after the restart applied`, async () => {
        const runs = await committed(store, tool);
        if (runs.length === 20) return true;
        // Not yet: what was applied and where the chamber stands, for the timeout's cause.
        const st = await store.chamberState.get({ toolId: tool, chamberId: 'ch1' });
        const last = runs.at(-1);
        throw new Error(`${runs.length} runs applied, the last ${last?.runId} at ${last?.sequence}; mark ${st?.highWaterMark} offset ${st?.streamOffset} stream ${st?.streamId}; published after: ${after[tool]!.join(',')}`);
      }, 120_000, 250);
      const runs = await committed(store, tool);
      expect(runs.map((r) => r.runId)).toEqual(Array.from({ length: 20 }, (_, k) => `${tool}-run-${k}`));
      // Store sequences keep growing across the recreation (stream offset = the mark at the re-base).
      for (let i = 1; i < runs.length; i++) expect(runs[i]!.sequence).toBeGreaterThan(runs[i - 1]!.sequence);
      expect(await store.chamberState.get({ toolId: tool, chamberId: 'ch1' })).toMatchObject({ streamOffset: before[tool] });
    }

    // "Add defender" after the restart: the controller leads again (a new term, its token above the
    // lost one) and publishes maps numbered above every version the defenders hold; all three
    // defenders accept the map that includes the new one; the two running ones keep their IDs.
    const third = await c.startDefender('pod-2');
    const pods = () => c.procs.filter((x) => x.name.startsWith('pod-'));
    const statusOf = async (url: string) => (await getJson(`${url}/api/v1/status`).catch(() => undefined))?.body as { defenderId: string; assignmentVersion: number } | undefined;
    await c.waitFor('every defender holds the map that includes the new one', async () => {
      const versions = await Promise.all(pods().map(async (p) => (await statusOf(p.url))?.assignmentVersion ?? 0));
      const newest = (await statusOf(third.url))?.assignmentVersion ?? 0;
      if (newest > versionBefore && versions.every((v) => v === newest)) return true;
      // Not yet: what was seen, for the timeout's cause (the map in the bucket and each pod's version).
      const stored = await c.maps.read().catch((err: unknown) => (err as Error).message);
      const head = typeof stored === 'string' ? stored : stored ? `v${stored.map.version} token ${stored.map.fencingToken} defenders ${stored.map.defenderCount}` : 'none';
      throw new Error(`before v${versionBefore}; pods ${pods().map((p, i) => `${p.name}=v${versions[i]}`).join(' ')}; map in the bucket: ${head}`);
    }, 120_000, 250);
    // The new term campaigned with the defenders' token as its floor: its maps outrank the lost ones
    // (read from the bucket: the fixture's watch did not survive the bucket's recreation).
    const mapNow = await c.maps.read();
    expect(BigInt(mapNow!.map.fencingToken)).toBeGreaterThan(tokenBefore);
    const ids: string[] = [];
    for (const p of pods()) {
      expect(p.app.child.exitCode).toBeNull();
      ids.push((await statusOf(p.url))?.defenderId ?? '?');
    }
    expect(ids.sort()).toEqual(['defender-0', 'defender-1', 'defender-2']);
  });

  it('the store unavailable for a while: processing pauses and resumes with nothing lost', async () => {
    const { c, store, nc } = await start(1, 1, { PROCESS_TIMEOUT_SECONDS: '30' });
    const seqs: number[] = [];
    for (let k = 0; k < 3; k++) seqs.push(await completeRun(store, nc, spec('tool1', k)));
    await cluster!.waitFor('warm-up applied', async () => (await hwm(store, 'tool1')) === seqs.at(-1), 60_000);
    // Traces go in first; then an exclusive lock makes the store unavailable to the defender.
    const pending = [3, 4, 5, 6].map((k) => spec('tool1', k));
    for (const s of pending) await store.traces.write(makeTrace(s));
    const locker = new Database(c.sqlitePath);
    locker.exec('BEGIN EXCLUSIVE');
    for (const s of pending) seqs.push(await publishRaw(nc, notificationSubject('tool1', 'ch1'), JSON.stringify(notificationOf(s))));
    // Held until the defender's writes failed as unavailable (after the store's busy timeout, 5 s) and it paused.
    const paused = /defender_processing_paused_total\{stage="[a-z-]+",app="defender"\} [1-9]/;
    await cluster!.waitFor('the defender paused', async () => paused.test((await getJson(`${c.procs.find((p) => p.name === 'pod-0')!.url}/metrics`)).text), 60_000);
    locker.exec('ROLLBACK');
    locker.close();
    await cluster!.waitFor('resumed', async () => (await hwm(store, 'tool1')) === seqs.at(-1), 60_000);
    expectExactlyOnce(await committed(store, 'tool1'), seqs);
    const m = (await getJson(`${c.procs.find((p) => p.name === 'pod-0')!.url}/metrics`)).text;
    expect(m).toMatch(paused);
    expect(m).not.toMatch(/defender_dead_letters_total\{reason="processing-failed"/);
  });

  it('bad input goes to dc.dead.<reason>, processes stay up, other chambers keep flowing', async () => {
    const { c, store, nc } = await start(3, 2, { MAX_TRACE_POINTS: '1000000' });
    // A strategy that fails validation is never replaced by another one: the chamber's runs are dead-lettered.
    await store.strategies.put({ scope: strategyScope({ kind: 'chamber', chamber: { toolId: 'tool3', chamberId: 'ch1' } }), version: 1, document: { schemaVersion: 1, name: 'broken', indicators: [{ id: 'bad id!', svid: '*', statistic: 'mean' }] }, createdAt: new Date(), author: 'e2e' });
    const subj = notificationSubject('tool1', 'ch1');
    const good = (k: number) => completeRun(store, nc, spec('tool2', k));
    const expected: [string, () => Promise<number>][] = [
      ['invalid-json', () => publishRaw(nc, subj, '{"runId": ')],
      ['invalid-notification', () => publishRaw(nc, subj, JSON.stringify({ ...notificationOf(spec('tool1', 90)), runId: undefined }))],
      ['invalid-notification', () => publishRaw(nc, subj, JSON.stringify({ ...notificationOf(spec('tool1', 91)), svids: 'pressure' }))],
      ['subject-mismatch', () => publishRaw(nc, subj, JSON.stringify(notificationOf(spec('tool2', 92))))],
      ['unknown-chamber', () => publishRaw(nc, notificationSubject('tool99', 'ch1'), JSON.stringify(notificationOf(spec('tool99', 93))))],
      ['missing-trace', () => publishRaw(nc, subj, JSON.stringify(notificationOf(spec('tool1', 94))))],
      ['invalid-trace', () => completeRun(store, nc, spec('tool1', 95, { samples: 0 }))],
      ['no-indicators', () => completeRun(store, nc, spec('tool1', 96, { nanFraction: 1 }))],
      ['trace-too-large', () => publishRaw(nc, subj, JSON.stringify(notificationOf(spec('tool1', 97, { samples: 25_000_000 }))))],
      ['invalid-strategy', () => completeRun(store, nc, spec('tool3', 99))],
      // A stored trace whose bytes were damaged after the write: its chunk fails the checksum.
      ['corrupt-trace', () => completeRunWithCorruptChunk(c.sqlitePath, store, nc, spec('tool1', 89))],
    ];
    const deadSeqs: number[] = [];
    const goodSeqs: number[] = [];
    for (const [, send] of expected) {
      deadSeqs.push(await send());
      goodSeqs.push(await good(goodSeqs.length));
    }
    // A valid run with NaN-filled samples (a third missing) is processed, so is one with ±Infinity samples, and a duplicate run id is skipped (not a dead letter).
    const nanSeq = await completeRun(store, nc, spec('tool1', 98, { nanFraction: 0.3 }));
    // ±Infinity samples are invalid samples like NaN: the run is processed and no point is infinite.
    const infSeq = await completeRun(store, nc, spec('tool1', 88, { infFraction: 0.2 }));
    const dupSeq = await publishRaw(nc, subj, JSON.stringify(notificationOf(spec('tool1', 98))));
    await cluster!.waitFor('tool1 through the corpus', async () => (await hwm(store, 'tool1')) === dupSeq, 60_000);
    await cluster!.waitFor('tool2 kept flowing', async () => (await hwm(store, 'tool2')) === goodSeqs.at(-1), 60_000);
    expect((await committed(store, 'tool2')).map((r) => r.sequence)).toEqual(goodSeqs);
    const t1 = await committed(store, 'tool1');
    expect(t1.find((r) => r.sequence === nanSeq)?.points.length).toBeGreaterThan(0);
    const inf = t1.find((r) => r.sequence === infSeq);
    expect(inf?.points.length).toBeGreaterThan(0);
    expect(inf?.points.filter((p) => !Number.isFinite(p.value))).toEqual([]);
    expect(t1.filter((r) => r.runId === notificationOf(spec('tool1', 98)).runId).map((r) => r.sequence)).toEqual([nanSeq]);

    const jsm = await jetstreamManager(nc);
    const reasons: string[] = [];
    const dead = await jsm.streams.info('dc-dead-letters', { subjects_filter: 'dc.dead.*' });
    for (const [s, n] of Object.entries(dead.state.subjects ?? {})) for (let i = 0; i < n; i++) reasons.push(s.slice('dc.dead.'.length));
    const want = expected.map(([r]) => r).sort();
    expect(reasons.sort()).toEqual(want);
    for (const p of c.procs) expect(p.app.child.exitCode).toBeNull();
  });
});
