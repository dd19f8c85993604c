import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { publishStored, STREAMS } from '@defender/nats-kv';
import { SqliteStore } from '@defender/store';
import { startTcpProxy, waitFor } from '@defender/infra-harness';
import { analyseTakeover, ChamberEvidence, mapVersionOfEpoch } from './analysis';
import { isAlive, Proc } from './cluster';
import { fencedLogLines } from './evidence';
import { ScenarioOutcome, ScenarioRun, sleep, Suite } from './runner';
import { newPod } from './scenarios';
import { detectionSeconds } from './settings';
import type { SuiteDef } from './suites';

/** The stream duplicate window of the partitions suite's defenders, seconds (production: 3,600). */
export const SHORT_DUPLICATE_WINDOW_SECONDS = 3;

/**
 * A defender cut off from NATS by a TCP proxy, and an outage longer than a shortened stream
 * duplicate window, on 3 defenders (the proxied one joins for its scenario and leaves after it).
 * All three take about 80 s with the start on 2 cores; `nx test chaos` runs two (about 65 s).
 */
export const PARTITIONS: SuiteDef = {
  name: 'partitions',
  chambers: 32,
  defenders: 3,
  // The defenders set the streams' duplicate window (production 1 h) to a few seconds.
  defenderEnv: { STREAM_DUPLICATE_WINDOW_SECONDS: String(SHORT_DUPLICATE_WINDOW_SECONDS) },
  scenarios: [
    { id: 'defender-partitioned', run: (s) => partitionedDefender(s, 'cut') },
    { id: 'outage-past-duplicate-window', run: (s) => outagePastDuplicateWindow(s) },
    { id: 'defender-blackholed', run: (s) => partitionedDefender(s, 'blackhole') },
  ],
  // The outage past the duplicate window is also processing.e2e.spec.ts's; CI runs it there.
  jestScenarios: ['defender-partitioned'],
};

/** The live process of pod `podUid` (a container restart replaces the Proc). */
function procOfPod(suite: Suite, podUid: string): Proc | undefined {
  return suite.cluster.defenders.filter((p) => p.podUid === podUid && isAlive(p)).at(-1);
}

/** Log lines `count` over every process of a pod (its restarts included). */
function podCount(suite: Suite, podUid: string, count: (p: Proc) => number): number {
  return suite.cluster.defenders.filter((p) => p.podUid === podUid).reduce((n, p) => n + count(p), 0);
}

/**
 * Takeover measures of a defender cut off at `faultAt`: detection, orphaned chambers running again,
 * movement, and commits under its epoch after the takeover (a deposed owner's late write).
 */
function takeoverChecks(run: ScenarioRun, ev: ChamberEvidence[], victim: string, faultAt: number, label: string): void {
  const c = run.cluster;
  const a = analyseTakeover(c.maps, ev, [victim], faultAt, run.suite.weights);
  const det = detectionSeconds(c.settings);
  run.measure({ name: `${label}: detection (fault -> map without the victim)`, value: a.detectionMs === null ? null : a.detectionMs / 1000, unit: 's', target: `~${det} s (3 missed heartbeats) + polls`, verdict: a.detectionMs === null ? 'missed' : 'info', note: a.map ? `map v${a.map.version} (${a.map.trigger})` : 'no map without the victim was seen' });
  run.measure({ name: `${label}: fault -> orphaned chambers running again`, value: a.resumeMs === null ? null : a.resumeMs / 1000, unit: 's', target: `<= ${det + 2} s`, verdict: a.resumeMs === null ? 'missed' : a.resumeMs / 1000 <= det + 2 ? 'met' : 'missed', note: `${a.orphaned.length} orphaned chambers` });
  const same = a.moved.length === a.orphaned.length && a.moved.every((x, i) => x === a.orphaned[i]);
  run.measure({ name: `${label}: chambers moved by the crash map`, value: a.moved.length, unit: 'count', target: `exactly the ${a.orphaned.length} orphaned`, verdict: same ? 'met' : 'missed' });
  if (a.resumeMs !== null) run.mark(faultAt + a.resumeMs, 'every orphaned chamber with waiting runs running again', `${a.orphaned.length} chambers`);
  const stale = ev
    .filter((ch) => a.orphaned.includes(ch.key))
    .flatMap((ch) => ch.committed.filter((r) => a.map !== null && r.committedAt > a.map.seenAt && mapVersionOfEpoch(r.epoch) < a.map.version));
  run.measure({ name: `${label}: commits under the cut-off owner's epoch after the takeover`, value: stale.length, unit: 'count', target: '0', verdict: stale.length === 0 ? 'met' : 'missed' });
}

