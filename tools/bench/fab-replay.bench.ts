// Whole-fab replay (issue 10; design.md section 5: ">= 10x real time with 2 defenders (SQLite)" and
// "defender RSS <= 300 MB"). Writes the `fab-replay` section of docs/benchmarks.md.
//
// A fab of 5,000 chambers from the fab simulator (tools/fab-sim: its tool types, SVID counts, rates,
// contexts, recipes and traces) is replayed against a real cluster of built processes: a private
// nats-server, 1 election agent, 1 assignment controller and 2 defenders on one SQLite file. After a
// Phase I warm-up (every chamber's first runs, as fast as the cluster takes them, so limits are
// frozen), the chambers' runs are published on their steady-state schedule at a speed factor
// (simulated seconds per wall second) for a fixed window; the speed grows geometrically until a step
// is not sustained, then is bisected. Sustained (fab-replay/sustain.ts): the publisher offered the
// scheduled load, the backlog (published, not committed) did not trend upwards, the lag
// (notification publish -> commit) did not grow, the rest drained promptly, nothing was lost or
// dead-lettered. Between steps the backlog drains, so each step starts empty.
//
// Run: npm run bench:fab   (heavy: flock /tmp/defender-heavy.lock npm run bench:fab)
//   (= node --expose-gc -r ./tools/scripts/register.js tools/bench/fab-replay.bench.ts)
// Builds the apps first (nx build: seconds when nothing changed).
//
// Parameters (environment): FAB_QUICK=1 or BENCH_QUICK=1 (smoke run: 60 chambers, short steps; writes
// docs only with FAB_WRITE=1), FAB_CHAMBERS (5000), FAB_WARMUP_RUNS (the default strategy's Phase I
// + 1: limits freeze with the run after Phase I), FAB_STEP_SECONDS (measurement window per step, 60),
// FAB_SPEED_START (4), FAB_SPEED_MAX
// (64), FAB_SPEED_GROWTH (2), FAB_REFINE (bisection steps, 2), FAB_SEED (1), FAB_CONCURRENCY
// (runs the publisher writes at once, 4), FAB_WARMUP_BACKLOG (most warm-up runs in flight, 300),
// FAB_WRITE=0|1, FAB_LOG_DIR (process output), FAB_LOG_LEVEL (apps' LOG_LEVEL, warn),
// FAB_RESULT_FILE (the raw results as JSON; default tmp/fab-replay-result.json),
// FAB_REPORT_FROM=<json> (only re-renders the report from a saved result, no cluster),
// FAB_DEFENDER_ENV=K=V,K=V (extra defender environment, e.g. NODE_OPTIONS=--max-old-space-size=N; an
// empty NODE_OPTIONS or MALLOC_* (K=) takes the image's setting away;
// FAB_DEFENDER_ENV_0, FAB_DEFENDER_ENV_1: for one defender only, to compare settings in one run),
// FAB_PEAK_DETAIL_MB (200: a defender's memory is broken down at each new peak from this VmRSS on),
// FAB_SECTION=<name> (write the report into this docs/benchmarks.md section instead of fab-replay, for a
// run with other parameters, e.g. a memory run with fewer warm-up runs), FAB_HEAP_SNAPSHOTS=<dir> (a V8 heap snapshot of each defender after the warm-up and after the last
// step, for tools/bench/heap-summary.ts or Chrome DevTools; taking one pauses that defender).
// FAB_OVERLOAD (1.5: after the search, one step at this multiple of the highest sustained speed, to see
// overload degrade gracefully; 0: none). FAB_PROFILE=<dir> (CPU profiles of pod-0's main and SQLite
// store threads over each step's window, <dir>/pod-0-<thread>-step<k>-<speed>x.cpuprofile, their top
// areas and functions logged). FAB_WARM_STATE=<dir> (the warm-up's stores kept in <dir> and restored by
// later runs of the same fab, chambers, seed, warm-up runs and defenders: fab-replay/warm-state.ts).
// FAB_STORE=sqlite|cassandra (sqlite; cassandra: a private node from the harness, or CASSANDRA_HOSTS,
// a keyspace of this run; the design's speed target is for SQLite, so this is for memory and cost
// comparisons; not with FAB_WARM_STATE).
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Client } from 'cassandra-driver';
import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import { jetstream, type JetStreamClient } from '@nats-io/jetstream';
import type { DefenderStore } from '@defender/contracts';
import {
  imageRuntimeEnv,
  ProgressLine,
  RUNTIME_ENV_PATTERN,
  remainingMs,
  shortDuration,
  startCassandra,
  startNatsServer,
  textBar,
  type CassandraHandle,
  type NatsServerHandle,
} from '@defender/infra-harness';
import { DEFAULT_STRATEGY } from '@defender/defense-rules';
import { CassandraStore, SqliteStore, STORE_THREAD_NAME } from '@defender/store';
import { percentile, table, writeBenchmarkSection } from './report';
import { stepCharts } from './fab-replay/charts';
import { handleBenchCommandLine } from './cli';
import { BenchCluster, buildBenchApps, bundleOf, getJson } from './pipeline/cluster';
import { summariseProfile, type CpuProfile } from './pipeline/profile';
import { cpuMsOf, threadCpuMsOf, envList, gaugesBy, histogramQuantile, loadAverage, memoryBreakdownOf, memoryOf, parseCounter, parseHistogram, heapSnapshotNodeOptions, takeHeapSnapshot, type MemoryBreakdown } from './pipeline/observe';
import { judgeStep, nextSpeed, type StepVerdict } from './fab-replay/sustain';
import { cpuBalance, judgeOverload } from './fab-replay/balance';
import { checkWarmState, readWarmState, restoreWarmState, saveWarmState, type StorePaths, type WarmStateKey } from './fab-replay/warm-state';
import {
  cycleSeconds,
  fabOfChambers,
  publishNotification,
  realTimeRunsPerSecond,
  realTimeSamplesPerSecond,
  runIdOf,
  SteadySchedule,
  SvidNames,
  type FabSpec,
  writeRunTrace,
  retryStore,
  storeRetries,
  type ReplayEvent,
} from './fab-replay/workload';
import { seedChambers, weightStats } from '@defender/fab-sim';

// ---------------------------------------------------------------------------------------------
// Parameters

/** Runs of the default strategy's Phase I (its limits freeze with the run after them). */
const PHASE_ONE_RUNS = DEFAULT_STRATEGY.monitor?.baseline.minRuns ?? Math.max(0, ...DEFAULT_STRATEGY.indicators.map((i) => i.baseline.minRuns));

handleBenchCommandLine(`Usage: npm run bench:fab      (heavy: flock /tmp/defender-heavy.lock npm run bench:fab)

Whole-fab replay against a real cluster of built processes (private nats-server, election agent,
assignment controller, 2 defenders on one SQLite file): the speed (simulated seconds per wall second)
a fab of FAB_CHAMBERS chambers sustains, and the defenders' memory. Tens of minutes. Writes the
\`fab-replay\` section of docs/benchmarks.md (FAB_SECTION to change). Builds the apps first (nx build;
seconds when nothing changed).

Parameters (environment):
  FAB_QUICK=1 | BENCH_QUICK=1   smoke run: 60 chambers, short steps; writes docs only with FAB_WRITE=1
  FAB_CHAMBERS                  chambers (5000)
  FAB_DEFENDERS                 defenders (2; the GigaFab run: FAB_CHAMBERS=20000 FAB_DEFENDERS=4)
  FAB_WARMUP_RUNS               runs per chamber before measuring (${PHASE_ONE_RUNS + 1}: the default strategy's Phase I + 1)
  FAB_STEP_SECONDS              measurement window per speed step (60)
  FAB_SPEED_START, FAB_SPEED_MAX, FAB_SPEED_GROWTH, FAB_REFINE
                                first and highest speed, growth per step, bisection steps (4, 64, 2, 2)
  FAB_SEED                      fab and schedule seed (1)
  FAB_CONCURRENCY               runs the publisher writes at once (4)
  FAB_WARMUP_BACKLOG            most warm-up runs in flight (300)
  FAB_PREWRITE=0|1              write a step's traces before its window (1)
  FAB_WRITE=0|1                 write docs/benchmarks.md
  FAB_LOG_DIR, FAB_LOG_LEVEL    processes' output folder, the apps' LOG_LEVEL (warn)
  FAB_RESULT_FILE               raw results as JSON (tmp/fab-replay-result.json)
  FAB_REPORT_FROM=<json>        only re-render the report from a saved result (no cluster)
  FAB_DEFENDER_ENV=K=V,...      extra defender environment (FAB_DEFENDER_ENV_0, _1: one defender only;
                                an empty NODE_OPTIONS= or MALLOC_*= takes the image's setting away)
  FAB_PEAK_DETAIL_MB            break a defender's memory down at each new peak from this VmRSS (200)
  FAB_SECTION=<name>            the docs/benchmarks.md section to write (fab-replay)
  FAB_HEAP_SNAPSHOTS=<dir>      a V8 heap snapshot of each defender after the warm-up and the last step
  FAB_OVERLOAD                  after the search, one step at this multiple of the highest sustained speed (1.5; 0: none)
  FAB_CRASH=1                   after the search (and the overload step), SIGKILL the last defender, wait for the map
                                without it, start it again, wait for the map with it, and run two steps at the highest
                                sustained speed: the CPU per defender after the remap of a defender judged dead
  FAB_PROFILE=<dir>             CPU profiles of pod-0's main and store threads over each step's window, kept in <dir> (their top logged)
  FAB_WARM_STATE=<dir>          keep the warm-up: if <dir> holds one of this fab (chambers, seed, warm-up runs, defenders),
                                restore it instead of warming up; else warm up, save the stores into <dir> and measure
                                the steps on the cluster started again over them (minutes instead of the 5,000-chamber
                                fab's 75-120 min warm-up; the report names the commit that warmed up)
  FAB_STORE=sqlite|cassandra    the store (sqlite; cassandra: a private node from the harness, or CASSANDRA_HOSTS;
                                for memory and cost comparisons, the speed target is for SQLite; not with FAB_WARM_STATE)

Options:
  -h, --help                    this text
`);

const QUICK = process.env['FAB_QUICK'] === '1' || process.env['BENCH_QUICK'] === '1';
function num(name: string, dflt: number, min = 0): number {
  const v = process.env[name];
  if (v === undefined || v === '') return dflt;
  const n = Number(v);
  if (!Number.isFinite(n) || n < min) throw new Error(`${name} must be a number >= ${min}, got ${v}`);
  return n;
}
const int = (name: string, dflt: number, min = 0) => {
  const n = num(name, dflt, min);
  if (!Number.isInteger(n)) throw new Error(`${name} must be an integer, got ${n}`);
  return n;
};
function flag(name: string, dflt: boolean): boolean {
  const v = process.env[name];
  return v === undefined || v === '' ? dflt : v === '1' || v === 'true';
}

