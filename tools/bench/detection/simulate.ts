/**
 * The detection benchmark's engine: simulated chambers (tools/fab-sim, the `detection` profile:
 * small traces, the same realism; or the `real-equipment` profile: those chambers plus lattice
 * sensors, equipment events, production periods and closed-loop faults) fed run by run through the product's own evaluation path — the
 * `RunEvaluator` a defender uses (trace -> indicators -> strategy -> alarms -> escalation) — over an
 * in-memory store that keeps what a defender's store would (committed point sets, the newest limit
 * set per indicator). No cluster, no I/O: library level and deterministic for a seed.
 */
import type { ChamberMemory, ChamberRef, LimitSetRecord, MonitorModelRecord, MonitorState, RunNotification, RunPointSet } from '@defender/contracts';
import {
  detectionMetrics,
  effectsFor,
  equipmentEvents,
  generateFab,
  planExcursions,
  profileMetrics,
  REAL_EQUIPMENT_KINDS,
  publishedEvent,
  runStartSeconds,
  synthesizeTrace,
  type ChamberSpec,
  type DetectionMetrics,
  type EquipmentEvent,
  type Excursion,
  type FabSpec,
  type ProfileMetrics,
  type RunOutcome,
} from '@defender/fab-sim';
import { createRunEvaluator, evaluateWithHistory, withoutBaselineData, type RunEvaluator } from '@defender/pipeline';

/** Settings of one benchmark run. */
export interface DetectionBenchOptions {
  /** Tools of the simulated fab (chambers: about 2.5 per tool). */
  readonly tools: number;
  /** Runs per chamber, Phase I included. */
  readonly runsPerChamber: number;
  /** Excursions to inject in total (several per chamber, apart from each other). */
  readonly excursions: number;
  /** Share of chambers kept free of excursions (their holds are the false-hold figure). */
  readonly cleanShare: number;
  /** First run an excursion may start at (after Phase I and a few judged runs). */
  readonly excursionAfter: number;
  readonly sizes: readonly number[];
  readonly seed: number;
  /** The simulated fab's profile (default `detection`). */
  readonly profile?: BenchProfile;
  /** The profile's equipment events happen to the chambers but are not given to the engine. */
  readonly withholdEvents?: boolean;
}

/** The fab-sim profiles the benchmark runs on. */
export const BENCH_PROFILES = ['detection', 'real-equipment'] as const;
export type BenchProfile = (typeof BENCH_PROFILES)[number];

/**
 * Excursion lengths on the `real-equipment` profile (runs, drawn per excursion); the `detection`
 * profile keeps each kind's own length.
 */
export const REAL_EQUIPMENT_RUNS: readonly [number, number] = [1, 10];

export const FULL_OPTIONS: DetectionBenchOptions = {
  tools: 40,
  runsPerChamber: 330,
  excursions: 540,
  cleanShare: 0.35,
  excursionAfter: 45,
  sizes: [1, 2, 3],
  seed: 20261127,
};

/** CI's quick mode: the same code path on a fraction of the runs. */
export const QUICK_OPTIONS: DetectionBenchOptions = {
  tools: 6,
  runsPerChamber: 120,
  excursions: 24,
  cleanShare: 0.35,
  excursionAfter: 45,
  sizes: [1, 2, 3],
  seed: 20261127,
};

/**
 * The `real-equipment` profile's settings: the same fab size and seed, sizes 1-4 sigma (issue 49),
 * every kind including `closed-loop`, lengths 1-10 runs.
 */
export const REAL_EQUIPMENT_OPTIONS: DetectionBenchOptions = { ...FULL_OPTIONS, sizes: [1, 2, 3, 4], profile: 'real-equipment' };
export const REAL_EQUIPMENT_QUICK_OPTIONS: DetectionBenchOptions = { ...QUICK_OPTIONS, sizes: [1, 2, 3, 4], profile: 'real-equipment' };

/** A preset's result on the simulated fab. */
export interface PresetResult {
  readonly preset: string;
  readonly metrics: DetectionMetrics;
  readonly runs: number;
  readonly chambers: number;
  /** Charted indicators (with frozen limits) per chamber at the end: mean and max. */
  readonly charts: { readonly mean: number; readonly max: number };
  /** Runs before a chamber's first frozen limits (Phase I): mean and max over chambers. */
  readonly phaseOne: { readonly mean: number; readonly max: number };
  /** Points stored per run (mean): what the store and the history cache carry per run. */
  readonly pointsPerRun: number;
  /** Alarm records per alarmed run (mean). */
  readonly alarmsPerAlarmedRun: number;
  readonly evaluateMs: number;
  /** `real-equipment` profile: the oracle bound, sustained and closed-loop detection, runs after events. */
  readonly profile?: ProfileMetrics;
}

