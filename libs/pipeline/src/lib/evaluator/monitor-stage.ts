/**
 * The chamber monitor's stage of a run's evaluation: the run's indicators, Phase I and its extension
 * (model fits), the run judged against the model, and the recipe's state after the run.
 */
import type { MonitorModelInput, MonitorState, RunPointSet, UChartPoint } from '@defender/contracts';
import {
  fitMonitorModel,
  levelCentre,
  nextLevelOffsets,
  MONITOR_MODEL_KEY,
  MonitorBaselineError,
  monitorValues,
  scoreMonitorRun,
  type DefenseStrategy,
  type LevelTerms,
  type MonitorConfig,
  type MonitorModel,
  type MonitorSpec,
  type MonitorViolation,
} from '@defender/defense-rules';
import { POINT_FLAGS } from './flags';
import { DecodedHistory, judgedRunsInHistory, memoryOfHistory, memoryOfState } from './monitor-memory';
import { currentModel, modelRecordOf, type MonitorModelCache } from './monitor-model-store';
import { CONSTANT_STATISTICS, judgedSpecs, phaseOneSpecs } from './monitor-specs';
import { olderRunsNeeded, type DetectorInput, type OlderRunsNeeded } from './detector';
import { storeKeyPrefix } from './store-keys';

export { MONITOR_CHART_TYPE, modelPartKey } from './monitor-model-store';
export { MONITOR_COUNT_KEYS } from './monitor-memory';
export { judgedSpecs, phaseOneSpecs } from './monitor-specs';

/** The monitor's result for one run (before flags). */
export interface MonitorStageResult {
  /** Store key of the model (`<recipe>|m:model`). */
  readonly modelKey: string;
  /** Points to store: the monitored indicators (all of them in Phase I, the charted ones after) and the model's own point. */
  readonly points: {
    readonly key: string;
    readonly value: number;
    readonly limitsVersion?: number;
    readonly chart?: Record<string, number>;
    /** A monitored indicator's value: read back only by a baseline fit (see `POINT_FLAGS.BASELINE_DATA`). */
    readonly baselineData?: true;
  }[];
  readonly violations: readonly MonitorViolation[];
  readonly model: MonitorModel | null;
  /** This run fitted the model (Phase I completed, or the extension). */
  readonly fitted: boolean;
  /**
   * The model record to store with the run: the model it fitted, or an earlier release's model (limit
   * sets) it was judged by, converted; undefined when the stored one stays as it is.
   */
  readonly modelRecord: MonitorModelInput | undefined;
  readonly skipped: { indicatorKey: string; reason: string }[];
  readonly t2: number | null;
  readonly spe: number | null;
  /** The recipe's state after this run, to commit with it; undefined when the run leaves it as it is. */
  readonly state: MonitorState | undefined;
}

/**
 * Runs the strategy's monitor on one run: its indicators from the trace; in Phase I, the points only
 * (and the model once `baseline.minRuns` runs exist, which then judges this run already); after it,
 * the run judged against the model. A monitor key's store key is the recipe's prefix + key (`<recipe>|<key>`).
 * With a history read up to a limit (`historyLimited`), a run that may need older runs (Phase I may
 * complete, the extension may be due, the recipe's memory is not in the runs read) gets
 * {@link OlderRunsNeeded} before anything is judged.
 */
