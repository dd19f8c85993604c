import { ProgressLine, rng, shortDuration, textBar } from '@defender/infra-harness';
import { analyseTakeover, ChamberEvidence, percentile } from './analysis';
import { isAlive } from './cluster';
import { ScenarioOutcome, ScenarioRun, sleep, Suite } from './runner';
import { detectionSeconds, targetsFor } from './settings';
import { newPod } from './scenarios';

export interface SoakOptions {
  /** How long faults are injected, seconds. */
  readonly seconds: number;
  readonly seed: number;
  /** Defender count is kept within [min, max]. */
  readonly minDefenders: number;
  readonly maxDefenders: number;
  /** Pause between two faults, seconds (uniform). */
  readonly gapSeconds: readonly [number, number];
  /** Where the soak shows its progress (elapsed, left, faults so far, processes, runs); none by default. */
  readonly progress?: ProgressLine;
}

/** The soak's progress line: time, faults so far by kind, what is alive, runs published, unexpected exits. */
export function soakProgressLine(p: {
  elapsedMs: number;
  totalMs: number;
  faults: ReadonlyMap<string, number>;
  defenders: number;
  runs: number;
  unexpectedExits: number;
  phase: 'faults' | 'settling';
}): string {
  const faults = [...p.faults.values()].reduce((a, b) => a + b, 0);
  const byKind = [...p.faults].sort((a, b) => b[1] - a[1]).map(([k, n]) => `${k} ${n}`).join(', ');
  const time =
    p.phase === 'faults'
      ? `${shortDuration(p.elapsedMs)} of ${shortDuration(p.totalMs)} · ${shortDuration(Math.max(0, p.totalMs - p.elapsedMs))} left`
      : `faults done after ${shortDuration(p.totalMs)}; settling, then the invariants are checked`;
  return `soak ${textBar(p.elapsedMs / p.totalMs)} ${time} · ${faults} faults${byKind ? ` (${byKind})` : ''} · ${p.defenders} defenders live · ${p.runs} runs published · ${p.unexpectedExits} unexpected exits`;
}

export const DEFAULT_SOAK: SoakOptions = { seconds: 600, seed: 1, minDefenders: 3, maxDefenders: 7, gapSeconds: [2, 6] };

type FaultKind =
  | 'kill-defender'
  | 'kill-two-defenders'
  | 'kill-leader'
  | 'kill-agent'
  | 'freeze-defender'
  | 'nats-restart'
  | 'store-lock'
  | 'graceful-restart'
  | 'scale-up'
  | 'scale-down';

const WEIGHTS: readonly [FaultKind, number][] = [
  ['kill-defender', 4],
  ['kill-two-defenders', 1],
  ['kill-leader', 2],
  ['kill-agent', 1],
  ['freeze-defender', 2],
  ['nats-restart', 1],
  ['store-lock', 1],
  ['graceful-restart', 2],
  ['scale-up', 1],
  ['scale-down', 1],
];

interface Crash {
  readonly ids: string[];
  readonly at: number;
}

/**
 * Randomized faults for `seconds` against a running suite (defenders already up) while the
 * publisher drives every chamber: crashes with replacements (as Kubernetes would restart the pods),
 * leader and agent kills, freezes shorter and longer than detection, NATS restarts, store locks,
 * graceful restarts and scaling. Faults may overlap the recovery of earlier ones. Afterwards the
 * cluster is left to settle and every invariant is checked over the whole run.
 */
