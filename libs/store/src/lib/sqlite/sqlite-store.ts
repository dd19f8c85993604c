import Database from 'better-sqlite3';
import {
  aggregateObservations,
  CorruptRecordError,
  FencedError,
  InvalidRecordError,
  SequenceConflictError,
  StoreClosedError,
  StoreUnavailableError,
  TraceNotFoundError,
  validateBindStream,
  validateChamberRef,
  validateClaim,
  validateCommitRunInput,
  validateEpoch,
  validateLimitSet,
  validateMetadata,
  validateObservation,
  validatePositiveInt,
  validateRunRef,
  validateStrategy,
  validateStrategyScopes,
  validateTraceRecord,
  VersionConflictError,
  type AlarmRecord,
  type AlarmRepository,
  type BindStreamInput,
  type ChamberMetadata,
  type ChamberMetadataRepository,
  type ChamberRef,
  type ChamberState,
  type ChamberStateRepository,
  type CommitRunInput,
  type CommitRunResult,
  type DefenderStore,
  type HoldRecord,
  type LimitSetRecord,
  type MonitorStateRepository,
  type OutboxEntry,
  type OutboxRepository,
  type PutVersionResult,
  type RunObservation,
  type RunPointSet,
  type RunRef,
  type StrategyRecord,
  type StrategyRepository,
  type TraceRecord,
  type TraceRepository,
  type TraceWriteSummary,
  type UChartRepository,
  type WeightRecomputeSummary,
} from '@defender/contracts';
import { sameLimitSet, sameStrategy } from '../codec/compare';
import { encodePointSet } from '../codec/point-set-codec';
import {
  alarmBody,
  alarmFromRow,
  holdFromJson,
  holdJson,
  JSON_SCHEMA_VERSION,
  limitBaselineJson,
  limitParamsJson,
  limitSetFromRow,
  limitSetFromWire,
  limitSetWireFromRow,
  type LimitSetWire,
  metadataFromRow,
  outboxEntryFromRow,
  runPointSetFromRow,
  stateFromRow,
  storedDate,
  storedFinite,
  storedInt,
  storedText,
  strategyFromRow,
  type RowGetter,
} from '../codec/rows';
import { releaseDriverBuffer } from '../codec/buffer-release';
import { DEFAULT_TRACE_POOL_BYTES, TraceBufferPool, type TraceBufferPoolStats } from '../codec/trace-buffer-pool';
import { parseTraceManifest, planTraceWrite, stringifyTraceManifest, TraceAssembler, type SeriesKind } from '../codec/trace-codec';
import { MigrationError } from '../migration-error';
import { SqliteMonitorState, writeMonitorState } from './sqlite-monitor-state';
import { observed, type StoreObserver } from '../observer';
import { migrateSqlite } from './migrations';

const DAY = 86_400;

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

type SqlRow = Record<string, unknown>;

function getter(row: SqlRow): RowGetter {
  return (column) => {
    const v = row[column];
    return v === undefined ? null : v;
  };
}

