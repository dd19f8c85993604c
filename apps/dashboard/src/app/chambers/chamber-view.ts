import type { AlarmRecord, LimitSetRecord, MonitorModelRecord, MonitorStateRecord, RunPointSet } from '@defender/contracts';
import { describeFlags, MONITOR_CHART_TYPE, MONITOR_PART_CHART_TYPE, monitorModelOf, monitorModelSummary, PENDING_BASELINE_CHART_TYPE, POINT_FLAGS } from '@defender/pipeline';
import { runAlarmOf } from '../alarms/run-alarm';
import { finiteOrNull, jsonObject } from '../json-fields';
import { indicatorMeaning } from './indicator-words';
import { MODEL_SUFFIX, monitorRecipeOf, parseMonitorKey, type MonitorKeyParts } from './monitor-keys';

/** One plotted point of a U-chart. */
export interface ChartPoint {
  readonly sequence: number;
  readonly runId: string;
  readonly committedAt: string;
  readonly value: number;
  /** Version of the limits it was judged against (absent in Phase I). */
  readonly limitsVersion: number | null;
  /** A rule fired on this point. */
  readonly violation: boolean;
  /** The rules that fired (`WE1`, `N5`, `SPEC_USL`, ...). */
  readonly rules: readonly string[];
  /** The limits were frozen with this run (end of Phase I). */
  readonly newLimits: boolean;
  /** The run alarmed / put the chamber on hold (any of its indicators). */
  readonly runAlarmed: boolean;
  readonly runHold: boolean;
}

export interface ChartLimits {
  readonly version: number;
  readonly chartType: string;
  readonly center: number;
  readonly sigma: number | null;
  readonly lcl: number | null;
  readonly ucl: number | null;
  readonly createdAt: string;
  readonly baselineRuns: number;
  readonly excludedRuns: number;
  readonly reason: string;
}

/** The U-chart of one indicator: its points over the chamber's last runs and its current limits. */
export interface ChartView {
  readonly indicatorKey: string;
  readonly recipe: string;
  /** Indicator id of the strategy (`mean`, `std`, ...). */
  readonly indicator: string;
  readonly svid: string | null;
  readonly limits: ChartLimits | null;
  readonly points: readonly ChartPoint[];
  readonly violations: number;
  /** All values equal (a setpoint or state SVID: no variation, no limits). */
  readonly constant: boolean;
  /** An indicator of the chamber monitor (judged within its model, which has no per-indicator limit set), else null. */
  readonly monitor: MonitorKeyParts | null;
  /** What a monitor indicator measures, in words (`indicatorMeaning`); null for a strategy's own indicator. */
  readonly meaning: string | null;
}


/** `<recipe>|<id>[/<svid>]` -> parts (the run evaluator's store key). */
export function parseIndicatorKey(key: string): { recipe: string; indicator: string; svid: string | null } {
  const bar = key.indexOf('|');
  const recipe = bar >= 0 ? key.slice(0, bar) : '';
  const rest = bar >= 0 ? key.slice(bar + 1) : key;
  const slash = rest.indexOf('/');
  return slash >= 0 ? { recipe, indicator: rest.slice(0, slash), svid: rest.slice(slash + 1) } : { recipe, indicator: rest, svid: null };
}

const RULE_NAMES = new Set<string>(
  Object.keys(POINT_FLAGS).filter((n) => /^(N\d|WE\d|EWMA|MEWMA|CUSUM_|SPEC_|OTHER_RULE|T2$|SPE$|LIMIT$|RESIDUAL$|CONSTANT$)/.test(n)),
);

function limitsOf(l: LimitSetRecord): ChartLimits {
  return {
    version: l.version,
    chartType: l.chartType,
    center: l.center,
    sigma: l.sigma,
    lcl: l.lcl,
    ucl: l.ucl,
    createdAt: l.createdAt.toISOString(),
    baselineRuns: l.baseline.runIds.length,
    excludedRuns: l.baseline.excludedRunIds.length,
    reason: l.baseline.reason,
  };
}

/**
 * U-charts of a chamber from its committed runs (oldest first) and current limit sets: one chart per
 * indicator key. Charts with limits or violations come first (by SVID, then indicator); constant
 * charts (setpoints: no variation, never limited) are dropped unless `includeConstant`. The chamber
 * monitor's model is not a U-chart ({@link buildMonitors}); of its indicators (hundreds: every SVID x
 * step x statistic, and a fault on one sensor flags every statistic of it) only those with a
 * violation in these runs are kept, at most `maxMonitored` (those violated last, then most often),
 * unless `includeMonitored`.
 */
