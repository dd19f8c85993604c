import { createServer } from 'node:net';

/** Asks the OS for a free TCP port on 127.0.0.1 (bind to 0, read, close). */
export function freePort(): Promise<number> {
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