/** Defenders in the cluster (FAB_DEFENDERS; the target's figure is for 2). */
const DEFENDERS = int('FAB_DEFENDERS', 2, 1);
const P = {
  chambers: int('FAB_CHAMBERS', QUICK ? 60 : 5000, 1),
  warmupRuns: int('FAB_WARMUP_RUNS', PHASE_ONE_RUNS + 1),
  stepSeconds: num('FAB_STEP_SECONDS', QUICK ? 15 : 60, 3),
  speedStart: num('FAB_SPEED_START', QUICK ? 100 : 4, 0.01),
  speedMax: num('FAB_SPEED_MAX', QUICK ? 400 : 64, 0.01),
  growth: num('FAB_SPEED_GROWTH', 2, 1.01),
  refine: int('FAB_REFINE', QUICK ? 0 : 2),
  seed: int('FAB_SEED', 1),
  concurrency: int('FAB_CONCURRENCY', 4, 1),
  warmupBacklog: int('FAB_WARMUP_BACKLOG', 300, 1),
  /** Write each step's traces before its window (1), or each just before its notification, in the window (0). */
  prewrite: flag('FAB_PREWRITE', true),
  write: flag('FAB_WRITE', !QUICK),
  logDir: process.env['FAB_LOG_DIR'] ?? join(tmpdir(), `defender-bench-fab-logs-${process.pid}`),
  logLevel: process.env['FAB_LOG_LEVEL'] ?? 'warn',
  resultFile: process.env['FAB_RESULT_FILE'] ?? join(__dirname, '..', '..', 'tmp', 'fab-replay-result.json'),
  reportFrom: process.env['FAB_REPORT_FROM'],
  defenderEnv: envList('FAB_DEFENDER_ENV'),
  defenderEnvEach: Array.from({ length: DEFENDERS }, (_, i) => envList(`FAB_DEFENDER_ENV_${i}`)),
  heapSnapshots: process.env['FAB_HEAP_SNAPSHOTS'],
  /** docs/benchmarks.md section: `fab-replay`, or another name for a run off the standard protocol. */
  section: process.env['FAB_SECTION'] ?? 'fab-replay',
  profileDir: process.env['FAB_PROFILE'],
  /** After the search, one step at this multiple of the highest sustained speed (0: none). */
  overload: num('FAB_OVERLOAD', QUICK ? 0 : 1.5),
  /** After the search, a defender killed and started again, then two steps at the highest sustained speed. */
  crash: flag('FAB_CRASH', false),
  /** A folder for the warm-up's stores: saved there after the warm-up, restored from it by later runs. */
  warmState: process.env['FAB_WARM_STATE'] || undefined,
  /** The store of the cluster and the publisher. */
  store: storeOf(process.env['FAB_STORE']),
};
if (P.store === 'cassandra' && P.warmState)
  throw new Error('FAB_WARM_STATE keeps SQLite and NATS files only: it cannot be used with FAB_STORE=cassandra');

function storeOf(v: string | undefined): 'sqlite' | 'cassandra' {
  if (v === undefined || v === '' || v === 'sqlite') return 'sqlite';
  if (v === 'cassandra') return 'cassandra';
  throw new Error(`FAB_STORE must be sqlite or cassandra, got ${v}`);
}
/** The store's name in the report. */
const STORE_NAME = { sqlite: 'SQLite', cassandra: 'Cassandra' } as const;
const SPEED_TARGET = 10;
const RSS_TARGET_MB = 300;
/** Issue 23: each defender's CPU within ±10 % of the defenders' mean in every sustained step. */
const CPU_BAND = 0.1;
const SAMPLE_MS = 1000;
const DEBUG_TOKEN = 'bench-fab-replay-debug-token';
const POLL_MS = 200;

/** The warm-up's and each step's progress (rewritten on a terminal, a line every 30 s otherwise). */
const progress = new ProgressLine(process.stderr, 'auto', 30_000);

function log(line: string): void {
  progress.log(`[${new Date().toISOString().slice(11, 19)}] ${line}`);
}
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const f0 = (x: number) => (Number.isFinite(x) ? x.toFixed(0) : '-');
const f1 = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : '-');
const f2 = (x: number) => (Number.isFinite(x) ? x.toFixed(2) : '-');

// ---------------------------------------------------------------------------------------------
// Processes: CPU (utime + stime deltas from /proc/<pid>/stat) and memory (VmRSS sampled, VmHWM)

interface Watched {
  readonly name: string;
  readonly pid: () => number | undefined;
  /** A defender's HTTP base URL: its memory is broken down at its peaks ({@link PeakDetail}). */
  readonly url?: () => string | undefined;
}

/** What a defender's memory consisted of at its highest sampled VmRSS. */
interface PeakDetail {
  readonly atSeconds: number;
  readonly smaps: MemoryBreakdown;
  /** From its /metrics just after: V8 heap spaces (committed and used, MiB), external memory, malloc. */
  v8?: { committedMb: number; usedMb: number; newSpaceMb: number; oldSpaceMb: number; externalMb: number; mallocInUseMb: number; mallocHeapMb: number; storeThreadMb?: number; heartbeatThreadMb?: number };
}

/** Smallest sampled VmRSS (MiB) worth a breakdown (FAB_PEAK_DETAIL_MB): below it a defender is far from the target. */
const PEAK_DETAIL_MIN_MB = num('FAB_PEAK_DETAIL_MB', 200);

/** V8 and malloc figures of a defender from its /metrics text. */
function v8Figures(text: string): NonNullable<PeakDetail['v8']> {
  const mb = (b: number | undefined) => (b ?? NaN) / 1048576;
  const total = gaugesBy(text, 'nodejs_heap_space_size_total_bytes', 'space');
  const used = gaugesBy(text, 'nodejs_heap_space_size_used_bytes', 'space');
  const malloc = gaugesBy(text, 'defender_malloc_heap_bytes', 'kind');
  const sum = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);
  return {
    committedMb: mb(sum(total)),
    usedMb: mb(sum(used)),
    newSpaceMb: mb(total.get('new')),
    oldSpaceMb: mb(total.get('old')),
    externalMb: mb(gaugesBy(text, 'nodejs_external_memory_bytes', '').get('')),
    mallocInUseMb: mb(malloc.get('in_use')),
    mallocHeapMb: mb(malloc.get('heap')),
    ...threadHeapsMb(text),
  };
}

/** The committed V8 heaps of a defender's other isolates (`defender_thread_heap_bytes{kind="total"}`), MiB. */
function threadHeapsMb(text: string): { storeThreadMb?: number; heartbeatThreadMb?: number } {
  const totals = new Map<string, number>();
  for (const line of text.split('\n')) {
    const m = /^defender_thread_heap_bytes\{([^}]*)\}\s+(\S+)$/.exec(line);
    if (!m || !/kind="total"/.test(m[1] ?? '')) continue;
    const thread = /thread="([^"]*)"/.exec(m[1] ?? '')?.[1];
    if (thread) totals.set(thread, Number(m[2]) / 1048576);
  }
  const store = totals.get('store');
  const heartbeat = totals.get('heartbeat');
  return { ...(store !== undefined ? { storeThreadMb: store } : {}), ...(heartbeat !== undefined ? { heartbeatThreadMb: heartbeat } : {}) };
}
interface ProcWindow {
  cpuMs0: number;
  /** A defender's main and SQLite store threads' CPU at the window's start (by OS thread name). */
  threadMs0?: { main: number; store: number };
  t0: number;
  peakRssMb: number;
  /** A defender's memory by kind at the window's highest sampled VmRSS (from {@link PEAK_DETAIL_MIN_MB} on). */
  peakDetail?: PeakDetail;
}
interface ProcResult {
  name: string;
  cpuPct: number;
  /** A defender's CPU % by thread: main, SQLite store; the rest of `cpuPct` is V8's helpers (GC, compiler), the heartbeat thread and libuv. */
  threads?: { main: number; store: number };
  peakRssMb: number;
  /** A defender's memory by kind at the window's highest sampled VmRSS. */
  peakDetail?: PeakDetail;
}

/** A defender's main and SQLite store threads' CPU so far, ms (Node names the main thread `MainThread`). */
function defenderThreadsMs(pid: number): { main: number; store: number } {
  return { main: threadCpuMsOf(pid, 'MainThread'), store: threadCpuMsOf(pid, STORE_THREAD_NAME) };
}

class ProcessWatch {
  private windows = new Map<string, ProcWindow>();
  /** Peak sampled VmRSS over the whole bench, per process. */
  readonly peakRss = new Map<string, number>();
  /** Per defender: its memory by kind at its highest sampled VmRSS (from {@link PEAK_DETAIL_MIN_MB} on). */
  readonly peakDetail = new Map<string, PeakDetail>();
  private readonly t0 = Date.now();
  constructor(readonly procs: Watched[]) {}

  begin(): void {
    this.windows = new Map(
      this.procs.map((p) => [
        p.name,
        { cpuMs0: cpuMsOf(p.pid() ?? -1), ...(p.url ? { threadMs0: defenderThreadsMs(p.pid() ?? -1) } : {}), t0: Date.now(), peakRssMb: 0 },
      ]),
    );
  }

  sample(): void {
    for (const p of this.procs) {
      const m = memoryOf(p.pid() ?? -1);
      if (!m) continue;
      const w = this.windows.get(p.name);
      const windowBefore = w?.peakRssMb ?? 0;
      if (w) w.peakRssMb = Math.max(w.peakRssMb, m.rssMb);
      const before = this.peakRss.get(p.name) ?? 0;
      this.peakRss.set(p.name, Math.max(before, m.rssMb));
      if (!p.url || m.rssMb < PEAK_DETAIL_MIN_MB || (m.rssMb <= before && m.rssMb <= windowBefore)) continue;
      const d = this.detail(p, p.url());
      if (!d) continue;
      if (m.rssMb > before) this.peakDetail.set(p.name, d);
      if (w && m.rssMb > windowBefore) w.peakDetail = d;
    }
  }

  /** Breaks a new peak down (smaps now, then the defender's /metrics a few ms later). */
  private detail(p: Watched, url: string | undefined): PeakDetail | undefined {
    const smaps = memoryBreakdownOf(p.pid() ?? -1);
    if (!smaps) return undefined;
    const d: PeakDetail = { atSeconds: (Date.now() - this.t0) / 1000, smaps };
    if (!url) return d;
    getJson(`${url}/metrics`)
      .then((res) => {
        d.v8 = v8Figures(res.text);
      })
      .catch(() => undefined);
    return d;
  }

  end(): ProcResult[] {
    this.sample();
    return this.procs.map((p) => {
      const w = this.windows.get(p.name);
      const cpu = cpuMsOf(p.pid() ?? -1) - (w?.cpuMs0 ?? NaN);
      const wall = Date.now() - (w?.t0 ?? NaN);
      const t0 = w?.threadMs0;
      const t1 = t0 && defenderThreadsMs(p.pid() ?? -1);
      const threads = t0 && t1 ? { main: (100 * (t1.main - t0.main)) / wall, store: (100 * (t1.store - t0.store)) / wall } : undefined;
      return { name: p.name, cpuPct: (100 * cpu) / wall, ...(threads ? { threads } : {}), peakRssMb: w?.peakRssMb ?? NaN, ...(w?.peakDetail ? { peakDetail: w.peakDetail } : {}) };
    });
  }

  hwm(): { name: string; hwmMb: number; peakRssMb: number }[] {
    return this.procs.map((p) => ({
      name: p.name,
      hwmMb: memoryOf(p.pid() ?? -1)?.hwmMb ?? NaN,
      peakRssMb: this.peakRss.get(p.name) ?? NaN,
    }));
  }
}

// ---------------------------------------------------------------------------------------------
// The replay: publisher (fab-sim's run publication) and tracker (commits from the store)

interface Run {
  readonly chamber: number;
  readonly runId: string;
  readonly seq: number;
  readonly publishedAt: number;
  /** -1: warm-up; else the step index. */
  readonly step: number;
  committedAt?: number;
  dead?: boolean;
}

class Replay {
  /** Published, not yet seen committed, per chamber (in sequence order). */
  private readonly pending = new Map<number, Run[]>();
  private pendingCount = 0;
  readonly runs: Run[] = [];
  private polling = false;
  private pollTimer: NodeJS.Timeout | undefined;
  /** Poll period of the high-water marks, ms. */
  pollMs = POLL_MS;
  private stopped = false;
  private readonly chains = new Map<number, Promise<unknown>>();
  private readonly inFlight = new Set<Promise<unknown>>();
  private failure: unknown;
  deadLetterMessages = 0;
  alarms = 0;
  samples = 0;
  private readonly names = new SvidNames();

  constructor(
    readonly fab: FabSpec,
    readonly store: DefenderStore,
    readonly js: JetStreamClient,
    nc: NatsConnection,
  ) {
    nc.subscribe('dc.dead.>', { callback: () => void this.deadLetterMessages++ });
    nc.subscribe('defense.alarms.>', { callback: () => void this.alarms++ });
  }

  get backlog(): number {
    return this.pendingCount;
  }