export async function soak(suite: Suite, opts: SoakOptions): Promise<ScenarioOutcome> {
  const c = suite.cluster;
  const s = c.settings;
  const u = rng(opts.seed);
  const pick = <T>(xs: readonly T[]): T => {
    const x = xs[Math.floor(u() * xs.length)];
    if (x === undefined) throw new Error('nothing to pick from');
    return x;
  };
  const between = (a: number, b: number) => a + u() * (b - a);
  const run = new ScenarioRun(
    suite,
    `soak-${opts.seconds}s`,
    `Soak: randomized faults for ${opts.seconds} s`,
    `Randomized faults (seed ${opts.seed}) for ${opts.seconds} s, one every ${opts.gapSeconds[0]}-${opts.gapSeconds[1]} s, overlapping the recovery of earlier ones: SIGKILL of one or two defenders (replaced like Kubernetes restarts pods), of the controller leader and of an election agent, SIGSTOP freezes (shorter and longer than detection), NATS restarts, store locks, graceful restarts and scaling, with the publisher driving every chamber at ${suite.publisher.speed}x real time.`,
  );
  const counts = new Map<FaultKind, number>();
  let storeLocked = false;
  const crashes: Crash[] = [];
  const background: Promise<unknown>[] = [];
  const bg = (p: Promise<unknown>) => background.push(p.catch((err: unknown) => run.note(`background action failed: ${(err as Error).message}`)));
  const until = Date.now() + opts.seconds * 1000;
  const total = WEIGHTS.reduce((a, [, w]) => a + w, 0);
  const liveUnfrozen = () => c.liveDefenders().filter((p) => !p.frozen && c.defenderIdOf(p) !== undefined);
  const replaceLater = (n: number, afterMs: number) =>
    bg(
      (async () => {
        await sleep(afterMs);
        for (let i = 0; i < n; i++) await c.startDefender(newPod());
      })(),
    );

  const started = Date.now();
  let phase: 'faults' | 'settling' = 'faults';
  const showProgress = () => {
    let runs = 0;
    for (const list of suite.publisher.published().values()) runs += list.filter((x) => x.publishedAt >= run.from).length;
    const elapsedMs = Math.min(Date.now() - started, opts.seconds * 1000);
    const unexpectedExits = c.unexpectedExits(run.from).length;
    opts.progress?.update(soakProgressLine({ elapsedMs, totalMs: opts.seconds * 1000, faults: counts, defenders: c.liveDefenders().length, runs, unexpectedExits, phase }));
  };
  // Unref'd: a soak that throws leaves nothing running.
  const ticker = opts.progress ? setInterval(showProgress, 1000).unref() : undefined;

  while (Date.now() < until) {
    await sleep(between(opts.gapSeconds[0], opts.gapSeconds[1]) * 1000);
    if (Date.now() >= until) break;
    let r = u() * total;
    let kind: FaultKind = 'kill-defender';
    for (const [k, w] of WEIGHTS) {
      if ((r -= w) < 0) {
        kind = k;
        break;
      }
    }
    const live = liveUnfrozen();
    try {
      switch (kind) {
        case 'kill-defender': {
          if (live.length <= opts.minDefenders - 1) continue;
          const p = pick(live);
          const id = c.idOf(p);
          crashes.push({ ids: [id], at: await c.kill(p) });
          replaceLater(1, between(2, 5) * 1000);
          break;
        }
        case 'kill-two-defenders': {
          if (live.length < opts.minDefenders + 1) continue;
          const a = pick(live);
          const b = pick(live.filter((x) => x !== a));
          const at = Date.now();
          const ids = [c.idOf(a), c.idOf(b)];
          await Promise.all([c.kill(a), c.kill(b)]);
          crashes.push({ ids, at });
          replaceLater(2, between(2, 5) * 1000);
          break;
        }
        case 'kill-leader': {
          const l = await c.leader();
          if (!l) continue;
          await c.kill(l);
          bg(
            (async () => {
              await sleep(between(1, 3) * 1000);
              await c.startController();
            })(),
          );
          break;
        }
        case 'kill-agent': {
          const agents = c.agents.filter(isAlive);
          if (agents.length < 2) continue;
          const a = pick(agents);
          await c.kill(a);
          bg(
            (async () => {
              await sleep(between(2, 6) * 1000);
              await c.startAgent(a.grpc);
            })(),
          );
          break;
        }
        case 'freeze-defender': {
          if (live.length < 2) continue;
          const p = pick(live);
          const ms = between(0.5, 4) * detectionSeconds(s) * 1000;
          const at = c.freeze(p);
          if (ms > detectionSeconds(s) * 1000) crashes.push({ ids: [c.idOf(p)], at });
          bg(
            (async () => {
              await sleep(ms);
              if (isAlive(p)) c.thaw(p);
            })(),
          );
          break;
        }
        case 'nats-restart':
          await c.restartNats(between(300, 2000));
          break;
        case 'store-lock': {
          if (storeLocked) continue;
          const lock = c.lockStore();
          storeLocked = true;
          bg(
            (async () => {
              await sleep(between(1000, 6000));
              lock.release();
              storeLocked = false;
            })(),
          );
          break;
        }
        case 'graceful-restart': {
          if (live.length < 2) continue;
          const p = pick(live);
          const exited = c.terminate(p);
          await c.startDefender(newPod());
          await exited;
          break;
        }
        case 'scale-up':
          if (c.liveDefenders().length >= opts.maxDefenders) continue;
          await c.startDefender(newPod());
          break;
        case 'scale-down': {
          if (live.length <= opts.minDefenders) continue;
          await c.terminate(pick(live));
          break;
        }
      }
      counts.set(kind, (counts.get(kind) ?? 0) + 1);
    } catch (err) {
      run.note(`fault ${kind} could not be injected: ${(err as Error).message}`);
    }
  }
  c.note('faults-stop');
  phase = 'settling';
  await Promise.all(background);
  for (const p of c.procs) if (p.frozen && isAlive(p)) c.thaw(p);
  // Recovery: at least the minimum of defenders, both agents, two controllers.
  const deadAgents = c.agents.filter((a) => !isAlive(a) && !c.agents.some((b) => isAlive(b) && b.grpc === a.grpc));
  for (const a of deadAgents) await c.startAgent(a.grpc);
  while (c.controllers.filter(isAlive).length < 2) await c.startController();
  while (c.liveDefenders().length < opts.minDefenders) await c.startDefender(newPod());
  await c.waitLeader(60_000);
  await c.waitStable(120_000).catch((err: unknown) => run.note(`the cluster did not settle: ${(err as Error).message}`));
  if (ticker) clearInterval(ticker);
  opts.progress?.done(`soak: ${[...counts.values()].reduce((a, b) => a + b, 0)} faults in ${shortDuration(opts.seconds * 1000)}, the cluster settled; checking the invariants`);
  for (const [k, n] of [...counts].sort()) run.measure({ name: `faults injected: ${k}`, value: n, unit: 'count', verdict: 'info' });
  const elapsed = (Date.now() - run.from) / 1000;
  return run.finish((ev: ChamberEvidence[]) => {
    const t = targetsFor(s);
    const detections: number[] = [];
    const resumes: number[] = [];
    for (const cr of crashes) {
      const a = analyseTakeover(c.maps, ev, cr.ids, cr.at, suite.weights);
      if (a.detectionMs !== null) detections.push(a.detectionMs / 1000);
      if (a.resumeMs !== null) resumes.push(a.resumeMs / 1000);
    }
    run.measure({ name: 'crashes and long freezes analysed', value: crashes.length, unit: 'count', verdict: 'info', note: 'faults overlap: a takeover may wait for the controller failover or a NATS restart' });
    run.measure({ name: 'detection p50', value: percentile(detections, 50), unit: 's', verdict: 'info' });
    run.measure({ name: 'detection p99', value: percentile(detections, 99), unit: 's', verdict: 'info' });
    const p99 = percentile(resumes, 99);
    run.measure({ name: 'crash -> chambers running again p50', value: percentile(resumes, 50), unit: 's', target: `<= ${t.crashResumeSeconds} s`, verdict: 'info' });
    run.measure({ name: 'crash -> chambers running again p99', value: p99, unit: 's', target: `<= ${t.crashResumeSeconds} s (isolated crash)`, verdict: p99 === null ? 'info' : p99 <= t.crashResumeSeconds ? 'met' : 'missed', note: `${resumes.length} takeovers with waiting runs; overlapping faults included` });
    const published = suite.publisher.published();
    let runs = 0;
    for (const list of published.values()) runs += list.filter((p) => p.publishedAt >= run.from).length;
    run.measure({ name: 'publisher speed', value: suite.publisher.speed, unit: 'count', target: '>= 10x real time', verdict: suite.publisher.speed >= 10 ? 'met' : 'missed', note: `${runs} runs in ${elapsed.toFixed(0)} s (${(runs / elapsed).toFixed(1)} runs/s; schedule ${suite.publisher.rate.toFixed(1)} runs/s)` });
  });
}