function chamberOf(ref: ChamberRef): ChamberRef {
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
class Conn {
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

class SqliteChamberMetadata implements ChamberMetadataRepository {
  constructor(
    private readonly c: Conn,
    private readonly observationRetentionSeconds: number,
  ) {}

  private insert(m: ChamberMetadata): void {
    this.c
      .sql(
        `INSERT OR REPLACE INTO chamber_metadata (tool_id, chamber_id, svid_count, collection_freq_hz, context_duration_seconds, weight, last_updated, source, observed_runs)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(m.toolId, m.chamberId, m.svidCount, m.collectionFreqHz, m.contextDurationSeconds, m.weight, m.lastUpdated.getTime(), m.source, m.observedRuns);
  }

  upsert(m: ChamberMetadata): Promise<void> {
    return this.c.op('chamberMetadata.upsert', 'write', () => {
      validateMetadata(m);
      this.insert(m);
    });
  }

  get(chamber: ChamberRef): Promise<ChamberMetadata | undefined> {
    return this.c.op('chamberMetadata.get', 'read', () => {
      validateChamberRef(chamber);
      const row = this.c.sql('SELECT * FROM chamber_metadata WHERE tool_id = ? AND chamber_id = ?').get(chamber.toolId, chamber.chamberId) as SqlRow | undefined;
      return row ? metadataFromRow(getter(row)) : undefined;
    });
  }

  list(): Promise<ChamberMetadata[]> {
    return this.c.op('chamberMetadata.list', 'read', () => (this.c.sql('SELECT * FROM chamber_metadata').all() as SqlRow[]).map((r) => metadataFromRow(getter(r))));
  }

  recordObservation(o: RunObservation): Promise<void> {
    return this.c.op('chamberMetadata.recordObservation', 'write', () => {
      validateObservation(o);
      this.c
        .sql(
          `INSERT OR REPLACE INTO run_observations (tool_id, chamber_id, observed_at, run_id, svid_count, collection_freq_hz, context_duration_seconds) VALUES (?, ?, ?, ?, ?, ?, ?)`,
        )
        .run(o.toolId, o.chamberId, o.observedAt.getTime(), o.runId, o.svidCount, o.collectionFreqHz, o.contextDurationSeconds);
    });
  }

  recomputeWeights(now: Date, options?: { windowSeconds?: number; maxRunsPerChamber?: number }): Promise<WeightRecomputeSummary> {
    return this.c.op('chamberMetadata.recomputeWeights', 'write', () => {
      const windowSeconds = options?.windowSeconds ?? DAY;
      const maxRuns = options?.maxRunsPerChamber ?? 50;
      validatePositiveInt('maxRunsPerChamber', maxRuns);
      if (!(windowSeconds > 0)) throw new InvalidRecordError('windowSeconds', [{ path: 'windowSeconds', message: 'must be > 0' }]);
      return this.c.write(() => {
        this.c.sql('DELETE FROM run_observations WHERE observed_at <= ?').run(now.getTime() - this.observationRetentionSeconds * 1000);
        const rows = this.c
          .sql(
            `SELECT * FROM run_observations WHERE observed_at > ? AND observed_at <= ? ORDER BY tool_id, chamber_id, observed_at DESC, run_id`,
          )
          .all(now.getTime() - windowSeconds * 1000, now.getTime()) as SqlRow[];
        const byChamber = new Map<string, { chamber: ChamberRef; runs: Map<string, RunObservation> }>();
        for (const r of rows) {
          const get = getter(r);
          const chamber = { toolId: storedText(get('tool_id'), {}, 'tool_id'), chamberId: storedText(get('chamber_id'), {}, 'chamber_id') };
          const key = `${chamber.toolId}:${chamber.chamberId}`;
          const entry = byChamber.get(key) ?? { chamber, runs: new Map() };
          byChamber.set(key, entry);
          const ctx = { chamber, table: 'run_observations' };
          const runId = storedText(get('run_id'), ctx, 'run_id');
          if (entry.runs.size >= maxRuns || entry.runs.has(runId)) continue;
          entry.runs.set(runId, {
            ...chamber,
            runId,
            observedAt: storedDate(get('observed_at'), ctx, 'observed_at'),
            svidCount: storedInt(get('svid_count'), { ...ctx, runId }, 'svid_count', 1),
            collectionFreqHz: storedFinite(get('collection_freq_hz'), { ...ctx, runId }, 'collection_freq_hz'),
            contextDurationSeconds: storedFinite(get('context_duration_seconds'), { ...ctx, runId }, 'context_duration_seconds'),
          });
        }
        let updated = 0;
        let unchanged = 0;
        for (const { chamber, runs } of byChamber.values()) {
          const agg = aggregateObservations([...runs.values()]);
          const oldRow = this.c.sql('SELECT * FROM chamber_metadata WHERE tool_id = ? AND chamber_id = ?').get(chamber.toolId, chamber.chamberId) as SqlRow | undefined;
          const old = oldRow ? metadataFromRow(getter(oldRow)) : undefined;
          const same =
            old !== undefined &&
            old.source === 'observed' &&
            old.svidCount === agg.svidCount &&
            old.collectionFreqHz === agg.collectionFreqHz &&
            old.contextDurationSeconds === agg.contextDurationSeconds &&
            old.weight === agg.weight;
          if (same) unchanged++;
          else updated++;
          this.insert({ ...chamber, ...agg, lastUpdated: now, source: 'observed' });
        }
        return { updated, unchanged, observedChambers: byChamber.size };
      });
    });
  }
}

class SqliteTraces implements TraceRepository {
  constructor(
    private readonly c: Conn,
    private readonly chunkBytes: number,
    /** The buffers traces are read into (given back by releaseTraceMemory). */
    readonly pool: TraceBufferPool,
  ) {}

  write(trace: TraceRecord): Promise<TraceWriteSummary> {
    return this.c.op('traces.write', 'write', () => {
      validateTraceRecord(trace);
      const plan = planTraceWrite(trace, this.chunkBytes);
      const pk = [trace.toolId, trace.chamberId, trace.runId];
      this.c.write(() => {
        this.c.sql('DELETE FROM trace_chunks WHERE tool_id = ? AND chamber_id = ? AND run_id = ?').run(...pk);
        const insert = this.c.sql(
          'INSERT INTO trace_chunks (tool_id, chamber_id, run_id, series_kind, series, chunk, write_id, byte_length, crc32, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
        );
        for (const ch of plan.chunks()) insert.run(...pk, ch.seriesKind, ch.series, ch.chunk, ch.writeId, ch.byteLength, ch.crc32, ch.data);
        this.c.sql('INSERT OR REPLACE INTO trace_manifests (tool_id, chamber_id, run_id, manifest) VALUES (?, ?, ?, ?)').run(...pk, stringifyTraceManifest(plan.manifest));
      });
      return { length: plan.manifest.length, svidCount: trace.svids.size, chunks: plan.chunkCount, bytes: plan.bytes };
    });
  }

  read(run: RunRef): Promise<TraceRecord> {
    return this.c.op('traces.read', 'read', () => {
      validateRunRef(run);
      const pk = [run.toolId, run.chamberId, run.runId];
      // One read transaction: manifest and chunks come from the same snapshot.
      return this.c.db.transaction(() => {
        const head = this.c.sql('SELECT manifest FROM trace_manifests WHERE tool_id = ? AND chamber_id = ? AND run_id = ?').get(...pk) as SqlRow | undefined;
        if (!head || typeof head['manifest'] !== 'string') throw new TraceNotFoundError(chamberOf(run), run.runId);
        const manifest = parseTraceManifest(head['manifest'], { chamber: chamberOf(run), runId: run.runId, table: 'trace_manifests' });
        const assembler = new TraceAssembler(run, manifest, this.pool);
        try {
          const rows = this.c
            .sql('SELECT series_kind, series, chunk, write_id, byte_length, crc32, data FROM trace_chunks WHERE tool_id = ? AND chamber_id = ? AND run_id = ?')
            .iterate(...pk) as IterableIterator<SqlRow>;
          for (const r of rows) {
            const data = Buffer.isBuffer(r['data']) ? r['data'] : Buffer.alloc(0);
            assembler.add({
              seriesKind: r['series_kind'] as SeriesKind,
              series: r['series'] as string,
              chunk: r['chunk'] as number,
              writeId: r['write_id'] as string,
              byteLength: r['byte_length'] as number,
              crc32: r['crc32'] as number,
              data,
            });
            // The driver's copy of the chunk (its own buffer, now copied into the trace) is freed now:
            // a trace's chunk copies would otherwise pile up until the next young collection.
            releaseDriverBuffer(data);
          }
          return assembler.finish();
        } catch (err) {
          assembler.abandon();
          throw err;
        }
      })();
    });
  }

  delete(run: RunRef): Promise<void> {
    return this.c.op('traces.delete', 'write', () => {
      validateRunRef(run);
      this.c.write(() => {
        this.c.sql('DELETE FROM trace_manifests WHERE tool_id = ? AND chamber_id = ? AND run_id = ?').run(run.toolId, run.chamberId, run.runId);
        this.c.sql('DELETE FROM trace_chunks WHERE tool_id = ? AND chamber_id = ? AND run_id = ?').run(run.toolId, run.chamberId, run.runId);
      });
    });
  }
}

class SqliteChamberLog implements ChamberStateRepository, AlarmRepository {
  constructor(private readonly c: Conn) {}

  private readState(chamber: ChamberRef): ChamberState | undefined {
    const row = this.c
      .sql('SELECT owner_epoch, hwm, owner_id, state_updated_at, stream_id, stream_offset FROM chamber_state WHERE tool_id = ? AND chamber_id = ?')
      .get(chamber.toolId, chamber.chamberId) as SqlRow | undefined;
    return row ? stateFromRow(chamber, getter(row), 'chamber_state') : undefined;
  }

  get(chamber: ChamberRef): Promise<ChamberState | undefined> {
    return this.c.op('chamberState.get', 'read', () => {
      validateChamberRef(chamber);
      return this.readState(chamberOf(chamber));
    });
  }

  claim(chamberIn: ChamberRef, epoch: number, ownerId: string, now: Date): Promise<ChamberState> {
    return this.c.op('chamberState.claim', 'write', () => {
      validateClaim(chamberIn, epoch, ownerId, now);
      const chamber = chamberOf(chamberIn);
      return this.c.write(() => {
        const state = this.readState(chamber);
        if (!state) {
          this.c
            .sql('INSERT INTO chamber_state (tool_id, chamber_id, owner_epoch, hwm, owner_id, state_updated_at) VALUES (?, ?, ?, 0, ?, ?)')
            .run(chamber.toolId, chamber.chamberId, epoch, ownerId, now.getTime());
          return { ...chamber, ownerEpoch: epoch, ownerId, highWaterMark: 0, updatedAt: now };
        }
        if (state.ownerEpoch > epoch) throw new FencedError(chamber, epoch, state.ownerEpoch, state.ownerId);
        this.c
          .sql('UPDATE chamber_state SET owner_epoch = ?, owner_id = ?, state_updated_at = ? WHERE tool_id = ? AND chamber_id = ?')
          .run(epoch, ownerId, now.getTime(), chamber.toolId, chamber.chamberId);
        return { ...state, ownerEpoch: epoch, ownerId, updatedAt: now };
      });
    });
  }

  commitRun(input: CommitRunInput): Promise<CommitRunResult> {
    return this.c.op('chamberState.commitRun', 'write', () => {
      validateCommitRunInput(input);
      const chamber = chamberOf(input.chamber);
      const body = encodePointSet(input.points);
      const at = input.committedAt.getTime();
      return this.c.write((): CommitRunResult => {
        const state = this.readState(chamber);
        if (state && state.ownerEpoch > input.epoch) throw new FencedError(chamber, input.epoch, state.ownerEpoch, state.ownerId);
        const appliedAt = this.appliedSeq(chamber, input.runId);
        if (state && appliedAt !== undefined) {
          if (appliedAt === input.sequence) return { outcome: 'already-applied', state };
          // The run id was applied at another sequence (a re-published notification, of any age):
          // nothing of it is written; the mark moves past it (fenced like a commit) so the chamber goes on.
          if (state.highWaterMark >= input.sequence) return { outcome: 'duplicate-run', state, appliedSequence: appliedAt };
          this.c
            .sql('UPDATE chamber_state SET owner_epoch = ?, hwm = ?, owner_id = ?, state_updated_at = ? WHERE tool_id = ? AND chamber_id = ?')
            .run(input.epoch, input.sequence, input.ownerId, at, chamber.toolId, chamber.chamberId);
          return {
            outcome: 'duplicate-run',
            state: { ...chamber, ownerEpoch: input.epoch, ownerId: input.ownerId, highWaterMark: input.sequence, updatedAt: input.committedAt },
            appliedSequence: appliedAt,
          };
        }
        if (state && state.highWaterMark >= input.sequence) {
          const existing = this.c
            .sql('SELECT run_id FROM uchart_runs WHERE tool_id = ? AND chamber_id = ? AND seq = ?')
            .get(chamber.toolId, chamber.chamberId, input.sequence) as SqlRow | undefined;
          const storedRunId = typeof existing?.['run_id'] === 'string' ? existing['run_id'] : null;
          throw new SequenceConflictError(chamber, input.sequence, input.runId, storedRunId, state.highWaterMark);
        }
        const holdId = input.hold?.holdId ?? null;
        const hold = input.hold ? holdJson(input.hold, input.sequence, input.runId, input.committedAt) : null;
        if (state) {
          this.c
            .sql(
              `UPDATE chamber_state SET owner_epoch = ?, hwm = ?, owner_id = ?, state_updated_at = ?,
                 hold_id = COALESCE(?, hold_id), hold = COALESCE(?, hold)
               WHERE tool_id = ? AND chamber_id = ?`,
            )
            .run(input.epoch, input.sequence, input.ownerId, at, holdId, hold, chamber.toolId, chamber.chamberId);
        } else {
          this.c
            .sql('INSERT INTO chamber_state (tool_id, chamber_id, owner_epoch, hwm, owner_id, state_updated_at, hold_id, hold) VALUES (?, ?, ?, ?, ?, ?, ?, ?)')
            .run(chamber.toolId, chamber.chamberId, input.epoch, input.sequence, input.ownerId, at, holdId, hold);
        }
        this.c
          .sql('INSERT INTO uchart_runs (tool_id, chamber_id, seq, run_id, epoch, committed_at, recipe, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?)')
          .run(chamber.toolId, chamber.chamberId, input.sequence, input.runId, input.epoch, at, input.recipe ?? null, body);
        const alarm = this.c.sql(
          `INSERT INTO alarms (tool_id, chamber_id, seq, rule_id, indicator_key, run_id, epoch, committed_at, recipe, schema_version, body)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        );
        for (const a of input.alarms ?? []) {
          alarm.run(chamber.toolId, chamber.chamberId, input.sequence, a.ruleId, a.indicatorKey, input.runId, input.epoch, at, a.recipe ?? input.recipe ?? null, JSON_SCHEMA_VERSION, alarmBody(a));
        }
        this.c.sql('INSERT INTO applied_runs (tool_id, chamber_id, run_id, seq) VALUES (?, ?, ?, ?)').run(chamber.toolId, chamber.chamberId, input.runId, input.sequence);
        const event = this.c.sql('INSERT INTO outbox (tool_id, chamber_id, seq, idx, subject, msg_id, payload) VALUES (?, ?, ?, ?, ?, ?, ?)');
        (input.events ?? []).forEach((e, i) => event.run(chamber.toolId, chamber.chamberId, input.sequence, i, e.subject, e.msgId, e.payload));
        writeMonitorState(this.c, chamber, input);
        return {
          outcome: 'applied',
          state: { ...chamber, ownerEpoch: input.epoch, ownerId: input.ownerId, highWaterMark: input.sequence, updatedAt: input.committedAt },
        };
      });
    });
  }

  bindStream(input: BindStreamInput): Promise<ChamberState> {
    return this.c.op('chamberState.bindStream', 'write', () => {
      validateBindStream(input);
      const chamber = chamberOf(input.chamber);
      return this.c.write((): ChamberState => {
        const state = this.readState(chamber);
        if (!state) throw new InvalidRecordError('bindStream', [{ path: 'chamber', message: 'the chamber was never claimed' }]);
        if (state.ownerEpoch > input.epoch) throw new FencedError(chamber, input.epoch, state.ownerEpoch, state.ownerId);
        if (state.streamId !== input.expectedStreamId) return state;
        const offset = input.rebase ? state.highWaterMark : (state.streamOffset ?? 0);
        this.c
          .sql('UPDATE chamber_state SET stream_id = ?, stream_offset = ? WHERE tool_id = ? AND chamber_id = ?')
          .run(input.streamId, offset, chamber.toolId, chamber.chamberId);
        return { ...state, streamId: input.streamId, ...(offset > 0 ? { streamOffset: offset } : {}) };
      });
    });
  }

  private appliedSeq(chamber: ChamberRef, runId: string): number | undefined {
    const row = this.c.sql('SELECT seq FROM applied_runs WHERE tool_id = ? AND chamber_id = ? AND run_id = ?').get(chamber.toolId, chamber.chamberId, runId) as
      | SqlRow
      | undefined;
    return row ? storedInt(row['seq'], { chamber, runId, table: 'applied_runs' }, 'seq', 1) : undefined;
  }

  appliedRun(chamber: ChamberRef, runId: string): Promise<number | undefined> {
    return this.c.op('chamberState.appliedRun', 'read', () => {
      validateRunRef({ ...chamber, runId });
      return this.appliedSeq(chamberOf(chamber), runId);
    });
  }

  list(chamber: ChamberRef, options: { limit: number }): Promise<AlarmRecord[]> {
    return this.c.op('alarms.list', 'read', () => {
      validateChamberRef(chamber);
      validatePositiveInt('limit', options.limit);
      const rows = this.c
        .sql('SELECT * FROM alarms WHERE tool_id = ? AND chamber_id = ? ORDER BY seq DESC, rule_id, indicator_key LIMIT ?')
        .all(chamber.toolId, chamber.chamberId, options.limit) as SqlRow[];
      return rows.map((r) => alarmFromRow(chamberOf(chamber), getter(r), 'alarms'));
    });
  }

  ofRun(chamber: ChamberRef, sequence: number): Promise<AlarmRecord[]> {
    return this.c.op('alarms.ofRun', 'read', () => {
      validateChamberRef(chamber);
      validatePositiveInt('sequence', sequence);
      const rows = this.c
        .sql('SELECT * FROM alarms WHERE tool_id = ? AND chamber_id = ? AND seq = ? ORDER BY rule_id, indicator_key')
        .all(chamber.toolId, chamber.chamberId, sequence) as SqlRow[];
      return rows.map((r) => alarmFromRow(chamberOf(chamber), getter(r), 'alarms'));
    });
  }

  hold(chamber: ChamberRef): Promise<HoldRecord | null> {
    return this.c.op('alarms.hold', 'read', () => {
      validateChamberRef(chamber);
      const row = this.c.sql('SELECT hold FROM chamber_state WHERE tool_id = ? AND chamber_id = ?').get(chamber.toolId, chamber.chamberId) as SqlRow | undefined;
      return holdFromJson(chamberOf(chamber), row?.['hold'] ?? null, 'chamber_state');
    });
  }

  releaseHold(chamber: ChamberRef, holdId: string): Promise<boolean> {
    return this.c.op('alarms.releaseHold', 'write', () => {
      validateChamberRef(chamber);
      const r = this.c
        .sql('UPDATE chamber_state SET hold_id = NULL, hold = NULL WHERE tool_id = ? AND chamber_id = ? AND hold_id = ?')
        .run(chamber.toolId, chamber.chamberId, holdId);
      return r.changes === 1;
    });
  }

  history(chamber: ChamberRef, options: { limit: number; beforeSequence?: number }): Promise<RunPointSet[]> {
    return this.c.op('uchart.history', 'read', () => {
      validateChamberRef(chamber);
      validatePositiveInt('limit', options.limit);
      const before = options.beforeSequence;
      if (before !== undefined) validatePositiveInt('beforeSequence', before);
      const rows = (
        before !== undefined
          ? this.c
              .sql('SELECT * FROM uchart_runs WHERE tool_id = ? AND chamber_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?')
              .all(chamber.toolId, chamber.chamberId, before, options.limit)
          : this.c.sql('SELECT * FROM uchart_runs WHERE tool_id = ? AND chamber_id = ? ORDER BY seq DESC LIMIT ?').all(chamber.toolId, chamber.chamberId, options.limit)
      ) as SqlRow[];
      return rows.map((r) => runPointSetFromRow(chamberOf(chamber), getter(r), 'uchart_runs')).reverse();
    });
  }

  run(chamber: ChamberRef, sequence: number): Promise<RunPointSet | undefined> {
    return this.c.op('uchart.run', 'read', () => {
      validateChamberRef(chamber);
      validatePositiveInt('sequence', sequence);
      const row = this.c.sql('SELECT * FROM uchart_runs WHERE tool_id = ? AND chamber_id = ? AND seq = ?').get(chamber.toolId, chamber.chamberId, sequence) as
        | SqlRow
        | undefined;
      return row ? runPointSetFromRow(chamberOf(chamber), getter(row), 'uchart_runs') : undefined;
    });
  }
}

