import type { NatsConnection } from '@nats-io/nats-core';
import { connect } from '@nats-io/transport-node';
import { describeWithInfra, testNatsConnectOptions, testNatsUrl } from './jest/infra';
import { waitFor } from './ports';
import { startTcpProxy, TcpProxy } from './tcp-proxy';

describeWithInfra(['nats'], 'a NATS client behind the fault-injection proxy', () => {
  let proxy: TcpProxy;
  let nc: NatsConnection;
  let direct: NatsConnection;
  const statuses: string[] = [];

  beforeAll(async () => {
    const url = new URL(testNatsUrl());
    proxy = await startTcpProxy({ target: { host: url.hostname, port: Number(url.port) } });
    nc = await connect({
      ...testNatsConnectOptions(),
      servers: `nats://${proxy.host}:${proxy.port}`,
      reconnectTimeWait: 50,
      maxReconnectAttempts: -1,
      pingInterval: 200,
      maxPingOut: 2,
    });
    direct = await connect(testNatsConnectOptions());
    void (async () => {
      for await (const s of nc.status()) statuses.push(s.type);
    })();
  });

  afterAll(async () => {
    await nc?.close();
    await direct?.drain();
    await proxy?.close();
  });

  const roundTrip = async (subject: string): Promise<void> => {
    const sub = direct.subscribe(subject, {
      max: 1,
      callback: (_e, m) => {
        m.respond('pong');
      },
    });
    await direct.flush();
    const reply = await nc.request(subject, 'ping', { timeout: 5_000 });
    expect(reply.string()).toBe('pong');
    sub.unsubscribe();
  };

  it('cut: the client loses the server and reconnects after heal', async () => {
    await roundTrip('proxy.cut.before');
    proxy.cut();
    await waitFor(
      'the client to see the disconnect',
      async () => statuses.includes('disconnect'),
      20_000,
      20,
    );
    await waitFor('a reconnect attempt to be refused', async () => proxy.stats().refused > 0, 20_000, 20);
    expect(statuses).not.toContain('reconnect');
    proxy.heal();
    await waitFor('the client to reconnect', async () => statuses.includes('reconnect'), 20_000, 20);
    await roundTrip('proxy.cut.after');
  });

  it('blackhole: the client finds the connection stale by its pings and reconnects after heal', async () => {
    statuses.length = 0;
    proxy.blackhole();
    await waitFor(
      'the client to see the stale connection',
      async () => statuses.includes('staleConnection') || statuses.includes('disconnect'),
      20_000,
      20,
    );
    proxy.heal();
    await waitFor('the client to reconnect', async () => statuses.includes('reconnect'), 20_000, 20);
    await roundTrip('proxy.blackhole.after');
  });
});
