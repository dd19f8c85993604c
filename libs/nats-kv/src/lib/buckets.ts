import type { NatsConnection } from '@nats-io/nats-core';
import { jetstreamManager } from '@nats-io/jetstream';
import { Bucket, Kvm, KV } from '@nats-io/kv';
import { isStreamNotFound, mapKvError, StreamMissingError } from './errors';

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

/**
 * The keys of a bucket that hold a value or a delete marker, sorted, each once, from one stream-info
 * request (the subjects of the bucket's stream).
 *
 * Not `kv.keys()`: that lister is an ordered push consumer which stops on the message reporting
 * nothing pending or on an idle heartbeat. With writes landing during the listing it returned a key
 * twice, and in some runs it never settled at all (a membership test waited 150 s on it). A stream
 * info request is bounded by the request timeout and pages through any number of subjects.
 */
export async function listKeys(kv: KV, bucket: string): Promise<string[]> {
  if (!(kv instanceof Bucket)) throw new TypeError(`bucket ${bucket}: listKeys needs a KV opened by @nats-io/kv's Kvm`);
  try {
    const info = await kv.jsm.streams.info(kv.bucketName(), { subjects_filter: kv.fullKeyName('>') });
    const subjects = Object.keys(info.state.subjects ?? {});
    return subjects.map((s) => kv.decodeKey(s.substring(kv.prefixLen))).sort();
  } catch (err) {
    // The bucket is gone (NATS lost its store): retryable, whoever needs it creates it again.
    if (isStreamNotFound(err)) throw new StreamMissingError(`KV_${bucket}`, { cause: err });
    throw mapKvError(err, bucket, '>');
  }
}

/**
 * Creates `name` again if NATS lost it (restarted with an empty store), with the same settings as
 * {@link openBucket}; existing handles to it work again once it exists. Cheap when it exists (one
 * stream-info request).
 *
 * @returns whether it had to be created.
 * @throws NatsUnavailableError when NATS does not answer.
 */
export async function recreateBucketIfMissing(nc: NatsConnection, name: string, opts: BucketOptions = {}): Promise<boolean> {
  try {
    await (await jetstreamManager(nc)).streams.info(`KV_${name}`);
    return false;
  } catch (err) {
    if (!isStreamNotFound(err)) throw mapKvError(err, name, '(bucket)');
  }
  await openBucket(nc, name, opts);
  return true;
}
