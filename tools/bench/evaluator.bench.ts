// Evaluator benchmark: what the product's RunEvaluator costs per run on the whole-fab replay's
// chambers (tools/fab-sim, the fab of bench:fab: 50-200 SVIDs, 1-10 Hz, 600-1,800 s contexts), in
// process and without I/O, so the evaluation's share of a defender's CPU is measured apart from the
// store, NATS and the publisher. Every chamber goes through Phase I (the default strategy's 30 runs and
// the run that fits) and then judged runs, reading its history as a defender does (the steady state's
// runs first, without what only a baseline fit reads, more when a run asks: evaluateWithHistory).
//
// Parameters (environment): EVAL_CHAMBERS (60, taken evenly from the 5,000-chamber fab), EVAL_RUNS
// (judged runs per chamber, 65: the Phase I extension at 90 unalarmed runs falls among them), EVAL_PROFILE=<file> (a CPU profile of the judged runs, its top
// functions logged), EVAL_WRITE=0 (do not write docs/benchmarks.md), BENCH_QUICK=1 (8 chambers, 3
// judged runs, no docs).
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import type { ChamberMemory, ChamberRef, LimitSetRecord, MonitorModelRecord, MonitorState, RunNotification, RunPointSet, TraceRecord } from '@defender/contracts';
import { synthesizeTrace } from '@defender/fab-sim';
import { createRunEvaluator, evaluateWithHistory, withoutBaselineData } from '@defender/pipeline';
import { envInt, handleBenchCommandLine } from './cli';
import { fabOfChambers } from './fab-replay/workload';
import { summariseProfile, type CpuProfile } from './pipeline/profile';
import { percentile, table, writeBenchmarkSection } from './report';

handleBenchCommandLine(`Usage: npm run bench:evaluator

The run evaluator's cost per run (Phase I and judged runs) on the whole-fab replay's chambers, in
process. Writes the \`evaluator\` section of docs/benchmarks.md.

Environment:
  EVAL_CHAMBERS=<n>     chambers, taken evenly from the 5,000-chamber fab (60)
  EVAL_RUNS=<n>         judged runs per chamber after Phase I (65: the Phase I extension falls among them)
  EVAL_PROFILE=<file>   keep a CPU profile of the judged runs there and log its top functions
  EVAL_WRITE=0          do not write docs/benchmarks.md
  BENCH_QUICK=1         8 chambers, 3 judged runs, no docs

Options:
  -h, --help          this text
`);

const QUICK = process.env['BENCH_QUICK'] === '1';
const CHAMBERS = QUICK ? 8 : envInt('EVAL_CHAMBERS', 60, 1);
const JUDGED = QUICK ? 3 : envInt('EVAL_RUNS', 65, 1);
const PROFILE = process.env['EVAL_PROFILE'];
const WRITE = !QUICK && process.env['EVAL_WRITE'] !== '0';
/** The default strategy's Phase I (30 runs) and the run that fits the model. */
const PHASE_ONE_RUNS = 31;

interface ChamberState {
  readonly ref: ChamberRef;
  readonly recipe: string;
  readonly spec: Parameters<typeof synthesizeTrace>[0];
  readonly sets: RunPointSet[];
  readonly limits: Map<string, LimitSetRecord>;
  /** The monitor state of the chamber's recipe, as the store keeps it between runs. */
  monitorState?: MonitorState;
  /** The recipe's model record (the version its state judges with), as the store keeps it. */
  monitorModel?: MonitorModelRecord;
  /** The chamber's memory (its runs' alarms), as the store keeps it between runs. */
  chamberMemory?: ChamberMemory;
  /** Sample buffers per SVID, reused from run to run as a defender's trace pool reuses its buffers. */
  readonly buffers: Float32Array[];
  sequence: number;
}

interface Timed {
  readonly ms: number;
  readonly cpuMs: number;
  readonly samples: number;
  /** The run fitted limits: `initial` (Phase I completed) or `extended` (the Phase I extension). */
  readonly fitted: 'initial' | 'extended' | null;
  /** Committed runs of history the evaluation was given, over all its reads. */
  readonly historyRuns: number;
  /** The run was judged by limits fitted before it. */
  readonly judged: boolean;
}

function traceOf(st: ChamberState, runIndex: number): { trace: TraceRecord; notification: RunNotification; now: Date } {
  const runId = `r${runIndex}`;
  const startSeconds = 1_800_000_000 + runIndex * 3_600;
  const allocate = (svid: number, length: number): Float32Array => {
    let buffer = st.buffers[svid];
    if (!buffer || buffer.length < length) st.buffers[svid] = buffer = new Float32Array(Math.ceil(length * 1.25));
    return buffer.subarray(0, length);
  };
  const trace = synthesizeTrace(st.spec, { runId, runIndex, startSeconds, allocate });
  const at = new Date(startSeconds * 1000).toISOString();
  const notification: RunNotification = {
    schema: 1,
    ...st.ref,
    runId,
    recipe: st.recipe,
    contextWindow: { start: at, end: at },
    svids: [...trace.svids.keys()],
    trace: { store: 'default' },
    completedAt: at,
  };
  return { trace, notification, now: new Date(startSeconds * 1000) };
}

