import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import { notificationSubject, parseRunNotification } from '@defender/contracts';
import { ensureStreams, NotificationReader, publishOnce } from '@defender/nats-kv';
import { SqliteStore } from '@defender/store';
import { describeWithInfra, testNatsConnectOptions } from '@defender/infra-harness';
import { effectsFor, planExcursions } from './excursions';
import { generateFab } from './fab';
import { runIndexOf, seedChambers, Simulator, type Progress } from './simulator';
import { runLayout } from './trace';

/**
 * The simulator against a real nats-server and SQLite file, with a stand-in defender that applies
 * each run (reading the stream by subject from the store's high-water mark) and alarms on the
 * injected excursions' runs, so counting, trace retention, settling and scoring are exercised.
 */
describeWithInfra(['nats'], 'fab-sim on real NATS and SQLite', () => {
  let dir: string;
  let store: SqliteStore;
  /** The stand-in defender's connection (the defender role) and the simulator's (the equipment's: publisher). */
  let nc: NatsConnection;
  let pub: NatsConnection;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fab-sim-'));
    store = await SqliteStore.open({ filename: join(dir, 'd.db') });
    nc = await connect(testNatsConnectOptions('defender'));
    pub = await connect(testNatsConnectOptions('publisher'));
    // As a defender would at start (the stand-in reads the stream before the simulator publishes).
    await ensureStreams(nc);
  });

  afterAll(async () => {
    await nc.drain();
    await pub.drain();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('seeds the chambers, writes each trace before its notification, in order, and scores the alarms of a stand-in defender', async () => {
    const fab = generateFab({ tools: 2, seed: 11 });
    await seedChambers(store, fab);
    expect((await store.chamberMetadata.list()).map((m) => `${m.toolId}:${m.chamberId}`).sort()).toEqual(fab.chambers.map((c) => c.key).sort());
    const runs = 6;
    const excursions = planExcursions(fab, { count: 2, kinds: ['spike', 'variance-burst'], afterRun: 1, runsPerChamber: runs, seed: 3 });
    expect(excursions).toHaveLength(2);
    const session = `t${Date.now().toString(36)}`;

    // The stand-in defender: applies every run of every chamber once, alarming on excursion runs.
    const reader = await NotificationReader.open(nc);
    let stop = false;
    const seenTraces: { chamber: string; runId: string; samples: number }[] = [];
    const defender = (async () => {
      const marks = new Map<string, number>();
      while (!stop) {
        let idle = true;
        for (const ch of fab.chambers) {
          const hwm = marks.get(ch.key) ?? 0;
          const msg = await reader.next(notificationSubject(ch.toolId, ch.chamberId), hwm + 1);
          if (!msg) continue;
          idle = false;
          const n = parseRunNotification(msg.data);
          const trace = await store.traces.read({ toolId: n.toolId, chamberId: n.chamberId, runId: n.runId });
          seenTraces.push({ chamber: ch.key, runId: n.runId, samples: trace.svids.values().next().value!.length });
          const idx = runIndexOf(session, n.runId)!;
          const xs = excursions.filter((x) => x.chamber === ch.key);
          const hit = [...effectsFor(xs, idx).keys()];
          if (hwm === 0) await store.chamberState.claim(ch, 1, 'stand-in', new Date());
          await store.chamberState.commitRun({
            chamber: ch,
            epoch: 1,
            ownerId: 'stand-in',
            sequence: msg.sequence,
            runId: n.runId,
            recipe: n.recipe,
            committedAt: new Date(),
            points: [],
            alarms: hit.map((svid) => ({ ruleId: 'WE1', indicatorKey: `${n.recipe}|mean/${svid}`, action: 'ALARM', value: 1, svid, statistic: 'mean', message: 'excursion' })),
          });
          for (const svid of hit) {
            await publishOnce(nc, `defense.alarms.${ch.toolId}.${ch.chamberId}`, JSON.stringify({ toolId: ch.toolId, chamberId: ch.chamberId, runId: n.runId, svid, ruleId: 'WE1' }), `${n.runId}:${svid}`);
          }
          marks.set(ch.key, msg.sequence);
        }
        if (idle) await new Promise((r) => setTimeout(r, 50));
      }
    })();

    const progress: Progress[] = [];
    const sim = new Simulator(
      {
        fab,
        runsPerChamber: runs,
        warmupRuns: 3,
        speed: 'max',
        excursions,
        sessionId: session,
        outDir: join(dir, 'out'),
        keepTraces: 1,
        concurrency: 2,
        maxBacklog: 1000,
        settleTimeoutMs: 60_000,
        phaseOneRuns: 1,
        graceRuns: 0,
      },
      { store, nc: pub, log: () => undefined, onProgress: (p) => progress.push(p) },
    );
    const result = await sim.run();
    stop = true;
    await defender;

    const total = fab.chambers.length * runs;
    expect(result).toMatchObject({ published: total, processed: total, total, settled: true, aborted: false });
    expect(result.score).toMatchObject({ injected: 2, detected: 2, falseAlarms: 0 });
    expect(result.score.excursions.every((e) => e.delayRuns === 0)).toBe(true);
    expect(progress.at(-1)).toMatchObject({ phase: 'done', published: total, processed: total, detected: 2 });
    // Every trace was complete when its notification could be read, with its run's samples (an
    // endpoint-controlled step makes each run's length differ slightly).
    expect(seenTraces).toHaveLength(total);
    for (const t of seenTraces) {
      const ch = fab.chambers.find((c) => c.key === t.chamber)!;
      const idx = runIndexOf(session, t.runId)!;
      expect(t.samples).toBe(runLayout(ch, idx, effectsFor(excursions.filter((x) => x.chamber === ch.key), idx)).n);
    }
    // Per chamber the runs arrived in order.
    for (const ch of fab.chambers) {
      const idx = seenTraces.filter((t) => t.chamber === ch.key).map((t) => runIndexOf(session, t.runId));
      expect(idx).toEqual([...Array(runs).keys()]);
    }
    // Processed traces beyond the newest `keepTraces` were deleted (the oldest run's trace is gone).
    await expect(store.traces.read({ ...fab.chambers[0]!, runId: `${session}-r0001` })).rejects.toThrow();
    // Ground truth: the plan, then one line per affected run with its stream sequence.
    const lines = readFileSync(result.groundTruthFile, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.filter((l) => l['type'] === 'excursion').map((l) => l['id'])).toEqual(['x1', 'x2']);
    const affected = lines.filter((l) => l['type'] === 'run');
    expect(affected.length).toBe(excursions.reduce((a, x) => a + x.endRun - x.startRun + 1, 0));
    expect(affected.every((l) => typeof l['sequence'] === 'number')).toBe(true);
    expect(JSON.parse(readFileSync(join(dir, 'out', 'summary.json'), 'utf8'))).toMatchObject({ sessionId: session, published: total });
  });
});
