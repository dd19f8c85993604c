import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { describeWithInfra, makeClientCertificate, makeTestPki, natsVerifyAndMapTls, removeTestPki, startNatsServer, type NatsServerHandle, type TestPki } from '@defender/infra-harness';
import { openBucket } from './buckets';
import { natsAuthorizationConfig, natsInboxPrefixFor, natsUserOfCertificate, NATS_ROLES, type NatsRole } from './permissions';
import { ensureStreams, STREAMS } from './streams';

/**
 * Optional mutual TLS per role (issue 50, item 6): nats-server verifies every client certificate
 * against the CA and takes the user from it (`verify_and_map`), so a role's identity is its
 * certificate (subjectAltName `DNS:<role>`), with no password; the role's permissions follow.
 */
describeWithInfra(['nats'], 'a client certificate per NATS role (real nats-server, tls verify_and_map)', () => {
  let pki: TestPki;
  let dir = '';
  let server: NatsServerHandle;
  const certs = new Map<string, { certFile: string; keyFile: string }>();
  const conns: NatsConnection[] = [];
  /** A connection with `cert` alone (no user, no password), its inbox from the certificate, as the apps do. */
  const as = async (cert: { certFile: string; keyFile: string }, ca = pki.caCert) => {
    const inboxPrefix = natsInboxPrefixFor(undefined, cert.certFile);
    const nc = await connect({ servers: server.url, reconnect: false, timeout: 5_000, tls: { caFile: ca, ...cert }, ...(inboxPrefix ? { inboxPrefix } : {}) });
    conns.push(nc);
    return nc;
  };

  beforeAll(async () => {
    pki = makeTestPki();
    for (const role of [...NATS_ROLES, 'intruder']) certs.set(role, makeClientCertificate(pki, role));
    certs.set('rogue-defender', makeClientCertificate(pki, 'defender', 'rogue-ca'));
    dir = mkdtempSync(join(tmpdir(), 'defender-nats-mtls-'));
    const conf = join(dir, 'nats.conf');
    writeFileSync(conf, natsVerifyAndMapTls(pki) + natsAuthorizationConfig(NATS_ROLES.map((role) => ({ user: role, role, certificate: true as const }))), { mode: 0o600 });
    server = await startNatsServer({ extraArgs: ['-c', conf] });
  }, 60_000);

  afterAll(async () => {
    for (const nc of conns) await nc.close().catch(() => undefined);
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
    if (pki) removeTestPki(pki);
  });

  it('the certificates name their roles', () => {
    expect(NATS_ROLES.map((r) => natsUserOfCertificate(readFileSync(certs.get(r)!.certFile)))).toEqual([...NATS_ROLES]);
  });

  it('each role works as itself with its certificate alone, and only as itself', async () => {
    const nc = async (role: NatsRole) => as(certs.get(role)!);
    const defender = await nc('defender');
    await ensureStreams(defender);
    await (await openBucket(defender, 'stable-ids')).put('defender-0', JSON.stringify({ owner: 'pod-a' }));
    const controller = await nc('controller');
    await (await openBucket(controller, 'defender-assignments', { history: 5 })).put('probe', JSON.stringify({ by: 'controller' }));
    await expect(jetstream(await nc('publisher')).publish('dc.tool1.ch1.completed', '{}')).resolves.toMatchObject({ stream: STREAMS.notifications });
    // The read-only dashboard's certificate reads but writes nothing, like its password user.
    const dashboard = await nc('dashboard');
    expect((await (await new Kvm(dashboard).open('defender-assignments')).get('probe'))?.json()).toEqual({ by: 'controller' });
    await expect((await new Kvm(dashboard).open('defender-assignments')).put('forged', '{}')).rejects.toThrow(/Permissions Violation/);
    const cfg = (await (await jetstreamManager(dashboard)).streams.info(STREAMS.defenseEvents)).config;
    await expect((await jetstreamManager(await nc('publisher'))).streams.update(STREAMS.defenseEvents, { ...cfg, max_msgs: 1 })).rejects.toThrow(/Permissions Violation/);
  });

  it('refuses a client without a certificate, with one from another CA, and with a CA-signed one that names no user', async () => {
    await expect(connect({ servers: server.url, reconnect: false, timeout: 5_000, tls: { caFile: pki.caCert } })).rejects.toThrow();
    await expect(as(certs.get('rogue-defender')!)).rejects.toThrow();
    await expect(as(certs.get('intruder')!)).rejects.toThrow(/Authorization/i);
  });

  it('a certificate is the identity: the dashboard\'s certificate presented with the defender\'s name and a password is refused', async () => {
    const c = certs.get('dashboard')!;
    await expect(connect({ servers: server.url, reconnect: false, timeout: 5_000, user: 'defender', pass: 'whatever-password-123', tls: { caFile: pki.caCert, ...c } })).rejects.toThrow(/Authorization/i);
  });
});
