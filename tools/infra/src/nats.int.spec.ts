import * as net from 'node:net';
import type { NatsConnection } from '@nats-io/nats-core';
import { connect } from '@nats-io/transport-node';
import { AckPolicy, jetstream, jetstreamManager, JetStreamManager } from '@nats-io/jetstream';
import { Kvm, KvWatchEntry } from '@nats-io/kv';
import { describeWithInfra, testNatsConnectOptions, testNatsTarget } from './jest/infra';
import { INFRA_ENV } from './jest/infra-env';
import { MIN_NATS_VERSION, startNatsServer, versionAtLeast } from './nats';
import { waitFor } from './ports';
import { makeTestPki, removeTestPki } from './tls';

describeWithInfra(['nats'], 'real nats-server started by the harness', () => {
  let nc: NatsConnection;

  beforeAll(async () => {
    nc = await connect(testNatsConnectOptions());
    process.stderr.write(`nats-server ${process.env[INFRA_ENV.natsVersion]} answering at ${nc.getServer()}\n`);
  });

  afterAll(async () => {
    await nc?.drain();
  });

  it(`reports the server version it runs (>= ${MIN_NATS_VERSION}, unless NATS_SERVER_BIN chose one)`, () => {
    const version = process.env[INFRA_ENV.natsVersion] ?? '0.0.0';
    expect(versionAtLeast(version, process.env['NATS_SERVER_BIN'] ? '2.9.0' : MIN_NATS_VERSION)).toBe(true);
    expect(nc.info?.jetstream).toBe(true);
  });

  it('KV: put / get / create conflict / update with expected revision / watch', async () => {
    const kv = await new Kvm(nc).create('harness-kv', { history: 5 });
    const seen: KvWatchEntry[] = [];
    const watch = await kv.watch({ key: 'k.>' });
    const watching = (async () => {
      for await (const e of watch) {
        seen.push(e);
        if (seen.length === 3) break;
      }
    })();

    const r1 = await kv.create('k.a', 'one');
    expect((await kv.get('k.a'))?.string()).toBe('one');
    await expect(kv.create('k.a', 'again')).rejects.toThrow(/wrong last sequence|exists/);

    const r2 = await kv.update('k.a', 'two', r1);
    expect(r2).toBeGreaterThan(r1);
    await expect(kv.update('k.a', 'stale', r1)).rejects.toThrow(/wrong last sequence/);
    await kv.put('k.b', 'bee');

    await watching;
    expect(seen.map((e) => [e.key, e.string()])).toEqual([
      ['k.a', 'one'],
      ['k.a', 'two'],
      ['k.b', 'bee'],
    ]);
    expect((await kv.get('k.a'))?.revision).toBe(r2);
  });

  it('JetStream: publish / consume / ack, and an unacked message is redelivered', async () => {
    const jsm: JetStreamManager = await jetstreamManager(nc);
    await jsm.streams.add({ name: 'HARNESS', subjects: ['harness.>'] });
    await jsm.consumers.add('HARNESS', { durable_name: 'c1', ack_policy: AckPolicy.Explicit, ack_wait: 500_000_000 });
    const js = jetstream(nc);
    const acks = await Promise.all([1, 2, 3].map((i) => js.publish(`harness.t1.c${i}`, `m${i}`)));
    expect(acks.map((a) => a.seq)).toEqual([1, 2, 3]);

    const consumer = await js.consumers.get('HARNESS', 'c1');
    // The fetch and the pull below end as soon as their messages arrive; `expires` is only their hang
    // guard (the redelivery comes once the 0.5 s ack wait has passed, later on a loaded machine).
    const first = await consumer.fetch({ max_messages: 3, expires: 30_000 });
    const got: string[] = [];
    for await (const m of first) {
      got.push(m.string());
      if (m.seq !== 2) expect(await m.ackAck()).toBe(true); // leave seq 2 unacked
    }
    expect(got).toEqual(['m1', 'm2', 'm3']);

    const again = await consumer.next({ expires: 30_000 });
    expect(again?.string()).toBe('m2');
    expect(again?.info.deliveryCount).toBe(2);
    expect(await again?.ackAck()).toBe(true);
    const info = await consumer.info();
    expect(info.num_ack_pending).toBe(0);
  });

  it('a private server can be restarted mid-test and keeps its JetStream data', async () => {
    const srv = await startNatsServer();
    try {
      const c = await connect({ servers: srv.url, maxReconnectAttempts: -1, reconnectTimeWait: 100 });
      const kv = await new Kvm(c).create('survivor', { history: 1 });
      await kv.put('k', 'before-restart');
      const reconnected = (async () => {
        for await (const s of c.status()) if (s.type === 'reconnect') return true;
        return false;
      })();
      await srv.restart({ hard: true, downMs: 200 });
      // The client reconnects by itself; the file store brought the bucket back.
      expect(await reconnected).toBe(true);
      let value: string | undefined;
      await waitFor(
        'the bucket to answer after the restart',
        async () => {
          value = (await (await new Kvm(c).open('survivor')).get('k'))?.string();
          return true;
        },
        15_000,
        200,
      );
      expect(value).toBe('before-restart');
      await c.close();
    } finally {
      await srv.stop();
    }
  });

  it('a TLS server (test-time PKI) serves TLS clients, closes plaintext ones, and with verify accepts a client certificate from its CA', async () => {
    const pki = makeTestPki();
    const tls = { certFile: pki.serverCert, keyFile: pki.serverKey, caFile: pki.caCert };
    const srv = await startNatsServer({ jetstream: false, tls: { ...tls, verify: true } });
    try {
      expect(srv.tls).toMatchObject({ verify: true });
      const c = await connect({ servers: srv.url, tls: { caFile: pki.caCert, certFile: pki.clientCert, keyFile: pki.clientKey } });
      await c.flush();
      expect(c.info?.tls_required).toBe(true);
      await c.close();
      // A plaintext client reads the INFO that requires TLS; its CONNECT and PING get no PONG, only the closed connection.
      const answer = await plaintextAnswer(srv.port);
      expect(answer).toMatch(/^INFO .*"tls_required":true/);
      expect(answer).not.toContain('PONG');
    } finally {
      await srv.stop();
      removeTestPki(pki);
    }
  });
});

