/** The checks every record's validation is built of: bounds, issues collected by path, JSON values. */
import { isValidId, type ChamberRef } from './chamber';
import { InvalidRecordError, type RecordIssue } from './errors';
import type { JsonObject, JsonValue } from './records';

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
export const CONTROL = /[\u0000-\u001f\u007f]/;

/** Collects problems of one record; `throwIfAny` raises them all at once. */
export class Issues {
  readonly list: RecordIssue[] = [];
  add(path: string, message: string): void {
    this.list.push({ path, message });
  }
  throwIfAny(what: string): void {
    if (this.list.length > 0) throw new InvalidRecordError(what, this.list);
  }
}

export function text(issues: Issues, path: string, v: unknown, max: number, opts: { allowEmpty?: boolean } = {}): void {
  if (typeof v !== 'string') return issues.add(path, 'must be a string');
  if (v.length === 0 && !opts.allowEmpty) return issues.add(path, 'must not be empty');
  if (v.length > max) return issues.add(path, `must be at most ${max} characters`);
  if (CONTROL.test(v)) issues.add(path, 'must not contain control characters');
}

export function optionalText(issues: Issues, path: string, v: unknown, max: number): void {
  if (v !== undefined) text(issues, path, v, max);
}

export function finite(issues: Issues, path: string, v: unknown): void {
  if (typeof v !== 'number' || !Number.isFinite(v)) issues.add(path, 'must be a finite number');
}

export function int(issues: Issues, path: string, v: unknown, min: number): void {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min) issues.add(path, `must be a safe integer >= ${min}`);
}

/** Versions are stored as 32-bit integers (Cassandra `int`). */
export function version(issues: Issues, path: string, v: unknown): void {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > 0x7fffffff) issues.add(path, 'must be an integer in 1..2147483647');
}

export function date(issues: Issues, path: string, v: unknown): void {
  if (!(v instanceof Date) || Number.isNaN(v.getTime())) issues.add(path, 'must be a valid Date');
}

export function chamber(issues: Issues, path: string, c: ChamberRef | undefined): void {
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

export function jsonObject(issues: Issues, path: string, v: unknown): void {
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

