import { waitFor } from '@defender/infra-harness';
import { analyseTakeover, ChamberEvidence, chambersOf, mapVersionOfEpoch, percentile, TakeoverAnalysis, takeoverWithout } from './analysis';
import { isAlive, MapRecord, Proc } from './cluster';
import { fencedLogLines, logLines, waitCaughtUp } from './evidence';
import { ScenarioOutcome, ScenarioRun, sleep, Suite } from './runner';
import { DEFAULT_SETTINGS, detectionSeconds, failoverBoundSeconds, targetsFor, type ClusterSettings } from './settings';

type Analyse = (ev: ChamberEvidence[]) => void;

let podCounter = 0;
/** A fresh pod UID (a new Kubernetes pod). */
export const newPod = (prefix = 'pod'): string => `${prefix}-${++podCounter}`;

const s3 = (ms: number | null) => (ms === null ? null : ms / 1000);

/** Factor from the shortened heartbeat to the default one (interval-bound parts of a time scale with it). */
function hbScale(run: ScenarioRun): number {
  return DEFAULT_SETTINGS.heartbeatSeconds / run.cluster.settings.heartbeatSeconds;
}

/** Starts `n` defenders and waits until a map covers them and each applied it (no report). */
export async function bringUp(suite: Suite, n: number): Promise<MapRecord> {
  const c = suite.cluster;
  await Promise.all(Array.from({ length: n }, () => c.startDefender(newPod())));
  suite.publisher.resume();
  // A hang guard, not a deadline: starting the defenders' processes is CPU-bound, and 120 s ran out in
  // a fresh-clone CI where the machine ran at load 30 (two hogs, the suite and other work) at the time.
  const m = await c.waitStable(300_000);
  suite.publisher.pause();
  // The runs published so far (every chamber's warm-up) are processed before the first scenario: at
  // a suite's own size that takes seconds, at 20,000 chambers (120,000 warm-up runs) many minutes, and
  // a scenario started on that backlog measured the backlog, not its fault. A hang guard of 20 ms
  // per run (50 runs/s; the cluster does more).
  const behind = await waitCaughtUp(c, suite.publisher, Math.max(60_000, suite.publisher.total() * 20));
  if (behind.length > 0) throw new Error(`bring-up: ${behind.length} chambers did not process their published runs (${behind.slice(0, 3).join(', ')})`);
  return m;
}

/** The leader reads the heartbeats 4 times per interval (`LIVENESS_POLLS_PER_INTERVAL`, libs/controller). */
function pollSeconds(s: ClusterSettings): number {
  return s.heartbeatSeconds / 4;
}

/** Adds the measures of a crash takeover (detection, resume, movement) and marks the timeline. */
function takeoverMeasures(run: ScenarioRun, a: TakeoverAnalysis, label: string, opts: { orphansOnly: boolean }): void {
  const s = run.cluster.settings;
  const t = targetsFor(s);
  const k = hbScale(run);
  run.measure({
    name: `${label}: detection (fault -> map without the victim)`,
    value: s3(a.detectionMs),
    unit: 's',
    target: `3 missed heartbeats (${detectionSeconds(s)} s) + up to two leader polls (${2 * pollSeconds(s)} s: seeing the last heartbeat late, then the threshold)`,
    verdict: a.detectionMs === null ? 'missed' : a.detectionMs / 1000 <= detectionSeconds(s) + 2 * pollSeconds(s) + 0.5 ? 'met' : 'missed',
    atDefaults: a.detectionMs === null ? '' : `~${(6 + Math.max(0, a.detectionMs / 1000 - detectionSeconds(s)) * k).toFixed(1)} s (6 s + the poll/phase part x${k})`,
    note: a.map ? `map v${a.map.version} (${a.map.trigger})` : 'no map without the victim was seen',
  });
  const waiting = a.resumes.filter((r) => r.waiting && r.firstCommitAt !== null).length;
  const idle = a.resumes.filter((r) => !r.waiting).length;
  const estimate =
    a.resumeMs !== null && a.detectionMs !== null
      ? (a.resumeMs - a.detectionMs) / 1000 + 6 + Math.max(0, a.detectionMs / 1000 - detectionSeconds(s)) * k
      : null;
  run.measure({
    name: `${label}: crash -> chambers running again`,
    value: s3(a.resumeMs),
    unit: 's',
    target: `<= ${t.crashResumeSeconds} s (detection ${detectionSeconds(s)} s + 2 s)`,
    verdict: a.resumeMs === null ? 'missed' : a.resumeMs / 1000 <= t.crashResumeSeconds ? 'met' : 'missed',
    atDefaults: `target <= 8 s${estimate !== null ? `; this run scaled: ~${estimate.toFixed(1)} s` : ''}`,
    note: `max over the ${waiting} orphaned chambers that had a run waiting (p50 ${a.resumeP50Ms === null ? 'n/a' : `${(a.resumeP50Ms / 1000).toFixed(2)} s`}); ${idle} had nothing waiting at the takeover`,
  });
  const same = a.moved.length === a.orphaned.length && a.moved.every((x, i) => x === a.orphaned[i]);
  run.measure({
    name: `${label}: chambers moved by the crash map`,
    value: a.moved.length,
    unit: 'count',
    target: opts.orphansOnly ? `exactly the ${a.orphaned.length} orphaned (weight ${a.orphanedWeight.toLocaleString('en-US')})` : `the orphaned ${a.orphaned.length} plus the pending rebalance`,
    verdict: opts.orphansOnly ? (same ? 'met' : 'missed') : 'info',
    note: `moved weight ${a.movedWeight.toLocaleString('en-US')}, orphaned weight ${a.orphanedWeight.toLocaleString('en-US')}`,
  });
  const first = a.resumes
    .flatMap((r) => (r.firstCommitAt !== null ? [{ ...r, at: r.firstCommitAt }] : []))
    .sort((x, y) => x.at - y.at)[0];
  if (first) run.mark(first.at, 'first run processed by a new owner', first.chamber, `new owner ${first.newOwner}`);
  if (a.resumeMs !== null) run.mark(a.faultAt + a.resumeMs, 'every orphaned chamber with waiting runs running again', `${waiting} chambers`);
}

/** Moved weight of a planned-scale map against the floor. */
function movementMeasure(run: ScenarioRun, m: MapRecord | undefined, label: string): void {
  if (!m) {
    run.measure({ name: `${label}: moved weight vs floor`, value: null, unit: 'ratio', target: '<= 1.10 x floor', verdict: 'missed', note: 'no map' });
    return;
  }
  const st = m.map.statistics;
  const ratio = st.floorFraction > 0 ? st.movedWeightFraction / st.floorFraction : null;
  run.measure({
    name: `${label}: moved weight / floor`,
    value: ratio,
    unit: 'ratio',
    target: '<= 1.10',
    verdict: ratio === null ? 'info' : ratio <= 1.1 ? 'met' : 'missed',
    atDefaults: 'independent of intervals',
    note: `map v${m.map.version} (${m.map.trigger}): moved ${(100 * st.movedWeightFraction).toFixed(1)} % of the weight (${st.chambersMoved} chambers), floor ${(100 * st.floorFraction).toFixed(1)} %`,
  });
}

