import { mkdirSync, openSync, readFileSync, unlinkSync, writeSync, closeSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Ports this process handed out, so two servers of one test never get the same one before either
 * binds it.
 */
const handedOut = new Set<number>();

/**
 * The first port of the kernel's ephemeral range (`net.ipv4.ip_local_port_range`): the source ports of
 * outgoing connections come from there. A server port picked from that range can be taken between the
 * pick and the bind (or between a node's halt and its restart on the same port) by any outgoing
 * connection of any process, and nats-server then dies with "address already in use".
 */
function ephemeralLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > 0 ? low : 32768;
  } catch {
    return 32768;
  }
}

/**
 * Ports handed out by live test processes of this machine, one file each (its content the holder's
 * pid). A test that restarts a server on its port (an agent killed and started again) leaves the port
 * free in between, and another test process, of another project running beside it, could pick and
 * bind it there: the restarted server then died with "address already in use" (a fresh-clone CI,
 * election.chaos.int.spec). A port reserved here is handed to no other process while its holder
 * lives; the holder's files go when it exits, and a dead holder's (SIGKILL) are taken over.
 */
export const PORT_RESERVATIONS = join(tmpdir(), 'defender-test-ports');
const reserved = new Set<number>();
let cleanupRegistered = false;

function holderAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Reserves `port` for this process on this machine; false when a live process holds it. */
export function reservePort(port: number): boolean {
  mkdirSync(PORT_RESERVATIONS, { recursive: true });
  const file = join(PORT_RESERVATIONS, String(port));
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(file, 'wx');
      writeSync(fd, String(process.pid));
      closeSync(fd);
      reserved.add(port);
      if (!cleanupRegistered) {
        cleanupRegistered = true;
        process.once('exit', () => {
          for (const p of reserved) release(p);
        });
      }
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      let holder = NaN;
      try {
        holder = Number(readFileSync(file, 'utf8').trim());
      } catch {
        // Being written or removed right now: treat as held.
        return false;
      }
      if (holder === process.pid || holderAlive(holder)) return false;
      try {
        unlinkSync(file);
      } catch {
        // Another process took it over first.
      }
    }
  }
  return false;
}

function release(port: number): void {
  reserved.delete(port);
  try {
    unlinkSync(join(PORT_RESERVATIONS, String(port)));
  } catch {
    // Already gone.
  }
}

/** Where {@link freePort} looks: below the ephemeral range, above the ports services usually take. */
const RANGE_LOW = 20_000;
const RANGE_HIGH = ephemeralLow() - 1;

function canBind(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

function bindAny(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      if (addr === null || typeof addr === 'string') {
        srv.close();
        reject(new Error('could not read the bound port'));
        return;
      }
      srv.close(() => resolve(addr.port));
    });
  });
}

/**
 * A free TCP port on 127.0.0.1 for a test server: a random one below the kernel's ephemeral range
 * that binds now and that this process has not handed out before (see {@link ephemeralLow} for why not
 * the OS's choice). Falls back to the OS's choice where that range is too small.
 */
export async function freePort(): Promise<number> {
  if (RANGE_HIGH - RANGE_LOW >= 1_000) {
    for (let attempt = 0; attempt < 200; attempt++) {
      // Unseeded on purpose: jest workers and child processes pick at once and must not pick alike.
      const port = RANGE_LOW + Math.floor(Math.random() * (RANGE_HIGH - RANGE_LOW + 1));
      if (handedOut.has(port)) continue;
      if (!reservePort(port)) continue;
      if (await canBind(port)) {
        handedOut.add(port);
        return port;
      }
      release(port);
    }
  }
  for (;;) {
    const port = await bindAny();
    if (!handedOut.has(port)) {
      handedOut.add(port);
      return port;
    }
  }
}
/** Polls `probe` until it returns true or `timeoutMs` passes. */
export async function waitFor(
  what: string,
  probe: () => Promise<boolean>,
  timeoutMs: number,
  intervalMs = 100,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    try {
      // A probe that never settles must not hang the wait past its deadline: it ends as this timeout.
      if (await settleBy(probe(), deadline - Date.now(), what)) return;
    } catch (err) {
      lastError = err;
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`, { cause: lastError });
}

function settleBy<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`a probe for ${what} did not settle within ${Math.max(0, ms)} ms`)), Math.max(0, ms));
  });
  return Promise.race([p, expired]).finally(() => clearTimeout(timer));
}
