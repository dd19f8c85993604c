import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { HeapInfo } from 'node:v8';
import {
  InvalidRecordError,
  StoreClosedError,
  StoreUnavailableError,
  type AlarmRepository,
  type ChamberMetadataRepository,
  type ChamberStateRepository,
  type DefenderStore,
  type LimitSetRecord,
  type OutboxRepository,
  type SampleArray,
  type StrategyRepository,
  type MonitorStateRepository,
  type ChamberMemoryRepository,
  type MonitorModelRepository,
  type ChamberEventRepository,
  type TraceRecord,
  type TraceRepository,
  type UChartRepository,
} from '@defender/contracts';
import { freeArrayBuffer, type TraceBufferPoolStats } from '../codec/trace-buffer-pool';
import { adoptTraceBuffer, type TraceBufferHome } from '../codec/trace-codec';
import { limitSetFromWire, type LimitSetWire } from '../codec/rows';
import { observed, type StoreObserver } from '../observer';
import type { SqliteStoreOptions } from './sqlite-store';
import {
  fromWireError,
  STORE_THREAD_BUNDLE_FILE,
  STORE_THREAD_MARK,
  THREAD_METHODS,
  WIRE_READS,
  type FromThread,
  type RepoName,
  type ThreadOpenOptions,
  type ToThread,
} from './thread-protocol';

interface Pending {
  readonly operation: string;
  readonly kind: 'read' | 'write';
  readonly resolve: (value: unknown) => void;
  readonly reject: (err: unknown) => void;
}

/**
 * A trace moved here from the store thread, as one built here: its sample buffers are owned (so
 * releaseTraceMemory sends them `home`, back to the thread's pool) and its arrays are this realm's (a
 * vm context under jest sees the deserialized ones as foreign; the views are re-made over the same
 * memory, not copied).
 */
function adoptTrace(t: TraceRecord, home: TraceBufferHome): TraceRecord {
  const local = (a: SampleArray): SampleArray => {
    adoptTraceBuffer(a.buffer as ArrayBuffer, home);
    if (a instanceof Float64Array || a instanceof Float32Array) return a;
    const foreign = a as SampleArray;
    return Object.prototype.toString.call(foreign) === '[object Float32Array]'
      ? new Float32Array(foreign.buffer, foreign.byteOffset, foreign.length)
      : new Float64Array(foreign.buffer, foreign.byteOffset, foreign.length);
  };
  const svids = new Map<string, SampleArray>();
  for (const [name, a] of t.svids) svids.set(name, local(a));
  const timing: TraceRecord['timing'] =
    t.timing.kind === 'explicit'
      ? { ...t.timing, timesSeconds: local(t.timing.timesSeconds) as Float64Array }
      : t.timing;
  return { ...t, svids, timing };
}

/**
 * The store thread's name: also its OS thread's name (`/proc/<pid>/task/<tid>/comm`, `top -H`), so its
 * CPU can be told from the main thread's without the process's help.
 */
export const STORE_THREAD_NAME = 'sqlite-store';

/** Walks up from `dir` to the workspace root (the directory holding tools/scripts/register.js). */
function registerScript(dir: string): string {
  for (let d = dir; ; d = dirname(d)) {
    const candidate = join(d, 'tools', 'scripts', 'register.js');
    if (existsSync(candidate)) return candidate;
    if (dirname(d) === d)
      throw new Error(
        `SQLite store thread: tools/scripts/register.js not found above ${dir} (needed to run the thread from TypeScript source)`,
      );
  }
}

/**
 * Starts the store thread. From TypeScript source (jest, `node -r tools/scripts/register.js`) the
 * thread registers the same transpiler and requires its entry; from an app bundle it runs the
 * bundle's `sqlite-store-thread.js` entry, next to this code or to the main script.
 */
function startThread(options: ThreadOpenOptions): Worker {
  const workerData = { mark: STORE_THREAD_MARK, options };
  if (__filename.endsWith('.ts')) {
    const entry = join(__dirname, 'sqlite-store-thread.ts');
    const register = registerScript(__dirname);
    // The thread's transpiler (SWC) is a native addon: loaded only in the thread (by a process that
    // has not loaded it itself) it is unloaded as the thread exits while V8 may still call into it,
    // and the process dies with SIGSEGV (the same class as WiseLibs/better-sqlite3#1476). Loaded
    // here as well, it stays mapped.
    createRequire(register)('@swc/core');
    const bootstrap = `require(${JSON.stringify(register)}); require(${JSON.stringify(entry)});`;
    return new Worker(bootstrap, { eval: true, workerData, name: STORE_THREAD_NAME });
  }
  // (Not require.main: a bundle's `require` is webpack's. __dirname is the bundle's directory.)
  const candidates = [
    join(__dirname, STORE_THREAD_BUNDLE_FILE),
    ...(process.argv[1] ? [join(dirname(process.argv[1]), STORE_THREAD_BUNDLE_FILE)] : []),
  ];
  const script = candidates.find((c) => existsSync(c));
  if (!script) {
    throw new Error(
      `SQLite store thread: ${STORE_THREAD_BUNDLE_FILE} not found (looked at ${candidates.join(', ')}); the app bundle must include it as a second entry`,
    );
  }
  return new Worker(script, { workerData, name: STORE_THREAD_NAME });
}

