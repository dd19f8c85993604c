/**
 * The chamber monitor's fitted model: a record of its own (contracts `MonitorModelRecord`, written with
 * the run that fitted it), or, as an earlier release stored it, limit sets: the model's JSON as
 * `params.model` of one limit set under the model key, or, when it is large, in parts with a head that
 * names their number and digest. Decoded models are remembered per record, version and digest.
 */
import type { ChamberRef, JsonObject, LimitSetRecord, MonitorModelInput, MonitorModelRecord, MonitorState } from '@defender/contracts';
import { levelTerms, residualSds, type LevelTerms, type MonitorModel } from '@defender/defense-rules';
import { xxh64Hex } from '@defender/hashing';
import { MONITOR_PART_CHART_TYPE } from './chart-types';
import { pendingBaselineOf, type PendingBaseline } from './rebaseline';

/** Limit-set chart type of a monitor model (its JSON in `params.model`). */
export const MONITOR_CHART_TYPE = 'monitor';

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

/** What a reader of a model needs to show it (the dashboard, defenderctl): its size, its charts' limits. */
export interface MonitorModelSummary {
  /** Indicators charted (the model's variables). */
  readonly charted: number;
  /** Indicators left out of the charts, per reason (`constant`, `numerical-noise`, `missing`). */
  readonly notCharted: Readonly<Record<string, number>>;
  /** T² and SPE limits; null without a PCA model (univariate limits only). */
  readonly t2: number | null;
  readonly spe: number | null;
  /** Principal components retained and the share of the Phase I variance they explain (0..1). */
  readonly components: number | null;
  readonly explainedVariance: number | null;
  /** MEWMA limit; null without a MEWMA chart. */
  readonly mewma: number | null;
  /** Phase I runs the model was fitted on. */
  readonly baselineRuns: number;
}

export function monitorModelSummary(model: MonitorModel): MonitorModelSummary {
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
    baselineRuns: model.baselineRunIds.length,
  };
}

/** The model of a stored record, checked, or why it cannot be read. */
export function monitorModelOf(rec: MonitorModelRecord): MonitorModel | string {
  return checkedModel(rec.model, rec.version);
}

/** What a reader without the model (the dashboard) needs of a model stored in parts. */
function modelSummary(model: MonitorModel): JsonObject {
  const { baselineRuns: _runs, ...summary } = monitorModelSummary(model);
  return summary as unknown as JsonObject;
}

/**
 * Decoded models, kept by the evaluator that owns them (never in module state): a model in parts by
 * chamber, key, version and content digest (parsed once; the newest `capacity` of them), a model
 * stored whole by its params object (the store hands out the same object while it caches it), and
 * the level terms of the adaptive centre per model. Memoisation only: what a run is judged with is
 * the same with an empty cache.
 */
export class MonitorModelCache {
  private readonly parted = new Map<string, MonitorModel>();
  private readonly whole = new WeakMap<object, MonitorModel>();
  private readonly records = new WeakMap<MonitorModelRecord, MonitorModel>();
  private readonly levels = new WeakMap<MonitorModel, LevelTerms>();
  private readonly residuals = new WeakMap<MonitorModel, Float64Array | null>();

  constructor(private readonly capacity = 256) {}

  /** The model decoded from `id` (a model in parts), if remembered. */
  parts(id: string): MonitorModel | undefined {
    return this.parted.get(id);
  }

  rememberParts(id: string, model: MonitorModel): void {
    if (this.parted.size >= this.capacity) this.parted.delete(this.parted.keys().next().value as string);
    this.parted.set(id, model);
  }

  /** The model of a stored record (checked once per record object), or why it cannot be used. */
  ofRecord(rec: MonitorModelRecord): MonitorModel | string {
    const hit = this.records.get(rec);
    if (hit) return hit;
    const model = monitorModelOf(rec);
    if (typeof model !== 'string') this.records.set(rec, model);
    return model;
  }

  wholeOf(params: object): MonitorModel | undefined {
    return this.whole.get(params);
  }

  rememberWhole(params: object, model: MonitorModel): void {
    this.whole.set(params, model);
  }

  /** The model's residual sd per kept PCA variable (defense-rules `residualSds`). */
  residualSds(model: MonitorModel): Float64Array | null {
    let r = this.residuals.get(model);
    if (r === undefined) {
      r = residualSds(model);
      this.residuals.set(model, r);
    }
    return r;
  }

  /** The adaptive centre's level terms of `model`. */
  levelTerms(model: MonitorModel): LevelTerms {
    let l = this.levels.get(model);
    if (!l) {
      l = levelTerms(model.variables, model.center, model.attributes);
      this.levels.set(model, l);
    }
    return l;
  }
}

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
  // Lattices and attributes (issue 49, item 4) are absent from older models: none, as before.
  if (model.attributes !== undefined && !(Array.isArray(model.attributes) && model.attributes.every((k) => typeof k === 'string'))) {
    return 'params.model.attributes is not a list of indicator keys';
  }
  if (model.lattices !== undefined && (typeof model.lattices !== 'object' || model.lattices === null || Array.isArray(model.lattices))) {
    return 'params.model.lattices is not a map of SVIDs to lattices';
  }
  return { ...model, version };
}

