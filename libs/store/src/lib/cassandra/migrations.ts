import { createHash } from 'node:crypto';
import type { Client } from 'cassandra-driver';
import { MigrationError } from '../migration-error';

/**
 * A schema change. Statements must be idempotent (`IF NOT EXISTS`), because a migration whose
 * claimant died half-way is re-run by the next process. `{ks}` is replaced by the keyspace.
 */
export interface CassandraMigration {
  readonly id: number;
  readonly name: string;
  readonly statements: readonly string[];
}

/**
 * The schema, in order. Never edit an applied migration (its checksum is verified at start);
 * append a new one.
 */
export const CASSANDRA_MIGRATIONS: readonly CassandraMigration[] = [
  {
    id: 1,
    name: 'initial schema',
    statements: [
      // Seed schema; collection_freq_hz is a double (observed rates such as 2.5 Hz occur).
      `CREATE TABLE IF NOT EXISTS {ks}.chamber_metadata (
        tool_id text, chamber_id text,
        svid_count int, collection_freq_hz double, context_duration_seconds int,
        weight bigint, last_updated timestamp, source text, observed_runs int,
        PRIMARY KEY ((tool_id, chamber_id)))`,
      `CREATE TABLE IF NOT EXISTS {ks}.run_observations (
        tool_id text, chamber_id text, observed_at timestamp, run_id text,
        svid_count int, collection_freq_hz double, context_duration_seconds double,
        PRIMARY KEY ((tool_id, chamber_id), observed_at, run_id))
        WITH CLUSTERING ORDER BY (observed_at DESC, run_id ASC)`,
      // One partition per run: chunk rows plus the manifest as a static column (written last).
      // Noisy float samples barely compress; without LZ4 reads and writes cost less CPU.
      `CREATE TABLE IF NOT EXISTS {ks}.trace_chunks (
        tool_id text, chamber_id text, run_id text,
        series_kind tinyint, series text, chunk int,
        manifest text STATIC,
        write_id text, byte_length int, crc32 int, data blob,
        PRIMARY KEY ((tool_id, chamber_id, run_id), series_kind, series, chunk))
        WITH compression = {'enabled': 'false'}`,
      // One partition per chamber: ownership (static) + committed runs (kind 0) + alarms (kind 1).
      // Every write to this table is a lightweight transaction (see README, "Fencing").
      `CREATE TABLE IF NOT EXISTS {ks}.chamber_log (
        tool_id text, chamber_id text, kind tinyint, seq bigint, item text,
        owner_epoch bigint STATIC, hwm bigint STATIC, owner_id text STATIC, state_updated_at timestamp STATIC,
        hold_id text STATIC, hold text STATIC,
        run_id text, epoch bigint, committed_at timestamp, recipe text, schema_version int, body blob,
        PRIMARY KEY ((tool_id, chamber_id), kind, seq, item))
        WITH CLUSTERING ORDER BY (kind ASC, seq DESC, item ASC)`,
      `CREATE TABLE IF NOT EXISTS {ks}.limit_sets (
        tool_id text, chamber_id text, indicator_key text, version int,
        schema_version int, chart_type text, center double, sigma double, lcl double, ucl double,
        params text, baseline text, created_at timestamp,
        PRIMARY KEY ((tool_id, chamber_id), indicator_key, version))
        WITH CLUSTERING ORDER BY (indicator_key ASC, version DESC)`,
      `CREATE TABLE IF NOT EXISTS {ks}.strategies (
        scope text, version int, schema_version int, document text, created_at timestamp, author text,
        PRIMARY KEY ((scope), version))
        WITH CLUSTERING ORDER BY (version DESC)`,
    ],
  },
  {
    id: 2,
    name: 'applied run ids and the event outbox',
    // chamber_log gains kind 2 rows (seq 0, item = run id, applied_seq: the run ids a chamber applied)
    // and kind 3 rows (seq = run, item = index: subject, msg_id, body = payload: the outbox), the
    // published-through mark, and run_index_hwm: the mark through which kind 2 rows are complete
    // (runs committed before this migration are indexed at the next claim; see README).
    statements: [
      `ALTER TABLE {ks}.chamber_log ADD IF NOT EXISTS published_through bigint STATIC`,
      `ALTER TABLE {ks}.chamber_log ADD IF NOT EXISTS run_index_hwm bigint STATIC`,
      `ALTER TABLE {ks}.chamber_log ADD IF NOT EXISTS applied_seq bigint`,
      `ALTER TABLE {ks}.chamber_log ADD IF NOT EXISTS subject text`,
      `ALTER TABLE {ks}.chamber_log ADD IF NOT EXISTS msg_id text`,
    ],
  },
  {
    id: 3,
    name: 'the notification stream a mark counts in',
    // The identity of the stream the high-water mark counts in and the offset of its sequences
    // (ADR 0007); NULL on existing chambers until their owner adopts the current stream.
    statements: [
      `ALTER TABLE {ks}.chamber_log ADD IF NOT EXISTS stream_id text STATIC`,
      `ALTER TABLE {ks}.chamber_log ADD IF NOT EXISTS stream_offset bigint STATIC`,
    ],
  },
  {
    id: 4,
    name: 'the chamber monitor state per recipe',
    // chamber_log gains kind 4 rows (seq 0, item = recipe: schema_version, body = the state's JSON,
    // run_id, committed_at and state_seq, the sequence of the run whose commit wrote it; issue 48).
    // The chamber memory's kind 5 rows (seq 0, item '') use the same columns: no migration of their own.
    statements: [`ALTER TABLE {ks}.chamber_log ADD IF NOT EXISTS state_seq bigint`],
  },
];