  start(): void {
    const tick = () => {
      if (this.stopped) return;
      this.pollTimer = setTimeout(() => void this.poll().then(tick), this.pollMs);
    };
    tick();
  }
  stop(): void {
    this.stopped = true;
    if (this.pollTimer) clearTimeout(this.pollTimer);
    this.pollTimer = undefined;
  }

  throwIfFailed(): void {
    if (this.failure) throw this.failure;
  }

  /** Traces written ahead (`prewrite`), by chamber and run index, and their samples. */
  private readonly written = new Map<string, number>();
  /** Traces of committed runs whose deletion waits for the end of the step (`deferDeletes`). */
  private readonly toDelete: { chamber: number; runId: string }[] = [];
  /** Delete committed runs' traces between steps, not during a measurement window. */
  deferDeletes = false;

  private chamberAt(i: number) {
    const ch = this.fab.chambers[i];
    if (!ch) throw new RangeError(`no chamber ${i}`);
    return ch;
  }

  /** Writes a run's trace ahead of its notification (the publisher's heavy half, outside the window). */
  async prewrite(ev: { chamber: number; run: number; endSeconds: number }): Promise<void> {
    const runId = runIdOf('fab', ev.run);
    const n = await writeRunTrace(this.store, this.chamberAt(ev.chamber), { runId, runIndex: ev.run, endSeconds: ev.endSeconds });
    this.written.set(`${ev.chamber}:${ev.run}`, n);
  }

  /** Deletes traces written ahead but never published (the window ended first). */
  async dropUnpublished(): Promise<number> {
    let n = 0;
    for (const key of this.written.keys()) {
      const [chamber, run] = key.split(':').map(Number);
      const ch = this.chamberAt(chamber ?? -1);
      await retryStore(() => this.store.traces.delete({ toolId: ch.toolId, chamberId: ch.chamberId, runId: runIdOf('fab', run ?? 0) }));
      n++;
    }
    this.written.clear();
    return n;
  }

  /** Deletes the traces of runs committed while deletions were deferred. */
  async flushDeletes(): Promise<void> {
    for (const d of this.toDelete.splice(0)) {
      const ch = this.chamberAt(d.chamber);
      await retryStore(() => this.store.traces.delete({ toolId: ch.toolId, chamberId: ch.chamberId, runId: d.runId }));
    }
  }

  /**
   * Publishes one run with at most `concurrency` runs in flight, a chamber's runs in order: its
   * notification only when its trace was written ahead, else trace then notification (as fab-sim's
   * simulator does). Resolves once it is started.
   */
  async submit(ev: { chamber: number; run: number; endSeconds: number }, step: number, concurrency: number): Promise<void> {
    this.throwIfFailed();
    while (this.inFlight.size >= concurrency) await Promise.race(this.inFlight);
    const ch = this.chamberAt(ev.chamber);
    const runId = runIdOf('fab', ev.run);
    const refs = { runId, runIndex: ev.run, endSeconds: ev.endSeconds };
    const key = `${ev.chamber}:${ev.run}`;
    const p = (this.chains.get(ev.chamber) ?? Promise.resolve())
      .then(async () => {
        let samples = this.written.get(key);
        if (samples === undefined) samples = await writeRunTrace(this.store, ch, refs);
        else this.written.delete(key);
        return { samples, ...(await publishNotification(this.js, this.names, ch, refs)) };
      })
      .then((r) => {
        const run: Run = { chamber: ev.chamber, runId, seq: r.seq, publishedAt: r.publishedAt, step };
        this.runs.push(run);
        this.samples += r.samples;
        const list = this.pending.get(ev.chamber);
        if (list) list.push(run);
        else this.pending.set(ev.chamber, [run]);
        this.pendingCount++;
      });
    const tracked = p.then(
      () => void this.inFlight.delete(tracked),
      (err: unknown) => {
        this.inFlight.delete(tracked);
        this.failure ??= err;
      },
    );
    this.chains.set(ev.chamber, tracked);
    this.inFlight.add(tracked);
  }

  async flush(): Promise<void> {
    await Promise.all(this.inFlight);
    this.throwIfFailed();
  }

  /**
   * Reads the high-water mark of every chamber with pending runs; for each newly committed run, its
   * committed point set (commit time, and whether it was dead-lettered: no points), then deletes its
   * trace (a DC layer's retention; the store would otherwise grow by every trace).
   */
  async poll(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    try {
      for (const [idx, list] of this.pending) {
        const ch = this.fab.chambers[idx];
        if (!ch) continue;
        const hwm = (await retryStore(() => this.store.chamberState.get(ch)))?.highWaterMark ?? 0;
        while (list.length > 0 && (list[0]?.seq ?? Infinity) <= hwm) {
          const run = list.shift();
          if (!run) break;
          this.pendingCount--;
          const set = await retryStore(() => this.store.uchart.run(ch, run.seq));
          run.committedAt = set?.committedAt.getTime() ?? Date.now();
          run.dead = !set || set.points.length === 0 || set.runId !== run.runId;
          if (this.deferDeletes) this.toDelete.push({ chamber: idx, runId: run.runId });
          else await retryStore(() => this.store.traces.delete({ toolId: ch.toolId, chamberId: ch.chamberId, runId: run.runId }));
        }
        if (list.length === 0) this.pending.delete(idx);
      }
    } catch (err) {
      this.failure ??= err;
    } finally {
      this.polling = false;
    }
  }

  /** Waits until nothing is pending; returns the seconds it took (Infinity after `timeoutMs`). */
  async drain(timeoutMs: number, check: () => void): Promise<number> {
    const t0 = Date.now();
    while (this.pendingCount > 0) {
      check();
      this.throwIfFailed();
      if (Date.now() - t0 > timeoutMs) return Infinity;
      await sleep(POLL_MS);
    }
    return (Date.now() - t0) / 1000;
  }
}

// ---------------------------------------------------------------------------------------------
// Steps

interface StepResult {
  speed: number;
  targetRate: number;
  scheduled: number;
  published: number;
  offeredRate: number;
  processedRate: number;
  lagP50: number;
  lagP99: number;
  lagMax: number;
  backlogMax: number;
  backlogEnd: number;
  drainSeconds: number;
  verdict: StepVerdict;
  procs: ProcResult[];
  deadLetters: number;
  failedAttempts: number;
  mapChanges: number;
  alarms: number;
  load: number;
  samplesPerSecond: number;
  prewriteSeconds: number;
  /** Chambers per defender at the start and the end of the window (`defender_assigned_chambers`). */
  assignedAtStart?: string;
  assignedAtEnd?: string;
  /** Runs published in the window and never committed (absent in results of older runs). */
  lost?: number;
  /** The overload step: offered at FAB_OVERLOAD x this sustained speed, outside the search. */
  overloadOf?: number;
  /** FAB_CRASH: the n-th step (1, 2) after a defender was killed and came back, outside the search. */
  afterCrash?: number;
}

/** Inside the speed search (not the overload step, not a step after FAB_CRASH's remap). */
const searchStep = (s: StepResult) => s.overloadOf === undefined && s.afterCrash === undefined;

/** A step's name in tables: its speed, and what it was outside the search. */
function stepLabel(s: StepResult): string {
  return `${s.speed}x${s.overloadOf !== undefined ? ' (overload)' : ''}${s.afterCrash !== undefined ? ` (after the crash, ${s.afterCrash})` : ''}`;
}

/** FAB_CRASH: how the kill and return of a defender went. */
interface CrashRecord {
  readonly victim: string;
  /** Kill -> the first map without the victim, s. */
  readonly crashMapSeconds: number;
  /** Restart -> the cluster settled with every defender in the newest map, s. */
  readonly rejoinSeconds: number;
  /** Maps published from the kill to the settled rejoin. */
  readonly maps: number;
  /** Chambers per defender in the maps seen: after the crash, and once settled. */
  readonly chambersAfterCrash: string;
  readonly chambersAfterRejoin: string;
}

async function defenderCounters(cl: BenchCluster): Promise<{ dead: number; failed: number; assigned: string }> {
  let dead = 0;
  let failed = 0;
  const assigned: string[] = [];
  for (const d of cl.defenders()) {
    const text = (await getJson(`${d.url}/metrics`)).text;
    dead += parseCounter(text, 'defender_dead_letters_total');
    failed += parseCounter(text, 'defender_messages_failed_total');
    assigned.push(`${d.name} ${parseCounter(text, 'defender_assigned_chambers')}`);
  }
  return { dead, failed, assigned: assigned.join(', ') };
}

async function runStep(
  k: number,
  speed: number,
  ctx: { replay: Replay; schedule: SteadySchedule; cluster: BenchCluster; watch: ProcessWatch; simClock: { t: number; originSeconds: number }; rtRate: number },
): Promise<StepResult> {
  const { replay, schedule, cluster, watch, simClock } = ctx;
  const W = P.stepSeconds;
  const span = speed * W;
  const events: ReplayEvent[] = schedule.take(simClock.t + span);
  const c0 = await defenderCounters(cluster);
  const maps0 = cluster.publications.length;
  const alarms0 = replay.alarms;
  const samples0 = replay.samples;
  const runs0 = replay.runs.length;
  const load = loadAverage();
  log(`step ${k + 1}: speed ${speed}x: ${events.length} runs scheduled in ${W} s (${f1(events.length / W)} runs/s)`);
  let prewriteSeconds = NaN;
  if (P.prewrite) {
    const t0 = Date.now();
    for (const ev of events) await replay.prewrite({ chamber: ev.chamber, run: ev.run, endSeconds: simClock.originSeconds + ev.t });
    prewriteSeconds = (Date.now() - t0) / 1000;
    log(`step ${k + 1}: ${events.length} traces written ahead in ${f1(prewriteSeconds)} s`);
    (globalThis as { gc?: () => void }).gc?.();
  }
  replay.deferDeletes = true;
  watch.begin();
  const profiling = P.profileDir ? profileWindow(cluster, k, speed, Math.max(1, W - 2)) : undefined;
  const wall0 = Date.now();
  const deadline = wall0 + W * 1000;
  const backlog: { t: number; runs: number }[] = [];
  const sampler = setInterval(() => {
    backlog.push({ t: (Date.now() - wall0) / 1000, runs: replay.backlog });
    watch.sample();
    const elapsed = (Date.now() - wall0) / 1000;
    progress.update(
      `[${new Date().toISOString().slice(11, 19)}] step ${k + 1} at ${speed}x ${textBar(elapsed / W)} ${f0(elapsed)} of ${W} s · ${replay.runs.length - runs0} runs published · backlog ${replay.backlog}`,
    );
  }, SAMPLE_MS);
  try {
    for (const ev of events) {
      const due = wall0 + ((ev.t - simClock.t) / speed) * 1000;
      const wait = due - Date.now();
      if (wait > 0) await sleep(wait);
      if (Date.now() >= deadline) break;
      const check = cluster.crashed();
      if (check) throw new Error(check);
      await replay.submit({ chamber: ev.chamber, run: ev.run, endSeconds: simClock.originSeconds + ev.t }, k, P.concurrency);
    }
    const rest = deadline - Date.now();
    if (rest > 0) await sleep(rest);
    await replay.flush();
  } finally {
    clearInterval(sampler);
  }
  await profiling;
  // Runs the publisher did not get out in the window are dropped from the replay (never published).
  const wallEnd = Date.now();
  const procs = watch.end();
  const samplesPerSecond = (replay.samples - samples0) / ((wallEnd - wall0) / 1000);
  simClock.t += span;
  const backlogEnd = replay.backlog;
  const drainTimeout = Math.max(60_000, 2 * W * 1000);
  const drainSeconds = await replay.drain(drainTimeout, () => {
    const c = cluster.crashed();
    if (c) throw new Error(c);
  });
  await replay.poll();
  replay.deferDeletes = false;
  await replay.flushDeletes();
  const dropped = await replay.dropUnpublished();
  if (dropped > 0) log(`step ${k + 1}: ${dropped} traces written ahead were not published in the window (deleted)`);
  const mine = replay.runs.filter((r) => r.step === k);
  const committed = mine.filter((r) => r.committedAt !== undefined);
  const lags = committed.map((r) => ({ t: (r.publishedAt - wall0) / 1000, lagMs: (r.committedAt ?? NaN) - r.publishedAt }));
  const inWindow = committed.filter((r) => (r.committedAt ?? Infinity) <= wallEnd).length;
  const c1 = await defenderCounters(cluster);
  const deadLetters = mine.filter((r) => r.dead).length;
  const verdict = judgeStep({
    windowSeconds: W,
    scheduledRuns: events.length,
    publishedRuns: mine.length,
    backlog,
    lags,
    drainSeconds,
    deadLettered: Math.max(deadLetters, c1.dead - c0.dead),
    lost: mine.length - committed.length,
  });
  const lagMs = lags.map((l) => l.lagMs);
  const res: StepResult = {
    speed,
    targetRate: speed * ctx.rtRate,
    scheduled: events.length,
    published: mine.length,
    offeredRate: mine.length / W,
    processedRate: inWindow / ((wallEnd - wall0) / 1000),
    lagP50: percentile(lagMs, 50),
    lagP99: percentile(lagMs, 99),
    lagMax: lagMs.length ? Math.max(...lagMs) : NaN,
    backlogMax: Math.max(0, ...backlog.map((b) => b.runs)),
    backlogEnd,
    drainSeconds,
    verdict,
    procs,
    deadLetters: Math.max(deadLetters, c1.dead - c0.dead),
    failedAttempts: c1.failed - c0.failed,
    mapChanges: cluster.publications.length - maps0,
    alarms: replay.alarms - alarms0,
    load,
    samplesPerSecond,
    prewriteSeconds,
    assignedAtStart: c0.assigned,
    assignedAtEnd: c1.assigned,
    lost: mine.length - committed.length,
  };
  log(
    `step ${k + 1}: speed ${speed}x: offered ${f1(res.offeredRate)} runs/s (scheduled ${f1(events.length / W)}), processed ${f1(res.processedRate)} runs/s, ` +
      `lag p50 ${f0(res.lagP50)} p99 ${f0(res.lagP99)} ms, backlog max ${res.backlogMax} end ${backlogEnd} slope ${f2(verdict.backlogSlope)}/s, drain ${f1(drainSeconds)} s: ` +
      `${verdict.sustained ? 'SUSTAINED' : `not sustained (${verdict.reasons.join('; ')})`}; CPU ${procs.map((p) => `${p.name} ${f0(p.cpuPct)}%${p.threads ? ` (main ${f0(p.threads.main)}%, store ${f0(p.threads.store)}%)` : ''}`).join(', ')}`,
  );
  return res;
}

