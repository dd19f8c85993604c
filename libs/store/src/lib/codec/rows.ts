import { z } from 'zod';
import {
  CorruptRecordError,
  UnknownSchemaVersionError,
  isJsonObject,
  type AlarmInput,
  type AlarmRecord,
  type ChamberMetadata,
  type ChamberRef,
  type ChamberState,
  type HoldInput,
  type HoldRecord,
  type JsonObject,
  type LimitSetRecord,
  type OutboxEntry,
  type RecordContext,
  type RunPointSet,
  type StrategyRecord,
} from '@defender/contracts';
import { decodePointSet } from './point-set-codec';

/**
 * Row decoding shared by the adapters. A row is read through `get(column)`, which returns plain
 * values: numbers (the Cassandra adapter converts bigint `Long`s), strings, Buffers, Dates or epoch
 * milliseconds (SQLite), null. Every check failure is a CorruptRecordError naming the column.
 */
export type RowGetter = (column: string) => unknown;

/** Schema version of JSON bodies (alarms, holds, limit sets, strategies). */
export const JSON_SCHEMA_VERSION = 1;

function ctxCol(ctx: RecordContext, column: string): RecordContext {
  return { ...ctx, column };
}

function asNumber(v: unknown): number | undefined {
  if (typeof v === 'number') return v;
  if (typeof v === 'bigint') return Number(v);
  if (v !== null && typeof v === 'object' && typeof (v as { toString?: unknown }).toString === 'function' && 'toNumber' in v) {
    return Number((v as { toString(): string }).toString());
  }
  return undefined;
}

export function storedFinite(v: unknown, ctx: RecordContext, column: string): number {
  const n = asNumber(v);
  if (n === undefined || !Number.isFinite(n)) {
    throw new CorruptRecordError('invalid-value', ctxCol(ctx, column), `expected a finite number, found ${v === null ? 'NULL' : String(v)}`);
  }
  return n;
}

export function storedNullableFinite(v: unknown, ctx: RecordContext, column: string): number | null {
  return v === null || v === undefined ? null : storedFinite(v, ctx, column);
}

export function storedInt(v: unknown, ctx: RecordContext, column: string, min = 0): number {
  const n = asNumber(v);
  if (n === undefined || !Number.isSafeInteger(n) || n < min) {
    throw new CorruptRecordError('invalid-value', ctxCol(ctx, column), `expected a safe integer >= ${min}, found ${v === null ? 'NULL' : String(v)}`);
  }
  return n;
}

export function storedText(v: unknown, ctx: RecordContext, column: string, allowEmpty = false): string {
  if (typeof v !== 'string' || (!allowEmpty && v.length === 0)) {
    throw new CorruptRecordError('invalid-value', ctxCol(ctx, column), `expected text, found ${v === null ? 'NULL' : typeof v}`);
  }
  return v;
}

export function storedDate(v: unknown, ctx: RecordContext, column: string): Date {
  const d = v instanceof Date ? v : typeof v === 'number' ? new Date(v) : undefined;
  if (!d || Number.isNaN(d.getTime())) throw new CorruptRecordError('invalid-value', ctxCol(ctx, column), `expected a timestamp, found ${String(v)}`);
  return d;
}

export function storedBlob(v: unknown, ctx: RecordContext, column: string): Buffer {
  if (!Buffer.isBuffer(v)) throw new CorruptRecordError('invalid-value', ctxCol(ctx, column), `expected a blob, found ${v === null ? 'NULL' : typeof v}`);
  return v;
}

export function checkSchemaVersion(v: unknown, ctx: RecordContext, column = 'schema_version'): void {
  if (asNumber(v) !== JSON_SCHEMA_VERSION) throw new UnknownSchemaVersionError(ctxCol(ctx, column), v, [JSON_SCHEMA_VERSION]);
}

/** Parses stored JSON (text or UTF-8 blob) and checks it against `schema`. */
export function storedJson<T>(v: unknown, schema: z.ZodType<T>, ctx: RecordContext, column: string): T {
  const text = Buffer.isBuffer(v) ? v.toString('utf8') : v;
  if (typeof text !== 'string') throw new CorruptRecordError('invalid-value', ctxCol(ctx, column), `expected JSON text, found ${v === null ? 'NULL' : typeof v}`);
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new CorruptRecordError('malformed', ctxCol(ctx, column), 'not valid JSON (truncated?)', { cause: err });
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    throw new CorruptRecordError('malformed', ctxCol(ctx, column), parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; '));
  }
  return parsed.data;
}