class SqliteOutbox implements OutboxRepository {
  constructor(private readonly c: Conn) {}

  pending(chamber: ChamberRef, options: { limit: number }): Promise<OutboxEntry[]> {
    return this.c.op('outbox.pending', 'read', () => {
      validateChamberRef(chamber);
      validatePositiveInt('limit', options.limit);
      const ref = chamberOf(chamber);
      // Published entries are deleted with the mark; the join only guards against a mark moved without it.
      const rows = this.c
        .sql(
          `SELECT o.seq, o.idx, o.subject, o.msg_id, o.payload FROM outbox o JOIN chamber_state s ON s.tool_id = o.tool_id AND s.chamber_id = o.chamber_id
           WHERE o.tool_id = ? AND o.chamber_id = ? AND o.seq > s.published_through ORDER BY o.seq, o.idx LIMIT ?`,
        )
        .all(ref.toolId, ref.chamberId, options.limit) as SqlRow[];
      return rows.map((r) => outboxEntryFromRow(ref, getter(r), 'outbox'));
    });
  }

  publishedThrough(chamber: ChamberRef): Promise<number> {
    return this.c.op('outbox.publishedThrough', 'read', () => {
      validateChamberRef(chamber);
      const row = this.c.sql('SELECT published_through FROM chamber_state WHERE tool_id = ? AND chamber_id = ?').get(chamber.toolId, chamber.chamberId) as SqlRow | undefined;
      return row ? storedInt(row['published_through'], { chamber: chamberOf(chamber), table: 'chamber_state' }, 'published_through') : 0;
    });
  }