/** SHA-256 of a migration's statements (whitespace-normalized), recorded when applied. */
export function migrationChecksum(m: CassandraMigration): string {
  const h = createHash('sha256');
  for (const s of m.statements) h.update(s.replace(/\s+/g, ' ').trim()).update('\n');
  return h.digest('hex');
}

export interface MigrateOptions {
  readonly keyspace: string;
  readonly createKeyspace: boolean;
  readonly replication: Readonly<Record<string, string | number>>;
  readonly owner: string;
  readonly staleAfterMs: number;
  readonly consistency: number;
  readonly serialConsistency: number;
  readonly migrations?: readonly CassandraMigration[];
  /** Overall deadline for waiting on other processes (default 5 min). */
  readonly timeoutMs?: number;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function replicationCql(r: Readonly<Record<string, string | number>>): string {
  return `{${Object.entries(r)
    .map(([k, v]) => `'${k.replace(/'/g, "''")}': ${typeof v === 'number' ? v : `'${String(v).replace(/'/g, "''")}'`}`)
    .join(', ')}}`;
}

/** `Metadata.checkSchemaAgreement` exists in cassandra-driver 4.x but is missing from its typings. */
interface SchemaAgreement {
  checkSchemaAgreement(): Promise<boolean>;
}

async function awaitSchemaAgreement(client: Client, deadline: number): Promise<void> {
  const metadata = client.metadata as unknown as SchemaAgreement;
  for (;;) {
    if (await metadata.checkSchemaAgreement()) return;
    if (Date.now() > deadline) throw new MigrationError('Cassandra nodes did not agree on the schema in time');
    await sleep(200);
  }
}

/**
 * Brings the keyspace to the latest schema; safe when several processes start at once.
 *
 * The keyspace and `schema_migrations` table are created with IF NOT EXISTS (followed by a schema
 * agreement wait). Each migration is then claimed with a lightweight transaction
 * (`INSERT ... IF NOT EXISTS` on its id): the winner runs its statements, waits for schema
 * agreement and marks it done (`UPDATE ... IF owner = me`); the others poll until it is done. A claim
 * older than `staleAfterMs` is taken over (LWT on the old owner), which is safe because the
 * statements are idempotent. A recorded migration whose checksum differs from this code's is a
 * MigrationError, as is a recorded migration id this code does not know (a newer release migrated).
 */
export async function migrateCassandra(client: Client, opts: MigrateOptions): Promise<{ applied: number[] }> {
  const ks = opts.keyspace;
  const migrations = opts.migrations ?? CASSANDRA_MIGRATIONS;
  const deadline = Date.now() + (opts.timeoutMs ?? 300_000);
  const q = { prepare: true, consistency: opts.consistency, serialConsistency: opts.serialConsistency };
  const serialRead = { prepare: true, consistency: opts.serialConsistency };
  if (opts.createKeyspace) {
    await client.execute(`CREATE KEYSPACE IF NOT EXISTS ${ks} WITH replication = ${replicationCql(opts.replication)}`);
  }
  await client.execute(
    `CREATE TABLE IF NOT EXISTS ${ks}.schema_migrations (id int PRIMARY KEY, name text, checksum text, state text, owner text, claimed_at timestamp, applied_at timestamp)`,
  );
  await awaitSchemaAgreement(client, deadline);

  const known = new Set(migrations.map((m) => m.id));
  const recorded = await client.execute(`SELECT id FROM ${ks}.schema_migrations`, [], { consistency: opts.consistency });
  const unknown = recorded.rows.map((r) => r.get('id') as number).filter((id) => !known.has(id));
  if (unknown.length > 0) {
    throw new MigrationError(`keyspace ${ks} has migrations ${unknown.join(', ')} this release does not know (migrated by a newer release?)`);
  }

  const applied: number[] = [];
  for (const m of migrations) {
    const checksum = migrationChecksum(m);
    for (;;) {
      const row = (await client.execute(`SELECT state, checksum, owner, claimed_at FROM ${ks}.schema_migrations WHERE id = ?`, [m.id], serialRead)).first();
      if (row && row.get('checksum') !== checksum) {
        throw new MigrationError(`migration ${m.id} (${m.name}) in keyspace ${ks} was applied with different statements (checksum mismatch)`);
      }
      if (row?.get('state') === 'done') break;
      let claimed = false;
      if (!row) {
        const r = await client.execute(
          `INSERT INTO ${ks}.schema_migrations (id, name, checksum, state, owner, claimed_at) VALUES (?, ?, ?, 'running', ?, ?) IF NOT EXISTS`,
          [m.id, m.name, checksum, opts.owner, new Date()],
          q,
        );
        claimed = r.wasApplied();
      } else {
        const claimedAt = row.get('claimed_at') as Date | null;
        if (!claimedAt || Date.now() - claimedAt.getTime() > opts.staleAfterMs) {
          const r = await client.execute(
            `UPDATE ${ks}.schema_migrations SET owner = ?, claimed_at = ? WHERE id = ? IF state = 'running' AND owner = ?`,
            [opts.owner, new Date(), m.id, row.get('owner') as string],
            q,
          );
          claimed = r.wasApplied();
        }
      }
      if (!claimed) {
        if (Date.now() > deadline) throw new MigrationError(`timed out waiting for migration ${m.id} (${m.name}) claimed by ${String(row?.get('owner'))}`);
        await sleep(250);
        continue;
      }
      for (const statement of m.statements) await client.execute(statement.replace(/\{ks\}/g, ks));
      await awaitSchemaAgreement(client, deadline);
      const done = await client.execute(
        `UPDATE ${ks}.schema_migrations SET state = 'done', applied_at = ? WHERE id = ? IF owner = ?`,
        [new Date(), m.id, opts.owner],
        q,
      );
      if (done.wasApplied()) {
        applied.push(m.id);
        break;
      }
      // Our claim was taken over as stale; loop to see the new owner's progress.
    }
  }
  return { applied };
}