// ---------------------------------------------------------------------------------------------
// Main

type Params = typeof P;

interface Outcome {
  params: Omit<Params, 'reportFrom' | 'resultFile' | 'logDir' | 'heapSnapshots' | 'warmState'>;
  /** Not saved in the result file (regenerated from the parameters). */
  fab: FabSpec;
  /** Defenders in the cluster (absent in results of older runs: 2). */
  defenders?: number;
  rtRate: number;
  rtSamples: number;
  warmup: WarmUp;
  /** With FAB_WARM_STATE: the warm-up was saved by this run (restored: false) or restored from an earlier one. */
  warmState?: { restored: boolean; commit: string; savedAt: string; node: string; rewarm?: { runs: number; seconds: number } };
  steps: StepResult[];
  /** FAB_CRASH: the kill and return of a defender before the last two steps. */
  crash?: CrashRecord;
  memory: { name: string; hwmMb: number; peakRssMb: number }[];
  /** Each defender's memory by kind at its highest sampled VmRSS (absent in results of older runs). */
  peakDetail?: Record<string, PeakDetail>;
  /** The runtime environment of the defender's image the defenders ran with (NODE_OPTIONS, MALLOC_*). */
  imageEnv?: Record<string, string>;
  notes: string[];
  seconds: number;
  loadBefore: number;
  loadAfter: number;
  cacheStats: string[];
  /** The controller's maps over the whole run (absent in results of older runs). */
  maps?: ControllerMaps;
}

/** What the controller's /metrics say of its maps: computation and publication times, sizes. */
interface ControllerMaps {
  published: number;
  calcP50Ms: number;
  calcP99Ms: number;
  publishP50Ms: number;
  publishP99Ms: number;
  publishMeanMs: number;
  /** The last published map: bytes of head and chunks, and its largest KV value. */
  lastBytes: number;
  largestValueBytes: number;
}

async function controllerMaps(cl: BenchCluster): Promise<ControllerMaps | undefined> {
  const ctl = cl.procs.find((p) => p.name === 'controller');
  if (!ctl) return undefined;
  const res = await fetch(`${ctl.url}/metrics`).catch(() => undefined);
  if (!res?.ok) return undefined;
  const text = await res.text();
  const calc = parseHistogram(text, 'defender_assignment_calculation_duration_seconds');
  const pub = parseHistogram(text, 'defender_assignment_map_publish_duration_seconds');
  const bytes = gaugesBy(text, 'defender_assignment_map_bytes', 'part');
  return {
    published: pub.count,
    calcP50Ms: histogramQuantile(calc, 0.5) * 1000,
    calcP99Ms: histogramQuantile(calc, 0.99) * 1000,
    publishP50Ms: histogramQuantile(pub, 0.5) * 1000,
    publishP99Ms: histogramQuantile(pub, 0.99) * 1000,
    publishMeanMs: pub.count > 0 ? (pub.sum / pub.count) * 1000 : 0,
    lastBytes: bytes.get('total') ?? 0,
    largestValueBytes: bytes.get('largest_value') ?? 0,
  };
}

/**
 * With FAB_PROFILE: CPU profiles of pod-0's main thread and of its SQLite store thread over `seconds`
 * of step `k`'s window (taken at the same time), kept as .cpuprofile files and summarised in the log
 * (self time by area and by function). A failure is logged, never fatal.
 */
async function profileWindow(cl: BenchCluster, k: number, speed: number, seconds: number): Promise<void> {
  const d = cl.defenders()[0];
  if (!d || !P.profileDir) return;
  const profileDir = P.profileDir;
  await Promise.all(
    (['main', 'store'] as const).map(async (thread) => {
      try {
        const profile = JSON.parse(
          await postOnFreshConnection(`${d.url}/debug/cpu-profile`, {
            authorization: `Bearer ${DEBUG_TOKEN}`,
            'x-profile-seconds': String(Math.round(seconds)),
            'x-profile-thread': thread,
          }),
        ) as CpuProfile;
        mkdirSync(profileDir, { recursive: true });
        const file = join(profileDir, `${d.name}-${thread}-step${k + 1}-${speed}x.cpuprofile`);
        writeFileSync(file, JSON.stringify(profile));
        // The store thread runs the bundle's second entry (ADR 0010), with its own source map.
        const bundle = thread === 'main' ? bundleOf('defender') : join(dirname(bundleOf('defender')), 'sqlite-store-thread.js');
        const sum = summariseProfile(profile, bundle);
        const pct = (ms: number) => `${f1((100 * ms) / Math.max(1, sum.busyMs))} %`;
        log(
          `step ${k + 1}: ${d.name} ${thread} thread profiled ${f1(sum.totalMs / 1000)} s, ` +
            `${f0((100 * sum.busyMs) / Math.max(1, sum.totalMs))} % busy -> ${file}`,
        );
        log(`  ${thread} areas: ${sum.areas.slice(0, 8).map((a) => `${a.area} ${pct(a.ms)}`).join(', ')}`);
        log(`  ${thread} functions: ${sum.functions.slice(0, 14).map((f) => `${f.fn} (${f.where}) ${pct(f.ms)}`).join(', ')}`);
      } catch (err) {
        // fetch's own message is only "fetch failed": the reason (refused, reset, timed out) is its cause.
        const cause = (err as Error).cause;
        log(
          `step ${k + 1}: profiling ${d.name}'s ${thread} thread failed: ${(err as Error).message}` +
            `${cause ? ` (${cause instanceof Error ? cause.message : String(cause)})` : ''}`,
        );
      }
    }),
  );
}

/**
 * POSTs on a connection of its own and returns the body of a 2xx answer. Not fetch: its pool reuses
 * a keep-alive connection the defender may have closed meanwhile (idle past the server's keep-alive
 * timeout), and a POST that meets the closed socket fails as "other side closed" without a retry.
 */
function postOnFreshConnection(url: string, headers: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: 'POST', headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        const status = res.statusCode ?? 0;
        if (status >= 200 && status < 300) resolve(body);
        else reject(new Error(`HTTP ${status} ${body.slice(0, 500)}`));
      });
    });
    req.on('error', reject);
    req.end();
  });
}

/** With FAB_HEAP_SNAPSHOTS, a defender's NODE_OPTIONS (its own or its image's) also let the bench ask for heap snapshots. */
function snapshotEnv(env: Record<string, string>): Record<string, string> {
  if (!P.heapSnapshots) return env;
  mkdirSync(P.heapSnapshots, { recursive: true });
  const base = env['NODE_OPTIONS'] ?? imageRuntimeEnv('defender')['NODE_OPTIONS'] ?? '';
  return { ...env, NODE_OPTIONS: `${base} ${heapSnapshotNodeOptions(P.heapSnapshots)}`.trim() };
}

/** With FAB_HEAP_SNAPSHOTS: each live defender's heap snapshot, `<dir>/<defender>-<label>.heapsnapshot`. */
async function heapSnapshots(cl: BenchCluster, label: string): Promise<void> {
  if (!P.heapSnapshots) return;
  mkdirSync(P.heapSnapshots, { recursive: true });
  for (const d of cl.defenders()) {
    const file = join(P.heapSnapshots, `${d.name}-${label}.heapsnapshot`);
    const t0 = Date.now();
    const pid = d.app.child.pid;
    if (pid === undefined) continue;
    const bytes = await takeHeapSnapshot(pid, P.heapSnapshots, `${d.url}/health/live`, file);
    log(`heap snapshot ${file}: ${f1(bytes / 1e6)} MB in ${f1((Date.now() - t0) / 1000)} s`);
  }
}

/** The warm-up as measured (saved with a warm state, so a run that restores it reports it too). */
type WarmUp = { runs: number; seconds: number; rate: number; procs: ProcResult[]; frozen: number; checked: number };

/** One start of the cluster over the stores at `paths` (a run that saves its warm-up starts it twice). */
interface Live {
  nats: NatsServerHandle;
  store: DefenderStore;
  cl: BenchCluster;
  nc: NatsConnection;
  r: Replay;
}

/** Chambers per defender of a map, by defender id, in the order of the map's defenders. */
function chambersPerDefender(m: { assignments: Record<string, string> } | undefined): string {
  if (!m) return '-';
  const n = new Map<string, number>();
  for (const d of Object.values(m.assignments)) n.set(d, (n.get(d) ?? 0) + 1);
  return [...n.entries()].map(([d, c]) => `${d} ${c}`).join(', ');
}

/**
 * FAB_CRASH: kills the last defender (SIGKILL, as a node failure), waits for the controller to
 * judge it dead and publish a map without it, starts it again under the same pod name and waits
 * until the cluster has settled with every defender (its rejoin map published, no map for 5 s).
 */
async function crashAndRejoin(cl: BenchCluster, fab: FabSpec): Promise<CrashRecord> {
  const i = DEFENDERS - 1;
  const victim = `pod-${i}`;
  const maps0 = cl.publications.length;
  const t0 = Date.now();
  await cl.kill(victim);
  log(`crash: ${victim} killed (SIGKILL); waiting for a map without it`);
  const deadline = t0 + 120_000;
  for (;;) {
    const c = cl.crashed();
    if (c) throw new Error(c);
    const m = cl.latest();
    if (cl.publications.length > maps0 && m && m.defenderCount === DEFENDERS - 1) break;
    if (Date.now() > deadline) throw new Error(`crash: no map without ${victim} within 120 s of its kill`);
    await sleep(100);
  }
  const crashMapSeconds = (Date.now() - t0) / 1000;
  const chambersAfterCrash = chambersPerDefender(cl.latest());
  log(`crash: map without ${victim} after ${f1(crashMapSeconds)} s (${chambersAfterCrash}); starting it again`);
  const t1 = Date.now();
  await cl.startDefender(victim, snapshotEnv({ DEBUG_TOKEN, ...P.defenderEnv, ...P.defenderEnvEach[i] }));
  await cl.settle(DEFENDERS, fab.chambers.length, 300_000);
  const rejoinSeconds = (Date.now() - t1) / 1000;
  const chambersAfterRejoin = chambersPerDefender(cl.latest());
  log(`crash: ${victim} back, cluster settled after ${f1(rejoinSeconds)} s (${chambersAfterRejoin})`);
  return { victim, crashMapSeconds, rejoinSeconds, maps: cl.publications.length - maps0, chambersAfterCrash, chambersAfterRejoin };
}