/** Starts the store thread and waits until it opened the database (its journal mode), or why it could not. */
function openThread(threadOptions: Omit<SqliteStoreOptions, 'observer'>, filename: string): Promise<{ worker: Worker; journalMode: string }> {
  return new Promise((resolve, reject) => {
    let worker: Worker;
    try {
      worker = startThread(threadOptions);
    } catch (err) {
      reject(
        new StoreUnavailableError(`SQLite: the store thread could not start: ${(err as Error).message}`, {
          cause: err,
        }),
      );
      return;
    }
    const opening = (msg: FromThread): void => {
      settle();
      if (msg.type === 'ready')
        resolve({ worker, journalMode: msg.journalMode });
      else {
        reject(
          msg.type === 'open-failed'
            ? fromWireError(msg.error)
            : new StoreUnavailableError(
                `SQLite: unexpected first message ${msg.type} from the store thread`,
              ),
        );
        void worker.terminate();
      }
    };
    const died = (err: unknown): void => {
      settle();
      reject(
        new StoreUnavailableError(
          `SQLite: the store thread died while opening ${filename}: ${String((err as Error)?.message ?? err)}`,
          { cause: err },
        ),
      );
      void worker.terminate();
    };
    const exited = (code: number): void => died(new Error(`exit code ${code}`));
    const settle = (): void => {
      worker.off('message', opening);
      worker.off('error', died);
      worker.off('exit', exited);
    };
    worker.on('message', opening);
    worker.on('error', died);
    worker.on('exit', exited);
  });
}

/**
 * The SQLite store on its own thread: one {@link SqliteStore} connection (the process's one writer)
 * runs on a worker thread and this object forwards every repository call to it, so a busy wait for
 * another process's write lock, a big trace copy or a slow disk never blocks the caller's event
 * loop (heartbeats, health, NATS keep running). Same interface, semantics and errors as SqliteStore:
 * errors are rebuilt on this side as instances of their classes, with their fields and cause chain.
 *
 * Calls reach the database in the order they were made, except that a write which finds another
 * process's write lock waits for it on a timer (up to `busyTimeoutMs`) while the reads made after it
 * are answered from the committed state (WAL); the writes behind a waiting one wait with it, in order.
 * A caller that needs a write's effect awaits the write (as with any store of the port: Cassandra
 * orders nothing either). Trace samples read come over without a copy (their buffers move here); a
 * trace written is copied once into the thread.
 *
 * When the thread dies, every pending and later call fails with StoreUnavailableError and
 * {@link failure} says why; the thread is not restarted (pending writes may or may not have
 * committed: `outcomeUnknown`). The process must reopen the store.
 */
export class ThreadedSqliteStore implements DefenderStore {
  readonly kind = 'sqlite';
  readonly chamberMetadata: ChamberMetadataRepository;
  readonly traces: TraceRepository;
  readonly uchart: UChartRepository;
  readonly chamberState: ChamberStateRepository;
  readonly alarms: AlarmRepository;
  readonly outbox: OutboxRepository;
  readonly strategies: StrategyRepository;
  readonly monitorState: MonitorStateRepository;
  readonly monitorModels: MonitorModelRepository;
  readonly chamberMemory: ChamberMemoryRepository;
  readonly chamberEvents: ChamberEventRepository;

  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private closed = false;
  private closing: Promise<void> | undefined;
  private threadFailure: StoreUnavailableError | undefined;
  private onClosed: (() => void) | undefined;
  /** Pool statistics asked of the thread, by request id (ids shared with calls). */
  private readonly poolStatsWaiting = new Map<number, (stats: TraceBufferPoolStats | undefined) => void>();
  /** Where a released trace's buffer goes: moved back into the thread's pool, or freed once it is gone. */
  private readonly traceHome: TraceBufferHome = (buffer) => this.returnTraceBuffer(buffer);

