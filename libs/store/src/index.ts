export { CassandraStore } from './lib/cassandra/cassandra-store';
export { mapCassandraError } from './lib/cassandra/errors';
export { CASSANDRA_MIGRATIONS, migrationChecksum, type CassandraMigration } from './lib/cassandra/migrations';
export {
  CASSANDRA_CONSISTENCIES,
  cassandraSslOptions,
  parseCassandraConsistency,
  type CassandraTlsFiles,
  type CassandraConsistencyName,
  type CassandraSerialConsistencyName,
  type CassandraStoreOptions,
} from './lib/cassandra/options';
export { SqliteStore, mapSqliteError, type SqliteStoreOptions } from './lib/sqlite/sqlite-store';
export { STORE_THREAD_NAME, ThreadedSqliteStore } from './lib/sqlite/threaded-sqlite-store';
export { SQLITE_MIGRATIONS, type SqliteMigration } from './lib/sqlite/migrations';
export { openStore, type StoreConfig } from './lib/open-store';
export { MigrationError } from './lib/migration-error';
export { UChartHistoryCache, type UChartCacheStats, type UChartHistoryCacheOptions } from './lib/cache/uchart-history-cache';
export { ChamberWeightCache, TtlCache, type Clock } from './lib/weights/ttl-cache';
export type { StoreObserver, StoreOperation } from './lib/observer';
export { decodePointSet, encodePointSet, POINT_SET_SCHEMA_VERSION } from './lib/codec/point-set-codec';
export { MAX_TRACE_CHUNK_BYTES, releaseTraceMemory, TRACE_SCHEMA_VERSION } from './lib/codec/trace-codec';
export { DEFAULT_TRACE_POOL_BYTES, TraceBufferPool, traceBufferClass, type TraceBufferPoolStats } from './lib/codec/trace-buffer-pool';
