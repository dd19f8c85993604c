// The SQLite store's connection, options, error mapping and row helpers, shared by its repositories.
import Database from 'better-sqlite3';
import { CorruptRecordError, StoreClosedError, StoreUnavailableError, type ChamberRef } from '@defender/contracts';
import { type RowGetter } from '../codec/rows';
import { observed, type StoreObserver } from '../observer';

/** A day in seconds. */
export const DAY = 86_400;

/** Options of {@link SqliteStore.open}. */
export interface SqliteStoreOptions {
  /** Database file (created when missing; WAL mode), or `:memory:` for a private in-memory database. */
  readonly filename: string;
  /** `NORMAL` (default; WAL keeps every commit across a process crash) or `FULL` (also across power loss). */
  readonly synchronous?: 'NORMAL' | 'FULL';
  /** How long a writer waits for another process's write lock before StoreUnavailableError (default 5,000 ms). */
  readonly busyTimeoutMs?: number;
  /** Trace chunk size in bytes (multiple of 8, <= 1 MiB; default {@link DEFAULT_SQLITE_TRACE_CHUNK_BYTES}, 64 KiB). */
  readonly traceChunkBytes?: number;
  /**
   * Bytes of free trace buffers kept for the next reads (default {@link DEFAULT_TRACE_POOL_BYTES});
   * a defender sets its trace budget (`TRACE_MEMORY_MB`). 0: every trace gets a buffer of its own.
   */
  readonly tracePoolBytes?: number;
  /** Run observations older than this are pruned by `recomputeWeights` (default 14 days). */
  readonly observationRetentionSeconds?: number;
  /**
   * Page cache of the connection in KiB (`PRAGMA cache_size`; default {@link DEFAULT_PAGE_CACHE_KIB}).
   * better-sqlite3 builds SQLite with a 16 MB default, which a defender fills with the pages of
   * traces it reads once; the rows read again (high-water marks, limits, recent point sets) fit in
   * far less, and the OS page cache serves the rest.
   */
  readonly pageCacheKiB?: number;
  readonly observer?: StoreObserver;
}

/** How long a call waits for another connection's write lock by default, ms. */
export const DEFAULT_BUSY_TIMEOUT_MS = 5_000;

/**
 * Size of the trace chunks a SQLite store writes by default, bytes. Each chunk read comes back as two
 * copies of its size (SQLite's, then the driver's Buffer, copied again into the trace). Below glibc's
 * mmap threshold — 128 KiB in the defender's image (`MALLOC_MMAP_THRESHOLD_`, apps/defender/Dockerfile)
 * — both come from the C heap and reuse warm pages; 1 MiB chunks were a fresh mapping each, faulted
 * in page by page and unmapped again: a heavy trace (200 SVIDs x 18,000 f64) cost 94.6 CPU ms per read
 * with 1 MiB chunks and 73.0 with 64 KiB ones (`npm run bench:trace-read`; ADR 0010 addendum 2).
 * Traces already stored keep the chunk size their manifest records.
 */
export const DEFAULT_SQLITE_TRACE_CHUNK_BYTES = 64 * 1024;

/** Default page cache of a SQLite store connection, KiB (SQLite's own default is 2,000). */
export const DEFAULT_PAGE_CACHE_KIB = 4096;

export type SqlRow = Record<string, unknown>;

export function getter(row: SqlRow): RowGetter {
  return (column) => {
    const v = row[column];
    return v === undefined ? null : v;
  };
}

export function chamberOf(ref: ChamberRef): ChamberRef {
  return { toolId: ref.toolId, chamberId: ref.chamberId };
}

const UNAVAILABLE = /^SQLITE_(BUSY|LOCKED|IOERR|FULL|CANTOPEN|PROTOCOL|NOMEM|READONLY)/;
const CORRUPT = /^SQLITE_(CORRUPT|NOTADB)/;

/**
 * better-sqlite3's SqliteError, told by its name and code rather than by `instanceof`: the addon keeps
 * the SqliteError class of the first module instance that opened a database in the process, which is
 * not this module's one when modules are loaded more than once (Jest: one registry and realm per test file).
 */
function isSqliteError(err: unknown): err is Error & { code: string } {
  if (typeof err !== 'object' || err === null) return false;
  const e = err as { name?: unknown; code?: unknown; message?: unknown };
  return e.name === 'SqliteError' && typeof e.code === 'string' && typeof e.message === 'string';
}

/**
 * True when `err` (as {@link mapSqliteError} returns it) is SQLite's "another connection holds the lock"
 * (SQLITE_BUSY and its extended codes): the statement's transaction was rolled back, nothing of the
 * call was written, and the same call can be made again once the lock is free.
 */
export function isLockBusy(err: unknown): boolean {
  const cause = err instanceof StoreUnavailableError ? err.cause : err;
  return isSqliteError(cause) && cause.code.startsWith('SQLITE_BUSY');
}

/** SQLite errors: busy/locked/I-O/full/cannot-open -> retryable StoreUnavailableError; corrupt file -> CorruptRecordError. */
export function mapSqliteError(err: unknown, operation: string): unknown {
  if (isSqliteError(err)) {
    if (UNAVAILABLE.test(err.code)) return new StoreUnavailableError(`SQLite: ${operation} failed: ${err.message} (${err.code})`, { cause: err });
    if (CORRUPT.test(err.code)) return new CorruptRecordError('malformed', {}, `SQLite database file is damaged during ${operation}: ${err.message}`, { cause: err });
  }
  return err;
}

/** The connection and instrumentation every repository shares. */
export class Conn {
  closed = false;
  private readonly statements = new Map<string, Database.Statement>();

  constructor(
    readonly db: Database.Database,
    private readonly observer: StoreObserver | undefined,
  ) {}

  /** Cached prepared statement. */
  sql(text: string): Database.Statement {
    let s = this.statements.get(text);
    if (!s) {
      s = this.db.prepare(text);
      this.statements.set(text, s);
    }
    return s;
  }

  op<T>(operation: string, kind: 'read' | 'write', fn: () => T): Promise<T> {
    if (this.closed) return Promise.reject(new StoreClosedError());
    return observed(this.observer, 'sqlite', operation, kind, async () => fn(), mapSqliteError);
  }

  /** Runs `fn` in a `BEGIN IMMEDIATE` transaction (takes the write lock first, so no upgrade deadlock). */
  write<T>(fn: () => T): T {
    return this.db.transaction(fn).immediate();
  }
}