/** The fab and the excursions of a benchmark run: the same for every preset. */
export interface Scenario {
  readonly fab: FabSpec;
  readonly excursions: readonly Excursion[];
  readonly options: DetectionBenchOptions;
  /** Equipment events before the last run (`real-equipment`; empty on `detection`); each chamber applies its own before its run (`BenchChamber.eventsBefore`). */
  readonly events: readonly EquipmentEvent[];
}

/** Builds the fab and plans the excursions on the chambers not kept clean. */
export function buildScenario(options: DetectionBenchOptions): Scenario {
  const real = options.profile === 'real-equipment';
  const fab = generateFab({ tools: options.tools, seed: options.seed, profile: real ? 'real-equipment' : 'detection' });
  const cleanCount = Math.round(fab.chambers.length * options.cleanShare);
  // Every k-th chamber stays clean (spread over tool types), the rest carry the excursions.
  const clean = new Set<number>();
  for (let i = 0; i < cleanCount; i++) clean.add(Math.floor((i * fab.chambers.length) / cleanCount));
  const faulty: FabSpec = { ...fab, chambers: fab.chambers.filter((c) => !clean.has(c.index)) };
  const perChamber = Math.max(1, Math.ceil(options.excursions / Math.max(1, faulty.chambers.length)));
  const excursions = planExcursions(faulty, {
    count: options.excursions,
    sizes: options.sizes,
    afterRun: options.excursionAfter,
    runsPerChamber: options.runsPerChamber,
    seed: options.seed,
    maxPerChamber: perChamber,
    ...(real ? { kinds: REAL_EQUIPMENT_KINDS, runsRange: REAL_EQUIPMENT_RUNS } : {}),
  });
  return { fab, excursions, options, events: equipmentEvents(fab.chambers, options.runsPerChamber) };
}

/** One chamber's store as a defender sees it: committed point sets and the newest limit set per indicator. */
class BenchChamber {
  private readonly sets: RunPointSet[] = [];
  private readonly limits = new Map<string, LimitSetRecord>();
  /** The monitor state of the chamber's recipe, as the store keeps it between runs. */
  private monitorState: MonitorState | undefined;
  /** The recipe's newest model record (the version its state judges with; one recipe per chamber here). */
  private monitorModel: MonitorModelRecord | undefined;
  private chamberMemory: ChamberMemory | undefined;
  private sequence = 0;
  readonly ref: ChamberRef;

  constructor(
    private readonly evaluator: RunEvaluator,
    readonly spec: ChamberSpec,
    private readonly strategy: unknown,
  ) {
    this.ref = { toolId: spec.toolId, chamberId: spec.chamberId };
  }

  /** Charts with limits: one per legacy limit set; a monitor model's charted indicators plus its T² and SPE. */
  get chartedIndicators(): number {
    let n = this.limits.size;
    const variables = this.monitorModel?.model['variables'];
    if (Array.isArray(variables)) n += variables.length + 2;
    return n;
  }

  /**
   * The chamber's equipment events before run `runIndex` (its spec's `real-equipment` events), as a
   * worker applies one (RunAttempt, ADR 0019): the recipe's state stepped by the strategy's action for
   * the kind, an empty run at the event's sequence.
   */
  eventsBefore(runIndex: number, t0: number): void {
    for (const e of this.spec.equipment?.events ?? []) {
      if (e.beforeRun !== runIndex) continue;
      const sequence = ++this.sequence;
      const at = new Date((runStartSeconds(this.spec, runIndex, t0, this.spec.contextDurationSeconds + 120) - 60) * 1000);
      const event = publishedEvent(this.spec, e, `${e.kind}-${runIndex}`, at);
      if (this.monitorState) {
        const next = this.evaluator.stateAfterEvent({ chamber: this.ref, recipe: this.spec.recipe.name, sequence, event, state: this.monitorState, strategy: this.strategy });
        if (next) this.monitorState = next;
      }
      this.sets.push({ ...this.ref, sequence, runId: `event:${event.eventId}`, epoch: 1, committedAt: at, recipe: this.spec.recipe.name, points: [] });
    }
  }

