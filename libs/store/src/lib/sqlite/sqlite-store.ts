import Database from 'better-sqlite3';
import {
  validatePositiveInt,
  type AlarmRepository,
  type ChamberMetadataRepository,
  type ChamberStateRepository,
  type DefenderStore,
  type MonitorStateRepository,
  type ChamberMemoryRepository,
  type MonitorModelRepository,
  type ChamberEventRepository,
  type OutboxRepository,
  type StrategyRepository,
  type TraceRepository,
  type UChartRepository,
} from '@defender/contracts';
import { DEFAULT_TRACE_POOL_BYTES, TraceBufferPool, type TraceBufferPoolStats } from '../codec/trace-buffer-pool';
import { MigrationError } from '../migration-error';
import { SqliteChamberMemory } from './sqlite-chamber-memory';
import { SqliteMonitorModels } from './sqlite-monitor-model';
import { SqliteChamberEvents } from './sqlite-chamber-events';
import { SqliteMonitorState } from './sqlite-monitor-state';
import { migrateSqlite } from './migrations';
import {
  Conn,
  DAY,
  type SqliteStoreOptions,
  DEFAULT_BUSY_TIMEOUT_MS,
  DEFAULT_SQLITE_TRACE_CHUNK_BYTES,
  DEFAULT_PAGE_CACHE_KIB,
  mapSqliteError,
} from './sqlite-conn';
import { SqliteChamberMetadata } from './sqlite-chamber-metadata';
import { SqliteTraces } from './sqlite-traces';
import { SqliteChamberLog } from './sqlite-chamber-log';
import { SqliteOutbox } from './sqlite-outbox';
import { SqliteUChart, type LimitSetWireReads } from './sqlite-uchart';
import { SqliteStrategies } from './sqlite-strategies';

/**
 * The embedded store: one SQLite file in WAL mode shared by the processes of one machine (or
 * `:memory:`). Same semantics as the Cassandra store; every write is a `BEGIN IMMEDIATE`
 * transaction. Calls are synchronous underneath (better-sqlite3): a big trace or a busy wait for
 * another process's lock blocks the caller's event loop. Services therefore open SQLite through
 * `openStore`, which runs this store on its own thread ({@link ThreadedSqliteStore}); this class
 * stays for single-process tools and tests of the file itself.
 */
export class SqliteStore implements DefenderStore {
  readonly kind = 'sqlite';
  readonly chamberMetadata: ChamberMetadataRepository;
  readonly traces: TraceRepository;
  readonly uchart: UChartRepository & { readonly wire: LimitSetWireReads };
  readonly chamberState: ChamberStateRepository;
  readonly alarms: AlarmRepository;
  readonly outbox: OutboxRepository;
  readonly strategies: StrategyRepository;
  readonly monitorState: MonitorStateRepository;
  readonly monitorModels: MonitorModelRepository;
  readonly chamberMemory: ChamberMemoryRepository;
  readonly chamberEvents: ChamberEventRepository;
  /** `wal` for a file, `memory` for `:memory:`. */
  readonly journalMode: string;
  /** The reusable buffers trace reads fill (releaseTraceMemory gives them back). */
  readonly tracePool: TraceBufferPool;

  private constructor(
    private readonly conn: Conn,
    options: SqliteStoreOptions,
    journalMode: string,
  ) {
    this.journalMode = journalMode;
    this.chamberMetadata = new SqliteChamberMetadata(conn, options.observationRetentionSeconds ?? 14 * DAY);
    this.tracePool = new TraceBufferPool(options.tracePoolBytes ?? DEFAULT_TRACE_POOL_BYTES);
    this.traces = new SqliteTraces(conn, options.traceChunkBytes ?? DEFAULT_SQLITE_TRACE_CHUNK_BYTES, this.tracePool);
    const log = new SqliteChamberLog(conn);
    this.chamberState = log;
    this.alarms = log;
    this.outbox = new SqliteOutbox(conn);
    this.uchart = new SqliteUChart(conn, log);
    this.strategies = new SqliteStrategies(conn);
    this.monitorState = new SqliteMonitorState(conn);
    this.monitorModels = new SqliteMonitorModels(conn);
    this.chamberMemory = new SqliteChamberMemory(conn);
    this.chamberEvents = new SqliteChamberEvents(conn);
  }

  /**
   * Opens (creating if needed) the database, switches a file to WAL and applies pending migrations.
   * @throws StoreUnavailableError when the file cannot be opened or stays locked.
   * @throws MigrationError when the schema cannot be brought up to date.
   */
  static async open(options: SqliteStoreOptions): Promise<SqliteStore> {
    const pageCacheKiB = options.pageCacheKiB ?? DEFAULT_PAGE_CACHE_KIB;
    validatePositiveInt('pageCacheKiB', pageCacheKiB);
    if (options.tracePoolBytes !== undefined) validatePositiveInt('tracePoolBytes', options.tracePoolBytes, 0);
    let db: Database.Database | undefined;
    try {
      db = new Database(options.filename, { timeout: options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS });
      db.pragma(`cache_size = -${pageCacheKiB}`);
      const journalMode = String(db.pragma('journal_mode = WAL', { simple: true })).toLowerCase();
      if (options.filename !== ':memory:' && options.filename !== '' && journalMode !== 'wal') {
        throw new MigrationError(`SQLite file ${options.filename} could not be switched to WAL (journal_mode=${journalMode})`);
      }
      db.pragma(`synchronous = ${options.synchronous ?? 'NORMAL'}`);
      migrateSqlite(db);
      return new SqliteStore(new Conn(db, options.observer), options, journalMode);
    } catch (err) {
      db?.close();
      throw mapSqliteError(err, `open ${options.filename}`);
    }
  }

  /** What the trace buffer pool holds and has done (as ThreadedSqliteStore and CassandraStore tell it). */
  async tracePoolStats(): Promise<TraceBufferPoolStats> {
    return this.tracePool.stats();
  }

  /** The underlying connection, for maintenance and tests (e.g. `PRAGMA integrity_check`). */
  get database(): Database.Database {
    return this.conn.db;
  }

  async close(): Promise<void> {
    if (this.conn.closed) return;
    this.conn.closed = true;
    this.conn.db.close();
    this.tracePool.clear();
  }
}

// Where the store's options, defaults and error mapping were always imported from.
export { DEFAULT_BUSY_TIMEOUT_MS, DEFAULT_PAGE_CACHE_KIB, DEFAULT_SQLITE_TRACE_CHUNK_BYTES, isLockBusy, mapSqliteError, type SqliteStoreOptions } from './sqlite-conn';
