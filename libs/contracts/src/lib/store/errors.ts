import type { ChamberRef } from './chamber';

/**
 * Where a stored or submitted value lives, for error messages and logs: any of chamber, run,
 * sequence, table, column, indicator, series. Every field is optional; the more the better.
 */
export interface RecordContext {
  readonly chamber?: ChamberRef;
  readonly runId?: string;
  readonly sequence?: number;
  readonly table?: string;
  readonly column?: string;
  readonly indicatorKey?: string;
  readonly series?: string;
  readonly chunk?: number;
  readonly scope?: string;
  readonly version?: number;
}

/** `tool:chamber run=R seq=S table.column ...` for messages. */
export function describeContext(ctx: RecordContext): string {
  const parts: string[] = [];
  if (ctx.chamber) parts.push(`chamber ${ctx.chamber.toolId}:${ctx.chamber.chamberId}`);
  if (ctx.scope !== undefined) parts.push(`scope ${ctx.scope}`);
  if (ctx.runId !== undefined) parts.push(`run ${ctx.runId}`);
  if (ctx.sequence !== undefined) parts.push(`seq ${ctx.sequence}`);
  if (ctx.indicatorKey !== undefined) parts.push(`indicator ${ctx.indicatorKey}`);
  if (ctx.version !== undefined) parts.push(`version ${ctx.version}`);
  if (ctx.series !== undefined) parts.push(`series ${ctx.series}`);
  if (ctx.chunk !== undefined) parts.push(`chunk ${ctx.chunk}`);
  if (ctx.table !== undefined) parts.push(ctx.column !== undefined ? `${ctx.table}.${ctx.column}` : ctx.table);
  else if (ctx.column !== undefined) parts.push(`column ${ctx.column}`);
  return parts.join(', ');
}

/**
 * The store cannot be reached or did not answer in time (Cassandra: no host available, read/write
 * timeout, unavailable, overloaded; SQLite: database busy or locked, I/O error). Always retryable:
 * the caller must not ack the work it was doing, and may retry it later.
 *
 * `outcomeUnknown` is true when a write may or may not have been applied (a lightweight-transaction
 * timeout). Every store write is idempotent, so retrying the same call is still correct.
 */
export class StoreUnavailableError extends Error {
  override readonly name = 'StoreUnavailableError';
  readonly retryable = true as const;
  readonly outcomeUnknown: boolean;
  constructor(message: string, options?: { cause?: unknown; outcomeUnknown?: boolean }) {
    super(message, { cause: options?.cause });
    this.outcomeUnknown = options?.outcomeUnknown ?? false;
  }
}

/**
 * Fencing: the chamber is owned by a newer epoch than the caller's, so the caller has been deposed
 * and nothing it tried to write was written. The caller must stop processing the chamber.
 */
export class FencedError extends Error {
  override readonly name = 'FencedError';
  constructor(
    readonly chamber: ChamberRef,
    readonly callerEpoch: number,
    readonly storedEpoch: number,
    readonly storedOwnerId: string | null,
    options?: { cause?: unknown },
  ) {
    super(
      `chamber ${chamber.toolId}:${chamber.chamberId} is owned by epoch ${storedEpoch}` +
        `${storedOwnerId ? ` (${storedOwnerId})` : ''}; write with stale epoch ${callerEpoch} rejected`,
      options,
    );
  }
}

/**
 * A commit names a stream sequence at or below the chamber's high-water mark whose stored run is a
 * different run (or no run at all): the sequence space was reset or reused (e.g. the stream was
 * recreated). Nothing was written. Not retryable; the notification needs an operator's attention.
 */
export class SequenceConflictError extends Error {
  override readonly name = 'SequenceConflictError';
  constructor(
    readonly chamber: ChamberRef,
    readonly sequence: number,
    readonly runId: string,
    readonly storedRunId: string | null,
    readonly highWaterMark: number,
    options?: { cause?: unknown },
  ) {
    super(
      `chamber ${chamber.toolId}:${chamber.chamberId}: seq ${sequence} (run ${runId}) is at or below the ` +
        `high-water mark ${highWaterMark}, but ${storedRunId === null ? 'no run is stored there' : `run ${storedRunId} is stored there`}`,
      options,
    );
  }
}

/**
 * A versioned record (limit set, strategy) already exists at that version with different content.
 * Versions are immutable; write a higher version instead.
 */
export class VersionConflictError extends Error {
  override readonly name = 'VersionConflictError';
  constructor(
    readonly context: RecordContext,
    options?: { cause?: unknown },
  ) {
    super(`${describeContext(context)}: a different record is already stored at this version`, options);
  }
}

/** One problem of a record submitted for writing. */
export interface RecordIssue {
  readonly path: string;
  readonly message: string;
}

/** A record submitted for writing is invalid (caller bug); nothing was written. Lists every problem. */
export class InvalidRecordError extends Error {
  override readonly name = 'InvalidRecordError';
  constructor(
    readonly what: string,
    readonly issues: readonly RecordIssue[],
    options?: { cause?: unknown },
  ) {
    super(`invalid ${what}: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`, options);
  }
}

/** What is wrong with stored data. */
export type CorruptionKind =
  | 'unknown-schema-version'
  | 'truncated'
  | 'checksum-mismatch'
  | 'missing-chunk'
  | 'torn-write'
  | 'invalid-value'
  | 'malformed';

/**
 * Stored data cannot be decoded or violates an invariant (unknown schema version, truncated blob,
 * checksum mismatch, NaN limits, malformed JSON). Not retryable: the same read fails again. The
 * context names the chamber, run, table and column, so the record can be found and repaired.
 */
export class CorruptRecordError extends Error {
  override name = 'CorruptRecordError';
  constructor(
    readonly kind: CorruptionKind,
    readonly context: RecordContext,
    readonly detail: string,
    options?: { cause?: unknown },
  ) {
    super(`corrupt stored data (${kind}) at ${describeContext(context)}: ${detail}`, options);
  }
}

/** A record carries a schema version this code does not know (written by a newer release?). */
export class UnknownSchemaVersionError extends CorruptRecordError {
  override name = 'UnknownSchemaVersionError';
  constructor(
    context: RecordContext,
    readonly found: unknown,
    readonly supported: readonly number[],
    options?: { cause?: unknown },
  ) {
    super('unknown-schema-version', context, `schema version ${String(found)}, supported ${supported.join(', ')}`, options);
  }
}

/**
 * A stored trace is incomplete or damaged: a chunk is missing, has the wrong length or checksum, or
 * belongs to another write of the same run. Samples are never zero-filled.
 */
export class TornTraceError extends CorruptRecordError {
  override name = 'TornTraceError';
  constructor(kind: CorruptionKind, context: RecordContext, detail: string, options?: { cause?: unknown }) {
    super(kind, context, detail, options);
  }
}

/** No trace is stored for the run (or its write never completed: the manifest is written last). */
export class TraceNotFoundError extends Error {
  override readonly name = 'TraceNotFoundError';
  constructor(
    readonly chamber: ChamberRef,
    readonly runId: string,
    options?: { cause?: unknown },
  ) {
    super(`no trace stored for chamber ${chamber.toolId}:${chamber.chamberId} run ${runId}`, options);
  }
}

/** The store was used after `close()`. */
export class StoreClosedError extends Error {
  override readonly name = 'StoreClosedError';
  constructor(options?: { cause?: unknown }) {
    super('the store is closed', options);
  }
}