const jsonObjectSchema = z.custom<JsonObject>((v) => isJsonObject(v), { message: 'expected a JSON object' });
const finiteNumber = z.number().refine((n) => Number.isFinite(n), 'must be finite');

// ---- chamber metadata ---------------------------------------------------------------------------

export function metadataFromRow(get: RowGetter): ChamberMetadata {
  const toolId = storedText(get('tool_id'), {}, 'tool_id');
  const chamberId = storedText(get('chamber_id'), {}, 'chamber_id');
  const ctx: RecordContext = { chamber: { toolId, chamberId }, table: 'chamber_metadata' };
  const source = get('source') ?? 'configured';
  if (source !== 'configured' && source !== 'observed') throw new CorruptRecordError('invalid-value', ctxCol(ctx, 'source'), `unknown source ${String(source)}`);
  const collectionFreqHz = storedFinite(get('collection_freq_hz'), ctx, 'collection_freq_hz');
  if (collectionFreqHz <= 0) throw new CorruptRecordError('invalid-value', ctxCol(ctx, 'collection_freq_hz'), `must be > 0, found ${collectionFreqHz}`);
  return {
    toolId,
    chamberId,
    svidCount: storedInt(get('svid_count'), ctx, 'svid_count', 1),
    collectionFreqHz,
    contextDurationSeconds: storedInt(get('context_duration_seconds'), ctx, 'context_duration_seconds', 1),
    weight: storedInt(get('weight'), ctx, 'weight', 1),
    lastUpdated: storedDate(get('last_updated'), ctx, 'last_updated'),
    source,
    observedRuns: storedInt(get('observed_runs') ?? 0, ctx, 'observed_runs', 0),
  };
}

// ---- U-chart runs ----------------------------------------------------------------------------

export function runPointSetFromRow(chamber: ChamberRef, get: RowGetter, table: string): RunPointSet {
  const sequence = storedInt(get('seq'), { chamber, table }, 'seq', 1);
  const ctx: RecordContext = { chamber, sequence, table };
  const runId = storedText(get('run_id'), ctx, 'run_id');
  const full: RecordContext = { ...ctx, runId };
  const recipe = get('recipe');
  return {
    toolId: chamber.toolId,
    chamberId: chamber.chamberId,
    sequence,
    runId,
    epoch: storedInt(get('epoch'), full, 'epoch'),
    committedAt: storedDate(get('committed_at'), full, 'committed_at'),
    ...(typeof recipe === 'string' ? { recipe } : {}),
    points: decodePointSet(storedBlob(get('body'), full, 'body'), ctxCol(full, 'body')),
  };
}

// ---- alarms and holds --------------------------------------------------------------------------

const alarmBodySchema = z.object({
  ruleId: z.string().min(1),
  indicatorKey: z.string().min(1),
  action: z.string().min(1),
  value: finiteNumber.nullable(),
  lcl: finiteNumber.optional(),
  ucl: finiteNumber.optional(),
  center: finiteNumber.optional(),
  recipe: z.string().optional(),
  step: z.string().optional(),
  svid: z.string().optional(),
  statistic: z.string().optional(),
  message: z.string(),
  details: jsonObjectSchema.optional(),
});

/** The JSON body stored for an alarm (schema version 1). */
export function alarmBody(a: AlarmInput): string {
  const body: Record<string, unknown> = { ruleId: a.ruleId, indicatorKey: a.indicatorKey, action: a.action, value: a.value, message: a.message };
  for (const k of ['lcl', 'ucl', 'center', 'recipe', 'step', 'svid', 'statistic', 'details'] as const) if (a[k] !== undefined) body[k] = a[k];
  return JSON.stringify(body);
}

export function alarmFromRow(chamber: ChamberRef, get: RowGetter, table: string): AlarmRecord {
  const sequence = storedInt(get('seq'), { chamber, table }, 'seq', 1);
  const ctx: RecordContext = { chamber, sequence, table };
  const runId = storedText(get('run_id'), ctx, 'run_id');
  const full = { ...ctx, runId };
  checkSchemaVersion(get('schema_version'), full);
  const body = storedJson(get('body'), alarmBodySchema, full, 'body');
  const { details, ...rest } = body;
  return {
    ...rest,
    ...(details !== undefined ? { details } : {}),
    toolId: chamber.toolId,
    chamberId: chamber.chamberId,
    sequence,
    runId,
    epoch: storedInt(get('epoch'), full, 'epoch'),
    raisedAt: storedDate(get('committed_at'), full, 'committed_at'),
  } as AlarmRecord;
}

