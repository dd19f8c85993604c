import type { DefenderStore } from '@defender/contracts';
import { CassandraStore } from './cassandra/cassandra-store';
import type { CassandraStoreOptions } from './cassandra/options';
import type { SqliteStoreOptions } from './sqlite/sqlite-store';
import { ThreadedSqliteStore } from './sqlite/threaded-sqlite-store';

/** Which store to open: Cassandra (production) or SQLite (one machine). */
export type StoreConfig =
  | { readonly kind: 'cassandra'; readonly cassandra: CassandraStoreOptions }
  | { readonly kind: 'sqlite'; readonly sqlite: SqliteStoreOptions };

/**
 * Opens the configured store (connect + migrations). SQLite runs on its own thread
 * ({@link ThreadedSqliteStore}), so the caller's event loop never waits on it.
 * @throws StoreUnavailableError / MigrationError as the adapters do.
 */
export function openStore(config: StoreConfig): Promise<DefenderStore> {
  return config.kind === 'cassandra' ? CassandraStore.connect(config.cassandra) : ThreadedSqliteStore.open(config.sqlite);
}