/**
 * A defender partitioned from NATS (not frozen: it keeps running and keeps its store) through a TCP
 * proxy between it and nats-server: `cut` resets its connection and refuses reconnects, `blackhole`
 * keeps the connection open and drops every byte both ways. Held for 4x the detection time, then
 * healed. Its chambers must move, its late store writes be fenced, nothing lost or doubled, and once
 * healed it must rejoin. The proxied defender joins at the start and leaves cleanly at the end.
 */
export async function partitionedDefender(suite: Suite, mode: 'cut' | 'blackhole'): Promise<ScenarioOutcome> {
  const c = suite.cluster;
  const det = detectionSeconds(c.settings);
  const run = new ScenarioRun(
    suite,
    mode === 'cut' ? 'defender-partitioned' : 'defender-blackholed',
    mode === 'cut' ? 'Defender partitioned from NATS (connection reset, reconnects refused), then healed' : 'Defender partitioned from NATS (connection open, every byte dropped), then healed',
    `A defender talks to NATS through a TCP proxy. The proxy ${mode === 'cut' ? 'resets its connection and refuses every reconnect' : 'keeps its connection open but drops every byte both ways (no reset, no error: only its pings and request timeouts tell)'} for 4x the detection time (${4 * det} s) while the process keeps running with its store. It must be judged crashed, its chambers taken over, its late store writes fenced and nothing lost or doubled; once the proxy heals it must rejoin. It then leaves cleanly (SIGTERM).`,
  );
  const nats = new URL(c.natsUrls[0] ?? '');
  const proxy = await startTcpProxy({ target: { host: nats.hostname, port: Number(nats.port) } });
  const pod = newPod('via-proxy');
  let id = '';
  let faultAt = 0;
  try {
    await c.startDefender(pod, { NATS_SERVERS: `nats://${proxy.host}:${proxy.port}` });
    await c.waitStable(120_000);
    const first = procOfPod(suite, pod);
    if (!first) throw new Error(`${pod} is not running`);
    id = c.idOf(first);
    await sleep(1500);
    const fencedBefore = podCount(suite, pod, fencedLogLines);
    faultAt = Date.now();
    if (mode === 'cut') proxy.cut();
    else proxy.blackhole();
    c.note(`nats-${mode}`, first.name, { defenderId: id, via: 'tcp proxy' }, faultAt);
    await c.waitForMap('the crash map without the partitioned defender', (m) => !(id in m.map.defenderInfo), 60_000);
    await sleep(Math.max(0, faultAt + 4 * det * 1000 - Date.now()));
    const during = proxy.stats();
    const healAt = Date.now();
    proxy.heal();
    c.note('nats-heal', first.name, { defenderId: id, refused: during.refused, droppedBytes: during.droppedUp + during.droppedDown }, healAt);
    run.measure({ name: 'partitioned for', value: (healAt - faultAt) / 1000, unit: 's', target: `> detection (${det} s)`, verdict: healAt - faultAt > det * 1000 ? 'met' : 'missed', note: `${during.refused} reconnects refused, ${during.droppedUp + during.droppedDown} bytes dropped` });
    await waitFor('the healed defender back in a map', async () => id in (c.latest()?.map.defenderInfo ?? {}), 90_000, 50).then(
      () => run.measure({ name: 'heal -> back in a map', value: ((c.maps.find((m) => m.seenAt >= healAt && id in m.map.defenderInfo)?.seenAt ?? Date.now()) - healAt) / 1000, unit: 's', verdict: 'info' }),
      (err: unknown) => run.note(`the healed defender did not rejoin: ${(err as Error).message}`),
    );
    await c.waitStable(60_000).catch((err: unknown) => run.note(`the cluster did not settle: ${(err as Error).message}`));
    await sleep(1000);
    const late = podCount(suite, pod, fencedLogLines) - fencedBefore;
    run.measure({ name: 'late store writes of the partitioned defender fenced', value: late, unit: 'count', verdict: 'info', note: 'a write it had in flight when cut off, refused by the owner epoch (0: it had none)' });
    const last = procOfPod(suite, pod);
    if (last) await c.terminate(last);
    await c.waitStable(60_000).catch((err: unknown) => run.note(`the cluster did not settle after the proxied defender left: ${(err as Error).message}`));
  } finally {
    await proxy.close();
  }
  return run.finish((ev) => takeoverChecks(run, ev, id, faultAt, mode));
}

