import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { NatsConnection } from '@nats-io/nats-core';
import { DeliverPolicy, jetstream, JetStreamApiCodes, JetStreamApiError, jetstreamManager } from '@nats-io/jetstream';
import { sleepUnlessAborted } from '@defender/backoff';
import { equipmentEventSubject, notificationSubject, type DefenderStore, type RunNotification } from '@defender/contracts';
import { publishStored, STREAMS } from '@defender/nats-kv';
import { byChamber, effectsFor, type Excursion } from './excursions';
import { svidNames, type ChamberSpec, type FabSpec } from './fab';
import { mix, rng } from './rng';
import { detectionMetrics, detectionLine, type DetectionMetrics, type RunOutcome } from './detection-metrics';
import { scoreDetection, type DetectionScore, type ObservedAlarm } from './score';
import { publishedEvent } from './real-equipment';
import { samplesPerRun, synthesizeTrace } from './trace';

/** How long fab-sim waits for the defenders to create the streams. */
const STREAM_WAIT_MS = 120_000;

export interface SimulatorConfig {
  readonly fab: FabSpec;
  readonly runsPerChamber: number;
  /** The first runs of every chamber are published as fast as the store takes them (Phase I history). */
  readonly warmupRuns: number;
  /** Simulated seconds per wall-clock second after the warm-up, or `max` (no pacing). */
  readonly speed: number | 'max';
  readonly excursions: readonly Excursion[];
  /** Prefix of every run id of this simulation (so its alarms can be told from others'). */
  readonly sessionId: string;
  /** Where `ground-truth.jsonl` and `summary.json` go. */
  readonly outDir: string;
  /** Traces kept per chamber once processed (older ones are deleted, as a DC layer's retention would). */
  readonly keepTraces: number;
  /** Runs written at once (different chambers; a chamber's runs are always in order). */
  readonly concurrency: number;
  /** Publishing waits while more than this many published runs are not processed yet. */
  readonly maxBacklog: number;
  /** After the last run: how long to wait for the cluster to process everything. */
  readonly settleTimeoutMs: number;
  /** Runs of Phase I (limits are frozen after them; the default strategy uses 20). */
  readonly phaseOneRuns: number;
  /** Alarms up to this many runs after an excursion still count as its detection. */
  readonly graceRuns: number;
}

export interface SimulatorDeps {
  readonly store: DefenderStore;
  readonly nc: NatsConnection;
  readonly log: (line: string) => void;
  readonly onProgress?: (p: Progress) => void;
  /** Aborting stops publishing; the summary covers what was published. */
  readonly signal?: AbortSignal;
}

export type Phase = 'warmup' | 'paced' | 'settling' | 'done';

export interface Progress {
  readonly phase: Phase;
  readonly published: number;
  readonly total: number;
  readonly processed: number;
  readonly alarms: number;
  readonly holds: number;
  readonly detected: number;
  readonly excursions: number;
  readonly elapsedMs: number;
  /** Published runs per wall-clock second. */
  readonly runsPerSecond: number;
  /** Simulated seconds since the first run. */
  readonly simSeconds: number;
  /** How far publishing is behind the paced schedule, seconds (0 in the warm-up). */
  readonly lagSeconds: number;
}

export interface SimulationResult {
  readonly sessionId: string;
  readonly chambers: number;
  readonly tools: number;
  readonly published: number;
  readonly processed: number;
  readonly total: number;
  readonly aborted: boolean;
  /** Every published run was processed before the settle timeout. */
  readonly settled: boolean;
  readonly durationMs: number;
  readonly publishMs: number;
  readonly runsPerSecond: number;
  readonly samplesPublished: number;
  readonly chambersWithLimits: number;
  readonly chartsWithLimits: number;
  /** The detection benchmark's figures for this run (tools/fab-sim detection-metrics). */
  readonly detection: DetectionMetrics;
  /** The same as bench:detection's last line. */
  readonly detectionLine: string;
  /** Holds placed on this simulation's runs (escalations), as seen on `defense.holds.>`. */
  readonly holdsPlaced: number;
  /** Chambers whose current hold was placed by one of this simulation's runs. */
  readonly chambersOnHold: number;
  readonly score: DetectionScore;
  /** Planned excursions whose first run was not published (the simulation stopped early). */
  readonly excursionsNotReached: number;
  readonly groundTruthFile: string;
}

