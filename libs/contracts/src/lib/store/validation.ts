import { isValidId, type ChamberRef } from './chamber';
import { InvalidRecordError, type RecordIssue } from './errors';
import { chamberEventIssues } from './chamber-event';
import { chamberMemoryIssues } from './chamber-memory';
import { monitorModelIssues } from './monitor-model';
import { monitorStateIssues } from './monitor-state';
import type {
  AlarmInput,
  BindStreamInput,
  ChamberMetadata,
  CommitRunInput,
  HoldInput,
  JsonObject,
  JsonValue,
  LimitSetRecord,
  OutboxEventInput,
  RunObservation,
  StrategyRecord,
  TraceRecord,
  UChartPoint,
} from './records';

/** Limits on record sizes the adapters rely on (bounded keys, bounded JSON). */
export const RECORD_LIMITS = {
  runId: 256,
  ownerId: 128,
  /** A notification stream's identity (`BindStreamInput.streamId`). */
  streamId: 128,
  indicatorKey: 512,
  ruleId: 256,
  holdId: 128,
  label: 256,
  message: 4096,
  chartEntries: 16,
  chartName: 64,
  /**
   * A strategy scope key: room for the longest documented one, `chamber/<tool>:<chamber>/recipe/<recipe>`
   * with 128-character ids and a 256-character recipe (529 characters).
   */
  scope: 1024,
  /** Most scopes one `StrategyRepository.latest` call looks up. */
  strategyScopes: 16,
  svidName: 256,
  subject: 256,
  msgId: 512,
  /** Maximum nesting of JSON documents. */
  jsonDepth: 32,
  /** Maximum serialized size of one JSON document (strategy, alarm details, chart params). */
  jsonBytes: 1 << 20,
} as const;

// eslint-disable-next-line no-control-regex -- stored strings must not contain control characters
const CONTROL = /[\u0000-\u001f\u007f]/;

/** Collects problems of one record; `throwIfAny` raises them all at once. */
class Issues {
  readonly list: RecordIssue[] = [];
  add(path: string, message: string): void {
    this.list.push({ path, message });
  }
  throwIfAny(what: string): void {
    if (this.list.length > 0) throw new InvalidRecordError(what, this.list);
  }
}

function text(issues: Issues, path: string, v: unknown, max: number, opts: { allowEmpty?: boolean } = {}): void {
  if (typeof v !== 'string') return issues.add(path, 'must be a string');
  if (v.length === 0 && !opts.allowEmpty) return issues.add(path, 'must not be empty');
  if (v.length > max) return issues.add(path, `must be at most ${max} characters`);
  if (CONTROL.test(v)) issues.add(path, 'must not contain control characters');
}

function optionalText(issues: Issues, path: string, v: unknown, max: number): void {
  if (v !== undefined) text(issues, path, v, max);
}

function finite(issues: Issues, path: string, v: unknown): void {
  if (typeof v !== 'number' || !Number.isFinite(v)) issues.add(path, 'must be a finite number');
}

function int(issues: Issues, path: string, v: unknown, min: number): void {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min) issues.add(path, `must be a safe integer >= ${min}`);
}

/** Versions are stored as 32-bit integers (Cassandra `int`). */
function version(issues: Issues, path: string, v: unknown): void {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > 0x7fffffff) issues.add(path, 'must be an integer in 1..2147483647');
}

function date(issues: Issues, path: string, v: unknown): void {
  if (!(v instanceof Date) || Number.isNaN(v.getTime())) issues.add(path, 'must be a valid Date');
}

function chamber(issues: Issues, path: string, c: ChamberRef | undefined): void {
  if (c === null || typeof c !== 'object') return issues.add(path, 'must be { toolId, chamberId }');
  if (!isValidId(c.toolId)) issues.add(`${path}.toolId`, 'must be 1-128 characters without ":", whitespace or control characters');
  if (!isValidId(c.chamberId)) issues.add(`${path}.chamberId`, 'must be 1-128 characters without ":", whitespace or control characters');
}