/** Largest processing gap (ms) of `chambers` over runs published after `from`. */
function stallOf(ev: ChamberEvidence[], chambers: readonly string[], from: number): { max: number; chamber: string | null } {
  const set = new Set(chambers);
  let max = 0;
  let chamber: string | null = null;
  for (const c of ev.filter((x) => set.has(x.key))) {
    const commits = new Map(c.committed.map((r) => [r.seq, r]));
    let prev = Number.NEGATIVE_INFINITY;
    for (const p of [...c.published].sort((a, b) => a.seq - b.seq)) {
      const r = commits.get(p.seq);
      if (!r) continue;
      if (p.publishedAt >= from) {
        const stall = r.committedAt - Math.max(p.publishedAt, prev);
        if (stall > max) {
          max = stall;
          chamber = c.key;
        }
      }
      prev = Math.max(prev, r.committedAt);
    }
  }
  return { max, chamber };
}

/** Starts a replacement pod for a crashed one and waits for the cluster to settle; measures the rejoin. */
async function replace(run: ScenarioRun, victimIds: readonly string[], label: string): Promise<void> {
  const c = run.cluster;
  const before = c.maps.length;
  const pods = await Promise.all(victimIds.map(() => c.startDefender(newPod())));
  await waitFor('replacements heartbeating', async () => pods.every((p) => c.defenderIdOf(p) !== undefined), 60_000 * c.waitScale, 50);
  const ids = pods.map((p) => c.idOf(p)).sort();
  const m = await c.waitStable(60_000);
  const rejoin = c.maps.slice(before);
  run.measure({
    name: `${label}: replacement pods reclaim the crashed stable IDs`,
    value: ids.filter((id) => victimIds.includes(id)).length,
    unit: 'count',
    target: `${victimIds.length} (${[...victimIds].sort().join(', ')})`,
    verdict: ids.join() === [...victimIds].sort().join() ? 'met' : 'missed',
    note: `claimed ${ids.join(', ')}; ${rejoin.length} map(s) for the rejoin`,
  });
  movementMeasure(run, rejoin.find((x) => x.map.trigger === 'planned_scale') ?? m, `${label}: rejoin`);
}

const victimOf = (run: ScenarioRun, exclude: readonly string[] = []): { proc: Proc; id: string } => {
  const c = run.cluster;
  const m = c.current().map;
  const live = c
    .liveDefenders()
    .filter((p) => !p.frozen)
    .flatMap((p) => {
      const id = c.defenderIdOf(p);
      return id !== undefined && !exclude.includes(id) ? [{ proc: p, id }] : [];
    });
  // The defender with the most chambers: the biggest takeover.
  live.sort((a, b) => chambersOf(m, b.id).length - chambersOf(m, a.id).length);
  const v = live[0];
  if (!v) throw new Error('no live defender to fail');
  return v;
};

// ---------------------------------------------------------------------------------------------
// Scenarios
// ---------------------------------------------------------------------------------------------

/** Seed 002 scenario 1: defenders joining a fresh cluster -> one map after the cold-start window. */
export async function coldStart(suite: Suite, defenders: number): Promise<ScenarioOutcome> {
  const c = suite.cluster;
  const s = c.settings;
  const run = new ScenarioRun(
    suite,
    'cold-start',
    `Cold start: ${defenders} defenders joining`,
    `Seed 002 scenario 1 (cold start): defenders join a cluster with no map; the controller batches the joins in the cold-start window and publishes one map. Runs published before any defender existed wait in the stream.`,
  );
  const started = Date.now();
  await Promise.all(Array.from({ length: defenders }, () => c.startDefender(newPod())));
  const first = await c.waitForMap('the first map', () => true, 120_000);
  await c.waitStable(60_000);
  await sleep((s.coldStartWindowSeconds + s.scaleWindowSeconds + 1) * 1000);
  const maps = run.maps();
  const joins = c.members.filter((m) => m.kind === 'joined' && m.at >= started && m.at <= first.seenAt);
  const lastJoin = joins.length ? Math.max(...joins.map((j) => j.at)) : null;
  const firstJoin = joins.length ? Math.min(...joins.map((j) => j.at)) : null;
  const t = targetsFor(s);
  run.measure({ name: 'maps published by the cold start', value: maps.length, unit: 'count', target: '1', verdict: maps.length === 1 ? 'met' : 'missed', atDefaults: '1', note: `first map v${first.map.version}: trigger ${first.map.trigger}, lifecycle ${first.map.lifecycleState}, ${first.map.defenderCount} defenders` });
  run.measure({
    name: 'last join -> map',
    value: lastJoin === null ? null : (first.seenAt - lastJoin) / 1000,
    unit: 's',
    target: `<= ${t.coldStartSeconds} s (window ${s.coldStartWindowSeconds} s + 2 s)`,
    verdict: lastJoin === null ? 'missed' : (first.seenAt - lastJoin) / 1000 <= t.coldStartSeconds ? 'met' : 'missed',
    atDefaults: `<= 32 s (window 30 s + 2 s); the wait is the window, so ~${lastJoin === null ? '?' : (30 + Math.max(0, (first.seenAt - lastJoin) / 1000 - s.coldStartWindowSeconds) * hbScale(run)).toFixed(1)} s`,
    note: `${joins.length} defenders joined over ${firstJoin === null || lastJoin === null ? '?' : ((lastJoin - firstJoin) / 1000).toFixed(2)} s`,
  });
  run.measure({ name: 'first process start -> map', value: (first.seenAt - started) / 1000, unit: 's', verdict: 'info', note: 'includes the defenders booting on 2 loaded cores' });
  const st = first.map.statistics;
  // The bound a single chamber forces, as a share: the heaviest chamber against an average
  // defender's samples. The map's weights are the controller's load (ADR 0008: run rate x (fixed
  // cost + cost per sample x samples)), in other units; a chamber's share of that load is never
  // above its share of samples, so this allowance holds for it too.
  const samples = [...suite.weights.values()];
  const bound = Math.max(1.05, Math.max(...samples) / (samples.reduce((a, b) => a + b, 0) / first.map.defenderCount));
  const balance = st.maxWeightPerDefender / st.avgWeightPerDefender;
  run.measure({
    name: 'balance: max / avg weight per defender',
    value: balance,
    unit: 'ratio',
    target: `<= ${bound.toFixed(3)} (1.05, or the heaviest chamber / an average defender's share)`,
    verdict: balance <= bound + 1e-9 ? 'met' : 'missed',
    atDefaults: 'independent of intervals',
  });
  return run.finish((ev) => {
    const before = ev.flatMap((ch) => ch.published.filter((p) => p.publishedAt < first.seenAt).map((p) => ({ ch, p })));
    const done = before.map(({ ch, p }) => ch.committed.find((r) => r.seq === p.seq)?.committedAt).filter((x): x is number => x !== undefined);
    const firstCommit = Math.min(...ev.flatMap((ch) => ch.committed.map((r) => r.committedAt)));
    if (Number.isFinite(firstCommit)) run.mark(firstCommit, 'first run processed');
    run.measure({ name: 'map -> first run processed', value: Number.isFinite(firstCommit) ? (firstCommit - first.seenAt) / 1000 : null, unit: 's', verdict: 'info' });
    run.measure({
      name: 'map -> backlog of runs published before the map processed',
      value: done.length ? (Math.max(...done) - first.seenAt) / 1000 : null,
      unit: 's',
      verdict: 'info',
      note: `${before.length} runs were waiting in the stream`,
    });
  });
}