interface RunEvent {
  /** Completion time, simulated seconds since the simulation's origin. */
  readonly t: number;
  readonly chamber: number;
  readonly run: number;
  readonly durationSeconds: number;
}

interface ChamberProgress {
  readonly seqs: number[];
  processed: number;
  tracesDeletedUpTo: number;
}

const sleep = sleepUnlessAborted;

/** Run id of run `index` (0-based) of a simulation session. */
export function runIdOf(sessionId: string, index: number): string {
  return `${sessionId}-r${String(index + 1).padStart(4, '0')}`;
}

/** Index of a run id of `sessionId`, or undefined when it is not one of its runs. */
export function runIndexOf(sessionId: string, runId: string): number | undefined {
  const prefix = `${sessionId}-r`;
  if (!runId.startsWith(prefix)) return undefined;
  const n = Number(runId.slice(prefix.length));
  return Number.isInteger(n) && n >= 1 ? n - 1 : undefined;
}

/**
 * Completion times of every run of every chamber: back-to-back runs, each the chamber's context
 * plus a random load/transfer overhead, chambers starting at random phases. Sorted by time.
 */
export function schedule(fab: FabSpec, runsPerChamber: number, seed: number): RunEvent[] {
  const out: RunEvent[] = [];
  for (const ch of fab.chambers) {
    const u = rng(mix(seed, ch.index, 0x5c4));
    const [lo, hi] = ch.overheadSeconds;
    let t = u() * (ch.contextDurationSeconds + hi);
    for (let k = 0; k < runsPerChamber; k++) {
      t += ch.contextDurationSeconds + lo + u() * (hi - lo);
      out.push({ t, chamber: ch.index, run: k, durationSeconds: ch.contextDurationSeconds });
    }
  }
  return out.sort((a, b) => a.t - b.t || a.chamber - b.chamber);
}

/** Upserts the fab's chambers into `chamber_metadata` (what the controller assigns). */
export async function seedChambers(store: DefenderStore, fab: FabSpec, now = new Date()): Promise<void> {
  for (const ch of fab.chambers) {
    await store.chamberMetadata.upsert({
      toolId: ch.toolId,
      chamberId: ch.chamberId,
      svidCount: ch.svidCount,
      collectionFreqHz: ch.collectionFreqHz,
      contextDurationSeconds: ch.contextDurationSeconds,
      weight: ch.weight,
      lastUpdated: now,
      source: 'configured',
      observedRuns: 0,
    });
  }
}

function isRetryable(err: unknown): boolean {
  const e = err as { retryable?: boolean; name?: string; code?: string };
  return e?.retryable === true || e?.name === 'StoreUnavailableError' || e?.name === 'NatsUnavailableError' || e?.code === 'TIMEOUT' || /timeout|disconnect|closed|unavailable/i.test(String((err as Error)?.message));
}

/**
 * The fab simulator: writes each run's trace to the store, then publishes its completion
 * notification (`dc.<tool>.<chamber>.completed`), on the chambers' schedule at a speed factor;
 * injects the planned excursions; watches `defense.alarms.>` / `defense.holds.>`; at the end waits
 * for the cluster to catch up and scores the alarms in the store against the ground truth.
 */
export class Simulator {
  private readonly chambers: ChamberProgress[];
  private readonly excursionsByChamber: Map<string, Excursion[]>;
  private readonly liveAlarms: ObservedAlarm[] = [];
  private readonly holdRuns = new Set<string>();
  private published = 0;
  private processed = 0;
  private samples = 0;
  private phase: Phase = 'warmup';
  private started = 0;
  private lag = 0;
  private simSeconds = 0;
  private pollCursor = 0;
  private lastPoll = 0;
  private stopAlarmWatch: (() => Promise<void>) | undefined;
  private readonly groundTruthFile: string;
  private readonly names: Map<number, string[]> = new Map();

  constructor(
    private readonly cfg: SimulatorConfig,
    private readonly deps: SimulatorDeps,
  ) {
    this.chambers = cfg.fab.chambers.map(() => ({ seqs: [], processed: 0, tracesDeletedUpTo: -1 }));
    this.excursionsByChamber = byChamber(cfg.excursions);
    mkdirSync(cfg.outDir, { recursive: true });
    this.groundTruthFile = join(cfg.outDir, 'ground-truth.jsonl');
  }

