import {
  RECORD_LIMITS,
  type ChamberRef,
  type JsonObject,
  type LimitSetRecord,
  type RunPointSet,
  type UChartPoint,
} from '@defender/contracts';
import {
  fitMonitorModel,
  levelCentre,
  levelTerms,
  nextLevelOffsets,
  MONITOR_MODEL_KEY,
  MonitorBaselineError,
  monitorGroup,
  monitorKey,
  monitorLayout,
  monitorValues,
  scoreMonitorRun,
  type DefenseStrategy,
  type MonitorConfig,
  type LevelTerms,
  type MonitorModel,
  type MonitorSpec,
  type MonitorStatistic,
  type MonitorLayout,
  type MonitorViolation,
} from '@defender/defense-rules';
import type { IndicatorCalculator, Trace } from '@defender/uchart';
import { xxh64Hex } from '@defender/hashing';
import { MONITOR_PART_CHART_TYPE } from './chart-types';
import { POINT_FLAGS } from './flags';
import { pendingBaselineOf, type PendingBaseline } from './rebaseline';

/** Limit-set chart type of a monitor model (its JSON in `params.model`). */
export const MONITOR_CHART_TYPE = 'monitor';

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
  /** The model's limit sets (in the order to store them) when this run completed Phase I or extended it. */
  readonly newLimitSets: readonly LimitSetRecord[];
  readonly skipped: { indicatorKey: string; reason: string }[];
  readonly t2: number | null;
  readonly spe: number | null;
}

/**
 * Characters of the model's JSON per part. A limit set's params serialise to at most 1 MiB
 * (contracts RECORD_LIMITS.jsonBytes) and a part's text is escaped once more inside them; a chamber
 * with a hundred sensors has thousands of indicators, several MB of model.
 */
const PART_CHARS = 400_000;

/** Store key of part `i` (1-based) of the model stored under `modelKey`. */
export function modelPartKey(modelKey: string, i: number): string {
  return `${modelKey}/part${i}`;
}

/** What a reader without the model (the dashboard) needs of a model stored in parts. */
function modelSummary(model: MonitorModel): JsonObject {
  const notCharted: Record<string, number> = {};
  for (const nc of model.notCharted) notCharted[nc.reason] = (notCharted[nc.reason] ?? 0) + 1;
  return {
    charted: model.variables.length,
    notCharted,
    t2: model.pca ? model.pca.limits.t2 : null,
    spe: model.pca ? model.pca.limits.spe : null,
    components: model.pca ? model.pca.components : null,
    explainedVariance: model.pca ? model.pca.explainedVariance : null,
    mewma: model.mewma ? model.mewma.limit : null,
  };
}

/** Decoded models by chamber, key, version and content digest: a model in parts is parsed once. */
const DECODED = new Map<string, MonitorModel>();
const DECODED_MAX = 256;
/** Models stored whole, by their params object (the store hands out the same object while cached). */
const DECODED_WHOLE = new WeakMap<object, MonitorModel>();

function checkedModel(m: unknown, version: number): MonitorModel | string {
  if (typeof m !== 'object' || m === null) return 'params.model is missing';
  const model = m as MonitorModel;
  if (
    model.kind !== 'monitor' ||
    !Array.isArray(model.variables) ||
    !Array.isArray(model.center) ||
    !Array.isArray(model.scale) ||
    model.center.length !== model.variables.length ||
    model.scale.length !== model.variables.length ||
    !Array.isArray(model.notCharted)
  ) {
    return 'params.model is not a monitor model of this version';
  }
  return { ...model, version };
}

/**
 * The monitor model of the limit set `rec` (its parts, when it has them, from `limits`: the same
 * version of each part key, joined and checked against the head's digest), or why it cannot be read.
 */