export function buildCharts(
  runs: readonly RunPointSet[],
  limits: readonly LimitSetRecord[],
  opts: { includeConstant?: boolean; includeMonitored?: boolean; maxMonitored?: number } = {},
): { charts: ChartView[]; hiddenConstant: number; hiddenMonitored: number } {
  const byKey = new Map<string, ChartPoint[]>();
  for (const run of runs) {
    const runFlags = run.points.reduce((acc, p) => acc | p.flags, 0);
    for (const p of run.points) {
      if (p.indicatorKey.endsWith(MODEL_SUFFIX)) continue;
      const rules = describeFlags(p.flags).filter((n) => RULE_NAMES.has(n));
      const pt: ChartPoint = {
        sequence: run.sequence,
        runId: run.runId,
        committedAt: run.committedAt.toISOString(),
        value: p.value,
        limitsVersion: p.limitsVersion ?? null,
        violation: (p.flags & POINT_FLAGS.VIOLATION) !== 0,
        rules,
        newLimits: (p.flags & POINT_FLAGS.NEW_LIMITS) !== 0,
        runAlarmed: (runFlags & POINT_FLAGS.RUN_ALARMED) !== 0,
        runHold: (runFlags & POINT_FLAGS.RUN_HOLD) !== 0,
      };
      const list = byKey.get(p.indicatorKey);
      if (list) list.push(pt);
      else byKey.set(p.indicatorKey, [pt]);
    }
  }
  // Parts of a monitor model stored in parts are no chart.
  const limitByKey = new Map(limits.filter((l) => l.chartType !== MONITOR_PART_CHART_TYPE).map((l) => [l.indicatorKey, l]));
  for (const key of limitByKey.keys()) if (!byKey.has(key) && !key.endsWith(MODEL_SUFFIX)) byKey.set(key, []);
  const charts: ChartView[] = [];
  const monitored: ChartView[] = [];
  let hidden = 0;
  let hiddenMonitored = 0;
  for (const [key, points] of byKey) {
    const l = limitByKey.get(key);
    const first = points[0];
    const constant = first !== undefined && points.length > 1 && points.every((p) => p.value === first.value);
    const violations = points.filter((p) => p.violation).length;
    const monitor = parseMonitorKey(key);
    if (monitor && violations === 0 && !opts.includeMonitored) {
      hiddenMonitored++;
      continue;
    }
    if (constant && !l && violations === 0 && !opts.includeConstant) {
      hidden++;
      continue;
    }
    const parts = parseIndicatorKey(key);
    (monitor ? monitored : charts).push({ indicatorKey: key, ...parts, limits: l ? limitsOf(l) : null, points, violations, constant, monitor, meaning: monitor ? indicatorMeaning(key) : null });
  }
  if (!opts.includeMonitored && opts.maxMonitored !== undefined && monitored.length > opts.maxMonitored) {
    const lastViolation = (c: ChartView) => c.points.reduce((s, p) => (p.violation ? Math.max(s, p.sequence) : s), 0);
    monitored.sort((a, b) => lastViolation(b) - lastViolation(a) || b.violations - a.violations);
    hiddenMonitored += monitored.length - opts.maxMonitored;
    monitored.length = opts.maxMonitored;
  }
  charts.push(...monitored);
  charts.sort((a, b) => Number(b.limits !== null) - Number(a.limits !== null) || (a.svid ?? '').localeCompare(b.svid ?? '') || a.indicator.localeCompare(b.indicator) || a.recipe.localeCompare(b.recipe));
  return { charts, hiddenConstant: hidden, hiddenMonitored };
}

// ---------------------------------------------------------------------------------------------
// The chamber monitor: T², SPE (and MEWMA) of each run against the recipe's model
// ---------------------------------------------------------------------------------------------

/** The chamber monitor's rules, in the order the run-level alarm lists them. */
const MONITOR_RULES = ['REGIME', 'T2', 'SPE', 'MEWMA', 'CONSTANT', 'LIMIT', 'RESIDUAL'] as const;

