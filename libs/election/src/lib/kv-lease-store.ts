import type { NatsConnection } from '@nats-io/nats-core';
import { jetstream, JetStreamApiCodes, JetStreamApiError, jetstreamManager, type JetStreamClient } from '@nats-io/jetstream';
import { KV, KvEntry, KvWatchInclude, Kvm } from '@nats-io/kv';
import { CorruptLeaseRecordError, LeaseStoreUnavailableError, RevisionConflictError } from './errors';
import { LeaseRecord, leaseRecordSchema, LeaseSnapshot } from './lease';
import { LeaseStore, WatchHandle } from './lease-store';

/**
 * The election bucket's server-side `max_msg_size`: a lease record is fixed fields, its holder at
 * most 128 characters (validation.ts): under 1 KB. A larger value is refused by NATS.
 */
export const MAX_LEASE_RECORD_BYTES = 4 * 1024;

export interface KvLeaseStoreOptions {
  /** KV bucket holding one key per election. */
  bucket: string;
  /** Values kept per key (`nats kv history <bucket> <election>` shows the last terms). Default 10. */
  history?: number;
  /** Stream replicas (1, 3 or 5); only on creation of the bucket. Default 1. */
  replicas?: number;
  /** Timeout of each KV request, in ms. Default 2000. */
  timeoutMs?: number;
  /**
   * Whether the connection is up right now; when it says no, calls fail at once with
   * {@link LeaseStoreUnavailableError} instead of waiting for their timeout.
   */
  isConnected?: () => boolean;
  /** The bucket was missing (NATS lost its store) and was created again. */
  onBucketRecreated?: (bucket: string) => void;
  /** Checking whether the bucket exists after a failed call failed too (NATS unavailable). */
  onBucketCheckFailed?: (err: Error) => void;
}

const CONFLICT_CODES: ReadonlySet<number> = new Set([
  JetStreamApiCodes.StreamWrongLastSequence,
  JetStreamApiCodes.StreamWrongLastSequenceUnknown,
]);

/**
 * {@link LeaseStore} on a NATS JetStream KV bucket: key = election name, value = the JSON
 * {@link LeaseRecord}. `create` writes with expected last subject sequence 0 (so a deleted key is
 * not silently re-created with a low token) and `update` with the revision read; the server rejects
 * either when the key moved, which surfaces as {@link RevisionConflictError}.
 *
 * The bucket must never have a TTL (`max_age`): a lease ends by the agents' clocks, never by the
 * server ageing the key out (nats-server before 2.11 does not even tell watchers when it does).
 */
export class KvLeaseStore implements LeaseStore {
  private recreating: Promise<void> | undefined;

  private constructor(
    private readonly kv: KV,
    private readonly opts: KvLeaseStoreOptions,
    private readonly js: JetStreamClient,
    private readonly nc: NatsConnection,
  ) {}

  /** Opens `bucket`, creating it (file storage, no TTL) when missing. */
  static async open(nc: NatsConnection, opts: KvLeaseStoreOptions): Promise<KvLeaseStore> {
    try {
      const js = jetstream(nc, { timeout: opts.timeoutMs ?? 2000 });
      const kv = await KvLeaseStore.createBucket(js, opts);
      return new KvLeaseStore(kv, opts, js, nc);
    } catch (err) {
      throw new LeaseStoreUnavailableError(
        `cannot open KV bucket "${opts.bucket}": ${(err as Error).message}`,
        { cause: err },
      );
    }
  }

  private static async createBucket(js: JetStreamClient, opts: KvLeaseStoreOptions): Promise<KV> {
    const kv = await new Kvm(js).create(opts.bucket, {
      history: opts.history ?? 10,
      replicas: opts.replicas ?? 1,
      maxValueSize: MAX_LEASE_RECORD_BYTES,
      description: 'Defender leader elections: one lease record per election (election-agent)',
    });
    // A bucket an older agent created has no limit: the agents, its only writers, set it.
    const jsm = await js.jetstreamManager();
    const { config } = await jsm.streams.info(`KV_${opts.bucket}`);
    if (config.max_msg_size !== MAX_LEASE_RECORD_BYTES) {
      await jsm.streams.update(config.name, { ...config, max_msg_size: MAX_LEASE_RECORD_BYTES });
    }
    return kv;
  }