function decodeModel(rec: LimitSetRecord, limits: readonly LimitSetRecord[]): MonitorModel | string {
  if (rec.chartType !== MONITOR_CHART_TYPE) return `limit set is a ${rec.chartType} chart, not a monitor`;
  const parts = rec.params['parts'];
  if (parts === undefined) {
    const hit = DECODED_WHOLE.get(rec.params);
    if (hit && hit.version === rec.version) return hit;
    const model = checkedModel(rec.params['model'], rec.version);
    if (typeof model !== 'string') DECODED_WHOLE.set(rec.params, model);
    return model;
  }
  const digest = rec.params['digest'];
  if (!(typeof parts === 'number' && Number.isSafeInteger(parts) && parts >= 1) || typeof digest !== 'string') {
    return 'params.parts / params.digest of a model in parts are invalid';
  }
  const id = `${rec.toolId}:${rec.chamberId}|${rec.indicatorKey}|${rec.version}|${digest}`;
  const hit = DECODED.get(id);
  if (hit) return hit;
  const texts: string[] = [];
  for (let i = 1; i <= parts; i++) {
    const key = modelPartKey(rec.indicatorKey, i);
    const part = limits.find((l) => l.indicatorKey === key && l.version === rec.version && l.chartType === MONITOR_PART_CHART_TYPE);
    const text = part?.params['text'];
    if (typeof text !== 'string') return `part ${i} of ${parts} of model v${rec.version} is missing`;
    texts.push(text);
  }
  const json = texts.join('');
  if (xxh64Hex(json) !== digest) return `the parts of model v${rec.version} do not match its digest`;
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch {
    return `the parts of model v${rec.version} are not JSON`;
  }
  const model = checkedModel(parsed, rec.version);
  if (typeof model !== 'string') {
    if (DECODED.size >= DECODED_MAX) DECODED.delete(DECODED.keys().next().value as string);
    DECODED.set(id, model);
  }
  return model;
}

/**
 * The limit sets of a fitted model, in the order to store them: the model itself as `params.model`
 * of one limit set under `key` when it fits, else its JSON in parts (`<key>/part<i>`, chart type
 * {@link MONITOR_PART_CHART_TYPE}, same version) first and then the head under `key` with the
 * number of parts, their digest and a summary. A reader that sees the head finds every part.
 */
function encodeModel(
  chamber: ChamberRef,
  key: string,
  model: MonitorModel,
  now: Date,
  reason: 'initial' | 'manual' | 'extended',
  excludedRunIds: readonly string[],
): LimitSetRecord[] {
  const record = (indicatorKey: string, chartType: string, params: JsonObject): LimitSetRecord => ({
    ...chamber,
    indicatorKey,
    version: model.version,
    chartType,
    center: 0,
    sigma: null,
    lcl: null,
    ucl: chartType === MONITOR_CHART_TYPE && model.pca ? model.pca.limits.t2 : null,
    params,
    baseline: { reason, runIds: [...model.baselineRunIds], excludedRunIds: [...excludedRunIds] },
    createdAt: now,
  });
  const json = JSON.stringify(model);
  if (json.length <= PART_CHARS) return [record(key, MONITOR_CHART_TYPE, { model: model as unknown as JsonObject })];
  const parts: LimitSetRecord[] = [];
  for (let at = 0, i = 1; at < json.length; at += PART_CHARS, i++) {
    parts.push(record(modelPartKey(key, i), MONITOR_PART_CHART_TYPE, { text: json.slice(at, at + PART_CHARS) }));
  }
  return [...parts, record(key, MONITOR_CHART_TYPE, { parts: parts.length, digest: xxh64Hex(json), summary: modelSummary(model) })];
}

/** The statistics of a constant window worth checking: a change of any statistic changes one of them. */
const CONSTANT_CHECKS = /:(min|max|mean|max-mean|mean-min)$/;

/** What a Phase I run stores of a window whose samples are all equal (see {@link runMonitorStage}). */
const CONSTANT_STATISTICS: ReadonlySet<string> = new Set(['mean', 'min', 'max']);

/** The indicators selected for a run (see {@link phaseOneSpecs} and {@link judgedSpecs}). */
interface SelectedSpecs {
  /** Store keys (`prefix` + monitor key), one per spec of `wanted`. */
  readonly keys: string[];
  readonly wanted: MonitorSpec[];
  /** Per spec of `wanted`: the index of its window's range spec in `windows` (Phase I), else -1. */
  readonly windowOfSpec: number[];
  /** Phase I: a range spec of each window with a wanted spec (tells constant windows apart); else empty. */
  readonly windows: MonitorSpec[];
}

function specOf(key: string, svid: string, w: MonitorLayout['windows'][number], statistic: MonitorStatistic, despike: boolean): MonitorSpec {
  return despike
    ? { key, svid, windowName: w.name, window: w.window, statistic, filter: 'median3' }
    : { key, svid, windowName: w.name, window: w.window, statistic };
}

