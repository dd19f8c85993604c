import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { freePort } from './ports';

describe('freePort', () => {
  it('hands out distinct ports below the kernel ephemeral range, each one bindable', async () => {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    const ports: number[] = [];
    for (let i = 0; i < 50; i++) ports.push(await freePort());
    expect(new Set(ports).size).toBe(ports.length);
    for (const p of ports) {
      expect(p).toBeGreaterThanOrEqual(20_000);
      expect(p).toBeLessThan(low);
    }
    const srv = createServer();
    await new Promise<void>((resolve, reject) => {
      srv.once('error', reject);
      srv.listen(ports[0], '127.0.0.1', () => resolve());
    });
    await new Promise<void>((r) => srv.close(() => r()));
  });

  it('never hands out a port that something listens on', async () => {
    const taken = await freePort();
    const srv = createServer();
    await new Promise<void>((r) => srv.listen(taken, '127.0.0.1', () => r()));
    try {
      for (let i = 0; i < 100; i++) expect(await freePort()).not.toBe(taken);
    } finally {
      await new Promise<void>((r) => srv.close(() => r()));
    }
  });
});