export function runMonitorStage(
  input: DetectorInput & { readonly strategy: DefenseStrategy & { readonly monitor: MonitorConfig }; readonly models: MonitorModelCache },
): MonitorStageResult | OlderRunsNeeded {
  // History runs of other recipes are skipped without decoding them.
  const args = {
    ...input,
    chamber: input.run.chamber,
    runId: input.run.runId,
    recipe: input.run.recipe,
    keyPrefix: storeKeyPrefix(input.run.recipe),
    state: input.monitorState,
  };

  const cfg = args.strategy.monitor;
  const skipped: { indicatorKey: string; reason: string }[] = [];
  const modelKey = args.keyPrefix + MONITOR_MODEL_KEY;

  const current = currentModel(modelKey, args.limits, args.monitorModel, args.models, args.state);
  let model: MonitorModel | null = current.model;
  const pending = current.pending;
  const unreadable = current.unreadable !== undefined;
  if (current.unreadable !== undefined) skipped.push({ indicatorKey: modelKey, reason: current.unreadable });

  const decoded = new DecodedHistory();
  // What the previous run of the recipe carried: the stored state, else an earlier release's points.
  const memory = args.state ? memoryOfState(args.state) : memoryOfHistory(args.history, args.recipe, modelKey, args.keyPrefix, decoded);
  const limited = args.historyLimited;
  // A fit reads the indicators' values of its runs, which a read for the steady state may lack
  // (POINT_FLAGS.BASELINE_DATA), even one that found fewer runs than its limit: only ever fitted on the full history.
  const lean = args.historyLean;
  if (limited && memory.source === 'none') return olderRunsNeeded('no earlier run of the recipe in the history read');
  const minRuns = pending?.minRuns ?? cfg.baseline.minRuns;
  const collectingVersion = pending?.version ?? 1;
  const phaseBefore = memory.phaseOneRuns(collectingVersion);
  let fitted: MonitorModelInput | undefined;
  if (!model && !unreadable && lean) {
    if (pending) return olderRunsNeeded('the model is re-baselined');
    if (phaseBefore === undefined) {
      if (limited) return olderRunsNeeded('the earlier run does not count its Phase I runs');
    } else if (phaseBefore + 1 >= minRuns) return olderRunsNeeded(`Phase I may complete (run ${phaseBefore + 1} of ${minRuns})`);
  }

  // Phase I extension (below): whether it may be due for a model fitted before this run. Its usable runs
  // are at most its Phase I runs and the runs it judged.
  const extendTo = cfg.baseline.extendTo;
  // A model an equipment event re-centred is not extended: its judged runs span the regimes before and
  // after the event (a new Phase I after the next re-baseline learns from one regime).
  const recentred = model !== null && (memory.recentre(model.version) !== undefined || memory.centre(model.version, model.variables.length) !== undefined);
  const extension =
    model && extendTo !== false && model.baselineRunIds.length < extendTo && !recentred
      ? (() => {
          const judged = memory.judgedRuns(model.version);
          const checkAt = memory.extensionCheckAt(model.version);
          const due = judged === undefined || (model.baselineRunIds.length + judged >= extendTo && (checkAt === undefined || judged >= checkAt));
          return { judged, checkAt, due, extendTo };
        })()
      : undefined;
  if (model && extension?.due && lean) {
    return olderRunsNeeded(
      extension.judged === undefined ? 'the earlier run does not count its judged runs' : `the Phase I extension may be due (${model.baselineRunIds.length} + ${extension.judged} of ${extendTo} runs)`,
    );
  }

  // Whatever may need older runs asked for them above, before the run's indicators are computed: a run
  // that asks is evaluated again, and its indicators are its largest cost.
  // After Phase I only what the model judges is computed: the charted indicators, and the level and
  // extremes of each constant window (a constant window whose min and max keep the value kept every statistic).
  const { keys, wanted, windowOfSpec, windows } = model ? judgedSpecs(args.trace, cfg, args.keyPrefix, model, skipped) : phaseOneSpecs(args.trace, cfg, args.keyPrefix, skipped);
  // Phase I also needs each window's range, to tell constant windows (setpoints, states) apart.
  const phaseOne = !model;
  const computed = monitorValues(args.trace, phaseOne ? [...wanted, ...windows] : wanted, args.calculator);
  const values = new Map<string, number>();
  for (let i = 0; i < wanted.length; i++) {
    const v = computed[i];
    if (v === undefined) continue;
    // A window whose samples are all equal is stored by its level and extremes only: every other
    // statistic of it follows from them and the window's duration (which the sensors of the window
    // carry), and a chamber has 10-30x more such SVID windows than analog ones.
    const constant = phaseOne && computed[wanted.length + (windowOfSpec[i] as number)] === 0;
    if (!constant || CONSTANT_STATISTICS.has((wanted[i] as MonitorSpec).statistic)) values.set(keys[i] as string, v);
  }

  // A run none of whose monitored indicators has a value (every sample missing) is neither Phase I
  // material nor judgeable: no point, so that a worker dead-letters it when nothing else charted it.
  if (values.size === 0) {
    skipped.push({ indicatorKey: modelKey, reason: 'no-value: no monitored indicator has a value in this run' });
    return { modelKey, points: [], violations: [], model, fitted: false, modelRecord: undefined, skipped, t2: null, spe: null, state: undefined };
  }

  // This run's Phase I count when it is not judged (the runs of the phase, as far as they are read, without the count).
  let phaseRuns = phaseBefore === undefined ? 1 : phaseBefore + 1;
  if (!model && !unreadable) {
    // Phase I: this run and the earlier runs of the recipe with a model point judged by no model.
    // After a re-baseline request, only the runs after it (judged by no model) and not excluded.
    const phase: RunPointSet[] = [];
    // After an equipment event that re-baselined the recipe, only the runs after it.
    const since = args.state?.phase === 'collecting' && args.state.modelVersion === collectingVersion ? args.state.since : undefined;
    for (let i = args.history.length - 1; i >= 0; i--) {
      const set = args.history[i] as RunPointSet;
      if (since !== undefined && set.sequence <= since) break;
      if (args.recipe !== undefined && set.recipe !== undefined && set.recipe !== args.recipe) continue;
      const p = decoded.modelPoint(set, modelKey);
      if (!p) continue;
      if (p.limitsVersion !== undefined) break;
      if (!pending?.excludeRunIds.includes(set.runId)) phase.push(set);
    }
    phase.reverse();
    if (phaseBefore === undefined) phaseRuns = phase.length + 1;
    if (phase.length + 1 >= minRuns) {
      // A fit reads the indicators' values of its runs, which a history read for the steady state may
      // lack (POINT_FLAGS.BASELINE_DATA): only ever fitted on the full history.
      if (lean) return olderRunsNeeded(`Phase I completes (run ${phase.length + 1} of ${minRuns})`);
      const keys = [...values.keys()];
      const index = new Map(keys.map((k, j) => [k, j]));
      const rows: number[][] = [];
      const runIds: string[] = [];
      for (const set of phase) {
        rows.push(rowOf(decoded.points(set), keys, index));
        runIds.push(set.runId);
      }
      rows.push(keys.map((k) => values.get(k) as number));
      runIds.push(args.runId);
      try {
        model = fitMonitorModel(rows, keys, runIds, { ...cfg, baseline: { ...cfg.baseline, minRuns } }, args.strategy.budget, pending?.version ?? 1);
        fitted = modelRecordOf(model, args.now, pending ? 'manual' : 'initial', pending?.excludeRunIds ?? []);
      } catch (err) {
        if (!(err instanceof MonitorBaselineError)) throw err;
        skipped.push({ indicatorKey: modelKey, reason: `baseline-refused: ${err.message}` });
      }
    }
  }

  // Phase I extension: a model fitted on fewer than `baseline.extendTo` runs is fitted again, once, on its
  // Phase I and the runs it judged since without an alarm, when there are that many (version + 1): limits
  // from 30 runs miss part of a tool's in-control variation (a maintenance cycle), limits from ~90 do not.
  // Each check that finds too few usable runs stores (in the model point's chart, carried from run to
  // run) the judged-run count before which the extension cannot be due: every run judged since adds at
  // most one usable run. Without it, a chamber whose judged runs alarm often enough re-read its whole
  // history on every run (the check was due by the count of judged runs alone), for as long as that lasted.
  let extensionCheckAt: number | undefined;
  if (model && !fitted && extension) {
    const current = model;
    const { judged, checkAt, due } = extension;
    const target = extension.extendTo;
    if (!due) extensionCheckAt = checkAt;
    else {
      const phaseOne = new Set(current.baselineRunIds);
      // Runs of the recipe after the model's last Phase I run were judged by it (a newer version would
      // be the current model). Counting the ones without an alarm needs no decoding when the history
      // says which runs alarmed (`flagsUnion`); the points are read once there are enough.
      let last = -1;
      args.history.forEach((set, i) => {
        if (phaseOne.has(set.runId)) last = i;
      });
      const candidates = args.history.filter(
        (set, i) =>
          (phaseOne.has(set.runId) || (i > last && (args.recipe === undefined || set.recipe === undefined || set.recipe === args.recipe))) &&
          (set.flagsUnion === undefined || (set.flagsUnion & POINT_FLAGS.RUN_ALARMED) === 0),
      );
      const usable =
        candidates.length < target
          ? []
          : candidates.filter((set) => {
              const mp = decoded.modelPoint(set, modelKey);
              if (!mp) return false;
              if (mp.limitsVersion === undefined) return phaseOne.has(set.runId);
              return mp.limitsVersion === current.version && (mp.flags & POINT_FLAGS.RUN_ALARMED) === 0;
            });
      if (usable.length >= target) {
        const index = new Map(current.variables.map((k, j) => [k, j]));
        const rows = usable.map((set) => rowOf(decoded.points(set), current.variables, index));
        try {
          const refit = fitMonitorModel(rows, current.variables, usable.map((set) => set.runId), { ...cfg, baseline: { ...cfg.baseline, minRuns: target } }, args.strategy.budget, current.version + 1);
          // Indicators not charted in Phase I stay so (later runs do not store them).
          model = { ...refit, notCharted: [...current.notCharted, ...refit.notCharted] };
          fitted = modelRecordOf(model, args.now, 'extended', []);
        } catch (err) {
          if (!(err instanceof MonitorBaselineError)) throw err;
          skipped.push({ indicatorKey: modelKey, reason: `extension-refused: ${err.message}` });
        }
      } else if (judged !== undefined) {
        extensionCheckAt = judged + target - (candidates.length < target ? candidates.length : usable.length);
      }
    }
  }

  const points: MonitorStageResult['points'] = [];
  if (!model) {
    for (const [key, value] of values) points.push({ key, value, baselineData: true });
    // The model's point marks the run as one of the recipe's Phase I runs (judged by no model).
    points.push({ key: modelKey, value: 0 });
    const since = args.state?.phase === 'collecting' && args.state.modelVersion === collectingVersion ? args.state.since : undefined;
    const state: MonitorState = { phase: 'collecting', modelVersion: collectingVersion, runs: phaseRuns, ...(since !== undefined ? { since } : {}) };
    return { modelKey, points, violations: [], model: null, fitted: false, modelRecord: undefined, skipped, t2: null, spe: null, state };
  }

  // What the previous run judged by this model left: the MEWMA vector and the adaptive centre's
  // offsets (a version fitted since, by this run or another, starts afresh).
  const judgedModel = model;
  const fittedNow = fitted !== undefined;
  const prevState = model.mewma && !fittedNow ? memory.mewma(model.version, model.mewma.scoreScale.length) : null;
  // After an equipment event that re-centres the model (ADR 0019): runs since it, none yet when 0.
  const recentre = fittedNow ? undefined : memory.recentre(model.version);
  const p = model.variables.length;
  const row = model.variables.map((key) => values.get(key) ?? NaN);
  // The centre: the Phase I mean, moved by what events re-learnt (`centre`), then by the adaptive centre.
  const carriedCentre = fittedNow ? undefined : memory.centre(model.version, p);
  let learnt = carriedCentre;
  if (recentre?.runs === 0) {
    // The first run after the event: its own values are the first estimate (it is judged on its constants only).
    learnt = row.map((v, j) => (Number.isFinite(v) ? v - (model.center[j] as number) : (learnt?.[j] ?? 0)));
  }
  const base = learnt ? model.center.map((c, j) => c + (learnt[j] as number)) : model.center;
  const levels = cfg.adapt ? args.models.levelTerms(model) : undefined;
  const offsets = levels && !fittedNow ? memory.levelOffsets(model.version, levels.svids) : new Map<string, number>();
  const centre = levels ? levelCentre(base, levels, offsets) : learnt ? base : undefined;
  // A centre estimated from n runs is off by its own error: a new run's deviation from it has variance
  // (1 + 1/n) times its own, so the run is judged with its deviations scaled by 1 / sqrt(1 + 1/n).
  const judged = centre && recentre !== undefined && recentre.runs > 0 ? deflated(values, model.variables, centre, 1 + 1 / recentre.runs) : values;
  const score = scoreMonitorRun(model, judged, modelKey, prevState, centre, args.models.residualSds(model));
  for (const key of model.variables) {
    const v = values.get(key);
    if (v !== undefined) points.push({ key, value: v, limitsVersion: model.version, baselineData: true });
  }
  // The centre's state after this run: moved toward the run's level only when it raised no alarm;
  // while re-centring, each indicator's centre is the running mean of the unalarmed runs since the event.
  const alarmed = score.violations.length > 0;
  // A regime change without its event: the levels of many sensors moved together. One REGIME on this
  // run, and the model re-centred from the next runs as after an event.
  const moved = cfg.regime && alarmed && !fittedNow && recentre === undefined ? regimeSensors(model, args.models.levelTerms(model), row, centre ?? base, cfg.regime) : 0;
  const violations: readonly MonitorViolation[] = moved > 0 ? [...score.violations, { rule: 'REGIME', key: modelKey, value: moved }] : score.violations;
  const levelOffsets: Record<string, number> = {};
  if (levels && recentre === undefined && moved === 0) {
    const next = alarmed || !cfg.adapt ? offsets : nextLevelOffsets(base, levels, offsets, row, cfg.adapt.lambda);
    for (const svid of levels.svids) levelOffsets[svid] = next.get(svid) ?? 0;
  }
  let nextRecentre: { runs: number; seen: number } | undefined = moved > 0 ? { runs: 0, seen: 0 } : undefined;
  let relearn = false;
  let nextCentre = learnt;
  if (recentre !== undefined) {
    if (alarmed) nextCentre = recentre.runs === 0 ? carriedCentre : learnt;
    else if (recentre.runs > 0 && learnt) {
      const n = recentre.runs + 1;
      nextCentre = learnt.map((c, j) => (Number.isFinite(row[j] as number) ? c + ((row[j] as number) - (model.center[j] as number) - c) / n : c));
    }
    const runs = alarmed ? recentre.runs : recentre.runs + 1;
    const seen = recentre.seen + 1;
    if (runs < RECENTRE_RUNS) {
      // More than half the runs since the event alarmed: the event changed more than the location (a
      // spread, a correlation): Phase I again after this run, for the next version.
      if (seen >= 2 * RECENTRE_RUNS) relearn = true;
      else nextRecentre = { runs, seen };
    }
  }
  const chart: Record<string, number> = {};
  if (score.spe !== null) chart['spe'] = score.spe;
  if (score.mewma !== null) chart['mewma'] = score.mewma;
  points.push({ key: modelKey, value: score.t2 ?? 0, limitsVersion: model.version, chart });
  // Runs judged by this version, this one included (counted in the history when an earlier release's point did not say).
  const judgedBefore = fittedNow ? 0 : (memory.judgedRuns(judgedModel.version) ?? judgedRunsInHistory(args.history, args.recipe, modelKey, judgedModel.version, decoded));
  const state: MonitorState = relearn
    ? { phase: 'collecting', modelVersion: judgedModel.version + 1, runs: 0, since: args.run.sequence }
    : {
        phase: 'judging',
        modelVersion: judgedModel.version,
        judgedRuns: judgedBefore + 1,
        extensionCheckAt: nextExtensionCheck(judgedModel, fittedNow ? undefined : extensionCheckAt, fittedNow, alarmed, extendTo),
        mewma: score.mewmaState && score.mewmaState.length > 0 ? (moved > 0 ? score.mewmaState.map(() => 0) : [...score.mewmaState]) : null,
        levelOffsets,
        ...(nextRecentre ? { recentre: nextRecentre } : {}),
        ...(nextCentre ? { centre: [...nextCentre] } : {}),
      };
  if (score.missing > 0) skipped.push({ indicatorKey: modelKey, reason: `missing-indicators: ${score.missing} charted indicator(s) missing, judged at their Phase I mean` });
  return {
    modelKey,
    points,
    violations,
    model,
    fitted: fittedNow,
    modelRecord: fitted ?? current.converted,
    skipped,
    t2: score.t2,
    spe: score.spe,
    state,
  };
}

