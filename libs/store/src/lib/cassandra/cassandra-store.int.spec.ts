import { randomBytes } from 'node:crypto';
import { Client, types } from 'cassandra-driver';
import { StoreUnavailableError, type DefenderStore } from '@defender/contracts';
import { describeWithInfra, freePort, testCassandra } from '@defender/infra-harness';
import { commit, freshChamber } from '../../testing/fixtures';
import { describeStoreContract, type StoreCorruptor } from '../../testing/store-contract';
import { MigrationError } from '../migration-error';
import { CassandraStore } from './cassandra-store';
import { encodePointSet } from '../codec/point-set-codec';
import { MAX_TRACE_CHUNK_BYTES } from '../codec/trace-codec';
import { CASSANDRA_MIGRATIONS, migrateCassandra, migrationChecksum } from './migrations';
import type { CassandraStoreOptions } from './options';

// Every keyspace of this file starts with this prefix (other test files use their own).
const PREFIX = `store_it_${randomBytes(3).toString('hex')}`;
let keyspaces = 0;
const newKeyspace = (): string => `${PREFIX}_${keyspaces++}`;

function options(keyspace: string, over: Partial<CassandraStoreOptions> = {}): CassandraStoreOptions {
  const c = testCassandra();
  return { contactPoints: c.contactPoints, localDataCenter: c.localDataCenter, keyspace, requestTimeoutMs: 30_000, ...over };
}

function cs(store: DefenderStore): CassandraStore {
  return store as CassandraStore;
}

// Writes to LWT-managed rows need a timestamp above the Paxos ballot's to take effect.
const later = (): number => (Date.now() + 5_000) * 1000;

const corrupt: StoreCorruptor = {
  async setLimitCenterNaN(store, c, key, version) {
    const s = cs(store);
    await s.client.execute(
      `UPDATE ${s.keyspace}.limit_sets USING TIMESTAMP ? SET center = ? WHERE tool_id = ? AND chamber_id = ? AND indicator_key = ? AND version = ?`,
      [later(), NaN, c.toolId, c.chamberId, key, version],
      { prepare: true },
    );
  },
  async setLimitParams(store, c, key, version, params) {
    const s = cs(store);
    await s.client.execute(
      `UPDATE ${s.keyspace}.limit_sets USING TIMESTAMP ? SET params = ? WHERE tool_id = ? AND chamber_id = ? AND indicator_key = ? AND version = ?`,
      [later(), params, c.toolId, c.chamberId, key, version],
      { prepare: true },
    );
  },
  async setRunBody(store, c, seq, body) {
    const s = cs(store);
    await s.client.execute(
      `UPDATE ${s.keyspace}.chamber_log USING TIMESTAMP ? SET body = ? WHERE tool_id = ? AND chamber_id = ? AND kind = 0 AND seq = ? AND item = ''`,
      [later(), body, c.toolId, c.chamberId, seq],
      { prepare: true },
    );
  },
  async setStrategySchemaVersion(store, scope, version, schemaVersion) {
    const s = cs(store);
    await s.client.execute(`UPDATE ${s.keyspace}.strategies USING TIMESTAMP ? SET schema_version = ? WHERE scope = ? AND version = ?`, [later(), schemaVersion, scope, version], {
      prepare: true,
    });
  },
  async setAlarmBody(store, c, seq, ruleId, indicatorKey, body) {
    const s = cs(store);
    await s.client.execute(
      `UPDATE ${s.keyspace}.chamber_log USING TIMESTAMP ? SET body = ? WHERE tool_id = ? AND chamber_id = ? AND kind = 1 AND seq = ? AND item = ?`,
      [later(), Buffer.from(body, 'utf8'), c.toolId, c.chamberId, seq, `${ruleId}\u001f${indicatorKey}`],
      { prepare: true },
    );
  },
  async deleteTraceChunk(store, r, kind, series, chunk) {
    const s = cs(store);
    await s.client.execute(
      `DELETE FROM ${s.keyspace}.trace_chunks WHERE tool_id = ? AND chamber_id = ? AND run_id = ? AND series_kind = ? AND series = ? AND chunk = ?`,
      [r.toolId, r.chamberId, r.runId, kind, series, chunk],
      { prepare: true },
    );
  },
  async setTraceChunkData(store, r, kind, series, chunk, data) {
    const s = cs(store);
    await s.client.execute(
      `UPDATE ${s.keyspace}.trace_chunks SET data = ? WHERE tool_id = ? AND chamber_id = ? AND run_id = ? AND series_kind = ? AND series = ? AND chunk = ?`,
      [data, r.toolId, r.chamberId, r.runId, kind, series, chunk],
      { prepare: true },
    );
  },
  async setTraceChunkWriteId(store, r, kind, series, chunk, writeId) {
    const s = cs(store);
    await s.client.execute(
      `UPDATE ${s.keyspace}.trace_chunks SET write_id = ? WHERE tool_id = ? AND chamber_id = ? AND run_id = ? AND series_kind = ? AND series = ? AND chunk = ?`,
      [writeId, r.toolId, r.chamberId, r.runId, kind, series, chunk],
      { prepare: true },
    );
  },
  async setTraceManifest(store, r, manifest) {
    const s = cs(store);
    await s.client.execute(`UPDATE ${s.keyspace}.trace_chunks SET manifest = ? WHERE tool_id = ? AND chamber_id = ? AND run_id = ?`, [manifest, r.toolId, r.chamberId, r.runId], {
      prepare: true,
    });
  },
};

