/**
 * Entry point of the SQLite store thread (see {@link ThreadedSqliteStore}): opens one SqliteStore
 * (the process's only connection, so its only writer) and serves the repository calls posted by the
 * main thread, one at a time, in the order they arrive. A busy wait for another process's lock
 * blocks this thread, never the caller's event loop.
 *
 * Loaded as a worker script: from source through tools/scripts/register.js (jest, scripts), or as
 * the `sqlite-store-thread.js` entry of an app bundle (apps/<app>/webpack.config.js).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { isMainThread, parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { setArrayBufferDetacher } from '../codec/buffer-release';
import { disownTraceBuffer } from '../codec/trace-codec';
import { SqliteStore } from './sqlite-store';
import {
  STORE_THREAD_MARK,
  THREAD_METHODS,
  toWireError,
  sampleBuffers,
  type FromThread,
  type ThreadOpenOptions,
  type ToThread,
} from './thread-protocol';

function post(port: MessagePort, message: FromThread, transfer: ArrayBuffer[] = []): void {
  port.postMessage(message, transfer);
}

async function serveCall(
  store: SqliteStore,
  port: MessagePort,
  msg: Extract<ToThread, { type: 'call' }>,
): Promise<void> {
  try {
    const methods = THREAD_METHODS[msg.repo] as Record<string, unknown> | undefined;
    if (!methods || !Object.hasOwn(methods, msg.method))
      throw new TypeError(`store thread: unknown operation ${msg.repo}.${msg.method}`);
    const repo = store[msg.repo] as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
    const value = await repo[msg.method]?.(...msg.args);
    // The thread keeps nothing it returns: sample arrays move to the caller instead of being copied.
    post(port, { type: 'result', id: msg.id, value }, sampleBuffers(value, disownTraceBuffer));
  } catch (err) {
    post(port, { type: 'failed', id: msg.id, error: toWireError(err) });
  }
}

/**
 * The native detacher of libs/malloc's addon (`detach(arrayBuffer)`), when the process ships it: beside
 * the bundle (the defender copies `malloc.node` next to main.js) or in the lib's build directory from
 * source. Without it the copies of trace chunks read here wait for this thread's garbage collector
 * (tens of MB of RSS under heavy traces).
 */
function installNativeDetacher(): boolean {
  const candidates = [
    join(__dirname, 'malloc.node'),
    join(__dirname, '..', '..', '..', '..', 'malloc', 'native', 'build', 'Release', 'malloc.node'),
  ];
  const path = candidates.find((p) => existsSync(p));
  if (!path) return false;
  try {
    const mod = { exports: {} as { detach?: unknown } };
    process.dlopen(mod, path);
    const detach = mod.exports.detach;
    if (typeof detach !== 'function') return false;
    setArrayBufferDetacher((buffer) => (detach as (b: ArrayBuffer) => unknown)(buffer));
    return true;
  } catch {
    return false;
  }
}

async function run(port: MessagePort, options: ThreadOpenOptions): Promise<void> {
  installNativeDetacher();
  let store: SqliteStore;
  try {
    store = await SqliteStore.open(options);
  } catch (err) {
    post(port, { type: 'open-failed', error: toWireError(err) });
    return;
  }
  post(port, { type: 'ready', journalMode: store.journalMode });
  port.on('message', (msg: ToThread) => {
    if (msg.type === 'close') {
      void store.close().then(() => post(port, { type: 'closed' }));
      return;
    }
    void serveCall(store, port, msg);
  });
}

const data = workerData as { mark?: string; options?: ThreadOpenOptions } | null;
if (!isMainThread && parentPort && data?.mark === STORE_THREAD_MARK && data.options) {
  void run(parentPort, data.options);
}