/** Seed 002 scenario 2: planned scale-up -> one map after the scale window, movement near the floor. */
export async function plannedScaleUp(suite: Suite, add: number): Promise<ScenarioOutcome> {
  const c = suite.cluster;
  const s = c.settings;
  const n = c.liveDefenders().length;
  const run = new ScenarioRun(suite, 'planned-scale-up', `Planned scale up ${n} -> ${n + add}`, `Seed 002 scenario 2 (planned scale): ${add} defenders join a stable cluster; one map after the ${s.scaleWindowSeconds} s scale window, moving close to the floor (M-N)/M of the weight.`);
  const before = c.current();
  const started = Date.now();
  await Promise.all(Array.from({ length: add }, () => c.startDefender(newPod())));
  const m = await c.waitForMap(`a map with ${n + add} defenders`, (x) => x.map.defenderCount === n + add, 60_000);
  await c.waitStable(60_000);
  await sleep((s.scaleWindowSeconds + 1) * 1000);
  const maps = run.maps();
  const joins = c.members.filter((x) => x.kind === 'joined' && x.at >= started && x.at <= m.seenAt);
  const lastJoin = joins.length ? Math.max(...joins.map((j) => j.at)) : null;
  run.measure({ name: 'maps published', value: maps.length, unit: 'count', target: '1', verdict: maps.length === 1 ? 'met' : 'missed', note: maps.map((x) => `v${x.map.version} ${x.map.trigger}`).join(', ') });
  run.measure({
    name: 'last join -> map',
    value: lastJoin === null ? null : (m.seenAt - lastJoin) / 1000,
    unit: 's',
    target: `~ scale window ${s.scaleWindowSeconds} s + one tick`,
    verdict: 'info',
    atDefaults: '~10 s (scale window) + one 2 s tick',
  });
  movementMeasure(run, m, 'scale up');
  const moved = Object.keys(m.map.assignments).filter((k) => before.map.assignments[k] !== m.map.assignments[k]);
  return run.finish((ev) => {
    const g = stallOf(ev, moved, started);
    run.measure({ name: 'largest processing gap of a moved chamber (handoff)', value: g.max / 1000, unit: 's', verdict: 'info', note: g.chamber ?? '' });
  });
}

/** Seed 002 planned scale-down: graceful leaves -> one map, leavers drain and exit 0. */
export async function plannedScaleDown(suite: Suite, remove: number): Promise<ScenarioOutcome> {
  const c = suite.cluster;
  const s = c.settings;
  const n = c.liveDefenders().length;
  const run = new ScenarioRun(suite, 'planned-scale-down', `Planned scale down ${n} -> ${n - remove}`, `Seed 002 planned scale-down: ${remove} defenders get SIGTERM (drain, release the stable ID, remove the heartbeat); one map after the scale window; movement close to the floor.`);
  const before = c.current();
  const leavers = [...c.liveDefenders()].sort((a, b) => b.startedAt - a.startedAt).slice(0, remove);
  const started = Date.now();
  const exits = await Promise.all(leavers.map((p) => c.terminate(p)));
  const m = await c.waitForMap(`a map with ${n - remove} defenders`, (x) => x.map.defenderCount === n - remove, 60_000);
  await c.waitStable(60_000);
  await sleep((s.scaleWindowSeconds + 1) * 1000);
  const maps = run.maps();
  run.measure({ name: 'maps published', value: maps.length, unit: 'count', target: '1', verdict: maps.length === 1 ? 'met' : 'missed', note: maps.map((x) => `v${x.map.version} ${x.map.trigger}`).join(', ') });
  run.measure({ name: 'leavers exited cleanly (code 0)', value: exits.filter((e) => e.code === 0).length, unit: 'count', target: String(remove), verdict: exits.every((e) => e.code === 0) ? 'met' : 'missed', note: exits.map((e) => `${e.code ?? e.signal}`).join(', ') });
  run.measure({ name: 'SIGTERM -> map', value: (m.seenAt - started) / 1000, unit: 's', target: `~ drain + scale window ${s.scaleWindowSeconds} s`, verdict: 'info' });
  movementMeasure(run, m, 'scale down');
  const moved = Object.keys(m.map.assignments).filter((k) => before.map.assignments[k] !== m.map.assignments[k]);
  return run.finish((ev) => {
    const g = stallOf(ev, moved, started);
    run.measure({ name: 'largest processing gap of a moved chamber (handoff)', value: g.max / 1000, unit: 's', verdict: 'info', note: `${g.chamber ?? ''}: the leaver's chambers wait for the map` });
  });
}

/**
 * Seed 002 rolling update: one pod at a time, old first (k8s maxSurge 0, maxUnavailable 1); the
 * replacement is created as soon as the old pod terminates and the next pod goes once the new one
 * is ready and the (scaled) readiness delay has passed. Same stable IDs -> no map, 0 chambers moved.
 */
export async function rollingUpdate(suite: Suite): Promise<ScenarioOutcome> {
  const c = suite.cluster;
  const run = new ScenarioRun(suite, 'rolling-update', `Rolling update of ${c.liveDefenders().length} defenders`, 'Seed 002 rolling update: every defender replaced one at a time (SIGTERM, then a new pod with a new UID); each replacement reclaims the same stable ID, so the controller sees leave+join of the same IDs and publishes nothing: 0 chambers move.');
  const before = c.current();
  const idsBefore = c.liveDefenders().map((p) => c.defenderIdOf(p)).sort();
  // k8s readinessProbe initialDelaySeconds 10 at heartbeat 2 s, scaled to these intervals.
  const readinessDelayMs = (10 / hbScale(run)) * 1000;
  const started = Date.now();
  const restarts: number[] = [];
  const freshPods: Proc[] = [];
  for (const old of [...c.liveDefenders()]) {
    const id = c.defenderIdOf(old);
    const t0 = Date.now();
    const exited = c.terminate(old);
    const fresh = await c.startDefender(newPod());
    freshPods.push(fresh);
    await exited;
    await waitFor(`${fresh.name} ready`, async () => (await fetch(`${fresh.url}/health/ready`).then((r) => r.status).catch(() => 0)) === 200, 60_000, 50);
    restarts.push(Date.now() - t0);
    if (c.defenderIdOf(fresh) !== id) run.note(`${fresh.name} claimed ${c.defenderIdOf(fresh)}, its predecessor held ${id}`);
    const wait = fresh.startedAt + readinessDelayMs - Date.now();
    if (wait > 0) await sleep(wait);
  }
  await sleep((c.settings.scaleWindowSeconds + 1) * 1000);
  const maps = run.maps();
  const idsAfter = c.liveDefenders().map((p) => c.defenderIdOf(p)).sort();
  const moved = Object.keys(before.map.assignments).filter((k) => c.current().map.assignments[k] !== before.map.assignments[k]);
  run.measure({ name: 'maps published', value: maps.length, unit: 'count', target: '0', verdict: maps.length === 0 ? 'met' : 'missed', atDefaults: '0', note: maps.map((x) => `v${x.map.version} ${x.map.trigger}`).join(', ') });
  run.measure({ name: 'chambers moved', value: moved.length, unit: 'count', target: '0', verdict: moved.length === 0 ? 'met' : 'missed', atDefaults: '0' });
  run.measure({ name: 'stable IDs kept', value: idsAfter.filter((x, i) => x === idsBefore[i]).length, unit: 'count', target: String(idsBefore.length), verdict: idsAfter.join() === idsBefore.join() ? 'met' : 'missed' });
  run.measure({ name: 'per pod: SIGTERM -> replacement ready', value: (percentile(restarts, 50) ?? 0) / 1000, unit: 's', verdict: 'info', note: `p50; max ${(Math.max(...restarts) / 1000).toFixed(2)} s` });
  const fenced = freshPods.reduce((a, p) => a + fencedLogLines(p), 0);
  run.measure({ name: 'new pods fenced by their predecessors (same map)', value: fenced, unit: 'count', target: '0', verdict: fenced === 0 ? 'met' : 'missed', note: 'a new pod that reclaims an ID must own its chambers under the map it finds' });
  return run.finish((ev) => {
    const g = stallOf(ev, Object.keys(before.map.assignments), started);
    run.measure({ name: 'largest processing gap (a pod restarting)', value: g.max / 1000, unit: 's', verdict: 'info', note: `${g.chamber ?? ''}: its chambers wait while their defender restarts` });
  });
}

