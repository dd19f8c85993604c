// Nothing that loads zod: the defender's heartbeat thread writes with this (ADR 0014); reading and
// checking heartbeats is HeartbeatBucket's (heartbeats.ts).
import type { KV } from '@nats-io/kv';
import type { Heartbeat } from '@defender/contracts';
import { DEFAULT_BUCKETS } from './bucket-names';
import { mapKvError } from './errors';

/** Writes and removes this defender's key of the `defender-heartbeats` bucket. */
export class HeartbeatWriter {
  constructor(
    protected readonly kv: KV,
    protected readonly bucket: string = DEFAULT_BUCKETS.heartbeats,
  ) {}

  /** Publishes (overwrites) this defender's heartbeat. */
  async publish(hb: Heartbeat): Promise<number> {
    try {
      return await this.kv.put(hb.defenderId, JSON.stringify(hb));
    } catch (err) {
      throw mapKvError(err, this.bucket, hb.defenderId);
    }
  }

  /** Removes this defender's heartbeat on a clean shutdown, so the controller sees a leave at once. */
  async remove(defenderId: string): Promise<void> {
    try {
      await this.kv.delete(defenderId);
    } catch (err) {
      throw mapKvError(err, this.bucket, defenderId);
    }
  }
}