/** One run on the monitor's charts (from the model's point of the run). */
export interface MonitorPoint {
  readonly sequence: number;
  readonly runId: string;
  readonly committedAt: string;
  /** Version of the model that judged the run; null in Phase I (collecting the baseline). */
  readonly limitsVersion: number | null;
  /**
   * Hotelling T² of the run on the model's principal components; null without a PCA model, and in a
   * Phase I whose model is not fitted yet (a Phase I run of the model shown has its in-sample T² from
   * the model's fit: `phaseOne`).
   */
  readonly t2: number | null;
  /** Squared prediction error (what the principal components do not explain); null likewise. */
  readonly spe: number | null;
  /** MEWMA statistic of the scores; null when the strategy has no MEWMA. */
  readonly mewma: number | null;
  /** Monitor rules that fired in the run (`T2`, `SPE`, `MEWMA`, `CONSTANT`, `LIMIT`, `RESIDUAL`). */
  readonly rules: readonly string[];
  /** The model was frozen with this run (end of Phase I). */
  readonly newLimits: boolean;
  /** The run raised an alarm / put the chamber on hold. */
  readonly runAlarmed: boolean;
  readonly runHold: boolean;
  /** A Phase I run of the model shown: its T² and SPE are the fit's own (in sample), never judged. */
  readonly phaseOne?: true;
}

/** The limits of a monitor model (its record; an earlier release's: a limit set of chart type `monitor`). */
export interface MonitorLimits {
  readonly version: number;
  readonly createdAt: string;
  readonly baselineRuns: number;
  readonly excludedRuns: number;
  readonly reason: string;
  /** T² limit; null without a PCA model (univariate limits only). */
  readonly t2: number | null;
  /** SPE limit; null likewise. */
  readonly spe: number | null;
  /** MEWMA limit; null when the strategy has no MEWMA. */
  readonly mewma: number | null;
  /** Principal components retained and the share of the Phase I variance they explain (0..1). */
  readonly components: number | null;
  readonly explainedVariance: number | null;
  /** Indicators charted (the model's variables). */
  readonly charted: number;
  /** Indicators left out of the charts, per reason (`constant`, `numerical-noise`, `missing`). */
  readonly notCharted: Readonly<Record<string, number>>;
}

/** The chamber monitor of one recipe: its model's limits and the recent runs' T², SPE (and MEWMA). */
export interface MonitorView {
  readonly recipe: string;
  /** Store key of the model (`<recipe>|m:model`). */
  readonly modelKey: string;
  /** The newest model; null in the first Phase I. */
  readonly limits: MonitorLimits | null;
  /** A re-baseline requested after `limits`: a new Phase I runs, then a new model replaces it. */
  readonly rebaseline: { readonly version: number; readonly requestedAt: string; readonly reason: string } | null;
  /** Runs of the recipe, oldest first. */
  readonly points: readonly MonitorPoint[];
  readonly alarmedRuns: number;
  /** The recipe's monitor state as its newest run left it (the store's monitor state record); null before the first. */
  readonly state: MonitorStateView | null;
}

/** What the monitor remembers of a recipe between runs (contracts `MonitorState`, with the run that wrote it). */
export interface MonitorStateView {
  readonly phase: 'collecting' | 'judging';
  readonly modelVersion: number;
  /** Phase I runs so far (collecting), or runs judged by `modelVersion` so far (judging). */
  readonly runs: number;
  /** Judging: the SVIDs whose level the adaptive centre follows. */
  readonly adaptedSvids: number;
  readonly sequence: number;
  readonly runId: string;
  readonly committedAt: string;
}

function monitorStateView(r: MonitorStateRecord): MonitorStateView {
  const s = r.state;
  return {
    phase: s.phase,
    modelVersion: s.modelVersion,
    runs: s.phase === 'collecting' ? s.runs : s.judgedRuns,
    adaptedSvids: s.phase === 'judging' ? Object.keys(s.levelOffsets).length : 0,
    sequence: r.sequence,
    runId: r.runId,
    committedAt: r.committedAt.toISOString(),
  };
}

function monitorLimitsOfRecord(rec: MonitorModelRecord): MonitorLimits | null {
  const model = monitorModelOf(rec);
  if (typeof model === 'string') return null;
  const { baselineRuns, ...summary } = monitorModelSummary(model);
  return { version: rec.version, createdAt: rec.createdAt.toISOString(), baselineRuns, excludedRuns: rec.excludedRunIds.length, reason: rec.reason, ...summary };
}