/** A key over the store's limit, as `skipped` reports it. */
function tooLong(prefix: string, svid: string, window: string, statistic: MonitorStatistic, limit: number): { indicatorKey: string; reason: string } {
  return { indicatorKey: (prefix + monitorKey(svid, window, statistic)).slice(0, limit), reason: `key-too-long: over ${limit} characters` };
}

/**
 * Phase I's indicators of a run: every SVID x window x statistic of the layout, in the order of
 * `monitorSpecs`, with their store keys (`prefix` + monitor key); keys over the store's limit are
 * reported in `skipped` instead.
 */
export function phaseOneSpecs(trace: Trace, cfg: MonitorConfig, prefix: string, skipped: { indicatorKey: string; reason: string }[]): SelectedSpecs {
  const { svids, windows } = monitorLayout(trace, cfg);
  const limit = RECORD_LIMITS.indicatorKey;
  const statistics = cfg.statistics;
  const out: SelectedSpecs = { keys: [], wanted: [], windowOfSpec: [], windows: [] };
  // Indexed loops, not for-of: they run for every SVID window of a run, and iterator results were
  // a third of what selecting a run's indicators allocated (not optimized away).
  for (let i = 0; i < svids.length; i++) {
    const svid = svids[i] as string;
    for (let j = 0; j < windows.length; j++) {
      const w = windows[j] as MonitorLayout['windows'][number];
      const group = prefix + monitorGroup(svid, w.name);
      let range = -1;
      for (let s = 0; s < statistics.length; s++) {
        const statistic = statistics[s] as MonitorStatistic;
        if (group.length + statistic.length > limit) {
          skipped.push(tooLong(prefix, svid, w.name, statistic, limit));
          continue;
        }
        const key = group + statistic;
        if (range < 0) {
          out.windows.push(specOf('', svid, w, 'range', cfg.despike));
          range = out.windows.length - 1;
        }
        out.keys.push(key);
        out.wanted.push(specOf(key.slice(prefix.length), svid, w, statistic, cfg.despike));
        out.windowOfSpec.push(range);
      }
    }
  }
  return out;
}

/** Index of each statistic of a strategy's list (one map per list: a strategy has a handful). */
const STATISTIC_INDEX = new WeakMap<readonly string[], ReadonlyMap<string, number>>();

function statisticIndex(statistics: readonly string[]): ReadonlyMap<string, number> {
  let index = STATISTIC_INDEX.get(statistics);
  if (!index) {
    const m = new Map<string, number>();
    statistics.forEach((s, i) => {
      if (!m.has(s)) m.set(s, i);
    });
    STATISTIC_INDEX.set(statistics, (index = m));
  }
  return index;
}

/**
 * The indicators a model judges in a run: its charted indicators and the checked statistics of its
 * constant windows that this run's layout has, in the order of `monitorSpecs`, each with its store key
 * (the model's own key string). Found from the model's keys, so a judged run builds no key of the
 * layout: a key `<prefix>m/<svid>@<window>:<statistic>` is split at each window name of the layout that
 * ends its group (an SVID may hold `@`), and kept when the SVID is the layout's. Keys of the layout
 * over the store's limit are reported in `skipped`, as in Phase I (found by their length alone).
 */
