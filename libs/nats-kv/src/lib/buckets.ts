import type { NatsConnection } from '@nats-io/nats-core';
import { jetstreamManager } from '@nats-io/jetstream';
import { Bucket, Kvm, KV } from '@nats-io/kv';
import { DEFAULT_BUCKETS } from './bucket-names';
import { isStreamNotFound, mapKvError, StreamMissingError } from './errors';
import { MAX_MAP_VALUE_BYTES } from './map-chunks';

export { DEFAULT_BUCKETS };

/**
 * Room for the headers NATS counts in a message's size against `max_msg_size` (a KV write carries
 * at most an expected-revision header: under 100 bytes).
 */
const HEADER_ALLOWANCE_BYTES = 1024;

/**
 * The server-side `max_msg_size` of each bucket (its KV `maxValueSize`), from the bound of its
 * values (docs/architecture.md, "How large each value and message can get"): a value over it is
 * refused by NATS whoever writes it.
 * - stable-ID claim: fixed fields, IDs and owner at most 128 characters, pod name 253: < 1 KB.
 * - heartbeat: fixed fields plus at most 64 `[chamber key (<= 257), rate]` pairs: < 20 KB.
 * - assignment map head and chunks: `publish` refuses either over MAX_MAP_VALUE_BYTES.
 */
export const BUCKET_VALUE_LIMITS = {
  stableIds: 4 * 1024,
  heartbeats: 32 * 1024,
  assignments: MAX_MAP_VALUE_BYTES + HEADER_ALLOWANCE_BYTES,
} as const;

export interface BucketOptions {
  /** JetStream replicas (1 for a single server; 3 in production clusters). */
  replicas?: number;
  /** Values kept per key (for audit/debugging); compare-and-set works with any history. */
  history?: number;
  /** Largest value NATS accepts in the bucket (its `max_msg_size`; see BUCKET_VALUE_LIMITS); unset: no limit of its own. */
  maxValueBytes?: number;
  /**
   * This process writes the bucket: when it exists with another `max_msg_size` (created by an
   * older version, or without a limit), set `maxValueBytes` on it. Needs
   * `$JS.API.STREAM.UPDATE.KV_<name>`, which only the bucket's writer has (permissions.ts).
   */
  applyLimit?: boolean;
}

/**
 * What nats-server answers a stream create that lost the race to a create with another configuration
 * (2.9 answers either, depending on which check meets the other stream first).
 */
const CREATED_MEANWHILE = /stream name already in use|subjects overlap with an existing stream/i;

/**
 * Opens (creating when missing) a KV bucket with file storage. Safe to call from many processes at
 * once, with any options: an existing bucket is bound as it is; when another process creates the
 * bucket between this one's lookup and its create (with other options: the apps differ in
 * `maxValueBytes`), this one binds to that bucket instead of failing.
 */
export async function openBucket(nc: NatsConnection, name: string, opts: BucketOptions = {}): Promise<KV> {
  const create = () =>
    new Kvm(nc).create(name, {
      storage: 'file',
      replicas: opts.replicas ?? 1,
      history: opts.history ?? 1,
      ...(opts.maxValueBytes !== undefined ? { maxValueSize: opts.maxValueBytes } : {}),
    });
  let kv: KV;
  try {
    try {
      kv = await create();
    } catch (err) {
      if (!CREATED_MEANWHILE.test((err as Error)?.message ?? '')) throw err;
      // Created meanwhile: the lookup of a second create finds it and binds.
      kv = await create();
    }
  } catch (err) {
    throw mapKvError(err, name, '(bucket)');
  }
  if (opts.applyLimit && opts.maxValueBytes !== undefined) await applyValueLimit(nc, name, opts.maxValueBytes);
  return kv;
}

/** Sets `max_msg_size` of an existing bucket's stream to `maxValueBytes` unless it is already. */
async function applyValueLimit(nc: NatsConnection, name: string, maxValueBytes: number): Promise<void> {
  if (!(Number.isSafeInteger(maxValueBytes) && maxValueBytes > 0)) {
    throw new RangeError(`bucket ${name}: maxValueBytes must be a positive integer, got ${maxValueBytes}`);
  }
  try {
    const jsm = await jetstreamManager(nc);
    const { config } = await jsm.streams.info(`KV_${name}`);
    if (config.max_msg_size === maxValueBytes) return;
    await jsm.streams.update(`KV_${name}`, { ...config, max_msg_size: maxValueBytes });
  } catch (err) {
    throw mapKvError(err, name, '(bucket limit)');
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
