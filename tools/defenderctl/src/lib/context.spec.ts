import { resolveTarget } from './context';

describe('resolveTarget: NATS identity', () => {
  it('talks to the running local fab as its read-only user', () => {
    const t = resolveTarget({}, { NATS_USER: 'other', NATS_PASSWORD: 'other-password' }, { natsUrl: 'nats://127.0.0.1:1', natsUser: 'dashboard', natsPassword: 'local-fab-password' });
    expect(t.natsCredentials).toEqual({ user: 'dashboard', pass: 'local-fab-password' });
    expect(t.natsServers).toEqual(['nats://127.0.0.1:1']);
  });

  it('uses NATS_USER / NATS_PASSWORD for another cluster (--nats, or no local fab), none when they are not both set', () => {
    const env = { NATS_USER: 'dashboard', NATS_PASSWORD: 'prod-dashboard-password' };
    expect(resolveTarget({ nats: 'nats://a:4222' }, env, { natsUrl: 'nats://127.0.0.1:1', natsUser: 'dashboard', natsPassword: 'local' }).natsCredentials).toEqual({ user: 'dashboard', pass: 'prod-dashboard-password' });
    expect(resolveTarget({}, env, null).natsCredentials).toEqual({ user: 'dashboard', pass: 'prod-dashboard-password' });
    expect(resolveTarget({}, { NATS_USER: 'dashboard' }, null).natsCredentials).toBeNull();
  });
});

describe('resolveTarget: TLS', () => {
  it('takes NATS_TLS_* for another cluster, the local fab\'s CA for the local fab; a half pair is an error naming the missing one', () => {
    const env = { NATS_TLS_CA_FILE: '/tls/ca.crt', NATS_TLS_CERT_FILE: '/tls/c.crt', NATS_TLS_KEY_FILE: '/tls/c.key' };
    expect(resolveTarget({}, env, null).natsTls).toEqual({ caFile: '/tls/ca.crt', certFile: '/tls/c.crt', keyFile: '/tls/c.key' });
    expect(resolveTarget({}, env, { natsUrl: 'nats://127.0.0.1:1', natsTlsCaFile: '/run/tls/ca/ca.crt' }).natsTls).toEqual({ caFile: '/run/tls/ca/ca.crt' });
    expect(resolveTarget({ nats: 'nats://a:4222' }, env, { natsUrl: 'nats://127.0.0.1:1', natsTlsCaFile: '/run/tls/ca/ca.crt' }).natsTls).toEqual({ caFile: '/tls/ca.crt', certFile: '/tls/c.crt', keyFile: '/tls/c.key' });
    expect(resolveTarget({}, {}, null).natsTls).toBeNull();
    expect(() => resolveTarget({}, { NATS_TLS_KEY_FILE: '/tls/c.key' }, null)).toThrow('NATS_TLS_CERT_FILE is required when NATS_TLS_KEY_FILE is set (set both, or neither)');
  });

  it('takes CASSANDRA_TLS_* into the store configuration; a certificate without the CA is an error', () => {
    const env = { STORE_BACKEND: 'cassandra', CASSANDRA_HOSTS: 'db1', CASSANDRA_TLS_CA_FILE: '/tls/ca.crt', CASSANDRA_TLS_SERVER_NAME: 'cassandra.example' };
    expect(resolveTarget({}, env, null).store).toMatchObject({ kind: 'cassandra', cassandra: { tls: { caFile: '/tls/ca.crt', serverName: 'cassandra.example' } } });
    expect(() => resolveTarget({}, { STORE_BACKEND: 'cassandra', CASSANDRA_TLS_CERT_FILE: '/c.crt', CASSANDRA_TLS_KEY_FILE: '/c.key' }, null)).toThrow('CASSANDRA_TLS_CA_FILE is required when CASSANDRA_TLS_CERT_FILE is set');
  });
});

describe('resolveTarget: where the NATS URL came from (for the "no Defender cluster" message)', () => {
  it('names the flag, the local fab, NATS_SERVERS or the default', () => {
    expect(resolveTarget({ nats: 'nats://a:4222' }, {}, null)).toMatchObject({ natsServers: ['nats://a:4222'], natsFrom: '--nats' });
    expect(resolveTarget({}, { NATS_SERVERS: 'nats://b:4222' }, { natsUrl: 'nats://127.0.0.1:1', runDir: '/tmp/fab' })).toMatchObject({ natsServers: ['nats://127.0.0.1:1'], natsFrom: 'the running local fab (/tmp/fab)' });
    expect(resolveTarget({}, { NATS_SERVERS: 'nats://b:4222' }, null)).toMatchObject({ natsServers: ['nats://b:4222'], natsFrom: 'NATS_SERVERS' });
    expect(resolveTarget({}, {}, null)).toMatchObject({ natsServers: ['nats://127.0.0.1:4222'], natsFrom: 'the default URL: no --nats, no NATS_SERVERS, no running local fab' });
  });
});