/** True for JSON-safe values: null, booleans, finite numbers, strings, arrays and plain objects. */
export function isJsonValue(v: unknown, depth = 0): v is JsonValue {
  if (depth > RECORD_LIMITS.jsonDepth) return false;
  if (v === null || typeof v === 'boolean' || typeof v === 'string') return true;
  if (typeof v === 'number') return Number.isFinite(v);
  if (Array.isArray(v)) return v.every((x) => isJsonValue(x, depth + 1));
  if (typeof v === 'object') {
    const proto = Object.getPrototypeOf(v);
    if (proto !== Object.prototype && proto !== null) return false;
    return Object.values(v as object).every((x) => isJsonValue(x, depth + 1));
  }
  return false;
}

/** True for a plain JSON object (see {@link isJsonValue}). */
export function isJsonObject(v: unknown): v is JsonObject {
  return v !== null && typeof v === 'object' && !Array.isArray(v) && isJsonValue(v);
}

function jsonObject(issues: Issues, path: string, v: unknown): void {
  if (!isJsonObject(v)) return issues.add(path, 'must be a JSON object (finite numbers, plain objects, no undefined)');
  if (JSON.stringify(v).length > RECORD_LIMITS.jsonBytes) issues.add(path, `must serialize to at most ${RECORD_LIMITS.jsonBytes} characters`);
}

/**
 * JSON with object keys sorted at every level: equal values give equal strings, so stored records
 * can be compared for idempotent re-writes.
 */
