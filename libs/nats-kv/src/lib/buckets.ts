import type { NatsConnection } from '@nats-io/nats-core';
import { Kvm, KV } from '@nats-io/kv';
import { mapKvError } from './errors';

/** Bucket names from the seeds (overridable through NATS_KV_* variables in the apps). */
export const DEFAULT_BUCKETS = {
  stableIds: 'stable-ids',
  heartbeats: 'defender-heartbeats',
  assignments: 'defender-assignments',
} as const;

export interface BucketOptions {
  /** JetStream replicas (1 for a single server; 3 in production clusters). */
  replicas?: number;
  /** Values kept per key (for audit/debugging); compare-and-set works with any history. */
  history?: number;
}

/**
 * Opens (creating when missing) a KV bucket with file storage. Safe to call from many processes at
 * once: creating an existing bucket with the same configuration binds to it.
 */
export async function openBucket(nc: NatsConnection, name: string, opts: BucketOptions = {}): Promise<KV> {
  try {
    return await new Kvm(nc).create(name, {
      storage: 'file',
      replicas: opts.replicas ?? 1,
      history: opts.history ?? 1,
    });
  } catch (err) {
    throw mapKvError(err, name, '(bucket)');
  }
}