export function judgedSpecs(trace: Trace, cfg: MonitorConfig, prefix: string, model: MonitorModel, skipped: { indicatorKey: string; reason: string }[]): SelectedSpecs {
  const { svids, windows } = monitorLayout(trace, cfg);
  const limit = RECORD_LIMITS.indicatorKey;
  const statistics = cfg.statistics;
  const base = prefix.length + 2; // `${prefix}m/`
  let longest = 0;
  for (let s = 0; s < statistics.length; s++) longest = Math.max(longest, (statistics[s] as string).length);
  let longestWindow = 0;
  for (let j = 0; j < windows.length; j++) longestWindow = Math.max(longestWindow, (windows[j] as MonitorLayout['windows'][number]).name.length);
  const svidIndex = new Map<string, number>();
  for (let i = 0; i < svids.length; i++) {
    const svid = svids[i] as string;
    if (!svidIndex.has(svid)) svidIndex.set(svid, i);
    if (base + svid.length + 1 + longestWindow + 1 + longest <= limit) continue;
    for (let j = 0; j < windows.length; j++) {
      const name = (windows[j] as MonitorLayout['windows'][number]).name;
      for (let s = 0; s < statistics.length; s++) {
        const statistic = statistics[s] as MonitorStatistic;
        if (base + svid.length + 1 + name.length + 1 + statistic.length > limit) skipped.push(tooLong(prefix, svid, name, statistic, limit));
      }
    }
  }
  const stats = statisticIndex(statistics);
  // Each match as one number, ordered as monitorSpecs orders its indicators.
  const codes: number[] = [];
  const matched: string[] = [];
  const match = (key: string): void => {
    if (!key.startsWith(prefix) || key.charCodeAt(prefix.length) !== 0x6d /* m */ || key.charCodeAt(prefix.length + 1) !== 0x2f /* / */) return;
    const colon = key.lastIndexOf(':');
    const s = colon > base ? stats.get(key.slice(colon + 1)) : undefined;
    if (s === undefined) return;
    for (let j = 0; j < windows.length; j++) {
      const name = (windows[j] as MonitorLayout['windows'][number]).name;
      const at = colon - name.length - 1;
      if (at <= base || key.charCodeAt(at) !== 0x40 /* @ */ || !key.startsWith(name, at + 1)) continue;
      const i = svidIndex.get(key.slice(base, at));
      if (i === undefined) continue;
      codes.push((i * windows.length + j) * statistics.length + s);
      matched.push(key);
    }
  };
  const variables = model.variables;
  for (let k = 0; k < variables.length; k++) match(variables[k] as string);
  const notCharted = model.notCharted;
  for (let k = 0; k < notCharted.length; k++) {
    const nc = notCharted[k] as MonitorModel['notCharted'][number];
    if (nc.reason === 'constant' && CONSTANT_CHECKS.test(nc.key)) match(nc.key);
  }
  const order = codes.map((_, k) => k).sort((a, b) => (codes[a] as number) - (codes[b] as number));
  const out: SelectedSpecs = { keys: [], wanted: [], windowOfSpec: [], windows: [] };
  let last = -1;
  for (let r = 0; r < order.length; r++) {
    const k = order[r] as number;
    const code = codes[k] as number;
    if (code === last) continue; // a key both charted and a constant check, or listed twice
    last = code;
    const s = code % statistics.length;
    const j = Math.floor(code / statistics.length) % windows.length;
    const i = Math.floor(code / statistics.length / windows.length);
    const key = matched[k] as string;
    out.keys.push(key);
    out.wanted.push(specOf(key.slice(prefix.length), svids[i] as string, windows[j] as MonitorLayout['windows'][number], statistics[s] as MonitorStatistic, cfg.despike));
    out.windowOfSpec.push(-1);
  }
  return out;
}

/** The model's point among a run's points (written last, so searched from the end). */
function modelPointIn(points: readonly UChartPoint[], modelKey: string): UChartPoint | undefined {
  for (let i = points.length - 1; i >= 0; i--) {
    const p = points[i] as UChartPoint;
    if (p.indicatorKey === modelKey) return p;
  }
  return undefined;
}

/**
 * Chart entries of the model's point that carry counts from run to run, so that a run read with a
 * short history knows whether Phase I or its extension may be due (see {@link runMonitorStage}):
 * a Phase I point counts the recipe's Phase I runs so far, a judged point the runs judged by its
 * model version so far (both including its own run).
 */
export const MONITOR_COUNT_KEYS = { phaseOneRuns: 'phaseOneRuns', judgedRuns: 'judgedRuns', extensionCheckAt: 'extensionCheckAt' } as const;

/** A count `p`'s model point carries in its chart (a positive integer), or undefined. */
function chartCount(p: UChartPoint, key: (typeof MONITOR_COUNT_KEYS)[keyof typeof MONITOR_COUNT_KEYS]): number | undefined {
  const n = p.chart?.[key];
  return n !== undefined && Number.isSafeInteger(n) && n >= 1 ? n : undefined;
}

/** Phase I runs up to and including `p`'s run (0 when `p` was judged); undefined when `p` does not say. */
function phaseOneRunsOf(p: UChartPoint): number | undefined {
  if (p.limitsVersion !== undefined) return 0;
  return chartCount(p, MONITOR_COUNT_KEYS.phaseOneRuns);
}

/**
 * The judged-run count from which the Phase I extension of model `version` may be due again, as the
 * last check of it left it in `p`'s run (undefined when `p` does not carry one).
 */
function extensionCheckOf(p: UChartPoint, version: number): number | undefined {
  if (p.limitsVersion !== version) return undefined;
  return chartCount(p, MONITOR_COUNT_KEYS.extensionCheckAt);
}