  get total(): number {
    return this.cfg.fab.chambers.length * this.cfg.runsPerChamber;
  }

  /** Runs the whole simulation; resolves with the scored result (also written to summary.json). */
  async run(): Promise<SimulationResult> {
    this.started = Date.now();
    await this.ensureStreams();
    writeFileSync(
      this.groundTruthFile,
      this.cfg.excursions.map((x) => JSON.stringify({ type: 'excursion', sessionId: this.cfg.sessionId, ...x, startRunId: runIdOf(this.cfg.sessionId, x.startRun), endRunId: runIdOf(this.cfg.sessionId, x.endRun) })).join('\n') + (this.cfg.excursions.length ? '\n' : ''),
    );
    await this.watchAlarms();
    const ticker = setInterval(() => this.report(), 250);
    let publishEnd = 0;
    try {
      await this.publishAll();
      publishEnd = Date.now();
      if (!this.deps.signal?.aborted) {
        this.phase = 'settling';
        await this.settle();
      }
    } finally {
      clearInterval(ticker);
    }
    publishEnd ||= Date.now();
    this.phase = 'done';
    this.report();
    const result = await this.finish(publishEnd);
    await this.stopAlarmWatch?.();
    writeFileSync(join(this.cfg.outDir, 'summary.json'), JSON.stringify(result, null, 2) + '\n');
    return result;
  }

  /**
   * Waits until the streams exist: the defenders provision them (libs/nats-kv permissions.ts); the
   * fab's equipment (the `publisher` user) may not create or change a stream.
   */
  private async ensureStreams(): Promise<void> {
    const jsm = await jetstreamManager(this.deps.nc);
    const deadline = Date.now() + STREAM_WAIT_MS;
    for (let told = false; ; ) {
      try {
        await jsm.streams.info(STREAMS.notifications);
        await jsm.streams.info(STREAMS.defenseEvents);
        return;
      } catch (err) {
        if (!(err instanceof JetStreamApiError) || err.code !== JetStreamApiCodes.StreamNotFound) throw err;
        if (Date.now() > deadline) throw new Error(`the streams ${STREAMS.notifications} and ${STREAMS.defenseEvents} do not exist after ${STREAM_WAIT_MS / 1000} s: start a defender (it creates them)`, { cause: err });
        if (!told) this.deps.log('fab-sim: waiting for a defender to create the streams');
        told = true;
        await new Promise((r) => setTimeout(r, 250));
      }
    }
  }

  private async watchAlarms(): Promise<void> {
    const js = jetstream(this.deps.nc);
    const consumer = await js.consumers.get(STREAMS.defenseEvents, { deliver_policy: DeliverPolicy.New });
    const messages = await consumer.consume({ max_messages: 500 });
    const prefix = `${this.cfg.sessionId}-r`;
    const done = (async () => {
      for await (const m of messages) {
        let body: Record<string, unknown>;
        try {
          body = m.json<Record<string, unknown>>();
        } catch (err) {
          this.deps.log(`fab-sim: ignoring an unreadable event on ${m.subject}: ${(err as Error).message}`);
          continue;
        }
        const runId = typeof body['runId'] === 'string' ? body['runId'] : '';
        if (!runId.startsWith(prefix)) continue;
        if (m.subject.startsWith('defense.holds.')) this.holdRuns.add(`${String(body['toolId'])}:${String(body['chamberId'])}#${runId}`);
        else this.liveAlarms.push(body as unknown as ObservedAlarm);
      }
    })();
    this.stopAlarmWatch = async () => {
      await messages.close();
      await done;
    };
  }