/** Seed 003: one defender SIGKILLed -> its chambers move at once, nothing else; the replacement reclaims its ID. */
export async function singleCrash(suite: Suite): Promise<ScenarioOutcome> {
  const c = suite.cluster;
  const run = new ScenarioRun(suite, 'crash-single', 'Single defender crash (SIGKILL)', 'Seed 003 (crash recovery): a defender is SIGKILLed; after 3 missed heartbeats the controller reassigns exactly its chambers (emergency, no window); the new owners resume from the store\'s high-water marks; then the replacement pod reclaims the stable ID and a planned-scale map rebalances.');
  await sleep(1500);
  const v = victimOf(run);
  const faultAt = await c.kill(v.proc);
  await c.waitForMap('the crash map', (m) => !(v.id in m.map.defenderInfo), 30_000);
  await sleep(2000);
  const analyses: Analyse[] = [(ev) => takeoverMeasures(run, analyseTakeover(c.maps, ev, [v.id], faultAt, suite.weights), 'crash', { orphansOnly: true })];
  await replace(run, [v.id], 'crash');
  return run.finish((ev) => analyses.forEach((f) => f(ev)));
}

/** Seed 003 failure scenario 1: several defenders crash at once. */
export async function multiCrash(suite: Suite, k: number): Promise<ScenarioOutcome> {
  const c = suite.cluster;
  const run = new ScenarioRun(suite, 'crash-multiple', `${k} defenders crash at once (SIGKILL)`, `Seed 003 failure scenario 1: ${k} defenders are SIGKILLed at the same moment; their chambers are reassigned (one emergency map, or one per detection tick) and resume; then replacement pods rejoin.`);
  await sleep(1500);
  const victims: { proc: Proc; id: string }[] = [];
  for (let i = 0; i < k; i++) victims.push(victimOf(run, victims.map((x) => x.id)));
  const ids = victims.map((x) => x.id);
  const faultAt = Date.now();
  await Promise.all(victims.map((x) => c.kill(x.proc)));
  await c.waitForMap('the crash map(s)', (m) => ids.every((id) => !(id in m.map.defenderInfo)), 30_000);
  await sleep(2000);
  const crashMaps = run.maps().filter((m) => m.map.trigger === 'crash').length;
  run.measure({ name: 'crash maps published', value: crashMaps, unit: 'count', target: '1 (all victims detected on one tick), at most one per victim', verdict: crashMaps >= 1 && crashMaps <= k ? 'met' : 'missed' });
  const analyses: Analyse[] = [(ev) => takeoverMeasures(run, analyseTakeover(c.maps, ev, ids, faultAt, suite.weights), `${k} crashes`, { orphansOnly: true })];
  await replace(run, ids, `${k} crashes`);
  return run.finish((ev) => analyses.forEach((f) => f(ev)));
}

/** Seed 003 failure scenario 3: a second defender crashes right after the emergency map for the first. */
export async function crashDuringRebalancing(suite: Suite): Promise<ScenarioOutcome> {
  const c = suite.cluster;
  const run = new ScenarioRun(suite, 'crash-during-rebalancing', 'Crash during rebalancing', 'Seed 003 failure scenario 3: defender A crashes; the moment the emergency map for A is published, the defender that received most of A\'s chambers (B) crashes too, in the middle of taking them over. A second emergency map moves B\'s chambers, including those just received.');
  await sleep(1500);
  const a = victimOf(run);
  const faultA = await c.kill(a.proc);
  const mapA = await c.waitForMap('the crash map for A', (m) => !(a.id in m.map.defenderInfo), 30_000);
  const beforeA = c.maps[c.maps.indexOf(mapA) - 1]?.map;
  if (!beforeA) throw new Error('no map before the crash map');
  const gained = new Map<string, number>();
  for (const k of chambersOf(beforeA, a.id)) {
    const o = mapA.map.assignments[k];
    if (o) gained.set(o, (gained.get(o) ?? 0) + 1);
  }
  const bId = [...gained].sort((x, y) => y[1] - x[1])[0]?.[0];
  const b = bId === undefined ? undefined : c.procOf(bId);
  if (bId === undefined || !b) throw new Error(`no live defender received ${a.id}'s chambers`);
  const faultB = await c.kill(b);
  run.measure({ name: 'A\'s map -> B killed', value: (faultB - mapA.seenAt) / 1000, unit: 's', verdict: 'info', note: `B = ${bId}, which received ${gained.get(bId)} of A's chambers` });
  await c.waitForMap('the crash map for B', (m) => !(bId in m.map.defenderInfo), 30_000);
  await sleep(2000);
  // A's chambers given to B wait for B's crash to be detected too: they are measured from B's
  // crash (in B's takeover), and A's takeover is measured over the others.
  const fromA = chambersOf(mapA.map, bId).filter((k) => beforeA.assignments[k] === a.id);
  const analyses: Analyse[] = [
    (ev) => {
      const ta = analyseTakeover(c.maps, ev, [a.id], faultA, suite.weights);
      takeoverMeasures(run, takeoverWithout(ta, fromA), `A (the ${ta.orphaned.length - fromA.length} orphans not caught by B's crash)`, { orphansOnly: true });
    },
    (ev) => {
      const tb = analyseTakeover(c.maps, ev, [bId], faultB, suite.weights);
      takeoverMeasures(run, tb, 'B (incl. chambers just taken from A)', { orphansOnly: true });
      const r = tb.resumes.flatMap((x) => (fromA.includes(x.chamber) && x.waiting && x.firstCommitAt !== null ? [x.firstCommitAt - faultA] : []));
      run.measure({
        name: 'A\'s chambers that went through B: crash A -> running again',
        value: r.length ? Math.max(...r) / 1000 : null,
        unit: 's',
        verdict: 'info',
        note: `${fromA.length} chambers moved twice: two detections in a row (A's, then B's), bounded by 2 x (detection + poll); from B's crash they are in B's line`,
      });
    },
  ];
  await replace(run, [a.id, bId], 'A and B');
  return run.finish((ev) => analyses.forEach((f) => f(ev)));
}

/** Seed 002 scenario 4: a crash during a scaling window aborts the window; emergency takes priority. */
export async function crashDuringScaling(suite: Suite): Promise<ScenarioOutcome> {
  const c = suite.cluster;
  const s = c.settings;
  const run = new ScenarioRun(suite, 'crash-during-scaling', 'Crash during a scaling window', `Seed 002 scenario 4: a defender joins (the controller opens the ${s.scaleWindowSeconds} s scale window); before the window ends an existing defender is SIGKILLed: the crash is handled at once, in one map that also takes in the joiner.`);
  await sleep(1500);
  const n = c.liveDefenders().length;
  const v = victimOf(run);
  const joiner = await c.startDefender(newPod());
  await waitFor('the joiner heartbeating', async () => c.defenderIdOf(joiner) !== undefined, 60_000, 20);
  const joinedAt = Date.now();
  await sleep(s.heartbeatSeconds * 1000);
  const faultAt = await c.kill(v.proc);
  const m = await c.waitForMap('the crash map', (x) => !(v.id in x.map.defenderInfo), 30_000);
  await c.waitStable(60_000);
  await sleep((s.scaleWindowSeconds + 1) * 1000);
  const maps = run.maps();
  const joinerId = c.idOf(joiner);
  run.measure({ name: 'maps published', value: maps.length, unit: 'count', target: '1 (crash, including the joiner)', verdict: maps.length === 1 && m.map.trigger === 'crash' && joinerId in m.map.defenderInfo ? 'met' : 'missed', note: maps.map((x) => `v${x.map.version} ${x.map.trigger} (${x.map.defenderCount} defenders)`).join(', ') });
  run.measure({ name: 'join -> crash map (the window would have ended at)', value: (m.seenAt - joinedAt) / 1000, unit: 's', target: `< ${s.scaleWindowSeconds} s + one tick`, verdict: 'info', note: `${n} - 1 + 1 = ${m.map.defenderCount} defenders in the crash map` });
  movementMeasure(run, m, 'crash + pending join');
  const analyses: Analyse[] = [(ev) => takeoverMeasures(run, analyseTakeover(c.maps, ev, [v.id], faultAt, suite.weights), 'crash', { orphansOnly: false })];
  return run.finish((ev) => analyses.forEach((f) => f(ev)));
}