const evaluator = createRunEvaluator();

/** One run of a chamber, timed (the trace is synthesized before the clock starts). */
function runOnce(st: ChamberState, runIndex: number): Timed {
  const { trace, notification, now } = traceOf(st, runIndex);
  let samples = 0;
  for (const v of trace.svids.values()) samples += v.length;
  const sequence = ++st.sequence;
  const judged = st.monitorModel !== undefined;
  // The limit sets and the model record as a defender's store read hands them out: new objects, parsed
  // from their stored JSON on every run (the parse is the defender's, on its main thread; the stringify
  // stands for the store).
  const stored = [...st.limits.values()].map((l) => ({ record: l, params: JSON.stringify(l.params) }));
  const storedModel = st.monitorModel && st.monitorState?.phase === 'judging' ? { record: st.monitorModel, model: JSON.stringify(st.monitorModel.model) } : undefined;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const limits = stored.map((s): LimitSetRecord => ({ ...s.record, params: JSON.parse(s.params) as LimitSetRecord['params'] }));
  const monitorModel = storedModel ? { ...storedModel.record, model: JSON.parse(storedModel.model) as MonitorModelRecord['model'] } : undefined;
  const { monitorState, chamberMemory } = st;
  let historyRuns = 0;
  const input = { chamber: st.ref, sequence, notification, trace, limits, strategy: undefined, now, ...(monitorState ? { monitorState } : {}), ...(monitorModel ? { monitorModel } : {}), ...(chamberMemory ? { chamberMemory } : {}) };
  const evaluation = evaluateWithHistory(evaluator, input, (limit, allPoints) => {
    const newest = st.sets.slice(-limit);
    historyRuns += newest.length;
    return allPoints ? newest : newest.map(withoutBaselineData);
  });
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  for (const ls of evaluation.newLimitSets) st.limits.set(ls.indicatorKey, ls);
  if (evaluation.monitorState) st.monitorState = evaluation.monitorState;
  if (evaluation.monitorModel) st.monitorModel = { ...st.ref, recipe: st.recipe, sequence, runId: notification.runId, committedAt: now, ...evaluation.monitorModel };
  st.chamberMemory = evaluation.chamberMemory;
  st.sets.push({ ...st.ref, sequence, runId: notification.runId, epoch: 1, committedAt: now, recipe: st.recipe, points: evaluation.points });
  // Bounded: a defender reads at most the full history (110 runs for the default strategy).
  if (st.sets.length > 160) st.sets.splice(0, 40);
  const fit = evaluation.monitorModel;
  const fitted = fit ? (fit.reason === 'extended' ? 'extended' : 'initial') : null;
  return { ms, cpuMs: (cpu.user + cpu.system) / 1000, samples, fitted, judged, historyRuns };
}

function post<T>(session: Session, method: string, params: object = {}): Promise<T> {
  return new Promise((resolve, reject) => session.post(method, params, (err, res) => (err ? reject(err) : resolve(res as T))));
}

function summary(label: string, xs: readonly Timed[]): (string | number)[] {
  const ms = xs.map((x) => x.ms);
  const cpu = xs.reduce((s, x) => s + x.cpuMs, 0) / xs.length;
  const samples = xs.reduce((s, x) => s + x.samples, 0) / xs.length;
  const mean = ms.reduce((s, x) => s + x, 0) / ms.length;
  return [label, xs.length, (samples / 1000).toFixed(0), mean.toFixed(2), percentile(ms, 50).toFixed(2), percentile(ms, 99).toFixed(2), cpu.toFixed(2), ((mean * 1e6) / samples).toFixed(1)];
}