/**
 * Starts nats-server over `paths.natsDir`, opens the SQLite file (seeding the fab's chambers into a
 * new one), starts the processes and waits until every chamber has a worker. Fills `into` as it
 * goes, so a failure half-way leaves what to stop.
 */
async function startLive(paths: StorePaths, fab: FabSpec, opts: { seedFab: boolean; tag?: string }, into: Partial<Live>): Promise<Live> {
  into.nats = await startNatsServer({ storeDir: paths.natsDir });
  const { store, storeEnv } = await openStore(paths);
  into.store = store;
  if (opts.seedFab) await seedChambers(into.store, fab);
  const cl = await BenchCluster.start({
    natsUrl: into.nats.url,
    storeEnv,
    heartbeatSeconds: 2,
    coldStartWindowSeconds: 3,
    scaleWindowSeconds: 3,
    logLevel: P.logLevel,
    ...(opts.tag ? { tag: opts.tag } : {}),
  });
  into.cl = cl;
  await cl.startAgent();
  await cl.startController('controller');
  for (let i = 0; i < DEFENDERS; i++) await cl.startDefender(`pod-${i}`, snapshotEnv({ DEBUG_TOKEN, ...P.defenderEnv, ...P.defenderEnvEach[i] }));
  await cl.settle(DEFENDERS, fab.chambers.length, 180_000);
  into.nc = await connect({ servers: into.nats.url, name: 'bench-fab-replay' });
  into.r = new Replay(fab, into.store, jetstream(into.nc), into.nc);
  into.r.start();
  return into as Live;
}

/** FAB_STORE=cassandra: the node (started once per run, in {@link main}) and this run's keyspace. */
let cassandra: CassandraHandle | undefined;
const CASSANDRA_KEYSPACE = `bench_fab_${process.pid}`;

/** The publisher's store and the processes' store environment: the SQLite file of `paths`, or this run's Cassandra keyspace. */
async function openStore(paths: StorePaths): Promise<{ store: DefenderStore; storeEnv: Record<string, string> }> {
  if (P.store === 'sqlite') return { store: await SqliteStore.open({ filename: paths.dbFile }), storeEnv: { STORE_BACKEND: 'sqlite', SQLITE_PATH: paths.dbFile } };
  if (!cassandra) throw new Error('FAB_STORE=cassandra: no Cassandra node started');
  const store = await CassandraStore.connect({
    contactPoints: cassandra.contactPoints,
    localDataCenter: cassandra.localDataCenter,
    keyspace: CASSANDRA_KEYSPACE,
    requestTimeoutMs: 60_000,
  });
  const storeEnv = {
    STORE_BACKEND: 'cassandra',
    CASSANDRA_HOSTS: cassandra.contactPoints.join(','),
    CASSANDRA_LOCAL_DC: cassandra.localDataCenter,
    CASSANDRA_KEYSPACE,
  };
  return { store, storeEnv };
}

/** An external cluster (CASSANDRA_HOSTS) keeps nothing of the run: its keyspace is dropped. */
async function dropKeyspace(c: CassandraHandle): Promise<void> {
  const client = new Client({ contactPoints: c.contactPoints, localDataCenter: c.localDataCenter });
  try {
    await client.connect();
    await client.execute(`DROP KEYSPACE IF EXISTS ${CASSANDRA_KEYSPACE}`);
  } finally {
    await client.shutdown();
  }
}

/** Stops what `l` holds: the replay, the processes (their logs kept under `prefix`), the store, nats-server. */
async function stopLive(l: Partial<Live>, prefix: string, graceMs?: number): Promise<void> {
  l.r?.stop();
  await l.nc?.close().catch(() => undefined);
  await l.cl?.stop(P.logDir, prefix, graceMs).catch(() => undefined);
  await l.store?.close().catch(() => undefined);
  await l.nats?.stop().catch(() => undefined);
}

