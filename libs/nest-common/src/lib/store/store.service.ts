import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { backoffDelayMs } from '@defender/backoff';
import type { DefenderStore } from '@defender/contracts';
import { openStore, StoreConfig, type StoreObserver, type StoreOperation } from '@defender/store';
import { HealthRegistry } from '../health/health.registry';

export const STORE_CONFIG = Symbol('STORE_CONFIG');

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
  private readonly opened: Promise<DefenderStore>;
  private resolveOpened!: (s: DefenderStore) => void;
  private readonly observers: StoreObserver[] = [];

  constructor(
    @Inject(STORE_CONFIG) private readonly config: StoreConfig,
    private readonly health: HealthRegistry,
  ) {
    this.opened = new Promise((resolve) => (this.resolveOpened = resolve));
  }

  onModuleInit(): void {
    this.health.register('store', () =>
      this.store ? { ok: true, detail: this.config.kind } : { ok: false, detail: this.lastError ?? 'opening' },
    );
    void this.openLoop();
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
    await this.store?.close();
  }

  private async openLoop(): Promise<void> {
    if (this.config.kind === 'sqlite' && this.config.sqlite.filename !== ':memory:') {
      mkdirSync(dirname(this.config.sqlite.filename), { recursive: true });
    }
    for (let attempt = 0; !this.closing; attempt++) {
      try {
        const store = await openStore(this.withObserver());
        if (this.closing) {
          await store.close();
          return;
        }
        this.store = store;
        this.lastError = undefined;
        this.logger.log({ msg: 'store open', kind: this.config.kind });
        this.resolveOpened(store);
        return;
      } catch (err) {
        this.lastError = (err as Error).message;
        const delay = backoffDelayMs(attempt, { baseMs: 250, maxMs: 10_000, random: Math.random });
        this.logger.warn({ msg: 'store not available; retrying', kind: this.config.kind, err: this.lastError, delayMs: Math.round(delay) });
        await new Promise((r) => setTimeout(r, delay));
      }
    }
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
