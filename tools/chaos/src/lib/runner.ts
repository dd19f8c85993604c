import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { checkInvariants, checkMapSequence, ChamberEvidence, InvariantResult, latencies, percentile, processingGaps, slowRuns } from './analysis';
import { ChaosCluster, ChaosClusterOptions, isAlive, Proc } from './cluster';
import { fencingEvidence, storeEvidence, streamEvidence, waitCaughtUp, warnings } from './evidence';
import { RunPublisher } from './publisher';
import { Measure, reportDir, ScenarioReport, TimelineEntry, writeReport } from './report';
import { ClusterSettings, DEFAULT_SETTINGS, SHORT_SETTINGS } from './settings';
import { chamberKeyOf, fabChambers, weightOf } from './workload';

/** The chaos runs' intervals: windows of 3 s so that a defender boots within one on 2 loaded cores. */
export const CHAOS_SETTINGS: ClusterSettings = { ...SHORT_SETTINGS, coldStartWindowSeconds: 3, scaleWindowSeconds: 3 };

/**
 * The defenders' IDLE_POLL_SECONDS (default 30 s at heartbeat 2 s), scaled with the heartbeat like
 * the other intervals. It bounds how long a chamber can miss its notices (see the reports' notes on
 * slow runs): at 30 s a scenario would wait up to 30 s for a stalled chamber before its checks.
 */
export function idlePollSecondsFor(s: ClusterSettings): number {
  return 30 * (s.heartbeatSeconds / DEFAULT_SETTINGS.heartbeatSeconds);
}

export interface SuiteOptions {
  readonly chambers?: number;
  readonly settings?: ClusterSettings;
  readonly agents?: number;
  readonly controllers?: number;
  /** Publisher speed, simulated seconds per wall second (default 600: one run per chamber every ~2 s). */
  readonly speed?: number;
  readonly seed?: number;
  readonly defenderEnv?: Record<string, string>;
  /** Appended to every report id of the suite (e.g. `-defaults`). */
  readonly reportSuffix?: string;
  /** NATS nodes (default 1; 3: a cluster with JetStream replicas 3, see {@link ChaosClusterOptions.natsNodes}). */
  readonly natsNodes?: number;
}

/** A cluster and its publisher, shared by the scenarios of one suite. */
export class Suite {
  readonly weights: ReadonlyMap<string, number>;
  /** Violations reported by earlier scenarios, by invariant: a later scenario reports only new ones. */
  readonly reported = new Map<string, Set<string>>();

  private constructor(
    readonly cluster: ChaosCluster,
    readonly publisher: RunPublisher,
    readonly reportSuffix: string,
  ) {
    this.weights = new Map(cluster.chambers.map((c) => [chamberKeyOf(c), weightOf(c)]));
  }

  /**
   * Starts NATS, agents, controllers and the publisher (whose warm-up runs wait in the stream);
   * defenders are started by the first scenario (the cold start).
   */
  static async start(opts: SuiteOptions = {}): Promise<Suite> {
    process.setMaxListeners(200);
    const chambers = fabChambers(opts.chambers ?? 48, opts.seed ?? 1);
    const settings = opts.settings ?? CHAOS_SETTINGS;
    const clusterOpts: ChaosClusterOptions = {
      chambers,
      settings,
      agents: opts.agents ?? 2,
      controllers: opts.controllers ?? 2,
      defenderEnv: { IDLE_POLL_SECONDS: String(idlePollSecondsFor(settings)), ...opts.defenderEnv },
      ...(opts.natsNodes !== undefined ? { natsNodes: opts.natsNodes } : {}),
    };
    const cluster = await ChaosCluster.start(clusterOpts);
    try {
      const publisher = new RunPublisher(cluster.nc, cluster.sqlitePath, {
        chambers,
        speed: opts.speed ?? 600,
        session: `c${randomBytes(3).toString('hex')}`,
        seed: opts.seed ?? 1,
      });
      await publisher.start();
      publisher.pause();
      return new Suite(cluster, publisher, opts.reportSuffix ?? '');
    } catch (err) {
      await cluster.stop();
      throw err;
    }
  }

  get totalWeight(): number {
    let w = 0;
    for (const v of this.weights.values()) w += v;
    return w;
  }