/** The commit of this tree, `+dirty` when it has uncommitted changes ('unknown' outside git). */
function gitCommit(): string {
  try {
    const head = execFileSync('git', ['rev-parse', '--short=12', 'HEAD'], { encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { encoding: 'utf8' }).trim() !== '';
    return dirty ? `${head}+dirty` : head;
  } catch {
    return 'unknown';
  }
}

/**
 * Runs `runs` runs of every chamber from run index `firstRun` on, round-robin by run index, as fast
 * as the cluster takes them (at most FAB_WARMUP_BACKLOG in flight), each completing at
 * `endSeconds(chamber, k)` (before the replay's origin), and waits until all are committed. The
 * Phase I warm-up is every chamber's first FAB_WARMUP_RUNS runs; the re-warm pass after a restart
 * over saved stores is one more run per chamber (see {@link main}).
 */
async function runPass(
  live: Live,
  fab: FabSpec,
  watch: ProcessWatch,
  notes: string[],
  pass: { label: string; firstRun: number; runs: number; endSeconds: (ch: FabSpec['chambers'][number], k: number) => number },
): Promise<WarmUp> {
  const { r, cl, store } = live;
  r.pollMs = 500; // lags are not measured here: spare the publisher's CPU
  watch.begin();
  const w0 = Date.now();
  const runs0 = r.runs.length;
  let lastLog = w0;
  for (let k = pass.firstRun; k < pass.firstRun + pass.runs; k++) {
    for (const ch of fab.chambers) {
      while (r.backlog >= P.warmupBacklog) {
        const c = cl.crashed();
        if (c) throw new Error(c);
        r.throwIfFailed();
        await sleep(50);
      }
      await r.submit({ chamber: ch.index, run: k, endSeconds: pass.endSeconds(ch, k) }, -1, P.concurrency);
      if (Date.now() - lastLog > 1_000) {
        lastLog = Date.now();
        const done = r.runs.slice(runs0).filter((x) => x.committedAt !== undefined).length;
        const total = fab.chambers.length * pass.runs;
        const left = remainingMs(done, total, Date.now() - w0);
        progress.update(
          `[${new Date().toISOString().slice(11, 19)}] ${pass.label} ${textBar(done / total)} ${done} of ${total} runs committed · ${f1(done / ((Date.now() - w0) / 1000))} runs/s` +
            (left === undefined ? '' : ` · about ${shortDuration(left)} left`),
        );
      }
    }
  }
  await r.flush();
  const drained = await r.drain(600_000, () => {
    const c = cl.crashed();
    if (c) throw new Error(c);
  });
  if (!Number.isFinite(drained)) throw new Error(`the ${pass.label} did not drain within 600 s`);
  const seconds = (Date.now() - w0) / 1000;
  const mine = r.runs.slice(runs0);
  progress.done(`[${new Date().toISOString().slice(11, 19)}] ${pass.label}: ${mine.length} runs committed in ${shortDuration(seconds * 1000)}`);
  const procs = watch.end();
  const dead = mine.filter((x) => x.dead).length;
  if (dead > 0) notes.push(`${dead} runs of the ${pass.label} were dead-lettered`);
  // Frozen limits on a sample of chambers (every chamber would take long on 5,000).
  const sample = fab.chambers.filter((_, i) => i % Math.max(1, Math.floor(fab.chambers.length / 200)) === 0);
  let frozen = 0;
  for (const ch of sample) if ((await store.uchart.currentLimitSets(ch)).length > 0 || (await store.monitorModels.versions(ch)).length > 0) frozen++;
  log(
    `${pass.label}: ${mine.length} runs in ${f1(seconds)} s = ${f1(mine.length / seconds)} runs/s; chambers with frozen limits ${frozen}/${sample.length} (sampled); ` +
      `CPU ${procs.map((p) => `${p.name} ${f0(p.cpuPct)}%`).join(', ')}`,
  );
  return { runs: mine.length, seconds, rate: mine.length / seconds, procs, frozen, checked: sample.length };
}

/** The longest cycle (context + the longest overhead) of the fab's chambers, seconds. */
function maxCycleOf(fab: FabSpec): number {
  return Math.max(...fab.chambers.map((c) => c.contextDurationSeconds + c.overheadSeconds[1]));
}

/** Phase I warm-up: every chamber's first FAB_WARMUP_RUNS runs, completed before the replay's origin. */
function warmUp(live: Live, fab: FabSpec, watch: ProcessWatch, notes: string[]): Promise<WarmUp> {
  const maxCycle = maxCycleOf(fab);
  const origin = Math.floor(Date.now() / 1000) - (P.warmupRuns + 1) * maxCycle;
  return runPass(live, fab, watch, notes, {
    label: 'warm-up',
    firstRun: 0,
    runs: P.warmupRuns,
    endSeconds: (ch, k) => origin + (k + 1) * (ch.contextDurationSeconds + ch.overheadSeconds[1]),
  });
}

/**
 * After a restart over saved stores: one run per chamber (run index FAB_WARMUP_RUNS), so that the
 * steps measure what a running defender holds (every owned chamber's history cached, its monitor
 * model read, the code hot), not the cold caches of a restart. Each run completes within one cycle
 * before now, after every warm-up run of its chamber (those ended at least a cycle before the
 * warm-up began).
 */
function rewarm(live: Live, fab: FabSpec, watch: ProcessWatch, notes: string[]): Promise<WarmUp> {
  const maxCycle = maxCycleOf(fab);
  const now = Math.floor(Date.now() / 1000);
  return runPass(live, fab, watch, notes, {
    label: 're-warm',
    firstRun: P.warmupRuns,
    runs: 1,
    endSeconds: (ch) => now - maxCycle + ch.contextDurationSeconds + ch.overheadSeconds[1],
  });
}

async function main(): Promise<void> {
  buildBenchApps();
  const started = Date.now();
  const loadBefore = loadAverage();
  const fab = fabOfChambers(P.chambers, P.seed);
  const rtRate = realTimeRunsPerSecond(fab);
  const rtSamples = realTimeSamplesPerSecond(fab);
  log(
    `fab: ${fab.chambers.length} chambers on ${fab.tools.length} tools; real time ${f2(rtRate)} runs/s, ${f2(rtSamples / 1e6)} M samples/s; ` +
      `steps of ${P.stepSeconds} s from ${P.speedStart}x (max ${P.speedMax}x)`,
  );
  const dir = mkdtempSync(join(tmpdir(), 'defender-bench-fab-'));
  const paths: StorePaths = { natsDir: join(dir, 'nats'), dbFile: join(dir, 'defender.db') };
  const key: WarmStateKey = { chambers: P.chambers, seed: P.seed, warmupRuns: P.warmupRuns, defenders: DEFENDERS };
  /** The cluster now running (a run that saves its warm-up starts it twice). */
  let live: Partial<Live> = {};
  const notes: string[] = [];
  try {
    const saved = P.warmState ? readWarmState<WarmUp>(P.warmState) : undefined;
    if (P.store === 'cassandra') {
      const t0 = Date.now();
      cassandra = await startCassandra({ heapMb: 1024, log });
      log(`cassandra ${cassandra.version} up in ${shortDuration(Date.now() - t0)}${cassandra.external ? ' (CASSANDRA_HOSTS)' : ''}; keyspace ${CASSANDRA_KEYSPACE}`);
    }
    if (saved && P.warmState) {
      checkWarmState(saved, key, P.warmState);
      const t0 = Date.now();
      restoreWarmState(P.warmState, saved, paths);
      log(`warm-up restored from ${P.warmState} (saved ${saved.savedAt} by ${saved.commit}) in ${shortDuration(Date.now() - t0)}`);
    }
    let cur = await startLive(paths, fab, { seedFab: !saved, tag: saved?.tag }, live);
    const owned = await Promise.all(
      cur.cl.defenders().map(async (d) => `${d.name} ${((await getJson(`${d.url}/api/v1/chambers`)).body as { chambers: unknown[] }).chambers.length}`),
    );
    log(`cluster up: ${owned.join(', ')} chambers (${((Date.now() - started) / 1000).toFixed(0)} s)`);
    const byName = (name: string) => () => live.cl?.procs.find((p) => p.name === name)?.app.child.pid;
    const watch = new ProcessWatch([
      ...Array.from({ length: DEFENDERS }, (_, i) => ({
        name: `defender pod-${i}`,
        pid: byName(`pod-${i}`),
        url: () => live.cl?.procs.find((p) => p.name === `pod-${i}`)?.url,
      })),
      { name: 'assignment-controller', pid: byName('controller') },
      { name: 'election-agent', pid: byName('agent-0') },
      { name: 'nats-server', pid: () => live.nats?.pid },
      ...(cassandra?.pid ? [{ name: 'cassandra', pid: () => cassandra?.pid ?? undefined }] : []),
      { name: 'bench: fab-sim publisher + observer', pid: () => process.pid },
    ]);
    const memSampler = setInterval(() => watch.sample(), SAMPLE_MS);

    let warm: WarmUp;
    let warmState: Outcome['warmState'];
    if (saved && P.warmState) {
      warm = saved.warmup;
      warmState = { restored: true, commit: saved.commit, savedAt: saved.savedAt, node: saved.node };
      await heapSnapshots(cur.cl, 'after-restore');
    } else {
      warm = await warmUp(cur, fab, watch, notes);
      await heapSnapshots(cur.cl, 'after-warmup');
      if (P.warmState) {
        // Saved with every process stopped (stores consistent on disk), then the same stores serve
        // the measurement: this run's steps start on a restarted cluster, as every restored run's do.
        const tag = cur.cl.tag;
        const t0 = Date.now();
        await stopLive(cur, 'fab-warmup-', 30_000);
        live = {};
        const commit = gitCommit();
        saveWarmState<WarmUp>(P.warmState, paths, { ...key, tag, commit, node: process.version, savedAt: new Date().toISOString(), warmup: warm });
        log(`warm-up saved to ${P.warmState} in ${shortDuration(Date.now() - t0)}; starting the cluster again over it`);
        cur = await startLive(paths, fab, { seedFab: false, tag }, live);
        warmState = { restored: false, commit, savedAt: new Date().toISOString(), node: process.version };
      }
    }
    const { r, cl } = cur;
    // A restarted cluster's caches are cold: one run per chamber first (not measured as a step).
    const rewarmed = warmState ? await rewarm(cur, fab, watch, notes) : undefined;
    if (warmState && rewarmed) warmState.rewarm = { runs: rewarmed.runs, seconds: rewarmed.seconds };
    const nowSeconds = Math.floor(Date.now() / 1000);

    // Paced steps.
    r.pollMs = POLL_MS;
    const schedule = new SteadySchedule(fab, P.seed, P.warmupRuns + (rewarmed ? 1 : 0));
    const simClock = { t: 0, originSeconds: nowSeconds };
    const steps: StepResult[] = [];
    const tried: { speed: number; sustained: boolean }[] = [];
    const search = { start: P.speedStart, max: P.speedMax, growth: P.growth, refine: P.refine, min: P.speedStart / 16 };
    let overloadDone = false;
    for (let speed = nextSpeed(tried, search); ; speed = nextSpeed(tried, search)) {
      let overloadOf: number | undefined;
      if (speed === undefined) {
        // Issue 23: one step beyond capacity (FAB_OVERLOAD x the highest sustained speed) shows whether
        // overload degrades gracefully: throughput plateaus, nobody is judged dead, memory stays bounded.
        const best = steps.filter((x) => x.verdict.sustained).sort((a, b) => b.speed - a.speed)[0];
        if (overloadDone || !best || !(P.overload > 0)) break;
        overloadDone = true;
        overloadOf = best.speed;
        speed = Math.round(best.speed * P.overload * 100) / 100;
        log(`overload step: ${speed}x (${P.overload} x the highest sustained ${best.speed}x)`);
      }
      const s = await runStep(steps.length, speed, { replay: r, schedule, cluster: cl, watch, simClock, rtRate });
      if (overloadOf !== undefined) s.overloadOf = overloadOf;
      steps.push(s);
      if (overloadOf === undefined) tried.push({ speed, sustained: s.verdict.sustained });
      if (!Number.isFinite(s.drainSeconds)) {
        log('the backlog did not drain after the step: waiting up to 5 more minutes before the next one');
        const more = await r.drain(300_000, () => {
          const c = cl.crashed();
          if (c) throw new Error(c);
        });
        if (!Number.isFinite(more)) {
          notes.push(`the backlog of the ${speed}x step did not drain within ${f0(Math.max(60, 2 * P.stepSeconds) + 300)} s: search stopped`);
          break;
        }
      }
    }
    let crash: CrashRecord | undefined;
    const bestSustained = steps.filter((x) => x.verdict.sustained && searchStep(x)).sort((a, b) => b.speed - a.speed)[0];
    if (P.crash && DEFENDERS >= 2 && bestSustained) {
      crash = await crashAndRejoin(cl, fab);
      for (let n = 1; n <= 2; n++) {
        log(`after the crash, step ${n} of 2: ${bestSustained.speed}x (the highest sustained)`);
        const s = await runStep(steps.length, bestSustained.speed, { replay: r, schedule, cluster: cl, watch, simClock, rtRate });
        s.afterCrash = n;
        steps.push(s);
      }
    } else if (P.crash) notes.push('FAB_CRASH: no crash run (no sustained step, or a single defender)');
    if (storeRetries.count > 0) notes.push(`the publisher retried ${storeRetries.count} store operations after retryable errors (e.g. write timeouts of an overloaded store)`);
    clearInterval(memSampler);
    await heapSnapshots(cl, 'after-steps');
    const cacheStats: string[] = [];
    for (const d of cl.defenders()) {
      const res = await getJson(`${d.url}/api/v1/cache/stats`).catch(() => undefined);
      if (res) cacheStats.push(`${d.name}: ${res.text.slice(0, 300)}`);
    }
    const maps = await controllerMaps(cl);
    const { reportFrom: _r, resultFile: _f, logDir: _l, heapSnapshots: _h, warmState: _w, ...params } = P;
    const outcome: Outcome = {
      params,
      fab,
      defenders: DEFENDERS,
      rtRate,
      rtSamples,
      warmup: warm,
      ...(warmState ? { warmState } : {}),
      steps,
      ...(crash ? { crash } : {}),
      memory: watch.hwm(),
      peakDetail: Object.fromEntries(watch.peakDetail),
      imageEnv: imageRuntimeEnv('defender'),
      notes,
      seconds: (Date.now() - started) / 1000,
      loadBefore,
      loadAfter: loadAverage(),
      cacheStats,
      ...(maps ? { maps } : {}),
    };
    mkdirSync(dirname(P.resultFile), { recursive: true });
    writeFileSync(P.resultFile, JSON.stringify({ ...outcome, fab: undefined }, (_k, v: unknown) => (typeof v === 'number' && !Number.isFinite(v) ? String(v) : v), 1));
    log(`raw result: ${P.resultFile}`);
    publish(outcome);
  } finally {
    await stopLive(live, 'fab-');
    if (cassandra && cassandra.external) await dropKeyspace(cassandra).catch((err: unknown) => log(`cassandra: keyspace ${CASSANDRA_KEYSPACE} not dropped: ${(err as Error).message}`));
    await cassandra?.stop();
    rmSync(dir, { recursive: true, force: true });
    log(`process logs: ${P.logDir}`);
  }
}

// ---------------------------------------------------------------------------------------------
// Report

/** The defenders' extra environment, for the report ('' when none). */
/** One line per defender: what its memory consisted of at its highest sampled VmRSS. */
function peakDetailLines(detail: Outcome['peakDetail']): string[] {
  const entries = Object.entries(detail ?? {});
  if (entries.length === 0) return [];
  return [
    '',
    'Defender memory at its highest sampled VmRSS (`/proc/<pid>/smaps` by kind of mapping; then V8 heap spaces, external memory and malloc from its /metrics, read a few ms later; malloc figures are from its last trim):',
    '',
    ...entries.map(([name, d]) => `- ${name} ${peakDetailText(d)}`),
  ];
}

/** "at <s> s: <MB> = ..." : one defender's memory by kind at a peak. */
function peakDetailText(d: PeakDetail): string {
  const m = d.smaps;
  const v = d.v8;
  return (
    `at ${f0(d.atSeconds)} s: ${f0(m.rssMb)} MB = node binary ${f0(m.nodeBinaryMb)} + other files ${f0(m.otherFilesMb)} + malloc [heap] ${f0(m.brkHeapMb)} + anonymous ${f0(m.anonMb)}` +
    (v
      ? `; V8 heap committed ${f0(v.committedMb)} (new space ${f0(v.newSpaceMb)}, old space ${f0(v.oldSpaceMb)}), used ${f0(v.usedMb)}; external (ArrayBuffers: cache arena, traces) ${f0(v.externalMb)}; malloc in use ${f0(v.mallocInUseMb)} of ${f0(v.mallocHeapMb)}` +
        (v.storeThreadMb !== undefined ? `; store thread's V8 heap ${f0(v.storeThreadMb)}` : '') +
        (v.heartbeatThreadMb !== undefined ? `; heartbeat thread's V8 heap ${f0(v.heartbeatThreadMb)}` : '')
      : '')
  );
}

/** Per window and defender, its memory by kind at the window's peak (results that recorded it). */
function windowPeakDetailLines(o: Outcome): string[] {
  const windows: { label: string; procs: ProcResult[] }[] = [
    { label: 'warm-up', procs: o.warmup.procs },
    ...o.steps.map((s) => ({ label: stepLabel(s), procs: s.procs })),
  ];
  const lines = windows.flatMap((w) => w.procs.filter((p) => p.peakDetail).map((p) => `- ${w.label}, ${p.name} ${peakDetailText(p.peakDetail as PeakDetail)}`));
  if (lines.length === 0) return [];
  return ['', 'Per window, each defender at the window\'s highest sampled VmRSS (same breakdown):', '', ...lines];
}

function envNote(q: Outcome['params'], imageEnv: Outcome['imageEnv']): string {
  const list = (env: Record<string, string> | undefined) =>
    Object.entries(env ?? {})
      .map(([k, v]) => (v === '' && RUNTIME_ENV_PATTERN.test(k) ? `no \`${k}\`` : `\`${k}=${v}\``))
      .join(', ');
  // Results saved before the image's environment was recorded: the Dockerfile's as of rendering.
  const image = ` and the runtime environment of the defender's image (apps/defender/Dockerfile: ${list(imageEnv ?? imageRuntimeEnv('defender')) || 'none'})`;
  const parts: string[] = [];
  if (list(q.defenderEnv)) parts.push(`all: ${list(q.defenderEnv)}`);
  (q.defenderEnvEach ?? []).forEach((env, i) => {
    if (list(env)) parts.push(`pod-${i}: ${list(env)}`);
  });
  return image + (parts.length > 0 ? `, plus extra environment (${parts.join('; ')})` : '');
}

function report(o: Outcome): string {
  const q = o.params;
  const ws = weightStats(o.fab);
  const searched = o.steps.filter(searchStep);
  const best = searched.filter((s) => s.verdict.sustained).sort((a, b) => b.speed - a.speed)[0];
  const lowestFail = searched.filter((s) => !s.verdict.sustained && (!best || s.speed > best.speed)).sort((a, b) => a.speed - b.speed)[0];
  const defenderPeak = Math.max(...o.memory.filter((m) => m.name.startsWith('defender')).map((m) => Math.max(m.hwmMb, m.peakRssMb)));
  const cycles = o.fab.chambers.map(cycleSeconds);
  const verdicts: string[] = [];
  verdicts.push(
    best
      ? `Highest sustained speed factor: **${best.speed}x** real time (${f1(best.offeredRate)} runs/s offered, lag p99 ${f0(best.lagP99)} ms)` +
          (lowestFail ? `; ${lowestFail.speed}x was not sustained (${lowestFail.verdict.reasons.join('; ')})` : `; the search stopped at FAB_SPEED_MAX ${q.speedMax}x`) +
          `. Target >= ${SPEED_TARGET}x: **${best.speed >= SPEED_TARGET ? 'met' : 'MISSED'}**` +
          (best.speed >= SPEED_TARGET ? '.' : ` (${f2(best.speed / SPEED_TARGET)} of it).`)
      : `No step was sustained (lowest tried ${Math.min(...o.steps.map((s) => s.speed))}x). Target >= ${SPEED_TARGET}x: **MISSED**.`,
  );
  verdicts.push(
    `Defender memory: peak RSS ${f0(defenderPeak)} MB over the whole run (VmHWM and sampled VmRSS, both defenders). Target <= ${RSS_TARGET_MB} MB: **${defenderPeak <= RSS_TARGET_MB ? 'met' : 'MISSED'}**.`,
  );
  verdicts.push(...balanceVerdicts(o));
  if (o.fab.chambers.length !== 5000) {
    // What the same runs/s would be for the target's fab (its real-time rate from the same simulator and seed).
    const fullRate = realTimeRunsPerSecond(fabOfChambers(5000, q.seed));
    verdicts.push(
      `Note: ${o.fab.chambers.length} chambers, not the target's 5,000 (FAB_CHAMBERS): the speed factor does not compare with the target.` +
        (best ? ` The ${f1(best.offeredRate)} runs/s sustained would be ${f1(best.offeredRate / fullRate)}x for the 5,000-chamber fab (${f2(fullRate)} runs/s in real time).` : ''),
    );
  }
  const firstChange = o.steps.findIndex((s) => s.mapChanges > 0);
  if (best && firstChange >= 0 && o.steps.indexOf(best) > firstChange) {
    const before = o.steps.slice(0, firstChange).filter((s) => s.verdict.sustained).sort((a, b) => b.speed - a.speed)[0];
    verdicts.push(
      `${best.speed}x was measured after the assignment map changed (below); the highest speed sustained under the cold-start map was ${before ? `${before.speed}x` : 'none'}` +
        ` (${o.steps[firstChange]?.speed}x, the step during which the map changed, was not${o.steps[firstChange]?.verdict.sustained ? ' disturbed' : ' sustained'}).`,
    );
  }
  o.steps.forEach((s, i) => {
    if (s.mapChanges <= 0) return;
    const later = o.steps.slice(i + 1).map((x) => `${x.speed}x`);
    verdicts.push(
      `The assignment map changed ${s.mapChanges} times during the ${s.speed}x step (with the defenders saturated; a defender judged dead and back is the usual cause: see the process logs)` +
        (s.assignedAtEnd ? `: chambers per defender ${s.assignedAtStart} -> ${s.assignedAtEnd}` : '') +
        (later.length ? `. The later steps (${later.join(', ')}) ran under the new map, not the cold-start one.` : '.'),
    );
  });
  for (const n of o.notes) verdicts.push(n);

  const stepRows = o.steps.map((s, i) => [
    i + 1,
    `${s.speed}x`,
    f0(s.prewriteSeconds),
    `${f1(s.targetRate)} (${f2(s.samplesPerSecond / 1e6)} M samples/s)`,
    `${f1(s.offeredRate)} (${s.published}/${s.scheduled})`,
    f1(s.processedRate),
    `${f0(s.lagP50)} / ${f0(s.lagP99)} / ${f0(s.lagMax)}`,
    `max ${s.backlogMax}, end ${s.backlogEnd}, ${s.verdict.backlogSlope >= 0 ? '+' : ''}${f2(s.verdict.backlogSlope)}/s; drain ${f1(s.drainSeconds)} s`,
    `${f0(s.verdict.lagEarlyMs)} -> ${f0(s.verdict.lagLateMs)}`,
    `${s.deadLetters} / ${s.failedAttempts} / ${s.mapChanges}`,
    s.assignedAtStart ?? '-',
    f1(s.load),
    (s.overloadOf !== undefined ? `overload (${f2(s.speed / s.overloadOf)} x ${s.overloadOf}x): ` : '') +
      (s.afterCrash !== undefined ? `after the crash (${s.afterCrash} of 2): ` : '') +
      (s.verdict.sustained ? 'sustained' : `no: ${s.verdict.reasons.join('; ')}`),
  ]);
  const procNames = o.memory.map((m) => m.name);
  const spread = (procs: ProcResult[]) => {
    const b = cpuBalance(procs, CPU_BAND);
    return Number.isFinite(b.maxDeviation) ? `${f1(b.maxDeviation * 100)} %` : '-';
  };
  const cpuRows = [
    ['warm-up (max speed)', ...procNames.map((n) => f0(o.warmup.procs.find((p) => p.name === n)?.cpuPct ?? NaN)), spread(o.warmup.procs)],
    ...o.steps.map((s) => [stepLabel(s), ...procNames.map((n) => f0(s.procs.find((p) => p.name === n)?.cpuPct ?? NaN)), spread(s.procs)]),
  ];
  const rssRows = [
    ['warm-up (max speed)', ...procNames.map((n) => f0(o.warmup.procs.find((p) => p.name === n)?.peakRssMb ?? NaN))],
    ...o.steps.map((s) => [stepLabel(s), ...procNames.map((n) => f0(s.procs.find((p) => p.name === n)?.peakRssMb ?? NaN))]),
    ['whole run: sampled VmRSS peak', ...o.memory.map((m) => f0(m.peakRssMb))],
    ['whole run: VmHWM (kernel peak)', ...o.memory.map((m) => f0(m.hwmMb))],
  ];
  return [
    `A fab of ${o.fab.chambers.length.toLocaleString('en-US')} chambers on ${o.fab.tools.length.toLocaleString('en-US')} tools from the fab simulator (tools/fab-sim, seed ${q.seed}: its tool types, 50-200 SVIDs, 1-10 Hz, 600-1,800 s contexts, one recipe per chamber, synthesized traces; ` +
      `weight median ${f0(ws.median / 1e3)} K, p90 ${f0(ws.p90 / 1e3)} K, max ${f1(ws.max / 1e6)} M samples per run, the heaviest 10 % carry ${f0(ws.top10Share * 100)} %; cycle ${f0(Math.min(...cycles))}-${f0(Math.max(...cycles))} s). ` +
      `In real time the fab completes **${f2(o.rtRate)} runs/s** (${f2(o.rtSamples / 1e6)} M samples/s), so ${SPEED_TARGET}x is ${f1(o.rtRate * SPEED_TARGET)} runs/s.`,
    '',
    `Cluster: built processes (\`dist/apps/*/main.js\`): a private nats-server, 1 election agent, 1 assignment controller, ${o.defenders ?? 2} defenders with default settings (\`MAX_CONCURRENT_MESSAGES\` 10, cache 100 MB, default strategy)${envNote(q, o.imageEnv)}, heartbeats every 2 s, ${
      (q.store ?? 'sqlite') === 'sqlite'
        ? 'one SQLite file (WAL) shared with the publisher'
        : 'a private single Cassandra node from the harness (RF 1, QUORUM, heap 1 GB; its JVM shares the 2 cores), one keyspace shared with the publisher'
    }.`,
    '',
    ...(o.maps
      ? [
          `Assignment maps (the controller's /metrics over the whole run): ${o.maps.published} published; computation p50 ${f1(o.maps.calcP50Ms)} ms, p99 ${f1(o.maps.calcP99Ms)} ms (histogram buckets); publication (chunks and head written) p50 ${f1(o.maps.publishP50Ms)} ms, p99 ${f1(o.maps.publishP99Ms)} ms, mean ${f1(o.maps.publishMeanMs)} ms; the last map ${f0(o.maps.lastBytes / 1024)} KiB stored, its largest KV value ${f0(o.maps.largestValueBytes / 1024)} KiB.`,
          '',
        ]
      : []),
    `**Verdict** (design.md section 5: whole-fab replay >= 10x real time with 2 defenders on SQLite; defender RSS <= 300 MB)${(q.store ?? 'sqlite') === 'sqlite' ? '' : `; this run is on ${STORE_NAME[q.store]}, so the speed verdict is not the target's`}:`,
    '',
    ...verdicts.map((v) => `- ${v}`),
    '',
    '### Method',
    '',
    `- Publisher: the bench process does what fab-sim's simulator does per run (\`synthesizeTrace\`, \`store.traces.write\`, then the JetStream publish of \`dc.<tool>.<chamber>.completed\`, msgID-deduplicated), at most ${q.concurrency} runs at once, a chamber's runs in order. ` +
      (q.prewrite
        ? 'Trace writing is bounded ahead (`FAB_PREWRITE=1`): before each step\'s window the traces of exactly the runs that window schedules are synthesized and written (column "pre-write s"), so in the window the publisher only publishes notifications, on schedule; in production the data-collection layer and its store writes run on other machines, and on this 2-core machine the trace synthesis (a CPU cost of the same order as the defenders\') would otherwise compete with the defenders and cap the offered load (the publisher, not the cluster, was the limit in trial runs). With `FAB_PREWRITE=0` each trace is written just before its notification, inside the window. '
        : 'Each trace is synthesized and written just before its notification, inside the window (`FAB_PREWRITE=0`: the data-collection layer on the same 2 cores as the cluster). ') +
      'Committed runs\' traces are deleted between steps (a retention job; disk would otherwise grow by ~2 MB per run). No trace blob is reused: the store keys a trace by (tool, chamber, run), so every run has its own. No excursions (this measures throughput, not detection).',
    `- Warm-up (Phase I): every chamber's first ${q.warmupRuns} runs, round-robin, as fast as the cluster takes them (at most ${q.warmupBacklog} in flight): ${o.warmup.runs.toLocaleString('en-US')} runs in ${f0(o.warmup.seconds)} s = ${f1(o.warmup.rate)} runs/s (${f1(o.warmup.rate / o.rtRate)}x real time; the traces written inline by the publisher, which shares the 2 cores, and Phase I runs have no limits to check, so this is no capacity figure of the cluster); frozen limits on ${o.warmup.frozen}/${o.warmup.checked} sampled chambers afterwards.` + warmStateText(o),
    `- Steps: the chambers' runs on their steady-state schedule (each chamber back to back, context + 1-5 min overhead, random phase; fab-sim's run model) at a speed factor for a ${q.stepSeconds} s window; ` +
      `the speed starts at ${q.speedStart}x and doubles (x${q.growth}) while sustained, then is bisected ${q.refine} times between the highest sustained and the lowest failed speed. Runs the publisher did not get out within the window are dropped. After each window the backlog drains before the next step starts.`,
    '- Sustained (tools/bench/fab-replay/sustain.ts): >= 90 % of the scheduled runs published; backlog trend (least-squares slope over 1 s samples) at most 2 % of the offered rate, or adding up over the window to at most max(10 runs, 1 s of offered runs); median lag of the last third of the window <= 2 x that of the first third + 1 s; the rest drained within max(10 s, 20 % of the window); no run lost, dead-lettered or committed without points.',
    '- Lag: notification publish (bench clock, just before the JetStream publish) -> commit (`committedAt` of the run\'s point set, the defender\'s clock on the same machine), per run, including runs committed during the drain. Processed runs/s: commits within the window / window.',
    `- CPU: user + system time from /proc/<pid>/stat over the window (100 % = one core; the machine has 2, shared with other work). RSS: VmRSS sampled every ${SAMPLE_MS / 1000} s (peak per window), VmHWM at the end. The bench process row is the publisher (publishes${q.prewrite ? '' : ', trace synthesis and SQLite trace writes'}) plus the observer (high-water-mark and point-set reads).${(q.store ?? 'sqlite') === 'sqlite' ? '' : ' The cassandra row is the store node\'s JVM.'}`,
    `- Load average (1 min) ${f1(o.loadBefore)} before, ${f1(o.loadAfter)} after; whole bench ${f0(o.seconds)} s.`,
    '',
    ...settingsComparison(o),
    '### Steps',
    '',
    table(
      ['#', 'speed', 'pre-write s', 'target runs/s', 'offered runs/s (published/scheduled)', 'processed runs/s', 'lag p50 / p99 / max ms', 'backlog (runs)', 'median lag first -> last third ms', 'dead letters / failed attempts / map changes', 'chambers per defender at start', 'load', 'sustained'],
      stepRows,
    ),
    '',
    ...stepCharts(o.steps, o.memory.map((m) => m.name).filter((n) => n.startsWith('defender '))),
    '### CPU % per process (100 % = one core)',
    '',
    table(['window', ...procNames, 'defenders: largest distance from their mean'], cpuRows),
    '',
    ...threadCpuSection(o),
    '### Memory per process (peak RSS MB)',
    '',
    table(['window', ...procNames], rssRows),
    '',
    `Defender history caches at the end: ${o.cacheStats.map((c) => `\`${c}\``).join('; ') || '-'}`,
    ...peakDetailLines(o.peakDetail),
    ...windowPeakDetailLines(o),
  ].join('\n');
}

/**
 * Each defender's CPU by thread per window (from /proc/<pid>/task by OS thread name), when the run
 * recorded it (results from before it did not).
 */
/** How the warm-up of a run with FAB_WARM_STATE came about ('' for a run without). */
function warmStateText(o: Outcome): string {
  const w = o.warmState;
  if (!w) return '';
  const restart =
    'the steps ran on a cluster started again over the warmed stores (every process restarted), not on the processes that warmed up' +
    (w.rewarm
      ? `; before the first step, one more run per chamber (${w.rewarm.runs.toLocaleString('en-US')} runs in ${f0(w.rewarm.seconds)} s, not measured) read every chamber's history and model back into the restarted defenders`
      : '');
  return w.restored
    ? ` **Restored, not run here** (FAB_WARM_STATE): the warm-up of commit ${w.commit} on ${w.node}, saved ${w.savedAt}; its figures (rate, the warm-up rows of the tables) are that run's; ${restart}.`
    : ` Saved after it (FAB_WARM_STATE, commit ${w.commit}); ${restart}.`;
}

