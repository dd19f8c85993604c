// Run pipeline (issue 8, "Benchmark"). Writes the `pipeline` section of docs/benchmarks.md:
// notification -> stored point and notification -> alarm latency (p50 / p99) for typical (120 K
// points) and heavy (3.6 M points) runs with the SQLite and the Cassandra store, runs per second per
// defender at saturation, and defender RSS, against a real cluster: a private nats-server, one
// election agent, one assignment controller and one (then two) defenders, all as built processes.
//
// Run: npm run bench:pipeline
//   (= node --expose-gc -r ./tools/scripts/register.js tools/bench/pipeline.bench.ts)
// Builds the apps first (nx build: seconds when nothing changed).
// Cassandra: a private node from the harness, or CASSANDRA_HOSTS.
//
// Parameters (environment): BENCH_QUICK=1 (short run; writes docs only with BENCH_WRITE=1),
// BENCH_BACKENDS=sqlite,cassandra, BENCH_TYPICAL_RUNS, BENCH_HEAVY_RUNS, BENCH_TYPICAL_CHAMBERS,
// BENCH_LATENCY_CHAMBERS, BENCH_HEAVY_CHAMBERS, BENCH_WARMUP_RUNS, BENCH_THROUGHPUT_RUNS,
// BENCH_HEAVY_BURST_RUNS, BENCH_TWO_DEFENDERS=0|1, BENCH_PROFILE=0|1, BENCH_SHIFT_SVIDS,
// BENCH_GAP_MS, BENCH_PROCESS_TIMEOUT_SECONDS, BENCH_WRITE=0|1, BENCH_KEEP_PROFILES=<dir>,
// BENCH_LOG_DIR=<dir> (process output), BENCH_LOG_LEVEL, BENCH_DEFENDER_ENV=K=V,K=V, BENCH_DEBUG=1,
// BENCH_QUIET_SECONDS (idle time before each burst; default 0).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Client } from 'cassandra-driver';
import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import { jetstream, type JetStreamClient } from '@nats-io/jetstream';
import { type ChamberRef, type DefenderStore, notificationSubject } from '@defender/contracts';
import {
  startCassandra,
  startNatsServer,
  type CassandraHandle,
  type NatsServerHandle,
} from '@defender/infra-harness';
import { CassandraStore, SqliteStore } from '@defender/store';
import { percentile, table, writeBenchmarkSection } from './report';
import { latencyChart } from './pipeline/charts';
import { envInt, handleBenchCommandLine } from './cli';
import { BenchCluster, buildBenchApps, bundleOf, getJson, type Proc } from './pipeline/cluster';
import {
  cpuMsOf,
  diffHistogram,
  envList,
  histogramQuantile,
  histogramTotalsBy,
  diffTotals,
  loadAverage,
  memoryOf,
  parseCounter,
  parseHistogram,
  type Histo,
} from './pipeline/observe';
import { summariseProfile, type CpuProfile, type ProfileSummary } from './pipeline/profile';
import { makeTrace, notificationOf, svidNames, type RunSpec } from './pipeline/runs';

// ---------------------------------------------------------------------------------------------
// Parameters

handleBenchCommandLine(`Usage: npm run bench:pipeline

Run pipeline against a real cluster of built processes (private nats-server, election agent,
assignment controller, one then two defenders): notification -> stored point and -> alarm latency
(p50 / p99) for typical and heavy runs with the SQLite and the Cassandra store, runs per second per
defender at saturation, defender RSS. Writes the \`pipeline\` section of docs/benchmarks.md. Builds the
apps first (nx build; seconds when nothing changed).
Cassandra: a private node from the harness, or CASSANDRA_HOSTS.

Parameters (environment):
  BENCH_QUICK=1                 short run; writes docs only with BENCH_WRITE=1
  BENCH_BACKENDS                sqlite,cassandra
  BENCH_TYPICAL_CHAMBERS, BENCH_LATENCY_CHAMBERS, BENCH_HEAVY_CHAMBERS
  BENCH_WARMUP_RUNS, BENCH_TYPICAL_RUNS, BENCH_HEAVY_RUNS, BENCH_THROUGHPUT_RUNS, BENCH_HEAVY_BURST_RUNS
  BENCH_TWO_DEFENDERS=0|1, BENCH_PROFILE=0|1, BENCH_SHIFT_SVIDS, BENCH_GAP_MS, BENCH_QUIET_SECONDS
  BENCH_PROCESS_TIMEOUT_SECONDS, BENCH_WRITE=0|1, BENCH_KEEP_PROFILES=<dir>, BENCH_LOG_DIR=<dir>,
  BENCH_LOG_LEVEL, BENCH_CONTROLLER_LOG_LEVEL, BENCH_DEFENDER_ENV=K=V,..., BENCH_DEBUG=1

Options:
  -h, --help                    this text
`);

const QUICK = process.env['BENCH_QUICK'] === '1';
const int = (name: string, dflt: number): number => envInt(name, dflt, 0);
function flag(name: string, dflt: boolean): boolean {
  const v = process.env[name];
  return v === undefined || v === '' ? dflt : v === '1' || v === 'true';
}

const P = {
  backends: (process.env['BENCH_BACKENDS'] ?? 'sqlite,cassandra')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean) as ('sqlite' | 'cassandra')[],
  typicalChambers: int('BENCH_TYPICAL_CHAMBERS', QUICK ? 4 : 8),
  latencyChambers: int('BENCH_LATENCY_CHAMBERS', QUICK ? 2 : 4),
  heavyChambers: int('BENCH_HEAVY_CHAMBERS', QUICK ? 1 : 2),
  // The default strategy's Phase I (30 runs) and one more, so every chamber is judged by its model.
  warmupRuns: int('BENCH_WARMUP_RUNS', 31),
  typicalRuns: int('BENCH_TYPICAL_RUNS', QUICK ? 20 : 100),
  heavyRuns: int('BENCH_HEAVY_RUNS', QUICK ? 4 : 12),
  throughputRuns: int('BENCH_THROUGHPUT_RUNS', QUICK ? 4 : 10),
  heavyBurstRuns: int('BENCH_HEAVY_BURST_RUNS', QUICK ? 2 : 3),
  twoDefenders: flag('BENCH_TWO_DEFENDERS', !QUICK),
  profile: flag('BENCH_PROFILE', !QUICK),
  shiftSvids: int('BENCH_SHIFT_SVIDS', 10),
  gapMs: int('BENCH_GAP_MS', 25),
  processTimeoutSeconds: process.env['BENCH_PROCESS_TIMEOUT_SECONDS'],
  write: flag('BENCH_WRITE', !QUICK),
  /** Seconds a burst's chambers must have been idle before it starts (0: none); see Bench.quiet. */
  quietSeconds: int('BENCH_QUIET_SECONDS', 0),
  keepProfiles: process.env['BENCH_KEEP_PROFILES'],
  /** Extra defender environment, `K=V,K=V` (e.g. allocator settings to try). */
  defenderEnv: envList('BENCH_DEFENDER_ENV'),
};
for (const b of P.backends)
  if (b !== 'sqlite' && b !== 'cassandra') throw new Error(`BENCH_BACKENDS: unknown backend ${b}`);
