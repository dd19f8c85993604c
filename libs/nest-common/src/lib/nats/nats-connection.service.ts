import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import type { NatsConnection } from '@nats-io/nats-core';
import { connect } from '@nats-io/transport-node';
import { retryingUntilStopped } from '@defender/backoff';
import { natsInboxPrefixFor } from '@defender/nats-kv';
import { HealthRegistry } from '../health/health.registry';
import { natsClientTls, natsTlsMode, NatsTlsFiles } from './nats-tls';

export const NATS_OPTIONS = Symbol('NATS_OPTIONS');

export interface NatsModuleOptions {
  /** `nats://host:port` URLs. */
  servers: string[];
  /** Connection name shown by the server (`/connz`). */
  name: string;
  user?: string;
  pass?: string;
  token?: string;
  /** TLS to the servers (natsTlsFromEnv); unset: plaintext, unless a server requires TLS. */
  tls?: NatsTlsFiles;
  /** Milliseconds between reconnect attempts (jitter is added by the client). */
  reconnectTimeWaitMs?: number;
}

/**
 * One NATS connection per process. Connects in the background (the HTTP server comes up first and
 * reports not-ready), reconnects forever, and drains on shutdown so in-flight publishes are flushed.
 */
@Injectable()
export class NatsConnectionService implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(NatsConnectionService.name);
  private nc: NatsConnection | undefined;
  private connected = false;
  private closing = false;
  /** Aborted on shutdown: the first connection's retries stop. */
  private readonly stopping = new AbortController();
  private lastError: string | undefined;
  private readonly firstConnect: Promise<NatsConnection>;
  private resolveFirst!: (nc: NatsConnection) => void;
  private rejectFirst!: (err: Error) => void;

  constructor(
    @Inject(NATS_OPTIONS) private readonly options: NatsModuleOptions,
    private readonly health: HealthRegistry,
  ) {
    this.firstConnect = new Promise((resolve, reject) => {
      this.resolveFirst = resolve;
      this.rejectFirst = reject;
    });
    // A caller awaiting the connection gets the rejection; nobody awaiting must not crash the process.
    this.firstConnect.catch(() => undefined);
  }

  onModuleInit(): void {
    this.health.register('nats', () =>
      this.connected
        ? { ok: true, detail: this.nc?.getServer() }
        : { ok: false, detail: this.lastError ?? 'connecting' },
    );
    void this.connectLoop();
  }

  /** Resolves once the first connection is up (rejects only if the service shuts down first). */
  connection(): Promise<NatsConnection> {
    return this.firstConnect;
  }

  isConnected(): boolean {
    return this.connected;
  }

  async onApplicationShutdown(): Promise<void> {
    this.closing = true;
    this.stopping.abort();
    this.rejectFirst(new Error('NATS connection service shut down before connecting'));
    if (this.nc && !this.nc.isClosed()) {
      try {
        await this.nc.drain();
      } catch (err) {
        this.logger.warn({ msg: 'NATS drain failed; closing', err: (err as Error).message });
        await this.nc.close();
      }
    }
  }

  private async connectLoop(): Promise<void> {
    const { servers, name, user, pass, token } = this.options;
    const tls = natsClientTls(this.options.tls);
    // A role's user may subscribe to its own inboxes only (libs/nats-kv permissions.ts); a client
    // identified by its certificate alone takes the user the certificate maps to.
    const inboxPrefix = natsInboxPrefixFor(user, tls?.certFile);
    const waitMs = this.options.reconnectTimeWaitMs ?? 1000;
    // Until it succeeds, or the service stops first (then nothing is left to do).
    await retryingUntilStopped(
      async () => {
        const nc = await connect({
          servers,
          name,
          user,
          pass,
          token,
          ...(inboxPrefix ? { inboxPrefix } : {}),
          ...(tls ? { tls } : {}),
          reconnect: true,
          maxReconnectAttempts: -1,
          reconnectTimeWait: waitMs,
          // The client otherwise builds an Error (a stack capture) for every request and JetStream
          // publish in case it fails: 2-3 % of a busy defender's main thread (bench:fab profile).
          // A failed request still carries its message and cause.
          noAsyncTraces: true,
        });
        if (this.closing) {
          await nc.close();
          return;
        }
        this.nc = nc;
        this.connected = true;
        this.lastError = undefined;
        this.logger.log({ msg: 'connected to NATS', server: nc.getServer(), tls: natsTlsMode(this.options.tls) });
        void this.watchStatus(nc);
        this.resolveFirst(nc);
      },
      {
        what: 'connect to NATS',
        // The workspace's backoff (equal jitter) capped at the client's own reconnect wait: a
        // first connection is retried about as often as a lost one is.
        baseMs: waitMs,
        maxMs: waitMs,
        random: Math.random,
        signal: this.stopping.signal,
        onRetry: (err) => {
          this.lastError = (err as Error).message;
          this.logger.warn({ msg: 'NATS connect failed; retrying', servers, err: this.lastError });
        },
      },
    );
  }

  private async watchStatus(nc: NatsConnection): Promise<void> {
    for await (const s of nc.status()) {
      switch (s.type) {
        case 'disconnect':
          this.connected = false;
          this.lastError = 'disconnected';
          this.logger.warn({ msg: 'NATS disconnected', server: s.server });
          break;
        case 'reconnect':
          this.connected = true;
          this.lastError = undefined;
          this.logger.log({ msg: 'NATS reconnected', server: s.server });
          break;
        case 'error':
          this.lastError = String(s.error);
          break;
        default:
          break;
      }
    }
    this.connected = false;
  }
}