  markPublished(chamberIn: ChamberRef, epoch: number, through: number): Promise<void> {
    return this.c.op('outbox.markPublished', 'write', () => {
      validateChamberRef(chamberIn);
      validateEpoch(epoch);
      validatePositiveInt('through', through);
      const chamber = chamberOf(chamberIn);
      this.c.write(() => {
        const row = this.c.sql('SELECT owner_epoch, owner_id FROM chamber_state WHERE tool_id = ? AND chamber_id = ?').get(chamber.toolId, chamber.chamberId) as
          | SqlRow
          | undefined;
        const ctx = { chamber, table: 'chamber_state' };
        if (!row) throw new FencedError(chamber, epoch, 0, null);
        const stored = storedInt(row['owner_epoch'], ctx, 'owner_epoch');
        if (stored > epoch) throw new FencedError(chamber, epoch, stored, storedText(row['owner_id'], ctx, 'owner_id'));
        this.c
          .sql('UPDATE chamber_state SET published_through = MAX(published_through, ?) WHERE tool_id = ? AND chamber_id = ?')
          .run(through, chamber.toolId, chamber.chamberId);
        this.c.sql('DELETE FROM outbox WHERE tool_id = ? AND chamber_id = ? AND seq <= ?').run(chamber.toolId, chamber.chamberId, through);
      });
    });
  }
}