if (P.latencyChambers > P.typicalChambers)
  throw new Error('BENCH_LATENCY_CHAMBERS must not exceed BENCH_TYPICAL_CHAMBERS');

/** Mean shift of the excursion, in units of the sample noise (sd 1): far beyond any limit of the run mean. */
const SHIFT = 15;
const RECIPE = 'ETCH-A';
const DEBUG_TOKEN = 'bench-pipeline-debug-token';
const TARGET_MS = { sqlite: 100, cassandra: 250 } as const;
const RSS_TARGET_MB = 300;
/** The defender's default IDLE_POLL_SECONDS (not overridden here). */
const IDLE_POLL_SECONDS = 30;
/** Each process's output is kept here (for warnings: retries, pauses, dead letters). */
const LOG_DIR = process.env['BENCH_LOG_DIR'] ?? join(tmpdir(), `defender-bench-pipeline-logs-${process.pid}`);

interface Shape {
  name: string;
  svids: string[];
  hz: number;
  samples: number;
}
const TYPICAL: Shape = {
  name: 'typical 120 K (100 SVIDs x 1,200 samples)',
  svids: svidNames(100),
  hz: 1,
  samples: 1200,
};
const HEAVY: Shape = {
  name: 'heavy 3.6 M (200 SVIDs x 18,000 samples)',
  svids: svidNames(200),
  hz: 10,
  samples: 18_000,
};
/** Warm-up runs of heavy chambers: the same SVIDs (same indicators), a tenth of the samples. */
const HEAVY_WARM: Shape = { ...HEAVY, name: 'heavy warm-up', samples: 1800 };

function log(line: string): void {
  process.stderr.write(`[${new Date().toISOString().slice(11, 19)}] ${line}\n`);
}
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const gc = () => (globalThis as { gc?: () => void }).gc?.();
const f1 = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : '-');
const f0 = (x: number) => (Number.isFinite(x) ? x.toFixed(0) : '-');

// ---------------------------------------------------------------------------------------------
// Results

interface LatencyResult {
  shape: Shape;
  stored: number[];
  alarmFirst: number[];
  alarmLast: number[];
  alarmsPerRun: number[];
  failed: number;
  /** Failed processing attempts (retried) and pauses for an unavailable dependency, during the phase. */
  attemptsFailed: number;
  paused: number;
  process: Histo;
  traceRead: Histo;
  storeWrite: Histo;
  evaluate: Histo;
  /** Store operations during the phase (`defender_store_operation_duration_seconds` by operation). */
  storeOps: Map<string, { sum: number; count: number }>;
}
interface ThroughputResult {
  label: string;
  defenders: number;
  runs: number;
  chambers: number;
  seconds: number;
  steadyRate: number;
  perDefender: { pod: string; runs: number; seconds: number; cpuMsPerRun: number }[];
  load: number;
  incomplete: number;
  /** Seconds from the first publish to the first commit. */
  firstCommitS: number;
}
interface BackendResult {
  backend: 'sqlite' | 'cassandra';
  detail: string;
  typical?: LatencyResult;
  heavy?: LatencyResult;
  throughput: ThroughputResult[];
  memory: { phase: string; peakRssMb: number; heapMb?: number; externalMb?: number; storeThreadMb?: number; heartbeatThreadMb?: number }[];
  hwmMb: number;
  profile?: ProfileSummary;
  /** Defenders running while pod-0 was profiled. */
  profileDefenders?: number;
  failedAttempts: number;
  deadLetters: number;
  loadBefore: number;
  loadAfter: number;
  /** Optional phases that failed, and why. */
  notes: string[];
}

// ---------------------------------------------------------------------------------------------
// The run of one backend

interface Chamber extends ChamberRef {
  key: string;
  shape: Shape;
  warmShape: Shape;
  runs: number;
  /** Published sequences, in order. */
  seqs: number[];
  /** When the chamber's worker last had work (Date.now()). */
  lastActive: number;
}

class Bench {
  readonly chambers: Chamber[] = [];
  private readonly alarms = new Map<string, { first: number; last: number; count: number }>();
  private phase = 'idle after start';
  readonly peaks = new Map<string, number>();
  /** pod-0's V8 heap (total) and external memory (ArrayBuffers, native) at the end of each phase, MiB. */
  readonly heapAtEnd = new Map<string, { heapMb: number; externalMb: number; storeThreadMb?: number; heartbeatThreadMb?: number }>();
  private sampler: NodeJS.Timeout | undefined;
  private js!: JetStreamClient;
  private seed = 1;

  constructor(
    readonly backend: 'sqlite' | 'cassandra',
    readonly store: DefenderStore,
    readonly cluster: BenchCluster,
    readonly nc: NatsConnection,
  ) {}

  get pollMs(): number {
    return this.backend === 'sqlite' ? 1 : 3;
  }

  async init(): Promise<void> {
    this.js = jetstream(this.nc);
    this.nc.subscribe('defense.alarms.>', {
      callback: (err, msg) => {
        if (err) return;
        const at = performance.now();
        try {
          const a = JSON.parse(msg.string()) as { toolId: string; chamberId: string; sequence: number };
          const k = `${a.toolId}:${a.chamberId}:${a.sequence}`;
          const cur = this.alarms.get(k);
          if (cur) {
            cur.last = at;
            cur.count++;
          } else this.alarms.set(k, { first: at, last: at, count: 1 });
        } catch {
          // not an alarm payload
        }
      },
    });
    await this.nc.flush();
    this.sampler = setInterval(() => this.sample(), 200);
  }

  setPhase(p: string): void {
    this.sample();
    void this.heapOf(this.phase);
    this.phase = p;
  }

  private async heapOf(phase: string): Promise<void> {
    const d = this.cluster.defenders().find((x) => x.name === 'pod-0');
    if (!d) return;
    try {
      const text = (await getJson(`${d.url}/metrics`)).text;
      this.heapAtEnd.set(phase, {
        heapMb: parseCounter(text, 'nodejs_heap_size_total_bytes') / 2 ** 20,
        externalMb: parseCounter(text, 'nodejs_external_memory_bytes') / 2 ** 20,
        storeThreadMb: threadHeapMb(text, 'store'),
        heartbeatThreadMb: threadHeapMb(text, 'heartbeat'),
      });
    } catch {
      // metrics unavailable: leave the cells empty
    }
  }

  private sample(): void {
    for (const d of this.cluster.defenders()) {
      const m = d.app.child.pid ? memoryOf(d.app.child.pid) : undefined;
      if (!m) continue;
      this.peaks.set(this.phase, Math.max(this.peaks.get(this.phase) ?? 0, m.rssMb));
    }
  }

  hwmMb(): number {
    return Math.max(0, ...this.cluster.defenders().map((d) => memoryOf(d.app.child.pid ?? -1)?.hwmMb ?? 0));
  }