  private async publishAll(): Promise<void> {
    const events = schedule(this.cfg.fab, this.cfg.runsPerChamber, this.cfg.fab.seed);
    // Warm-up runs first (every chamber's Phase I), then the rest on the paced clock.
    const warm = events.filter((e) => e.run < this.cfg.warmupRuns);
    const paced = events.filter((e) => e.run >= this.cfg.warmupRuns);
    const origin = Math.floor(Date.now() / 1000);
    const pool = new Set<Promise<void>>();
    const chains = new Map<number, Promise<void>>();
    let failure: unknown;
    const submit = async (ev: RunEvent) => {
      while (pool.size >= this.cfg.concurrency) await Promise.race(pool);
      const p = (chains.get(ev.chamber) ?? Promise.resolve()).then(() => (failure ? undefined : this.publishRun(ev, origin)));
      chains.set(ev.chamber, p.catch(() => undefined));
      const tracked: Promise<void> = p.then(
        () => void pool.delete(tracked),
        (err: unknown) => {
          pool.delete(tracked);
          failure ??= err;
        },
      );
      pool.add(tracked);
    };
    for (const ev of warm) {
      if (this.deps.signal?.aborted || failure) break;
      await this.backpressure();
      this.simSeconds = Math.max(this.simSeconds, ev.t);
      await submit(ev);
    }
    this.phase = 'paced';
    const t0 = paced[0]?.t ?? 0;
    let wall0 = Date.now();
    let waitedForWarmup = false;
    for (const ev of paced) {
      if (this.deps.signal?.aborted || failure) break;
      await this.backpressure();
      if (!waitedForWarmup) {
        // Start the clock once the warm-up is written, so the paced phase begins on time.
        await Promise.all(pool);
        wall0 = Date.now();
        waitedForWarmup = true;
      }
      if (this.cfg.speed !== 'max') {
        const due = wall0 + ((ev.t - t0) / this.cfg.speed) * 1000;
        const wait = due - Date.now();
        if (wait > 0) await sleep(wait, this.deps.signal);
        this.lag = Math.max(0, -wait / 1000);
      }
      if (this.deps.signal?.aborted) break;
      this.simSeconds = ev.t;
      await submit(ev);
    }
    await Promise.all(pool);
    if (failure) throw failure;
  }

  private async backpressure(): Promise<void> {
    await this.poll(false);
    while (!this.deps.signal?.aborted && this.published - this.processed > this.cfg.maxBacklog) {
      await sleep(200, this.deps.signal);
      await this.poll(false);
    }
  }

  private svids(ch: ChamberSpec): string[] {
    let n = this.names.get(ch.index);
    if (!n) {
      n = svidNames(ch);
      this.names.set(ch.index, n);
    }
    return n;
  }

  private chamberAt(i: number): ChamberSpec {
    const ch = this.cfg.fab.chambers[i];
    if (!ch) throw new RangeError(`no chamber ${i} in the fab`);
    return ch;
  }

  private progressAt(i: number): ChamberProgress {
    const p = this.chambers[i];
    if (!p) throw new RangeError(`no chamber ${i} in the fab`);
    return p;
  }

  private async publishRun(ev: RunEvent, originSeconds: number): Promise<void> {
    const ch = this.chamberAt(ev.chamber);
    const runId = runIdOf(this.cfg.sessionId, ev.run);
    const xs = this.excursionsByChamber.get(ch.key) ?? [];
    const effects = effectsFor(xs, ev.run);
    const endSeconds = originSeconds + ev.t;
    const startSeconds = endSeconds - ev.durationSeconds;
    const trace = synthesizeTrace(ch, { runId, runIndex: ev.run, startSeconds, effects });
    // Endpoint-controlled steps make each run's length differ slightly from the nominal one.
    const n = trace.svids.values().next().value?.length ?? samplesPerRun(ch);
    const notification: RunNotification = {
      schema: 1,
      toolId: ch.toolId,
      chamberId: ch.chamberId,
      runId,
      recipe: ch.recipe.name,
      contextWindow: { start: new Date(startSeconds * 1000).toISOString(), end: new Date(endSeconds * 1000).toISOString() },
      svids: this.svids(ch),
      trace: { store: 'default', samples: n },
      completedAt: new Date(endSeconds * 1000).toISOString(),
      publishedAt: new Date().toISOString(),
    };
    const js = jetstream(this.deps.nc);
    // The chamber's equipment events before this run (the real-equipment profile), published first:
    // the chamber applies them before the run, as a host system reports a PM before the next lot.
    for (const e of ch.equipment?.events ?? []) {
      if (e.beforeRun !== ev.run) continue;
      const event = publishedEvent(ch, e, `${this.cfg.sessionId}-${e.kind}-${ev.run}`, new Date((startSeconds - 60) * 1000));
      await this.retry(`event ${ch.key} ${event.eventId}`, async () => (await publishStored(js, equipmentEventSubject(ch.toolId, ch.chamberId), JSON.stringify(event), `${ch.key}:event:${event.eventId}`)).seq);
    }
    const seq = await this.retry(`run ${ch.key} ${runId}`, async () => {
      // The trace first: a notification promises that its trace is in the store.
      await this.deps.store.traces.write(trace);
      // Done once the stream holds it: a duplicate answered at sequence 0 (nats-server 2.10, an earlier
      // attempt still in flight) is retried like an outage.
      return (await publishStored(js, notificationSubject(ch.toolId, ch.chamberId), JSON.stringify(notification), `${ch.key}:${runId}`)).seq;
    });
    this.progressAt(ev.chamber).seqs.push(seq);
    this.published++;
    this.samples += n * ch.svidCount;
    if (effects.size > 0) {
      const line = { type: 'run', sessionId: this.cfg.sessionId, chamber: ch.key, runId, runIndex: ev.run, sequence: seq, completedAt: notification.completedAt, effects: Object.fromEntries(effects), excursions: xs.filter((x) => ev.run >= x.startRun && ev.run <= x.endRun).map((x) => x.id) };
      appendFileSync(this.groundTruthFile, JSON.stringify(line) + '\n');
    }
  }