export function canonicalJson(value: JsonValue): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v)).join(',')}]`;
  const obj = value as JsonObject;
  const keys = Object.keys(obj).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(obj[k] as JsonValue)}`).join(',')}}`;
}

function point(issues: Issues, path: string, p: UChartPoint): void {
  if (p === null || typeof p !== 'object') return issues.add(path, 'must be an object');
  text(issues, `${path}.indicatorKey`, p.indicatorKey, RECORD_LIMITS.indicatorKey);
  finite(issues, `${path}.value`, p.value);
  if (p.size !== undefined && !(typeof p.size === 'number' && Number.isFinite(p.size) && p.size >= 0)) {
    issues.add(`${path}.size`, 'must be a finite number >= 0');
  }
  if (p.limitsVersion !== undefined) int(issues, `${path}.limitsVersion`, p.limitsVersion, 1);
  if (!(Number.isInteger(p.flags) && p.flags >= 0 && p.flags <= 0xffffffff)) {
    issues.add(`${path}.flags`, 'must be an unsigned 32-bit integer');
  }
  if (p.chart !== undefined) {
    if (p.chart === null || typeof p.chart !== 'object') return issues.add(`${path}.chart`, 'must be an object of numbers');
    const entries = Object.entries(p.chart);
    if (entries.length > RECORD_LIMITS.chartEntries) issues.add(`${path}.chart`, `must have at most ${RECORD_LIMITS.chartEntries} entries`);
    for (const [k, v] of entries) {
      text(issues, `${path}.chart.${k}`, k, RECORD_LIMITS.chartName);
      finite(issues, `${path}.chart.${k}`, v);
    }
  }
}

function alarm(issues: Issues, path: string, a: AlarmInput): void {
  if (a === null || typeof a !== 'object') return issues.add(path, 'must be an object');
  text(issues, `${path}.ruleId`, a.ruleId, RECORD_LIMITS.ruleId);
  text(issues, `${path}.indicatorKey`, a.indicatorKey, RECORD_LIMITS.indicatorKey);
  text(issues, `${path}.action`, a.action, 64);
  if (a.value !== null) finite(issues, `${path}.value`, a.value);
  for (const k of ['lcl', 'ucl', 'center'] as const) if (a[k] !== undefined) finite(issues, `${path}.${k}`, a[k]);
  for (const k of ['recipe', 'step', 'svid', 'statistic'] as const) optionalText(issues, `${path}.${k}`, a[k], RECORD_LIMITS.label);
  text(issues, `${path}.message`, a.message, RECORD_LIMITS.message, { allowEmpty: true });
  if (a.details !== undefined) jsonObject(issues, `${path}.details`, a.details);
}

function hold(issues: Issues, path: string, h: HoldInput): void {
  if (h === null || typeof h !== 'object') return issues.add(path, 'must be an object');
  text(issues, `${path}.holdId`, h.holdId, RECORD_LIMITS.holdId);
  text(issues, `${path}.ruleId`, h.ruleId, RECORD_LIMITS.ruleId);
  text(issues, `${path}.reason`, h.reason, RECORD_LIMITS.message, { allowEmpty: true });
}

function outboxEvent(issues: Issues, path: string, e: OutboxEventInput): void {
  if (e === null || typeof e !== 'object') return issues.add(path, 'must be an object');
  text(issues, `${path}.subject`, e.subject, RECORD_LIMITS.subject);
  text(issues, `${path}.msgId`, e.msgId, RECORD_LIMITS.msgId);
  if (typeof e.payload !== 'string') issues.add(`${path}.payload`, 'must be a string');
  else if (e.payload.length === 0 || e.payload.length > RECORD_LIMITS.jsonBytes) {
    issues.add(`${path}.payload`, `must be 1 to ${RECORD_LIMITS.jsonBytes} characters`);
  }
}

/** @throws InvalidRecordError listing every problem of a commit. */
export function validateCommitRunInput(input: CommitRunInput): void {
  const issues = new Issues();
  chamber(issues, 'chamber', input.chamber);
  int(issues, 'epoch', input.epoch, 0);
  text(issues, 'ownerId', input.ownerId, RECORD_LIMITS.ownerId);
  int(issues, 'sequence', input.sequence, 1);
  text(issues, 'runId', input.runId, RECORD_LIMITS.runId);
  optionalText(issues, 'recipe', input.recipe, RECORD_LIMITS.label);
  date(issues, 'committedAt', input.committedAt);
  if (!Array.isArray(input.points)) issues.add('points', 'must be an array');
  else {
    const keys = new Set<string>();
    input.points.forEach((p, i) => {
      point(issues, `points[${i}]`, p);
      if (p && keys.has(p.indicatorKey)) issues.add(`points[${i}].indicatorKey`, `duplicate indicator "${p.indicatorKey}"`);
      if (p) keys.add(p.indicatorKey);
    });
  }
  if (input.alarms !== undefined) {
    if (!Array.isArray(input.alarms)) issues.add('alarms', 'must be an array');
    else {
      const keys = new Set<string>();
      input.alarms.forEach((a, i) => {
        alarm(issues, `alarms[${i}]`, a);
        const key = a ? `${a.ruleId}\u0000${a.indicatorKey}` : '';
        if (a && keys.has(key)) issues.add(`alarms[${i}]`, `duplicate alarm for rule "${a.ruleId}" on "${a.indicatorKey}"`);
        keys.add(key);
      });
    }
  }
  if (input.hold !== undefined) hold(issues, 'hold', input.hold);
  if (input.events !== undefined) {
    if (!Array.isArray(input.events)) issues.add('events', 'must be an array');
    else input.events.forEach((e, i) => outboxEvent(issues, `events[${i}]`, e));
  }
  if (input.monitorState !== undefined) {
    for (const i of monitorStateIssues(input.monitorState, 'monitorState')) issues.add(i.path, i.message);
    if (input.recipe === undefined) issues.add('recipe', 'is required with a monitor state (the state is per recipe)');
  }
  if (input.monitorModel !== undefined) {
    for (const i of monitorModelIssues(input.monitorModel, 'monitorModel')) issues.add(i.path, i.message);
    const state = input.monitorState;
    if (state === undefined || state.phase !== 'judging' || state.modelVersion !== input.monitorModel?.version) {
      issues.add('monitorState', 'must be a judging state of the model version committed with it');
    }
  }
  if (input.chamberMemory !== undefined) {
    for (const i of chamberMemoryIssues(input.chamberMemory, 'chamberMemory')) issues.add(i.path, i.message);
  }
  for (const i of chamberEventIssues(input)) issues.add(i.path, i.message);
  issues.throwIfAny('run commit');
}

/** @throws InvalidRecordError unless `epoch` is an owner epoch (safe integer >= 0). */
export function validateEpoch(epoch: number): void {
  const issues = new Issues();
  int(issues, 'epoch', epoch, 0);
  issues.throwIfAny('owner epoch');
}

/** @throws InvalidRecordError for an invalid claim. */
export function validateClaim(c: ChamberRef, epoch: number, ownerId: string, now: Date): void {
  const issues = new Issues();
  chamber(issues, 'chamber', c);
  int(issues, 'epoch', epoch, 0);
  text(issues, 'ownerId', ownerId, RECORD_LIMITS.ownerId);
  date(issues, 'now', now);
  issues.throwIfAny('claim');
}

/** @throws InvalidRecordError listing every problem of a `bindStream` call. */
export function validateBindStream(input: BindStreamInput): void {
  const issues = new Issues();
  chamber(issues, 'chamber', input.chamber);
  int(issues, 'epoch', input.epoch, 0);
  text(issues, 'streamId', input.streamId, RECORD_LIMITS.streamId);
  optionalText(issues, 'expectedStreamId', input.expectedStreamId, RECORD_LIMITS.streamId);
  issues.throwIfAny('bindStream');
}

/** @throws InvalidRecordError for an invalid chamber reference. */
export function validateChamberRef(c: ChamberRef): void {
  const issues = new Issues();
  chamber(issues, 'chamber', c);
  issues.throwIfAny('chamber reference');
}

/** @throws InvalidRecordError for an invalid chamber/run reference. */
export function validateRunRef(run: ChamberRef & { runId: string }): void {
  const issues = new Issues();
  chamber(issues, 'run', run);
  text(issues, 'runId', run.runId, RECORD_LIMITS.runId);
  issues.throwIfAny('run reference');
}

/** @throws InvalidRecordError for a non-positive or non-integer limit / sequence argument. */
export function validatePositiveInt(what: string, v: number, min = 1): void {
  const issues = new Issues();
  int(issues, what, v, min);
  issues.throwIfAny(what);
}

/**
 * @throws InvalidRecordError for an invalid trace: ids, no SVIDs, non-typed-array or differently
 * sized SVIDs, bad timing (non-finite start, frequency <= 0, explicit times of another length), or
 * invalid steps (out of range, not increasing, unnamed, duplicated).
 */
export function validateTraceRecord(t: TraceRecord): void {
  const issues = new Issues();
  chamber(issues, 'trace', t);
  text(issues, 'runId', t.runId, RECORD_LIMITS.runId);
  optionalText(issues, 'recipe', t.recipe, RECORD_LIMITS.label);
  let length = -1;
  if (!(t.svids instanceof Map) || t.svids.size === 0) issues.add('svids', 'must be a non-empty Map of SVID -> Float64Array | Float32Array');
  else {
    for (const [name, arr] of t.svids) {
      text(issues, `svids[${name}]`, name, RECORD_LIMITS.svidName);
      if (!(arr instanceof Float64Array || arr instanceof Float32Array)) {
        issues.add(`svids[${name}]`, 'must be a Float64Array or Float32Array');
        continue;
      }
      if (length === -1) length = arr.length;
      else if (arr.length !== length) issues.add(`svids[${name}]`, `has ${arr.length} samples, expected ${length}`);
    }
  }
  const timing = t.timing;
  if (timing?.kind === 'regular') {
    finite(issues, 'timing.startSeconds', timing.startSeconds);
    if (!(Number.isFinite(timing.frequencyHz) && timing.frequencyHz > 0)) issues.add('timing.frequencyHz', 'must be a finite number > 0');
  } else if (timing?.kind === 'explicit') {
    if (!(timing.timesSeconds instanceof Float64Array)) issues.add('timing.timesSeconds', 'must be a Float64Array');
    else if (length >= 0 && timing.timesSeconds.length !== length) {
      issues.add('timing.timesSeconds', `has ${timing.timesSeconds.length} times for ${length} samples`);
    }
  } else issues.add('timing', "must be { kind: 'regular', ... } or { kind: 'explicit', ... }");
  if (!Array.isArray(t.steps)) issues.add('steps', 'must be an array');
  else {
    const names = new Set<string>();
    let prev = -1;
    t.steps.forEach((s, i) => {
      text(issues, `steps[${i}].name`, s?.name, RECORD_LIMITS.label);
      if (s && names.has(s.name)) issues.add(`steps[${i}].name`, `duplicate step "${s.name}"`);
      if (s) names.add(s.name);
      if (!(s && Number.isSafeInteger(s.startIndex) && s.startIndex >= 0 && (length < 0 || s.startIndex < Math.max(length, 1)))) {
        issues.add(`steps[${i}].startIndex`, 'must be an integer within the samples');
      } else if (s.startIndex <= prev) issues.add(`steps[${i}].startIndex`, 'must increase');
      else prev = s.startIndex;
    });
  }
  issues.throwIfAny('trace');
}

/** @throws InvalidRecordError for invalid limits (NaN centre, lcl > ucl, bad version, ...). */
export function validateLimitSet(l: LimitSetRecord): void {
  const issues = new Issues();
  chamber(issues, 'limits', l);
  text(issues, 'indicatorKey', l.indicatorKey, RECORD_LIMITS.indicatorKey);
  version(issues, 'version', l.version);
  text(issues, 'chartType', l.chartType, 64);
  finite(issues, 'center', l.center);
  if (l.sigma !== null && !(typeof l.sigma === 'number' && Number.isFinite(l.sigma) && l.sigma >= 0)) {
    issues.add('sigma', 'must be null or a finite number >= 0');
  }
  if (l.lcl !== null) finite(issues, 'lcl', l.lcl);
  if (l.ucl !== null) finite(issues, 'ucl', l.ucl);
  if (typeof l.lcl === 'number' && typeof l.ucl === 'number' && l.lcl > l.ucl) issues.add('lcl', 'must be <= ucl');
  jsonObject(issues, 'params', l.params);
  if (l.baseline === null || typeof l.baseline !== 'object') issues.add('baseline', 'must be an object');
  else {
    text(issues, 'baseline.reason', l.baseline.reason, 64);
    for (const k of ['runIds', 'excludedRunIds'] as const) {
      const ids = l.baseline[k];
      if (!Array.isArray(ids)) issues.add(`baseline.${k}`, 'must be an array of run ids');
      else ids.forEach((id, i) => text(issues, `baseline.${k}[${i}]`, id, RECORD_LIMITS.runId));
    }
  }
  date(issues, 'createdAt', l.createdAt);
  issues.throwIfAny('limit set');
}

/** @throws InvalidRecordError for an invalid strategy record. */
export function validateStrategy(s: StrategyRecord): void {
  const issues = new Issues();
  text(issues, 'scope', s.scope, RECORD_LIMITS.scope);
  version(issues, 'version', s.version);
  jsonObject(issues, 'document', s.document);
  date(issues, 'createdAt', s.createdAt);
  text(issues, 'author', s.author, RECORD_LIMITS.ownerId, { allowEmpty: true });
  issues.throwIfAny('strategy');
}

/** @throws InvalidRecordError for invalid chamber metadata (including a weight that is not the product). */
export function validateMetadata(m: ChamberMetadata): void {
  const issues = new Issues();
  chamber(issues, 'metadata', m);
  int(issues, 'svidCount', m.svidCount, 1);
  if (!(Number.isFinite(m.collectionFreqHz) && m.collectionFreqHz > 0)) issues.add('collectionFreqHz', 'must be a finite number > 0');
  int(issues, 'contextDurationSeconds', m.contextDurationSeconds, 1);
  int(issues, 'weight', m.weight, 1);
  date(issues, 'lastUpdated', m.lastUpdated);
  if (m.source !== 'configured' && m.source !== 'observed') issues.add('source', "must be 'configured' or 'observed'");
  int(issues, 'observedRuns', m.observedRuns, 0);
  issues.throwIfAny('chamber metadata');
}

/** @throws InvalidRecordError for an invalid run observation. */
export function validateObservation(o: RunObservation): void {
  const issues = new Issues();
  chamber(issues, 'observation', o);
  text(issues, 'runId', o.runId, RECORD_LIMITS.runId);
  date(issues, 'observedAt', o.observedAt);
  int(issues, 'svidCount', o.svidCount, 1);
  if (!(Number.isFinite(o.collectionFreqHz) && o.collectionFreqHz > 0)) issues.add('collectionFreqHz', 'must be a finite number > 0');
  if (!(Number.isFinite(o.contextDurationSeconds) && o.contextDurationSeconds > 0)) {
    issues.add('contextDurationSeconds', 'must be a finite number > 0');
  }
  issues.throwIfAny('run observation');
}

/** Where a strategy applies; see {@link strategyScope}. */
export type StrategyScopeSpec =
  | { readonly kind: 'default' }
  | { readonly kind: 'recipe'; readonly recipe: string }
  | { readonly kind: 'chamber'; readonly chamber: ChamberRef; readonly recipe?: string };

/**
 * The scope key of a strategy: `default`, `recipe/<recipe>`, `chamber/<tool>:<chamber>` or
 * `chamber/<tool>:<chamber>/recipe/<recipe>`. Which one a run is judged by: {@link strategyScopesForRun}.
 * @throws InvalidRecordError for invalid ids or recipe names.
 */
export function strategyScope(spec: StrategyScopeSpec): string {
  const issues = new Issues();
  let scope: string;
  switch (spec.kind) {
    case 'default':
      scope = 'default';
      break;
    case 'recipe':
      text(issues, 'recipe', spec.recipe, RECORD_LIMITS.label);
      scope = `recipe/${spec.recipe}`;
      break;
    case 'chamber':
      chamber(issues, 'chamber', spec.chamber);
      optionalText(issues, 'recipe', spec.recipe, RECORD_LIMITS.label);
      scope = `chamber/${spec.chamber.toolId}:${spec.chamber.chamberId}${spec.recipe !== undefined ? `/recipe/${spec.recipe}` : ''}`;
      break;
  }
  issues.throwIfAny('strategy scope');
  return scope;
}

/**
 * A strategy scope key and what it restricts: the chamber (`<tool>:<chamber>`) and / or the recipe
 * it applies to; neither for `default`.
 */
export interface StrategyScopeInfo {
  readonly scope: string;
  readonly chamber?: string;
  readonly recipe?: string;
  /**
   * The legacy key `<tool>:<chamber>` (what the chamber worker read before the documented scopes):
   * a deprecated alias of `chamber/<tool>:<chamber>`, read so that strategies stored that way are
   * not silently ignored. Write `chamber/<tool>:<chamber>` instead.
   */
  readonly deprecated: boolean;
}

/**
 * The scopes a run of `chamber` with `recipe` is looked up in, most specific first:
 * `chamber/<tool>:<chamber>/recipe/<recipe>`, `chamber/<tool>:<chamber>`, the deprecated legacy key
 * `<tool>:<chamber>` (an alias of the chamber scope), `recipe/<recipe>`, `default` (without a recipe:
 * the chamber scope, the legacy key and `default`). The first scope that holds a stored strategy
 * judges the run with its newest version, and only that one: a winner whose document is invalid (or
 * whose own scope disagrees with its key, see {@link strategyScopeConflicts}) makes the run fail,
 * never fall through to a less specific scope. No strategy in any scope: the built-in default.
 * @throws InvalidRecordError for invalid ids or an invalid recipe name.
 */
export function strategyScopesForRun(chamber: ChamberRef, recipe?: string): readonly StrategyScopeInfo[] {
  const key = `${chamber.toolId}:${chamber.chamberId}`;
  const chamberScope = strategyScope({ kind: 'chamber', chamber });
  const steps: StrategyScopeInfo[] = [];
  if (recipe !== undefined) steps.push({ scope: strategyScope({ kind: 'chamber', chamber, recipe }), chamber: key, recipe, deprecated: false });
  steps.push({ scope: chamberScope, chamber: key, deprecated: false }, { scope: key, chamber: key, deprecated: true });
  if (recipe !== undefined) steps.push({ scope: strategyScope({ kind: 'recipe', recipe }), recipe, deprecated: false });
  steps.push({ scope: strategyScope({ kind: 'default' }), deprecated: false });
  return steps;
}

/** What kind of scope judged a run: {@link strategyScopeKind}. */
export type StrategyScopeKind = 'chamber_recipe' | 'chamber' | 'legacy_key' | 'recipe' | 'default' | 'builtin';

/**
 * The kind of a scope of a run's lookup order (for metrics and logs): `legacy_key` for the deprecated
 * `<tool>:<chamber>` key, `builtin` when no scope holds a strategy (`undefined`: the built-in default).
 */
export function strategyScopeKind(scope: StrategyScopeInfo | undefined): StrategyScopeKind {
  if (scope === undefined) return 'builtin';
  if (scope.deprecated) return 'legacy_key';
  if (scope.chamber !== undefined) return scope.recipe !== undefined ? 'chamber_recipe' : 'chamber';
  return scope.recipe !== undefined ? 'recipe' : 'default';
}

/**
 * Reads a scope key: one of the documented forms of {@link strategyScope}, or the deprecated legacy
 * key `<tool>:<chamber>`. In `chamber/<tool>:<chamber>/recipe/<recipe>` the recipe starts after the
 * first `/recipe/` (tool and chamber ids of notifications hold no `/`).
 * @throws InvalidRecordError for anything else (empty, too long, control characters, unknown form).
 */
export function parseStrategyScope(scope: string): StrategyScopeInfo {
  const issues = new Issues();
  const info = scopeInfo(issues, 'scope', scope);
  issues.throwIfAny('strategy scope');
  return info as StrategyScopeInfo;
}

function scopeInfo(issues: Issues, path: string, scope: unknown): StrategyScopeInfo | undefined {
  const before = issues.list.length;
  text(issues, path, scope, RECORD_LIMITS.scope);
  if (issues.list.length > before) return undefined;
  const s = scope as string;
  if (s === 'default') return { scope: s, deprecated: false };
  if (s.startsWith('recipe/')) {
    const recipe = s.slice('recipe/'.length);
    if (recipe.length > 0) return { scope: s, recipe, deprecated: false };
  } else if (s.startsWith('chamber/')) {
    const rest = s.slice('chamber/'.length);
    const at = rest.indexOf('/recipe/');
    const key = at < 0 ? rest : rest.slice(0, at);
    const recipe = at < 0 ? undefined : rest.slice(at + '/recipe/'.length);
    if (isChamberKey(key) && recipe !== '') return { scope: s, chamber: key, ...(recipe !== undefined ? { recipe } : {}), deprecated: false };
  } else if (isChamberKey(s)) return { scope: s, chamber: s, deprecated: true };
  issues.add(path, `"${s}" is not a strategy scope (default, recipe/<recipe>, chamber/<tool>:<chamber>[/recipe/<recipe>], or the deprecated <tool>:<chamber>)`);
  return undefined;
}

function isChamberKey(key: string): boolean {
  const parts = key.split(':');
  return parts.length === 2 && isValidId(parts[0]) && isValidId(parts[1]);
}

/**
 * @throws InvalidRecordError unless `scopes` is an array of 1 to `RECORD_LIMITS.strategyScopes`
 * distinct strategy scopes (see {@link parseStrategyScope}); every problem is listed.
 */
export function validateStrategyScopes(scopes: readonly string[]): void {
  const issues = new Issues();
  if (!Array.isArray(scopes)) issues.add('scopes', 'must be an array of strategy scopes');
  else if (scopes.length === 0 || scopes.length > RECORD_LIMITS.strategyScopes) {
    issues.add('scopes', `must hold 1 to ${RECORD_LIMITS.strategyScopes} scopes, got ${scopes.length}`);
  } else {
    const seen = new Set<string>();
    scopes.forEach((s, i) => {
      scopeInfo(issues, `scopes[${i}]`, s);
      if (seen.has(s)) issues.add(`scopes[${i}]`, `duplicate scope "${s}"`);
      seen.add(s);
    });
  }
  issues.throwIfAny('strategy scopes');
}

/**
 * Where a strategy document's own `scope` ({ chamber?, recipe? }) disagrees with the key it is stored
 * under; empty when it agrees. The key decides where a document applies, so a document may repeat
 * what its key restricts (or say nothing), but a field it sets must be one its key sets too, to the
 * same value: a document stored at `chamber/T:C` that names chamber X:Y, or any recipe, or one stored
 * at `recipe/R` that names another recipe or any chamber, disagrees. Such a document is unusable for
 * every run its key is looked up for (judging the run by it, or by the default instead, would both
 * hide the mistake): the worker dead-letters the run (`invalid-strategy`) and `defenderctl strategy
 * put` refuses to store it.
 */
export function strategyScopeConflicts(
  documentScope: { readonly chamber?: string | undefined; readonly recipe?: string | undefined },
  stored: StrategyScopeInfo,
): RecordIssue[] {
  const issues: RecordIssue[] = [];
  for (const field of ['chamber', 'recipe'] as const) {
    const named = documentScope[field];
    const keyed = stored[field];
    if (named === undefined || named === keyed) continue;
    const applies = keyed === undefined ? `which applies to every ${field}` : `for ${field} ${keyed}`;
    issues.push({ path: `scope.${field}`, message: `names ${field} ${named} but it is stored under scope "${stored.scope}", ${applies}` });
  }
  return issues;
}
