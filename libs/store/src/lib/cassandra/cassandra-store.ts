import { hostname } from 'node:os';
import { auth, Client, type QueryOptions, type types } from 'cassandra-driver';
import {
  aggregateObservations,
  FencedError,
  InvalidRecordError,
  SequenceConflictError,
  StoreClosedError,
  StoreUnavailableError,
  TraceNotFoundError,
  validateChamberRef,
  validateBindStream,
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
  type OutboxEntry,
  type OutboxRepository,
  type PutVersionResult,
  type RunObservation,
  type RunPointSet,
  type RunRef,
  type StrategyRecord,
  type StrategyRepository,
  type MonitorStateRepository,
  type TraceRecord,
  type TraceRepository,
  type TraceWriteSummary,
  type UChartRepository,
  type WeightRecomputeSummary,
} from '@defender/contracts';
import { sameLimitSet, sameStrategy } from '../codec/compare';
import { encodePointSet } from '../codec/point-set-codec';
import { DEFAULT_TRACE_POOL_BYTES, TraceBufferPool, type TraceBufferPoolStats } from '../codec/trace-buffer-pool';
import {
  alarmBody,
  alarmFromRow,
  holdFromJson,
  holdJson,
  JSON_SCHEMA_VERSION,
  limitBaselineJson,
  limitParamsJson,
  limitSetFromRow,
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
import {
  MAX_TRACE_CHUNK_BYTES,
  parseTraceManifest,
  planTraceWrite,
  SERIES_SVID,
  SERIES_TIME,
  stringifyTraceManifest,
  TraceAssembler,
  type ManifestSeries,
  type SeriesKind,
} from '../codec/trace-codec';
import { observed, type StoreObserver } from '../observer';
import { runPool } from '../pool';
import { mapCassandraError } from './errors';
import { migrateCassandra } from './migrations';
import { CassandraMonitorState, monitorStateStatement } from './cassandra-monitor-state';
import { RequestGate } from './request-gate';
import {
  cassandraSslOptions,
  consistencyCode,
  defaultSerialConsistency,
  KEYSPACE_PATTERN,
  type CassandraConsistencyName,
  type CassandraSerialConsistencyName,
  type CassandraStoreOptions,
} from './options';

const DAY = 86_400;
const KIND_RUN = 0;
const KIND_ALARM = 1;
/** A run id the chamber applied: seq 0, item = run id, applied_seq (kept as long as the chamber). */
const KIND_APPLIED = 2;
/** An outbox event: seq = the run's, item = its index (zero-padded), subject, msg_id, body = payload. */
const KIND_OUTBOX = 3;
/** Run rows indexed per batch when a claim indexes runs committed before migration 2. */
const INDEX_BATCH = 200;
const ITEM_SEPARATOR = '\u001f';
const COMMIT_ATTEMPTS = 5;

type Row = types.Row;

function getter(row: Row): RowGetter {
  return (column) => {
    const v: unknown = row.get(column);
    return v === undefined ? null : v;
  };
}

function chamberOf(ref: ChamberRef): ChamberRef {
  return { toolId: ref.toolId, chamberId: ref.chamberId };
}

/** Requests in flight at most by default (CassandraStoreOptions.maxRequestsInFlight). */
const DEFAULT_MAX_REQUESTS_IN_FLIGHT = 1024;

/** The driver session plus what every repository needs: keyspace, consistency, instrumentation. */
class Session {
  closed = false;
  readonly base: QueryOptions;
  readonly serialRead: QueryOptions;

  constructor(
    readonly client: Client,
    readonly ks: string,
    consistency: number,
    serialConsistency: number,
    private readonly observer: StoreObserver | undefined,
    private readonly gate: RequestGate,
  ) {
    this.base = { prepare: true, consistency, serialConsistency };
    this.serialRead = { prepare: true, consistency: serialConsistency };
  }

  op<T>(operation: string, kind: 'read' | 'write', fn: () => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(new StoreClosedError());
    return observed(this.observer, 'cassandra', operation, kind, fn, (err, op) => mapCassandraError(err, op, kind));
  }

  exec(query: string, params: unknown[], extra?: QueryOptions): Promise<types.ResultSet> {
    return this.gate.run(() => this.client.execute(query, params, { ...this.base, ...extra }));
  }

  batch(statements: Parameters<Client['batch']>[0], extra?: QueryOptions): Promise<types.ResultSet> {
    return this.gate.run(() => this.client.batch(statements, { ...this.base, ...extra }));
  }

  /** All rows of a query, fetched page by page. */
  async all(query: string, params: unknown[], fetchSize = 5000, extra?: QueryOptions): Promise<Row[]> {
    const rows: Row[] = [];
    let pageState: string | undefined;
    do {
      const rs = await this.exec(query, params, { ...extra, fetchSize, ...(pageState ? { pageState } : {}) });
      for (const r of rs.rows) rows.push(r);
      pageState = rs.pageState ?? undefined;
    } while (pageState);
    return rows;
  }
}

class CassandraChamberMetadata implements ChamberMetadataRepository {
  private readonly cols =
    'tool_id, chamber_id, svid_count, collection_freq_hz, context_duration_seconds, weight, last_updated, source, observed_runs';

  constructor(
    private readonly s: Session,
    private readonly observationTtl: number,
  ) {}

  private insert(m: ChamberMetadata): Promise<types.ResultSet> {
    return this.s.exec(`INSERT INTO ${this.s.ks}.chamber_metadata (${this.cols}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, [
      m.toolId,
      m.chamberId,
      m.svidCount,
      m.collectionFreqHz,
      m.contextDurationSeconds,
      m.weight,
      m.lastUpdated,
      m.source,
      m.observedRuns,
    ]);
  }

  upsert(m: ChamberMetadata): Promise<void> {
    return this.s.op('chamberMetadata.upsert', 'write', async () => {
      validateMetadata(m);
      await this.insert(m);
    });
  }

  get(chamber: ChamberRef): Promise<ChamberMetadata | undefined> {
    return this.s.op('chamberMetadata.get', 'read', async () => {
      validateChamberRef(chamber);
      const row = (await this.s.exec(`SELECT ${this.cols} FROM ${this.s.ks}.chamber_metadata WHERE tool_id = ? AND chamber_id = ?`, [chamber.toolId, chamber.chamberId])).first();
      return row ? metadataFromRow(getter(row)) : undefined;
    });
  }

  list(): Promise<ChamberMetadata[]> {
    return this.s.op('chamberMetadata.list', 'read', async () => {
      const rows = await this.s.all(`SELECT ${this.cols} FROM ${this.s.ks}.chamber_metadata`, []);
      return rows.map((r) => metadataFromRow(getter(r)));
    });
  }

  recordObservation(o: RunObservation): Promise<void> {
    return this.s.op('chamberMetadata.recordObservation', 'write', async () => {
      validateObservation(o);
      await this.s.exec(
        `INSERT INTO ${this.s.ks}.run_observations (tool_id, chamber_id, observed_at, run_id, svid_count, collection_freq_hz, context_duration_seconds) VALUES (?, ?, ?, ?, ?, ?, ?) USING TTL ?`,
        [o.toolId, o.chamberId, o.observedAt, o.runId, o.svidCount, o.collectionFreqHz, o.contextDurationSeconds, this.observationTtl],
      );
    });
  }

  recomputeWeights(now: Date, options?: { windowSeconds?: number; maxRunsPerChamber?: number }): Promise<WeightRecomputeSummary> {
    return this.s.op('chamberMetadata.recomputeWeights', 'write', async () => {
      const windowSeconds = options?.windowSeconds ?? DAY;
      const maxRuns = options?.maxRunsPerChamber ?? 50;
      validatePositiveInt('maxRunsPerChamber', maxRuns);
      if (!(windowSeconds > 0)) throw new InvalidRecordError('windowSeconds', [{ path: 'windowSeconds', message: 'must be > 0' }]);
      const from = now.getTime() - windowSeconds * 1000;
      // Newest maxRuns rows of every chamber (clustering order is observed_at DESC).
      const rows = await this.s.all(
        `SELECT tool_id, chamber_id, observed_at, run_id, svid_count, collection_freq_hz, context_duration_seconds FROM ${this.s.ks}.run_observations PER PARTITION LIMIT ?`,
        [maxRuns],
      );
      const byChamber = new Map<string, { chamber: ChamberRef; runs: Map<string, RunObservation> }>();
      for (const r of rows) {
        const get = getter(r);
        const chamber = { toolId: storedText(get('tool_id'), {}, 'tool_id'), chamberId: storedText(get('chamber_id'), {}, 'chamber_id') };
        const ctx = { chamber, table: 'run_observations' };
        const observedAt = storedDate(get('observed_at'), ctx, 'observed_at');
        if (observedAt.getTime() <= from || observedAt.getTime() > now.getTime()) continue;
        const runId = storedText(get('run_id'), ctx, 'run_id');
        const key = `${chamber.toolId}:${chamber.chamberId}`;
        const entry = byChamber.get(key) ?? { chamber, runs: new Map() };
        byChamber.set(key, entry);
        if (entry.runs.has(runId)) continue; // newest observation of a run wins
        entry.runs.set(runId, {
          ...chamber,
          runId,
          observedAt,
          svidCount: storedInt(get('svid_count'), { ...ctx, runId }, 'svid_count', 1),
          collectionFreqHz: storedFinite(get('collection_freq_hz'), { ...ctx, runId }, 'collection_freq_hz'),
          contextDurationSeconds: storedFinite(get('context_duration_seconds'), { ...ctx, runId }, 'context_duration_seconds'),
        });
      }
      const existing = new Map<string, ChamberMetadata>();
      for (const r of await this.s.all(`SELECT ${this.cols} FROM ${this.s.ks}.chamber_metadata`, [])) {
        const m = metadataFromRow(getter(r));
        existing.set(`${m.toolId}:${m.chamberId}`, m);
      }
      let updated = 0;
      let unchanged = 0;
      await runPool([...byChamber.entries()], 16, async ([key, { chamber, runs }]) => {
        const agg = aggregateObservations([...runs.values()]);
        const old = existing.get(key);
        const same =
          old !== undefined &&
          old.source === 'observed' &&
          old.svidCount === agg.svidCount &&
          old.collectionFreqHz === agg.collectionFreqHz &&
          old.contextDurationSeconds === agg.contextDurationSeconds &&
          old.weight === agg.weight;
        if (same) unchanged++;
        else updated++;
        await this.insert({ ...chamber, ...agg, lastUpdated: now, source: 'observed' });
      });
      return { updated, unchanged, observedChambers: byChamber.size };
    });
  }
}

class CassandraTraces implements TraceRepository {
  constructor(
    private readonly s: Session,
    private readonly chunkBytes: number,
    private readonly writeConcurrency: number,
    private readonly readConcurrency: number,
    /** The buffers traces are read into (given back by releaseTraceMemory). */
    readonly pool: TraceBufferPool,
  ) {}

  write(trace: TraceRecord): Promise<TraceWriteSummary> {
    return this.s.op('traces.write', 'write', async () => {
      validateTraceRecord(trace);
      const plan = planTraceWrite(trace, this.chunkBytes);
      const pk = [trace.toolId, trace.chamberId, trace.runId];
      const insert = `INSERT INTO ${this.s.ks}.trace_chunks (tool_id, chamber_id, run_id, series_kind, series, chunk, write_id, byte_length, crc32, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`;
      await runPool(plan.chunks(), this.writeConcurrency, (c) =>
        this.s.exec(insert, [...pk, c.seriesKind, c.series, c.chunk, c.writeId, c.byteLength, c.crc32 | 0, c.data]),
      );
      // The manifest is the commit point of the write: readers ignore chunks without one.
      await this.s.exec(`INSERT INTO ${this.s.ks}.trace_chunks (tool_id, chamber_id, run_id, manifest) VALUES (?, ?, ?, ?)`, [
        ...pk,
        stringifyTraceManifest(plan.manifest),
      ]);
      return { length: plan.manifest.length, svidCount: trace.svids.size, chunks: plan.chunkCount, bytes: plan.bytes };
    });
  }

  read(run: RunRef): Promise<TraceRecord> {
    return this.s.op('traces.read', 'read', async () => {
      validateRunRef(run);
      const pk = [run.toolId, run.chamberId, run.runId];
      const head = (
        await this.s.exec(`SELECT manifest FROM ${this.s.ks}.trace_chunks WHERE tool_id = ? AND chamber_id = ? AND run_id = ? LIMIT 1`, pk)
      ).first();
      const json: unknown = head?.get('manifest');
      if (typeof json !== 'string') throw new TraceNotFoundError(chamberOf(run), run.runId);
      const manifest = parseTraceManifest(json, { chamber: chamberOf(run), runId: run.runId, table: 'trace_chunks' });
      const assembler = new TraceAssembler(run, manifest, this.pool);
      try {
        // Parallel queries over groups of series of about equal size; each page holds ~4 MiB.
        const groups = groupSeries(manifest.series, this.readConcurrency);
        const avgChunk = Math.max(1, Math.min(manifest.chunkBytes, Math.ceil(manifest.series.reduce((n, s) => n + s.bytes, 0) / Math.max(1, manifest.series.reduce((n, s) => n + s.chunks, 0)))));
        const fetchSize = Math.max(1, Math.floor((4 << 20) / avgChunk));
        const query = `SELECT series_kind, series, chunk, write_id, byte_length, crc32, data FROM ${this.s.ks}.trace_chunks WHERE tool_id = ? AND chamber_id = ? AND run_id = ? AND series_kind = ? AND series IN ?`;
        await runPool(groups, this.readConcurrency, async (g) => {
          let pageState: string | undefined;
          do {
            const rs = await this.s.exec(query, [...pk, g.kind, g.names], { fetchSize, ...(pageState ? { pageState } : {}) });
            for (const r of rs.rows) {
              assembler.add({
                seriesKind: r.get('series_kind') as SeriesKind,
                series: r.get('series') as string,
                chunk: r.get('chunk') as number,
                writeId: r.get('write_id') as string,
                byteLength: r.get('byte_length') as number,
                crc32: r.get('crc32') as number,
                data: (r.get('data') as Buffer | null) ?? Buffer.alloc(0),
              });
            }
            pageState = rs.pageState ?? undefined;
          } while (pageState);
        });
        return assembler.finish();
      } catch (err) {
        assembler.abandon();
        throw err;
      }
    });
  }

  delete(run: RunRef): Promise<void> {
    return this.s.op('traces.delete', 'write', async () => {
      validateRunRef(run);
      await this.s.exec(`DELETE FROM ${this.s.ks}.trace_chunks WHERE tool_id = ? AND chamber_id = ? AND run_id = ?`, [run.toolId, run.chamberId, run.runId]);
    });
  }
}

/** Splits a manifest's series into about `parts` groups of similar byte size, one kind per group. */
function groupSeries(series: readonly ManifestSeries[], parts: number): { kind: SeriesKind; names: string[] }[] {
  const groups: { kind: SeriesKind; names: string[] }[] = [];
  for (const kind of [SERIES_TIME, SERIES_SVID]) {
    const of = series.filter((s) => s.kind === kind);
    if (of.length === 0) continue;
    const total = of.reduce((n, s) => n + s.bytes, 0);
    const target = Math.max(1, Math.ceil(total / parts));
    let current: string[] = [];
    let bytes = 0;
    for (const s of of) {
      current.push(s.name);
      bytes += s.bytes;
      if (bytes >= target) {
        groups.push({ kind, names: current });
        current = [];
        bytes = 0;
      }
    }
    if (current.length > 0) groups.push({ kind, names: current });
  }
  return groups;
}

/**
 * `chamber_log`: ownership, committed runs and alarms of a chamber in one partition, so a run's
 * results, the high-water mark and the owner epoch change in one single-partition conditional batch.
 */
class CassandraChamberLog implements ChamberStateRepository, AlarmRepository {
  private readonly t: string;

  constructor(
    private readonly s: Session,
    private readonly runTtl: number,
  ) {
    this.t = `${s.ks}.chamber_log`;
  }

  private async readState(chamber: ChamberRef): Promise<ChamberState | undefined> {
    const row = (
      await this.s.exec(
        `SELECT owner_epoch, hwm, owner_id, state_updated_at, stream_id, stream_offset FROM ${this.t} WHERE tool_id = ? AND chamber_id = ? LIMIT 1`,
        [chamber.toolId, chamber.chamberId],
        this.s.serialRead,
      )
    ).first();
    if (!row || row.get('owner_epoch') === null) return undefined;
    return stateFromRow(chamber, getter(row), 'chamber_log');
  }

  /** Creates the static state row of a chamber seen for the first time (no-op when it exists). */
  private createState(chamber: ChamberRef, epoch: number, ownerId: string, now: Date): Promise<types.ResultSet> {
    return this.s.exec(
      `INSERT INTO ${this.t} (tool_id, chamber_id, owner_epoch, hwm, owner_id, state_updated_at) VALUES (?, ?, ?, 0, ?, ?) IF NOT EXISTS`,
      [chamber.toolId, chamber.chamberId, epoch, ownerId, now],
    );
  }

  get(chamber: ChamberRef): Promise<ChamberState | undefined> {
    return this.s.op('chamberState.get', 'read', async () => {
      validateChamberRef(chamber);
      return this.readState(chamberOf(chamber));
    });
  }

  claim(chamberIn: ChamberRef, epoch: number, ownerId: string, now: Date): Promise<ChamberState> {
    return this.s.op('chamberState.claim', 'write', async () => {
      validateClaim(chamberIn, epoch, ownerId, now);
      const chamber = chamberOf(chamberIn);
      for (let attempt = 0; attempt < COMMIT_ATTEMPTS; attempt++) {
        const r = await this.s.exec(
          `UPDATE ${this.t} SET owner_epoch = ?, owner_id = ?, state_updated_at = ? WHERE tool_id = ? AND chamber_id = ? IF owner_epoch <= ?`,
          [epoch, ownerId, now, chamber.toolId, chamber.chamberId, epoch],
        );
        if (r.wasApplied()) {
          // After our epoch is stored, only a newer owner can move the high-water mark: this read is safe to resume from.
          const state = await this.readState(chamber);
          if (!state) continue;
          await this.indexRuns(chamber, epoch, state.highWaterMark);
          return state;
        }
        const row = r.first();
        const stored: unknown = row?.get('owner_epoch');
        if (stored === null || stored === undefined) {
          if ((await this.createState(chamber, epoch, ownerId, now)).wasApplied()) {
            return { ...chamber, ownerEpoch: epoch, ownerId, highWaterMark: 0, updatedAt: now };
          }
          continue;
        }
        const storedEpoch = storedInt(stored, { chamber, table: 'chamber_log' }, 'owner_epoch');
        if (storedEpoch > epoch) {
          // The LWT answer carries only the columns of its condition; the owner's name comes from a read.
          const state = await this.readState(chamber);
          throw new FencedError(chamber, epoch, storedEpoch, state?.ownerId ?? null);
        }
      }
      throw new StoreUnavailableError(`chamber ${chamber.toolId}:${chamber.chamberId}: claim kept losing races`);
    });
  }

  bindStream(input: BindStreamInput): Promise<ChamberState> {
    return this.s.op('chamberState.bindStream', 'write', async () => {
      validateBindStream(input);
      const chamber = chamberOf(input.chamber);
      for (let attempt = 0; attempt < COMMIT_ATTEMPTS; attempt++) {
        const state = await this.readState(chamber);
        if (!state) throw new InvalidRecordError('bindStream', [{ path: 'chamber', message: 'the chamber was never claimed' }]);
        if (state.ownerEpoch > input.epoch) throw new FencedError(chamber, input.epoch, state.ownerEpoch, state.ownerId);
        if (state.streamId !== input.expectedStreamId) return state;
        const offset = input.rebase ? state.highWaterMark : (state.streamOffset ?? 0);
        // The mark is a condition too: the offset is the mark this update saw (only a newer owner,
        // fenced by the epoch condition, could move it meanwhile).
        const r = await this.s.exec(
          `UPDATE ${this.t} SET stream_id = ?, stream_offset = ? WHERE tool_id = ? AND chamber_id = ? IF owner_epoch <= ? AND hwm = ? AND stream_id = ?`,
          [input.streamId, offset, chamber.toolId, chamber.chamberId, input.epoch, state.highWaterMark, input.expectedStreamId ?? null],
        );
        if (r.wasApplied()) return { ...state, streamId: input.streamId, ...(offset > 0 ? { streamOffset: offset } : {}) };
      }
      throw new StoreUnavailableError(`chamber ${chamber.toolId}:${chamber.chamberId}: binding its stream kept losing races`);
    });
  }

  commitRun(input: CommitRunInput): Promise<CommitRunResult> {
    return this.s.op('chamberState.commitRun', 'write', async () => {
      validateCommitRunInput(input);
      const chamber = chamberOf(input.chamber);
      const pk = [chamber.toolId, chamber.chamberId];
      const at = input.committedAt;
      const update = input.hold
        ? {
            query: `UPDATE ${this.t} SET owner_epoch = ?, hwm = ?, run_index_hwm = ?, owner_id = ?, state_updated_at = ?, hold_id = ?, hold = ? WHERE tool_id = ? AND chamber_id = ? IF owner_epoch <= ? AND hwm < ?`,
            params: [
              input.epoch,
              input.sequence,
              input.sequence,
              input.ownerId,
              at,
              input.hold.holdId,
              holdJson(input.hold, input.sequence, input.runId, at),
              ...pk,
              input.epoch,
              input.sequence,
            ],
          }
        : {
            query: `UPDATE ${this.t} SET owner_epoch = ?, hwm = ?, run_index_hwm = ?, owner_id = ?, state_updated_at = ? WHERE tool_id = ? AND chamber_id = ? IF owner_epoch <= ? AND hwm < ?`,
            params: [input.epoch, input.sequence, input.sequence, input.ownerId, at, ...pk, input.epoch, input.sequence],
          };
      const insert = `INSERT INTO ${this.t} (tool_id, chamber_id, kind, seq, item, run_id, epoch, committed_at, recipe, schema_version, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) USING TTL ?`;
      const statements = [
        update,
        {
          query: insert,
          params: [...pk, KIND_RUN, input.sequence, '', input.runId, input.epoch, at, input.recipe ?? null, 1, encodePointSet(input.points), this.runTtl],
        },
        ...(input.alarms ?? []).map((a) => ({
          query: insert,
          params: [
            ...pk,
            KIND_ALARM,
            input.sequence,
            `${a.ruleId}${ITEM_SEPARATOR}${a.indicatorKey}`,
            input.runId,
            input.epoch,
            at,
            a.recipe ?? input.recipe ?? null,
            JSON_SCHEMA_VERSION,
            Buffer.from(alarmBody(a), 'utf8'),
            this.runTtl,
          ],
        })),
        // The run id, once per chamber: a replay of any age finds it (the batch applies only if it is new).
        {
          query: `INSERT INTO ${this.t} (tool_id, chamber_id, kind, seq, item, applied_seq, epoch, committed_at) VALUES (?, ?, ?, 0, ?, ?, ?, ?) IF NOT EXISTS`,
          params: [...pk, KIND_APPLIED, input.runId, input.sequence, input.epoch, at],
        },
        ...(input.events ?? []).map((e, i) => ({
          query: `INSERT INTO ${this.t} (tool_id, chamber_id, kind, seq, item, subject, msg_id, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?) USING TTL ?`,
          params: [...pk, KIND_OUTBOX, input.sequence, outboxItem(i), e.subject, e.msgId, Buffer.from(e.payload, 'utf8'), this.runTtl],
        })),
        ...monitorStateStatement(this.s.ks, chamber, input),
      ];
      for (let attempt = 0; attempt < COMMIT_ATTEMPTS; attempt++) {
        // One partition, so the batch is a single Paxos round: all of it or nothing.
        const r = await this.s.batch(statements, { logged: true });
        if (r.wasApplied()) {
          return {
            outcome: 'applied',
            state: { ...chamber, ownerEpoch: input.epoch, ownerId: input.ownerId, highWaterMark: input.sequence, updatedAt: at },
          };
        }
        // Several conditions: the answer's rows are per condition, so decide from linearizable reads.
        const state = await this.readState(chamber);
        if (!state) {
          await this.createState(chamber, input.epoch, input.ownerId, at);
          continue;
        }
        if (state.ownerEpoch > input.epoch) throw new FencedError(chamber, input.epoch, state.ownerEpoch, state.ownerId);
        const appliedAt = await this.appliedSeq(chamber, input.runId, this.s.serialRead);
        if (appliedAt !== undefined) {
          if (appliedAt === input.sequence) return { outcome: 'already-applied', state };
          // Applied at another sequence (a re-published notification, of any age): only the mark moves.
          if (state.highWaterMark >= input.sequence) return { outcome: 'duplicate-run', state, appliedSequence: appliedAt };
          const moved = await this.s.exec(
            `UPDATE ${this.t} SET owner_epoch = ?, hwm = ?, run_index_hwm = ?, owner_id = ?, state_updated_at = ? WHERE tool_id = ? AND chamber_id = ? IF owner_epoch <= ? AND hwm < ?`,
            [input.epoch, input.sequence, input.sequence, input.ownerId, at, ...pk, input.epoch, input.sequence],
          );
          if (moved.wasApplied()) {
            return {
              outcome: 'duplicate-run',
              state: { ...chamber, ownerEpoch: input.epoch, ownerId: input.ownerId, highWaterMark: input.sequence, updatedAt: at },
              appliedSequence: appliedAt,
            };
          }
          continue;
        }
        if (state.highWaterMark >= input.sequence) {
          const existing = (
            await this.s.exec(`SELECT run_id FROM ${this.t} WHERE tool_id = ? AND chamber_id = ? AND kind = ? AND seq = ?`, [...pk, KIND_RUN, input.sequence], this.s.serialRead)
          ).first();
          const storedRunId = (existing?.get('run_id') as string | null | undefined) ?? null;
          throw new SequenceConflictError(chamber, input.sequence, input.runId, storedRunId, state.highWaterMark);
        }
        // Lost a race with a concurrent change that still allows us; try again.
      }
      throw new StoreUnavailableError(`chamber ${chamber.toolId}:${chamber.chamberId}: commit kept losing races`, { outcomeUnknown: false });
    });
  }

  private async appliedSeq(chamber: ChamberRef, runId: string, extra?: QueryOptions): Promise<number | undefined> {
    const row = (
      await this.s.exec(
        `SELECT applied_seq FROM ${this.t} WHERE tool_id = ? AND chamber_id = ? AND kind = ? AND seq = 0 AND item = ?`,
        [chamber.toolId, chamber.chamberId, KIND_APPLIED, runId],
        extra,
      )
    ).first();
    return row ? storedInt(row.get('applied_seq'), { chamber, runId, table: 'chamber_log' }, 'applied_seq', 1) : undefined;
  }

  appliedRun(chamber: ChamberRef, runId: string): Promise<number | undefined> {
    return this.s.op('chamberState.appliedRun', 'read', async () => {
      validateRunRef({ ...chamber, runId });
      return this.appliedSeq(chamberOf(chamber), runId);
    });
  }

  /**
   * Indexes the run ids of runs committed without one (before migration 2, or by an older release)
   * up to `hwm`, as the owner for `epoch`: kind 2 rows for the run rows above `run_index_hwm`, then
   * `run_index_hwm = hwm`, in batches fenced on the owner epoch. A no-op once the index is complete
   * (every commit keeps `run_index_hwm` at its sequence).
   */
  private async indexRuns(chamber: ChamberRef, epoch: number, hwm: number): Promise<void> {
    const pk = [chamber.toolId, chamber.chamberId];
    const head = (await this.s.exec(`SELECT run_index_hwm FROM ${this.t} WHERE tool_id = ? AND chamber_id = ? LIMIT 1`, pk, this.s.serialRead)).first();
    const raw: unknown = head?.get('run_index_hwm');
    const from = raw === null || raw === undefined ? 0 : storedInt(raw, { chamber, table: 'chamber_log' }, 'run_index_hwm');
    if (from >= hwm) return;
    // Newest first (the clustering order); a run id stored at several sequences keeps its first one,
    // because the later (smaller-sequence) batches overwrite the earlier.
    const rows = await this.s.all(
      `SELECT seq, run_id, epoch, committed_at FROM ${this.t} WHERE tool_id = ? AND chamber_id = ? AND kind = ? AND seq > ? AND seq <= ?`,
      [...pk, KIND_RUN, from, hwm],
      1000,
    );
    for (let i = 0; i < rows.length; i += INDEX_BATCH) {
      const chunk = new Map<string, Row>();
      for (const r of rows.slice(i, i + INDEX_BATCH)) {
        const runId = r.get('run_id') as string | null;
        if (runId) chunk.set(runId, r);
      }
      const r = await this.s.batch(
        [
          // The condition every write to the partition carries; setting our own (claimed) epoch changes nothing.
          { query: `UPDATE ${this.t} SET owner_epoch = ? WHERE tool_id = ? AND chamber_id = ? IF owner_epoch <= ?`, params: [epoch, ...pk, epoch] },
          ...[...chunk].map(([runId, row]) => ({
            query: `INSERT INTO ${this.t} (tool_id, chamber_id, kind, seq, item, applied_seq, epoch, committed_at) VALUES (?, ?, ?, 0, ?, ?, ?, ?)`,
            params: [...pk, KIND_APPLIED, runId, row.get('seq'), row.get('epoch'), row.get('committed_at')],
          })),
        ],
        { logged: true },
      );
      if (!r.wasApplied()) return this.fencedBy(chamber, epoch);
    }
    const done = await this.s.exec(`UPDATE ${this.t} SET run_index_hwm = ? WHERE tool_id = ? AND chamber_id = ? IF owner_epoch <= ?`, [hwm, ...pk, epoch]);
    if (!done.wasApplied()) return this.fencedBy(chamber, epoch);
  }

  /** Throws the FencedError of a conditional write on the owner epoch that was not applied. */
  private async fencedBy(chamber: ChamberRef, epoch: number): Promise<never> {
    const state = await this.readState(chamber);
    throw new FencedError(chamber, epoch, state?.ownerEpoch ?? 0, state?.ownerId ?? null);
  }

  list(chamber: ChamberRef, options: { limit: number }): Promise<AlarmRecord[]> {
    return this.s.op('alarms.list', 'read', async () => {
      validateChamberRef(chamber);
      validatePositiveInt('limit', options.limit);
      const rows = await this.s.all(
        `SELECT seq, run_id, epoch, committed_at, schema_version, body FROM ${this.t} WHERE tool_id = ? AND chamber_id = ? AND kind = ? LIMIT ?`,
        [chamber.toolId, chamber.chamberId, KIND_ALARM, options.limit],
      );
      return rows.map((r) => alarmFromRow(chamberOf(chamber), getter(r), 'chamber_log'));
    });
  }

  ofRun(chamber: ChamberRef, sequence: number): Promise<AlarmRecord[]> {
    return this.s.op('alarms.ofRun', 'read', async () => {
      validateChamberRef(chamber);
      validatePositiveInt('sequence', sequence);
      const rows = await this.s.all(
        `SELECT seq, run_id, epoch, committed_at, schema_version, body FROM ${this.t} WHERE tool_id = ? AND chamber_id = ? AND kind = ? AND seq = ?`,
        [chamber.toolId, chamber.chamberId, KIND_ALARM, sequence],
      );
      return rows.map((r) => alarmFromRow(chamberOf(chamber), getter(r), 'chamber_log'));
    });
  }

  hold(chamber: ChamberRef): Promise<HoldRecord | null> {
    return this.s.op('alarms.hold', 'read', async () => {
      validateChamberRef(chamber);
      const row = (await this.s.exec(`SELECT hold FROM ${this.t} WHERE tool_id = ? AND chamber_id = ? LIMIT 1`, [chamber.toolId, chamber.chamberId])).first();
      return holdFromJson(chamberOf(chamber), row?.get('hold') ?? null, 'chamber_log');
    });
  }

  releaseHold(chamber: ChamberRef, holdId: string): Promise<boolean> {
    return this.s.op('alarms.releaseHold', 'write', async () => {
      validateChamberRef(chamber);
      const r = await this.s.exec(`UPDATE ${this.t} SET hold_id = null, hold = null WHERE tool_id = ? AND chamber_id = ? IF hold_id = ?`, [
        chamber.toolId,
        chamber.chamberId,
        holdId,
      ]);
      return r.wasApplied();
    });
  }

  history(chamber: ChamberRef, options: { limit: number; beforeSequence?: number }): Promise<RunPointSet[]> {
    return this.s.op('uchart.history', 'read', async () => {
      validateChamberRef(chamber);
      validatePositiveInt('limit', options.limit);
      const before = options.beforeSequence;
      if (before !== undefined) validatePositiveInt('beforeSequence', before);
      const rows = await this.s.all(
        `SELECT seq, run_id, epoch, committed_at, recipe, body FROM ${this.t} WHERE tool_id = ? AND chamber_id = ? AND kind = ?${before !== undefined ? ' AND seq < ?' : ''} LIMIT ?`,
        [chamber.toolId, chamber.chamberId, KIND_RUN, ...(before !== undefined ? [before] : []), options.limit],
        1000,
      );
      return rows.map((r) => runPointSetFromRow(chamberOf(chamber), getter(r), 'chamber_log')).reverse();
    });
  }

  run(chamber: ChamberRef, sequence: number): Promise<RunPointSet | undefined> {
    return this.s.op('uchart.run', 'read', async () => {
      validateChamberRef(chamber);
      validatePositiveInt('sequence', sequence);
      const row = (
        await this.s.exec(`SELECT seq, run_id, epoch, committed_at, recipe, body FROM ${this.t} WHERE tool_id = ? AND chamber_id = ? AND kind = ? AND seq = ?`, [
          chamber.toolId,
          chamber.chamberId,
          KIND_RUN,
          sequence,
        ])
      ).first();
      return row ? runPointSetFromRow(chamberOf(chamber), getter(row), 'chamber_log') : undefined;
    });
  }
}

/** Clustering item of the `index`-th outbox event of a run: zero-padded, so items sort by index. */
function outboxItem(index: number): string {
  return String(index).padStart(6, '0');
}

/**
 * The outbox in `chamber_log` (kind 3 rows, the `published_through` static): entries above the mark
 * are pending; those at or below it are never read again (a range read from the top of the kind
 * stops at the mark) and expire with the run retention.
 */
class CassandraOutbox implements OutboxRepository {
  private readonly t: string;

  constructor(private readonly s: Session) {
    this.t = `${s.ks}.chamber_log`;
  }

  private async mark(chamber: ChamberRef): Promise<number> {
    const row = (await this.s.exec(`SELECT published_through FROM ${this.t} WHERE tool_id = ? AND chamber_id = ? LIMIT 1`, [chamber.toolId, chamber.chamberId])).first();
    const raw: unknown = row?.get('published_through');
    return raw === null || raw === undefined ? 0 : storedInt(raw, { chamber, table: 'chamber_log' }, 'published_through');
  }

  pending(chamberIn: ChamberRef, options: { limit: number }): Promise<OutboxEntry[]> {
    return this.s.op('outbox.pending', 'read', async () => {
      validateChamberRef(chamberIn);
      validatePositiveInt('limit', options.limit);
      const chamber = chamberOf(chamberIn);
      const through = await this.mark(chamber);
      const rows = await this.s.all(
        `SELECT seq, item, subject, msg_id, body FROM ${this.t} WHERE tool_id = ? AND chamber_id = ? AND kind = ? AND seq > ?`,
        [chamber.toolId, chamber.chamberId, KIND_OUTBOX, through],
        1000,
      );
      return rows
        .map((r) => outboxEntryFromRow(chamber, getter(r), 'chamber_log'))
        .sort((a, b) => a.sequence - b.sequence || a.index - b.index)
        .slice(0, options.limit);
    });
  }

  publishedThrough(chamber: ChamberRef): Promise<number> {
    return this.s.op('outbox.publishedThrough', 'read', async () => {
      validateChamberRef(chamber);
      return this.mark(chamberOf(chamber));
    });
  }

  markPublished(chamberIn: ChamberRef, epoch: number, through: number): Promise<void> {
    return this.s.op('outbox.markPublished', 'write', async () => {
      validateChamberRef(chamberIn);
      validateEpoch(epoch);
      validatePositiveInt('through', through);
      const chamber = chamberOf(chamberIn);
      // Only the owner marks (one worker per chamber, marks in order), so the mark only rises; the
      // condition fences a deposed owner, which therefore never moves it past what it published.
      if ((await this.mark(chamber)) >= through) return;
      const r = await this.s.exec(`UPDATE ${this.t} SET published_through = ? WHERE tool_id = ? AND chamber_id = ? IF owner_epoch <= ?`, [
        through,
        chamber.toolId,
        chamber.chamberId,
        epoch,
      ]);
      if (r.wasApplied()) return;
      const row = (
        await this.s.exec(`SELECT owner_epoch, owner_id FROM ${this.t} WHERE tool_id = ? AND chamber_id = ? LIMIT 1`, [chamber.toolId, chamber.chamberId], this.s.serialRead)
      ).first();
      const stored: unknown = row?.get('owner_epoch');
      throw new FencedError(
        chamber,
        epoch,
        stored === null || stored === undefined ? 0 : storedInt(stored, { chamber, table: 'chamber_log' }, 'owner_epoch'),
        (row?.get('owner_id') as string | null | undefined) ?? null,
      );
    });
  }
}

class CassandraUChart implements UChartRepository {
  private readonly cols = 'indicator_key, version, schema_version, chart_type, center, sigma, lcl, ucl, params, baseline, created_at';

  constructor(
    private readonly s: Session,
    private readonly log: CassandraChamberLog,
  ) {}

  history(chamber: ChamberRef, options: { limit: number; beforeSequence?: number }): Promise<RunPointSet[]> {
    return this.log.history(chamber, options);
  }

  run(chamber: ChamberRef, sequence: number): Promise<RunPointSet | undefined> {
    return this.log.run(chamber, sequence);
  }

  putLimitSet(l: LimitSetRecord): Promise<PutVersionResult> {
    return this.s.op('uchart.putLimitSet', 'write', async () => {
      validateLimitSet(l);
      const r = await this.s.exec(
        `INSERT INTO ${this.s.ks}.limit_sets (tool_id, chamber_id, ${this.cols}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) IF NOT EXISTS`,
        [l.toolId, l.chamberId, l.indicatorKey, l.version, JSON_SCHEMA_VERSION, l.chartType, l.center, l.sigma, l.lcl, l.ucl, limitParamsJson(l), limitBaselineJson(l), l.createdAt],
      );
      if (r.wasApplied()) return 'created';
      const row = r.first();
      const existing = limitSetFromRow(chamberOf(l), getter(row), 'limit_sets');
      if (sameLimitSet(existing, l)) return 'unchanged';
      throw new VersionConflictError({ chamber: chamberOf(l), indicatorKey: l.indicatorKey, version: l.version, table: 'limit_sets' });
    });
  }

  limitSet(chamber: ChamberRef, indicatorKey: string, version?: number): Promise<LimitSetRecord | undefined> {
    return this.s.op('uchart.limitSet', 'read', async () => {
      validateChamberRef(chamber);
      if (version !== undefined) validatePositiveInt('version', version);
      const row = (
        await this.s.exec(
          `SELECT ${this.cols} FROM ${this.s.ks}.limit_sets WHERE tool_id = ? AND chamber_id = ? AND indicator_key = ?${version !== undefined ? ' AND version = ?' : ''} LIMIT 1`,
          [chamber.toolId, chamber.chamberId, indicatorKey, ...(version !== undefined ? [version] : [])],
        )
      ).first();
      return row ? limitSetFromRow(chamberOf(chamber), getter(row), 'limit_sets') : undefined;
    });
  }

  currentLimitSets(chamber: ChamberRef): Promise<LimitSetRecord[]> {
    return this.s.op('uchart.currentLimitSets', 'read', async () => {
      validateChamberRef(chamber);
      // Rows come as (indicator ASC, version DESC): the first row of each indicator is its current version.
      const rows = await this.s.all(`SELECT ${this.cols} FROM ${this.s.ks}.limit_sets WHERE tool_id = ? AND chamber_id = ?`, [chamber.toolId, chamber.chamberId]);
      const out: LimitSetRecord[] = [];
      let last: string | undefined;
      for (const r of rows) {
        const key = r.get('indicator_key') as string;
        if (key === last) continue;
        last = key;
        out.push(limitSetFromRow(chamberOf(chamber), getter(r), 'limit_sets'));
      }
      return out;
    });
  }

  limitSetHistory(chamber: ChamberRef, indicatorKey: string): Promise<LimitSetRecord[]> {
    return this.s.op('uchart.limitSetHistory', 'read', async () => {
      validateChamberRef(chamber);
      const rows = await this.s.all(`SELECT ${this.cols} FROM ${this.s.ks}.limit_sets WHERE tool_id = ? AND chamber_id = ? AND indicator_key = ?`, [
        chamber.toolId,
        chamber.chamberId,
        indicatorKey,
      ]);
      return rows.map((r) => limitSetFromRow(chamberOf(chamber), getter(r), 'limit_sets')).reverse();
    });
  }
}

class CassandraStrategies implements StrategyRepository {
  constructor(private readonly s: Session) {}

  put(st: StrategyRecord): Promise<PutVersionResult> {
    return this.s.op('strategies.put', 'write', async () => {
      validateStrategy(st);
      const r = await this.s.exec(
        `INSERT INTO ${this.s.ks}.strategies (scope, version, schema_version, document, created_at, author) VALUES (?, ?, ?, ?, ?, ?) IF NOT EXISTS`,
        [st.scope, st.version, JSON_SCHEMA_VERSION, JSON.stringify(st.document), st.createdAt, st.author],
      );
      if (r.wasApplied()) return 'created';
      const existing = strategyFromRow(st.scope, getter(r.first()), 'strategies');
      if (sameStrategy(existing, st)) return 'unchanged';
      throw new VersionConflictError({ scope: st.scope, version: st.version, table: 'strategies' });
    });
  }

  get(scope: string, version?: number): Promise<StrategyRecord | undefined> {
    return this.s.op('strategies.get', 'read', async () => {
      if (version !== undefined) validatePositiveInt('version', version);
      const row = (
        await this.s.exec(
          `SELECT version, schema_version, document, created_at, author FROM ${this.s.ks}.strategies WHERE scope = ?${version !== undefined ? ' AND version = ?' : ''} LIMIT 1`,
          [scope, ...(version !== undefined ? [version] : [])],
        )
      ).first();
      return row ? strategyFromRow(scope, getter(row), 'strategies') : undefined;
    });
  }

  versions(scope: string): Promise<number[]> {
    return this.s.op('strategies.versions', 'read', async () => {
      const rows = await this.s.all(`SELECT version FROM ${this.s.ks}.strategies WHERE scope = ?`, [scope]);
      return rows.map((r) => storedInt(r.get('version'), { scope, table: 'strategies' }, 'version', 1)).reverse();
    });
  }
  latest(scopes: readonly string[]): Promise<StrategyRecord[]> {
    return this.s.op('strategies.latest', 'read', async () => {
      validateStrategyScopes(scopes);
      // One query: a partition per scope, versions clustered newest first, so the first row of each
      // partition is its newest version. Rows come back in token order: put them in the given order.
      const rows = await this.s.all(
        `SELECT scope, version, schema_version, document, created_at, author FROM ${this.s.ks}.strategies WHERE scope IN ? PER PARTITION LIMIT 1`,
        [[...scopes]],
      );
      const byScope = new Map(rows.map((r) => [String(r.get('scope')), r]));
      return scopes.flatMap((scope) => {
        const row = byScope.get(scope);
        return row ? [strategyFromRow(scope, getter(row), 'strategies')] : [];
      });
    });
  }
}

/** Closes a client whose start failed; the start error is the one reported, a close error only warns. */
async function shutdownAfterFailure(client: Client, cause: unknown): Promise<void> {
  try {
    await client.shutdown();
  } catch (err) {
    process.emitWarning(`Cassandra client shutdown after a failed start (${String(cause)}) failed: ${String(err)}`);
  }
}

/**
 * The production store on Apache Cassandra (see the lib README for the schema and the fencing
 * design). Create with {@link CassandraStore.connect}; it runs the schema migrations first.
 */
export class CassandraStore implements DefenderStore {
  readonly kind = 'cassandra';
  readonly chamberMetadata: ChamberMetadataRepository;
  readonly traces: TraceRepository;
  readonly uchart: UChartRepository;
  readonly chamberState: ChamberStateRepository;
  readonly alarms: AlarmRepository;
  readonly outbox: OutboxRepository;
  readonly strategies: StrategyRepository;
  readonly monitorState: MonitorStateRepository;
  /** Keyspace in use. */
  readonly keyspace: string;
  /** The reusable buffers trace reads fill (releaseTraceMemory gives them back). */
  readonly tracePool: TraceBufferPool;
  readonly consistency: CassandraConsistencyName;
  readonly serialConsistency: CassandraSerialConsistencyName;

  private constructor(
    private readonly session: Session,
    options: CassandraStoreOptions,
    consistency: CassandraConsistencyName,
    serialConsistency: CassandraSerialConsistencyName,
  ) {
    this.keyspace = session.ks;
    this.consistency = consistency;
    this.serialConsistency = serialConsistency;
    const chunkBytes = options.traceChunkBytes ?? MAX_TRACE_CHUNK_BYTES;
    this.chamberMetadata = new CassandraChamberMetadata(session, options.observationRetentionSeconds ?? 14 * DAY);
    this.tracePool = new TraceBufferPool(options.tracePoolBytes ?? DEFAULT_TRACE_POOL_BYTES);
    this.traces = new CassandraTraces(session, chunkBytes, options.traceWriteConcurrency ?? 8, options.traceReadConcurrency ?? 4, this.tracePool);
    const log = new CassandraChamberLog(session, options.runRetentionSeconds ?? 90 * DAY);
    this.chamberState = log;
    this.alarms = log;
    this.outbox = new CassandraOutbox(session);
    this.uchart = new CassandraUChart(session, log);
    this.strategies = new CassandraStrategies(session);
    this.monitorState = new CassandraMonitorState(session);
  }

  /**
   * Connects, creates the keyspace if allowed, runs pending migrations (safe with concurrent
   * starters) and returns the store.
   * @throws StoreUnavailableError when the cluster cannot be reached.
   * @throws MigrationError when the schema cannot be brought up to date.
   */
  static async connect(options: CassandraStoreOptions): Promise<CassandraStore> {
    const keyspace = options.keyspace ?? 'defense_system';
    if (!KEYSPACE_PATTERN.test(keyspace)) throw new Error(`invalid keyspace "${keyspace}" (lower-case letters, digits, _; at most 48)`);
    if (options.contactPoints.length === 0) throw new Error('no Cassandra contact points');
    for (const [k, v] of Object.entries({ runRetentionSeconds: options.runRetentionSeconds, observationRetentionSeconds: options.observationRetentionSeconds })) {
      if (v !== undefined && !(Number.isInteger(v) && v >= 0 && v <= 630_720_000)) throw new Error(`${k} must be an integer number of seconds in 0..630720000`);
    }
    const maxRequestsInFlight = options.maxRequestsInFlight ?? DEFAULT_MAX_REQUESTS_IN_FLIGHT;
    if (!(Number.isInteger(maxRequestsInFlight) && maxRequestsInFlight >= 1 && maxRequestsInFlight <= 32_768))
      throw new Error(`maxRequestsInFlight must be an integer in 1..32768, got ${maxRequestsInFlight}`);
    const consistency = options.consistency ?? 'QUORUM';
    const serialConsistency = options.serialConsistency ?? defaultSerialConsistency(consistency);
    const client = new Client({
      contactPoints: [...options.contactPoints],
      localDataCenter: options.localDataCenter,
      ...(options.credentials ? { authProvider: new auth.PlainTextAuthProvider(options.credentials.username, options.credentials.password) } : {}),
      ...(options.tls || options.sslOptions
        ? { sslOptions: { ...(options.tls ? cassandraSslOptions(options.tls) : {}), rejectUnauthorized: true, ...options.sslOptions } }
        : {}),
      socketOptions: { readTimeout: options.requestTimeoutMs ?? 12_000, connectTimeout: 5_000 },
      queryOptions: { consistency: consistencyCode(consistency), serialConsistency: consistencyCode(serialConsistency), prepare: true },
    });
    try {
      await client.connect();
    } catch (err) {
      await shutdownAfterFailure(client, err);
      throw mapCassandraError(err, 'connect', 'read');
    }
    const session = new Session(client, keyspace, consistencyCode(consistency), consistencyCode(serialConsistency), options.observer, new RequestGate(maxRequestsInFlight));
    try {
      await session.op('migrate', 'write', () =>
        migrateCassandra(client, {
          keyspace,
          createKeyspace: options.createKeyspace ?? true,
          replication: options.replication ?? { class: 'SimpleStrategy', replication_factor: 1 },
          owner: options.migrationOwner ?? `${hostname()}:${process.pid}`,
          staleAfterMs: options.migrationStaleAfterMs ?? 120_000,
          consistency: consistencyCode(consistency),
          serialConsistency: consistencyCode(serialConsistency),
        }),
      );
    } catch (err) {
      await shutdownAfterFailure(client, err);
      throw err;
    }
    return new CassandraStore(session, options, consistency, serialConsistency);
  }

  /** The driver client, for maintenance and tests. */
  get client(): Client {
    return this.session.client;
  }

  /** What the trace buffer pool holds and has done (as the SQLite stores tell it). */
  async tracePoolStats(): Promise<TraceBufferPoolStats> {
    return this.tracePool.stats();
  }

  async close(): Promise<void> {
    if (this.session.closed) return;
    this.session.closed = true;
    this.tracePool.clear();
    await this.session.client.shutdown();
  }
}