/** Runs judged by model `version` up to and including `p`'s run (0 when `p` was not); undefined when `p` does not say. */
function judgedRunsOf(p: UChartPoint, version: number): number | undefined {
  if (p.limitsVersion !== version) return 0;
  return chartCount(p, MONITOR_COUNT_KEYS.judgedRuns);
}

/**
 * The points of history runs, each decoded at most once per evaluation (a cached run decodes its
 * points anew on every read of `points`, and a run of a chamber with a hundred sensors has thousands).
 */
class DecodedHistory {
  private readonly decoded = new Map<RunPointSet, readonly UChartPoint[]>();

  points(set: RunPointSet): readonly UChartPoint[] {
    let pts = this.decoded.get(set);
    if (!pts) {
      pts = set.points;
      this.decoded.set(set, pts);
    }
    return pts;
  }

  modelPoint(set: RunPointSet, modelKey: string): UChartPoint | undefined {
    return modelPointIn(this.points(set), modelKey);
  }
}

/**
 * Runs judged by model `version` including this one: 1 for a version fitted by this run, else the
 * previous run's count + 1 — counted in the history read when that run carries none (points stored
 * before the counts were).
 */
function judgedRunsNow(
  version: number,
  fittedNow: boolean,
  prevPoint: UChartPoint | undefined,
  history: readonly RunPointSet[],
  recipe: string | undefined,
  modelKey: string,
  decoded: DecodedHistory,
): number {
  if (fittedNow) return 1;
  const carried = prevPoint ? judgedRunsOf(prevPoint, version) : 0;
  if (carried !== undefined) return carried + 1;
  let n = 1;
  for (const set of history) {
    if (recipe !== undefined && set.recipe !== undefined && set.recipe !== recipe) continue;
    if (decoded.modelPoint(set, modelKey)?.limitsVersion === version) n++;
  }
  return n;
}

/** Store key suffix of an SVID's level offset (the adaptive centre's state), a point of every judged run. */
function levelKey(svid: string): string {
  return `m/${svid}@*:offset`;
}

const LEVELS = new WeakMap<MonitorModel, LevelTerms>();

function levelsOf(model: MonitorModel): LevelTerms {
  let l = LEVELS.get(model);
  if (!l) {
    l = levelTerms(model.variables, model.center);
    LEVELS.set(model, l);
  }
  return l;
}

/**
 * Runs the strategy's monitor on one run: its indicators from the trace; in Phase I, the points only
 * (and the model once `baseline.minRuns` runs exist, which then judges this run already); after it,
 * the run judged against the model. A monitor key's store key is `keyPrefix` + key (`<recipe>|<key>`).
 */