/**
 * With FAB_DEFENDER_ENV_<i> (defenders run with different settings): the before / after of the
 * comparison, one row per defender: its settings, peak RSS per window and at the whole run's end
 * (sampled and VmHWM), CPU in each step. Empty when every defender ran with the same settings.
 */
function settingsComparison(o: Outcome): string[] {
  const each = o.params.defenderEnvEach ?? [];
  if (!each.some((env) => Object.keys(env ?? {}).length > 0)) return [];
  const settings = (env: Record<string, string> | undefined) => {
    const extra = Object.entries(env ?? {}).map(([k, v]) => (v === '' && RUNTIME_ENV_PATTERN.test(k) ? `no \`${k}\`` : `\`${k}=${v}\``));
    return extra.length > 0 ? `the image, ${extra.join(', ')}` : 'the image';
  };
  const cpu = (p: ProcResult | undefined) =>
    !p ? '-' : p.threads && Number.isFinite(p.threads.store) ? `${f0(p.cpuPct)} = ${f0(p.threads.main)} / ${f0(p.threads.store)} / ${f0(p.cpuPct - p.threads.main - p.threads.store)}` : p.threads ? `${f0(p.cpuPct)} = ${f0(p.threads.main)} / ${f0(p.cpuPct - p.threads.main)}` : f0(p.cpuPct);
  const sqlite = (o.params.store ?? 'sqlite') === 'sqlite';
  const rows = Array.from({ length: o.defenders ?? 2 }, (_, i) => {
    const name = `defender pod-${i}`;
    const rss = [o.warmup.procs, ...o.steps.map((s) => s.procs)].map((procs) => f0(procs.find((p) => p.name === name)?.peakRssMb ?? NaN));
    const m = o.memory.find((x) => x.name === name);
    return [`pod-${i}`, settings(each[i]), `${rss.join(' / ')} / ${f0(m?.peakRssMb ?? NaN)} / ${f0(m?.hwmMb ?? NaN)}`, o.steps.map((s) => cpu(s.procs.find((p) => p.name === name))).join('; ')];
  });
  return [
    '### Settings compared (the defenders of this run)',
    '',
    table(
      [
        'defender',
        'settings',
        `peak RSS MB: warm-up / ${o.steps.map(stepLabel).join(' / ')} / whole run sampled / VmHWM`,
        `CPU % per step (${sqlite ? 'process = main / store thread / rest' : 'process = main thread / rest'})`,
      ],
      rows,
    ),
    '',
  ];
}