class SqliteUChart implements UChartRepository {
  constructor(
    private readonly c: Conn,
    private readonly log: SqliteChamberLog,
  ) {}

  history(chamber: ChamberRef, options: { limit: number; beforeSequence?: number }): Promise<RunPointSet[]> {
    return this.log.history(chamber, options);
  }

  run(chamber: ChamberRef, sequence: number): Promise<RunPointSet | undefined> {
    return this.log.run(chamber, sequence);
  }

  putLimitSet(l: LimitSetRecord): Promise<PutVersionResult> {
    return this.c.op('uchart.putLimitSet', 'write', () => {
      validateLimitSet(l);
      return this.c.write((): PutVersionResult => {
        const row = this.c
          .sql('SELECT * FROM limit_sets WHERE tool_id = ? AND chamber_id = ? AND indicator_key = ? AND version = ?')
          .get(l.toolId, l.chamberId, l.indicatorKey, l.version) as SqlRow | undefined;
        if (row) {
          if (sameLimitSet(limitSetFromRow(chamberOf(l), getter(row), 'limit_sets'), l)) return 'unchanged';
          throw new VersionConflictError({ chamber: chamberOf(l), indicatorKey: l.indicatorKey, version: l.version, table: 'limit_sets' });
        }
        this.c
          .sql(
            `INSERT INTO limit_sets (tool_id, chamber_id, indicator_key, version, schema_version, chart_type, center, sigma, lcl, ucl, params, baseline, created_at)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
          )
          .run(l.toolId, l.chamberId, l.indicatorKey, l.version, JSON_SCHEMA_VERSION, l.chartType, l.center, l.sigma, l.lcl, l.ucl, limitParamsJson(l), limitBaselineJson(l), l.createdAt.getTime());
        return 'created';
      });
    });
  }

  limitSet(chamber: ChamberRef, indicatorKey: string, version?: number): Promise<LimitSetRecord | undefined> {
    return this.c.op('uchart.limitSet', 'read', () => {
      const w = this.limitSetWireNow(chamber, indicatorKey, version);
      return w && limitSetFromWire(w);
    });
  }

  currentLimitSets(chamber: ChamberRef): Promise<LimitSetRecord[]> {
    return this.c.op('uchart.currentLimitSets', 'read', () => this.currentLimitSetsWireNow(chamber).map(limitSetFromWire));
  }

  limitSetHistory(chamber: ChamberRef, indicatorKey: string): Promise<LimitSetRecord[]> {
    return this.c.op('uchart.limitSetHistory', 'read', () => this.limitSetHistoryWireNow(chamber, indicatorKey).map(limitSetFromWire));
  }

  /** The reads above with the JSON columns left as text (see {@link LimitSetWire}): what the store thread answers with. */
  readonly wire: LimitSetWireReads = {
    limitSet: (chamber, indicatorKey, version) => this.c.op('uchart.limitSet', 'read', () => this.limitSetWireNow(chamber, indicatorKey, version)),
    currentLimitSets: (chamber) => this.c.op('uchart.currentLimitSets', 'read', () => this.currentLimitSetsWireNow(chamber)),
    limitSetHistory: (chamber, indicatorKey) => this.c.op('uchart.limitSetHistory', 'read', () => this.limitSetHistoryWireNow(chamber, indicatorKey)),
  };

  private limitSetWireNow(chamber: ChamberRef, indicatorKey: string, version: number | undefined): LimitSetWire | undefined {
    validateChamberRef(chamber);
    if (version !== undefined) validatePositiveInt('version', version);
    const row = (
      version !== undefined
        ? this.c.sql('SELECT * FROM limit_sets WHERE tool_id = ? AND chamber_id = ? AND indicator_key = ? AND version = ?').get(chamber.toolId, chamber.chamberId, indicatorKey, version)
        : this.c
            .sql('SELECT * FROM limit_sets WHERE tool_id = ? AND chamber_id = ? AND indicator_key = ? ORDER BY version DESC LIMIT 1')
            .get(chamber.toolId, chamber.chamberId, indicatorKey)
    ) as SqlRow | undefined;
    return row ? limitSetWireFromRow(chamberOf(chamber), getter(row), 'limit_sets') : undefined;
  }

  private currentLimitSetsWireNow(chamber: ChamberRef): LimitSetWire[] {
    validateChamberRef(chamber);
    const rows = this.c
      .sql(
        `SELECT l.* FROM limit_sets l
         JOIN (SELECT indicator_key, MAX(version) AS version FROM limit_sets WHERE tool_id = ? AND chamber_id = ? GROUP BY indicator_key) m
           ON l.indicator_key = m.indicator_key AND l.version = m.version
         WHERE l.tool_id = ? AND l.chamber_id = ? ORDER BY l.indicator_key`,
      )
      .all(chamber.toolId, chamber.chamberId, chamber.toolId, chamber.chamberId) as SqlRow[];
    return rows.map((r) => limitSetWireFromRow(chamberOf(chamber), getter(r), 'limit_sets'));
  }

  private limitSetHistoryWireNow(chamber: ChamberRef, indicatorKey: string): LimitSetWire[] {
    validateChamberRef(chamber);
    const rows = this.c
      .sql('SELECT * FROM limit_sets WHERE tool_id = ? AND chamber_id = ? AND indicator_key = ? ORDER BY version')
      .all(chamber.toolId, chamber.chamberId, indicatorKey) as SqlRow[];
    return rows.map((r) => limitSetWireFromRow(chamberOf(chamber), getter(r), 'limit_sets'));
  }
}

/**
 * The limit-set reads of {@link UChartRepository} answering {@link LimitSetWire}s (decode each with
 * `limitSetFromWire`): same validation, queries and errors, the JSON columns left to the caller.
 */
export interface LimitSetWireReads {
  limitSet(chamber: ChamberRef, indicatorKey: string, version?: number): Promise<LimitSetWire | undefined>;
  currentLimitSets(chamber: ChamberRef): Promise<LimitSetWire[]>;
  limitSetHistory(chamber: ChamberRef, indicatorKey: string): Promise<LimitSetWire[]>;
}

class SqliteStrategies implements StrategyRepository {
  constructor(private readonly c: Conn) {}

  put(st: StrategyRecord): Promise<PutVersionResult> {
    return this.c.op('strategies.put', 'write', () => {
      validateStrategy(st);
      return this.c.write((): PutVersionResult => {
        const row = this.c.sql('SELECT * FROM strategies WHERE scope = ? AND version = ?').get(st.scope, st.version) as SqlRow | undefined;
        if (row) {
          if (sameStrategy(strategyFromRow(st.scope, getter(row), 'strategies'), st)) return 'unchanged';
          throw new VersionConflictError({ scope: st.scope, version: st.version, table: 'strategies' });
        }
        this.c
          .sql('INSERT INTO strategies (scope, version, schema_version, document, created_at, author) VALUES (?, ?, ?, ?, ?, ?)')
          .run(st.scope, st.version, JSON_SCHEMA_VERSION, JSON.stringify(st.document), st.createdAt.getTime(), st.author);
        return 'created';
      });
    });
  }

  get(scope: string, version?: number): Promise<StrategyRecord | undefined> {
    return this.c.op('strategies.get', 'read', () => {
      if (version !== undefined) validatePositiveInt('version', version);
      const row = (
        version !== undefined
          ? this.c.sql('SELECT * FROM strategies WHERE scope = ? AND version = ?').get(scope, version)
          : this.c.sql('SELECT * FROM strategies WHERE scope = ? ORDER BY version DESC LIMIT 1').get(scope)
      ) as SqlRow | undefined;
      return row ? strategyFromRow(scope, getter(row), 'strategies') : undefined;
    });
  }

  versions(scope: string): Promise<number[]> {
    return this.c.op('strategies.versions', 'read', () =>
      (this.c.sql('SELECT version FROM strategies WHERE scope = ? ORDER BY version').all(scope) as SqlRow[]).map((r) =>
        storedInt(r['version'], { scope, table: 'strategies' }, 'version', 1),
      ),
    );
  }
  latest(scopes: readonly string[]): Promise<StrategyRecord[]> {
    return this.c.op('strategies.latest', 'read', () => {
      validateStrategyScopes(scopes);
      // One statement (one snapshot): the newest version of each scope, by the primary key.
      const rows = this.c
        .sql(
          `SELECT s.* FROM strategies s WHERE s.scope IN (${scopes.map(() => '?').join(', ')}) AND s.version = (SELECT MAX(version) FROM strategies WHERE scope = s.scope)`,
        )
        .all(...scopes) as SqlRow[];
      const byScope = new Map(rows.map((r) => [String(r['scope']), r]));
      return scopes.flatMap((scope) => {
        const row = byScope.get(scope);
        return row ? [strategyFromRow(scope, getter(row), 'strategies')] : [];
      });
    });
  }
}

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
