import type { KV } from '@nats-io/kv';
import { type Heartbeat, InvalidMessageError, parseHeartbeat } from '@defender/contracts';
import { DEFAULT_BUCKETS, listKeys } from './buckets';
import { HeartbeatWriter } from './heartbeat-writer';
import { mapKvError } from './errors';

/** A heartbeat as read from the bucket. */
export interface ObservedHeartbeat {
  readonly heartbeat: Heartbeat;
  readonly revision: number;
  /**
   * When the NATS server stored it, by the server's clock: data for people, never aged against a
   * local clock (liveness is the revision changing, timed on the reader's monotonic clock).
   */
  readonly storedAt: Date;
}

/** An entry that could not be read as a heartbeat (reported, never fatal). */
export interface BadHeartbeat {
  readonly key: string;
  readonly revision: number;
  readonly reason: string;
}

/**
 * The `defender-heartbeats` bucket: one key per defender ID. Liveness is judged by the reader from
 * when it last saw a key's revision change, on its own monotonic clock, never from KV expiry (NATS
 * before 2.11 sends no watch event when an entry ages out) nor from a stored time.
 */
export class HeartbeatBucket extends HeartbeatWriter {
  constructor(kv: KV, bucket: string = DEFAULT_BUCKETS.heartbeats) {
    super(kv, bucket);
  }

  /** Every current heartbeat, and the entries that are not valid heartbeats. */
  async readAll(): Promise<{ heartbeats: ObservedHeartbeat[]; bad: BadHeartbeat[] }> {
    const heartbeats: ObservedHeartbeat[] = [];
    const bad: BadHeartbeat[] = [];
    try {
      for (const key of await listKeys(this.kv, this.bucket)) {
        const e = await this.kv.get(key);
        if (!e || e.operation !== 'PUT') continue;
        try {
          const heartbeat = parseHeartbeat(e.value);
          if (heartbeat.defenderId !== key) {
            bad.push({ key, revision: e.revision, reason: `defenderId ${heartbeat.defenderId} does not match the key` });
            continue;
          }
          heartbeats.push({ heartbeat, revision: e.revision, storedAt: e.created });
        } catch (err) {
          if (!(err instanceof InvalidMessageError)) throw err;
          bad.push({ key, revision: e.revision, reason: err.reason });
        }
      }
    } catch (err) {
      throw mapKvError(err, this.bucket, '>');
    }
    return { heartbeats, bad };
  }
}
