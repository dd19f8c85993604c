import { createHash } from 'node:crypto';
import type Database from 'better-sqlite3';
import { MigrationError } from '../migration-error';

/** A schema change of the SQLite store (run inside one `BEGIN IMMEDIATE` transaction). */
export interface SqliteMigration {
  readonly id: number;
  readonly name: string;
  readonly sql: string;
}

/** The schema, in order. Never edit an applied migration (its checksum is verified at open); append one. */
export const SQLITE_MIGRATIONS: readonly SqliteMigration[] = [
  {
    id: 1,
    name: 'initial schema',
    sql: `
      CREATE TABLE chamber_metadata (
        tool_id TEXT NOT NULL, chamber_id TEXT NOT NULL,
        svid_count INTEGER, collection_freq_hz REAL, context_duration_seconds INTEGER,
        weight INTEGER, last_updated INTEGER, source TEXT, observed_runs INTEGER,
        PRIMARY KEY (tool_id, chamber_id)) WITHOUT ROWID;
      CREATE TABLE run_observations (
        tool_id TEXT NOT NULL, chamber_id TEXT NOT NULL, observed_at INTEGER NOT NULL, run_id TEXT NOT NULL,
        svid_count INTEGER, collection_freq_hz REAL, context_duration_seconds REAL,
        PRIMARY KEY (tool_id, chamber_id, observed_at, run_id)) WITHOUT ROWID;
      CREATE INDEX run_observations_by_time ON run_observations (observed_at);
      CREATE TABLE trace_manifests (
        tool_id TEXT NOT NULL, chamber_id TEXT NOT NULL, run_id TEXT NOT NULL, manifest TEXT,
        PRIMARY KEY (tool_id, chamber_id, run_id)) WITHOUT ROWID;
      CREATE TABLE trace_chunks (
        tool_id TEXT NOT NULL, chamber_id TEXT NOT NULL, run_id TEXT NOT NULL,
        series_kind INTEGER NOT NULL, series TEXT NOT NULL, chunk INTEGER NOT NULL,
        write_id TEXT, byte_length INTEGER, crc32 INTEGER, data BLOB,
        PRIMARY KEY (tool_id, chamber_id, run_id, series_kind, series, chunk));
      CREATE TABLE chamber_state (
        tool_id TEXT NOT NULL, chamber_id TEXT NOT NULL,
        owner_epoch INTEGER NOT NULL, hwm INTEGER NOT NULL, owner_id TEXT NOT NULL, state_updated_at INTEGER NOT NULL,
        hold_id TEXT, hold TEXT,
        PRIMARY KEY (tool_id, chamber_id)) WITHOUT ROWID;
      CREATE TABLE uchart_runs (
        tool_id TEXT NOT NULL, chamber_id TEXT NOT NULL, seq INTEGER NOT NULL,
        run_id TEXT, epoch INTEGER, committed_at INTEGER, recipe TEXT, body BLOB,
        PRIMARY KEY (tool_id, chamber_id, seq));
      CREATE TABLE alarms (
        tool_id TEXT NOT NULL, chamber_id TEXT NOT NULL, seq INTEGER NOT NULL,
        rule_id TEXT NOT NULL, indicator_key TEXT NOT NULL,
        run_id TEXT, epoch INTEGER, committed_at INTEGER, recipe TEXT, schema_version INTEGER, body TEXT,
        PRIMARY KEY (tool_id, chamber_id, seq, rule_id, indicator_key));
      CREATE TABLE limit_sets (
        tool_id TEXT NOT NULL, chamber_id TEXT NOT NULL, indicator_key TEXT NOT NULL, version INTEGER NOT NULL,
        schema_version INTEGER, chart_type TEXT, center REAL, sigma REAL, lcl REAL, ucl REAL,
        params TEXT, baseline TEXT, created_at INTEGER,
        PRIMARY KEY (tool_id, chamber_id, indicator_key, version));
      CREATE TABLE strategies (
        scope TEXT NOT NULL, version INTEGER NOT NULL,
        schema_version INTEGER, document TEXT, created_at INTEGER, author TEXT,
        PRIMARY KEY (scope, version));
    `,
  },
  {
    id: 2,
    name: 'applied run ids and the event outbox',
    // Run ids applied per chamber (a replay of any age is skipped by id), filled from the runs
    // already stored (the first sequence of a run applied twice before this migration); the outbox
    // of events to publish and the published-through mark (nothing is pending on an existing file).
    sql: `
      CREATE TABLE applied_runs (
        tool_id TEXT NOT NULL, chamber_id TEXT NOT NULL, run_id TEXT NOT NULL, seq INTEGER NOT NULL,
        PRIMARY KEY (tool_id, chamber_id, run_id)) WITHOUT ROWID;
      INSERT INTO applied_runs (tool_id, chamber_id, run_id, seq)
        SELECT tool_id, chamber_id, run_id, MIN(seq) FROM uchart_runs WHERE run_id IS NOT NULL GROUP BY tool_id, chamber_id, run_id;
      CREATE TABLE outbox (
        tool_id TEXT NOT NULL, chamber_id TEXT NOT NULL, seq INTEGER NOT NULL, idx INTEGER NOT NULL,
        subject TEXT NOT NULL, msg_id TEXT NOT NULL, payload TEXT NOT NULL,
        PRIMARY KEY (tool_id, chamber_id, seq, idx)) WITHOUT ROWID;
      ALTER TABLE chamber_state ADD COLUMN published_through INTEGER NOT NULL DEFAULT 0;
    `,
  },
  {
    id: 3,
    name: 'the notification stream a mark counts in',
    // The identity of the stream the high-water mark counts in and the offset of its sequences
    // (ADR 0007). Existing marks have none: their owner adopts the current stream once.
    sql: `
      ALTER TABLE chamber_state ADD COLUMN stream_id TEXT;
      ALTER TABLE chamber_state ADD COLUMN stream_offset INTEGER NOT NULL DEFAULT 0;
    `,
  },
  {
    id: 4,
    name: 'the chamber monitor state per recipe',
    // One row per chamber and recipe, replaced by each commit that carries a state (issue 48).
    // Chambers monitored before it have none: their first run rebuilds it from their history.
    sql: `
      CREATE TABLE monitor_state (
        tool_id TEXT NOT NULL, chamber_id TEXT NOT NULL, recipe TEXT NOT NULL,
        seq INTEGER NOT NULL, run_id TEXT NOT NULL, committed_at INTEGER NOT NULL,
        schema_version INTEGER NOT NULL, body TEXT NOT NULL,
        PRIMARY KEY (tool_id, chamber_id, recipe)) WITHOUT ROWID;
    `,
  },
  {
    id: 5,
    name: 'the chamber memory',
    // One row per chamber, replaced by each commit that carries one (issue 48: the alarm flags of its
    // newest judged runs). Chambers judged before it have none: their first run rebuilds it from
    // their history.
    sql: `
      CREATE TABLE chamber_memory (
        tool_id TEXT NOT NULL, chamber_id TEXT NOT NULL,
        seq INTEGER NOT NULL, run_id TEXT NOT NULL, committed_at INTEGER NOT NULL,
        schema_version INTEGER NOT NULL, body TEXT NOT NULL,
        PRIMARY KEY (tool_id, chamber_id)) WITHOUT ROWID;
    `,
  },
  {
    id: 6,
    name: 'the chamber monitor models',
    // One row per chamber, recipe and model version, written by the commit of the run that fitted it
    // (issue 48). Models fitted before it are limit sets: the first run that uses one stores it here.
    sql: `
      CREATE TABLE monitor_model (
        tool_id TEXT NOT NULL, chamber_id TEXT NOT NULL, recipe TEXT NOT NULL, version INTEGER NOT NULL,
        seq INTEGER NOT NULL, run_id TEXT NOT NULL, committed_at INTEGER NOT NULL,
        schema_version INTEGER NOT NULL, body TEXT NOT NULL,
        PRIMARY KEY (tool_id, chamber_id, recipe, version)) WITHOUT ROWID;
    `,
  },
  {
    id: 7,
    name: 'the chamber equipment events',
    // One row per equipment event (issue 49, ADR 0019), at the stream sequence it was committed at with
    // the monitor states it changed (its run row in uchart_runs has no points).
    sql: `
      CREATE TABLE chamber_events (
        tool_id TEXT NOT NULL, chamber_id TEXT NOT NULL, seq INTEGER NOT NULL,
        event_id TEXT NOT NULL, kind TEXT NOT NULL, at INTEGER NOT NULL,
        run_id TEXT NOT NULL, committed_at INTEGER NOT NULL,
        schema_version INTEGER NOT NULL, body TEXT NOT NULL,
        PRIMARY KEY (tool_id, chamber_id, seq)) WITHOUT ROWID;
    `,
  },
];