  stop(): void {
    if (this.sampler) clearInterval(this.sampler);
  }

  private nextSeed(): number {
    return Math.imul(++this.seed, 2654435761) >>> 0;
  }

  spec(c: Chamber, shape: Shape, shifted = false): RunSpec {
    c.runs++;
    return {
      toolId: c.toolId,
      chamberId: c.chamberId,
      runId: `${c.toolId}-run-${c.runs}`,
      svids: shape.svids,
      samples: shape.samples,
      freqHz: shape.hz,
      seed: this.nextSeed(),
      recipe: RECIPE,
      ...(shifted ? { shift: SHIFT, shiftSvids: P.shiftSvids } : {}),
    };
  }

  async publish(c: Chamber, spec: RunSpec): Promise<number> {
    const ack = await this.js.publish(
      notificationSubject(c.toolId, c.chamberId),
      JSON.stringify(notificationOf(spec)),
    );
    c.seqs.push(ack.seq);
    return ack.seq;
  }

  async hwm(c: ChamberRef): Promise<number> {
    return (await this.store.chamberState.get(c))?.highWaterMark ?? 0;
  }

  private check(): void {
    const crashed = this.cluster.crashed();
    if (crashed) throw new Error(crashed);
  }

  /** Waits until every published run of `chambers` is committed; returns per-chamber completion times. */
  async drain(
    chambers: Chamber[],
    timeoutMs: number,
    intervalMs: number,
    onTick?: (committed: number) => void,
  ): Promise<Map<string, number>> {
    const done = new Map<string, number>();
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      this.check();
      let committed = 0;
      for (const c of chambers) {
        const last = c.seqs[c.seqs.length - 1] ?? 0;
        if (done.has(c.key)) {
          committed += c.seqs.length;
          continue;
        }
        const h = await this.hwm(c);
        committed += c.seqs.filter((s) => s <= h).length;
        if (h >= last) done.set(c.key, performance.now());
      }
      onTick?.(committed);
      if (done.size === chambers.length) return done;
      if (Date.now() > deadline) return done;
      await sleep(intervalMs);
    }
  }

  async metrics(): Promise<string> {
    const texts = await Promise.all(
      this.cluster.defenders().map(async (d) => (await getJson(`${d.url}/metrics`)).text),
    );
    return texts.join('\n');
  }

  touch(chambers: Chamber[]): void {
    const now = Date.now();
    for (const c of chambers) c.lastActive = now;
  }

  /**
   * With BENCH_QUIET_SECONDS (e.g. 31 = the defender's idle poll + 1), waits until `chambers` have been
   * idle that long, so that no idle timer of an earlier phase fires during a burst. It isolated the
   * lost wake-up in `ChamberWorker.idle()` (fixed since); "first commit s" shows any such stall.
   */
  async quiet(chambers: Chamber[]): Promise<void> {
    if (P.quietSeconds <= 0) return;
    const until = Math.max(...chambers.map((c) => c.lastActive)) + P.quietSeconds * 1000;
    const ms = until - Date.now();
    if (ms > 0) {
      log(
        `${this.backend}: waiting ${f1(ms / 1000)} s until the chambers have been idle for ${P.quietSeconds} s`,
      );
      await sleep(ms);
    }
  }

  /** 31+ in-control runs per chamber so every chamber has its monitor model before measuring. */
  async warmUp(): Promise<void> {
    this.setPhase('warm-up');
    const t0 = performance.now();
    for (let k = 0; k < P.warmupRuns; k++) {
      const specs = this.chambers.map((c) => ({ c, spec: this.spec(c, c.warmShape) }));
      await Promise.all(specs.map(({ spec }) => this.store.traces.write(makeTrace(spec))));
      for (const { c, spec } of specs) await this.publish(c, spec);
    }
    const done = await this.drain(this.chambers, 300_000, 250);
    this.touch(this.chambers);
    if (done.size !== this.chambers.length) throw new Error('warm-up did not complete in 300 s');
    let frozen = 0;
    for (const c of this.chambers) if ((await this.store.uchart.currentLimitSets(c)).length > 0 || (await this.store.monitorModels.versions(c)).length > 0) frozen++;
    log(
      `${this.backend}: warm-up ${P.warmupRuns} runs x ${this.chambers.length} chambers in ${f1((performance.now() - t0) / 1000)} s; chambers with frozen limits: ${frozen}/${this.chambers.length}`,
    );
    if (frozen !== this.chambers.length)
      throw new Error('some chambers have no frozen limits after the warm-up: alarms could not be measured');
  }

  /** Sequential runs (one in flight): notification -> stored point and -> alarm latency. */
  async latency(chambers: Chamber[], shape: Shape, n: number): Promise<LatencyResult> {
    this.setPhase(`latency ${shape === HEAVY ? 'heavy' : 'typical'}`);
    const before = await this.metrics();
    const r: LatencyResult = {
      shape,
      stored: [],
      alarmFirst: [],
      alarmLast: [],
      alarmsPerRun: [],
      failed: 0,
      attemptsFailed: 0,
      paused: 0,
      process: emptyHisto(),
      traceRead: emptyHisto(),
      storeOps: new Map(),
      storeWrite: emptyHisto(),
      evaluate: emptyHisto(),
    };
    for (let i = 0; i < n; i++) {
      // Round-robin over the chambers; every other round is shifted, so each chamber alternates.
      const c = chambers[i % chambers.length];
      if (!c) throw new Error('no chamber');
      const shifted = Math.floor(i / chambers.length) % 2 === 1;
      const spec = this.spec(c, shape, shifted);
      await this.store.traces.write(makeTrace(spec));
      if (shape === HEAVY) gc(); // the bench's own 29 MB trace: collect it now, not while timing
      await sleep(P.gapMs);
      const t0 = performance.now();
      const seq = await this.publish(c, spec);
      const deadline = Date.now() + 60_000;
      let tStored = NaN;
      for (;;) {
        const h = await this.hwm(c);
        if (h >= seq) {
          tStored = performance.now();
          break;
        }
        if (Date.now() > deadline) throw new Error(`${c.key} seq ${seq} not committed within 60 s`);
        this.check();
        await sleep(this.pollMs);
      }
      const committed = await this.store.uchart.run(c, seq);
      if (!committed || committed.points.length === 0) {
        r.failed++;
        log(`${this.backend}: ${c.key} seq ${seq} committed without points (dead-lettered?)`);
        continue;
      }
      r.stored.push(tStored - t0);
      if (shifted) {
        const expected = (await this.store.alarms.ofRun(c, seq)).length;
        const k = `${c.key}:${seq}`;
        const until = Date.now() + 10_000;
        while ((this.alarms.get(k)?.count ?? 0) < expected && Date.now() < until) await sleep(1);
        const a = this.alarms.get(k);
        if (!a || expected === 0) {
          r.failed++;
          log(
            `${this.backend}: ${c.key} seq ${seq}: shifted run without alarm (stored ${expected}, received ${a?.count ?? 0})`,
          );
          continue;
        }
        r.alarmFirst.push(a.first - t0);
        r.alarmLast.push(a.last - t0);
        r.alarmsPerRun.push(a.count);
      }
    }
    this.touch(chambers);
    const after = await this.metrics();
    r.attemptsFailed =
      parseCounter(after, 'defender_messages_failed_total') -
      parseCounter(before, 'defender_messages_failed_total');
    r.paused =
      parseCounter(after, 'defender_processing_paused_total') -
      parseCounter(before, 'defender_processing_paused_total');
    r.process = diffHistogram(
      parseHistogram(after, 'defender_process_time_seconds'),
      parseHistogram(before, 'defender_process_time_seconds'),
    );
    r.traceRead = diffHistogram(
      parseHistogram(after, 'defender_cassandra_read_duration_seconds'),
      parseHistogram(before, 'defender_cassandra_read_duration_seconds'),
    );
    r.storeWrite = diffHistogram(
      parseHistogram(after, 'defender_cassandra_write_duration_seconds'),
      parseHistogram(before, 'defender_cassandra_write_duration_seconds'),
    );
    r.storeOps = diffTotals(
      histogramTotalsBy(after, 'defender_store_operation_duration_seconds', 'operation'),
      histogramTotalsBy(before, 'defender_store_operation_duration_seconds', 'operation'),
    );
    r.evaluate = diffHistogram(
      parseHistogram(after, 'defender_uchart_calculation_duration_seconds'),
      parseHistogram(before, 'defender_uchart_calculation_duration_seconds'),
    );
    if (process.env['BENCH_DEBUG'] === '1') {
      const slowest = r.stored.map((ms, i) => ({ ms, i })).sort((a, b) => b.ms - a.ms).slice(0, 8);
      log(`${this.backend} ${shape.name}: slowest stored (run index: ms) ${slowest.map((x) => `${x.i}: ${f1(x.ms)}`).join(', ')}`);
    }
    log(
      `${this.backend} ${shape.name}: stored p50 ${f1(percentile(r.stored, 50))} p99 ${f1(percentile(r.stored, 99))} ms; ` +
        `alarm p50 ${f1(percentile(r.alarmFirst, 50))} p99 ${f1(percentile(r.alarmFirst, 99))} ms; process mean ${f1((r.process.sum / r.process.count) * 1000)} ms; ${r.attemptsFailed} failed attempts, ${r.paused} pauses, ${r.failed} runs without points/alarm`,
    );
    return r;
  }

  /** Pre-writes `runsPer` traces per chamber, publishes all notifications at once, counts commits. */
  async saturate(
    label: string,
    chambers: Chamber[],
    shape: Shape,
    runsPer: number,
    during?: () => Promise<void>,
  ): Promise<ThroughputResult> {
    const pending: { c: Chamber; spec: RunSpec }[] = [];
    for (let r = 0; r < runsPer; r++) {
      const specs = chambers.map((c) => ({ c, spec: this.spec(c, shape) }));
      await Promise.all(specs.map(({ spec }) => this.store.traces.write(makeTrace(spec))));
      pending.push(...specs);
    }
    gc();
    await this.quiet(chambers);
    this.setPhase(label);
    const defenders = this.cluster.defenders();
    const owners = new Map<string, string>();
    for (const d of defenders) {
      const res = await getJson(`${d.url}/api/v1/chambers`);
      for (const w of (res.body as { chambers: { chamber: string }[] }).chambers)
        owners.set(w.chamber, d.name);
    }
    const cpu0 = new Map(defenders.map((d) => [d.name, cpuMsOf(d.app.child.pid ?? -1)]));
    const load = loadAverage();
    const firstSeq = new Map(chambers.map((c) => [c.key, c.seqs.length]));
    const t0 = performance.now();
    // `during` (the profiler) starts with the first commit, so a slow start does not waste it.
    let profiling: Promise<void> | undefined;
    // Every notification at once (JetStream publishes pipelined, acknowledged in order per subject).
    const acks = pending.map(({ c, spec }) =>
      this.js
        .publish(notificationSubject(c.toolId, c.chamberId), JSON.stringify(notificationOf(spec)))
        .then((a) => ({ c, seq: a.seq })),
    );
    for (const { c, seq } of (await Promise.all(acks)).sort((a, b) => a.seq - b.seq)) c.seqs.push(seq);
    const total = pending.length;
    const timeline: { t: number; n: number }[] = [];
    const done = await this.drain(chambers, 240_000, this.backend === 'sqlite' ? 50 : 150, (n) => {
      const committed = n - sumPrev(chambers, firstSeq);
      timeline.push({ t: performance.now() - t0, n: committed });
      if (committed > 0 && during && !profiling) profiling = during();
    });
    this.touch(chambers);
    const tEnd = Math.max(...done.values()) - t0;
    if (process.env['BENCH_DEBUG'] === '1')
      log(
        `${label} timeline: ${timeline
          .filter((_, i) => i % 10 === 0)
          .map((p) => `${f1(p.t / 1000)}s:${p.n}`)
          .join(' ')}`,
      );
    await profiling;
    const at = (frac: number) => timeline.find((p) => p.n >= frac * total)?.t ?? NaN;
    const steadyRate = (0.8 * total) / ((at(0.9) - at(0.1)) / 1000);
    const perDefender = defenders.map((d) => {
      const mine = chambers.filter((c) => owners.get(c.key) === d.name);
      const runs = mine.reduce((s, c) => s + c.seqs.length - (firstSeq.get(c.key) ?? 0), 0);
      const end = Math.max(0, ...mine.map((c) => (done.get(c.key) ?? NaN) - t0));
      const cpu = cpuMsOf(d.app.child.pid ?? -1) - (cpu0.get(d.name) ?? NaN);
      return { pod: d.name, runs, seconds: end / 1000, cpuMsPerRun: runs > 0 ? cpu / runs : NaN };
    });
    const firstCommitS = (timeline.find((p) => p.n > 0)?.t ?? NaN) / 1000;
    const res: ThroughputResult = {
      firstCommitS,
      label,
      defenders: defenders.length,
      runs: total,
      chambers: chambers.length,
      seconds: tEnd / 1000,
      steadyRate,
      perDefender,
      load,
      incomplete: chambers.length - done.size,
    };
    log(
      `${this.backend} ${label}: ${total} runs in ${f1(tEnd / 1000)} s = ${f1(total / (tEnd / 1000))} runs/s (steady ${f1(steadyRate)}); per defender ${perDefender.map((p) => `${p.pod} ${p.runs} runs ${f1(p.runs / p.seconds)}/s ${f1(p.cpuMsPerRun)} CPU ms/run`).join(', ')}`,
    );
    return res;
  }
}

