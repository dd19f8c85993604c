import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { freePort, PORT_RESERVATIONS, reservePort } from './ports';

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

  it('a port reserved by another live process is not handed out; once that process is gone it is taken over', async () => {
    const port = 19_999; // below freePort's range: only this test reserves it
    const other = spawn('sleep', ['30'], { stdio: 'ignore' });
    try {
      mkdirSync(PORT_RESERVATIONS, { recursive: true });
      writeFileSync(join(PORT_RESERVATIONS, String(port)), String(other.pid));
      expect(reservePort(port)).toBe(false);
      other.kill('SIGKILL');
      await new Promise((r) => other.once('exit', r));
      expect(reservePort(port)).toBe(true);
      expect(readFileSync(join(PORT_RESERVATIONS, String(port)), 'utf8')).toBe(String(process.pid));
    } finally {
      other.kill('SIGKILL');
      rmSync(join(PORT_RESERVATIONS, String(port)), { force: true });
    }
  });

  it('a process gives its reservations back when it exits', () => {
    const root = join(__dirname, '..', '..', '..');
    const port = Number(
      execFileSync(process.execPath, ['-r', join(root, 'tools', 'scripts', 'register.js'), '-e', `require(${JSON.stringify(join(__dirname, 'ports.ts'))}).freePort().then((p) => console.log(p))`], { encoding: 'utf8' }).trim(),
    );
    expect(port).toBeGreaterThanOrEqual(20_000);
    expect(existsSync(join(PORT_RESERVATIONS, String(port)))).toBe(false);
  });
});
