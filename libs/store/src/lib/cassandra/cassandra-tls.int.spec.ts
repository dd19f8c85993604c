import { randomBytes } from 'node:crypto';
import { Client } from 'cassandra-driver';
import { StoreUnavailableError } from '@defender/contracts';
import { describeWithInfra, startCassandra, testCassandra, testCassandraTls, type CassandraHandle, type TestPki } from '@defender/infra-harness';
import { CassandraStore } from './cassandra-store';
import { cassandraSslOptions, type CassandraStoreOptions, type CassandraTlsFiles } from './options';

// The harness's node serves CQL over TLS and plaintext on one port (client_encryption_options
// optional: true, tools/infra/src/cassandra.ts), with a certificate for localhost and 127.0.0.1
// signed by the run's test CA.
const KEYSPACE = `store_tls_${randomBytes(3).toString('hex')}`;

describeWithInfra(['cassandra', 'cassandra-tls'], 'CassandraStore over TLS (real Cassandra serving TLS)', () => {
  let pki: TestPki;
  let admin: Client;

  const options = (tls: CassandraTlsFiles): CassandraStoreOptions => {
    const c = testCassandra();
    return { contactPoints: c.contactPoints, localDataCenter: c.localDataCenter, keyspace: KEYSPACE, requestTimeoutMs: 30_000, tls };
  };

  /** Connects (running migrations), reads back through the TLS connection, closes. */
  const roundTrip = async (tls: CassandraTlsFiles): Promise<void> => {
    const store = await CassandraStore.connect(options(tls));
    try {
      const rs = await store.client.execute('SELECT release_version FROM system.local');
      expect(typeof rs.first()?.get('release_version')).toBe('string');
    } finally {
      await store.close();
    }
  };

  const refusal = (tls: CassandraTlsFiles): Promise<unknown> => CassandraStore.connect(options(tls)).catch((e: unknown) => e);

  beforeAll(async () => {
    pki = testCassandraTls();
    const c = testCassandra();
    admin = new Client({ contactPoints: c.contactPoints, localDataCenter: c.localDataCenter, socketOptions: { readTimeout: 60_000 } });
    await admin.connect();
  });

  afterAll(async () => {
    await admin?.execute(`DROP KEYSPACE IF EXISTS ${KEYSPACE}`);
    await admin?.shutdown();
  }, 120_000);

  it('verifies the node against the CA alone (its certificate names 127.0.0.1), creates and migrates the keyspace', async () => {
    await roundTrip({ caFile: pki.caCert });
  }, 120_000);

  it('connects with a client certificate and key, and with the name to check (CASSANDRA_TLS_SERVER_NAME)', async () => {
    await roundTrip({ caFile: pki.caCert, certFile: pki.clientCert, keyFile: pki.clientKey });
    await roundTrip({ caFile: pki.caCert, serverName: 'localhost' });
  }, 120_000);

  it('refuses a node whose certificate does not chain to the configured CA', async () => {
    const err = await refusal({ caFile: pki.rogueCaCert });
    expect(err).toBeInstanceOf(StoreUnavailableError);
    expect(String((err as Error).message)).toMatch(/certificate|self.signed|verify/i);
  }, 60_000);

  it('refuses a node whose certificate does not carry CASSANDRA_TLS_SERVER_NAME', async () => {
    const err = await refusal({ caFile: pki.caCert, serverName: 'cassandra.other.example' });
    expect(err).toBeInstanceOf(StoreUnavailableError);
    expect(String((err as Error).message)).toMatch(/cassandra\.other\.example|altnames|Hostname/i);
  }, 60_000);

  it('an unreadable CA or a certificate without its key fails before connecting, naming the problem', () => {
    expect(() => cassandraSslOptions({ caFile: '/nonexistent/ca.crt' })).toThrow('Cassandra TLS: cannot read the CA file /nonexistent/ca.crt: ENOENT');
    expect(() => cassandraSslOptions({ caFile: pki.caCert, certFile: pki.clientCert })).toThrow('Cassandra TLS: a client certificate needs its key (keyFile is missing)');
  });
});

// The shared node cannot require client certificates (Cassandra 5.0 requires them of every TLS
// client or of none, and other tests connect over TLS without one): a private node does.
describeWithInfra(['cassandra', 'cassandra-tls'], 'CassandraStore over mutual TLS (a private node requiring client certificates)', () => {
  let pki: TestPki;
  let node: CassandraHandle;

  const options = (tls: CassandraTlsFiles): CassandraStoreOptions => ({
    contactPoints: node.contactPoints,
    localDataCenter: node.localDataCenter,
    keyspace: `${KEYSPACE}_mtls`,
    requestTimeoutMs: 30_000,
    tls,
  });

  beforeAll(async () => {
    pki = testCassandraTls();
    node = await startCassandra({ env: {}, tls: pki, requireClientCertificates: true, log: (l) => process.stderr.write(`[mtls] ${l}\n`) });
  }, 300_000);

  afterAll(async () => {
    await node?.stop();
  }, 60_000);

  it('connects with a client certificate the CA signed', async () => {
    const store = await CassandraStore.connect(options({ caFile: pki.caCert, certFile: pki.clientCert, keyFile: pki.clientKey }));
    try {
      const rs = await store.client.execute('SELECT release_version FROM system.local');
      expect(typeof rs.first()?.get('release_version')).toBe('string');
    } finally {
      await store.close();
    }
  }, 120_000);

  it('is refused without a client certificate, and with one from another CA', async () => {
    for (const tls of [{ caFile: pki.caCert }, { caFile: pki.caCert, certFile: pki.rogueClientCert, keyFile: pki.rogueClientKey }]) {
      const err = await CassandraStore.connect(options(tls)).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(StoreUnavailableError);
      expect(String((err as Error).message)).toMatch(/no host available for connect \(/);
    }
  }, 120_000);
});
