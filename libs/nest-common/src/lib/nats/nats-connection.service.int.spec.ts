import { describeWithInfra, startNatsServer, waitFor } from '@defender/infra-harness';
import { HealthRegistry } from '../health/health.registry';
import { NatsConnectionService } from './nats-connection.service';

describeWithInfra(['nats'], 'NatsConnectionService against a real, restartable nats-server', () => {
  it('is not ready until connected, follows a server outage, and drains on shutdown', async () => {
    const server = await startNatsServer();
    await server.halt(); // the server is down when the app starts
    const health = new HealthRegistry();
    const svc = new NatsConnectionService({ servers: [server.url], name: 'test', reconnectTimeWaitMs: 100 }, health);
    try {
      svc.onModuleInit();
      const down = await health.report();
      expect(down.ready).toBe(false);
      expect(down.checks['nats']?.ok).toBe(false);

      await server.start();
      const nc = await svc.connection();
      await waitFor('ready', async () => (await health.report()).ready, 10_000);
      expect(nc.isClosed()).toBe(false);

      await server.halt({ hard: true });
      await waitFor('not ready after the outage', async () => !(await health.report()).ready, 10_000);
      expect((await health.report()).checks['nats']).toEqual({ ok: false, detail: 'disconnected' });

      await server.start();
      await waitFor('ready after reconnect', async () => (await health.report()).ready, 15_000);

      await svc.onApplicationShutdown();
      expect(nc.isClosed()).toBe(true);
    } finally {
      await svc.onApplicationShutdown();
      await server.stop();
    }
  });

  it('gives up waiting for a first connection when shut down', async () => {
    const server = await startNatsServer();
    await server.halt();
    const svc = new NatsConnectionService({ servers: [server.url], name: 'test', reconnectTimeWaitMs: 50 }, new HealthRegistry());
    svc.onModuleInit();
    const first = svc.connection();
    await svc.onApplicationShutdown();
    await expect(first).rejects.toThrow(/shut down before connecting/);
    await server.stop();
  });
});