  process(runIndex: number, excursions: readonly Excursion[], t0: number) {
    const sequence = ++this.sequence;
    const runId = `r${String(runIndex).padStart(5, '0')}`;
    // Production periods of the `real-equipment` profile start after their long idle (weeks).
    const startSeconds = runStartSeconds(this.spec, runIndex, t0, this.spec.contextDurationSeconds + 120);
    const trace = synthesizeTrace(this.spec, {
      runId,
      runIndex,
      startSeconds,
      effects: effectsFor(excursions, runIndex),
    });
    const at = new Date(startSeconds * 1000).toISOString();
    const notification: RunNotification = {
      schema: 1,
      toolId: this.spec.toolId,
      chamberId: this.spec.chamberId,
      runId,
      recipe: this.spec.recipe.name,
      contextWindow: { start: at, end: at },
      svids: [...trace.svids.keys()],
      trace: { store: 'default' },
      completedAt: at,
    };
    const now = new Date(startSeconds * 1000);
    // As a worker reads it: the steady state's history, more when the run asks for it.
    const evaluation = evaluateWithHistory(
      this.evaluator,
      { chamber: this.ref, sequence, notification, trace, limits: [...this.limits.values()], strategy: this.strategy, now, ...(this.monitorState ? { monitorState: this.monitorState } : {}), ...(this.monitorModel && this.monitorState?.phase === 'judging' ? { monitorModel: this.monitorModel } : {}), ...(this.chamberMemory ? { chamberMemory: this.chamberMemory } : {}) },
      (limit, allPoints) => {
        const newest = this.sets.length > limit ? this.sets.slice(-limit) : this.sets;
        return allPoints ? newest : newest.map(withoutBaselineData);
      },
    );
    for (const ls of evaluation.newLimitSets) this.limits.set(ls.indicatorKey, ls);
    // Committed with the run, as a worker does (one recipe per chamber here).
    if (evaluation.monitorState) this.monitorState = evaluation.monitorState;
    if (evaluation.monitorModel) this.monitorModel = { ...this.ref, recipe: this.spec.recipe.name, sequence, runId, committedAt: now, ...evaluation.monitorModel };
    this.chamberMemory = evaluation.chamberMemory;
    this.sets.push({
      ...this.ref,
      sequence,
      runId,
      epoch: 1,
      committedAt: now,
      recipe: this.spec.recipe.name,
      points: evaluation.points,
    });
    // Bounded memory: a defender's history cache keeps about this much.
    const keep = this.evaluator.fullHistoryRuns(this.strategy);
    if (this.sets.length > 4 * keep + 64) this.sets.splice(0, this.sets.length - 2 * keep);
    return evaluation;
  }
}

/** Runs every chamber of the scenario through one preset. */
export function runPreset(
  scenario: Scenario,
  preset: { readonly name: string; readonly document: unknown },
  onChamber?: (done: number, total: number) => void,
): PresetResult {
  const evaluator = createRunEvaluator();
  const outcomes: RunOutcome[] = [];
  const byChamber = new Map<string, Excursion[]>();
  for (const x of scenario.excursions) byChamber.set(x.chamber, [...(byChamber.get(x.chamber) ?? []), x]);
  const charts: number[] = [];
  const phaseOne: number[] = [];
  let points = 0;
  let runs = 0;
  let alarmRecords = 0;
  let alarmedRuns = 0;
  let regimeAlarms = 0;
  const t0 = Date.UTC(2026, 0, 1) / 1000;
  const started = performance.now();
  scenario.fab.chambers.forEach((spec, i) => {
    const chamber = new BenchChamber(evaluator, spec, preset.document);
    const xs = byChamber.get(spec.key) ?? [];
    let firstJudged: number | null = null;
    for (let r = 0; r < scenario.options.runsPerChamber; r++) {
      if (!scenario.options.withholdEvents) chamber.eventsBefore(r, t0);
      const ev = chamber.process(r, xs, t0);
      const judged = ev.points.some((p) => p.limitsVersion !== undefined);
      if (judged && firstJudged === null) firstJudged = r;
      const alarmed = ev.alarms.length > 0;
      outcomes.push({ chamber: spec.key, runIndex: r, judged, alarmed, held: ev.hold !== undefined });
      points += ev.points.length;
      runs++;
      if (alarmed) {
        alarmedRuns++;
        alarmRecords += ev.alarms.length;
        // A run's alarm lists its violations' rules; REGIME: a regime change without its event.
        regimeAlarms += ev.alarms.filter((a) => ((a.details as { rules?: unknown } | undefined)?.rules as string[] | undefined)?.includes('REGIME')).length;
      }
    }
    charts.push(chamber.chartedIndicators);
    phaseOne.push(firstJudged ?? scenario.options.runsPerChamber);
    onChamber?.(i + 1, scenario.fab.chambers.length);
  });
  const evaluateMs = performance.now() - started;
  const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);
  const metrics = detectionMetrics(outcomes, scenario.excursions);
  return {
    preset: preset.name,
    metrics,
    runs,
    chambers: scenario.fab.chambers.length,
    charts: { mean: mean(charts), max: Math.max(0, ...charts) },
    phaseOne: { mean: mean(phaseOne), max: Math.max(0, ...phaseOne) },
    pointsPerRun: runs > 0 ? points / runs : 0,
    alarmsPerAlarmedRun: alarmedRuns > 0 ? alarmRecords / alarmedRuns : 0,
    evaluateMs,
    ...(scenario.options.profile === 'real-equipment' ? { profile: profileMetrics(metrics, outcomes, scenario.events, regimeAlarms) } : {}),
  };
}
