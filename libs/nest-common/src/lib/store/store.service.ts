import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { HeapInfo } from 'node:v8';
import { retryingUntilStopped } from '@defender/backoff';
import type { DefenderStore } from '@defender/contracts';
import { openStore, StoreConfig, type StoreObserver, type StoreOperation, type TraceBufferPoolStats } from '@defender/store';
import { HealthRegistry } from '../health/health.registry';

export const STORE_CONFIG = Symbol('STORE_CONFIG');

/** Exit code of a process whose store stopped working for good (a SQLite store thread that died). */
export const EXIT_STORE_FAILED = 6;

/** How often an open store is asked whether it failed for good. */
const FAILURE_CHECK_MS = 1000;

/**
 * A store that can fail for good (the SQLite store's thread): `failure` says why. A store with a
 * thread of its own also tells that thread's V8 heap and CPU time, and profiles it. Every store tells
 * what its trace buffer pool holds.
 */
interface MayFail {
  readonly failure?: Error;
  heapStatistics?(): Promise<HeapInfo | undefined>;
  threadCpuUsage?(): Promise<NodeJS.CpuUsage | undefined>;
  threadCpuProfile?(ms: number): Promise<unknown>;
  tracePoolStats?(): Promise<TraceBufferPoolStats | undefined>;
}

/**
 * The process's store (Cassandra or SQLite). Opens in the background with retries (the HTTP server
 * comes up first and reports not-ready with a `store` check), closes on shutdown.
 */
@Injectable()
export class StoreService implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(StoreService.name);
  private store: DefenderStore | undefined;
  private lastError: string | undefined;
  private closing = false;
  /** Aborted on shutdown: the first connection's retries stop. */
  private readonly stopping = new AbortController();
  private readonly opened: Promise<DefenderStore>;
  private resolveOpened!: (s: DefenderStore) => void;
  private readonly observers: StoreObserver[] = [];
  private failureCheck: NodeJS.Timeout | undefined;
  /** What happens when the store fails for good (default: exit {@link EXIT_STORE_FAILED}; tests replace it). */
  onFailure: (err: Error) => void = () => setImmediate(() => process.exit(EXIT_STORE_FAILED));

  constructor(
    @Inject(STORE_CONFIG) private readonly config: StoreConfig,
    private readonly health: HealthRegistry,
  ) {
    this.opened = new Promise((resolve) => (this.resolveOpened = resolve));
  }

  onModuleInit(): void {
    this.health.register('store', () => {
      const failed = this.failure();
      if (failed) return { ok: false, detail: failed.message };
      return this.store ? { ok: true, detail: this.config.kind } : { ok: false, detail: this.lastError ?? 'opening' };
    });
    void this.openLoop();
  }

  /** Which store this process opens: `sqlite` (on a thread of its own) or `cassandra` (on the main thread). */
  get backend(): StoreConfig['kind'] {
    return this.config.kind;
  }

  /** Resolves once the store is open (migrations applied). */
  ready(): Promise<DefenderStore> {
    return this.opened;
  }

  /**
   * Adds a receiver of every store operation (name, read/write, duration, outcome), e.g. for
   * metrics; operations from before the call are not reported. It must not throw.
   */
  addObserver(observer: StoreObserver): void {
    this.observers.push(observer);
  }

  async onApplicationShutdown(): Promise<void> {
    this.closing = true;
    this.stopping.abort();
    if (this.failureCheck) clearInterval(this.failureCheck);
    await this.store?.close();
  }

  /** The V8 heap of the store's own thread (the SQLite store); `undefined` for a store without one. */
  threadHeap(): Promise<HeapInfo | undefined> {
    return (this.store as MayFail | undefined)?.heapStatistics?.() ?? Promise.resolve(undefined);
  }

  /** The store's pool of trace buffers (reuses, allocations, bytes held); `undefined` before it is open. */
  tracePoolStats(): Promise<TraceBufferPoolStats | undefined> {
    return (this.store as MayFail | undefined)?.tracePoolStats?.() ?? Promise.resolve(undefined);
  }

  /** The CPU time of the store's own thread (the SQLite store); `undefined` for a store without one. */
  threadCpuUsage(): Promise<NodeJS.CpuUsage | undefined> {
    return (this.store as MayFail | undefined)?.threadCpuUsage?.() ?? Promise.resolve(undefined);
  }

  /**
   * A CPU profile of the store's own thread over the next `ms` (a .cpuprofile object).
   * @throws Error when the store is not open or has no thread of its own (Cassandra: its work is on the main thread).
   */
  threadCpuProfile(ms: number): Promise<unknown> {
    const store = this.store as MayFail | undefined;
    if (!store) return Promise.reject(new Error('the store is not open'));
    if (!store.threadCpuProfile) return Promise.reject(new Error(`the ${this.config.kind} store has no thread of its own: profile the main thread`));
    return store.threadCpuProfile(ms);
  }

  /** Why the open store stopped working for good, if it did. */
  failure(): Error | undefined {
    return (this.store as MayFail | undefined)?.failure;
  }

  /**
   * A store that failed for good (its thread died: the outcome of writes in flight is unknown, so it
   * is not restarted in place) would leave every chamber paused while heartbeats go on, which the
   * controller cannot see. The process exits instead: it is restarted, and its chambers move.
   */
  private watchFailure(): void {
    this.failureCheck = setInterval(() => {
      const failed = this.failure();
      if (!failed || this.closing) return;
      if (this.failureCheck) clearInterval(this.failureCheck);
      this.logger.fatal({ msg: 'store failed for good; exiting so the process is restarted', kind: this.config.kind, err: failed.message, exitCode: EXIT_STORE_FAILED });
      this.onFailure(failed);
    }, FAILURE_CHECK_MS);
    this.failureCheck.unref();
  }

  private async openLoop(): Promise<void> {
    if (this.config.kind === 'sqlite' && this.config.sqlite.filename !== ':memory:') {
      mkdirSync(dirname(this.config.sqlite.filename), { recursive: true });
    }
    // Until it succeeds, or the service stops first (then nothing is left to do).
    await retryingUntilStopped(
      async () => {
        const store = await openStore(this.withObserver());
        if (this.closing) {
          await store.close();
          return;
        }
        this.store = store;
        this.lastError = undefined;
        this.logger.log({ msg: 'store open', kind: this.config.kind });
        this.watchFailure();
        this.resolveOpened(store);
      },
      {
        what: 'open the store',
        baseMs: 250,
        maxMs: 10_000,
        random: Math.random,
        signal: this.stopping.signal,
        onRetry: (err, _attempt, delayMs) => {
          this.lastError = (err as Error).message;
          this.logger.warn({ msg: 'store not available; retrying', kind: this.config.kind, err: this.lastError, delayMs: Math.round(delayMs) });
        },
      },
    );
  }

  /** The configuration with an observer that forwards to those added by {@link addObserver}. */
  private withObserver(): StoreConfig {
    const configured = this.config.kind === 'cassandra' ? this.config.cassandra.observer : this.config.sqlite.observer;
    const observer = (op: StoreOperation): void => {
      configured?.(op);
      for (const o of this.observers) o(op);
    };
    return this.config.kind === 'cassandra'
      ? { kind: 'cassandra', cassandra: { ...this.config.cassandra, observer } }
      : { kind: 'sqlite', sqlite: { ...this.config.sqlite, observer } };
  }
}
