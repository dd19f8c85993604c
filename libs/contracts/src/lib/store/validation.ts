import type { ChamberRef } from './chamber';
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
  LimitSetRecord,
  OutboxEventInput,
  RunObservation,
  StrategyRecord,
  TraceRecord,
  UChartPoint,
} from './records';

import { chamber, date, finite, int, Issues, jsonObject, optionalText, RECORD_LIMITS, text, version } from './record-checks';

export { canonicalJson, isJsonObject, isJsonValue, RECORD_LIMITS } from './record-checks';
export {
  parseStrategyScope,
  strategyScope,
  strategyScopeConflicts,
  strategyScopeKind,
  strategyScopesForRun,
  validateStrategyScopes,
  type StrategyScopeInfo,
  type StrategyScopeKind,
  type StrategyScopeSpec,
} from './strategy-scope';

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