/** Seed 002 maintenance restart: every defender down, then up -> restart detected, one map after the cold-start window. */
export async function maintenanceRestart(suite: Suite): Promise<ScenarioOutcome> {
  const c = suite.cluster;
  const s = c.settings;
  const n = c.liveDefenders().length;
  const run = new ScenarioRun(suite, 'maintenance-restart', `Maintenance restart: ${n} -> 0 -> ${n} defenders`, `Seed 002 scenario 7 (planned maintenance): all ${n} defenders stop cleanly (the map persists), runs keep arriving, then ${n} new pods start. The controller must detect the restart (map >= 10 defenders, < 5 alive) and batch the rejoin in the cold-start window: one map, not one per join.`);
  const before = c.current();
  await Promise.all(c.liveDefenders().map((p) => c.terminate(p)));
  const downAt = Date.now();
  await sleep(3000);
  const restartAt = Date.now();
  await Promise.all(Array.from({ length: n }, () => c.startDefender(newPod())));
  const m = await c.waitForMap(`a map with ${n} defenders`, (x) => x.map.defenderCount === n && x.map.version > before.map.version, 120_000);
  await c.waitStable(60_000);
  await sleep((s.coldStartWindowSeconds + 1) * 1000);
  const maps = run.maps();
  const joins = c.members.filter((x) => x.kind === 'joined' && x.at >= restartAt && x.at <= m.seenAt);
  const lastJoin = joins.length ? Math.max(...joins.map((j) => j.at)) : null;
  const t = targetsFor(s);
  run.measure({ name: 'maps published by the restart', value: maps.length, unit: 'count', target: '1', verdict: maps.length === 1 ? 'met' : 'missed', note: maps.map((x) => `v${x.map.version} ${x.map.trigger} (${x.map.defenderCount} defenders, lifecycle ${x.map.lifecycleState})`).join(', ') });
  run.measure({ name: 'restart detected (map trigger `restart`, lifecycle post_cold_start)', value: m.map.trigger === 'restart' ? 1 : 0, unit: 'count', target: '1', verdict: m.map.trigger === 'restart' && m.map.lifecycleState === 'post_cold_start' ? 'met' : 'missed', note: `trigger ${m.map.trigger}, lifecycle ${m.map.lifecycleState}` });
  run.measure({
    name: 'last join -> map',
    value: lastJoin === null ? null : (m.seenAt - lastJoin) / 1000,
    unit: 's',
    target: `<= ${t.coldStartSeconds} s (cold-start window ${s.coldStartWindowSeconds} s + 2 s)`,
    verdict: lastJoin !== null && (m.seenAt - lastJoin) / 1000 <= t.coldStartSeconds ? 'met' : 'missed',
    atDefaults: '<= 32 s',
  });
  const moved = Object.keys(m.map.assignments).filter((k) => before.map.assignments[k] !== m.map.assignments[k]);
  run.measure({ name: 'chambers moved (same stable IDs)', value: moved.length, unit: 'count', target: '0', verdict: moved.length === 0 ? 'met' : 'missed' });
  run.measure({ name: 'all down -> restart begins', value: (restartAt - downAt) / 1000, unit: 's', verdict: 'info' });
  return run.finish((ev) => {
    const waiting = ev.flatMap((ch) => ch.published.filter((p) => p.publishedAt >= downAt && p.publishedAt < m.seenAt).map((p) => ch.committed.find((r) => r.seq === p.seq)?.committedAt ?? Number.NaN));
    run.measure({
      name: 'restart map -> runs published while down all processed',
      value: waiting.length ? (Math.max(...waiting) - m.seenAt) / 1000 : null,
      unit: 's',
      verdict: 'info',
      note: `${waiting.length} runs waited in the stream; negative: the new pods reclaimed the same IDs and processed them under the persisted map before the restart map`,
    });
  });
}

/** Leader (controller) SIGKILL: the standby takes over with a higher token, keeps the lifecycle, handles the next crash. */
export async function leaderCrash(suite: Suite): Promise<ScenarioOutcome> {
  const c = suite.cluster;
  const s = c.settings;
  const run = new ScenarioRun(suite, 'leader-crash', 'Controller leader crash (SIGKILL)', 'Seed 003 failure scenario 2 / seed 002 scenario 5: the controller leader is SIGKILLed; the standby wins the election once the lease expires, re-stamps the map with its higher fencing token (trigger takeover, same assignments and lifecycle), and handles the next defender crash.');
  await sleep(1000);
  const leader = await c.waitLeader();
  const before = c.current();
  const faultAt = await c.kill(leader);
  const takeover = await c.waitForMap('the takeover map', (m) => m.map.trigger === 'takeover' && m.seenAt > faultAt, 60_000);
  const failover = (takeover.seenAt - faultAt) / 1000;
  const bound = failoverBoundSeconds(s);
  const skew = s.electionClockSkewMs / 1000;
  const atDefaults = (failover - skew - s.heartbeatSeconds) * (DEFAULT_SETTINGS.electionTtlSeconds / s.electionTtlSeconds) + DEFAULT_SETTINGS.electionClockSkewMs / 1000 + DEFAULT_SETTINGS.heartbeatSeconds;
  run.measure({
    name: 'leader failover (kill -> takeover map)',
    value: failover,
    unit: 's',
    target: `<= ${bound.toFixed(1)} s (TTL ${s.electionTtlSeconds} s + skew ${skew} s + one tick)`,
    verdict: failover <= bound ? 'met' : 'missed',
    atDefaults: `target p99 <= 6 s; TTL ${DEFAULT_SETTINGS.electionTtlSeconds} s gives at most TTL + skew (this run scaled: ~${Math.max(0, atDefaults).toFixed(1)} s), see docs/adr/0003-election-ttl.md`,
  });
  const tokenUp = BigInt(takeover.map.fencingToken) > BigInt(before.map.fencingToken);
  run.measure({ name: 'takeover: higher token, same assignments and lifecycle', value: tokenUp && JSON.stringify(takeover.map.assignments) === JSON.stringify(before.map.assignments) && takeover.map.lifecycleState === before.map.lifecycleState ? 1 : 0, unit: 'count', target: '1', verdict: tokenUp && JSON.stringify(takeover.map.assignments) === JSON.stringify(before.map.assignments) && takeover.map.lifecycleState === before.map.lifecycleState ? 'met' : 'missed', note: `token ${before.map.fencingToken} -> ${takeover.map.fencingToken}, lifecycle ${takeover.map.lifecycleState}` });
  const newLeader = await c.waitLeader();
  run.mark(Date.now(), 'new leader answers', newLeader.name);
  // A standby again (as Kubernetes would restart the pod).
  await c.startController();
  await sleep(1000);
  const v = victimOf(run);
  const crashAt = await c.kill(v.proc);
  const cm = await c.waitForMap('the crash map from the new leader', (m) => !(v.id in m.map.defenderInfo), 30_000);
  run.measure({ name: 'next crash handled by the new leader', value: cm.map.controllerId === newLeader.name ? 1 : 0, unit: 'count', target: '1', verdict: cm.map.controllerId === newLeader.name ? 'met' : 'missed', note: `map v${cm.map.version} (${cm.map.trigger}) by ${cm.map.controllerId}` });
  await sleep(2000);
  const analyses: Analyse[] = [(ev) => takeoverMeasures(run, analyseTakeover(c.maps, ev, [v.id], crashAt, suite.weights), 'defender crash after failover', { orphansOnly: true })];
  await replace(run, [v.id], 'defender crash after failover');
  return run.finish((ev) => analyses.forEach((f) => f(ev)));
}