async function main(): Promise<void> {
  const started = performance.now();
  const fab = fabOfChambers(5000, 1);
  const step = Math.max(1, Math.floor(fab.chambers.length / CHAMBERS));
  const states: ChamberState[] = [];
  for (let i = 0; i < CHAMBERS && i * step < fab.chambers.length; i++) {
    const spec = fab.chambers[i * step] as (typeof fab.chambers)[number];
    states.push({ ref: { toolId: spec.toolId, chamberId: spec.chamberId }, recipe: spec.recipe.name, spec, sets: [], limits: new Map(), buffers: [], sequence: 0 });
  }
  const warm: Timed[] = [];
  for (let r = 0; r < PHASE_ONE_RUNS; r++) for (const st of states) warm.push(runOnce(st, r));
  const unfitted = states.filter((st) => st.monitorModel === undefined).length;
  const cpuOf = (xs: readonly Timed[]) => (xs.length === 0 ? NaN : xs.reduce((a, x) => a + x.cpuMs, 0) / xs.length);

  const session = PROFILE ? new Session() : undefined;
  if (session) {
    session.connect();
    await post(session, 'Profiler.enable');
    await post(session, 'Profiler.start');
  }
  const later: Timed[] = [];
  for (let r = PHASE_ONE_RUNS; r < PHASE_ONE_RUNS + JUDGED; r++) for (const st of states) later.push(runOnce(st, r));
  const all = [...warm, ...later];
  const phaseOne = all.filter((t) => !t.judged && !t.fitted);
  const fits = all.filter((t) => t.fitted === 'initial');
  const refits = all.filter((t) => t.fitted === 'extended');
  const judged = all.filter((t) => t.judged && !t.fitted);
  const historyPerJudged = judged.reduce((a, t) => a + t.historyRuns, 0) / Math.max(1, judged.length);
  const readingNone = judged.filter((t) => t.historyRuns === 0).length;
  if (session && PROFILE) {
    const { profile } = await post<{ profile: CpuProfile }>(session, 'Profiler.stop');
    writeFileSync(PROFILE, JSON.stringify(profile));
    // In process, from source: no bundle and no source map to resolve.
    const top = summariseProfile(profile, '', 20);
    process.stdout.write(`profile of the judged runs -> ${PROFILE} (${(top.busyMs / 1000).toFixed(1)} s busy)\n`);
    for (const f of top.functions) process.stdout.write(`  ${f.ms.toFixed(0).padStart(6)} ms  ${f.fn}  ${f.where}\n`);
  }

  const header = ['runs', 'count', 'samples / run (K)', 'ms / run mean', 'p50', 'p99', 'CPU ms / run', 'ns / sample'];
  const rows = [
    summary('Phase I (collecting)', phaseOne),
    summary('limits fitted (Phase I completes)', fits),
    ...(refits.length > 0 ? [summary('refit (the Phase I extension)', refits)] : []),
    summary('judged (steady state)', judged),
  ];
  const seconds = (performance.now() - started) / 1000;
  process.stdout.write(`${table(header, rows)}\n`);
  if (unfitted > 0) process.stdout.write(`${unfitted} chamber(s) without a model after Phase I\n`);
  if (WRITE) {
    writeBenchmarkSection(
      'evaluator',
      'Run evaluator: cost per run on the whole-fab replay\'s chambers',
      'npm run bench:evaluator',
      [
        `${states.length} chambers taken evenly from the 5,000-chamber fab of bench:fab (tools/fab-sim, seed 1), the default strategy: ${PHASE_ONE_RUNS} runs each first (the default strategy's Phase I; the run that completes it fits the model) and ${JUDGED} more (the Phase I extension, a refit on 90 unalarmed runs, falls among them), through the product's RunEvaluator in process (no store, no NATS: the evaluation's own cost, with the limit sets and the recipe's model record parsed from their stored JSON on every run, as a defender's store read hands them out, and the recipe's monitor state and the chamber's memory carried from run to run as the store keeps them), history read as a defender reads it (\`evaluateWithHistory\`: the steady state's runs without what only a baseline fit reads, the full history when a run asks for it). Traces are synthesized outside the clock into sample buffers reused from run to run, as a defender's trace pool reuses its buffers, so the garbage collected in the timed runs is the evaluation's own. ${unfitted} chamber(s) had no model after Phase I. ${seconds.toFixed(0)} s in total.`,
        '',
        table(header, rows),
        '',
        `History read per judged run: ${historyPerJudged.toFixed(1)} committed runs; ${readingNone} of the ${judged.length} judged runs (${((100 * readingNone) / Math.max(1, judged.length)).toFixed(1)} %) read none (the monitor's memory comes from the recipe's state record, the escalation rule's from the chamber's memory record; the runs that fit read it: Phase I completing, the extension's refit, which the recipe's state says exactly when it is due).`,
        '',
        'Wall-clock per run (`performance.now`), CPU per run from `process.cpuUsage` (the process\'s threads, GC included).',
      ].join('\n'),
    );
    process.stdout.write('wrote the evaluator section of docs/benchmarks.md\n');
  }
  process.stdout.write(
    `evaluator: judged ${cpuOf(judged).toFixed(2)} ms phase-one-complete ${cpuOf(fits).toFixed(2)} ms refit ${cpuOf(refits).toFixed(2)} ms history-reads-per-judged-run ${historyPerJudged.toFixed(1)}\n`,
  );
}

void main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