const holdSchema = z.object({
  v: z.literal(JSON_SCHEMA_VERSION),
  holdId: z.string().min(1),
  ruleId: z.string(),
  reason: z.string(),
  sequence: z.number().int().min(1),
  runId: z.string().min(1),
  heldAt: z.number(),
});

/** The JSON stored for a hold. */
export function holdJson(h: HoldInput, sequence: number, runId: string, heldAt: Date): string {
  return JSON.stringify({ v: JSON_SCHEMA_VERSION, holdId: h.holdId, ruleId: h.ruleId, reason: h.reason, sequence, runId, heldAt: heldAt.getTime() });
}

export function holdFromJson(chamber: ChamberRef, v: unknown, table: string): HoldRecord | null {
  if (v === null || v === undefined) return null;
  const ctx: RecordContext = { chamber, table, column: 'hold' };
  const raw = Buffer.isBuffer(v) ? v.toString('utf8') : v;
  if (typeof raw === 'string') {
    try {
      const version = (JSON.parse(raw) as { v?: unknown } | null)?.v;
      if (version !== JSON_SCHEMA_VERSION) throw new UnknownSchemaVersionError(ctx, version, [JSON_SCHEMA_VERSION]);
    } catch (err) {
      if (err instanceof UnknownSchemaVersionError) throw err;
      // fall through: storedJson reports the malformed JSON with context
    }
  }
  const h = storedJson(v, holdSchema, ctx, 'hold');
  return {
    toolId: chamber.toolId,
    chamberId: chamber.chamberId,
    holdId: h.holdId,
    ruleId: h.ruleId,
    reason: h.reason,
    sequence: h.sequence,
    runId: h.runId,
    heldAt: new Date(h.heldAt),
  };
}

// ---- chamber state --------------------------------------------------------------------------

export function stateFromRow(chamber: ChamberRef, get: RowGetter, table: string): ChamberState {
  const ctx: RecordContext = { chamber, table };
  return {
    toolId: chamber.toolId,
    chamberId: chamber.chamberId,
    ownerEpoch: storedInt(get('owner_epoch'), ctx, 'owner_epoch'),
    ownerId: storedText(get('owner_id'), ctx, 'owner_id'),
    highWaterMark: storedInt(get('hwm'), ctx, 'hwm'),
    updatedAt: storedDate(get('state_updated_at'), ctx, 'state_updated_at'),
    ...streamBindingFromRow(get, ctx),
  };
}

/**
 * `stream_id` / `stream_offset` (migration 3): absent or NULL before a chamber was bound to a stream;
 * an offset of 0 is left out (the same state reads the same from either adapter).
 */
function streamBindingFromRow(get: RowGetter, ctx: RecordContext): { streamId?: string; streamOffset?: number } {
  const id = get('stream_id');
  const offset = get('stream_offset');
  return {
    ...(id === null || id === undefined ? {} : { streamId: storedText(id, ctx, 'stream_id') }),
    ...(offset === null || offset === undefined || storedInt(offset, ctx, 'stream_offset') === 0 ? {} : { streamOffset: storedInt(offset, ctx, 'stream_offset') }),
  };
}

/** An outbox row: `seq`, `idx` (or `item`, a decimal index), `subject`, `msg_id`, `payload` (text, or a UTF-8 `body`). */
export function outboxEntryFromRow(chamber: ChamberRef, get: RowGetter, table: string): OutboxEntry {
  const ctx: RecordContext = { chamber, table };
  const sequence = storedInt(get('seq'), ctx, 'seq', 1);
  const rawIndex = get('idx') ?? (typeof get('item') === 'string' ? Number(get('item')) : null);
  const payload = get('payload') ?? (Buffer.isBuffer(get('body')) ? (get('body') as Buffer).toString('utf8') : null);
  return {
    toolId: chamber.toolId,
    chamberId: chamber.chamberId,
    sequence,
    index: storedInt(rawIndex, { ...ctx, sequence }, 'idx'),
    subject: storedText(get('subject'), { ...ctx, sequence }, 'subject'),
    msgId: storedText(get('msg_id'), { ...ctx, sequence }, 'msg_id'),
    payload: storedText(payload, { ...ctx, sequence }, 'payload'),
  };
}

// ---- limit sets ------------------------------------------------------------------------------

const baselineSchema = z.object({
  reason: z.string().min(1),
  runIds: z.array(z.string()),
  excludedRunIds: z.array(z.string()),
});