/** An election-agent replica SIGKILLed: the leader keeps (or quickly regains) its lease through the other. */
export async function agentLoss(suite: Suite): Promise<ScenarioOutcome> {
  const c = suite.cluster;
  const s = c.settings;
  const run = new ScenarioRun(suite, 'election-agent-loss', 'Loss of an election-agent replica (SIGKILL)', 'An election-agent replica (the first in every controller\'s address list) is SIGKILLed. The agents are stateless over NATS KV, so the controllers renew through the other replica: the leader should keep its lease (no takeover) and the cluster keeps handling crashes. The replica is restarted on the same port afterwards.');
  await sleep(1000);
  const leaderBefore = await c.waitLeader();
  const agent = c.agents.find(isAlive);
  if (!agent) throw new Error('no live election agent');
  const faultAt = await c.kill(agent);
  await sleep(3 * s.electionTtlSeconds * 1000);
  const leaderAfter = await c.waitLeader();
  const takeovers = run.maps().filter((m) => m.map.trigger === 'takeover');
  run.measure({ name: 'takeover maps after the agent loss', value: takeovers.length, unit: 'count', target: '0 (the leader renews through the other replica)', verdict: takeovers.length === 0 ? 'met' : 'missed', note: `leader ${leaderBefore.name} -> ${leaderAfter.name}` });
  const firstTakeover = takeovers[0];
  if (firstTakeover) run.measure({ name: 'agent kill -> takeover map', value: (firstTakeover.seenAt - faultAt) / 1000, unit: 's', verdict: 'info' });
  const v = victimOf(run);
  const crashAt = await c.kill(v.proc);
  await c.waitForMap('the crash map with one agent', (m) => !(v.id in m.map.defenderInfo), 30_000);
  await sleep(2000);
  const analyses: Analyse[] = [(ev) => takeoverMeasures(run, analyseTakeover(c.maps, ev, [v.id], crashAt, suite.weights), 'defender crash with one agent', { orphansOnly: true })];
  await replace(run, [v.id], 'defender crash with one agent');
  await c.startAgent(agent.grpc);
  run.note(`${agent.name} restarted on its port ${agent.grpc}.`);
  return run.finish((ev) => analyses.forEach((f) => f(ev)));
}

/**
 * A defender frozen (SIGSTOP) beyond detection, then resumed: it is judged dead, its chambers go to
 * new owners with higher epochs, and its late writes are rejected by the store.
 *
 * To make the late write certain, the freeze lands while the victim waits for the store's write
 * lock: this process holds `BEGIN EXCLUSIVE` for a moment (< detection), waits until the victim's
 * event loop stops answering (it is inside a synchronous SQLite write), freezes it and releases the
 * lock. On SIGCONT the write proceeds under the old epoch and must be fenced.
 */
export async function frozenDefender(suite: Suite): Promise<ScenarioOutcome> {
  const c = suite.cluster;
  const s = c.settings;
  const run = new ScenarioRun(suite, 'frozen-defender', 'Defender frozen (SIGSTOP) beyond detection, then resumed', 'A defender is frozen with SIGSTOP in the middle of a store write and kept frozen for 4x the detection time: it is judged crashed and its chambers are taken over (the store\'s owner epoch rises). On SIGCONT its pending write carries the old epoch and must be rejected (fenced), never committed; it then applies the newer map and rejoins.');
  await sleep(1500);
  const v = victimOf(run);
  const fencedBefore = fencedLogLines(v.proc);
  let frozenAt = 0;
  let midWrite = false;
  for (let attempt = 0; attempt < 8 && frozenAt === 0; attempt++) {
    const lock = c.lockStore();
    const deadline = Date.now() + 800;
    while (Date.now() < deadline) {
      if (!(await c.answers(v.proc, 150))) {
        midWrite = true;
        break;
      }
      await sleep(25);
    }
    if (midWrite) frozenAt = c.freeze(v.proc);
    lock.release();
    if (!midWrite) await sleep(1500);
  }
  if (!frozenAt) {
    run.note('The victim never blocked on the store lock within 8 tries: frozen at an arbitrary point instead.');
    frozenAt = c.freeze(v.proc);
  }
  await c.waitForMap('the crash map for the frozen defender', (m) => !(v.id in m.map.defenderInfo), 30_000);
  await sleep(Math.max(0, frozenAt + 4 * detectionSeconds(s) * 1000 - Date.now()));
  const thawAt = c.thaw(v.proc);
  run.measure({ name: 'frozen for', value: (thawAt - frozenAt) / 1000, unit: 's', target: `> detection (${detectionSeconds(s)} s)`, verdict: 'info', note: midWrite ? 'frozen inside a store write (event loop blocked on the lock)' : 'frozen at an arbitrary point' });
  await waitFor('the resumed defender back in a map', async () => v.id in (c.latest()?.map.defenderInfo ?? {}) || !isAlive(v.proc), 60_000, 50).catch((err: unknown) => run.note(`the resumed defender did not rejoin: ${(err as Error).message}`));
  // If it exited instead (claim lost), it is restarted like a crashed container; wait for that too.
  await c.waitStable(60_000).catch((err: unknown) => run.note(`the cluster did not settle: ${(err as Error).message}`));
  await sleep(1000);
  const late = fencedLogLines(v.proc) - fencedBefore;
  run.measure({ name: 'late writes of the resumed defender fenced by the store', value: late, unit: 'count', target: midWrite ? '>= 1 (it was frozen inside a write)' : 'any (frozen while idle: no write pending)', verdict: midWrite ? (late >= 1 ? 'met' : 'missed') : 'info', note: `the resumed process ${isAlive(v.proc) ? 'kept running and rejoined' : `exited (${v.proc.app.child.exitCode ?? v.proc.app.child.signalCode})`}` });
  const analyses: Analyse[] = [
    (ev) => {
      const a = analyseTakeover(c.maps, ev, [v.id], frozenAt, suite.weights);
      takeoverMeasures(run, a, 'freeze', { orphansOnly: true });
      // Commits of the orphaned chambers after the freeze under an epoch older than the takeover map's.
      const stale = ev
        .filter((ch) => a.orphaned.includes(ch.key))
        .flatMap((ch) => ch.committed.filter((r) => r.committedAt > frozenAt && a.map !== null && mapVersionOfEpoch(r.epoch) < a.map.version && r.committedAt > a.map.seenAt));
      run.measure({ name: 'commits under the frozen owner\'s epoch after the takeover', value: stale.length, unit: 'count', target: '0', verdict: stale.length === 0 ? 'met' : 'missed' });
    },
  ];
  return run.finish((ev) => analyses.forEach((f) => f(ev)));
}