  private constructor(
    private readonly worker: Worker,
    /** The database file (or `:memory:`). */
    readonly filename: string,
    /** `wal` for a file, `memory` for `:memory:`. */
    readonly journalMode: string,
    private readonly observer: StoreObserver | undefined,
  ) {
    this.chamberMetadata = this.repository('chamberMetadata');
    this.traces = this.repository('traces');
    this.uchart = this.repository('uchart');
    this.chamberState = this.repository('chamberState');
    this.alarms = this.repository('alarms');
    this.outbox = this.repository('outbox');
    this.strategies = this.repository('strategies');
    this.monitorState = this.repository('monitorState');
    this.monitorModels = this.repository('monitorModels');
    this.chamberMemory = this.repository('chamberMemory');
    this.chamberEvents = this.repository('chamberEvents');
    worker.on('message', (msg: FromThread) => this.onMessage(msg));
    worker.on('error', (err) => this.fail('the thread threw', err));
    worker.on('messageerror', (err) => this.fail('a reply could not be decoded', err));
    worker.on('exit', (code) => {
      if (this.closed) this.finishClose();
      else this.fail(`the thread exited with code ${code}`);
    });
    worker.unref();
  }

  /**
   * Starts the thread and opens the database there (as {@link SqliteStore.open}).
   * @throws StoreUnavailableError when the file cannot be opened, stays locked or the thread cannot start.
   * @throws MigrationError when the schema cannot be brought up to date.
   */
  static async open(options: SqliteStoreOptions): Promise<ThreadedSqliteStore> {
    const { observer, ...threadOptions } = options;
    const { worker, journalMode } = await openThread(threadOptions, options.filename);
    return new ThreadedSqliteStore(worker, options.filename, journalMode, observer);
  }

  /** Why the thread stopped serving (it is not restarted), or undefined while it works. */
  get failure(): StoreUnavailableError | undefined {
    return this.threadFailure;
  }

  /**
   * The store thread's V8 heap (its own isolate), for memory metrics; `undefined` once the thread
   * stopped or when it cannot answer.
   */
  async heapStatistics(): Promise<HeapInfo | undefined> {
    if (this.closed || this.threadFailure) return undefined;
    try {
      return await this.worker.getHeapStatistics();
    } catch {
      return undefined; // the thread ended meanwhile
    }
  }

  /**
   * The thread's trace buffer pool: reuses, allocations and the bytes it holds (for metrics);
   * `undefined` once the thread stopped.
   */
  tracePoolStats(): Promise<TraceBufferPoolStats | undefined> {
    if (this.closed || this.threadFailure) return Promise.resolve(undefined);
    const id = this.nextId++;
    return new Promise((resolve) => {
      this.poolStatsWaiting.set(id, resolve);
      this.worker.postMessage({ type: 'pool-stats', id } satisfies ToThread);
    });
  }

  /**
   * CPU time the store thread has used since it started (user and system, microseconds, as
   * `process.cpuUsage`); `undefined` once the thread stopped or when it cannot answer.
   */
  async threadCpuUsage(): Promise<NodeJS.CpuUsage | undefined> {
    if (this.closed || this.threadFailure) return undefined;
    try {
      return await this.worker.cpuUsage();
    } catch {
      return undefined; // the thread ended meanwhile
    }
  }

  /**
   * A V8 CPU profile of the store thread over the next `ms` milliseconds (a .cpuprofile object); the
   * thread keeps serving calls meanwhile.
   * @throws StoreUnavailableError when the thread stopped (or stops before the profile is taken).
   */
  async threadCpuProfile(ms: number): Promise<unknown> {
    if (this.closed || this.threadFailure)
      throw new StoreUnavailableError('SQLite: the store thread is not running: no profile');
    try {
      const handle = await this.worker.startCpuProfile();
      await new Promise((resolve) => setTimeout(resolve, ms));
      return JSON.parse(await handle.stop()) as unknown;
    } catch (err) {
      throw new StoreUnavailableError(`SQLite: the store thread could not be profiled: ${(err as Error).message}`, {
        cause: err,
      });
    }
  }

  /**
   * Lets the calls already made finish, then closes the database and stops the thread. Later calls
   * reject with StoreClosedError (as do calls the thread never answered). Idempotent.
   */
  close(): Promise<void> {
    this.closing ??= this.shutDown();
    return this.closing;
  }

  private async shutDown(): Promise<void> {
    this.closed = true;
    if (!this.threadFailure) {
      const done = new Promise<void>((resolve) => (this.onClosed = resolve));
      this.worker.ref();
      this.worker.postMessage({ type: 'close' } satisfies ToThread);
      await done;
    }
    await this.worker.terminate();
  }

  private finishClose(): void {
    this.rejectAll(
      () => new StoreClosedError({ cause: new Error('the store was closed before its thread answered') }),
    );
    this.onClosed?.();
    this.onClosed = undefined;
  }

