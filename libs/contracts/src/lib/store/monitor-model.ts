import type { WrittenByRun } from './chamber';
import type { RecordContext, RecordIssue } from './errors';
import type { JsonObject } from './records';
import { checkedStoredRecord, parseStoredJson } from './stored-json';

/**
 * A chamber monitor's fitted model of one chamber and recipe, one record per model version: what
 * judges the recipe's runs from the run that fitted it on (Phase I completing, a re-baseline, the
 * Phase I extension). Written by `commitRun` together with the fitting run's points and the recipe's
 * monitor state (which names the version it judges with) under the same owner-epoch fencing; never
 * changed afterwards. Read by the run's owner (the version its state names), the dashboard and
 * defenderctl through `MonitorModelRepository`, never by parsing limit-set keys.
 *
 * The model's own numbers (`model`: centre, scales, principal components, limits) are the monitor's
 * (defense-rules `MonitorModel`, checked by its owner on use); this record says whose model it is,
 * which version, why it was fitted and from which runs. A typed, versioned record: stored as the JSON
 * of {@link encodeMonitorModelBody} with {@link MONITOR_MODEL_SCHEMA_VERSION}; a newer schema is refused
 * (`UnknownSchemaVersionError`).
 */
export interface MonitorModelRecord extends WrittenByRun, MonitorModelInput {
  readonly recipe: string;
}

/** A fitted model as a commit carries it (`CommitRunInput.monitorModel`; the recipe is the run's). */
export interface MonitorModelInput {
  /** The model version (1, then +1 per re-baseline or extension): `model.version`. */
  readonly version: number;
  /**
   * Why it was fitted: `initial` (Phase I completed), `manual` (a re-baseline asked for it),
   * `extended` (the Phase I extension), `converted` (an earlier release's model, stored as a limit
   * set, taken over by the first run that used it).
   */
  readonly reason: MonitorModelReason;
  /** Runs a re-baseline excluded from its Phase I (by run id). */
  readonly excludedRunIds: readonly string[];
  /** When it was fitted (the fitting run's time). */
  readonly createdAt: Date;
  /** The monitor's model (`kind: 'monitor'`, `version` as above): plain JSON owned by the monitor. */
  readonly model: JsonObject;
}

export type MonitorModelReason = 'initial' | 'manual' | 'extended' | 'converted';

/** A stored model version: its key and the run that wrote it (`MonitorModelRepository.versions`). */
export type MonitorModelVersion = Pick<MonitorModelRecord, 'toolId' | 'chamberId' | 'recipe' | 'version' | 'sequence' | 'runId' | 'committedAt'>;

/** The schema version of a stored model record this code writes. */
export const MONITOR_MODEL_SCHEMA_VERSION = 1;

export const MONITOR_MODEL_LIMITS = {
  /**
   * The model's JSON, UTF-8 bytes: a chamber of a few hundred SVIDs has thousands of indicators, a
   * few MB of model; Cassandra takes a mutation of up to half its commit-log segment (16 MiB by default)
   * and writes the model in the commit's batch.
   */
  modelBytes: 8 << 20,
  /** Run ids a re-baseline may exclude. */
  excludedRunIds: 10_000,
  runId: 256,
} as const;

const REASONS: readonly MonitorModelReason[] = ['initial', 'manual', 'extended', 'converted'];

// eslint-disable-next-line no-control-regex -- stored strings must not contain control characters
const CONTROL = /[\u0000-\u001f\u007f]/;

/**
 * Every problem of a model as a commit carries it (empty when it is valid). Its size is checked unless
 * `checkSize` is false (a stored record, checked when it was written).
 */
export function monitorModelIssues(input: unknown, path = 'monitorModel', checkSize = true): RecordIssue[] {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) return [{ path, message: 'must be an object' }];
  const m = input as Record<string, unknown>;
  const issues: RecordIssue[] = [];
  const version = m['version'];
  if (typeof version !== 'number' || !Number.isInteger(version) || version < 1 || version > 0x7fffffff) issues.push({ path: `${path}.version`, message: 'must be an integer in 1..2147483647' });
  if (!REASONS.includes(m['reason'] as MonitorModelReason)) issues.push({ path: `${path}.reason`, message: `must be one of ${REASONS.join(', ')}` });
  const excluded = m['excludedRunIds'];
  if (
    !Array.isArray(excluded) ||
    excluded.length > MONITOR_MODEL_LIMITS.excludedRunIds ||
    !excluded.every((id) => typeof id === 'string' && id.length > 0 && id.length <= MONITOR_MODEL_LIMITS.runId && !CONTROL.test(id))
  ) {
    issues.push({ path: `${path}.excludedRunIds`, message: `must be at most ${MONITOR_MODEL_LIMITS.excludedRunIds} run ids` });
  }
  const createdAt = m['createdAt'];
  if (!(createdAt instanceof Date) || Number.isNaN(createdAt.getTime())) issues.push({ path: `${path}.createdAt`, message: 'must be a valid Date' });
  const model = m['model'];
  if (model === null || typeof model !== 'object' || Array.isArray(model)) issues.push({ path: `${path}.model`, message: 'must be a JSON object' });
  else {
    const body = model as Record<string, unknown>;
    if (body['kind'] !== 'monitor') issues.push({ path: `${path}.model.kind`, message: 'must be "monitor"' });
    if (body['version'] !== version) issues.push({ path: `${path}.model.version`, message: 'must equal the record version' });
    const bytes = checkSize ? Buffer.byteLength(JSON.stringify(model), 'utf8') : 0;
    if (bytes > MONITOR_MODEL_LIMITS.modelBytes) issues.push({ path: `${path}.model`, message: `is ${bytes} bytes of JSON, at most ${MONITOR_MODEL_LIMITS.modelBytes}` });
  }
  return issues;
}

/** The stored text of a model record's body (schema {@link MONITOR_MODEL_SCHEMA_VERSION}): all but its key and the run that wrote it. */
export function encodeMonitorModelBody(input: MonitorModelInput): string {
  return JSON.stringify({ reason: input.reason, excludedRunIds: input.excludedRunIds, createdAt: input.createdAt.toISOString(), model: input.model });
}

/**
 * A stored model record's body back (schema `schemaVersion`, text `body`) for model `version`, checked.
 * @throws UnknownSchemaVersionError for a schema this code does not know.
 * @throws CorruptRecordError when the text is not a valid model body of its schema.
 */
export function decodeMonitorModelBody(schemaVersion: unknown, version: number, body: string, context: RecordContext): MonitorModelInput {
  const parsed = parseStoredJson(schemaVersion, MONITOR_MODEL_SCHEMA_VERSION, body, context, 'the monitor model');
  const p = (parsed !== null && typeof parsed === 'object' ? parsed : {}) as Record<string, unknown>;
  const createdAt = typeof p['createdAt'] === 'string' ? new Date(p['createdAt']) : undefined;
  const input = { version, reason: p['reason'], excludedRunIds: p['excludedRunIds'], createdAt, model: p['model'] };
  const extra = Object.keys(p).filter((k) => !['reason', 'excludedRunIds', 'createdAt', 'model'].includes(k));
  const issues = [...monitorModelIssues(input, 'model', false), ...extra.map((k) => ({ path: `model.${k}`, message: 'is not a field of a monitor model record' }))];
  return checkedStoredRecord<MonitorModelInput>(input, issues, context);
}
