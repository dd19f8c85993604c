import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { natsAuthorizationConfig } from '@defender/nats-kv';
import { describeWithInfra, makeClientCertificate, makeTestPki, NatsServerHandle, natsVerifyAndMapTls, removeTestPki, startNatsServer, TestPki, waitFor } from '@defender/infra-harness';
import { HealthRegistry } from '../health/health.registry';
import { NatsConnectionService } from './nats-connection.service';
import { NatsTlsFiles } from './nats-tls';

/** A connection service against `server`; `stop()` shuts it down. */
function service(server: NatsServerHandle, tls: NatsTlsFiles | undefined) {
  const health = new HealthRegistry();
  const svc = new NatsConnectionService({ servers: [server.url], name: 'tls-test', reconnectTimeWaitMs: 100, ...(tls ? { tls } : {}) }, health);
  svc.onModuleInit();
  return { svc, health, stop: () => svc.onApplicationShutdown() };
}

/** Resolves once the service connected and can round-trip a request through the server. */
async function connects(server: NatsServerHandle, tls: NatsTlsFiles | undefined): Promise<void> {
  const s = service(server, tls);
  try {
    const nc = await s.svc.connection();
    await nc.flush();
    expect(nc.isClosed()).toBe(false);
    expect((await s.health.report()).checks['nats']).toMatchObject({ ok: true });
  } finally {
    await s.stop();
  }
}

/** The reason the service reports while it cannot connect (it keeps retrying; never ready). */
async function refusal(server: NatsServerHandle, tls: NatsTlsFiles | undefined): Promise<string> {
  const s = service(server, tls);
  try {
    let detail = '';
    await waitFor(
      'a failed connection attempt',
      async () => {
        const check = (await s.health.report()).checks['nats'];
        detail = check?.detail ?? '';
        return check?.ok === false && detail !== 'connecting';
      },
      // A refused client certificate may surface only as the client's connect timeout (20 s).
      45_000,
      50,
    );
    expect(s.svc.isConnected()).toBe(false);
    expect((await s.health.report()).ready).toBe(false);
    return detail;
  } finally {
    await s.stop();
  }
}

describeWithInfra(['nats'], 'NatsConnectionService over TLS (real nats-server requiring TLS)', () => {
  jest.setTimeout(60_000);
  let pki: TestPki;
  let serverTls: NatsServerHandle;
  let mutualTls: NatsServerHandle;
  let plaintext: NatsServerHandle;

  beforeAll(async () => {
    pki = makeTestPki();
    const tls = { certFile: pki.serverCert, keyFile: pki.serverKey, caFile: pki.caCert };
    [serverTls, mutualTls, plaintext] = await Promise.all([
      startNatsServer({ jetstream: false, tls }),
      startNatsServer({ jetstream: false, tls: { ...tls, verify: true } }),
      startNatsServer({ jetstream: false }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([serverTls?.stop(), mutualTls?.stop(), plaintext?.stop()]);
    if (pki) removeTestPki(pki);
  });

  it('server verification: connects with the CA alone', async () => {
    await connects(serverTls, { caFile: pki.caCert });
  });

  it('mutual TLS: connects with a client certificate the server trusts', async () => {
    await connects(mutualTls, { caFile: pki.caCert, certFile: pki.clientCert, keyFile: pki.clientKey });
  });

  it('refuses a server whose certificate does not chain to the configured CA', async () => {
    expect(await refusal(serverTls, { caFile: pki.rogueCaCert })).toMatch(/certificate/i);
  });

  it('is refused by a mutual-TLS server without a client certificate, and with one from another CA', async () => {
    expect(await refusal(mutualTls, { caFile: pki.caCert })).not.toBe('');
    expect(await refusal(mutualTls, { caFile: pki.caCert, certFile: pki.rogueClientCert, keyFile: pki.rogueClientKey })).not.toBe('');
  }, 120_000);

  it('without TLS settings it cannot use a TLS-required server (the test CA is not a system CA)', async () => {
    expect(await refusal(serverTls, undefined)).toMatch(/certificate/i);
  });

  it('with TLS settings it refuses a server that offers no TLS (never falls back to plaintext)', async () => {
    expect(await refusal(plaintext, { caFile: pki.caCert })).toMatch(/tls/i);
  });
});

/**
 * Mutual TLS per role (issue 50): against a server that takes the user from the client certificate
 * (`verify_and_map`), an app configured with NATS_TLS_CERT_FILE / KEY_FILE and no NATS_USER works as
 * the certificate's role: it takes its inbox prefix from the certificate (the only subjects the role
 * may subscribe to), so its JetStream requests get their answers.
 */
describeWithInfra(['nats'], 'NatsConnectionService with a role\'s client certificate and no user (tls verify_and_map)', () => {
  let pki: TestPki;
  let dir = '';
  let server: NatsServerHandle;

  beforeAll(async () => {
    pki = makeTestPki();
    dir = mkdtempSync(join(tmpdir(), 'nest-nats-mtls-'));
    const conf = join(dir, 'nats.conf');
    writeFileSync(conf, natsVerifyAndMapTls(pki) + natsAuthorizationConfig([{ user: 'dashboard', role: 'dashboard', certificate: true }]), { mode: 0o600 });
    server = await startNatsServer({ extraArgs: ['-c', conf] });
  });
  afterAll(async () => {
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
    if (pki) removeTestPki(pki);
  });

  it('connects as the certificate\'s role and gets JetStream answers on that role\'s inbox', async () => {
    const s = service(server, { caFile: pki.caCert, ...makeClientCertificate(pki, 'dashboard') });
    try {
      const nc = await s.svc.connection();
      await expect((await jetstreamManager(nc)).getAccountInfo()).resolves.toMatchObject({ streams: 0 });
      await expect(nc.request('$JS.API.STREAM.CREATE.dashboard-own', JSON.stringify({ name: 'dashboard-own', subjects: ['own.>'] }))).rejects.toThrow(/Permissions Violation/);
    } finally {
      await s.stop();
    }
  });
});