/** A thread's committed V8 heap from `defender_thread_heap_bytes`, MiB; `undefined` without the series. */
function threadHeapMb(metricsText: string, thread: string): number | undefined {
  const line = metricsText
    .split('\n')
    .find((l) => l.startsWith('defender_thread_heap_bytes{') && l.includes(`thread="${thread}"`) && l.includes('kind="total"'));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1)) / 2 ** 20;
}

function sumPrev(chambers: Chamber[], firstSeq: Map<string, number>): number {
  let n = 0;
  for (const c of chambers) n += firstSeq.get(c.key) ?? 0;
  return n;
}

function emptyHisto(): Histo {
  return { buckets: [], sum: 0, count: 0 };
}

async function cpuProfile(d: Proc, seconds: number): Promise<CpuProfile> {
  const res = await fetch(`${d.url}/debug/cpu-profile`, {
    method: 'POST',
    headers: { authorization: `Bearer ${DEBUG_TOKEN}`, 'x-profile-seconds': String(seconds) },
  });
  if (!res.ok) throw new Error(`cpu-profile: HTTP ${res.status} ${await res.text()}`);
  return (await res.json()) as CpuProfile;
}

async function runBackend(
  backend: 'sqlite' | 'cassandra',
  cassandra: CassandraHandle | undefined,
): Promise<BackendResult> {
  const dir = mkdtempSync(join(tmpdir(), 'defender-bench-pipeline-'));
  const keyspace = `bench_pipeline_${process.pid}`;
  let nats: NatsServerHandle | undefined;
  let store: DefenderStore | undefined;
  let cluster: BenchCluster | undefined;
  let nc: NatsConnection | undefined;
  let bench: Bench | undefined;
  const loadBefore = loadAverage();
  try {
    nats = await startNatsServer();
    let storeEnv: Record<string, string>;
    let detail: string;
    if (backend === 'sqlite') {
      const filename = join(dir, 'defender.db');
      store = await SqliteStore.open({ filename });
      storeEnv = { STORE_BACKEND: 'sqlite', SQLITE_PATH: filename };
      detail = 'SQLite file (WAL, synchronous=NORMAL) shared by the bench and the cluster';
    } else {
      if (!cassandra) throw new Error('no Cassandra');
      store = await CassandraStore.connect({
        contactPoints: cassandra.contactPoints,
        localDataCenter: cassandra.localDataCenter,
        keyspace,
        requestTimeoutMs: 60_000,
      });
      storeEnv = {
        STORE_BACKEND: 'cassandra',
        CASSANDRA_HOSTS: cassandra.contactPoints.join(','),
        CASSANDRA_LOCAL_DC: cassandra.localDataCenter,
        CASSANDRA_KEYSPACE: keyspace,
      };
      detail = `Cassandra ${cassandra.version}${cassandra.external ? ' (CASSANDRA_HOSTS)' : ' (private single node from the harness)'}, RF 1, QUORUM`;
    }

    const chambers: Chamber[] = [];
    for (let i = 1; i <= P.typicalChambers; i++)
      chambers.push({
        toolId: `ptool${String(i).padStart(2, '0')}`,
        chamberId: 'ch1',
        key: '',
        shape: TYPICAL,
        warmShape: TYPICAL,
        runs: 0,
        seqs: [],
        lastActive: 0,
      });
    for (let i = 1; i <= P.heavyChambers; i++)
      chambers.push({
        toolId: `htool${String(i).padStart(2, '0')}`,
        chamberId: 'ch1',
        key: '',
        shape: HEAVY,
        warmShape: HEAVY_WARM,
        runs: 0,
        seqs: [],
        lastActive: 0,
      });
    for (const c of chambers) {
      c.key = `${c.toolId}:${c.chamberId}`;
      await store.chamberMetadata.upsert({
        toolId: c.toolId,
        chamberId: c.chamberId,
        svidCount: c.shape.svids.length,
        collectionFreqHz: c.shape.hz,
        contextDurationSeconds: c.shape.samples / c.shape.hz,
        weight: c.shape.svids.length * c.shape.samples,
        lastUpdated: new Date(),
        source: 'configured',
        observedRuns: 0,
      });
    }

    const cl = await BenchCluster.start({
      natsUrl: nats.url,
      storeEnv,
      logLevel: process.env['BENCH_LOG_LEVEL'] ?? 'info',
    });
    cluster = cl;
    const defenderEnv: Record<string, string> = {
      DEBUG_TOKEN,
      ...P.defenderEnv,
      ...(P.processTimeoutSeconds ? { PROCESS_TIMEOUT_SECONDS: P.processTimeoutSeconds } : {}),
    };
    await cl.startAgent();
    await cl.startController(
      'controller-a',
      process.env['BENCH_CONTROLLER_LOG_LEVEL']
        ? { LOG_LEVEL: process.env['BENCH_CONTROLLER_LOG_LEVEL'] }
        : {},
    );
    await cl.startDefender('pod-0', defenderEnv);
    await cl.settle(1, chambers.length);
    log(`${backend}: cluster up (1 defender, ${chambers.length} chambers)`);
    const conn = await connect({ servers: nats.url });
    nc = conn;
    const b = new Bench(backend, store, cl, conn);
    bench = b;
    b.chambers.push(...chambers);
    await b.init();

    const typical = chambers.filter((c) => c.shape === TYPICAL);
    const heavy = chambers.filter((c) => c.shape === HEAVY);
    await b.warmUp();

    const result: BackendResult = {
      backend,
      detail,
      throughput: [],
      memory: [],
      hwmMb: 0,
      failedAttempts: 0,
      deadLetters: 0,
      loadBefore,
      loadAfter: NaN,
      notes: [],
    };
    const optional = async (what: string, fn: () => Promise<void>) => {
      try {
        await fn();
      } catch (err) {
        const msg = `${what} failed: ${(err as Error).message}`;
        log(`${backend}: ${msg}`);
        // The table gets the gist; the full message (process states) is in the log above.
        result.notes.push(
          msg.length > 160
            ? `${msg.slice(0, msg.indexOf(' (') > 0 ? msg.indexOf(' (') : 160)} (details in the bench log)`
            : msg,
        );
      }
    };
    if (P.typicalRuns > 0)
      result.typical = await b.latency(typical.slice(0, P.latencyChambers), TYPICAL, P.typicalRuns);
    if (P.heavyRuns > 0 && heavy.length > 0) result.heavy = await b.latency(heavy, HEAVY, P.heavyRuns);
    if (P.throughputRuns > 0)
      result.throughput.push(
        await b.saturate('typical burst, 1 defender', typical, TYPICAL, P.throughputRuns),
      );
    if (P.heavyBurstRuns > 0 && heavy.length > 0) {
      await optional(
        'heavy burst',
        async () =>
          void result.throughput.push(
            await b.saturate('heavy burst, 1 defender', heavy, HEAVY, P.heavyBurstRuns),
          ),
      );
    }

    // pod-0's kernel peak before profiling: the V8 profiler itself holds samples and builds a large JSON answer.
    const hwmBeforeProfile = b.hwmMb();

    if (P.profile) {
      await optional('profiling', async () => {
        const cpuMs = result.throughput[0]?.perDefender[0]?.cpuMsPerRun;
        const seconds = 6;
        // Enough runs to keep the defender busy for the whole profile (the profiler slows it down).
        const runsPer = Math.max(
          2,
          Math.ceil(((seconds + 1) * 1000) / (Number.isFinite(cpuMs) && cpuMs ? cpuMs : 20) / typical.length),
        );
        const d = cl.defenders().find((x) => x.name === 'pod-0');
        if (!d) throw new Error('pod-0 is not running');
        let profile: CpuProfile | undefined;
        await b.saturate(
          'profiled typical burst (not reported as throughput)',
          typical,
          TYPICAL,
          runsPer,
          async () => {
            profile = await cpuProfile(d, seconds);
          },
        );
        if (profile) {
          result.profile = summariseProfile(profile, bundleOf('defender'));
          result.profileDefenders = cl.defenders().length;
          if (P.keepProfiles) {
            mkdirSync(P.keepProfiles, { recursive: true });
            writeFileSync(join(P.keepProfiles, `defender-${backend}.cpuprofile`), JSON.stringify(profile));
          }
          log(
            `${backend}: profile top areas: ${result.profile.areas
              .slice(0, 8)
              .map((a) => `${a.area} ${f0(a.ms)} ms`)
              .join(', ')}`,
          );
        }
      });
    }

    if (P.twoDefenders && P.throughputRuns > 0) {
      await optional('the 2-defender burst', async () => {
        b.setPhase('scaling to 2 defenders');
        await cl.startDefender('pod-1', defenderEnv);
        await cl.settle(2, chambers.length, 30_000);
        const owners = await Promise.all(
          cl
            .defenders()
            .map(
              async (d) =>
                `${d.name}: ${((await getJson(`${d.url}/api/v1/chambers`)).body as { chambers: unknown[] }).chambers.length} chambers`,
            ),
        );
        log(`${backend}: 2 defenders (${owners.join(', ')})`);
        result.throughput.push(
          await b.saturate('typical burst, 2 defenders', typical, TYPICAL, P.throughputRuns),
        );
      });
    }

    b.setPhase('end');
    const pod0 = cl.defenders().find((x) => x.name === 'pod-0');
    const others = cl.defenders().filter((x) => x !== pod0);
    result.hwmMb = Math.max(
      hwmBeforeProfile,
      ...others.map((d) => memoryOf(d.app.child.pid ?? -1)?.hwmMb ?? 0),
    );
    await sleep(200); // the last phase's heap figures
    result.memory = [...b.peaks.entries()]
      .filter(([p]) => p !== 'end' && !p.startsWith('scaling') && !p.startsWith('profiled'))
      .map(([phase, peakRssMb]) => ({ phase, peakRssMb, ...b.heapAtEnd.get(phase) }));
    const m = await b.metrics();
    result.failedAttempts = parseCounter(m, 'defender_messages_failed_total');
    result.deadLetters = parseCounter(m, 'defender_dead_letters_total');
    result.loadAfter = loadAverage();
    return result;
  } finally {
    bench?.stop();
    await nc?.close().catch(() => undefined);
    await cluster?.stop(LOG_DIR, `${backend}-`).catch(() => undefined);
    await store?.close().catch(() => undefined);
    await nats?.stop().catch(() => undefined);
    if (backend === 'cassandra' && cassandra) {
      const admin = new Client({
        contactPoints: cassandra.contactPoints,
        localDataCenter: cassandra.localDataCenter,
        socketOptions: { readTimeout: 60_000 },
      });
      try {
        await admin.connect();
        await admin.execute(`DROP KEYSPACE IF EXISTS ${keyspace}`);
      } catch (err) {
        log(`could not drop keyspace ${keyspace}: ${(err as Error).message}`);
      } finally {
        await admin.shutdown();
      }
    }
    rmSync(dir, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------------
// Report

const STORE_NAME = { sqlite: 'SQLite', cassandra: 'Cassandra' } as const;

function verdict(p99: number, target: number | undefined): string {
  if (target === undefined) return 'no target';
  if (!Number.isFinite(p99)) return 'NO DATA';
  return p99 <= target ? 'PASS' : `FAIL (${(p99 / target).toFixed(1)}x)`;
}

function latencyRows(r: BackendResult): (string | number)[][] {
  const rows: (string | number)[][] = [];
  for (const lat of [r.typical, r.heavy]) {
    if (!lat) continue;
    const target = lat.shape === TYPICAL ? TARGET_MS[r.backend] : undefined;
    const tcell = target !== undefined ? `p99 <= ${target} ms` : '-';
    const row = (what: string, s: number[], t: number | undefined) => [
      STORE_NAME[r.backend],
      lat.shape.name,
      what,
      s.length,
      f1(percentile(s, 50)),
      f1(percentile(s, 99)),
      f1(s.length ? Math.max(...s) : NaN),
      s.filter((x) => x > 1000).length,
      t !== undefined ? tcell : '-',
      verdict(percentile(s, 99), t),
    ];
    rows.push(row('notification -> stored point (high-water mark visible)', lat.stored, target));
    rows.push(row('notification -> first alarm (shifted runs)', lat.alarmFirst, target));
    rows.push(
      row(
        `notification -> last alarm of the run (${f0(percentile(lat.alarmsPerRun, 50))} alarms)`,
        lat.alarmLast,
        undefined,
      ),
    );
    const p = lat.process;
    rows.push([
      STORE_NAME[r.backend],
      lat.shape.name,
      '`defender_process_time_seconds` (read -> commit + publish; bucket-interpolated)',
      p.count,
      f1(histogramQuantile(p, 0.5) * 1000),
      f1(histogramQuantile(p, 0.99) * 1000),
      `mean ${f1((p.sum / p.count) * 1000)}`,
      '-',
      '-',
      'info',
    ]);
  }
  return rows;
}

function stageRows(r: BackendResult): (string | number)[][] {
  const mean = (h: Histo, per = 1) => (h.count > 0 ? f1((h.sum / (h.count / per)) * 1000) : '-');
  const rows: (string | number)[][] = [];
  for (const lat of [r.typical, r.heavy]) {
    if (!lat) continue;
    const runs = lat.process.count;
    // storeRead counts chamber-state reads and trace reads; storeWrite claims and commits. Per run: one trace read, one commit.
    rows.push([
      STORE_NAME[r.backend],
      lat.shape.name,
      runs,
      f1(percentile(lat.stored, 50)),
      mean(lat.process),
      runs > 0 ? f1((lat.traceRead.sum / runs) * 1000) : '-',
      mean(lat.evaluate),
      runs > 0 ? f1((lat.storeWrite.sum / runs) * 1000) : '-',
      `${lat.attemptsFailed} / ${lat.paused}`,
    ]);
  }
  return rows;
}

/** Store operations per run of the sequential phases, slowest per run first. */
function storeOpRows(r: BackendResult): (string | number)[][] {
  const rows: (string | number)[][] = [];
  for (const lat of [r.typical, r.heavy]) {
    if (!lat) continue;
    const runs = lat.process.count;
    if (runs === 0) continue;
    const ops = [...lat.storeOps.entries()].sort((a, b) => b[1].sum - a[1].sum);
    for (const [op, t] of ops) {
      rows.push([STORE_NAME[r.backend], lat.shape.name, op, (t.count / runs).toFixed(2), f1((t.sum / t.count) * 1000), f1((t.sum / runs) * 1000)]);
    }
  }
  return rows;
}

function report(results: BackendResult[], started: number): { body: string; summary: string } {
  const latency = table(
    ['store', 'runs', 'measured', 'n', 'p50 ms', 'p99 ms', 'max ms', 'runs > 1 s', 'target', 'result'],
    results.flatMap(latencyRows),
  );
  const stages = table(
    [
      'store',
      'runs',
      'n',
      'stored p50 ms (bench)',
      'process mean ms (defender)',
      'trace read ms / run',
      'indicators + rules mean ms',
      'commit ms / run',
      'failed attempts / pauses',
    ],
    results.flatMap(stageRows),
  );
  const ops = table(['store', 'runs', 'operation', 'calls / run', 'mean ms / call', 'ms / run'], results.flatMap(storeOpRows));
  const tput = table(
    [
      'store',
      'burst',
      'defenders',
      'chambers',
      'runs',
      'wall s',
      'first commit s',
      'runs/s (all)',
      'runs/s steady (10-90 %)',
      'per defender: runs, runs/s, CPU ms/run',
      'load avg (1 min)',
    ],
    results.flatMap((r) =>
      r.throughput.map((t) => [
        STORE_NAME[r.backend],
        t.label,
        t.defenders,
        t.chambers,
        t.runs + (t.incomplete ? ` (${t.incomplete} chambers incomplete)` : ''),
        f1(t.seconds),
        t.firstCommitS.toFixed(2),
        f1(t.runs / t.seconds),
        f1(t.steadyRate),
        t.perDefender
          .map((p) => `${p.pod}: ${p.runs}, ${f1(p.runs / p.seconds)}/s, ${f0(p.cpuMsPerRun)} ms`)
          .join('; '),
        t.load.toFixed(1),
      ]),
    ),
  );
  const mem = table(
    [
      'store',
      'phase',
      'peak VmRSS MB (max over defenders, sampled 5/s)',
      'pod-0 V8 heap / external MB at phase end',
      "pod-0 other threads' V8 heaps MB: store / heartbeat",
      'target',
      'result',
    ],
    results.flatMap((r) => [
      ...r.memory.map((m) => [
        STORE_NAME[r.backend],
        m.phase,
        f0(m.peakRssMb),
        m.heapMb !== undefined ? `${f0(m.heapMb)} / ${f0(m.externalMb ?? NaN)}` : '-',
        m.storeThreadMb !== undefined || m.heartbeatThreadMb !== undefined
          ? `${m.storeThreadMb !== undefined ? f0(m.storeThreadMb) : '-'} / ${m.heartbeatThreadMb !== undefined ? f0(m.heartbeatThreadMb) : '-'}`
          : '-',
        `<= ${RSS_TARGET_MB} MB`,
        m.peakRssMb <= RSS_TARGET_MB ? 'PASS' : 'FAIL',
      ]),
      ...(r.memory.length > 0
        ? [
            [
              STORE_NAME[r.backend],
              'whole run: VmHWM (kernel peak RSS; pod-0 read before profiling)',
              f0(r.hwmMb),
              '-',
              '-',
              `<= ${RSS_TARGET_MB} MB`,
              r.hwmMb <= RSS_TARGET_MB ? 'PASS' : 'FAIL',
            ],
          ]
        : []),
    ]),
  );
  const profiles = results
    .flatMap((r) => (r.profile ? [{ r, p: r.profile }] : []))
    .map(({ r, p }) => {
      return [
        `**${STORE_NAME[r.backend]}**: pod-0 (of ${r.profileDefenders} defender(s)) during a burst of typical runs, ${f1(p.totalMs / 1000)} s profiled, ${f0((p.busyMs / p.totalMs) * 100)} % busy (the profiler slows the process by roughly a quarter):`,
        '',
        table(
          ['area (self time)', 'ms', '% of busy'],
          p.areas.slice(0, 10).map((a) => [a.area, f0(a.ms), f1((a.ms / p.busyMs) * 100)]),
        ),
        '',
        table(
          ['function (self time)', 'where', 'ms', '% of busy'],
          p.functions
            .slice(0, 12)
            .map((f) => [`\`${f.fn}\``, f.where, f0(f.ms), f1((f.ms / p.busyMs) * 100)]),
        ),
      ].join('\n');
    })
    .join('\n\n');

  const verdicts: string[] = [];
  for (const r of results) {
    const t = TARGET_MS[r.backend];
    if (r.typical) {
      const a = percentile(r.typical.alarmFirst, 99);
      const s = percentile(r.typical.stored, 99);
      verdicts.push(
        `${STORE_NAME[r.backend]} typical notification -> alarm p99 ${f1(a)} ms (target <= ${t} ms): ${a <= t ? 'met' : 'MISSED'}; -> stored point p99 ${f1(s)} ms: ${s <= t ? 'met' : 'MISSED'}`,
      );
    }
    const peak = Math.max(r.hwmMb, ...r.memory.map((m) => m.peakRssMb));
    if (r.memory.length > 0)
      verdicts.push(
        `${STORE_NAME[r.backend]} defender peak RSS ${f0(peak)} MB (target <= ${RSS_TARGET_MB} MB): ${peak <= RSS_TARGET_MB ? 'met' : 'MISSED'}`,
      );
    for (const n of r.notes) verdicts.push(`${STORE_NAME[r.backend]}: ${n}`);
    const stalled = [r.typical, r.heavy].flatMap((l) => (l ? l.stored.filter((x) => x > 5000) : []));
    const stalledBursts = r.throughput.filter((t) => t.firstCommitS > 5);
    if (stalled.length > 0 || stalledBursts.length > 0) {
      const what = [
        ...(stalled.length > 0
          ? [`${stalled.length} measured run(s) waited ${stalled.map((x) => f1(x / 1000)).join(', ')} s`]
          : []),
        ...(stalledBursts.length > 0
          ? [
              `${stalledBursts.length} burst(s) started only after ${stalledBursts.map((t) => f1(t.firstCommitS)).join(', ')} s`,
            ]
          : []),
      ].join(' and ');
      verdicts.push(
        `${STORE_NAME[r.backend]}: ${what}: a wait of up to the idle poll (\`IDLE_POLL_SECONDS\`, ${IDLE_POLL_SECONDS} s) means the worker ` +
          'missed the wake-up and found the run on its poll (see `ChamberWorker.idle()` in libs/pipeline).',
      );
    }
    if (r.failedAttempts || r.deadLetters)
      verdicts.push(
        `${STORE_NAME[r.backend]}: ${r.failedAttempts} failed attempts, ${r.deadLetters} dead letters during the run`,
      );
  }
  const loads = results
    .map((r) => `${STORE_NAME[r.backend]} ${r.loadBefore.toFixed(1)} -> ${r.loadAfter.toFixed(1)}`)
    .join(', ');
  const body = [
    'A real cluster of built processes (`dist/apps/*/main.js`): a private nats-server, 1 election agent, 1 assignment controller and 1 defender ' +
      '(a 2nd joins for the last burst), default defender settings (`MAX_CONCURRENT_MESSAGES` 10, `PROCESS_TIMEOUT_SECONDS` ' +
      `${P.processTimeoutSeconds ?? 5}, cache 100 MB, default strategy: the chamber monitor over every SVID x time segment x statistic, its model fitted on 30 runs).`,
    '',
    results.map((r) => `- ${STORE_NAME[r.backend]}: ${r.detail}.`).join('\n'),
    `- Chambers: ${P.typicalChambers} typical (100 SVIDs x 1 Hz x 1,200 s) and ${P.heavyChambers} heavy (200 SVIDs x 10 Hz x 1,800 s). ` +
      `Each first gets ${P.warmupRuns} in-control runs so its limits are frozen (heavy warm-up runs: the same 200 SVIDs, 1,800 samples each; not measured).`,
    `- Latency: runs one at a time (${P.gapMs} ms apart) round-robin over ${P.latencyChambers} typical / ${P.heavyChambers} heavy chambers; every 2nd run is shifted by ${SHIFT} sd on ${P.shiftSvids} SVIDs. ` +
      'The bench writes the trace to the store (not timed), then takes t0 just before the JetStream publish of the notification. ' +
      `"Stored point": the first poll of the chamber's high-water mark (every ${'1'} ms SQLite / 3 ms Cassandra, time taken when the read returns) that shows the run, which is committed with its points in one fenced operation; ` +
      'every run is then checked to hold points. "Alarm": arrival of the run\'s first (and last) `defense.alarms.<tool>.<chamber>` message at a core-NATS subscriber in the bench.',
    "- `defender_process_time_seconds` is the defender's own histogram (message read -> commit + publish), diffed across the phase; its quantiles are interpolated inside the buckets (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5 s).",
    `- Throughput: traces of ${P.throughputRuns} runs per typical chamber (${P.heavyBurstRuns} per heavy chamber) written first, then every notification published at once; runs counted committed (high-water marks) until all are in. ` +
      (P.quietSeconds > 0
        ? `Each burst starts after its chambers have been idle for ${P.quietSeconds} s. `
        : '') +
      '"first commit s" is the time from the first publication to the first commit (a stall shows there). ' +
      '"CPU ms/run" is the defender\'s user+system CPU (from /proc) over the burst divided by its runs, i.e. the cost that bounds a defender on one core.',
    "- Memory: VmRSS of the defender processes from /proc, sampled every 200 ms, peak per phase; VmHWM is the kernel's peak since start. At each phase's end pod-0's main V8 heap and external memory (Node's default metrics) and the committed V8 heaps of its SQLite store thread and heartbeat thread (`defender_thread_heap_bytes`, read every 5 s; each thread is an isolate of its own).",
    `- Load average (1 min) before -> after each backend: ${loads} on ${'2'} cores. Other jobs shared the machine; latencies include their interference.`,
    `- Whole bench: ${f0((performance.now() - started) / 1000)} s${QUICK ? ' (BENCH_QUICK=1: fewer runs)' : ''}.`,
    '',
    '**Targets** (design.md section 5): notification -> alarm for typical runs p99 <= 100 ms (SQLite), <= 250 ms (Cassandra); defender RSS <= 300 MB. ' +
      'The same latency bound is applied to the stored point. Heavy runs have no latency target.',
    '',
    verdicts.map((v) => `- ${v}`).join('\n'),
    '',
    '### Latency',
    '',
    latency,
    '',
    ...results.flatMap((r) => {
      const chart = r.typical
        ? latencyChart(
            `${STORE_NAME[r.backend]}, typical runs: latency percentiles`,
            [
              { label: 'notification -> stored point', ms: r.typical.stored },
              { label: 'notification -> first alarm', ms: r.typical.alarmFirst },
            ],
            { label: `target p99 <= ${TARGET_MS[r.backend]} ms`, ms: TARGET_MS[r.backend] },
          )
        : '';
      return chart ? [chart, ''] : [];
    }),
    "### Where the time goes (sequential runs; means from the defender's histograms)",
    '',
    '"trace read" and "commit" are per run (the histograms `defender_cassandra_read_duration_seconds` / `_write_duration_seconds`, named as in the seeds for either backend); the rest of the process time is history, limits, strategy and metadata reads, the notification read and the alarm publications.',
    '',
    stages,
    '',
    'Store operations of the same runs (`defender_store_operation_duration_seconds` by operation; reads of one run are issued concurrently, so their times overlap):',
    '',
    ops,
    '',
    '### Throughput at saturation',
    '',
    tput,
    '',
    '### Defender memory',
    '',
    mem,
    ...(profiles
      ? ['', '### CPU profile (`POST /debug/cpu-profile`, self time, bundle mapped to sources)', '', profiles]
      : []),
  ].join('\n');
  return { body, summary: [latency, '', stages, '', ops, '', tput, '', mem].join('\n') };
}

// ---------------------------------------------------------------------------------------------

/** The harness picks free ports, which another process may take before the JVM binds them: retry once. */
async function startCassandraWithRetry(): Promise<CassandraHandle> {
  try {
    return await startCassandra({ heapMb: 1024, log });
  } catch (err) {
    log(`cassandra: start failed (${(err as Error).message.split('\n')[0]}); retrying once`);
    return startCassandra({ heapMb: 1024, log });
  }
}

async function main(): Promise<void> {
  buildBenchApps();
  const started = performance.now();
  log(`parameters: ${JSON.stringify(P)}`);
  const results: BackendResult[] = [];
  let cassandra: CassandraHandle | undefined;
  try {
    for (const backend of P.backends) {
      try {
        if (backend === 'cassandra') cassandra = await startCassandraWithRetry();
        results.push(await runBackend(backend, cassandra));
      } catch (err) {
        // One backend failing (e.g. the node could not start) still reports the other.
        const msg = (err as Error).message.split('\n')[0]?.slice(0, 300) ?? String(err);
        log(`${backend}: FAILED: ${(err as Error).stack ?? msg}`);
        results.push({
          backend,
          detail: 'not measured',
          throughput: [],
          memory: [],
          hwmMb: NaN,
          failedAttempts: 0,
          deadLetters: 0,
          loadBefore: loadAverage(),
          loadAfter: loadAverage(),
          notes: [`the run failed: ${msg}`],
        });
      } finally {
        if (backend === 'cassandra') {
          await cassandra?.stop();
          cassandra = undefined;
        }
      }
    }
  } finally {
    await cassandra?.stop();
  }
  const { body, summary } = report(results, started);
  if (P.write)
    writeBenchmarkSection(
      'pipeline',
      'Run pipeline: notification -> stored point / alarm, throughput, memory',
      'npm run bench:pipeline',
      body,
    );
  else log('not writing docs/benchmarks.md (BENCH_QUICK without BENCH_WRITE=1)');
  log(`process logs: ${LOG_DIR}`);
  process.stdout.write(`${body}\n`);
  void summary;
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