/**
 * The monitor model of the limit set `rec` (its parts, when it has them, from `limits`: the same
 * version of each part key, joined and checked against the head's digest), or why it cannot be read.
 */
export function decodeModel(rec: LimitSetRecord, limits: readonly LimitSetRecord[], cache: MonitorModelCache): MonitorModel | string {
  if (rec.chartType !== MONITOR_CHART_TYPE) return `limit set is a ${rec.chartType} chart, not a monitor`;
  const parts = rec.params['parts'];
  if (parts === undefined) {
    const hit = cache.wholeOf(rec.params);
    if (hit && hit.version === rec.version) return hit;
    const model = checkedModel(rec.params['model'], rec.version);
    if (typeof model !== 'string') cache.rememberWhole(rec.params, model);
    return model;
  }
  const digest = rec.params['digest'];
  if (!(typeof parts === 'number' && Number.isSafeInteger(parts) && parts >= 1) || typeof digest !== 'string') {
    return 'params.parts / params.digest of a model in parts are invalid';
  }
  const id = `${rec.toolId}:${rec.chamberId}|${rec.indicatorKey}|${rec.version}|${digest}`;
  const hit = cache.parts(id);
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
  if (typeof model !== 'string') cache.rememberParts(id, model);
  return model;
}

/** The record of a model fitted by a run (`CommitRunInput.monitorModel`): stored with it. */
export function modelRecordOf(model: MonitorModel, now: Date, reason: MonitorModelInput['reason'], excludedRunIds: readonly string[]): MonitorModelInput {
  return { version: model.version, reason, excludedRunIds: [...excludedRunIds], createdAt: now, model: model as unknown as JsonObject };
}

/**
 * The record of a model an earlier release stored as limit sets (`rec` its head), taken over by the
 * first run that uses it: committed with that run, the record is the model from then on.
 */
export function convertedModelRecord(rec: LimitSetRecord, model: MonitorModel): MonitorModelInput {
  return { version: model.version, reason: 'converted', excludedRunIds: [...rec.baseline.excludedRunIds], createdAt: rec.createdAt, model: model as unknown as JsonObject };
}

/**
 * The limit sets of a fitted model as an earlier release stored them, in the order it stored them:
 * the model itself as `params.model` of one limit set under `key` when it fits, else its JSON in
 * parts (`<key>/part<i>`, chart type {@link MONITOR_PART_CHART_TYPE}, same version) first and then
 * the head under `key` with the number of parts, their digest and a summary. Kept to test the
 * conversion of stores written before models were records of their own.
 */
export function legacyModelLimitSets(
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


/** The model that judges a recipe's runs, as {@link currentModel} finds it. */
export interface CurrentModel {
  /** Null in Phase I (none fitted, or a re-baseline pending) and when the model cannot be read. */
  readonly model: MonitorModel | null;
  /** A re-baseline asked for after the newest model: Phase I again. */
  readonly pending?: PendingBaseline;
  /** Why the newest model cannot be read (the recipe is then neither collected nor judged). */
  readonly unreadable?: string;
  /** The newest model was an earlier release's limit sets: its record, to store with the run that uses it. */
  readonly converted?: MonitorModelInput;
}

/**
 * The recipe's current model: the newer of its stored record (`record`, the version its monitor state
 * names) and what an earlier release left under `modelKey` in the limit sets — a model (converted on
 * this first use) or a re-baseline request (a limit set of the next version, which an operator stores).
 */
export function currentModel(
  modelKey: string,
  limits: readonly LimitSetRecord[],
  record: MonitorModelRecord | undefined,
  cache: MonitorModelCache,
  state?: MonitorState,
): CurrentModel {
  const found = newestModel(modelKey, limits, record, cache);
  // An equipment event re-baselined the recipe: its state collects Phase I of a version after every
  // model there is (a worker reads no model in Phase I: a version above 1 was preceded by one).
  const known = found.model?.version ?? found.pending?.version ?? 1;
  if (state?.phase === 'collecting' && state.modelVersion > known) {
    return { model: null, pending: { version: state.modelVersion, reason: 'equipment event', requestedBy: 'equipment event', excludeRunIds: [] } };
  }
  return found;
}

function newestModel(modelKey: string, limits: readonly LimitSetRecord[], record: MonitorModelRecord | undefined, cache: MonitorModelCache): CurrentModel {
  let newest: LimitSetRecord | undefined;
  for (const rec of limits) if (rec.indicatorKey === modelKey && (!newest || rec.version > newest.version)) newest = rec;
  if (newest && newest.version > (record?.version ?? 0)) {
    const pending = pendingBaselineOf(newest);
    if (pending) return { model: null, pending };
    const legacy = decodeModel(newest, limits, cache);
    if (typeof legacy === 'string') return { model: null, unreadable: `unreadable-limits: ${legacy}` };
    return { model: legacy, converted: convertedModelRecord(newest, legacy) };
  }
  if (!record) return { model: null };
  const model = cache.ofRecord(record);
  return typeof model === 'string' ? { model: null, unreadable: `unreadable-model: ${model}` } : { model };
}