/** How far, in Phase I sds, a sensor's level must have moved for it to count in a regime change. */
const REGIME_SDS = 3;

/**
 * How many of the model's sensors (SVIDs) moved their level in this run (the mean deviation of their
 * level indicators from `centre`, in each indicator's Phase I sd, at least {@link REGIME_SDS}), when
 * that is a regime change by `regime`'s measure (at least `share` of the model's sensors, at least
 * `min`); else 0.
 */
function regimeSensors(model: MonitorModel, terms: LevelTerms, row: readonly number[], centre: readonly number[], regime: { readonly share: number; readonly min: number }): number {
  const sum = new Map<string, number>();
  const count = new Map<string, number>();
  terms.terms.forEach((t, j) => {
    const v = row[j] as number;
    if (!t?.level || !Number.isFinite(v)) return;
    sum.set(t.svid, (sum.get(t.svid) ?? 0) + (v - (centre[j] as number)) / (model.scale[j] as number));
    count.set(t.svid, (count.get(t.svid) ?? 0) + 1);
  });
  let moved = 0;
  for (const [svid, z] of sum) if (Math.abs(z / (count.get(svid) as number)) >= REGIME_SDS) moved++;
  return moved >= Math.max(regime.min, Math.ceil(regime.share * terms.svids.length)) ? moved : 0;
}