function threadCpuSection(o: Outcome): string[] {
  const windows: { label: string; procs: ProcResult[] }[] = [
    { label: 'warm-up (max speed)', procs: o.warmup.procs },
    ...o.steps.map((s) => ({ label: stepLabel(s), procs: s.procs })),
  ];
  const defenders = [...new Set(windows.flatMap((w) => w.procs.filter((p) => p.threads).map((p) => p.name)))];
  if (defenders.length === 0) return [];
  const rows = windows.map((w) => [
    w.label,
    ...defenders.map((name) => {
      const p = w.procs.find((x) => x.name === name);
      if (!p?.threads) return '-';
      return `${f0(p.cpuPct)} = ${f0(p.threads.main)} / ${f0(p.threads.store)} / ${f0(p.cpuPct - p.threads.main - p.threads.store)}`;
    }),
  ]);
  return [
    '### CPU % per defender thread',
    '',
    'Process = main thread / SQLite store thread / the rest (V8\'s garbage-collector and compiler helpers, the heartbeat thread, libuv), from /proc/<pid>/task by thread name.',
    '',
    table(['window', ...defenders], rows),
    '',
  ];
}

/**
 * Issue 23's verdicts: each defender's CPU within ±10 % of the defenders' mean in every sustained
 * step, and the overload step (if run) degrading gracefully.
 */
function balanceVerdicts(o: Outcome): string[] {
  const out: string[] = [];
  const sustained = o.steps.filter((s) => s.verdict.sustained && s.overloadOf === undefined);
  const afterCrash = o.steps.filter((s) => s.afterCrash !== undefined);
  if (sustained.length > 0) {
    const judged = sustained.map((s) => ({ s, b: cpuBalance(s.procs, CPU_BAND) }));
    const worst = judged.reduce((a, x) => (!(x.b.maxDeviation <= a.b.maxDeviation) ? x : a));
    const outside = judged.filter((x) => !x.b.within);
    out.push(
      `CPU per defender within ±${f0(CPU_BAND * 100)} % of the defenders' mean in every sustained step: **${outside.length === 0 ? 'met' : 'MISSED'}**` +
        ` (largest distance ${f1(worst.b.maxDeviation * 100)} %, ${worst.b.furthest ?? '-'} at ${worst.s.speed}x` +
        (outside.length > 0 ? `; outside the band at ${outside.map((x) => `${x.s.speed}x (${f1(x.b.maxDeviation * 100)} %)`).join(', ')}` : '') +
        ').',
    );
  }
  if (o.crash && afterCrash.length > 0) {
    const c = o.crash;
    const judged = afterCrash.map((s) => ({ s, b: cpuBalance(s.procs, CPU_BAND) }));
    out.push(
      `After a defender judged dead (FAB_CRASH: ${c.victim} killed with SIGKILL; a map without it ${f1(c.crashMapSeconds)} s later, chambers ${c.chambersAfterCrash}; ` +
        `started again, the cluster settled ${f1(c.rejoinSeconds)} s later with ${c.chambersAfterRejoin}; ${c.maps} maps from the kill to the settled rejoin): ` +
        judged.map((x) => `step ${x.s.afterCrash} at ${x.s.speed}x ${x.s.verdict.sustained ? 'sustained' : 'NOT sustained'}, CPU ${x.s.procs.filter((p) => p.name.startsWith('defender')).map((p) => `${p.name} ${f0(p.cpuPct)} %`).join(' / ')}, largest distance from the mean ${f1(x.b.maxDeviation * 100)} %`).join('; ') +
        `. Within ±${f0(CPU_BAND * 100)} % after the remap: **${judged.every((x) => x.b.within) ? 'met' : 'MISSED'}**.`,
    );
  }
  for (const s of o.steps.filter((x) => x.overloadOf !== undefined)) {
    const base = o.steps.find((x) => searchStep(x) && x.speed === s.overloadOf && x.verdict.sustained);
    if (!base) continue;
    const peakRssMb = Math.max(0, ...s.procs.filter((p) => p.name.startsWith('defender')).map((p) => p.peakRssMb));
    const v = judgeOverload({
      processedRate: s.processedRate,
      sustainedProcessedRate: base.processedRate,
      mapChanges: s.mapChanges,
      peakRssMb,
      rssTargetMb: RSS_TARGET_MB,
      deadLettered: s.deadLetters,
      lost: s.lost ?? 0,
    });
    out.push(
      `Overload (${f1(s.offeredRate)} runs/s offered at ${s.speed}x, ${f2(s.speed / base.speed)} x the sustained ${base.speed}x): processed ${f1(s.processedRate)} runs/s (sustained step ${f1(base.processedRate)}), ` +
        `${s.mapChanges} maps published, defender peak RSS ${f0(peakRssMb)} MB in the window. Graceful (throughput at capacity, nobody judged dead, memory within target, nothing lost): **${v.graceful ? 'met' : 'MISSED'}**` +
        (v.graceful ? '.' : ` (${v.reasons.join('; ')}).`),
    );
  }
  return out;
}

/** `npm run bench:fab` with the FAB_* parameters this run was given (not where it put its files). */
function reproduceCommand(): string {
  const skip = new Set(['FAB_RESULT_FILE', 'FAB_LOG_DIR', 'FAB_REPORT_FROM', 'FAB_HEAP_SNAPSHOTS', 'FAB_WRITE', 'FAB_WARM_STATE']);
  const given = Object.entries(process.env)
    .filter(([k, v]) => k.startsWith('FAB_') && !skip.has(k) && v !== undefined && v !== '')
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k}=${v}`);
  // The folder is this machine's; that the run kept or restored its warm-up is not.
  const warm = process.env['FAB_WARM_STATE'] ? ['FAB_WARM_STATE=<dir>'] : [];
  return [...given, ...warm, 'npm run bench:fab'].join(' ');
}

function publish(outcome: Outcome): void {
  const body = report(outcome);
  process.stdout.write(`\n${body}\n`);
  if (P.write) {
    writeBenchmarkSection(
      outcome.params.section ?? 'fab-replay',
      `Whole-fab replay${(outcome.params.section ?? 'fab-replay') === 'fab-replay' ? '' : ` (${outcome.params.section})`}: ${outcome.fab.chambers.length.toLocaleString('en-US')} chambers, ${outcome.defenders ?? 2} defenders, ${STORE_NAME[outcome.params.store ?? 'sqlite']}`,
      reproduceCommand(),
      body,
    );
    log(`wrote the ${outcome.params.section ?? 'fab-replay'} section of docs/benchmarks.md`);
  }
}

/** Re-renders the report of a saved result (FAB_REPORT_FROM): infinities were saved as strings. */
function fromFile(file: string): Outcome {
  const o = JSON.parse(readFileSync(file, 'utf8'), (_k, v: unknown) =>
    v === 'Infinity' ? Infinity : v === '-Infinity' ? -Infinity : v === 'NaN' ? NaN : v,
  ) as Outcome;
  return { ...o, fab: fabOfChambers(o.params.chambers, o.params.seed) };
}

(P.reportFrom ? Promise.resolve(publish(fromFile(P.reportFrom))) : main()).then(
  () => process.exit(0),
  (err: unknown) => {
    log(`fab-replay failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    process.exit(1);
  },
);