describeWithInfra(['cassandra'], 'Cassandra store', () => {
  let admin: Client;

  beforeAll(async () => {
    const c = testCassandra();
    admin = new Client({ contactPoints: c.contactPoints, localDataCenter: c.localDataCenter, socketOptions: { readTimeout: 60_000 } });
    await admin.connect();
  });

  afterAll(async () => {
    for (let i = 0; i < keyspaces; i++) await admin.execute(`DROP KEYSPACE IF EXISTS ${PREFIX}_${i}`);
    await admin.shutdown();
  }, 120_000);

  describeStoreContract('Cassandra', () => ({
    openFresh: () => CassandraStore.connect(options(newKeyspace())),
    openPeer: (store) => CassandraStore.connect(options(cs(store).keyspace)),
    corrupt,
    traceChunkBytes: MAX_TRACE_CHUNK_BYTES,
  }));

  describe('migrations', () => {
    it('several processes starting at once on a new keyspace: all succeed, each migration is applied once', async () => {
      const keyspace = newKeyspace();
      const stores = await Promise.all(Array.from({ length: 4 }, (_, i) => CassandraStore.connect(options(keyspace, { migrationOwner: `starter-${i}` }))));
      try {
        const rows = (await admin.execute(`SELECT id, state, owner FROM ${keyspace}.schema_migrations`)).rows;
        // Rows come in token order (the id is the partition key), not by id.
        expect(rows.map((r) => [r.get('id') as number, r.get('state')]).sort((a, b) => (a[0] as number) - (b[0] as number))).toEqual(CASSANDRA_MIGRATIONS.map((m) => [m.id, 'done']));
        expect(rows[0]?.get('owner')).toMatch(/^starter-[0-3]$/);
        // every starter can use the schema
        const ch = freshChamber();
        const outcomes = await Promise.all(stores.map((s) => s.chamberState.commitRun(commit(ch, 1, 1))));
        expect(outcomes.filter((o) => o.outcome === 'applied')).toHaveLength(1);
      } finally {
        for (const s of stores) await s.close();
      }
    }, 180_000);

    it('refuses a keyspace whose recorded migration differs from this release', async () => {
      const keyspace = newKeyspace();
      await (await CassandraStore.connect(options(keyspace))).close();
      await admin.execute(`UPDATE ${keyspace}.schema_migrations SET checksum = 'edited' WHERE id = 1`);
      await expect(CassandraStore.connect(options(keyspace))).rejects.toThrow(MigrationError);
    }, 120_000);

    it('takes over a migration whose claimant died', async () => {
      const keyspace = newKeyspace();
      await admin.execute(`CREATE KEYSPACE ${keyspace} WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}`);
      await admin.execute(
        `CREATE TABLE ${keyspace}.schema_migrations (id int PRIMARY KEY, name text, checksum text, state text, owner text, claimed_at timestamp, applied_at timestamp)`,
      );
      const m = CASSANDRA_MIGRATIONS[0]!;
      await admin.execute(`INSERT INTO ${keyspace}.schema_migrations (id, name, checksum, state, owner, claimed_at) VALUES (?, ?, ?, 'running', 'dead-process', ?)`, [
        m.id,
        m.name,
        migrationChecksum(m),
        new Date(Date.now() - 10_000),
      ], { prepare: true });
      const store = await CassandraStore.connect(options(keyspace, { migrationStaleAfterMs: 1_000, migrationOwner: 'survivor' }));
      try {
        const row = (await admin.execute(`SELECT state, owner FROM ${keyspace}.schema_migrations WHERE id = 1`)).first();
        expect([row.get('state'), row.get('owner')]).toEqual(['done', 'survivor']);
        expect((await store.chamberState.commitRun(commit(freshChamber(), 1, 1))).outcome).toBe('applied');
      } finally {
        await store.close();
      }
    }, 120_000);
  });

  /** A new keyspace with the schema of a release that had the first `migrations` migrations. */
  async function keyspaceOfRelease(migrations: number) {
    const keyspace = newKeyspace();
    const q = { prepare: true, consistency: types.consistencies.quorum, serialConsistency: types.consistencies.serial };
    await migrateCassandra(admin, {
      keyspace,
      createKeyspace: true,
      replication: { class: 'SimpleStrategy', replication_factor: 1 },
      owner: 'previous-release',
      staleAfterMs: 60_000,
      consistency: q.consistency,
      serialConsistency: q.serialConsistency,
      migrations: CASSANDRA_MIGRATIONS.slice(0, migrations),
    });
    return { keyspace, c: testCassandra(), q };
  }

  describe('migration 2 on a keyspace of the previous release', () => {
    it('the next claim indexes the runs applied before it: a replay of one is skipped; nothing is pending in the outbox', async () => {
      const { keyspace, c, q } = await keyspaceOfRelease(1);
      const ch = freshChamber();
      const t = `${keyspace}.chamber_log`;
      await admin.execute(`INSERT INTO ${t} (tool_id, chamber_id, owner_epoch, hwm, owner_id, state_updated_at) VALUES (?, ?, 1, 0, 'defender-1', ?) IF NOT EXISTS`, [ch.toolId, ch.chamberId, new Date()], q);
      // As the previous release committed: state + run rows in one conditional batch. run-1 twice (its first sequence counts).
      const legacyRun = (seq: number, runId: string) => ({
        query: `INSERT INTO ${t} (tool_id, chamber_id, kind, seq, item, run_id, epoch, committed_at, schema_version, body) VALUES (?, ?, 0, ?, '', ?, 1, ?, 1, ?)`,
        params: [ch.toolId, ch.chamberId, seq, runId, new Date(), encodePointSet([])],
      });
      const r = await admin.batch(
        [
          { query: `UPDATE ${t} SET hwm = 3 WHERE tool_id = ? AND chamber_id = ? IF owner_epoch <= 1 AND hwm < 3`, params: [ch.toolId, ch.chamberId] },
          legacyRun(1, 'run-1'),
          legacyRun(2, 'run-2'),
          legacyRun(3, 'run-1'),
        ],
        { ...q, logged: true },
      );
      expect(r.wasApplied()).toBe(true);

      const store = await CassandraStore.connect({ contactPoints: c.contactPoints, localDataCenter: c.localDataCenter, keyspace, requestTimeoutMs: 30_000 });
      try {
        expect(await store.chamberState.appliedRun(ch, 'run-2')).toBeUndefined();
        expect((await store.chamberState.claim(ch, 2, 'defender-2', new Date())).highWaterMark).toBe(3);
        expect(await store.chamberState.appliedRun(ch, 'run-1')).toBe(1);
        expect(await store.chamberState.appliedRun(ch, 'run-2')).toBe(2);
        expect(await store.chamberState.commitRun(commit(ch, 2, 9, { runId: 'run-2' }))).toMatchObject({ outcome: 'duplicate-run', appliedSequence: 2, state: { highWaterMark: 9 } });
        expect(await store.outbox.pending(ch, { limit: 10 })).toEqual([]);
        expect((await store.chamberState.commitRun(commit(ch, 2, 10))).outcome).toBe('applied');
        // A later claim finds the index complete (every commit keeps it so).
        expect((await store.chamberState.claim(ch, 3, 'defender-3', new Date())).highWaterMark).toBe(10);
        expect(await store.chamberState.appliedRun(ch, 'run-10')).toBe(10);
      } finally {
        await store.close();
      }
    }, 180_000);
  });

  describe('migration 4 on a keyspace of the previous release', () => {
    it('runs committed before it keep their points; a chamber has no monitor state until a commit carries one', async () => {
      const { keyspace, c, q } = await keyspaceOfRelease(3);
      const ch = freshChamber();
      const t = `${keyspace}.chamber_log`;
      // A run judged by the earlier release: its monitor memory in the model point's chart.
      const points = [{ indicatorKey: 'recipe-A|m:model', value: 2.5, limitsVersion: 1, flags: 0, chart: { spe: 1, judgedRuns: 4, z0: 0.5 } }];
      await admin.execute(`INSERT INTO ${t} (tool_id, chamber_id, owner_epoch, hwm, run_index_hwm, owner_id, state_updated_at) VALUES (?, ?, 1, 5, 5, 'defender-1', ?) IF NOT EXISTS`, [ch.toolId, ch.chamberId, new Date()], q);
      await admin.execute(`INSERT INTO ${t} (tool_id, chamber_id, kind, seq, item, run_id, epoch, committed_at, recipe, schema_version, body) VALUES (?, ?, 0, 5, '', 'run-5', 1, ?, 'recipe-A', 1, ?)`, [
        ch.toolId,
        ch.chamberId,
        new Date(),
        encodePointSet(points),
      ], q);

      const store = await CassandraStore.connect({ contactPoints: c.contactPoints, localDataCenter: c.localDataCenter, keyspace, requestTimeoutMs: 30_000 });
      try {
        expect(await store.monitorState.list(ch)).toEqual([]);
        expect((await store.uchart.run(ch, 5))?.points).toEqual(points);
        const state = { phase: 'judging' as const, modelVersion: 1, judgedRuns: 5, extensionCheckAt: null, mewma: [0.4], levelOffsets: {} };
        expect((await store.chamberState.commitRun(commit(ch, 1, 6, { monitorState: state }))).outcome).toBe('applied');
        expect(await store.monitorState.get(ch, 'recipe-A')).toMatchObject({ sequence: 6, runId: 'run-6', state });
        expect(await store.monitorState.list(ch)).toHaveLength(1);
        // The state rows are not runs: the history and the outbox are as before.
        expect((await store.uchart.history(ch, { limit: 10 })).map((r) => r.sequence)).toEqual([5, 6]);
        expect(await store.outbox.pending(ch, { limit: 10 })).toEqual([]);
      } finally {
        await store.close();
      }
    }, 180_000);
  });

  describe('consistency and outages', () => {
    it('more requests at once than the driver may send on its connections wait for their turn instead of failing', async () => {
      // A defender starting with thousands of chambers reads (and claims) every one of them at once;
      // the driver refuses a request beyond 2,048 in flight per connection ("All connections to host
      // ... are busy"), which surfaced as thousands of paused chambers at start (bench:fab on Cassandra).
      const store = await CassandraStore.connect(options(newKeyspace()));
      try {
        const chambers = Array.from({ length: 5000 }, () => freshChamber());
        const results = await Promise.allSettled(chambers.map((ch) => store.chamberState.get(ch)));
        const failed = results.filter((r) => r.status === 'rejected').map((r) => String((r as PromiseRejectedResult).reason));
        expect(failed.slice(0, 3)).toEqual([]);
        expect(results.every((r) => r.status === 'fulfilled' && r.value === undefined)).toBe(true);
      } finally {
        await store.close();
      }
    }, 180_000);

    it('runs with LOCAL_QUORUM (and LOCAL_SERIAL for the lightweight transactions)', async () => {
      const store = await CassandraStore.connect(options(newKeyspace(), { consistency: 'LOCAL_QUORUM' }));
      try {
        expect([store.consistency, store.serialConsistency]).toEqual(['LOCAL_QUORUM', 'LOCAL_SERIAL']);
        const ch = freshChamber();
        await store.chamberState.claim(ch, 2, 'd', new Date());
        expect((await store.chamberState.commitRun(commit(ch, 2, 1))).outcome).toBe('applied');
        expect(await store.uchart.history(ch, { limit: 1 })).toHaveLength(1);
      } finally {
        await store.close();
      }
    }, 120_000);

    it('a consistency the cluster cannot meet is a retryable StoreUnavailableError', async () => {
      // One node, replication factor 1: THREE replicas can never answer.
      const err = await CassandraStore.connect(options(newKeyspace(), { consistency: 'THREE' })).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(StoreUnavailableError);
      expect(err).toMatchObject({ retryable: true });
    }, 120_000);

    it('an unreachable cluster is a retryable StoreUnavailableError', async () => {
      const port = await freePort();
      const err = await CassandraStore.connect({ contactPoints: [`127.0.0.1:${port}`], localDataCenter: 'datacenter1', keyspace: newKeyspace() }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(StoreUnavailableError);
    }, 60_000);
  });
});