export function limitParamsJson(l: LimitSetRecord): string {
  return JSON.stringify(l.params);
}

export function limitBaselineJson(l: LimitSetRecord): string {
  return JSON.stringify({ reason: l.baseline.reason, runIds: l.baseline.runIds, excludedRunIds: l.baseline.excludedRunIds });
}

/**
 * A limit set as read, every column checked except its two JSON columns, which are still text:
 * `params` holds a monitor model (40-130 KB of JSON for a chamber of 50-200 SVIDs, read by every
 * run). The SQLite store's thread answers with this, and the caller's side parses the JSON once
 * ({@link limitSetFromWire}) instead of the thread parsing it and both sides copying the object
 * graph across (structured clone).
 */
export interface LimitSetWire {
  readonly record: Omit<LimitSetRecord, 'params' | 'baseline'>;
  /** The columns as stored (text; anything else is reported as corrupt when decoded). */
  readonly params: unknown;
  readonly baseline: unknown;
  readonly table: string;
}

/** The checks of {@link limitSetFromRow} but the JSON columns' (see {@link LimitSetWire}). */
export function limitSetWireFromRow(chamber: ChamberRef, get: RowGetter, table: string): LimitSetWire {
  const indicatorKey = storedText(get('indicator_key'), { chamber, table }, 'indicator_key');
  const version = storedInt(get('version'), { chamber, table, indicatorKey }, 'version', 1);
  const ctx: RecordContext = { chamber, table, indicatorKey, version };
  checkSchemaVersion(get('schema_version'), ctx);
  const sigma = storedNullableFinite(get('sigma'), ctx, 'sigma');
  if (sigma !== null && sigma < 0) throw new CorruptRecordError('invalid-value', ctxCol(ctx, 'sigma'), `negative sigma ${sigma}`);
  const lcl = storedNullableFinite(get('lcl'), ctx, 'lcl');
  const ucl = storedNullableFinite(get('ucl'), ctx, 'ucl');
  if (lcl !== null && ucl !== null && lcl > ucl) throw new CorruptRecordError('invalid-value', ctxCol(ctx, 'lcl'), `lcl ${lcl} > ucl ${ucl}`);
  return {
    record: {
      toolId: chamber.toolId,
      chamberId: chamber.chamberId,
      indicatorKey,
      version,
      chartType: storedText(get('chart_type'), ctx, 'chart_type'),
      center: storedFinite(get('center'), ctx, 'center'),
      sigma,
      lcl,
      ucl,
      createdAt: storedDate(get('created_at'), ctx, 'created_at'),
    },
    // A Buffer would not cross a thread as one (it arrives as a Uint8Array): its text does.
    params: jsonText(get('params')),
    baseline: jsonText(get('baseline')),
    table,
  };
}

/** A {@link LimitSetWire} with its JSON columns parsed and checked: the record {@link limitSetFromRow} returns. */
export function limitSetFromWire(w: LimitSetWire): LimitSetRecord {
  const r = w.record;
  const ctx: RecordContext = { chamber: { toolId: r.toolId, chamberId: r.chamberId }, table: w.table, indicatorKey: r.indicatorKey, version: r.version };
  return {
    toolId: r.toolId,
    chamberId: r.chamberId,
    indicatorKey: r.indicatorKey,
    version: r.version,
    chartType: r.chartType,
    center: r.center,
    sigma: r.sigma,
    lcl: r.lcl,
    ucl: r.ucl,
    params: storedJson(w.params, jsonObjectSchema, ctx, 'params'),
    baseline: storedJson(w.baseline, baselineSchema, ctx, 'baseline'),
    createdAt: r.createdAt,
  };
}

export function limitSetFromRow(chamber: ChamberRef, get: RowGetter, table: string): LimitSetRecord {
  return limitSetFromWire(limitSetWireFromRow(chamber, get, table));
}

function jsonText(v: unknown): unknown {
  return Buffer.isBuffer(v) ? v.toString('utf8') : v;
}

// ---- strategies ----------------------------------------------------------------------------

export function strategyFromRow(scope: string, get: RowGetter, table: string): StrategyRecord {
  const version = storedInt(get('version'), { scope, table }, 'version', 1);
  const ctx: RecordContext = { scope, version, table };
  checkSchemaVersion(get('schema_version'), ctx);
  return {
    scope,
    version,
    document: storedJson(get('document'), jsonObjectSchema, ctx, 'document'),
    createdAt: storedDate(get('created_at'), ctx, 'created_at'),
    author: storedText(get('author'), ctx, 'author', true),
  };
}
