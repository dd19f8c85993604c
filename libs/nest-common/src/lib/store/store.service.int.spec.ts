import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Worker } from 'node:worker_threads';
import { HealthRegistry } from '../health/health.registry';
import { StoreService } from './store.service';

describe('StoreService with the SQLite store on its thread', () => {
  const dirs: string[] = [];
  afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

  it('reports a store thread that died as not ready, and exits so the process is restarted (its chambers move)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'defender-store-service-'));
    dirs.push(dir);
    const health = new HealthRegistry();
    const service = new StoreService({ kind: 'sqlite', sqlite: { filename: join(dir, 'defender.db') } }, health);
    const failed = new Promise<Error>((resolve) => (service.onFailure = resolve));
    service.onModuleInit();
    const store = await service.ready();
    expect((await health.report()).checks['store']).toEqual({ ok: true, detail: 'sqlite' });

    // The thread dies (an out-of-memory abort, a native crash): nothing can say what its writes did.
    await (store as unknown as { worker: Worker }).worker.terminate();
    const err = await failed;
    expect(err.message).toMatch(/thread/);
    expect((await health.report()).checks['store']).toEqual({ ok: false, detail: err.message });
    await service.onApplicationShutdown();
  });
});
