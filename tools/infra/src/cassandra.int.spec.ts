import { randomBytes } from 'node:crypto';
import { Client, types } from 'cassandra-driver';
import {
  CassandraHandle,
  cassandraFromEnv,
  cassandraMissingPrerequisites,
  startCassandra,
} from './cassandra';
import { describeWithInfra } from './jest/infra';
import { INFRA_ENV } from './jest/infra-env';

// Cassandra comes from CASSANDRA_HOSTS (exported by the jest global setup, or set by the user).
// Without it and without a failed global setup (e.g. plain `jest` on this file), the suite starts
// its own node, provided java 17 and mvn (or a warm cache) are there; otherwise it is skipped
// loudly, or fails under REQUIRE_INFRA=1.
const selfStart = cassandraFromEnv() === null && process.env[INFRA_ENV.cassandraUnavailable] === undefined;
if (selfStart) {
  const missing = cassandraMissingPrerequisites();
  if (missing.length > 0) process.env[INFRA_ENV.cassandraUnavailable] = missing.join('; ');
}
const describeCassandra =
  selfStart && process.env[INFRA_ENV.cassandraUnavailable] === undefined
    ? (name: string, fn: () => void): void => describe(name, fn)
    : (name: string, fn: () => void): void => describeWithInfra(['cassandra'], name, fn);

describeCassandra('real Apache Cassandra through cassandra-driver', () => {
  const keyspace = `harness_${randomBytes(4).toString('hex')}`;
  let handle: CassandraHandle | undefined;
  let client: Client;

  beforeAll(async () => {
    handle = await startCassandra({ startTimeoutMs: 240_000 });
    process.stderr.write(
      `cassandra ${handle.version} at ${handle.contactPoints.join(',')}${handle.external ? ' (CASSANDRA_HOSTS)' : ''}\n`,
    );
    client = new Client({
      contactPoints: handle.contactPoints,
      localDataCenter: handle.localDataCenter,
      socketOptions: { readTimeout: 30_000 },
    });
    await client.connect();
    await client.execute(
      `CREATE KEYSPACE ${keyspace} WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}`,
    );
    await client.execute(
      `CREATE TABLE ${keyspace}.readings (chamber text, run int, svid text, value double, PRIMARY KEY ((chamber), run, svid))`,
    );
    await client.execute(`CREATE TABLE ${keyspace}.leases (name text PRIMARY KEY, owner text, epoch bigint)`);
    // Cold fetch + JVM start on a loaded 2-core machine.
  }, 420_000);

  afterAll(async () => {
    try {
      if (client) {
        await client.execute(`DROP KEYSPACE IF EXISTS ${keyspace}`);
        await client.shutdown();
      }
    } finally {
      await handle?.stop();
    }
  }, 60_000);

  it('reports a 5.0.x release from system.local', () => {
    expect(handle?.version).toMatch(/^5\.0\.\d+/);
  });

  it('writes plain, prepared and batched rows and reads them back in clustering order', async () => {
    const insert = `INSERT INTO ${keyspace}.readings (chamber, run, svid, value) VALUES (?, ?, ?, ?)`;
    // Unprepared: the values are serialized on the client, so the int column needs a type hint.
    await client.execute(insert, ['T1:A', 1, 'pressure', 1.5], { hints: ['text', 'int', 'text', 'double'] });
    await client.execute(insert, ['T1:A', 2, 'pressure', 2.5], { prepare: true });
    await client.batch(
      [
        { query: insert, params: ['T1:A', 3, 'pressure', 3.5] },
        { query: insert, params: ['T1:A', 3, 'temp', 350.25] },
        { query: insert, params: ['T2:B', 1, 'pressure', 9.0] },
      ],
      { prepare: true, logged: true },
    );

    const rs = await client.execute(
      `SELECT run, svid, value FROM ${keyspace}.readings WHERE chamber = ?`,
      ['T1:A'],
      { prepare: true },
    );
    expect(rs.rows.map((r) => [r.get('run'), r.get('svid'), r.get('value')])).toEqual([
      [1, 'pressure', 1.5],
      [2, 'pressure', 2.5],
      [3, 'pressure', 3.5],
      [3, 'temp', 350.25],
    ]);
    const other = await client.execute(
      `SELECT value FROM ${keyspace}.readings WHERE chamber = ? AND run = ? AND svid = ?`,
      ['T2:B', 1, 'pressure'],
      { prepare: true },
    );
    expect(other.first()?.get('value')).toBe(9.0);
  });

  it('lightweight transactions: INSERT IF NOT EXISTS and UPDATE IF are applied exactly once', async () => {
    const claim = `INSERT INTO ${keyspace}.leases (name, owner, epoch) VALUES (?, ?, ?) IF NOT EXISTS`;
    const first = await client.execute(claim, ['leader', 'defender-0', types.Long.fromNumber(1)], {
      prepare: true,
    });
    expect(first.wasApplied()).toBe(true);

    const second = await client.execute(claim, ['leader', 'defender-1', types.Long.fromNumber(1)], {
      prepare: true,
    });
    expect(second.wasApplied()).toBe(false);
    expect(second.first()?.get('owner')).toBe('defender-0'); // the row that won is returned

    const cas = `UPDATE ${keyspace}.leases SET owner = ?, epoch = ? WHERE name = ? IF epoch = ?`;
    const takeOver = await client.execute(
      cas,
      ['defender-1', types.Long.fromNumber(2), 'leader', types.Long.fromNumber(1)],
      { prepare: true },
    );
    expect(takeOver.wasApplied()).toBe(true);

    const stale = await client.execute(
      cas,
      ['defender-2', types.Long.fromNumber(2), 'leader', types.Long.fromNumber(1)],
      { prepare: true },
    );
    expect(stale.wasApplied()).toBe(false);
    expect(stale.first()?.get('epoch')?.toString()).toBe('2');

    const row = (
      await client.execute(`SELECT owner, epoch FROM ${keyspace}.leases WHERE name = ?`, ['leader'], {
        prepare: true,
      })
    ).first();
    expect(row?.get('owner')).toBe('defender-1');
    expect(row?.get('epoch')?.toString()).toBe('2');
  });
});