/** The limits of a model an earlier release stored as a limit set (its JSON walked: a field it lacks reads as absent). */
function monitorLimitsOf(rec: LimitSetRecord): MonitorLimits {
  // The model is JSON written by the evaluator; a field this build does not know reads as absent.
  const base = {
    version: rec.version,
    createdAt: rec.createdAt.toISOString(),
    baselineRuns: rec.baseline.runIds.length,
    excludedRuns: rec.baseline.excludedRunIds.length,
    reason: rec.baseline.reason,
  };
  // A model too large for one limit set is stored in parts; its head carries a summary.
  const summary = jsonObject(rec.params['summary']);
  if (summary) {
    const counts = jsonObject(summary['notCharted']) ?? {};
    const notCharted: Record<string, number> = {};
    for (const [reason, n] of Object.entries(counts)) if (typeof n === 'number' && Number.isFinite(n)) notCharted[reason] = n;
    return {
      ...base,
      t2: finiteOrNull(summary['t2']) ?? rec.ucl,
      spe: finiteOrNull(summary['spe']),
      mewma: finiteOrNull(summary['mewma']),
      components: finiteOrNull(summary['components']),
      explainedVariance: finiteOrNull(summary['explainedVariance']),
      charted: finiteOrNull(summary['charted']) ?? 0,
      notCharted,
    };
  }
  const model = jsonObject(rec.params['model']);
  const pca = jsonObject(model?.['pca']);
  const limits = jsonObject(pca?.['limits']);
  const notCharted: Record<string, number> = {};
  const nc = model?.['notCharted'];
  if (Array.isArray(nc)) {
    for (const item of nc) {
      const reason = jsonObject(item)?.['reason'];
      const r = typeof reason === 'string' ? reason : 'unknown';
      notCharted[r] = (notCharted[r] ?? 0) + 1;
    }
  }
  const variables = model?.['variables'];
  return {
    ...base,
    t2: finiteOrNull(limits?.['t2']) ?? rec.ucl,
    spe: finiteOrNull(limits?.['spe']),
    mewma: finiteOrNull(jsonObject(model?.['mewma'])?.['limit']),
    components: finiteOrNull(pca?.['components']),
    explainedVariance: finiteOrNull(pca?.['explainedVariance']),
    charted: Array.isArray(variables) ? variables.length : 0,
    notCharted,
  };
}

/**
 * The Phase I runs of `record`'s model among `points` get the fit's own T² and SPE (the model keeps
 * them in its runs' order): the runs the model was learnt from, drawn beside the runs it judged.
 */
function withPhaseOne(points: MonitorPoint[], record: MonitorModelRecord): void {
  const model = monitorModelOf(record);
  if (typeof model === 'string' || !model.pca) return;
  const { t2, spe } = model.pca.phaseOne;
  const at = new Map(model.baselineRunIds.map((id, i) => [id, i]));
  points.forEach((p, k) => {
    const i = at.get(p.runId);
    if (i === undefined || p.limitsVersion !== null || p.t2 !== null) return;
    const pt = t2[i];
    const ps = spe[i];
    if (pt === undefined || ps === undefined) return;
    points[k] = { ...p, t2: pt, spe: ps, phaseOne: true };
  });
}

/** The model keys of a chamber's monitor (`<recipe>|m:model`) in these runs and limit sets. */
export function monitorModelKeys(runs: readonly RunPointSet[], limits: readonly LimitSetRecord[]): string[] {
  const keys = new Set<string>();
  for (const l of limits) if (l.indicatorKey.endsWith(MODEL_SUFFIX)) keys.add(l.indicatorKey);
  for (const run of runs) for (const p of run.points) if (p.indicatorKey.endsWith(MODEL_SUFFIX)) keys.add(p.indicatorKey);
  return [...keys].sort();
}

/**
 * The chamber monitor of each recipe that has one: the model's limits (the recipe's newest model
 * record among `models`, or a newer `monitor` limit set of `<recipe>|m:model` that an earlier release
 * stored; `limitSets` may hold several versions) and, per run of the recipe, T² (the
 * model point's value), SPE and MEWMA (its `chart`), the rules that fired (flag bits of the run's
 * monitor points, and the `rules` of the run-level alarm among `alarms`, which names the violations
 * that have no stored point, such as `CONSTANT`).
 */
