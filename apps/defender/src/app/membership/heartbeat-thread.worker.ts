/**
 * Entry point of the defender's heartbeat thread (ADR 0013; see {@link HeartbeatThread}): its own
 * NATS connection, its own event loop, nothing else to do. It refreshes the stable-ID claim and
 * writes the heartbeat every interval while the main thread keeps pulsing, and withholds both once
 * the main thread has been silent longer than `hangAfterMs` (a hung process must be judged dead).
 *
 * Loaded as a worker script: from source through tools/scripts/register.js (jest), or as the
 * `heartbeat-thread.js` entry of the app bundle (apps/defender/webpack.config.js).
 */
import { performance } from 'node:perf_hooks';
import { isMainThread, parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { Kvm } from '@nats-io/kv';
import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
// The entry point without zod: loading it would cost this thread's heap about 11 MB (ADR 0014).
import { ClaimLostError, HeartbeatWriter, natsInboxPrefixFor, StableIdRegistry } from '@defender/nats-kv/heartbeat';
import { HeartbeatBeater } from './heartbeat-beater';
import { HEARTBEAT_THREAD_MARK, type FromHeartbeatThread, type HeartbeatThreadInit, type ToHeartbeatThread } from './heartbeat-thread-protocol';

function post(port: MessagePort, msg: FromHeartbeatThread): void {
  port.postMessage(msg);
}

async function connectForever(init: HeartbeatThreadInit, stopped: () => boolean): Promise<NatsConnection | undefined> {
  const { servers, name, user, pass, token, tls, reconnectTimeWaitMs } = init.nats;
  const waitMs = reconnectTimeWaitMs ?? 1000;
  // The main thread's inbox rule (libs/nest-common NatsConnectionService): its user's, or its certificate's.
  const inboxPrefix = natsInboxPrefixFor(user, tls?.certFile);
  while (!stopped()) {
    try {
      return await connect({ servers, name, user, pass, token, ...(inboxPrefix ? { inboxPrefix } : {}), ...(tls ? { tls } : {}), reconnect: true, maxReconnectAttempts: -1, reconnectTimeWait: waitMs, noAsyncTraces: true });
    } catch {
      // Reported by the main thread's own connection; this one just tries again.
      await new Promise((r) => setTimeout(r, waitMs));
    }
  }
  return undefined;
}

async function serve(port: MessagePort, init: HeartbeatThreadInit): Promise<void> {
  const intervalMs = init.registry.intervalSeconds * 1000;
  let stopping = false;
  let ticking: Promise<void> = Promise.resolve();
  // Set once connected; the message handler (stop) may run before.
  const live: { nc?: NatsConnection; registry?: StableIdRegistry; heartbeats?: HeartbeatWriter; timer?: NodeJS.Timeout } = {};
  const beater = new HeartbeatBeater(
    {
      refreshClaim: async () => {
        await live.registry?.refresh();
      },
      publish: async (h) => {
        await live.heartbeats?.publish(h);
      },
    },
    init.first,
    { intervalMs, hangAfterMs: init.hangAfterMs, monotonic: () => performance.now(), now: Date.now },
  );

  const stop = async (leave: boolean): Promise<void> => {
    stopping = true;
    clearInterval(live.timer);
    await ticking;
    let left = false;
    let message: string | undefined;
    if (leave && live.registry && live.heartbeats) {
      try {
        await live.heartbeats.remove(init.claim.defenderId);
        await live.registry.release();
        left = true;
      } catch (err) {
        message = (err as Error).message;
      }
    }
    await live.nc?.close().catch(() => undefined);
    post(port, { type: 'stopped', left, ...(message ? { message } : {}) });
    port.close();
  };

  port.on('message', (msg: ToHeartbeatThread) => {
    if (msg.type === 'pulse') beater.pulse(msg.snapshot);
    else if (msg.type === 'stop') void stop(msg.leave);
  });

  const nc = await connectForever(init, () => stopping);
  if (!nc) return;
  live.nc = nc;
  if (stopping) return;
  const kvm = new Kvm(nc);
  const [ids, hb] = await Promise.all([kvm.open(init.buckets.stableIds), kvm.open(init.buckets.heartbeats)]);
  const registry = new StableIdRegistry(ids, init.registry, init.buckets.stableIds);
  registry.resume(init.claim);
  live.registry = registry;
  live.heartbeats = new HeartbeatWriter(hb, init.buckets.heartbeats);

  const tick = async (): Promise<void> => {
    if (stopping) return;
    const out = await beater.tick();
    if (stopping) return;
    if (out.kind === 'beat') post(port, { type: 'beat' });
    else if (out.kind === 'withheld') post(port, { type: 'withheld', silentMs: Math.round(out.silentMs) });
    else if (out.kind === 'failed') {
      if (out.error instanceof ClaimLostError) {
        // The ID is someone else's now: never beat for it again.
        stopping = true;
        clearInterval(live.timer);
        post(port, { type: 'claim-lost', message: out.error.message });
        return;
      }
      post(port, { type: 'failed', message: out.error instanceof Error ? out.error.message : String(out.error) });
    }
  };
  // A tick still waiting on NATS is not queued behind: the beater's schedule catches up on its own.
  let running = false;
  const run = (): void => {
    if (running) return;
    running = true;
    ticking = tick().finally(() => {
      running = false;
    });
  };
  run();
  live.timer = setInterval(run, Math.max(10, intervalMs / 8));
}

if (!isMainThread && parentPort && (workerData as HeartbeatThreadInit | undefined)?.mark === HEARTBEAT_THREAD_MARK) {
  // A failure ends the thread with its error: the main thread exits (no heartbeat, no membership).
  void serve(parentPort, workerData as HeartbeatThreadInit);
}