describeWithInfra(['nats'], "the run's nats-server runs as production does (TLS, one user per role)", () => {
  it('closes a plaintext client, refuses a TLS client without a user or with a wrong password', async () => {
    const target = testNatsTarget();
    expect(target.tls).toBeDefined();
    const answer = await plaintextAnswer(Number(new URL(target.url).port));
    expect(answer).toMatch(/^INFO .*"tls_required":true/);
    expect(answer).not.toContain('PONG');
    const bare = { servers: target.url, tls: target.tls, reconnect: false };
    await expect(connect(bare)).rejects.toThrow(/Authorization/i);
    await expect(connect({ ...bare, user: 'dashboard', pass: 'not-the-password' })).rejects.toThrow(/Authorization/i);
  });

  it("refuses the dashboard's user a write to the assignment map; the controller's user writes it", async () => {
    // The deployments' bucket name (deploy/nats/auth.conf): only the controller may write it.
    const bucket = 'defender-assignments';
    const fixture = await connect(testNatsConnectOptions());
    const dashboard = await connect(testNatsConnectOptions('dashboard'));
    const controller = await connect(testNatsConnectOptions('controller'));
    try {
      await new Kvm(fixture).create(bucket, { history: 5 });
      await expect((await new Kvm(dashboard).open(bucket)).put('map', '{"version":999999}')).rejects.toThrow(`Permissions Violation for Publish to "$KV.${bucket}.map"`);
      const rev = await (await new Kvm(controller).open(bucket)).put('map', '{"version":1}');
      expect((await (await new Kvm(dashboard).open(bucket)).get('map'))).toMatchObject({ revision: rev });
    } finally {
      await Promise.all([fixture, dashboard, controller].map((c) => c.close()));
    }
  });
});

/** What a server sends a plaintext client that sends CONNECT and PING, until it closes (or, a hang guard, 30 s pass without a byte). */
function plaintextAnswer(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    const sock = net.connect({ host: '127.0.0.1', port }, () => sock.write('CONNECT {"verbose":false}\r\nPING\r\n'));
    sock.setTimeout(30_000, () => sock.destroy());
    sock.on('data', (d: Buffer) => {
      text += d.toString('latin1');
    });
    sock.on('error', (err) => (text ? resolve(text) : reject(err)));
    sock.on('close', () => resolve(text));
  });
}