/** A replayed notification and what the store says about its run. */
interface Replay {
  readonly chamber: string;
  readonly runId: string;
  readonly originalSeq: number;
  readonly replaySeq: number;
  readonly ageSeconds: number;
  readonly storedAsNew: boolean;
}

/**
 * An outage longer than the stream's duplicate window (shortened to
 * {@link SHORT_DUPLICATE_WINDOW_SECONDS} s for the suite): the defender with the most chambers is
 * frozen beyond detection and beyond the window, its chambers move, and meanwhile notifications of
 * runs it had applied are published again with their original message ids, older than the window
 * (a fab re-sending after an outage): the stream stores them as new messages. The new owners must
 * skip them (the store's per-chamber applied run ids, ADR 0006): applied at most once, at their
 * first sequence; the mark moves past the replay. The outbox must not publish an alarm twice
 * although the window no longer deduplicates (checked by the alarms-once invariant). The replayed
 * messages are deleted from the stream once applied, so the stream is compared with the publisher's
 * runs as in every scenario.
 */
export async function outagePastDuplicateWindow(suite: Suite, replays = 8): Promise<ScenarioOutcome> {
  const c = suite.cluster;
  const det = detectionSeconds(c.settings);
  const run = new ScenarioRun(
    suite,
    'outage-past-duplicate-window',
    'Outage longer than the stream duplicate window; notifications replayed past it',
    `The defenders run with a stream duplicate window of ${SHORT_DUPLICATE_WINDOW_SECONDS} s (production 1 h). The defender with the most chambers is frozen (SIGSTOP) for longer than detection and the window; meanwhile ${replays} notifications of runs it applied, older than the window, are published again with their original message ids. The stream stores them as new messages; the new owners must apply none of them again, the mark must pass them, no alarm may be published twice, and the frozen owner's late writes must be fenced.`,
  );
  await sleep(1500);
  const jsm = await jetstreamManager(c.nc);
  const js = jetstream(c.nc);
  const windowSeconds = (await jsm.streams.info(STREAMS.notifications)).config.duplicate_window / 1e9;
  run.measure({ name: 'duplicate window of dc-notifications', value: windowSeconds, unit: 's', target: `${SHORT_DUPLICATE_WINDOW_SECONDS} s (set by the defenders)`, verdict: windowSeconds === SHORT_DUPLICATE_WINDOW_SECONDS ? 'met' : 'missed' });

  const m = c.current().map;
  const owned = (id: string) => Object.entries(m.assignments).filter(([, o]) => o === id).map(([k]) => k);
  const victims = c
    .liveDefenders()
    .filter((p) => !p.frozen && c.defenderIdOf(p) !== undefined)
    .map((p) => ({ proc: p, id: c.idOf(p) }))
    .sort((a, b) => owned(b.id).length - owned(a.id).length);
  const v = victims[0];
  if (!v) throw new Error('no live defender to freeze');
  const fencedBefore = fencedLogLines(v.proc);
  const faultAt = c.freeze(v.proc);
  await c.waitForMap('the crash map for the frozen defender', (x) => !(v.id in x.map.defenderInfo), 60_000);
  // Frozen past the window too: everything it published is older than the window when replayed.
  await sleep(Math.max(0, faultAt + Math.max(4 * det, SHORT_DUPLICATE_WINDOW_SECONDS + 2) * 1000 - Date.now()));

  const store = await SqliteStore.open({ filename: c.sqlitePath, busyTimeoutMs: 20_000 });
  const done: Replay[] = [];
  try {
    const published = suite.publisher.published();
    const cutoff = Date.now() - (SHORT_DUPLICATE_WINDOW_SECONDS + 1) * 1000;
    for (const key of owned(v.id)) {
      if (done.length >= replays) break;
      const [toolId, chamberId] = key.split(':') as [string, string];
      const candidates = (published.get(key) ?? []).filter((p) => p.publishedAt < cutoff);
      // The newest run applied before the freeze: the most likely to be confused with a new one.
      for (const p of [...candidates].reverse()) {
        if ((await store.chamberState.appliedRun({ toolId, chamberId }, p.runId)) !== p.seq) continue;
        const original = await jsm.streams.getMessage(STREAMS.notifications, { seq: p.seq });
        if (!original) continue;
        const ack = await publishStored(js, original.subject, original.data, p.runId, { timeout: 5000 });
        done.push({ chamber: key, runId: p.runId, originalSeq: p.seq, replaySeq: ack.seq, ageSeconds: (Date.now() - p.publishedAt) / 1000, storedAsNew: !ack.duplicate });
        c.note('notification replayed', key, { runId: p.runId, originalSeq: p.seq, replaySeq: ack.seq, duplicate: ack.duplicate });
        break;
      }
    }
    const thawAt = c.thaw(v.proc);
    run.measure({ name: 'frozen for', value: (thawAt - faultAt) / 1000, unit: 's', target: `> detection (${det} s) and > the window (${SHORT_DUPLICATE_WINDOW_SECONDS} s)`, verdict: 'info' });
    const stored = done.filter((r) => r.storedAsNew);
    run.measure({ name: 'replays older than the window stored by the stream as new messages', value: stored.length, unit: 'count', target: `${done.length} (every replay: the window no longer deduplicates)`, verdict: done.length > 0 && stored.length === done.length ? 'met' : 'missed', note: done.map((r) => `${r.chamber} ${r.runId} seq ${r.originalSeq} -> ${r.replaySeq} (${r.ageSeconds.toFixed(1)} s old)`).join('; ') });

    // Each replay is read by the chamber's new owner: the mark passes it, the run stays applied once.
    await waitFor('every replay read by its chamber', async () => {
      for (const r of stored) {
        const [toolId, chamberId] = r.chamber.split(':') as [string, string];
        if (((await store.chamberState.get({ toolId, chamberId }))?.highWaterMark ?? 0) < r.replaySeq) return false;
      }
      return true;
    }, 60_000, 200).catch((err: unknown) => run.note(`not every replay was read: ${(err as Error).message}`));
    const appliedAgain: string[] = [];
    for (const r of stored) {
      const [toolId, chamberId] = r.chamber.split(':') as [string, string];
      const at = await store.chamberState.appliedRun({ toolId, chamberId }, r.runId);
      const rowAtReplay = await store.uchart.run({ toolId, chamberId }, r.replaySeq);
      const hwm = (await store.chamberState.get({ toolId, chamberId }))?.highWaterMark ?? 0;
      if (at !== r.originalSeq || rowAtReplay !== undefined || hwm < r.replaySeq) {
        appliedAgain.push(`${r.chamber} ${r.runId}: applied at ${at ?? 'nothing'} (first ${r.originalSeq}), a run row at the replay's seq ${r.replaySeq}: ${rowAtReplay ? rowAtReplay.runId : 'none'}, mark ${hwm}`);
      }
    }
    run.measure({ name: 'replayed runs applied again (or not passed by the mark)', value: appliedAgain.length, unit: 'count', target: '0', verdict: appliedAgain.length === 0 ? 'met' : 'missed', note: appliedAgain.join('; ') });

    // The replays are the test's own messages: once read, they leave the stream (the publisher's
    // runs are what the stream is compared with), after the chamber has a newer run of its own.
    await waitFor('a newer run published on every replayed chamber', async () => stored.every((r) => (suite.publisher.published().get(r.chamber)?.at(-1)?.seq ?? 0) > r.replaySeq), 60_000, 200).catch((err: unknown) =>
      run.note(`a replayed chamber had no newer run: ${(err as Error).message}`),
    );
    for (const r of stored) await jsm.streams.deleteMessage(STREAMS.notifications, r.replaySeq, false);
    await waitFor('the thawed defender back in a map', async () => v.id in (c.latest()?.map.defenderInfo ?? {}) || !isAlive(v.proc), 60_000, 50).catch((err: unknown) => run.note(`the thawed defender did not rejoin: ${(err as Error).message}`));
    await c.waitStable(60_000).catch((err: unknown) => run.note(`the cluster did not settle: ${(err as Error).message}`));
    await sleep(1000);
    run.measure({ name: 'late writes of the thawed defender fenced by the store', value: fencedLogLines(v.proc) - fencedBefore, unit: 'count', verdict: 'info' });
    const outcome = await run.finish((ev) => takeoverChecks(run, ev, v.id, faultAt, 'freeze'));
    if (stored.length === 0 || appliedAgain.length > 0) {
      throw new Error(`outage-past-duplicate-window: ${stored.length === 0 ? 'no replay was stored as a new message' : `replays applied again: ${appliedAgain.join('; ')}`}`);
    }
    return outcome;
  } finally {
    await store.close();
  }
}
