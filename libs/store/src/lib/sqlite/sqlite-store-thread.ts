/**
 * Entry point of the SQLite store thread (see {@link ThreadedSqliteStore}): opens one SqliteStore
 * (the process's only connection, so its only writer) and serves the repository calls posted by the
 * main thread in the order they arrive. No call sleeps on another process's write lock: a write that
 * finds it taken waits on a timer while the reads behind it are answered ({@link LockAwareServer}),
 * and nothing here ever blocks the caller's event loop.
 *
 * Loaded as a worker script: from source through tools/scripts/register.js (jest, scripts), or as
 * the `sqlite-store-thread.js` entry of an app bundle (apps/<app>/webpack.config.js).
 */
import { performance } from 'node:perf_hooks';
import { isMainThread, parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { disownTraceBuffer } from '../codec/trace-codec';
import { DEFAULT_BUSY_TIMEOUT_MS, isLockBusy, SqliteStore } from './sqlite-store';
import {
  STORE_THREAD_MARK,
  THREAD_METHODS,
  WIRE_READS,
  toWireError,
  sampleBuffers,
  type FromThread,
  type ThreadOpenOptions,
  type ToThread,
} from './thread-protocol';

function post(port: MessagePort, message: FromThread, transfer: ArrayBuffer[] = []): void {
  port.postMessage(message, transfer);
}

type Call = Extract<ToThread, { type: 'call' }>;

/** Pause before the next try of a call that found the write lock taken: 1, 1, 2, 2, 4, 4, 5, 5 ... ms. */
function lockRetryDelayMs(tries: number): number {
  return Math.min(5, 2 ** Math.floor((tries - 1) / 2));
}

/**
 * Serves the calls of one connection without ever sleeping on SQLite's write lock. The connection's
 * busy timeout is 0: a call that finds another process's write lock fails at once with SQLITE_BUSY
 * (its transaction rolled back, nothing written) and is tried again on a timer, while the calls behind
 * it go on. Reads never take the write lock in WAL mode, so a read is answered at once even while
 * writes wait; writes wait in the order they came (a write behind a waiting one waits with it).
 * A call that still finds the lock taken after `budgetMs` fails with the StoreUnavailableError of its
 * last try, as SQLite's own busy timeout would have failed it.
 *
 * Why (ADR 0010 addendum): with SQLite's blocking busy handler every call queued behind a write that
 * waited for another process's lock, and that handler sleeps in growing steps (up to 100 ms): on the
 * whole-fab replay at 34x a defender's every store read took 120-140 ms on average.
 */
export class LockAwareServer {
  /** Writes not yet answered, oldest first: only the first one is being tried. */
  private readonly writes: { readonly msg: Call; since: number; tries: number }[] = [];
  /** The write loop is trying the first write or waiting for its next try. */
  private writing = false;
  private drained: (() => void) | undefined;

  constructor(
    private readonly store: SqliteStore,
    private readonly port: MessagePort,
    private readonly budgetMs: number,
  ) {}

  serve(msg: Call): void {
    if (kindOf(msg) === 'write') {
      this.writes.push({ msg, since: 0, tries: 0 });
      if (!this.writing) void this.writeLoop();
      return;
    }
    void this.tryRead(msg, performance.now(), 1);
  }

  /** Resolves once every write received has been answered (each one's wait is bounded by the budget). */
  idle(): Promise<void> {
    if (this.writes.length === 0) return Promise.resolve();
    return new Promise((resolve) => (this.drained = resolve));
  }

  private async writeLoop(): Promise<void> {
    this.writing = true;
    for (let head = this.writes[0]; head; head = this.writes[0]) {
      // A write's budget starts when it is first tried, not while it queues behind another.
      if (head.tries++ === 0) head.since = performance.now();
      if ((await this.tryOnce(head.msg, head.since)) === 'busy') {
        await new Promise((resolve) => setTimeout(resolve, lockRetryDelayMs(head.tries)));
        continue;
      }
      this.writes.shift();
    }
    this.writing = false;
    this.drained?.();
    this.drained = undefined;
  }

  private async tryRead(msg: Call, since: number, tries: number): Promise<void> {
    if ((await this.tryOnce(msg, since)) === 'busy') {
      // A read meets a lock only while another connection recovers or resets the WAL: try it again alone.
      setTimeout(() => void this.tryRead(msg, since, tries + 1), lockRetryDelayMs(tries));
    }
  }

  /**
   * Makes the call once and answers it, or returns 'busy' (not answered) when it found the lock taken
   * within its budget. The repository methods do their SQLite work before they return their promise,
   * so calls reach the database in the order they are made here.
   */
  private async tryOnce(msg: Call, since: number): Promise<'answered' | 'busy'> {
    try {
      const methods = THREAD_METHODS[msg.repo] as Record<string, unknown> | undefined;
      if (!methods || !Object.hasOwn(methods, msg.method))
        throw new TypeError(`store thread: unknown operation ${msg.repo}.${msg.method}`);
      const repo = (WIRE_READS.has(`${msg.repo}.${msg.method}`) ? this.store.uchart.wire : this.store[msg.repo]) as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
      const value = await repo[msg.method]?.(...msg.args);
      // The thread keeps nothing it returns: sample arrays move to the caller instead of being copied.
      post(this.port, { type: 'result', id: msg.id, value }, sampleBuffers(value, disownTraceBuffer));
    } catch (err) {
      if (isLockBusy(err) && performance.now() - since < this.budgetMs) return 'busy';
      post(this.port, { type: 'failed', id: msg.id, error: toWireError(err) });
    }
    return 'answered';
  }
}

/** A call's kind; an unknown operation counts as a read (it is answered with an error at once). */
function kindOf(msg: Call): 'read' | 'write' {
  const methods = THREAD_METHODS[msg.repo] as Record<string, 'read' | 'write'> | undefined;
  return (methods && Object.hasOwn(methods, msg.method) && methods[msg.method]) || 'read';
}

async function run(port: MessagePort, options: ThreadOpenOptions): Promise<void> {
  let store: SqliteStore;
  try {
    store = await SqliteStore.open(options);
  } catch (err) {
    post(port, { type: 'open-failed', error: toWireError(err) });
    return;
  }
  // Opening (and migrating) waited for the lock as SQLite does; from here on the server waits, on a timer.
  store.database.pragma('busy_timeout = 0');
  const server = new LockAwareServer(store, port, options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS);
  post(port, { type: 'ready', journalMode: store.journalMode });
  port.on('message', (msg: ToThread) => {
    if (msg.type === 'return-buffers') {
      for (const buffer of msg.buffers) store.tracePool.give(buffer);
      return;
    }
    if (msg.type === 'pool-stats') {
      post(port, { type: 'pool-stats', id: msg.id, stats: store.tracePool.stats() });
      return;
    }
    if (msg.type === 'close') {
      // The calls already made finish first (a write waiting for the lock, within its budget).
      void server
        .idle()
        .then(() => store.close())
        .then(() => post(port, { type: 'closed' }));
      return;
    }
    server.serve(msg);
  });
}

const data = workerData as { mark?: string; options?: ThreadOpenOptions } | null;
if (!isMainThread && parentPort && data?.mark === STORE_THREAD_MARK && data.options) {
  void run(parentPort, data.options);
}