  /**
   * After a failed call: if NATS lost the bucket (restarted with an empty store), creates it again
   * so that the next call works (this handle binds to it by name); tokens go on above what the
   * agent saw (decideCampaign's floor, ADR 0007). One check at a time; a check that fails (NATS
   * unavailable) is reported to `onBucketCheckFailed` and repeated after the next failed call.
   */
  private recreateIfMissing(): void {
    this.recreating ??= (async () => {
      const jsm = await jetstreamManager(this.nc);
      try {
        await jsm.streams.info(`KV_${this.opts.bucket}`);
        return;
      } catch (err) {
        if (!(err instanceof JetStreamApiError) || err.code !== JetStreamApiCodes.StreamNotFound) throw err;
      }
      await KvLeaseStore.createBucket(this.js, this.opts);
      this.opts.onBucketRecreated?.(this.opts.bucket);
    })()
      .catch((err: unknown) => this.opts.onBucketCheckFailed?.(err as Error))
      .finally(() => {
        this.recreating = undefined;
      });
  }

  async get(election: string): Promise<LeaseSnapshot> {
    this.checkConnected(election);
    let entry: KvEntry | null;
    try {
      entry = await this.kv.get(election);
    } catch (err) {
      throw this.unavailable(election, 'read', err);
    }
    return entry === null ? { record: null, revision: 0 } : toSnapshot(election, entry);
  }

  async create(election: string, record: LeaseRecord): Promise<number> {
    return this.write(election, record, 0);
  }

  async update(election: string, record: LeaseRecord, revision: number): Promise<number> {
    return this.write(election, record, revision);
  }

  async watch(election: string, onChange: (snapshot: LeaseSnapshot) => void): Promise<WatchHandle> {
    this.checkConnected(election);
    let iter: Awaited<ReturnType<KV['watch']>>;
    try {
      iter = await this.kv.watch({ key: election, include: KvWatchInclude.UpdatesOnly });
    } catch (err) {
      throw this.unavailable(election, 'watch', err);
    }
    const closed = (async () => {
      for await (const entry of iter) {
        try {
          onChange(toSnapshot(election, entry));
        } catch (err) {
          // A corrupt value is reported by the next get(); the watch itself goes on.
          if (!(err instanceof CorruptLeaseRecordError)) throw err;
        }
      }
    })();
    return { stop: () => iter.stop(), closed };
  }

  private async write(election: string, record: LeaseRecord, revision: number): Promise<number> {
    this.checkConnected(election);
    try {
      return await this.kv.put(election, JSON.stringify(record), { previousSeq: revision });
    } catch (err) {
      if (err instanceof JetStreamApiError && CONFLICT_CODES.has(err.code)) {
        throw new RevisionConflictError(election, revision, { cause: err });
      }
      throw this.unavailable(election, 'write', err);
    }
  }

  private checkConnected(election: string): void {
    if (this.opts.isConnected && !this.opts.isConnected()) {
      throw new LeaseStoreUnavailableError(`election "${election}": not connected to NATS`);
    }
  }

  private unavailable(election: string, op: string, err: unknown): LeaseStoreUnavailableError {
    this.recreateIfMissing();
    return new LeaseStoreUnavailableError(
      `election "${election}": KV ${op} on bucket "${this.opts.bucket}" failed: ${(err as Error).message}`,
      { cause: err },
    );
  }
}

function toSnapshot(election: string, entry: KvEntry): LeaseSnapshot {
  if (entry.operation !== 'PUT') return { record: null, revision: entry.revision };
  let raw: unknown;
  try {
    raw = entry.json<unknown>();
  } catch (err) {
    throw new CorruptLeaseRecordError(election, entry.revision, 'not JSON', { cause: err });
  }
  const parsed = leaseRecordSchema.safeParse(raw);
  if (!parsed.success) {
    throw new CorruptLeaseRecordError(
      election,
      entry.revision,
      parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '),
    );
  }
  return { record: parsed.data, revision: entry.revision };
}