/** nats-server SIGKILLed and restarted on the same store: nothing lost, nothing doubled, no spurious crash. */
export async function natsRestart(suite: Suite, downMs: number): Promise<ScenarioOutcome> {
  const c = suite.cluster;
  const run = new ScenarioRun(suite, 'nats-restart', 'NATS restart (SIGKILL, same JetStream store)', `nats-server is SIGKILLed and restarted after ${downMs / 1000} s on the same JetStream store while runs keep arriving (the publisher retries with the run id as message id). Streams and KV survive; every process reconnects; no run may be lost or applied twice, and no defender should be judged crashed.`);
  await sleep(1500);
  const before = c.current();
  const { downAt, upAt } = await c.restartNats(downMs);
  await sleep(3000);
  await c.waitStable(60_000).catch((err: unknown) => run.note(`the cluster did not settle: ${(err as Error).message}`));
  await c.waitLeader(30_000);
  await sleep(2000);
  const maps = run.maps();
  const crashes = maps.filter((m) => m.map.trigger === 'crash');
  const moved = Object.keys(before.map.assignments).filter((k) => c.current().map.assignments[k] !== before.map.assignments[k]);
  run.measure({ name: 'NATS down', value: (upAt - downAt) / 1000, unit: 's', verdict: 'info', note: 'kill -> healthy again (includes JetStream recovery)' });
  run.measure({ name: 'crash maps after the restart (defenders judged dead)', value: crashes.length, unit: 'count', target: '0', verdict: crashes.length === 0 ? 'met' : 'missed', note: maps.map((m) => `v${m.map.version} ${m.map.trigger}`).join(', ') || 'no map' });
  run.measure({ name: 'chambers moved', value: moved.length, unit: 'count', target: '0', verdict: moved.length === 0 ? 'met' : 'missed' });
  return run.finish((ev) => {
    const after = ev.flatMap((ch) => ch.committed.filter((r) => r.committedAt >= upAt).map((r) => r.committedAt));
    const first = after.length ? Math.min(...after) : null;
    if (first !== null) run.mark(first, 'first run processed after NATS is back');
    run.measure({ name: 'NATS up -> first run processed', value: first === null ? null : (first - upAt) / 1000, unit: 's', verdict: 'info' });
    const g = stallOf(ev, ev.map((x) => x.key), downAt - 1);
    run.measure({ name: 'largest processing gap', value: g.max / 1000, unit: 's', target: `~ outage + reconnect`, verdict: 'info', note: g.chamber ?? '' });
  });
}

/** The store unavailable (SQLite write lock held beyond the 5 s busy timeout): processing pauses, nothing acked early. */
export async function storeOutage(suite: Suite, holdMs: number): Promise<ScenarioOutcome> {
  const c = suite.cluster;
  const run = new ScenarioRun(suite, 'store-outage', `Store outage (SQLite locked ${holdMs / 1000} s)`, `The test process holds BEGIN EXCLUSIVE on the SQLite file for ${holdMs / 1000} s (longer than the apps' 5 s busy timeout): defenders' commits fail as unavailable, chambers pause with backoff and resume afterwards. The apps' store runs on its own thread (ThreadedSqliteStore), so the busy wait never blocks their event loop: heartbeats and /health/live go on and no defender may be judged crashed. Nothing may be lost, doubled or acknowledged early.`);
  await sleep(1500);
  const before = c.current();
  const PAUSED = 'paused: dependency unavailable';
  const pausedBefore = new Map(c.defenders.map((p) => [p, logLines(p, PAUSED)]));
  const lock = c.lockStore();
  await sleep(Math.min(3000, holdMs / 2));
  const probes = await Promise.all(c.liveDefenders().map((p) => c.answers(p, 1000)));
  const unresponsive = probes.filter((x) => !x).length;
  run.mark(Date.now(), 'liveness probe during the outage', `${unresponsive} of ${probes.length} defenders`, 'did not answer /health/live within 1 s');
  await sleep(Math.max(0, lock.lockedAt + holdMs - Date.now()));
  const unlockAt = lock.release();
  await sleep(3000);
  await c.waitStable(60_000).catch((err: unknown) => run.note(`the cluster did not settle: ${(err as Error).message}`));
  await sleep(2000);
  const maps = run.maps();
  const crashes = maps.filter((m) => m.map.trigger === 'crash');
  const moved = Object.keys(before.map.assignments).filter((k) => c.current().map.assignments[k] !== before.map.assignments[k]);
  run.measure({ name: 'defenders not answering /health/live during the outage', value: unresponsive, unit: 'count', target: '0 (a paused defender is alive)', verdict: unresponsive === 0 ? 'met' : 'missed', note: 'the busy wait blocks the store thread, not the event loop' });
  run.measure({ name: 'crash maps caused by the outage', value: crashes.length, unit: 'count', target: '0', verdict: crashes.length === 0 ? 'met' : 'missed', note: maps.map((m) => `v${m.map.version} ${m.map.trigger} (${m.map.defenderCount} defenders)`).join(', ') || 'no map' });
  run.measure({ name: 'chambers moved by the outage', value: moved.length, unit: 'count', target: '0', verdict: moved.length === 0 ? 'met' : 'missed' });
  // From the logs (`defender_processing_paused_total` is lost with a process that exits).
  const paused = c.defenders.reduce((a, p) => a + logLines(p, PAUSED) - (pausedBefore.get(p) ?? 0), 0);
  run.measure({ name: 'pauses logged (paused: dependency unavailable)', value: paused, unit: 'count', target: '>= 1', verdict: paused >= 1 ? 'met' : 'missed' });
  return run.finish((ev) => {
    const after = ev.flatMap((ch) => ch.committed.filter((r) => r.committedAt >= unlockAt).map((r) => r.committedAt));
    const first = after.length ? Math.min(...after) : null;
    if (first !== null) run.mark(first, 'first run committed after the store is back');
    run.measure({ name: 'store back -> first run committed', value: first === null ? null : (first - unlockAt) / 1000, unit: 's', verdict: 'info' });
    // A commit is stamped when it is submitted; on the store thread it may wait behind other calls
    // (each up to the 5 s busy timeout) and commits only once the lock is gone, so a stamp from
    // inside the outage is no longer early (the invariants check that nothing is acked early).
    const queued = ev.flatMap((ch) => ch.committed.filter((r) => r.committedAt > lock.lockedAt && r.committedAt < unlockAt));
    run.measure({ name: 'runs submitted while the store was locked (committed after it came back)', value: queued.length, unit: 'count', verdict: 'info' });
    const g = stallOf(ev, ev.map((x) => x.key), lock.lockedAt - 1);
    run.measure({ name: 'largest processing gap', value: g.max / 1000, unit: 's', target: `~ outage (${holdMs / 1000} s) + backoff (<= 5 s)`, verdict: 'info', note: g.chamber ?? '' });
  });
}

/**
 * A pod that took over a crashed defender's stable ID (claim generation + 1) is later restarted
 * cleanly, as in the next rolling update: its successor claims the released ID. No map is
 * published (same IDs), so the successor must own the chambers under the current map.
 */