export function runMonitorStage(args: {
  readonly strategy: DefenseStrategy & { readonly monitor: MonitorConfig };
  readonly trace: Trace;
  readonly calculator: IndicatorCalculator;
  readonly chamber: ChamberRef;
  readonly runId: string;
  readonly history: readonly RunPointSet[];
  readonly limits: readonly LimitSetRecord[];
  /** What a monitor key is prefixed with in the store (`<recipe>|`). */
  readonly keyPrefix: string;
  readonly now: Date;
  /** The run's recipe: history runs of other recipes are skipped without decoding them. */
  readonly recipe?: string;
  /**
   * Given when `history` is the newest runs of a longer history: throws (`HistoryTooShortError`) when
   * this run may need older runs — no earlier run of the recipe among them, Phase I may complete, or
   * its extension may be due (the counts the model's points carry say so).
   */
  readonly historyCut?: (reason: string) => never;
}): MonitorStageResult {
  const cfg = args.strategy.monitor;
  const skipped: { indicatorKey: string; reason: string }[] = [];
  const modelKey = args.keyPrefix + MONITOR_MODEL_KEY;

  let model: MonitorModel | null = null;
  let newest: LimitSetRecord | undefined;
  for (const rec of args.limits) if (rec.indicatorKey === modelKey && (!newest || rec.version > newest.version)) newest = rec;
  let unreadable = false;
  const pending: PendingBaseline | undefined = newest ? pendingBaselineOf(newest) : undefined;
  if (newest && !pending) {
    const decoded = decodeModel(newest, args.limits);
    if (typeof decoded === 'string') {
      unreadable = true;
      skipped.push({ indicatorKey: modelKey, reason: `unreadable-limits: ${decoded}` });
    } else model = decoded;
  }

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
    return { modelKey, points: [], violations: [], model, newLimitSets: [], skipped, t2: null, spe: null };
  }

  const decoded = new DecodedHistory();
  // The newest earlier run of the recipe with a model point: its state and counts carry forward.
  let prev: { set: RunPointSet; point: UChartPoint } | undefined;
  for (let i = args.history.length - 1; i >= 0 && !prev; i--) {
    const set = args.history[i] as RunPointSet;
    if (args.recipe !== undefined && set.recipe !== undefined && set.recipe !== args.recipe) continue;
    const point = decoded.modelPoint(set, modelKey);
    if (point) prev = { set, point };
  }
  const cut: ((reason: string) => never) | undefined = args.historyCut;
  if (cut && !prev) cut('no earlier run of the recipe in the history read');
  const minRuns = pending?.minRuns ?? cfg.baseline.minRuns;
  const phaseBefore = prev ? phaseOneRunsOf(prev.point) : 0;
  let newLimitSets: LimitSetRecord[] = [];
  if (!model && !unreadable && cut) {
    if (pending) cut('the model is re-baselined');
    if (phaseBefore === undefined) cut('the earlier run does not count its Phase I runs');
    else if (phaseBefore + 1 >= minRuns) cut(`Phase I may complete (run ${phaseBefore + 1} of ${minRuns})`);
  }
  // This run's Phase I count when it is not judged (the runs of the phase, as far as they are read, without the count).
  let phaseRuns = phaseBefore === undefined ? 1 : phaseBefore + 1;
  if (!model && !unreadable) {
    // Phase I: this run and the earlier runs of the recipe with a model point judged by no model.
    // After a re-baseline request, only the runs after it (judged by no model) and not excluded.
    const phase: RunPointSet[] = [];
    for (let i = args.history.length - 1; i >= 0; i--) {
      const set = args.history[i] as RunPointSet;
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
      if (cut) cut(`Phase I completes (run ${phase.length + 1} of ${minRuns})`);
      const keys = [...values.keys()];
      const index = new Map(keys.map((k, j) => [k, j]));
      const rows: number[][] = [];
      const runIds: string[] = [];
      for (const set of phase) {
        const row = new Array<number>(keys.length).fill(NaN);
        for (const p of decoded.points(set)) {
          const j = index.get(p.indicatorKey);
          if (j !== undefined) row[j] = p.value;
        }
        rows.push(row);
        runIds.push(set.runId);
      }
      rows.push(keys.map((k) => values.get(k) as number));
      runIds.push(args.runId);
      try {
        model = fitMonitorModel(rows, keys, runIds, { ...cfg, baseline: { ...cfg.baseline, minRuns } }, args.strategy.budget, pending?.version ?? 1);
        newLimitSets = encodeModel(args.chamber, modelKey, model, args.now, pending ? 'manual' : 'initial', pending?.excludeRunIds ?? []);
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
  const extendTo = cfg.baseline.extendTo;
  let extensionCheckAt: number | undefined;
  if (model && newLimitSets.length === 0 && extendTo !== false && model.baselineRunIds.length < extendTo) {
    const current = model;
    // Its usable runs are at most its Phase I runs and the runs it judged.
    const judged = prev ? judgedRunsOf(prev.point, current.version) : 0;
    const checkAt = prev ? extensionCheckOf(prev.point, current.version) : undefined;
    const due = judged === undefined || (current.baselineRunIds.length + judged >= extendTo && (checkAt === undefined || judged >= checkAt));
    if (!due) extensionCheckAt = checkAt;
    else {
      if (cut) cut(judged === undefined ? 'the earlier run does not count its judged runs' : `the Phase I extension may be due (${current.baselineRunIds.length} + ${judged} of ${extendTo} runs)`);
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
        candidates.length < extendTo
          ? []
          : candidates.filter((set) => {
              const mp = decoded.modelPoint(set, modelKey);
              if (!mp) return false;
              if (mp.limitsVersion === undefined) return phaseOne.has(set.runId);
              return mp.limitsVersion === current.version && (mp.flags & POINT_FLAGS.RUN_ALARMED) === 0;
            });
      if (usable.length >= extendTo) {
        const index = new Map(current.variables.map((k, j) => [k, j]));
        const rows = usable.map((set) => {
          const row = new Array<number>(current.variables.length).fill(NaN);
          for (const p of decoded.points(set)) {
            const j = index.get(p.indicatorKey);
            if (j !== undefined) row[j] = p.value;
          }
          return row;
        });
        try {
          const refit = fitMonitorModel(rows, current.variables, usable.map((set) => set.runId), { ...cfg, baseline: { ...cfg.baseline, minRuns: extendTo } }, args.strategy.budget, current.version + 1);
          // Indicators not charted in Phase I stay so (later runs do not store them).
          model = { ...refit, notCharted: [...current.notCharted, ...refit.notCharted] };
          newLimitSets = encodeModel(args.chamber, modelKey, model, args.now, 'extended', []);
        } catch (err) {
          if (!(err instanceof MonitorBaselineError)) throw err;
          skipped.push({ indicatorKey: modelKey, reason: `extension-refused: ${err.message}` });
        }
      } else if (judged !== undefined) {
        extensionCheckAt = judged + extendTo - (candidates.length < extendTo ? candidates.length : usable.length);
      }
    }
  }

  const points: MonitorStageResult['points'] = [];
  if (!model) {
    for (const [key, value] of values) points.push({ key, value, baselineData: true });
    points.push({ key: modelKey, value: 0, chart: { [MONITOR_COUNT_KEYS.phaseOneRuns]: phaseRuns } });
    return { modelKey, points, violations: [], model: null, newLimitSets, skipped, t2: null, spe: null };
  }

  // The previous run of the recipe judged by this model: its model point carries the MEWMA state and
  // its level points the adaptive centre's state (runs judged by an older version start afresh).
  const judgedModel = model;
  const previousPoints = prev && prev.point.limitsVersion === judgedModel.version ? decoded.points(prev.set) : undefined;
  const previous = previousPoints ? prev?.point : undefined;
  const prevState = model.mewma && previous?.chart
    ? model.mewma.scoreScale.map((_, a) => previous.chart?.[`z${a}`] ?? 0)
    : null;
  const levels = cfg.adapt ? levelsOf(model) : undefined;
  const offsets = new Map<string, number>();
  if (levels && previousPoints) {
    const wanted = new Map(levels.svids.map((svid) => [args.keyPrefix + levelKey(svid), svid]));
    for (const p of previousPoints) {
      const svid = wanted.get(p.indicatorKey);
      if (svid !== undefined && Number.isFinite(p.value)) offsets.set(svid, p.value);
    }
  }
  const centre = levels ? levelCentre(model.center, levels, offsets) : undefined;
  const score = scoreMonitorRun(model, values, modelKey, prevState, centre);
  for (const key of model.variables) {
    const v = values.get(key);
    if (v !== undefined) points.push({ key, value: v, limitsVersion: model.version, baselineData: true });
  }
  if (cfg.adapt && levels) {
    // The centre's state after this run: moved toward the run's level only when it raised no alarm.
    const row = model.variables.map((key) => values.get(key) ?? NaN);
    const next = score.violations.length === 0 ? nextLevelOffsets(model.center, levels, offsets, row, cfg.adapt.lambda) : offsets;
    for (const svid of levels.svids) points.push({ key: args.keyPrefix + levelKey(svid), value: next.get(svid) ?? 0, limitsVersion: model.version });
  }
  const chart: Record<string, number> = {};
  if (score.spe !== null) chart['spe'] = score.spe;
  if (score.mewma !== null) chart['mewma'] = score.mewma;
  score.mewmaState?.forEach((z, a) => (chart[`z${a}`] = z));
  if (extensionCheckAt !== undefined && newLimitSets.length === 0) chart[MONITOR_COUNT_KEYS.extensionCheckAt] = extensionCheckAt;
  chart[MONITOR_COUNT_KEYS.judgedRuns] = judgedRunsNow(judgedModel.version, newLimitSets.length > 0, prev?.point, args.history, args.recipe, modelKey, decoded);
  points.push({ key: modelKey, value: score.t2 ?? 0, limitsVersion: model.version, chart });
  if (score.missing > 0) skipped.push({ indicatorKey: modelKey, reason: `missing-indicators: ${score.missing} charted indicator(s) missing, judged at their Phase I mean` });
  return {
    modelKey,
    points,
    violations: score.violations,
    model,
    newLimitSets,
    skipped,
    t2: score.t2,
    spe: score.spe,
  };
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
