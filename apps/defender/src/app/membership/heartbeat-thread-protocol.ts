import type { HeldClaim } from '@defender/nats-kv/heartbeat';
import type { HeartbeatSnapshot } from './heartbeat-beater';

/** Marks the worker data of a heartbeat thread (the entry refuses to run without it). */
export const HEARTBEAT_THREAD_MARK = 'defender-heartbeat-thread';
/** The thread's entry in the app bundle, next to main.js (apps/defender/webpack.config.js). */
export const HEARTBEAT_THREAD_BUNDLE_FILE = 'heartbeat-thread.js';

/** What the thread needs to connect on its own (the process's NATS settings, TLS as file paths). */
export interface ThreadNatsOptions {
  readonly servers: string[];
  readonly name: string;
  readonly user?: string;
  readonly pass?: string;
  readonly token?: string;
  readonly tls?: { caFile?: string; certFile?: string; keyFile?: string };
  readonly reconnectTimeWaitMs?: number;
}

export interface HeartbeatThreadInit {
  readonly mark: typeof HEARTBEAT_THREAD_MARK;
  readonly nats: ThreadNatsOptions;
  readonly buckets: { readonly stableIds: string; readonly heartbeats: string };
  readonly registry: { readonly maxDefenders: number; readonly intervalSeconds: number; readonly ownerId: string; readonly podName?: string };
  readonly claim: HeldClaim;
  readonly first: HeartbeatSnapshot;
  readonly hangAfterMs: number;
}

export type ToHeartbeatThread =
  | { readonly type: 'pulse'; readonly snapshot?: HeartbeatSnapshot }
  /** Stop beating; with `leave`, remove the heartbeat and release the claim (clean shutdown). */
  | { readonly type: 'stop'; readonly leave: boolean };

export type FromHeartbeatThread =
  | { readonly type: 'beat' }
  | { readonly type: 'failed'; readonly message: string }
  | { readonly type: 'claim-lost'; readonly message: string }
  | { readonly type: 'withheld'; readonly silentMs: number }
  | { readonly type: 'stopped'; readonly left: boolean; readonly message?: string };
