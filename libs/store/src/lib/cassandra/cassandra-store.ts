import { hostname } from 'node:os';
import { auth, Client } from 'cassandra-driver';
import {
  type AlarmRepository,
  type ChamberMetadataRepository,
  type ChamberStateRepository,
  type DefenderStore,
  type OutboxRepository,
  type StrategyRepository,
  type MonitorStateRepository,
  type ChamberMemoryRepository,
  type MonitorModelRepository,
  type ChamberEventRepository,
  type TraceRepository,
  type UChartRepository,
} from '@defender/contracts';
import { DEFAULT_TRACE_POOL_BYTES, TraceBufferPool, type TraceBufferPoolStats } from '../codec/trace-buffer-pool';
import { MAX_TRACE_CHUNK_BYTES } from '../codec/trace-codec';
import { mapCassandraError } from './errors';
import { migrateCassandra } from './migrations';
import { CassandraChamberMemory } from './cassandra-chamber-memory';
import { CassandraMonitorModels } from './cassandra-monitor-model';
import { CassandraChamberEvents } from './cassandra-chamber-events';
import { CassandraMonitorState } from './cassandra-monitor-state';
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
import { Session, DAY, DEFAULT_MAX_REQUESTS_IN_FLIGHT } from './cassandra-session';
import { CassandraChamberMetadata } from './cassandra-chamber-metadata';
import { CassandraTraces } from './cassandra-traces';
import { CassandraChamberLog, CassandraChamberReads } from './cassandra-chamber-log';
import { CassandraOutbox } from './cassandra-outbox';
import { CassandraUChart } from './cassandra-uchart';
import { CassandraStrategies } from './cassandra-strategies';

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
  readonly monitorModels: MonitorModelRepository;
  readonly chamberMemory: ChamberMemoryRepository;
  readonly chamberEvents: ChamberEventRepository;
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
    this.chamberState = new CassandraChamberLog(session, options.runRetentionSeconds ?? 90 * DAY);
    const reads = new CassandraChamberReads(session);
    this.alarms = reads;
    this.outbox = new CassandraOutbox(session);
    this.uchart = new CassandraUChart(session, reads);
    this.strategies = new CassandraStrategies(session);
    this.monitorState = new CassandraMonitorState(session);
    this.monitorModels = new CassandraMonitorModels(session);
    this.chamberMemory = new CassandraChamberMemory(session);
    this.chamberEvents = new CassandraChamberEvents(session);
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