export async function restartAfterTakeover(suite: Suite): Promise<ScenarioOutcome> {
  const c = suite.cluster;
  const run = new ScenarioRun(
    suite,
    'restart-after-takeover',
    'Rolling restart of a pod that took over a crashed defender\'s ID',
    'Seed 003 followed by seed 002\'s rolling update: a defender is SIGKILLed, its replacement pod takes the stale stable ID over (claim generation + 1) and rejoins; later that pod is replaced cleanly (SIGTERM, then a new pod, as in the next rolling update). The new pod reclaims the released ID and no map is published, so it must run every chamber of that ID under the current map.',
  );
  await sleep(1500);
  const v = victimOf(run);
  await c.kill(v.proc);
  await c.waitForMap('the crash map', (m) => !(v.id in m.map.defenderInfo), 30_000);
  const taker = await c.startDefender(newPod());
  await waitFor('the replacement heartbeating', async () => c.defenderIdOf(taker) !== undefined, 60_000, 50);
  await c.waitStable(60_000);
  const takenOver = await c.claimOf(c.idOf(taker));
  run.measure({
    name: 'replacement took a stale stable ID over (claim generation)',
    value: takenOver?.generation ?? null,
    unit: 'count',
    target: '>= 1',
    verdict: (takenOver?.generation ?? 0) >= 1 ? 'met' : 'missed',
    note: `${taker.name} holds ${c.idOf(taker)} (the lowest stale ID; the victim was ${v.id})`,
  });
  await sleep(2000);
  const mapsBefore = c.maps.length;
  const exited = c.terminate(taker);
  const successor = await c.startDefender(newPod());
  await exited;
  await waitFor(`${successor.name} ready`, async () => (await fetch(`${successor.url}/health/ready`).then((r) => r.status).catch(() => 0)) === 200, 60_000, 50);
  await sleep(2000);
  const id = c.idOf(successor);
  const own = chambersOf(c.current().map, id);
  const running = new Set((await c.workerChambers(successor)) ?? []);
  const idle = own.filter((k) => !running.has(k));
  const succeeded = await c.claimOf(id);
  run.measure({ name: `successor's claim generation`, value: succeeded?.generation ?? null, unit: 'count', target: `> ${takenOver?.generation ?? 0} (its epochs must exceed its predecessor's under the same map)`, verdict: (succeeded?.generation ?? 0) > (takenOver?.generation ?? 0) ? 'met' : 'missed', note: 'a clean shutdown marks the claim released; its next holder continues the generation' });
  run.measure({ name: 'maps published by the clean restart', value: c.maps.length - mapsBefore, unit: 'count', target: '0', verdict: c.maps.length === mapsBefore ? 'met' : 'missed' });
  run.measure({ name: `successor's chambers without a worker`, value: idle.length, unit: 'count', target: `0 of ${own.length}`, verdict: idle.length === 0 ? 'met' : 'missed', note: `${successor.name} reclaimed ${id}; fenced log lines: ${fencedLogLines(successor)}` });
  return run.finish();
}

/**
 * Issue 22: the controller leader's wall clock steps (NTP) while runs flow — forward and back by
 * `stepMs`, twice each way. Heartbeat ageing and the trigger's windows are on its monotonic clock,
 * so no defender may be judged crashed, no chamber may move and no stable ID may change hands.
 * Then, with the clock `stepMs` behind, a defender is SIGKILLed: a step back must not hide the
 * crash either (ageing on a wall clock stood still until the clock caught up again).
 * The step comes from a test-only preload (`clock-offset.cjs`) that offsets `Date` in that process.
 */
export async function clockStep(suite: Suite, stepMs: number): Promise<ScenarioOutcome> {
  const c = suite.cluster;
  const s = c.settings;
  const step = `${stepMs / 1000} s`;
  const run = new ScenarioRun(
    suite,
    'clock-step',
    `Controller leader's wall clock steps ±${step}`,
    `The controller leader's wall clock steps +${step}, back, -${step}, back, and again (as NTP steps a host's clock), each offset held for 2x the detection time, while runs flow. Liveness is judged on the controller's monotonic clock (time since it saw a heartbeat's revision change), so no defender may be judged crashed, no chamber may move, the leader keeps its term and no stable ID changes hands. Then the clock steps -${step} again and a defender is SIGKILLed: the crash must be detected as promptly as without a step, and the replacement pod reclaims the ID. The step is made by a test-only preload that offsets Date in the controller process alone (tools/chaos/src/lib/clock-offset.cjs).`,
  );
  await sleep(1500);
  const leader = await c.waitLeader();
  const before = c.current();
  const ids = c.liveDefenders().map((p) => c.idOf(p)).sort();
  const claims = async () => new Map(await Promise.all(ids.map(async (id) => [id, await c.claimOf(id)] as const)));
  const claimsBefore = await claims();
  const holdMs = 2 * detectionSeconds(s) * 1000;
  const offsets = [stepMs, 0, -stepMs, 0, stepMs, 0, -stepMs, 0];
  for (const offset of offsets) {
    await c.setClockOffset(leader, offset);
    await sleep(holdMs);
  }
  const leaderAfter = await c.waitLeader();
  const maps = run.maps();
  const crashes = maps.filter((m) => m.map.trigger === 'crash');
  const moved = Object.keys(before.map.assignments).filter((k) => c.current().map.assignments[k] !== before.map.assignments[k]);
  const claimsAfter = await claims();
  const changedHands = ids.filter((id) => {
    const a = claimsBefore.get(id);
    const b = claimsAfter.get(id);
    return !a || !b || a.ownerId !== b.ownerId || a.generation !== b.generation;
  });
  run.measure({ name: 'wall-clock steps of the leader', value: offsets.length, unit: 'count', verdict: 'info', note: `offsets ${offsets.map((o) => `${o > 0 ? '+' : ''}${o / 1000} s`).join(', ')}, each held ${holdMs / 1000} s, applied by ${leader.name}` });
  run.measure({ name: 'steps: crash maps (defenders judged dead)', value: crashes.length, unit: 'count', target: '0', verdict: crashes.length === 0 ? 'met' : 'missed', atDefaults: '0', note: maps.map((m) => `v${m.map.version} ${m.map.trigger}`).join(', ') || 'no map' });
  run.measure({ name: 'steps: maps published', value: maps.length, unit: 'count', target: '0', verdict: maps.length === 0 ? 'met' : 'missed', atDefaults: '0' });
  run.measure({ name: 'steps: chambers moved', value: moved.length, unit: 'count', target: '0', verdict: moved.length === 0 ? 'met' : 'missed', atDefaults: '0' });
  run.measure({ name: 'steps: stable IDs that changed hands (owner or generation)', value: changedHands.length, unit: 'count', target: `0 of ${ids.length}`, verdict: changedHands.length === 0 ? 'met' : 'missed', note: changedHands.join(', ') });
  run.measure({ name: 'steps: leader kept its term', value: leaderAfter === leader ? 1 : 0, unit: 'count', target: '1', verdict: leaderAfter === leader ? 'met' : 'missed', note: `${leader.name} -> ${leaderAfter.name}` });

  await c.setClockOffset(leaderAfter, -stepMs);
  await sleep(s.heartbeatSeconds * 2000);
  const v = victimOf(run);
  const crashAt = await c.kill(v.proc);
  await c.waitForMap(`the crash map with the leader's clock ${step} behind`, (m) => !(v.id in m.map.defenderInfo), 60_000);
  await sleep(2000);
  const label = `crash with the leader's clock ${step} behind`;
  const analyses: Analyse[] = [(ev) => takeoverMeasures(run, analyseTakeover(c.maps, ev, [v.id], crashAt, suite.weights), label, { orphansOnly: true })];
  await replace(run, [v.id], label);
  await c.setClockOffset(leaderAfter, 0);
  return run.finish((ev) => analyses.forEach((f) => f(ev)));
}