/**
 * Runs after an equipment event over which the centre is learnt again (`recentre`): after them the
 * mean's error is below a third of a run's sd (1 + 1/10 on the variance) and the adaptive centre's
 * EWMA follows from there.
 */
const RECENTRE_RUNS = 10;

/** `values` with each charted indicator's deviation from `centre` scaled by 1 / sqrt(`inflation`). */
function deflated(values: ReadonlyMap<string, number>, variables: readonly string[], centre: readonly number[], inflation: number): Map<string, number> {
  const out = new Map(values);
  const k = 1 / Math.sqrt(inflation);
  variables.forEach((key, j) => {
    const v = values.get(key);
    if (v === undefined) return;
    const c = centre[j] as number;
    out.set(key, c + (v - c) * k);
  });
  return out;
}

/**
 * The extension's bound after a run judged by `model` (the judged-run count before which the Phase I
 * extension cannot be due; null: it may be due now, or it never will). A model fitted by this run starts
 * it where its Phase I and its judged runs, the fitting run counted once, could first reach `extendTo`;
 * a run the monitor alarmed is no usable run, so it moves the bound one run later. Exact for a chamber
 * of one recipe: the extension is checked (the full history read) once, when it is due.
 */
function nextExtensionCheck(model: MonitorModel, bound: number | undefined, fittedNow: boolean, alarmed: boolean, extendTo: number | false): number | null {
  const baseline = model.baselineRunIds.length;
  if (extendTo === false || baseline >= extendTo) return null;
  const start = fittedNow ? extendTo - baseline + 1 : bound;
  if (start === undefined) return null;
  return alarmed ? start + 1 : start;
}

/**
 * A run's values of `keys` (NaN: the run has no point of it), `index` the position of each key. A run's
 * points come in the order its indicators were computed, which is the order of `keys` for every run of
 * one recipe and model: each point is first tried at the position after the last one matched, and
 * looked up only when that misses.
 */
function rowOf(points: readonly UChartPoint[], keys: readonly string[], index: ReadonlyMap<string, number>): number[] {
  const row = new Array<number>(keys.length).fill(NaN);
  let next = 0;
  for (const p of points) {
    const j = keys[next] === p.indicatorKey ? next : index.get(p.indicatorKey);
    if (j === undefined) continue;
    row[j] = p.value;
    next = j + 1;
  }
  return row;
}

/** UChartPoint of a monitor point with its flags. */
export function monitorPoint(p: MonitorStageResult['points'][number], flags: number): UChartPoint {
  return {
    indicatorKey: p.key,
    value: p.value,
    ...(p.limitsVersion !== undefined ? { limitsVersion: p.limitsVersion } : {}),
    flags,
    ...(p.chart && Object.keys(p.chart).length > 0 ? { chart: p.chart } : {}),
  };
}