  async stop(): Promise<void> {
    await this.publisher.stop().catch((err: unknown) => process.stderr.write(`chaos: publisher stop: ${(err as Error).message}\n`));
    await this.cluster.stop();
  }
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** The outcome of a scenario: its report and whether every invariant held. */
export interface ScenarioOutcome {
  readonly report: ScenarioReport;
  readonly evidence: readonly ChamberEvidence[];
}

/**
 * One scenario on a suite's cluster: resumes the publisher, lets the scenario act and measure, then
 * pauses the publisher, waits until every published run is committed, checks the invariants over
 * everything the cluster ever processed, and writes the report.
 */
export class ScenarioRun {
  readonly from = Date.now();
  readonly measures: Measure[] = [];
  readonly notes: string[] = [];
  private readonly extra: { at: number; kind: string; target?: string; detail?: string }[] = [];
  private readonly eventsFrom: number;
  private readonly mapsFrom: number;
  private readonly membersFrom: number;
  private readonly publishedFrom: number;
  private readonly retriesFrom: number;
  private readonly logFrom = new Map<Proc, number>();

  readonly id: string;

  constructor(
    readonly suite: Suite,
    id: string,
    readonly title: string,
    readonly scenario: string,
  ) {
    this.id = id + suite.reportSuffix;
    const c = suite.cluster;
    this.eventsFrom = c.events.length;
    this.mapsFrom = c.maps.length;
    this.membersFrom = c.members.length;
    this.publishedFrom = suite.publisher.total();
    this.retriesFrom = suite.publisher.retries.count;
    for (const p of c.procs) this.logFrom.set(p, p.app.stdout().length);
    c.note('scenario-start', this.id);
    suite.publisher.resume();
  }

  get cluster(): ChaosCluster {
    return this.suite.cluster;
  }

  /** Maps published since the scenario started. */
  maps() {
    return this.cluster.maps.slice(this.mapsFrom);
  }

  measure(m: Measure): void {
    this.measures.push(m);
  }

  /** A timeline entry that is not a cluster event (e.g. the first run of a new owner). */
  mark(at: number, kind: string, target?: string, detail?: string): void {
    this.extra.push({ at, kind, ...(target !== undefined ? { target } : {}), ...(detail !== undefined ? { detail } : {}) });
  }

  note(text: string): void {
    this.notes.push(text);
  }

  /** Stops publishing, waits for the cluster to catch up, checks, reports. */
  async finish(analyse?: (evidence: ChamberEvidence[]) => void | Promise<void>): Promise<ScenarioOutcome> {
    const c = this.cluster;
    const pub = this.suite.publisher;
    const endOfLoad = Date.now();
    pub.pause();
    await pub.quiesce();
    const orphaned = await c.chambersWithoutWorker();
    // A chamber whose owner runs no worker for it never catches up by itself: do not wait long.
    const behind = await waitCaughtUp(c, pub, (orphaned.length > 0 ? 20_000 : 60_000) * c.waitScale);
    const evidence = await storeEvidence(c, pub);
    const streams = await streamEvidence(c);
    const found: InvariantResult[] = [...checkInvariants(evidence, streams, { natsCluster: c.natsCluster !== undefined }), checkMapSequence(c.mapHeads)];
    found.push({
      id: 'owner-runs-worker',
      title: 'Every chamber of the newest map has a running worker in its owner',
      ok: orphaned.length === 0,
      checked: `${c.chambers.length} chambers, ${c.liveDefenders().length} defenders`,
      violations: orphaned,
      violationCount: orphaned.length,
    });
    found.push({
      id: 'caught-up',
      title: 'Every published run committed within 60 s of the end of the load (no stuck chamber)',
      ok: behind.length === 0,
      checked: `${c.chambers.length} chambers`,
      violations: behind,
      violationCount: behind.length,
    });
    // The checks cover everything the cluster ever did; a violation belongs to the first scenario
    // that sees it, later ones on the same cluster report it as carried over.
    const invariants = found.map((inv): InvariantResult => {
      const seen = this.suite.reported.get(inv.id) ?? new Set<string>();
      this.suite.reported.set(inv.id, seen);
      const fresh = inv.violations.filter((v) => !seen.has(v));
      for (const v of inv.violations) seen.add(v);
      const carried = inv.violations.length - fresh.length;
      return {
        ...inv,
        ok: fresh.length === 0,
        violations: fresh.slice(0, 20),
        violationCount: fresh.length + Math.max(0, inv.violationCount - inv.violations.length),
        ...(carried > 0 ? { carriedOver: carried } : {}),
      };
    });
    if (analyse) await analyse(evidence);
    const exits = c.unexpectedExits(this.from);
    this.measures.push({
      name: 'processes that exited on their own (restarted like crashed containers)',
      value: exits.length,
      unit: 'count',
      target: '0',
      verdict: exits.length === 0 ? 'met' : 'missed',
      note: exits.map((e) => `${e.target} (${JSON.stringify(e.detail)})`).join('; '),
    });
    const fencing = await fencingEvidence(c);
    const gaps = processingGaps(evidence, this.from, endOfLoad);
    const lat = latencies(evidence, this.from, endOfLoad);
    for (const g of slowRuns(evidence, c.maps, this.from, endOfLoad, 5000).slice(0, 6)) {
      this.notes.push(
        `Slow runs (> 5 s from publication to commit): ${g.runs} runs of ${g.chambers} chambers committed by ${g.owner} under map v${g.mapVersion}, ` +
          `worst ${(g.maxMs / 1000).toFixed(1)} s, published from t=${((g.firstPublishedAt - this.from) / 1000).toFixed(1)} s, last committed at t=${((g.lastCommittedAt - this.from) / 1000).toFixed(1)} s.`,
      );
    }
    const timeline = this.timeline();
    for (const p of c.procs) {
      const w = warnings(p.app.stdout().slice(this.logFrom.get(p) ?? 0), 4);
      if (w.length) this.notes.push(`Warnings logged by ${p.name} (${p.role}): ${w.join('; ')}`);
    }
    const report: ScenarioReport = {
      id: this.id,
      title: this.title,
      scenario: this.scenario,
      startedAt: new Date(this.from).toISOString(),
      durationSeconds: (Date.now() - this.from) / 1000,
      settings: c.settings,
      cluster: {
        agents: c.agents.filter(isAlive).length,
        controllers: c.controllers.filter(isAlive).length,
        defenders: c.liveDefenders().length,
        chambers: c.chambers.length,
        totalWeight: this.suite.totalWeight,
      },
      publisher: {
        speed: pub.speed,
        runsPerSecond: pub.rate,
        runsPublished: pub.total() - this.publishedFrom,
        retriedAttempts: pub.retries.count - this.retriesFrom,
      },
      measures: this.measures,
      invariants,
      fencing,
      processing: {
        latencyP50Ms: percentile(lat, 50),
        latencyP99Ms: percentile(lat, 99),
        latencyMaxMs: lat.length ? Math.max(...lat) : null,
        maxGapMs: gaps[0]?.maxStallMs ?? 0,
        worstChambers: gaps.slice(0, 5),
      },
      timeline,
      notes: this.notes,
      ok: invariants.every((i) => i.ok || i.blocking === false),
    };
    writeReport(report);
    return { report, evidence };
  }