  private async retry<T>(what: string, fn: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await fn();
      } catch (err) {
        if (attempt >= 20 || !isRetryable(err) || this.deps.signal?.aborted) throw new Error(`fab-sim: ${what} failed: ${(err as Error).message}`, { cause: err });
        this.deps.log(`fab-sim: ${what}: ${(err as Error).message}; retrying`);
        await sleep(Math.min(5000, 100 * 2 ** attempt), this.deps.signal);
      }
    }
  }

  /**
   * Reads chamber states (a rotating slice of at most 200 chambers per call, all when `full`) to count
   * processed runs, and deletes traces the cluster no longer needs.
   */
  private async poll(full: boolean): Promise<void> {
    const now = Date.now();
    if (!full && now - this.lastPoll < 1000) return;
    this.lastPoll = now;
    const chambers = this.cfg.fab.chambers;
    const todo: number[] = [];
    const n = full ? chambers.length : Math.min(200, chambers.length);
    for (let i = 0; i < n; i++) {
      const idx = (this.pollCursor + i) % chambers.length;
      const p = this.progressAt(idx);
      if (p.processed < p.seqs.length) todo.push(idx);
    }
    this.pollCursor = (this.pollCursor + n) % Math.max(1, chambers.length);
    for (const idx of todo) {
      const ch = this.chamberAt(idx);
      const p = this.progressAt(idx);
      let hwm: number;
      try {
        hwm = (await this.deps.store.chamberState.get(ch))?.highWaterMark ?? 0;
      } catch (err) {
        if (!isRetryable(err)) throw err;
        return;
      }
      let k = p.processed;
      while (k < p.seqs.length && (p.seqs[k] ?? Number.POSITIVE_INFINITY) <= hwm) k++;
      this.processed += k - p.processed;
      p.processed = k;
      const deleteUpTo = k - 1 - this.cfg.keepTraces;
      for (let r = p.tracesDeletedUpTo + 1; r <= deleteUpTo; r++) {
        await this.deps.store.traces.delete({ toolId: ch.toolId, chamberId: ch.chamberId, runId: runIdOf(this.cfg.sessionId, r) });
        p.tracesDeletedUpTo = r;
      }
    }
  }

  private async settle(): Promise<void> {
    const deadline = Date.now() + this.cfg.settleTimeoutMs;
    while (Date.now() < deadline && !this.deps.signal?.aborted) {
      await this.poll(true);
      if (this.processed >= this.published) return;
      await sleep(500, this.deps.signal);
    }
  }

  private liveScore(): DetectionScore {
    return this.score(this.liveAlarms);
  }

  private score(alarms: readonly ObservedAlarm[]): DetectionScore {
    const publishedRuns = new Map(this.cfg.fab.chambers.map((c, i) => [c.key, this.progressAt(i).seqs.length]));
    return scoreDetection({
      // An excursion whose first run was never published (stopped early) was not injected.
      excursions: this.reached(publishedRuns),
      alarms,
      runOf: (_t, _c, runId) => runIndexOf(this.cfg.sessionId, runId),
      publishedRuns,
      phaseOneRuns: this.cfg.phaseOneRuns,
      graceRuns: this.cfg.graceRuns,
    });
  }

  private reached(publishedRuns: ReadonlyMap<string, number>): Excursion[] {
    return this.cfg.excursions.filter((x) => (publishedRuns.get(x.chamber) ?? 0) > x.startRun);
  }

  private report(): void {
    if (!this.deps.onProgress) return;
    const elapsedMs = Date.now() - this.started;
    const live = this.liveScore();
    this.deps.onProgress({
      phase: this.phase,
      published: this.published,
      total: this.total,
      processed: this.processed,
      alarms: live.alarms,
      holds: this.holdRuns.size,
      detected: live.detected,
      excursions: this.cfg.excursions.length,
      elapsedMs,
      runsPerSecond: elapsedMs > 0 ? (this.published * 1000) / elapsedMs : 0,
      simSeconds: this.simSeconds,
      lagSeconds: this.phase === 'paced' ? this.lag : 0,
    });
  }

  /** Scores the alarms the store holds for this session's runs (the record of truth: exactly once). */
  private async finish(publishEnd: number): Promise<SimulationResult> {
    await this.poll(true);
    const prefix = `${this.cfg.sessionId}-r`;
    const alarms: ObservedAlarm[] = [];
    let chambersWithLimits = 0;
    let chartsWithLimits = 0;
    let holds = 0;
    for (const ch of this.cfg.fab.chambers) {
      const list = await this.deps.store.alarms.list(ch, { limit: 10_000 });
      for (const a of list) if (a.runId.startsWith(prefix)) alarms.push(a);
      const limits = await this.deps.store.uchart.currentLimitSets(ch);
      const ours = limits.filter((l) => l.indicatorKey.startsWith(`${ch.recipe.name}|`));
      // The chamber monitor's model is a record of its own (one chart set per recipe).
      const model = await this.deps.store.monitorModels.get(ch, ch.recipe.name);
      if (ours.length > 0 || model) chambersWithLimits++;
      chartsWithLimits += ours.length + (model ? 1 : 0);
      const hold = await this.deps.store.alarms.hold(ch);
      if (hold && hold.runId.startsWith(prefix)) holds++;
    }
    const score = this.score(alarms);
    const notReached = this.cfg.excursions.length - score.injected;
    // The figures of bench:detection for this fab: any alarm of a run counts, whatever its SVID.
    const alarmed = new Set<string>();
    for (const a of alarms) {
      const idx = runIndexOf(this.cfg.sessionId, a.runId);
      if (idx !== undefined) alarmed.add(`${a.toolId}:${a.chamberId}#${idx}`);
    }
    const outcomes: RunOutcome[] = [];
    const publishedRuns = new Map<string, number>();
    this.cfg.fab.chambers.forEach((ch, i) => {
      const n = this.progressAt(i).seqs.length;
      publishedRuns.set(ch.key, n);
      for (let r = 0; r < n; r++) {
        outcomes.push({
          chamber: ch.key,
          runIndex: r,
          judged: r >= this.cfg.phaseOneRuns,
          alarmed: alarmed.has(`${ch.key}#${r}`),
          held: this.holdRuns.has(`${ch.key}#${runIdOf(this.cfg.sessionId, r)}`),
        });
      }
    });
    const detection = detectionMetrics(outcomes, this.reached(publishedRuns));
    const durationMs = Date.now() - this.started;
    const publishMs = publishEnd - this.started;
    return {
      sessionId: this.cfg.sessionId,
      chambers: this.cfg.fab.chambers.length,
      tools: this.cfg.fab.tools.length,
      published: this.published,
      processed: this.processed,
      total: this.total,
      aborted: this.deps.signal?.aborted ?? false,
      settled: this.processed >= this.published,
      durationMs,
      publishMs,
      runsPerSecond: publishMs > 0 ? (this.published * 1000) / publishMs : 0,
      samplesPublished: this.samples,
      chambersWithLimits,
      chartsWithLimits,
      holdsPlaced: this.holdRuns.size,
      chambersOnHold: holds,
      score,
      detection,
      detectionLine: detectionLine('(as run)', detection),
      excursionsNotReached: notReached,
      groundTruthFile: this.groundTruthFile,
    };
  }
}