export function sqliteMigrationChecksum(m: SqliteMigration): string {
  return createHash('sha256').update(m.sql.replace(/\s+/g, ' ').trim()).digest('hex');
}

/**
 * Applies pending migrations in one `BEGIN IMMEDIATE` transaction: concurrent openers of the same
 * file queue on SQLite's write lock, and the second finds everything applied.
 * @throws MigrationError for a changed or unknown recorded migration.
 */
export function migrateSqlite(db: Database.Database, migrations: readonly SqliteMigration[] = SQLITE_MIGRATIONS): number[] {
  const run = db.transaction((): number[] => {
    db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (id INTEGER PRIMARY KEY, name TEXT NOT NULL, checksum TEXT NOT NULL, applied_at INTEGER NOT NULL)');
    const recorded = new Map(
      (db.prepare('SELECT id, checksum FROM schema_migrations').all() as { id: number; checksum: string }[]).map((r) => [r.id, r.checksum]),
    );
    const known = new Set(migrations.map((m) => m.id));
    const unknown = [...recorded.keys()].filter((id) => !known.has(id));
    if (unknown.length > 0) throw new MigrationError(`database has migrations ${unknown.join(', ')} this release does not know (migrated by a newer release?)`);
    const applied: number[] = [];
    for (const m of migrations) {
      const checksum = sqliteMigrationChecksum(m);
      const have = recorded.get(m.id);
      if (have !== undefined) {
        if (have !== checksum) throw new MigrationError(`migration ${m.id} (${m.name}) was applied with different statements (checksum mismatch)`);
        continue;
      }
      db.exec(m.sql);
      db.prepare('INSERT INTO schema_migrations (id, name, checksum, applied_at) VALUES (?, ?, ?, ?)').run(m.id, m.name, checksum, Date.now());
      applied.push(m.id);
    }
    return applied;
  });
  return run.immediate();
}