  private timeline(): TimelineEntry[] {
    const c = this.cluster;
    const raw: { at: number; kind: string; target?: string; detail?: string }[] = [];
    for (const e of c.events.slice(this.eventsFrom)) {
      raw.push({ at: e.at, kind: e.kind, ...(e.target ? { target: e.target } : {}), ...(e.detail ? { detail: JSON.stringify(e.detail) } : {}) });
    }
    for (const m of this.maps()) {
      const s = m.map.statistics;
      raw.push({
        at: m.seenAt,
        kind: `${m.map.trigger === 'crash' ? 'detection: ' : ''}map v${m.map.version} published (${m.map.trigger})`,
        target: m.map.controllerId,
        detail: `${m.map.defenderCount} defenders, state ${m.map.state}, lifecycle ${m.map.lifecycleState}, ${s.chambersMoved} chambers moved (weight ${(100 * s.movedWeightFraction).toFixed(1)} %, floor ${(100 * s.floorFraction).toFixed(1)} %)`,
      });
    }
    for (const m of c.members.slice(this.membersFrom)) {
      raw.push({ at: m.at, kind: m.kind === 'joined' ? 'first heartbeat' : 'heartbeat removed', target: m.defenderId, detail: m.podUid ? `pod ${m.podUid}` : '' });
    }
    raw.push(...this.extra);
    raw.sort((a, b) => a.at - b.at);
    return raw.map((e) => ({
      t: (e.at - this.from) / 1000,
      at: new Date(e.at).toISOString(),
      kind: e.kind,
      ...(e.target !== undefined ? { target: e.target } : {}),
      ...(e.detail !== undefined ? { detail: e.detail } : {}),
    }));
  }
}

/** Fails with the violated invariants (what CI acts on). */
export function assertInvariants(o: ScenarioOutcome): void {
  const bad = o.report.invariants.filter((i) => !i.ok && i.blocking !== false);
  if (bad.length > 0) {
    throw new Error(
      `scenario ${o.report.id}: invariants violated (see ${join(reportDir(), `${o.report.id}.md`)}):\n` +
        bad.map((i) => `- ${i.title}: ${i.violationCount} violations, e.g. ${i.violations.slice(0, 3).join('; ')}`).join('\n'),
    );
  }
}