  private repository<R extends RepoName>(repo: R): DefenderStore[R] {
    const methods: Record<string, (...args: unknown[]) => Promise<unknown>> = {};
    for (const [method, kind] of Object.entries(THREAD_METHODS[repo])) {
      methods[method] = (...args) =>
        observed(
          this.observer,
          'sqlite',
          `${repo}.${method}`,
          kind,
          () => this.call(repo, method, kind, args),
          (e) => e,
        );
    }
    return methods as unknown as DefenderStore[R];
  }

  private call(repo: RepoName, method: string, kind: 'read' | 'write', args: unknown[]): Promise<unknown> {
    const operation = `${repo}.${method}`;
    if (this.closed) return Promise.reject(new StoreClosedError());
    if (this.threadFailure)
      return Promise.reject(
        new StoreUnavailableError(this.threadFailure.message, { cause: this.threadFailure.cause }),
      );
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      try {
        this.worker.postMessage({ type: 'call', id, repo, method, args } satisfies ToThread);
      } catch (err) {
        reject(
          new InvalidRecordError(
            operation,
            [{ path: 'arguments', message: `cannot be sent to the store thread: ${(err as Error).message}` }],
            { cause: err },
          ),
        );
        return;
      }
      this.pending.set(id, { operation, kind, resolve, reject });
      // While a call is out the thread keeps the process alive (as an in-process call would).
      if (this.pending.size === 1) this.worker.ref();
    });
  }

  /**
   * Moves a released trace's buffer back to the thread, whose pool fills the next read with it (a
   * transfer: no copy, and every view of it here reads as empty). Freed here when the thread is gone.
   */
  private returnTraceBuffer(buffer: ArrayBuffer): void {
    if (this.closed || this.threadFailure) {
      freeArrayBuffer(buffer);
      return;
    }
    try {
      this.worker.postMessage({ type: 'return-buffers', buffers: [buffer] } satisfies ToThread, [buffer]);
    } catch {
      freeArrayBuffer(buffer); // not transferable after all (cannot happen for a buffer the thread sent)
    }
  }

  private settle(id: number): Pending | undefined {
    const p = this.pending.get(id);
    this.pending.delete(id);
    if (this.pending.size === 0 && !this.closed) this.worker.unref();
    return p;
  }

  private onMessage(msg: FromThread): void {
    switch (msg.type) {
      case 'result': {
        const p = this.settle(msg.id);
        if (!p) return;
        if (p.operation === 'traces.read') p.resolve(adoptTrace(msg.value as TraceRecord, this.traceHome));
        else if (WIRE_READS.has(p.operation)) {
          // The limit sets' JSON, left as text by the thread, is parsed here (a corrupt column rejects the call).
          try {
            p.resolve(decodeWire(msg.value as LimitSetWire | LimitSetWire[] | undefined));
          } catch (err) {
            p.reject(err);
          }
        } else p.resolve(msg.value);
        return;
      }
      case 'failed':
        this.settle(msg.id)?.reject(fromWireError(msg.error));
        return;
      case 'pool-stats':
        this.poolStatsWaiting.get(msg.id)?.(msg.stats);
        this.poolStatsWaiting.delete(msg.id);
        return;
      case 'closed':
        this.finishClose();
        return;
      default:
        this.fail(`unexpected message ${msg.type} from the thread`);
    }
  }

  private fail(reason: string, cause?: unknown): void {
    if (this.threadFailure || this.closed) {
      if (this.closed) this.finishClose();
      return;
    }
    const detail = cause instanceof Error ? `: ${cause.message}` : '';
    this.threadFailure = new StoreUnavailableError(
      `SQLite store thread failed (${reason}${detail}); the store must be reopened`,
      { cause },
    );
    const failure = this.threadFailure;
    this.rejectAll(
      (p) =>
        new StoreUnavailableError(`${failure.message}; ${p.operation} was not answered`, {
          cause,
          outcomeUnknown: p.kind === 'write',
        }),
    );
    void this.worker.terminate();
  }

  private rejectAll(error: (p: Pending) => Error): void {
    for (const answer of this.poolStatsWaiting.values()) answer(undefined);
    this.poolStatsWaiting.clear();
    const all = [...this.pending.values()];
    this.pending.clear();
    for (const p of all) p.reject(error(p));
  }
}

function decodeWire(value: LimitSetWire | LimitSetWire[] | undefined): LimitSetRecord | LimitSetRecord[] | undefined {
  if (value === undefined) return undefined;
  return Array.isArray(value) ? value.map(limitSetFromWire) : limitSetFromWire(value);
}