export function buildMonitors(
  runs: readonly RunPointSet[],
  limitSets: readonly LimitSetRecord[],
  alarms: readonly AlarmRecord[] = [],
  states: readonly MonitorStateRecord[] = [],
  models: readonly MonitorModelRecord[] = [],
): MonitorView[] {
  const stateOf = new Map(states.map((r) => [r.recipe, r]));
  const recordOf = new Map<string, MonitorModelRecord>();
  for (const m of models) if ((recordOf.get(m.recipe)?.version ?? 0) < m.version) recordOf.set(m.recipe, m);
  const alarmRules = new Map<string, readonly string[]>();
  for (const a of alarms) {
    const run = runAlarmOf(a.ruleId, a.details);
    if (run) alarmRules.set(`${a.sequence}|${a.indicatorKey}`, run.rules);
  }
  const series = new Map<string, MonitorPoint[]>();
  for (const key of monitorModelKeys(runs, limitSets)) series.set(key, []);
  // A recipe whose runs are older than the runs read still has its state.
  for (const r of states) if (!series.has(r.recipe + MODEL_SUFFIX)) series.set(r.recipe + MODEL_SUFFIX, []);
  for (const run of runs) {
    let runFlags = 0;
    const bits = new Map<string, number>();
    for (const p of run.points) {
      runFlags |= p.flags;
      const recipe = monitorRecipeOf(p.indicatorKey);
      if (recipe !== null) bits.set(recipe, (bits.get(recipe) ?? 0) | p.flags);
    }
    for (const p of run.points) {
      if (!p.indicatorKey.endsWith(MODEL_SUFFIX)) continue;
      const recipe = p.indicatorKey.slice(0, -MODEL_SUFFIX.length);
      const judged = p.limitsVersion !== undefined;
      // A judged run has T² and SPE exactly when the model has a PCA part (SPE is then always charted).
      const spe = judged ? finiteOrNull(p.chart?.['spe']) : null;
      const fired = new Set<string>(describeFlags(bits.get(recipe) ?? 0));
      for (const r of alarmRules.get(`${run.sequence}|${p.indicatorKey}`) ?? []) fired.add(r);
      series.get(p.indicatorKey)?.push({
        sequence: run.sequence,
        runId: run.runId,
        committedAt: run.committedAt.toISOString(),
        limitsVersion: p.limitsVersion ?? null,
        t2: spe !== null ? p.value : null,
        spe,
        mewma: judged ? finiteOrNull(p.chart?.['mewma']) : null,
        rules: MONITOR_RULES.filter((r) => fired.has(r)),
        newLimits: (p.flags & POINT_FLAGS.NEW_LIMITS) !== 0,
        runAlarmed: (runFlags & POINT_FLAGS.RUN_ALARMED) !== 0,
        runHold: (runFlags & POINT_FLAGS.RUN_HOLD) !== 0,
      });
    }
  }
  const views: MonitorView[] = [];
  for (const [modelKey, points] of series) {
    let model: LimitSetRecord | undefined;
    let pending: LimitSetRecord | undefined;
    for (const l of limitSets) {
      if (l.indicatorKey !== modelKey) continue;
      if (l.chartType === MONITOR_CHART_TYPE && (!model || l.version > model.version)) model = l;
      if (l.chartType === PENDING_BASELINE_CHART_TYPE && (!pending || l.version > pending.version)) pending = l;
    }
    const recipe = modelKey.slice(0, -MODEL_SUFFIX.length);
    const record = recordOf.get(recipe);
    if (record) withPhaseOne(points, record);
    const newest = Math.max(model?.version ?? 0, record?.version ?? 0);
    const rebaseline =
      pending && pending.version > newest
        ? { version: pending.version, requestedAt: pending.createdAt.toISOString(), reason: typeof pending.params['reason'] === 'string' ? pending.params['reason'] : 'manual' }
        : null;
    const state = stateOf.get(recipe);
    views.push({
      recipe,
      modelKey,
      limits: record && record.version >= (model?.version ?? 0) ? monitorLimitsOfRecord(record) : model ? monitorLimitsOf(model) : null,
      rebaseline,
      points,
      alarmedRuns: points.filter((p) => p.runAlarmed).length,
      state: state ? monitorStateView(state) : null,
    });
  }
  return views;
}
