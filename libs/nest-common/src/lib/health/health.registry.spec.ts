import { HealthRegistry } from './health.registry';

describe('HealthRegistry', () => {
  it('is not ready with no checks: an app must say what it waits for', async () => {
    expect(await new HealthRegistry().report()).toEqual({ ready: false, checks: {} });
  });

  it('is ready only when every check holds, and shows each one', async () => {
    const r = new HealthRegistry();
    let natsUp = false;
    r.register('nats', () => ({ ok: natsUp, detail: natsUp ? 'n1:4222' : 'connecting' }));
    r.set('stable-id', true, 'defender-3');
    expect(await r.report()).toEqual({
      ready: false,
      checks: { nats: { ok: false, detail: 'connecting' }, 'stable-id': { ok: true, detail: 'defender-3' } },
    });
    natsUp = true;
    expect((await r.report()).ready).toBe(true);
  });

  it('turns a throwing check into a failed one with its message', async () => {
    const r = new HealthRegistry();
    r.register('store', async () => {
      throw new Error('connection refused');
    });
    expect(await r.report()).toEqual({
      ready: false,
      checks: { store: { ok: false, detail: 'check failed: connection refused' } },
    });
  });

  it('reports not ready once shutdown begins', async () => {
    const r = new HealthRegistry();
    r.markReady('app');
    expect((await r.report()).ready).toBe(true);
    r.beginShutdown();
    expect(await r.report()).toEqual({
      ready: false,
      checks: { app: { ok: true }, shutdown: { ok: false, detail: 'shutting down' } },
    });
  });
});
